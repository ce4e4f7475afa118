"""A decoded token's K and V written into its column of an int8 hot buffer, through numpy views.

Every layer writes one column at every decoded token (tiered_attention.commit): quantise the
token's K and V per head (hot_codec.quantise), write them with their scales, open the column in
the bias. As torch ops that is a dozen dispatches of a few microseconds each on (H_kv, D)
vectors, ~40 us a layer, ~1.2 ms of a decoded token's ~45 at 8K tokens on the bundled model
(h3 bench --scenario decode). numpy does the same arithmetic on views of the same memory in a
few microseconds: IEEE float32 absmax, the same clamp, division and round-half-to-even as
`hot_codec.quantise`, so the bytes written are identical (tests/h3_runtime/test_decode_reuse.py).

Only for a host (CPU) int8 buffer and float32 K and V; anything else (a GPU, a float16 buffer,
a bfloat16 model) goes through hot_codec as before (`write` returns False).
"""

from __future__ import annotations

import numpy as np
import torch

from h3_runtime.kvcache.hot_codec import _TINY, INT8_MAX

_FLOOR = np.float32(_TINY * INT8_MAX)
_MAX = np.float32(INT8_MAX)


class ColumnWriter:
    """numpy views of one layer's int8 hot buffer: K, V (H_kv, N, D), their scales (H_kv, N)
    and the bias (H_kv, N)."""

    def __init__(self, k: torch.Tensor, v: torch.Tensor, ks: torch.Tensor | None,
                 vs: torch.Tensor | None, bias: torch.Tensor):
        self.usable = (ks is not None and k.dtype == torch.int8 and k.device.type == "cpu"
                       and ks.dtype == torch.float32 and bias.dtype == torch.float32)
        if self.usable:
            self.k, self.v, self.ks, self.vs, self.bias = (
                t.numpy() for t in (k, v, ks, vs, bias))

    def write(self, col: int, kn: torch.Tensor, vn: torch.Tensor) -> bool:
        """Column `col` <- one token's K and V (kn, vn: (H_kv, 1, D)), quantised as
        hot_codec.quantise does, and its bias opened. False (nothing written) where this path
        does not apply."""
        if not (self.usable and kn.dtype == vn.dtype == torch.float32
                and kn.device.type == vn.device.type == "cpu"):
            return False
        x = np.stack((kn[:, 0].numpy(), vn[:, 0].numpy()))  # (2, H_kv, D)
        scale = np.abs(x).max(-1)  # (2, H_kv)
        np.maximum(scale, _FLOOR, out=scale)
        scale /= _MAX
        x /= scale[..., None]
        q = np.rint(x).astype(np.int8)
        self.k[:, col], self.v[:, col] = q[0], q[1]
        self.ks[:, col], self.vs[:, col] = scale[0], scale[1]
        self.bias[:, col] = 0.0
        return True
