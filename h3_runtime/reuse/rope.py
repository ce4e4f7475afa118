"""Re-positioning cached Llama-style keys: RoPE rotations compose, so a key computed at position p
becomes the key at position p + d by one more rotation of angle d * inv_freq (values carry no
position and stay as they are).

    R(p + d) k == R(d) (R(p) k)        per 2-D frequency pair, exactly in real arithmetic

The angles are computed in float64 so that large deltas (thousands of tokens) stay within float
tolerance of keys computed directly at the new positions.
"""

from __future__ import annotations

import torch


def rope_inv_freq(model: torch.nn.Module) -> torch.Tensor:
    """The model's RoPE inverse frequencies `(D/2,)`; refuses RoPE variants with a scaling factor
    (their cos/sin are multiplied by `attention_scaling`, which a second rotation would square)."""
    rotary = getattr(getattr(model, "model", model), "rotary_emb", None)
    if rotary is None or not hasattr(rotary, "inv_freq"):
        raise ValueError(f"{type(model).__name__} has no Llama-style rotary embedding (rotary_emb)")
    scaling = float(getattr(rotary, "attention_scaling", 1.0))
    if abs(scaling - 1.0) > 1e-6:
        raise ValueError(f"RoPE with attention_scaling={scaling} cannot be re-positioned exactly")
    return rotary.inv_freq.detach().to(torch.float64).cpu()


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def shift_keys(keys: torch.Tensor, delta: int, inv_freq: torch.Tensor) -> torch.Tensor:
    """Keys `(..., T, D)` rotated as if every position moved by `delta`; returns a new tensor of the
    same dtype and device (the input is not changed). `delta == 0` returns the input itself."""
    if delta == 0:
        return keys
    angles = float(delta) * inv_freq  # (D/2,) float64
    emb = torch.cat((angles, angles))  # (D,) the layout HF's rotate_half expects
    cos = emb.cos().to(device=keys.device, dtype=torch.float32)
    sin = emb.sin().to(device=keys.device, dtype=torch.float32)
    k = keys.to(torch.float32)  # (..., T, D)
    return (k * cos + _rotate_half(k) * sin).to(keys.dtype)  # (..., T, D)
