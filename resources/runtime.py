"""`H3RuntimeResource`: the H³ runtime as a Dagster resource, opened once per process.

It loads the engine (model + tiered KV cache) from h3_config.yaml, and the document-KV store of
the cold tier (`$H3_HOME/kv/docs` unless `runtime.cold_storage_path` says otherwise). One cap,
`runtime.cold_storage_max_gb`, covers the whole cold tier: document KV gets `cold_docs_share` of
it and the blocks the tiered cache spills (beside it, in `kv/`) the rest, so the two together
never exceed the cap. Assets call `get_runtime()` for a `ReuseRuntime`; the CLI uses
the same resource outside Dagster, so a question asked from `h3 ask` and one asked by an asset
load the same stored KV.
"""

from __future__ import annotations

import threading
from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from h3_runtime.config import H3Config
from h3_runtime.home import under_home
from h3_runtime.reuse.runtime import ReuseRuntime
from h3_runtime.reuse.store import DocKVStore
from resources.settings import config_path

GiB = 2**30
_OPEN: dict[tuple, ReuseRuntime] = {}
_LOCK = threading.Lock()


def doc_kv_root(cfg: H3Config) -> Path:
    """Where document KV lives: `<cold tier>/docs` (the engine's own blocks live beside it)."""
    base = Path(cfg.runtime.cold_storage_path) if cfg.runtime.cold_storage_path else under_home("kv")
    return base / "docs"


class H3RuntimeResource(ConfigurableResource):
    """The tiered-KV runtime and its cold store of precomputed document KV."""

    config_file: str | None = Field(
        default=None, description="h3_config.yaml to use; null: $H3_CONFIG or the repository's")
    tiered_cache: bool = Field(
        default=True, description="decode on the engine's tiered cache (hot budget); false: a "
                                  "plain DynamicCache (full attention, no budget)")
    recompute_tokens: int = Field(
        default=16, description="tokens recomputed at the start of each re-positioned span")
    group_tokens: int = Field(default=256, description="tokens per stored KV file")

    def load_config(self) -> H3Config:
        path = self.config_file or config_path()
        return H3Config.from_any(str(path) if path else None)

    def get_runtime(self) -> ReuseRuntime:
        """The process-wide runtime for this configuration (loaded on first use, ~5 s)."""
        cfg = self.load_config()
        key = (repr(cfg), self.tiered_cache, self.recompute_tokens, self.group_tokens,
               str(under_home()))
        with _LOCK:
            if key not in _OPEN:
                _OPEN[key] = self._open(cfg)
            return _OPEN[key]

    def _open(self, cfg: H3Config) -> ReuseRuntime:
        from h3_runtime import engine as engine_module  # heavy: torch + transformers

        engine = engine_module.H3Engine(config=cfg)
        cap = int(cfg.runtime.cold_storage_max_gb * GiB)
        docs_cap = int(cap * cfg.runtime.cold_docs_share)
        store = DocKVStore(doc_kv_root(cfg), docs_cap)
        engine.cold.set_cap(cap - docs_cap)
        if not self.tiered_cache:
            return ReuseRuntime(engine.model, engine.tokenizer, store,
                                recompute_tokens=self.recompute_tokens,
                                group_tokens=self.group_tokens,
                                chunk_tokens=cfg.runtime.prefill_chunk_tokens)
        engine.model.set_attn_implementation("h3")  # sparse layers attend over the tiers
        runtime = ReuseRuntime(engine.model, engine.tokenizer, store,
                               cache_factory=engine.new_cache, cache_stats=engine.cache_stats,
                               recompute_tokens=self.recompute_tokens,
                               group_tokens=self.group_tokens,
                               chunk_tokens=cfg.runtime.prefill_chunk_tokens)
        runtime.engine = engine
        return runtime
