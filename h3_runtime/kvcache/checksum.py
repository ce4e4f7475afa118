"""Checksums of KV blocks: computed once when a block is written, verified on every cold load."""

from __future__ import annotations

import zlib

import torch


class IntegrityError(RuntimeError):
    """A KV block's bytes do not match the checksum recorded when it was stored."""


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """The raw bytes of a tensor (any dtype, bf16 included) without a copy when it is contiguous on CPU."""
    flat = t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
    return memoryview(flat.numpy())


def block_checksum(keys: torch.Tensor, values: torch.Tensor) -> int:
    """crc32 over the key bytes then the value bytes."""
    return zlib.crc32(tensor_bytes(values), zlib.crc32(tensor_bytes(keys)))


def verify(keys: torch.Tensor, values: torch.Tensor, expected: int, what: str) -> None:
    """Raises IntegrityError naming `what` when the block's checksum differs from `expected`."""
    got = block_checksum(keys, values)
    if got != expected:
        raise IntegrityError(f"{what}: checksum mismatch (stored {expected:#010x}, read {got:#010x})")
