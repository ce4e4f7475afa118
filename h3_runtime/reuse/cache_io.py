"""Putting loaded KV into a cache and running computed tokens through it, for any HF `Cache`:
the plain `DynamicCache` (full attention) or the runtime's tiered `H3Cache` (hot budget)."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def append_kv(cache, keys: torch.Tensor, values: torch.Tensor, token_ids: Sequence[int]) -> None:
    """Appends T precomputed tokens to every layer (`keys`, `values`: (L, H_kv, T, D)).

    The runtime's `H3Cache` keeps its hot budget (`H3Cache.append_kv`: hot while everything fits,
    else into its warm/cold tiers). Other caches get `update(k, v, layer)` per layer."""
    if hasattr(cache, "append_kv"):
        cache.append_kv(keys, values, list(token_ids))
        return
    for layer_idx in range(keys.shape[0]):
        cache.update(keys[layer_idx][None], values[layer_idx][None], layer_idx)  # (1, H_kv, T, D)


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
