"""Decode attention over an int8 hot buffer on a CPU, its up-cast copy kept from call to call.

`sparse_attention.decode_attention` attends an int8 buffer through an up-cast float copy of its
K and then of its V (the scales go on the scores and the probabilities). Made afresh at every
call, each copy is a new multi-megabyte allocation: on a CPU the allocator hands such a block
back to the system when it is freed and the next one starts on fresh pages, so every layer of
every decoded token pays the page faults as well as the copy. Here one float buffer per cache
(`TierContext.upcast_scratch`), shaped like the largest layer buffer, receives K and then V:
the same values, the same products, the same bytes out, the pages reused (on a GPU the caching
allocator already does this: that path is unchanged). The hot pool accounts the copy during the
call exactly as before (`decode_scratch_bytes_per_token`: it is scratch, not held KV; the
geometry reserves room for one layer's).
"""

from __future__ import annotations

import torch

from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.sparse_attention import decode_scratch_bytes_per_token


def applies(q: torch.Tensor, k_buf: torch.Tensor, k_scale: torch.Tensor | None) -> bool:
    """Whether `int8_decode_attention` serves this call (an int8 host buffer, float32 query)."""
    return (k_scale is not None and k_buf.device.type == "cpu" and q.dtype == torch.float32
            and k_buf.dtype == torch.int8)


def int8_decode_attention(q: torch.Tensor, k_buf: torch.Tensor, v_buf: torch.Tensor,
                          bias: torch.Tensor, scaling: float, pool: HotPool,
                          k_scale: torch.Tensor, v_scale: torch.Tensor,
                          scratch: list) -> torch.Tensor:
    """`sparse_attention.decode_attention`'s int8 branch (the same operations in the same order)
    with the up-cast copies written into `scratch[0]`, a float tensor (H_kv, >= N, D) kept
    between calls (made or grown here). q: (1, Hq, 1, D); k_buf, v_buf: (H_kv, N, D) int8;
    bias, k_scale, v_scale: (H_kv, N). Returns (1, 1, Hq, D)."""
    H, N, D = k_buf.shape
    nbytes = N * decode_scratch_bytes_per_token(q.shape[1], H * 2 * D * q.element_size(),
                                                q.dtype, k_buf.dtype, False)
    pool.reserve(nbytes, "decode attention")
    try:
        buf = scratch[0] if scratch else None
        if buf is None or buf.shape[0] != H or buf.shape[1] < N or buf.shape[2] != D:
            scratch[:] = [buf := torch.empty(H, N, D, dtype=q.dtype)]
        up = buf[:, :N]
        qg = q[0, :, 0].reshape(H, -1, D)
        col = (k_scale * scaling).to(q.dtype)[:, None, :]  # (H_kv, 1, N)
        scores = torch.bmm(qg, up.copy_(k_buf).transpose(1, 2)).mul_(col)
        probs = torch.softmax(scores.add_(bias[:, None, :].to(q.dtype)), dim=-1)
        out = torch.bmm(probs.mul_(v_scale.to(q.dtype)[:, None, :]), up.copy_(v_buf))
    finally:
        pool.release(nbytes, "decode attention")
    return out.reshape(1, 1, -1, D)
