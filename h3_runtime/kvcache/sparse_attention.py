"""The two attention kernels of a sparse layer over its hot buffer [sinks | slots | ring]
(prefill_attention="exact" chunks go through exact_prefill.py instead).

Both see the buffer's live columns only, through its additive bias per KV head (0 live, -inf
empty: each KV head's block slots hold the blocks that head chose); a decoded token is already
in the ring, a sparse prefill chunk's tokens are attended beside the
buffer (causal). Keys carry their RoPE already, so the buffer's column order does not matter.
"""

from __future__ import annotations

import torch

from h3_runtime.kvcache.block import to_hot
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.hot_codec import is_quantised

NEG_INF = float("-inf")
BIAS_DTYPE = torch.float32  # a hot buffer's additive bias (geometry.py counts it: beta)


def native_narrow_matmul(device: torch.device, dtype: torch.dtype = torch.float16) -> bool:
    """Whether decode attends a narrow (float16 or bfloat16) buffer in its own dtype on
    `device`: on CUDA, where narrow matmul is native and an up-cast copy would only cost memory
    and time; on a CPU only for bfloat16 where oneDNN has native bfloat16 kernels (AVX512-BF16
    or AMX): a decode-sized bfloat16 bmm there reads half float32's bytes (2 threads, 2,800
    tokens a layer: 127 us against 146 for float32 and 286 for int8 through its up-cast copy).
    Not float16 on a CPU: even with oneDNN's float16 kernels (AVX512-FP16) a decode-sized
    float16 bmm measured no faster than the up-cast copy plus a float32 bmm (172 vs 158 us a
    layer), and without them PyTorch's float16 CPU matmul is a slow fallback."""
    if device.type == "cuda":
        return True
    return dtype == torch.bfloat16 and cpu_has_native_bfloat16()


def cpu_has_native_bfloat16() -> bool:
    """oneDNN's own test for bfloat16 instructions on this CPU (AVX512-BF16, AMX)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def decode_scratch_bytes_per_token(n_query_heads: int, model_bytes_per_token_layer: int,
                                   q_dtype: torch.dtype, buffer_dtype: torch.dtype,
                                   native: bool) -> int:
    """What `decode_attention` allocates per buffer token of the layer attending (the
    geometry's sigma): scores and probabilities per query head, plus the narrow copy of the
    probabilities (native) or an up-cast copy of the buffer's K, then of its V (not native: one
    at a time, half of `model_bytes_per_token_layer`, which counts K and V: K's copy is read
    before V's is made, into the same scratch on a CPU; an int8 buffer also makes its key scales
    times the softmax scale, float32 per KV head, which n_query_heads * 4 covers); with a buffer
    in the query's dtype, sdpa's mask, scores and probabilities."""
    one_copy = model_bytes_per_token_layer // 2
    if buffer_dtype == q_dtype:
        return n_query_heads * 3 * q_dtype.itemsize
    if is_quantised(buffer_dtype):
        return one_copy + n_query_heads * (2 * q_dtype.itemsize + 4)
    if native:
        return n_query_heads * (4 + 4 + buffer_dtype.itemsize)
    return one_copy + n_query_heads * 2 * q_dtype.itemsize


def upcast(buf: torch.Tensor, dtype: torch.dtype, scratch: list | None) -> torch.Tensor:
    """`buf.to(dtype)`, written into `scratch[0]` (made or grown here) when one is given on a
    CPU. Made afresh at every call, the copy is a new multi-megabyte allocation that the CPU
    allocator hands back to the system when freed, so every layer of every decoded token would
    pay the page faults as well as the copy; one float buffer per cache
    (`TierContext.upcast_scratch`) keeps its pages. The same values either way (on a GPU the
    caching allocator already reuses the memory: no scratch there)."""
    if scratch is None or buf.device.type != "cpu":
        return buf.to(dtype)
    H, N, D = buf.shape
    held = scratch[0] if scratch else None
    if held is None or held.dtype != dtype or held.shape[0] != H or held.shape[1] < N \
            or held.shape[2] != D:
        scratch[:] = [held := torch.empty(H, N, D, dtype=dtype)]
    return held[:, :N].copy_(buf)


def decode_attention(q: torch.Tensor, k_buf: torch.Tensor, v_buf: torch.Tensor,
                     bias: torch.Tensor, scaling: float, pool: HotPool,
                     native: bool = False, k_scale: torch.Tensor | None = None,
                     v_scale: torch.Tensor | None = None,
                     scratch: list | None = None) -> torch.Tensor:
    """One new token over the hot buffer, which already holds the token itself (the layer
    commits it to the ring first): the buffer is read in place, its bias masking empty columns.
    q: (1, Hq, 1, D); k_buf, v_buf: (H_kv, N, D); bias: (H_kv, N). Returns (1, 1, Hq, D).
    What it allocates is reserved in the hot pool while it lives (the geometry makes room:
    `decode_scratch_bytes_per_token`).

    A buffer in the query's dtype goes through one fused sdpa call. A narrower one
    (decode_kv_dtype) is attended with two batched matmuls over the query heads grouped by their
    KV head (sdpa would expand the mask and the KV heads to every query head, GQA):
    - `native` (`native_narrow_matmul`: CUDA, or bfloat16 on a CPU with bfloat16
      instructions): in that dtype, in place. The query is scaled first, so the products are
      the logits themselves, far inside float16's range; the softmax runs in float32. Rounding
      the query and the probabilities to float16 moves the output by ~1e-4 (bfloat16: ~1e-2;
      the keys themselves are in that dtype), and no up-cast copy is made.
    - else (float16 on a CPU, bfloat16 on one without those instructions) in float32 on an
      up-cast copy of the buffer.
    - an int8 buffer (hot_codec.py; k_scale, v_scale: (H_kv, N)) on an up-cast copy of its
      integers, on any device: a key's scale multiplies its column of scores, a value's scale
      its column of probabilities, so no de-quantised copy of the buffer is made. `scratch`:
      where that copy is kept between calls (`upcast`; K's copy is read before V's reuses it)."""
    H, N, D = k_buf.shape
    nbytes = N * decode_scratch_bytes_per_token(q.shape[1], k_buf.shape[0] * 2 * D * q.element_size(),
                                                q.dtype, k_buf.dtype, native)
    pool.reserve(nbytes, "decode attention")
    try:
        if k_buf.dtype == q.dtype:
            mask = _per_query_head(bias, q.shape[1]).to(q.dtype)[None, :, None, :]  # (1, Hq, 1, N)
            out = torch.nn.functional.scaled_dot_product_attention(
                q, k_buf[None], v_buf[None], attn_mask=mask, scale=scaling, enable_gqa=True)
            return out.transpose(1, 2)
        if k_scale is not None:
            qg = q[0, :, 0].reshape(H, -1, D)
            col = (k_scale * scaling).to(q.dtype)[:, None, :]  # (H_kv, 1, N)
            scores = torch.bmm(qg, upcast(k_buf, q.dtype, scratch).transpose(1, 2)).mul_(col)
            probs = torch.softmax(scores.add_(bias[:, None, :].to(q.dtype)), dim=-1)
            out = torch.bmm(probs.mul_(v_scale.to(q.dtype)[:, None, :]),
                            upcast(v_buf, q.dtype, scratch))
        elif native:
            qg = to_hot(q[0, :, 0] * scaling, k_buf.dtype).reshape(H, -1, D)  # (H_kv, g, D)
            scores = torch.bmm(qg, k_buf.transpose(1, 2)).float().add_(bias[:, None, :])
            probs = torch.softmax(scores, dim=-1).to(v_buf.dtype)  # (H_kv, g, N)
            out = torch.bmm(probs, v_buf).to(q.dtype)  # (H_kv, g, D)
        else:
            qg = q[0, :, 0].reshape(H, -1, D)  # (H_kv, g, D): query head h reads KV head h // g
            scores = torch.baddbmm(bias[:, None, :].to(q.dtype), qg,
                                   k_buf.to(q.dtype).transpose(1, 2), alpha=scaling)
            out = torch.bmm(torch.softmax(scores, dim=-1), v_buf.to(q.dtype))  # (H_kv, g, D)
    finally:
        pool.release(nbytes, "decode attention")
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
