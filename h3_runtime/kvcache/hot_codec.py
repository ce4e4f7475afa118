"""How K and V are written into and read from a hot buffer, in the buffer's dtype.

A float buffer (the model's dtype, or float16 for decode: `runtime.decode_kv_dtype`) holds the
values themselves. An int8 buffer (`decode_kv_dtype: int8`) holds each token's vector per KV
head rounded to int8 against its own absolute maximum, beside a float32 scale per (head, token):
x ~= q * scale, |q| <= 127 (KIVI-style per-token quantisation). A head-token then costs
2 * D + 2 * 4 bytes for K and V (136 at D = 64) against float16's 256, so the same hot bytes hold
~1.9x the tokens. Decode attention applies the scales to the scores and to the probabilities
(sparse_attention.decode_attention), never to a de-quantised copy of the buffer.

Every writer of a hot buffer goes through `write`, every reader that needs the values through
`read`: a buffer's scale tensor (None for a float buffer) has the buffer's shape minus its last
dimension, so one index addresses both.
"""

from __future__ import annotations

import torch

from h3_runtime.kvcache.block import to_hot

INT8_MAX = 127
SCALE_DTYPE = torch.float32  # int8 buffers' per-(head, token) scales


def is_quantised(dtype: torch.dtype) -> bool:
    return dtype == torch.int8


def hot_bytes_per_token_layer(n_kv_heads: int, head_dim: int, dtype: torch.dtype) -> int:
    """Hot bytes of one token of one layer, K and V, in a buffer of `dtype` (scales included)."""
    scales = 2 * SCALE_DTYPE.itemsize if is_quantised(dtype) else 0
    return n_kv_heads * (2 * head_dim * dtype.itemsize + scales)


def new_scales(buffer: torch.Tensor) -> torch.Tensor | None:
    """The scale tensor of a new (zeroed) buffer: ones, or None for a float buffer."""
    if not is_quantised(buffer.dtype):
        return None
    return torch.ones(buffer.shape[:-1], dtype=SCALE_DTYPE, device=buffer.device)


def quantise(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., D) -> (int8 (..., D), float32 scales (...)): absmax per vector. An all-zero vector
    gets scale 1 (its values are 0 whatever the scale)."""
    x = x.float()
    scale = x.abs().amax(-1) / INT8_MAX
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(x / scale[..., None]).clamp_(-INT8_MAX, INT8_MAX).to(torch.int8)
    return q, scale


def write(dst: torch.Tensor, scales: torch.Tensor | None, index: tuple, x: torch.Tensor,
          scratch: bool = False) -> None:
    """dst[index] = x in dst's dtype (on dst's device); an int8 dst also gets scales[index].
    `scratch`: x is a temporary the caller owns (a float16 clamp may run in place)."""
    if scales is None:
        dst[index] = to_hot(x, dst.dtype, scratch=scratch).to(dst.device)
        return
    q, s = quantise(x)
    dst[index] = q.to(dst.device)
    scales[index] = s.to(scales.device)


def read(src: torch.Tensor, scales: torch.Tensor | None, index: tuple,
         dtype: torch.dtype) -> torch.Tensor:
    """src[index] as `dtype` on the host (a copy): de-quantised where src is int8."""
    got = src[index].to("cpu", copy=True)
    if scales is None:
        return got.to(dtype)
    return (got.to(torch.float32) * scales[index].to("cpu")[..., None]).to(dtype)
