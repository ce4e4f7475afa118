"""The `h3` attention function, registered with transformers' `AttentionInterface` (and the
sdpa mask under the same name): exact layers run transformers' own sdpa function unchanged;
sparse layers attend over the tiers through their `H3Cache`."""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from h3_runtime.hf.cache import take_pending

ATTN_NAME = "h3"


def h3_attention_forward(module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor,
                         value: torch.Tensor, attention_mask: torch.Tensor | None,
                         dropout: float = 0.0, scaling: float | None = None,
                         is_causal: bool | None = None, **kwargs) -> tuple[torch.Tensor, None]:
    """query: (B, Hq, q, D); key/value: (B, H_kv, k, D). Returns ((B, q, Hq, D), None)."""
    pending = take_pending(key)
    if pending is None:  # exact layer (or another cache): plain sdpa, bit-identical to it
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    cache, layer_idx = pending
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    return cache.attend(layer_idx, query, key, value, scale), None


def register() -> str:
    """Registers `h3` with AttentionInterface and AttentionMaskInterface (idempotent)."""
    AttentionInterface.register(ATTN_NAME, h3_attention_forward)
    AttentionMaskInterface.register(ATTN_NAME, sdpa_mask)
    return ATTN_NAME
