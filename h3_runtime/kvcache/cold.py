"""The cold tier: `KVBlockStore`, the one store of KV blocks on disk, under `cold_storage_path`.

One checksummed file per block, addressed by content key (block.content_key: the chained hash of
the token prefix up to the block's end + layer), so a later process finds the blocks an earlier
one wrote (reuse after a restart) and the same prefix is stored once. Two kinds of blocks share
it: one layer's block spilled by the tiered cache (`(H_kv, T, D)`, key `...-L007`) and a stored
document's block of every layer (`(L, H_kv, T, D)`, key `...-all`; reuse/doc_kv.py indexes them
per document). Every load verifies the crc32 recorded in the file. The whole folder is
capped at `max_bytes`: storing past the cap evicts the least recently used files first (a load
touches its file's mtime, which is the LRU clock).

File format: safetensors (`<key>.safetensors`), tensors "keys" and "values" (same dtype and
shape) and "crc32" (int64 [1], the block checksum over the key then value bytes), and no
metadata: every header byte is then checked by safetensors or by `decode_block`, so a flipped
bit anywhere in the file is an IntegrityError (the old header's unread "layer"/"index" were
not). Old `.kvb` files (a hand-written header + raw bytes) are
deleted when a store opens: a miss, so their KV is recomputed (the kv asset prefills it again)
rather than kept alive by a second reader.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from h3_runtime.home import under_home
from h3_runtime.kvcache.block import DTYPES, KVBlock
from h3_runtime.kvcache.checksum import IntegrityError, verify
from h3_runtime.kvcache.tiers import Tier

SUFFIX = ".safetensors"
LEGACY_SUFFIX = ".kvb"  # the format before safetensors: deleted on open, never read


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
        for path in self.root.glob(f"*/*{LEGACY_SUFFIX}"):
            path.unlink(missing_ok=True)
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
        data = encode_block(block)  # layer/index: the callers' names for it, not stored
        size = len(data)
        if size > self.max_bytes:
            raise OSError(f"cold tier: a {size} B block exceeds cold_storage_max_gb ({self.max_bytes} B)")
        self._evict_until(self.max_bytes - size)
        path = self.path_for(key)
        path.parent.mkdir(exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(data)
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
            data = path.read_bytes()
        except FileNotFoundError:
            self._forget(key)
            raise KeyError(key) from None
        return decode_block(data, what)

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


def encode_block(block: KVBlock) -> bytes:
    """A block file's bytes: safetensors with the block's tensors and checksum."""
    keys = block.keys.detach().to("cpu").contiguous()
    values = block.values.detach().to("cpu").contiguous()
    if values.untyped_storage().data_ptr() == keys.untyped_storage().data_ptr():
        values = values.clone()  # safetensors refuses tensors that may share memory
    return st_save({"keys": keys, "values": values,
                    "crc32": torch.tensor([block.checksum], dtype=torch.int64)})


def decode_block(data: bytes, what: str) -> KVBlock:
    """Parses a block file's bytes and verifies its checksum (IntegrityError names `what`)."""
    try:
        tensors = st_load(data)
    except (SafetensorError, ValueError, RuntimeError, KeyError, TypeError) as exc:  # header, sizes, truncation
        raise IntegrityError(f"{what}: unreadable file ({exc})") from exc
    keys, values, crc = tensors.get("keys"), tensors.get("values"), tensors.get("crc32")
    if (len(tensors) != 3 or keys is None or values is None or crc is None
            or keys.dtype not in DTYPES.values() or values.dtype != keys.dtype
            or values.shape != keys.shape or crc.dtype != torch.int64 or crc.shape != (1,)):
        raise IntegrityError(f"{what}: unexpected tensors "
                             f"{ {k: (str(t.dtype), tuple(t.shape)) for k, t in tensors.items()} }")
    expected = int(crc[0])
    verify(keys, values, expected, what)  # (H_kv, T, D) or (L, H_kv, T, D)
    return KVBlock(keys, values, expected)
