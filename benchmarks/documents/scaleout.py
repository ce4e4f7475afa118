"""`h3 bench --scenario scaleout [--path DIR]`: the same PDFs ingested in one process and on 1, 2
and 4 dask workers, side by side in one run (pages/s, per worker, CPU seconds and utilisation,
the Dagster events and documents each variant asks of the shared services per second), plus
what those services, LanceDB and PostgreSQL, take from 1, 2 and 4 concurrent writers. `plan`
divides the one by the other: how many machines like this one the services carry before they
become the limit (docs/operating.md's scale-out model reads its numbers from this report).

Each variant gets a fresh H3_HOME (and, for the dask ones, a fresh LocalCluster whose workers
first ingest one warm-up PDF, so the timed part is the steady state of workers that keep their
models loaded). The dask variants use a private PostgreSQL instance when its binaries exist, as
a multi-machine installation would.
"""

from __future__ import annotations

import os
import resource
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from benchmarks.documents.ingest import DOCLING, SAMPLE
from h3.ontology.records import (
    ChunkRecord,
    ChunksRecord,
    DocumentRecord,
    EmbeddingsRecord,
    RegionRecord,
)
from h3.pipelines.instance import h3_home_env

WARMUP_PDF = SAMPLE / "annual_report.pdf"
QUICK_PDFS = ["lab_handbook.pdf", "field_notes_scan.pdf", "multi_page.pdf",
              "2305.03393v1-pg9.pdf"]


def _corpus(dest: Path, quick: bool, path: str | None) -> Path:
    """A folder of the PDFs to ingest: links to those of `path`, else copies of the sample
    corpus and docling's test PDFs (a few of them with --quick)."""
    dest.mkdir(parents=True)
    if path:
        found = sorted(Path(path).expanduser().resolve().glob("*.pdf"))
        if not found:
            raise FileNotFoundError(f"{path}: no PDF files to ingest")
        for pdf in found[:3] if quick else found:
            (dest / pdf.name).symlink_to(pdf)
        return dest
    found = [p for p in [*SAMPLE.glob("*.pdf"), *sorted(DOCLING.glob("*.pdf"))]
             if p.name != WARMUP_PDF.name and (not quick or p.name in QUICK_PDFS)]
    for pdf in found:
        shutil.copy(pdf, dest / pdf.name)
    return dest


def _own_cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _worker_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _pages(report: dict) -> int:
    return sum(int(d["pages"] or 0) for d in report["documents"] if d["status"] == "ok")


def _variant(name: str, work: Path, corpus: Path, workers: int | None) -> dict:
    """One ingestion of the corpus into a fresh home: in process (`workers` None) or on a
    LocalCluster of `workers` processes, warmed up first."""
    import dask.distributed

    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.scaleout import dask_cluster

    with h3_home_env(work / name):
        if workers is None:
            ingest([str(WARMUP_PDF)], compress=False)  # models loaded, as the workers' are
            cpu0, t0 = _own_cpu_s(), time.perf_counter()
            report = ingest([str(corpus)], compress=False)
            wall, cpu = time.perf_counter() - t0, _own_cpu_s() - cpu0
            runs = report["run_ids"]
        else:
            # the LocalCluster `h3 index-build --executor dask --workers N` starts
            with dask_cluster(None, workers) as (address, _), \
                    dask.distributed.Client(address) as client:
                ingest([str(WARMUP_PDF)], executor="dask", dask_scheduler=address,
                       compress=False)
                cpu0, t0 = _own_cpu_s(), time.perf_counter()
                w0 = sum(client.run(_worker_cpu_s).values())
                report = ingest([str(corpus)], executor="dask", dask_scheduler=address,
                                compress=False)
                wall = time.perf_counter() - t0
                cpu = _own_cpu_s() - cpu0 + sum(client.run(_worker_cpu_s).values()) - w0
            runs = report["run_ids"]
        from h3.pipelines.instance import get_instance

        instance = get_instance()
        events = sum(len(instance.all_logs(run_id)) for run_id in runs)
        storage = type(instance.run_storage).__name__
        instance.dispose()
    pages = _pages(report)
    cores = os.cpu_count() or 1
    return {"variant": name, "workers": workers or 0, "documents_ok": report["ok"],
            "documents_failed": report["failed"], "pages": pages, "runs": len(runs),
            "wall_s": round(wall, 2), "pages_per_s": round(pages / wall, 3),
            "pages_per_s_per_worker": round(pages / wall / (workers or 1), 3),
            "cpu_s": round(cpu, 1), "cpu_utilisation": round(cpu / (wall * cores), 3),
            "dagster_events": events, "events_per_s": round(events / wall, 2),
            "documents_per_s": round(report["ok"] / wall, 3), "instance_storage": storage,
            "load_avg_after": round(os.getloadavg()[0], 2)}


def _import_store() -> None:
    """Imports before the timed writes (a writer process's import time is not a write rate)."""
    import h3.assets.store  # noqa: F401
    import h3.resources.store.lance  # noqa: F401


def synthetic_document(doc_id: str, chunks: int, vector: Callable[[int], list[float]]
                       ) -> tuple[DocumentRecord, ChunksRecord, EmbeddingsRecord]:
    """One document of `chunks` one-line text chunks on 10 pages, as the stages before the
    store would pass it: `vector(k)` is chunk k's 384-d vector."""
    source = f"/corpus/{doc_id}.pdf"
    doc = DocumentRecord(source=source, pages=10, title=doc_id, metadata={}, content_hash=doc_id,
                         bytes=0, text_pages=(True,) * 10, page_sizes=((612.0, 792.0),) * 10,
                         repaired=False)
    box = (0.0, 0.0, 612.0, 20.0)
    regions = tuple(RegionRecord(doc_id=doc_id, region_id=f"{doc_id}:r{k}", page=1 + k % 10,
                                 kind="text", bbox=box, text=f"chunk {k} of {doc_id} with words",
                                 order=k, origin="text-layer") for k in range(chunks))
    found = tuple(ChunkRecord(doc_id=doc_id, chunk_id=f"{doc_id}:c{k}", page=r.page, bbox=box,
                              text=r.text, section="", kind="text", token_count=8,
                              region_ids=(r.region_id,)) for k, r in enumerate(regions))
    return (doc, ChunksRecord(source=source, regions=regions, chunks=found),
            EmbeddingsRecord(source=source, vectors=tuple(tuple(vector(k))
                                                          for k in range(chunks))))


def _lance_writer(path: str, writer: int, docs: int, chunks: int) -> tuple[float, int]:
    """One writer process: `docs` documents of `chunks` chunks each through write_document
    under the document lock, as the cold_store step does. (seconds, commit conflicts)."""
    from h3.assets.store import write_document
    from h3.resources.store.lance import COMMIT_CONFLICTS, LanceDocumentStore

    store = LanceDocumentStore(path)
    t0 = time.perf_counter()
    for i in range(docs):
        doc_id = f"w{writer}d{i}"
        payloads = synthetic_document(doc_id, chunks,
                                      lambda k: [float((k + j) % 7) / 7 for j in range(384)])
        with store.document_lock(doc_id):
            write_document(store, doc_id, *payloads)
    return time.perf_counter() - t0, sum(COMMIT_CONFLICTS.values())


def lance_write_rates(work: Path, writer_counts: tuple[int, ...], docs: int,
                      chunks: int) -> list[dict]:
    """Documents/s that concurrent writer processes commit into one LanceDB store."""
    out = []
    for writers in writer_counts:
        path = work / f"lance-{writers}"
        with ProcessPoolExecutor(writers, mp_context=get_context("spawn"),
                                 initializer=_import_store) as pool:
            done = list(pool.map(_lance_writer, [str(path)] * writers, range(writers),
                                 [docs] * writers, [chunks] * writers))
        wall = max(seconds for seconds, _ in done)  # writing only: imports happen before
        out.append({"writers": writers, "documents": writers * docs, "chunks_per_doc": chunks,
                    "wall_s": round(wall, 2),
                    "documents_per_s": round(writers * docs / wall, 2),
                    "commit_conflicts_retried": sum(c for _, c in done)})
    return out


def _noop() -> None:
    return None


def _event_writer(url: str, home: str, events: int) -> float:
    """One writer process: `events` engine events on a run of its own, each its own INSERT, as a
    step's events are. Returns its seconds (writing only)."""
    from dagster import job, op

    from h3.pipelines.dagster_storage import POSTGRES_URL_ENV
    from h3.pipelines.instance import get_instance

    noop = op(name="noop")(_noop)

    @job(name="bench_events")
    def bench_events() -> None:
        noop()

    os.environ[POSTGRES_URL_ENV] = url
    with h3_home_env(Path(home)):
        instance = get_instance()
        run = instance.get_run_by_id(bench_events.execute_in_process(instance=instance).run_id)
        t0 = time.perf_counter()
        for i in range(events):
            instance.report_engine_event(f"bench event {i}", dagster_run=run)
        wall = time.perf_counter() - t0
        instance.dispose()
    return wall


def postgres_event_rates(url: str, writer_counts: tuple[int, ...], events: int,
                         home: Path) -> list[dict]:
    """Dagster events/s that 1, 2, 4... concurrent processes store into the PostgreSQL
    instance at `url` (each process `events` events)."""
    out = []
    for writers in writer_counts:
        with ProcessPoolExecutor(writers, mp_context=get_context("spawn")) as pool:
            walls = list(pool.map(_event_writer, [url] * writers,
                                  [str(home / f"w{writers}-{i}") for i in range(writers)],
                                  [events] * writers))
        wall = max(walls)
        out.append({"writers": writers, "events": writers * events, "wall_s": round(wall, 2),
                    "events_per_s": round(writers * events / wall, 1)})
    return out


def capacity_plan(variants: list[dict], lance: list[dict], pg: list[dict] | None) -> dict:
    """Machines like this one that the shared services carry: the most each service took (over
    its writer counts) over what the fastest variant asked of it per second."""
    best = max(variants, key=lambda v: v["pages_per_s"])
    lance_docs = max(w["documents_per_s"] for w in lance)
    plan = {"machine_variant": best["variant"], "machine_pages_per_s": best["pages_per_s"],
            "machine_documents_per_s": best["documents_per_s"],
            "machine_events_per_s": best["events_per_s"],
            "lancedb_documents_per_s": lance_docs,
            "machines_until_lancedb": round(lance_docs / best["documents_per_s"], 1)}
    if pg:
        pg_events = max(w["events_per_s"] for w in pg)
        plan |= {"postgres_events_per_s": pg_events,
                 "machines_until_postgres": round(pg_events / best["events_per_s"], 1)}
        plan["first_limit"] = ("postgres" if plan["machines_until_postgres"]
                               < plan["machines_until_lancedb"] else "lancedb")
    return plan


def run(out_dir: Path, quick: bool, path: str | None = None) -> dict:
    from h3.pipelines.postgres import PostgresError, pg_binary, start, stop

    work = Path(tempfile.mkdtemp(prefix="h3-scaleout-"))
    work.chmod(0o755)  # the PostgreSQL server runs as the unprivileged `postgres` user
    corpus = _corpus(work / "corpus", quick, path)
    worker_counts = (1, 2) if quick else (1, 2, 4)
    pg_folder, url = work / "postgres", None
    try:
        try:
            pg_binary("initdb")
            url = start(pg_folder)
        except PostgresError:
            url = None
        variants = [_variant("in_process", work, corpus, None)]
        old = os.environ.get("H3_POSTGRES_URL")
        if url:
            os.environ["H3_POSTGRES_URL"] = url
        try:
            variants += [_variant(f"dask_{n}_worker{'s' if n > 1 else ''}", work, corpus, n)
                         for n in worker_counts]
        finally:
            if old is None:
                os.environ.pop("H3_POSTGRES_URL", None)
            else:
                os.environ["H3_POSTGRES_URL"] = old
        lance = lance_write_rates(work, (1, 2, 4), docs=5 if quick else 15, chunks=60)
        pg = (postgres_event_rates(url, worker_counts, 300 if quick else 1000,
                                   work / "pg-events") if url else None)
    finally:
        if url:
            stop(pg_folder)
        shutil.rmtree(work, ignore_errors=True)
    by = {v["variant"]: v for v in variants}
    one, two = by["dask_1_worker"], by["dask_2_workers"]
    return {**({"folder": path} if path else {}),
            "corpus": {"documents": variants[0]["documents_ok"], "pages": variants[0]["pages"]},
            "cores": os.cpu_count(), "variants": variants,
            "speedup_2_vs_1_worker": round(two["pages_per_s"] / one["pages_per_s"], 3),
            "dask_1_worker_vs_in_process": round(
                one["pages_per_s"] / by["in_process"]["pages_per_s"], 3),
            "lancedb_write": lance, "postgres_events": pg,
            "plan": capacity_plan(variants, lance, pg)}
