"""The two attention kernels of a sparse layer over its hot buffer [sinks | slots | ring]
(prefill_attention="exact" chunks go through exact_prefill.py instead).

Both see the buffer's live columns only, through its additive bias (0 live, -inf empty), plus
the new tokens; keys carry their RoPE already, so the buffer's column order does not matter.
"""

from __future__ import annotations

import torch

from h3_runtime.kvcache.hot import HotPool

NEG_INF = float("-inf")


def decode_attention(q: torch.Tensor, k_buf: torch.Tensor, v_buf: torch.Tensor,
                     bias: torch.Tensor, kn: torch.Tensor, vn: torch.Tensor,
                     scaling: float) -> torch.Tensor:
    """One new token over [hot buffer | itself] without concatenating the buffer: the buffer is
    read in place (its bias masks empty columns) and the token's own key is a separate score
    column, so decode moves no KV bytes. q: (1, Hq, 1, D); k_buf, v_buf: (H_kv, N, D); bias: (N,);
    kn, vn: (H_kv, 1, D). Returns (1, 1, Hq, D); same as `chunk_attention` with C = 1 up to
    float rounding."""
    H, N, D = k_buf.shape
    Hq = q.shape[1]
    dev = k_buf.device
    qg = q[0].reshape(H, Hq // H, D)  # (H_kv, g, D): query heads grouped by their KV head
    kn, vn = kn.to(dev), vn.to(dev)
    s_buf = torch.baddbmm(bias.to(q.dtype), qg, k_buf.transpose(1, 2), alpha=scaling)
    s_new = torch.bmm(qg, kn.transpose(1, 2)) * scaling  # (H_kv, g, 1)
    p = torch.softmax(torch.cat([s_buf, s_new], -1).float(), -1).to(q.dtype)  # (H_kv, g, N+1)
    out = torch.baddbmm(p[..., N:] * vn, p[..., :N], v_buf)  # (H_kv, g, D)
    return out.reshape(1, 1, Hq, D)


def chunk_attention(q: torch.Tensor, k_buf: torch.Tensor, v_buf: torch.Tensor,
                    bias: torch.Tensor, kn: torch.Tensor, vn: torch.Tensor, scaling: float,
                    pool: HotPool, bytes_per_token_layer: int) -> torch.Tensor:
    """C new tokens (causal among themselves) over [hot buffer | new tokens] in one fused sdpa
    call; the concatenation is a staging copy accounted in the hot pool (the geometry reserves
    room for it). q: (1, Hq, C, D); kn, vn: (H_kv, C, D). Returns (1, C, Hq, D)."""
    N, C = k_buf.shape[1], q.shape[2]
    staging = (N + C) * bytes_per_token_layer
    pool.reserve(staging, "attention staging")
    try:
        keys = torch.cat([k_buf, kn.to(k_buf.device)], dim=1)[None]  # (1, H_kv, N + C, D)
        values = torch.cat([v_buf, vn.to(v_buf.device)], dim=1)[None]
        mask = torch.empty(C, N + C, dtype=q.dtype, device=q.device)  # (C, N + C) additive
        mask[:, :N] = bias
        mask[:, N:] = torch.full((C, C), NEG_INF, dtype=q.dtype, device=q.device).triu(1)
        out = torch.nn.functional.scaled_dot_product_attention(
            q, keys, values, attn_mask=mask[None, None], scale=scaling, enable_gqa=True,
        )  # (1, Hq, C, D)
    finally:
        pool.release(staging, "attention staging")
    return out.transpose(1, 2)  # (1, C, Hq, D)
