"""What reuse needs of a KV cache (`ReuseCache`), the plain full-attention cache that provides it
(`PlainCache`), and running tokens through either.

Two caches implement `ReuseCache`: `PlainCache` (a `DynamicCache`: full attention, no budget)
and the runtime's tiered `H3Cache` (hot budget). Reuse only calls these three methods and the
model's forward, so it never needs to know which one it was given.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
from transformers import DynamicCache


class ReuseCache(Protocol):
    def append_kv(self, keys: torch.Tensor, values: torch.Tensor, token_ids: list[int]) -> None:
        """Appends T precomputed tokens to every layer (`keys`, `values`: (L, H_kv, T, D))."""

    def plan_chunks(self, q_len: int) -> list[int]:
        """Sizes of the forward calls that run `q_len` new tokens on this cache."""

    def note_tokens(self, input_ids: torch.Tensor | None) -> None:
        """Records the ids of the next forward (batch 1)."""

    def expect_tokens(self, n_tokens: int) -> None:
        """The prompt about to be built holds `n_tokens` tokens (room can be made once)."""


class PlainCache(DynamicCache):
    """transformers' `DynamicCache` (same tensors, same attention) with the `ReuseCache` methods:
    loaded KV goes in through `update` per layer, prefill runs in chunks of `chunk_tokens`."""

    def __init__(self, *args, chunk_tokens: int = 512, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.chunk_tokens = chunk_tokens

    def append_kv(self, keys: torch.Tensor, values: torch.Tensor, token_ids: list[int]) -> None:
        for layer_idx in range(keys.shape[0]):
            self.update(keys[layer_idx][None], values[layer_idx][None], layer_idx)  # (1, H_kv, T, D)

    def plan_chunks(self, q_len: int) -> list[int]:
        C = self.chunk_tokens
        return [min(C, q_len - s) for s in range(0, q_len, C)]

    def note_tokens(self, input_ids: torch.Tensor | None) -> None:
        pass  # a plain cache keys nothing by token ids

    def expect_tokens(self, n_tokens: int) -> None:
        pass  # a DynamicCache grows by concatenation whatever it is told


def forward_tokens(model: torch.nn.Module, cache: ReuseCache, token_ids: Sequence[int]
                   ) -> torch.Tensor:
    """Runs `token_ids` through the model on `cache` (in the chunks the cache plans); returns
    the last token's logits `(V,)`."""
    device = next(model.parameters()).device
    ids = torch.tensor([list(token_ids)], device=device)  # (1, T)
    start, logits = 0, None
    for size in cache.plan_chunks(ids.shape[1]):
        part = ids[:, start:start + size]  # (1, C)
        cache.note_tokens(part)
        out = model(input_ids=part, cache=cache, use_cache=True, logits_to_keep=1)
        logits = out.logits[0, -1]  # (V,)
        start += size
    return logits
