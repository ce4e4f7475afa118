"""The real document store: LanceDB tables under $H3_HOME/lancedb (plain Python, no Dagster)."""

from __future__ import annotations

import fcntl
import math
import os
import random
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from h3.resources.disk_usage import folder_bytes
from h3.resources.store.base import DocumentStore, Row
from h3.resources.store.tables import TABLES
from h3.resources.store.text_once import fill_text, read_columns, stored_form, stores_text_once

# Writers on many workers commit to the same tables. Lance resolves most concurrent commits
# itself (appends rebase on each other); what it cannot (e.g. two deletes rewriting the same
# fragment) raises a commit conflict, and the write is simply tried again a little later.
COMMIT_RETRIES = 6  # retries after the first try: 7 tries in all
COMMIT_BACKOFF_S = 0.2  # doubled each try, with jitter: 0.2 .. 6.4 s
COMMIT_CONFLICTS: dict[str, int] = {}  # per process, for the scale-out bench
_CONFLICT_WORDS = ("conflict", "retryable", "concurrent")  # "conflict" covers "commit conflict"


def _is_commit_conflict(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(word in text for word in _CONFLICT_WORDS)


def _commit_backoff(state: RetryCallState) -> float:
    """0.2 s doubled each try, times a jitter in [0.5, 1.5) (read at call time: tests shrink it)."""
    return COMMIT_BACKOFF_S * 2 ** (state.attempt_number - 1) * (0.5 + random.random())


def _is_missing_file(exc: BaseException) -> bool:
    """A file of the version a call started on is gone: a compaction pruned that version under
    it (compaction.py). Lance says `Not found: <folder>/<table>.lance/<file>`."""
    text = str(exc).lower()
    return "not found" in text and ".lance/" in text


def _retryable(exc: BaseException) -> bool:
    return isinstance(exc, (OSError, RuntimeError, ValueError)) and (
        _is_commit_conflict(exc) or _is_missing_file(exc))


# A read that met a pruned file runs again on the latest version until this many seconds have
# passed since it first failed; then the missing file is a real error, and raises. Bounded by
# time, not by a count of tries: a read slower than the gap between two compactions fails every
# try that overlaps one (CI's loaded machine failed five tries in a row under the compaction
# test's back-to-back compactions), and a jittered, growing pause shifts the next try off their
# rhythm. A real store compacts once per ingestion run, so the first retry almost always reads.
MISSING_FILE_RETRY_S = 10.0


def with_missing_file_retry(read, handle):
    """Calls `read()`; if a file it needed was pruned meanwhile, again on the latest version
    (for up to `MISSING_FILE_RETRY_S`; then the missing file is a real error, and raises)."""
    give_up_at, pause = None, 0.02
    while True:
        try:
            return read()
        except (OSError, RuntimeError, ValueError) as exc:
            if not _is_missing_file(exc):
                raise
            now = time.monotonic()
            give_up_at = give_up_at or now + MISSING_FILE_RETRY_S
            if now >= give_up_at:
                raise
        time.sleep(pause * (0.5 + random.random()))  # let the pruning compaction commit
        pause = min(pause * 2, 0.5)
        handle.checkout_latest()  # what every call does anyway; also moves a handle pinned to one


def _search_rows(query, where: str | None, read_as: list[str] | None, drop: bool,
                 score: str) -> list[Row]:
    """A vector or full-text search's rows: filtered before ranking, the asked columns and its
    `score` column read, the chunk text filled in (text_once.py)."""
    if where:
        query = query.where(where, prefilter=True)
    if read_as:
        query = query.select(read_as + [score])
    return fill_text(query.to_arrow(), drop).to_pylist()


def with_commit_retries(write, what: str):
    """Calls `write()`; retries it with exponential backoff while Lance reports a commit
    conflict (every write here is idempotent or all-or-nothing, so a retry is safe)."""

    def count_conflict(state: RetryCallState) -> None:
        COMMIT_CONFLICTS[what] = COMMIT_CONFLICTS.get(what, 0) + 1

    return Retrying(stop=stop_after_attempt(COMMIT_RETRIES + 1), wait=_commit_backoff,
                    retry=retry_if_exception(_retryable), before_sleep=count_conflict,
                    reraise=True)(write)


class StoreUnreachableError(RuntimeError):
    """The store's folder or URI cannot be opened; the message names it and the cause."""


# Below this many rows a flat (exact) vector scan takes a few ms; above it an ANN index pays off.
ANN_MIN_ROWS = 20_000
# Rows appended since the full-text index was built are still searched (flat); merge them into
# the index once there are this many.
FTS_MERGE_ROWS = 2_000
# From this many rows a table's filter columns (TableSpec.filter_columns) get a B-tree index: a
# search within a few documents (`doc_id IN (...)`, prefiltered) otherwise scans the column of
# every row first, ~14 ms at 1M chunks of the ~30 ms a filtered full-text search took; with the
# index the filter costs ~1 ms and the index ~4 B a row (`h3 bench --scenario scale`)
FILTER_INDEX_MIN_ROWS = 20_000
IVF_ROWS_PER_PARTITION = 4_096
MIN_NPROBES = 20  # Lance's own default
# Of the IVF partitions searched per query. At 1M chunks the neighbours exact search finds lie
# outside the 10% of partitions nearest the query often enough to miss 0.95 agreement (IVF_SQ:
# 0.93-0.985 over three builds at 10%, 0.989 at 20%: `h3 bench --scenario scale`); a query then
# scans ~200K 8-bit codes, ~13 ms.
PROBE_SHARE = 0.2
REFINE_FACTOR = 20  # candidates re-ranked on the full vectors: k x this, ...
# ... up to this many: each is a read of a full vector (~14 of the ~23 ms of CPU a k=30 search
# took at 1M chunks with 600); top 10 re-ranks 200 as before, top 30 (text recall's pool) 210,
# which kept the same 30 chunks for every development question at 1M chunks
REFINE_CANDIDATES = 200
# k-means rounds: Lance's 50 cost IVF_PQ 3x its build time on two cores (its re-ranking on full
# vectors makes up for coarser centroids); IVF_SQ builds in ~20 s at 1M chunks with 50, and its
# agreement moves with the centroids' quality (0.93 with 10 rounds, 0.945 with 50, at 10% probes)
KMEANS_ITERATIONS = 10
KMEANS_ITERATIONS_BY_KIND = {"IVF_SQ": 50}
HNSW_EF_CONSTRUCTION = 150  # Lance's 300 doubles the graph build
_ANN_TYPES = {"IVF_PQ": "IVF_PQ", "HNSW": "IVF_HNSW_SQ", "IVF_SQ": "IVF_SQ"}


def ann_build_params(rows: int, dim: int, kind: str) -> dict:
    """The ANN index's parameters for a table of `rows` vectors of `dim` dimensions: one IVF
    partition per IVF_ROWS_PER_PARTITION rows (Lance's own default is about one per 8K) and,
    for IVF_PQ, 8 dimensions per PQ sub-vector (48 B a 384-d vector; Lance's default, 16, keeps
    too little to find exact search's top 10: `h3 bench --scenario scale`)."""
    params: dict = {"num_partitions": max(1, rows // IVF_ROWS_PER_PARTITION),
                    "max_iterations": KMEANS_ITERATIONS_BY_KIND.get(kind, KMEANS_ITERATIONS)}
    if kind == "IVF_PQ" and dim % 8 == 0:
        params["num_sub_vectors"] = dim // 8
    if kind == "IVF_HNSW_SQ":
        params["ef_construction"] = HNSW_EF_CONSTRUCTION
    return params


def ann_search_params(rows: int, kind: str, k: int = 10) -> dict:
    """Query-time settings that grow with the table: probe PROBE_SHARE of the partitions
    `ann_build_params` made (at least MIN_NPROBES), and re-rank REFINE_FACTOR x k candidates
    (at most about REFINE_CANDIDATES) on the full vectors, which turns the quantised distances
    back into exact ones."""
    partitions = ann_build_params(rows, 0, kind)["num_partitions"]
    probes = max(MIN_NPROBES, math.ceil(PROBE_SHARE * partitions))
    refine = min(REFINE_FACTOR, max(1, math.ceil(REFINE_CANDIDATES / max(k, 1))))
    return {"nprobes": min(partitions, probes), "refine_factor": refine}


class LanceDocumentStore(DocumentStore):
    """LanceDB implementation. Handles are cached; every read sees the latest committed version
    (read_consistency_interval=0), so a CLI process and a Dagster run never read stale rows."""

    def __init__(self, path: str | Path, ann_index_type: str = "IVF_SQ") -> None:
        from h3.resources.store.lancedb_import import import_lancedb

        lancedb = import_lancedb()

        self.path = Path(path)
        self._fts_columns: dict[str, str] = {}  # table -> its full-text index's column
        self._ann_tables: set[str] = set()  # tables found to have a vector index
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            probe = self.path / f".probe-{os.getpid()}-{threading.get_ident()}"
            probe.write_bytes(b"")
            probe.unlink()
            self._db = lancedb.connect(str(self.path), read_consistency_interval=timedelta(0))
        except OSError as exc:  # a worker whose shared mount is missing or read-only
            raise StoreUnreachableError(
                f"document store {self.path}: cannot open for writing: {exc.strerror or exc} "
                "(every worker needs H3_HOME on the same shared folder)") from None
        self.ann_index_type = _ANN_TYPES.get(ann_index_type, "IVF_SQ")
        self._tables: dict = {}
        self._lock = threading.Lock()

    # ---- tables ----
    def table_names(self) -> list[str]:
        listing = self._db.list_tables()
        names = getattr(listing, "tables", listing)
        return sorted(str(n) for n in names)

    def _open(self, name: str, create: bool = False):
        with self._lock:
            if name in self._tables:
                return self._tables[name]
            if name in self.table_names():
                table = self._db.open_table(name)
            elif create and name in TABLES:
                table = self._db.create_table(name, schema=TABLES[name].schema, exist_ok=True)
            else:
                return None
            self._tables[name] = table
            return table

    def has_column(self, table: str, column: str) -> bool:
        handle = self._open(table)
        return handle is not None and column in handle.schema.names

    # ---- writes ----
    @contextmanager
    def document_lock(self, doc_id: str) -> Iterator[None]:
        """Holds an exclusive lock on one document across processes (a file lock in the store's
        folder: on one machine, and on shared filesystems that honour flock, e.g. NFSv4), so two
        runs writing the same document never interleave their delete and add."""
        folder = self.path / ".locks"
        folder.mkdir(exist_ok=True)
        with open(folder / f"{doc_id}.lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def add(self, table: str, rows: Sequence[Row]) -> int:
        if len(rows) == 0:
            return 0
        handle = self._open(table, create=True)
        if handle is None:
            raise KeyError(f"document store: no table {table!r} and no registered spec to create it")
        if stores_text_once(handle.schema.names):  # chunks: what BM25 indexes, text once
            rows = [stored_form(r) for r in rows]
        data = pa.Table.from_pylist(list(rows), schema=handle.schema)
        with_commit_retries(lambda: handle.add(data), f"add {table}")
        return data.num_rows

    def delete_where(self, table: str, where: str) -> int:
        handle = self._open(table)
        if handle is None:
            return 0
        matching = with_missing_file_retry(lambda: handle.count_rows(where), handle)
        if matching:
            with_commit_retries(lambda: handle.delete(where), f"delete {table}")
        return matching

    # ---- reads ----
    def rows(self, table: str, where: str | None = None, columns: Sequence[str] | None = None,
             limit: int | None = None) -> list[Row]:
        handle = self._open(table)
        if handle is None:
            return []

        read_as, drop = read_columns(handle.schema.names, columns)

        def read() -> list[Row]:
            query = handle.search().limit(limit)  # limit None: every matching row
            if where:
                query = query.where(where)
            if read_as:
                query = query.select(read_as)
            return fill_text(query.to_arrow(), drop).to_pylist()

        return with_missing_file_retry(read, handle)

    def count_rows(self, table: str) -> int:
        handle = self._open(table)
        return 0 if handle is None else with_missing_file_retry(handle.count_rows, handle)

    def vector_search(self, table: str, vector: Sequence[float], k: int,
                      where: str | None = None, columns: Sequence[str] | None = None) -> list[Row]:
        handle = self._open(table)
        if handle is None:
            return []

        read_as, drop = read_columns(handle.schema.names, columns)

        def read() -> list[Row]:
            rows = handle.count_rows()
            if rows == 0:
                return []
            query = handle.search(list(map(float, vector))).distance_type("cosine").limit(k)
            if rows >= ANN_MIN_ROWS and self._has_ann(table, handle):  # (no index below that)
                for name, value in self.ann_search_params(rows, k).items():
                    query = getattr(query, name)(value)  # nprobes, refine_factor
            return _search_rows(query, where, read_as, drop, "_distance")

        return with_missing_file_retry(read, handle)

    def text_search(self, table: str, query: str, k: int, where: str | None = None,
                    columns: Sequence[str] | None = None) -> list[Row]:
        handle = self._open(table)
        column = self._fts_column(table, handle)
        if handle is None or not column or not query.strip():
            return []

        read_as, drop = read_columns(handle.schema.names, columns)

        def read() -> list[Row]:
            builder = handle.search(query, query_type="fts", fts_columns=column).limit(k)
            return _search_rows(builder, where, read_as, drop, "_score")

        return with_missing_file_retry(read, handle)

    # ---- indexes ----
    def _fts_column(self, table: str, handle) -> str | None:
        """The column of the table's full-text index. Listing a table's indexes costs ~9 ms, as
        much as the search itself, so a found one is remembered (an index, once built, stays on
        its column; a table without one is asked again next time)."""
        known = self._fts_columns
        if table not in known:
            index = self._fts_index(handle, TABLES[table].fts_columns if table in TABLES else ())
            if index is None:
                return None
            known[table] = index.columns[0]
        return known[table]

    @staticmethod
    def _fts_index(handle, preferred: Sequence[str] = ()) -> object | None:
        """The full-text index to search: one on a column the table spec names first (a store
        written before `chunks.fts_text` existed keeps its index on `text`)."""
        if handle is None:
            return None
        found = [ix for ix in handle.list_indices() if ix.index_type == "FTS"]
        return next((ix for ix in found if ix.columns[0] in preferred), found[0] if found else None)

    def ensure_indexes(self, table: str, rebuild_fts: bool = False) -> dict[str, str]:
        self._fts_columns.pop(table, None)  # read again after (re)building
        spec = TABLES.get(table)
        handle = self._open(table)
        done: dict[str, str] = {}
        rows = handle.count_rows() if spec is not None and handle is not None else 0
        if rows == 0:  # (the FTS work below adds no rows)
            return done
        indices = handle.list_indices()
        for column in spec.fts_columns:
            if column not in handle.schema.names:  # a table written before the column existed
                continue
            existing = next((ix for ix in indices if ix.index_type == "FTS"
                             and column in ix.columns), None)
            if existing is None or rebuild_fts:
                with warnings.catch_warnings():  # create_fts_index is the stable spelling here
                    warnings.simplefilter("ignore")
                    with_commit_retries(lambda c=column: handle.create_fts_index(c, replace=True),
                                        f"index {table}")
                done[column] = "fts rebuilt" if existing else "fts created"
            elif (existing.num_unindexed_rows or 0) >= FTS_MERGE_ROWS:
                with_commit_retries(handle.optimize, f"optimize {table}")
                done[column] = "fts merged"
        if spec.filter_columns and rows >= FILTER_INDEX_MIN_ROWS:
            done |= self._ensure_filter_indexes(handle, spec.filter_columns, indices, table)
        column = spec.vector_column
        if column and rows >= ANN_MIN_ROWS and not any(
                column in ix.columns for ix in indices if ix.index_type != "FTS"):
            done[column] = self.create_ann_index(table)
        return done

    @staticmethod
    def _ensure_filter_indexes(handle, columns: Sequence[str], indices, table: str
                               ) -> dict[str, str]:
        """A B-tree index on each filter column without one (rows appended later are scanned
        until `optimize` merges them, so a filter never misses a row)."""
        from lancedb.index import BTree

        done = {}
        for column in columns:
            if column in handle.schema.names and not any(
                    ix.columns == [column] and ix.index_type != "FTS" for ix in indices):
                with_commit_retries(lambda c=column: handle.create_index(c, config=BTree()),
                                    f"index {table}")
                done[column] = "btree created"
        return done

    def create_ann_index(self, table: str) -> str:
        """(Re)builds the table's vector index (`self.ann_index_type`, parameters for its size)."""
        handle = self._open(table)
        spec = TABLES[table]
        dim = handle.schema.field(spec.vector_column).type.list_size
        params = self.ann_build_params(handle.count_rows(), dim)
        with_commit_retries(lambda: handle.create_index(
            metric="cosine", vector_column_name=spec.vector_column, index_type=self.ann_index_type,
            replace=True, **params), f"index {table}")
        self._ann_tables.discard(table)
        return f"ann {self.ann_index_type} created"

    def ann_build_params(self, rows: int, dim: int) -> dict:
        return ann_build_params(rows, dim, self.ann_index_type)

    def ann_search_params(self, rows: int, k: int = 10) -> dict:
        return ann_search_params(rows, self.ann_index_type, k)

    def _has_ann(self, table: str, handle) -> bool:
        """Whether the table has a vector index (remembered once found, as `_fts_column`)."""
        if table not in self._ann_tables:
            column = TABLES[table].vector_column if table in TABLES else "vector"
            if not any(ix.index_type != "FTS" and column in ix.columns
                       for ix in handle.list_indices()):  # (not a filter column's B-tree)
                return False
            self._ann_tables.add(table)
        return True

    def bytes_on_disk(self) -> int:
        return folder_bytes(self.path)

    # ---- maintenance (compaction.py) ----
    def table(self, name: str):
        """The LanceDB table itself, for maintenance the store does not wrap (compaction);
        KeyError if it does not exist."""
        handle = self._open(name)
        if handle is None:
            raise KeyError(f"document store {self.path}: no table {name!r}")
        return handle

    def table_bytes(self, name: str) -> int:
        """Bytes of the table's folder: every version's data, deletions and indexes."""
        return folder_bytes(self.path / f"{name}.lance")
