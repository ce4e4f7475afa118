"""The Dagster code location of H³: this file only assembles (assets, jobs, sensors, resources)."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from h3.assets.analysis import cross_document_checks, document_summary, key_facts
from h3.assets.chunks import chunks
from h3.assets.documents import documents
from h3.assets.embeddings import embeddings
from h3.assets.figures import figures
from h3.assets.ingested import ingested_documents
from h3.assets.kv import document_kv
from h3.assets.layout import layout
from h3.assets.multilingual import multilingual_vectors
from h3.assets.ocr import ocr
from h3.assets.reindex import store_indexes
from h3.assets.sections import sections
from h3.assets.store import cold_store
from h3.assets.tables import tables
from h3.pipelines.deletion import delete_documents
from h3.pipelines.jobs import compress_job, ingest_job, multilingual_job
from h3.pipelines.jobs_analysis import (
    cross_check_job,
    precompute_kv_job,
    prefill_and_analyse_job,
)
from h3.pipelines.schedules import reindex_job, reindex_schedule
from h3.pipelines.semantic import SEMANTIC_ASSETS, SEMANTIC_CHECKS
from h3.pipelines.sensors import inbox_sensor
from h3.resources.json_io import JsonOutputIOManager
from h3.resources.models.embedder_resource import SbertEmbedderResource
from h3.resources.models.layout import LayoutModelResource
from h3.resources.models.ocr import OcrResource
from h3.resources.runtime import H3RuntimeResource
from h3.resources.staging_io import JsonStagingIOManager
from h3.resources.store import DocumentStoreResource

INGESTION_ASSETS = [documents, layout, tables, figures, ocr, chunks, embeddings, cold_store,
                    ingested_documents, multilingual_vectors, sections]

REUSE_ASSETS = [document_kv, document_summary, key_facts, cross_document_checks]

OPERATIONS_ASSETS = [store_indexes]  # the re-index schedule's (pipelines/schedules.py)

ASSETS = [*INGESTION_ASSETS, *SEMANTIC_ASSETS, *REUSE_ASSETS, *OPERATIONS_ASSETS]
JOBS = [ingest_job, multilingual_job, compress_job, precompute_kv_job, prefill_and_analyse_job, cross_check_job, reindex_job,
        delete_documents]
SCHEDULES = [reindex_schedule]
SENSORS = [inbox_sensor]
RESOURCES = {
    "store": DocumentStoreResource(),
    # Dagster's default IO manager pickles outputs; ours writes JSON (no pickle in H3_HOME).
    "io_manager": JsonOutputIOManager(),
    "staging_io": JsonStagingIOManager(),
    "embedder": SbertEmbedderResource(),
    "layout_model": LayoutModelResource(),
    "ocr_engine": OcrResource(),
    "h3_runtime": H3RuntimeResource(),
}

# Runs launched from the UI, the sensor or the schedule execute in one process, as the CLI's
# do: on a small machine the multiprocess default re-imports torch and reloads the models for
# every step (~20-40 s each). Across machines, `h3 index-build --executor dask` runs the same job
# with a dask executor whose long-lived workers keep the models (pipelines/scaleout.py, README).
defs = Definitions(assets=ASSETS, asset_checks=SEMANTIC_CHECKS, jobs=JOBS, sensors=SENSORS,
                   schedules=SCHEDULES, resources=RESOURCES, executor=in_process_executor)
