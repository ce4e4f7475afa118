"""`H3RuntimeResource`: the H³ runtime as a Dagster resource, opened once per process, and the
assets' one door into it (precompute, ask, stats).

`ask(question, doc_id=None, k=5) -> Answer` is the public door for a user's own assets: an
answer with quotes, checked against its evidence (resources/answers/). It loads the engine
(model + tiered KV cache) from h3_config.yaml. The engine's KV block store
(`$H3_HOME/kv` unless `runtime.cold_storage_path` says otherwise, capped at
`runtime.cold_storage_max_gb`) holds both the blocks the tiered cache spills and the stored
documents' KV, indexed per document under `<cold tier>/docs`. Assets call `precompute` /
`kv_stats` (and `get_runtime()` to ask questions); the CLI uses the same resource outside
Dagster, so a question asked from `h3 ask` and one asked by an asset load the same stored KV.
The runtime is cached process-wide (not built in `setup_for_execution`): loading the model takes
seconds, and every run in a process (and `h3 ask`) reuses it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dagster import ConfigurableResource
from pydantic import Field

from h3.ontology.answer import Answer
from h3.resources.settings import load_config
from h3_runtime.config import H3Config
from h3_runtime.home import under_home
from h3_runtime.kvcache.cold import cold_root
from h3_runtime.reuse.doc_kv import FORMAT_VERSION as KV_FORMAT
from h3_runtime.reuse.doc_kv import DocKVIndex
from h3_runtime.reuse.prompt import ChunkText

if TYPE_CHECKING:
    from h3_runtime.reuse.runtime import ReuseRuntime

__all__ = ["Answer", "ChunkText", "H3RuntimeResource", "KV_FORMAT", "Precomputed", "doc_kv_root"]

# Process-wide on purpose: opening the runtime loads the model (~5 s), and the runs of one CLI
# command (`h3 ask`, the `document_kv` batches of `h3 index-build`) or of one dask worker reuse it.
_OPEN: dict[tuple, ReuseRuntime] = {}
_LOCK = threading.Lock()


def doc_kv_root(cfg: H3Config) -> Path:
    """Where the stored documents' indexes live: `<cold tier>/docs` (their blocks: the tier)."""
    return cold_root(cfg.runtime.cold_storage_path) / "docs"


@dataclass(slots=True)
class Precomputed:
    """One document's stored KV, as the `document_kv` asset reports and indexes it."""

    kv_key: str
    model_key: str
    tokens: int
    bytes: int
    seconds: float  # prefill time (0.0 when it was already stored)
    computed: bool
    chunks_covered: int
    chunks_total: int
    blocks: list[dict] = field(default_factory=list)  # token_start, token_end, bytes, crc32


class H3RuntimeResource(ConfigurableResource):
    """The tiered-KV runtime and the stored KV of documents."""

    config_file: str | None = Field(
        default=None, description="h3_config.yaml to use; null: $H3_CONFIG or the repository's")
    tiered_cache: bool = Field(
        default=True, description="decode on the engine's tiered cache (hot budget); false: a "
                                  "plain DynamicCache (full attention, no budget)")
    recompute_tokens: int = Field(
        default=16, description="tokens recomputed at the start of each re-positioned span")

    def load_config(self) -> H3Config:
        """The runtime's part of the project settings (the whole file validated once)."""
        return load_config(self.config_file).runtime

    def get_runtime(self) -> ReuseRuntime:
        """The process-wide `ReuseRuntime` for this configuration (loaded on first use, ~5 s)."""
        cfg = self.load_config()
        key = (repr(cfg), self.tiered_cache, self.recompute_tokens, str(under_home()))
        with _LOCK:
            if key not in _OPEN:
                _OPEN[key] = self._open(cfg)
            return _OPEN[key]

    def _open(self, cfg: H3Config) -> ReuseRuntime:
        from h3_runtime.engine import H3Engine  # heavy: loads the model
        from h3_runtime.kvcache.corpus import CorpusKVCache
        from h3_runtime.reuse.doc_kv import DocumentKV
        from h3_runtime.reuse.runtime import ReuseRuntime

        engine = H3Engine(config=cfg)
        # stored KV is read through the corpus cache: warm / hot across questions (runtime.corpus_cache)
        corpus = CorpusKVCache.from_config(engine.cold, cfg, next(engine.model.parameters()).dtype,
                                           next(engine.model.parameters()).device)
        store = DocumentKV(engine.cold, doc_kv_root(cfg), cache=corpus)
        store.span_vectors = chunk_vectors  # blocks get their chunks' vectors (relevance rule)
        chunk = cfg.runtime.prefill_chunk_tokens
        if not self.tiered_cache:
            return ReuseRuntime(engine.model, engine.tokenizer, store,
                                recompute_tokens=self.recompute_tokens, chunk_tokens=chunk)
        engine.model.set_attn_implementation("h3")  # sparse layers attend over the tiers
        runtime = ReuseRuntime(engine.model, engine.tokenizer, store,
                               cache_factory=engine.new_cache, cache_stats=engine.cache_stats,
                               recompute_tokens=self.recompute_tokens, chunk_tokens=chunk)
        runtime.engine = engine
        return runtime

    # ---- what the assets use ------------------------------------------------------------------
    def precompute(self, doc_id: str, chunks: list[ChunkText]) -> Precomputed:
        """Stores the document's KV (the leading chunks that fit the model's context) unless it
        is stored already."""
        runtime = self.get_runtime()
        kept = runtime.fit_chunks(chunks)
        index, computed = runtime.precompute(doc_id, kept)
        bpt = index.bytes_per_token
        blocks = []
        for b, crc in enumerate(index.crc32):
            start, end = index.block_span(b)
            blocks.append({"token_start": start, "token_end": end, "bytes": (end - start) * bpt,
                           "crc32": crc})
        return Precomputed(index.key, index.model_key, index.tokens, index.nbytes,
                           index.seconds if computed else 0.0, computed, len(kept), len(chunks),
                           blocks)

    def drop_legacy_kv(self) -> int:
        """Removes document KV stored in the first format (it is prefilled again); how many."""
        return self.get_runtime().store.drop_legacy()

    def ask(self, question: str, doc_id: str | None = None, k: int = 5, *,
            model: bool = True, max_new_tokens: int = 64, store_path: str | None = None
            ) -> Answer:
        """Answers `question` from the document store ($H3_HOME/lancedb, or `store_path`): over
        the recalled evidence, or over the whole document `doc_id`. The answer quotes its
        evidence (`quotes`: text, doc_id, source, page, bbox); the model's own text
        (`generated`) is kept only when every figure and name it states is in that evidence;
        a question the store cannot answer comes back `refused` with a `reason`. `model=False`
        answers with quotes only (the model never loads). Raises ValueError for an empty
        question or k < 1, LookupError for a `doc_id` that is not stored."""
        from h3.resources.answers import ask
        from h3.resources.store.resource import open_store

        return ask(question, open_store(store_path), doc_id=doc_id, k=k,
                   runtime=self.get_runtime if model else None, max_new_tokens=max_new_tokens)

    def kv_stats(self) -> dict:
        """The cold tier's bytes, the model's fingerprint and the stored KV's format."""
        runtime = self.get_runtime()
        return {"cold_tier_bytes": runtime.store.usage_bytes(), "model_key": runtime.model_key,
                "format_version": KV_FORMAT}


def chunk_vectors(index: DocKVIndex) -> dict[str, list[float]]:
    """{chunk id: SBERT vector} of the chunks a stored KV entry (a whole document, or one part
    of it) spans, from $H3_HOME's document store."""
    from h3.resources.store import open_store, sql_str

    if not index.span_ids:
        return {}
    ids = ", ".join(map(sql_str, index.span_ids))
    rows = open_store().rows("chunks", f"chunk_id IN ({ids})", ["chunk_id", "vector"])
    return {r["chunk_id"]: r["vector"] for r in rows if r["vector"] is not None}
