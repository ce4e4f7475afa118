"""The cold tier: `KVBlockStore`, the one store of KV blocks on disk, under `cold_storage_path`.

One checksummed file per block, addressed by content key (block.content_key: the chained hash of
the token prefix up to the block's end + layer), so a later process finds the blocks an earlier
one wrote (reuse after a restart) and the same prefix is stored once. Two kinds of blocks share
it: one layer's block spilled by the tiered cache (`(H_kv, T, D)`, key `...-L007`) and a stored
document's block of every layer (`(L, H_kv, T, D)`, key `...-all`; reuse/doc_kv.py indexes them
per document). Every load verifies the crc32 recorded in the file's header. The whole folder is
capped at `max_bytes`: storing past the cap evicts the least recently used files first (a load
touches its file's mtime, which is the LRU clock).

File layout: 4-byte little-endian header length, JSON header
{"shape": [..., T, D], "dtype": "float32", "crc32": ..., "layer": ..., "index": ...}, then the
raw key bytes, then the raw value bytes.
"""

from __future__ import annotations

import json
import math
import os
import struct
import time
from pathlib import Path

import torch

from h3_runtime.home import under_home
from h3_runtime.kvcache.block import DTYPES, KVBlock
from h3_runtime.kvcache.checksum import IntegrityError, tensor_bytes, verify
from h3_runtime.kvcache.tiers import Tier

SUFFIX = ".kvb"


def cold_root(cold_storage_path: str | Path | None) -> Path:
    """The cold tier's folder: `runtime.cold_storage_path`, or `$H3_HOME/kv` when it is null."""
    return Path(cold_storage_path) if cold_storage_path else under_home("kv")


class KVBlockStore(Tier):
    medium = "cold"

    def __init__(self, root: str | Path, max_bytes: int):
        self.root = Path(root)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(f"cold_storage_path {self.root}: cannot create: {exc.strerror or exc}") from exc
        self.max_bytes = int(max_bytes)
        # key -> (size, last use); rebuilt from the folder so a restart sees earlier blocks
        self._index: dict[str, tuple[int, float]] = {}
        for path in self.root.glob(f"*/*{SUFFIX}"):
            st = path.stat()
            self._index[path.stem] = (st.st_size, st.st_mtime)
        self._usage = sum(size for size, _ in self._index.values())
        self.evictions = 0

    @property
    def capacity_bytes(self) -> int:
        return self.max_bytes

    @property
    def usage_bytes(self) -> int:
        return self._usage

    def __len__(self) -> int:
        return len(self._index)

    def path_for(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{SUFFIX}"

    def lookup(self, key: str) -> bool:
        return key in self._index

    def store(self, key: str, block: KVBlock, layer: int = -1, index: int = -1) -> None:
        """Writes the block once (a key already present is left as is: same key, same bytes).
        Atomic (temp file + rename); evicts LRU files to stay under the cap."""
        if key in self._index:
            return
        header = json.dumps({
            "shape": list(block.keys.shape), "dtype": str(block.keys.dtype).removeprefix("torch."),
            "crc32": block.checksum, "layer": layer, "index": index,
        }).encode()
        size = 4 + len(header) + block.nbytes
        if size > self.max_bytes:
            raise OSError(f"cold tier: a {size} B block exceeds cold_storage_max_gb ({self.max_bytes} B)")
        self._evict_until(self.max_bytes - size)
        path = self.path_for(key)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            f.write(struct.pack("<I", len(header)))
            f.write(header)
            f.write(tensor_bytes(block.keys))
            f.write(tensor_bytes(block.values))
        os.replace(tmp, path)
        self._index[key] = (size, time.time())
        self._usage += size

    def load(self, key: str) -> KVBlock:
        """Reads and verifies the block (IntegrityError on any flipped bit, KeyError if absent)."""
        if key not in self._index:
            raise KeyError(key)
        path = self.path_for(key)
        what = f"cold block {path.name}"
        try:
            with open(path, "rb", buffering=0) as f:
                size = os.fstat(f.fileno()).st_size
                head = f.read(4)
                hlen = struct.unpack("<I", head)[0] if len(head) == 4 else 0
                header = f.read(hlen)
                payload = bytearray(max(size - 4 - hlen, 0))  # the tensors are views of it
                got = f.readinto(payload)
        except FileNotFoundError:
            self._forget(key)
            raise KeyError(key) from None
        if len(head) != 4 or got != len(payload):
            raise IntegrityError(f"{what}: truncated file")
        return _decode(header, payload, what)

    def touch(self, key: str) -> None:
        if key in self._index:
            now = time.time()
            try:
                os.utime(self.path_for(key), (now, now))
            except FileNotFoundError:
                self._forget(key)
                return
            self._index[key] = (self._index[key][0], now)

    def drop(self, key: str) -> None:
        if key in self._index:
            self.path_for(key).unlink(missing_ok=True)
            self._forget(key)

    def _forget(self, key: str) -> None:
        size, _ = self._index.pop(key)
        self._usage -= size

    def set_cap(self, max_bytes: int) -> None:
        """Changes the size cap and evicts least-recently-used blocks until the folder fits it."""
        self.max_bytes = int(max_bytes)
        self._evict_until(self.max_bytes)

    def _evict_until(self, target_bytes: int) -> None:
        if self._usage <= target_bytes:
            return
        for key, _ in sorted(self._index.items(), key=lambda kv: kv[1][1]):
            if self._usage <= target_bytes:
                break
            self.drop(key)
            self.evictions += 1


def decode_block(data: bytes, what: str) -> KVBlock:
    """Parses a block file's bytes and verifies its checksum (IntegrityError names `what`)."""
    try:
        (hlen,) = struct.unpack_from("<I", data, 0)
    except struct.error as exc:
        raise IntegrityError(f"{what}: unreadable header ({exc})") from exc
    return _decode(data[4 : 4 + hlen], bytearray(memoryview(data)[4 + hlen :]), what)


def _decode(header_bytes: bytes, payload: bytearray, what: str) -> KVBlock:
    try:
        header = json.loads(header_bytes)
        shape, dtype, crc = header["shape"], DTYPES[header["dtype"]], int(header["crc32"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
        raise IntegrityError(f"{what}: unreadable header ({exc})") from exc
    nbytes = math.prod(shape) * dtype.itemsize
    if len(payload) != 2 * nbytes:
        raise IntegrityError(f"{what}: {len(payload)} payload bytes, expected {2 * nbytes}")
    flat = torch.frombuffer(payload, dtype=torch.uint8)
    keys = flat[:nbytes].view(dtype).reshape(shape)  # (H_kv, T, D) or (L, H_kv, T, D)
    values = flat[nbytes:].view(dtype).reshape(shape)
    verify(keys, values, crc, what)
    return KVBlock(keys, values, crc)
