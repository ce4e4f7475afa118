"""Re-positioning cached keys: HF caches keys after RoPE, and RoPE rotations compose
(R(p + delta) = R(delta) R(p)), so a block computed at positions p.. can be reused at p + delta
by rotating its keys by delta. Values carry no position and stay as they are."""

from __future__ import annotations

import torch


def shift_keys(keys: torch.Tensor, delta: int, inv_freq: torch.Tensor) -> torch.Tensor:
    """keys: (..., T, D) post-RoPE (HF rotate_half layout); inv_freq: (D/2,), e.g.
    `model.model.rotary_emb.inv_freq`. Returns new keys as if computed `delta` positions later."""
    angle = float(delta) * inv_freq.to(torch.float32)  # (D/2,)
    cos = torch.cat([angle.cos(), angle.cos()]).to(keys.device)  # (D,)
    sin = torch.cat([angle.sin(), angle.sin()]).to(keys.device)
    k = keys.float()
    half = k.shape[-1] // 2
    rotated = torch.cat([-k[..., half:], k[..., :half]], dim=-1)  # rotate_half
    return (k * cos + rotated * sin).to(keys.dtype)
