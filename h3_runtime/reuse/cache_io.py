"""Putting loaded KV into a cache and running computed tokens through it, for any HF `Cache`:
the plain `DynamicCache` (full attention) or the runtime's tiered `H3Cache` (hot budget)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def append_kv(cache, keys: torch.Tensor, values: torch.Tensor, token_ids: Sequence[int]) -> None:
    """Appends T precomputed tokens to every layer (`keys`, `values`: (L, H_kv, T, D)).

    A tiered cache keeps its hot budget: the tokens go hot while everything fits, else into its
    warm/cold tiers (sparse mode). Other caches get `update(k, v, layer)` per layer."""
    if hasattr(cache, "append_kv"):  # the runtime's own API, when it provides one
        cache.append_kv(keys, values, list(token_ids))
        return
    if hasattr(cache, "note_tokens"):
        cache.token_ids.extend(int(t) for t in token_ids)
    n = keys.shape[2]
    tiered = hasattr(cache, "exact_fits")
    if tiered and not cache.sparse and not cache.exact_fits(n):
        cache.sparse = True
    for layer_idx in range(keys.shape[0]):
        k, v = keys[layer_idx][None], values[layer_idx][None]  # (1, H_kv, T, D)
        if not tiered or not cache.sparse:
            cache.update(k, v, layer_idx)
            continue
        # Sparse H3Cache: the same path as H3Cache.load_prefix_blocks, on a non-empty cache.
        layer = cache.layers[layer_idx]
        if not layer.is_initialized:
            layer.lazy_initialization(k[:, :, :0].to(cache.device), v[:, :, :0].to(cache.device))
        if layer.store is None:
            cache._to_sparse(layer_idx, k)
        layer.store.commit(keys[layer_idx], values[layer_idx])  # (H_kv, T, D)


def forward_tokens(model: torch.nn.Module, cache, token_ids: Sequence[int],
                   chunk_tokens: int = 512) -> torch.Tensor:
    """Runs `token_ids` through the model on `cache` (in chunks the cache accepts); returns the
    last token's logits `(V,)`."""
    device = next(model.parameters()).device
    ids = torch.tensor([list(token_ids)], device=device)  # (1, T)
    if hasattr(cache, "plan_chunks"):
        sizes = cache.plan_chunks(ids.shape[1])
    else:
        sizes = [min(chunk_tokens, ids.shape[1] - s) for s in range(0, ids.shape[1], chunk_tokens)]
    start, logits = 0, None
    for size in sizes:
        part = ids[:, start:start + size]  # (1, C)
        if hasattr(cache, "note_tokens"):
            cache.note_tokens(part)
        out = model(input_ids=part, cache=cache, use_cache=True, logits_to_keep=1)
        logits = out.logits[0, -1]  # (V,)
        start += size
    return logits
