"""The on-disk format of one document's KV in the cold tier.

One folder per content key holds `meta.json` and block-group files `g0000.kv`, `g0001.kv`, ...:
each group is `group_tokens` consecutive tokens of every layer, keys then values, raw
little-endian tensors `(L, H_kv, T_g, D)` so that a load is one read and one `frombuffer`. Each
group's CRC32 is in `meta.json`; a read whose bytes do not match raises `KVIntegrityError`, so a
flipped bit is never used silently. Bump `FORMAT_VERSION` whenever this layout changes: it is part
of every content key, so old blocks are then never found again (and age out by eviction).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

FORMAT_VERSION = 1
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class KVIntegrityError(RuntimeError):
    """A stored KV group whose bytes do not match its checksum (or is missing/truncated)."""


@dataclass(slots=True)
class DocKVMeta:
    key: str
    doc_id: str
    model_key: str
    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    tokens: int
    group_tokens: int
    crc32: list[int] = field(default_factory=list)  # one per group
    spans: list[list[int]] = field(default_factory=list)  # [start, end) token range of each chunk
    span_ids: list[str] = field(default_factory=list)  # chunk id of each span
    span_digests: list[str] = field(default_factory=list)  # prompt.text_digest of each chunk
    format_version: int = FORMAT_VERSION
    seconds: float = 0.0  # prefill time that produced it

    @property
    def groups(self) -> int:
        return (self.tokens + self.group_tokens - 1) // self.group_tokens

    @property
    def bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * _DTYPES[self.dtype].itemsize

    @property
    def nbytes(self) -> int:
        return self.tokens * self.bytes_per_token

    def save(self, folder: Path) -> None:
        (folder / "meta.json").write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, folder: Path) -> DocKVMeta:
        data = json.loads((folder / "meta.json").read_text())
        return cls(**data)


def group_path(folder: Path, index: int) -> Path:
    return folder / f"g{index:04d}.kv"


def write_group(folder: Path, index: int, keys: torch.Tensor, values: torch.Tensor) -> int:
    """Writes one group (`keys`, `values`: `(L, H_kv, T_g, D)`); returns its CRC32."""
    payload = (
        keys.contiguous().view(torch.uint8).numpy().tobytes()
        + values.contiguous().view(torch.uint8).numpy().tobytes()
    )
    group_path(folder, index).write_bytes(payload)
    return zlib.crc32(payload)


def read_group(folder: Path, meta: DocKVMeta, index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One group's keys and values `(L, H_kv, T_g, D)`, after checking its CRC32.

    Raises KVIntegrityError naming the file when the bytes are missing, short or changed."""
    path = group_path(folder, index)
    t_g = min(meta.group_tokens, meta.tokens - index * meta.group_tokens)
    dtype = _DTYPES[meta.dtype]
    half = meta.layers * meta.kv_heads * t_g * meta.head_dim * dtype.itemsize
    buf = bytearray(2 * half)
    try:
        with open(path, "rb", buffering=0) as f:
            n = f.readinto(buf)
    except OSError as exc:
        raise KVIntegrityError(f"{path}: cannot read KV group: {exc.strerror or exc}") from exc
    if n != 2 * half or path.stat().st_size != 2 * half:
        raise KVIntegrityError(f"{path}: KV group has {n} bytes, expected {2 * half}")
    if zlib.crc32(buf) != meta.crc32[index]:
        raise KVIntegrityError(f"{path}: KV group checksum mismatch (corrupted block)")
    flat = torch.frombuffer(buf, dtype=torch.uint8)
    shape = (meta.layers, meta.kv_heads, t_g, meta.head_dim)
    keys = flat[:half].view(dtype).view(shape)  # (L, H_kv, T_g, D)
    values = flat[half:].view(dtype).view(shape)  # (L, H_kv, T_g, D)
    return keys, values
