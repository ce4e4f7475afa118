"""The two attention kernels of a sparse layer over its hot buffer [sinks | slots | ring]
(prefill_attention="exact" chunks go through exact_prefill.py instead).

Both see the buffer's live columns only, through its additive bias per KV head (0 live, -inf
empty: each KV head's block slots hold the blocks that head chose); a decoded token is already
in the ring, a sparse prefill chunk's tokens are attended beside the
buffer (causal). Keys carry their RoPE already, so the buffer's column order does not matter.
"""

from __future__ import annotations

import torch

from h3_runtime.kvcache.hot import HotPool

NEG_INF = float("-inf")


def decode_attention(q: torch.Tensor, k_buf: torch.Tensor, v_buf: torch.Tensor,
                     bias: torch.Tensor, scaling: float, pool: HotPool) -> torch.Tensor:
    """One new token over the hot buffer, which already holds the token itself (the layer
    commits it to the ring first): the buffer is read in place, its bias masking empty columns.
    q: (1, Hq, 1, D); k_buf, v_buf: (H_kv, N, D); bias: (H_kv, N). Returns (1, 1, Hq, D).

    A buffer in the query's dtype goes through one fused sdpa call. A narrower one
    (decode_kv_dtype) is read through an up-cast copy, accounted in the hot pool while it lives
    (geometry.py makes room for one), and attended with two batched matmuls over the query heads
    grouped by their KV head: on CPU, sdpa in float16 itself is 4x slower than in float32, and
    sdpa on the copy would also expand the mask and the KV heads to every query head (GQA)."""
    H, N, D = k_buf.shape
    if k_buf.dtype == q.dtype:
        mask = _per_query_head(bias, q.shape[1]).to(q.dtype)[None, :, None, :]  # (1, Hq, 1, N)
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k_buf[None], v_buf[None], attn_mask=mask, scale=scaling, enable_gqa=True)
        return out.transpose(1, 2)
    upcast = (k_buf.numel() + v_buf.numel()) * q.element_size()
    pool.reserve(upcast, "decode up-cast")
    try:
        qg = q[0, :, 0].reshape(H, -1, D)  # (H_kv, g, D): query head h reads KV head h // g
        scores = torch.baddbmm(bias[:, None, :].to(q.dtype), qg, k_buf.to(q.dtype).transpose(1, 2),
                               alpha=scaling)  # (H_kv, g, N)
        out = torch.bmm(torch.softmax(scores, dim=-1), v_buf.to(q.dtype))  # (H_kv, g, D)
    finally:
        pool.release(upcast, "decode up-cast")
    return out.reshape(1, 1, -1, D)


def chunk_attention(q: torch.Tensor, k_buf: torch.Tensor, v_buf: torch.Tensor,
                    bias: torch.Tensor, kn: torch.Tensor, vn: torch.Tensor, scaling: float,
                    pool: HotPool, bytes_per_token_layer: int) -> torch.Tensor:
    """C new tokens (causal among themselves) over [hot buffer | new tokens] in one fused sdpa
    call; the concatenation is a staging copy accounted in the hot pool (the geometry reserves
    room for it). q: (1, Hq, C, D); kn, vn: (H_kv, C, D); bias: (H_kv, N).
    Returns (1, C, Hq, D)."""
    N, C = k_buf.shape[1], q.shape[2]
    staging = (N + C) * bytes_per_token_layer
    pool.reserve(staging, "attention staging")
    try:
        keys = torch.cat([k_buf, kn.to(k_buf.device)], dim=1)[None]  # (1, H_kv, N + C, D)
        values = torch.cat([v_buf, vn.to(v_buf.device)], dim=1)[None]
        Hq = q.shape[1]
        mask = torch.empty(Hq, C, N + C, dtype=q.dtype, device=q.device)  # additive
        mask[:, :, :N] = _per_query_head(bias, Hq)[:, None, :]
        mask[:, :, N:] = torch.full((C, C), NEG_INF, dtype=q.dtype, device=q.device).triu(1)
        out = torch.nn.functional.scaled_dot_product_attention(
            q, keys, values, attn_mask=mask[None], scale=scaling, enable_gqa=True,
        )  # (1, Hq, C, D)
    finally:
        pool.release(staging, "attention staging")
    return out.transpose(1, 2)  # (1, C, Hq, D)


def _per_query_head(bias: torch.Tensor, n_query_heads: int) -> torch.Tensor:
    """(H_kv, N) -> (Hq, N): query head h reads KV head h // g (transformers' repeat_kv)."""
    return bias.repeat_interleave(n_query_heads // bias.shape[0], dim=0)
