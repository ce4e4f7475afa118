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
_SMALL = 1 << 14  # elements: write_kv quantises K and V together up to this (a copy beyond)
_TINY = torch.finfo(torch.float32).tiny


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


def quantise(x: torch.Tensor, scratch: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """x (..., D) -> (int8 (..., D), float32 scales (...)): absmax per vector, so |x / scale| <=
    127 and rounding stays in range. An all-zero vector gets the smallest positive scale (its
    values are 0 whatever the scale). Few ops: decode quantises every new token of every layer.
    `scratch`: x is a float32 temporary the caller owns, divided in place (a block store's
    gathered copy: one large allocation fewer)."""
    x = x.float()
    scale = x.abs().amax(-1).clamp_min_(_TINY * INT8_MAX).div_(INT8_MAX)
    scaled = x.div_(scale[..., None]) if scratch else x / scale[..., None]
    return scaled.round_().to(torch.int8), scale


def write(dst: torch.Tensor, scales: torch.Tensor | None, index: tuple, x: torch.Tensor,
          scratch: bool = False) -> None:
    """dst[index] = x in dst's dtype (on dst's device); an int8 dst also gets scales[index].
    `scratch`: x is a temporary the caller owns (a float16 clamp or an int8 division may run
    in place)."""
    if scales is None:
        dst[index] = to_hot(x, dst.dtype, scratch=scratch).to(dst.device)
        return
    q, s = quantise(x, scratch=scratch and x.dtype == torch.float32)
    dst[index] = q.to(dst.device)
    scales[index] = s.to(scales.device)


def write_kv(k_dst: torch.Tensor, v_dst: torch.Tensor, scales: tuple | None, index: tuple,
             k: torch.Tensor, v: torch.Tensor) -> None:
    """`write` for K and V into the same columns (`scales`: (K's, V's) or None). A few new tokens'
    K and V are quantised together: one set of small ops instead of two (a decoded token's
    column is written in every layer at every step)."""
    if scales is None or k.numel() > _SMALL:
        write(k_dst, None if scales is None else scales[0], index, k)
        write(v_dst, None if scales is None else scales[1], index, v)
        return
    q, s = quantise(torch.stack([k, v]), scratch=k.dtype == torch.float32)  # (the stack is ours)
    k_dst[index], v_dst[index] = q[0].to(k_dst.device), q[1].to(v_dst.device)
    scales[0][index], scales[1][index] = s[0].to(k_dst.device), s[1].to(v_dst.device)


def read(src: torch.Tensor, scales: torch.Tensor | None, index: tuple,
         dtype: torch.dtype) -> torch.Tensor:
    """src[index] as `dtype` on the host (a copy): de-quantised where src is int8."""
    if scales is None:  # (src[index] is a view where index is slices: copied, once)
        return src[index].to("cpu", dtype, copy=True)
    got = src[index].to("cpu", torch.float32)  # a new tensor: the int8 values widened
    return got.mul_(scales[index].to("cpu")[..., None]).to(dtype)
