"""Prefilling a document once and storing its KV in the cold tier (`DocKVStore`)."""

from __future__ import annotations

import time
from collections.abc import Sequence

import torch
from transformers import DynamicCache

from h3_runtime.reuse.blocks import DocKVMeta
from h3_runtime.reuse.store import DocKVStore, doc_kv_key


@torch.no_grad()
def prefill_kv(model: torch.nn.Module, token_ids: Sequence[int], chunk_tokens: int = 512
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's keys and values `(L, H_kv, T, D)` for `token_ids` at positions 0..T-1, computed
    in chunks of `chunk_tokens` (same result as one pass, bounded activation memory)."""
    device = next(model.parameters()).device
    cache = DynamicCache()
    for a in range(0, len(token_ids), chunk_tokens):
        ids = torch.tensor([list(token_ids[a:a + chunk_tokens])], device=device)  # (1, T_c)
        model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
    keys = torch.stack([layer.keys[0] for layer in cache.layers])  # (L, H_kv, T, D)
    values = torch.stack([layer.values[0] for layer in cache.layers])  # (L, H_kv, T, D)
    return keys.cpu(), values.cpu()


def precompute_document(model: torch.nn.Module, store: DocKVStore, *, doc_id: str,
                        token_ids: Sequence[int], model_key: str,
                        spans: Sequence[tuple[int, int]] = (), span_ids: Sequence[str] = (),
                        span_digests: Sequence[str] = (),
                        group_tokens: int = 256, chunk_tokens: int = 512,
                        force: bool = False) -> tuple[DocKVMeta, bool]:
    """Stores the document's KV unless the same content key is already stored (and `force` is
    off); returns its metadata and whether it was computed now. `spans` are the [start, end) token
    ranges of its chunks, kept so that recalled chunks can be loaded as slices later."""
    key = doc_kv_key(list(token_ids), model_key)
    existing = store.meta(key)
    if existing is not None and not force:
        return existing, False
    t0 = time.perf_counter()
    keys, values = prefill_kv(model, token_ids, chunk_tokens)
    seconds = time.perf_counter() - t0
    L, H, T, D = keys.shape  # noqa: N806
    meta = DocKVMeta(
        key=key, doc_id=doc_id, model_key=model_key, layers=L, kv_heads=H, head_dim=D,
        dtype=str(keys.dtype).removeprefix("torch."), tokens=T, group_tokens=group_tokens,
        spans=[list(s) for s in spans], span_ids=list(span_ids),
        span_digests=list(span_digests), seconds=round(seconds, 3),
    )
    return store.put(meta, keys, values), True
