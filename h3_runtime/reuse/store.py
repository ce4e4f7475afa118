"""`DocKVStore`: the cold tier's store of precomputed document KV, addressed by content.

A document's KV is found under a key derived from everything it depends on: the token ids, the
model (`model_fingerprint`) and the block format (`FORMAT_VERSION`). Change any of them and the
key changes, so stale KV is never loaded. Writes are atomic (a temp folder renamed into place), the
total size stays under `max_bytes` by evicting least-recently-used documents, and everything is
found again after a process restart (the folder is the index; use time is meta.json's mtime).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

import torch

from h3_runtime.reuse.blocks import (
    FORMAT_VERSION,
    DocKVMeta,
    KVIntegrityError,
    read_group,
    write_group,
)


def model_fingerprint(model: torch.nn.Module) -> str:
    """16 hex chars identifying a model's architecture and weights (config + a sample of every
    parameter), cheap enough to compute at every start (~0.1 s for 135M parameters)."""
    h = hashlib.blake2b(digest_size=8)
    config = getattr(model, "config", None)
    if config is not None:
        h.update(config.to_json_string(use_diff=False).encode())
    for name, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        h.update(f"{name}:{tuple(p.shape)}:{p.dtype}".encode())
        h.update(flat[:64].float().cpu().numpy().tobytes())
        h.update(flat[-64:].float().cpu().numpy().tobytes())
    return h.hexdigest()


def doc_kv_key(token_ids: list[int], model_key: str) -> str:
    """Content key of a document's KV: token ids + model + block format."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"v{FORMAT_VERSION}:{model_key}:".encode())
    h.update(torch.tensor(token_ids, dtype=torch.int64).numpy().tobytes())
    return h.hexdigest()


class DocKVStore:
    """Document KV on disk under `root`, never more than `max_bytes` in total (after a put)."""

    def __init__(self, root: str | Path, max_bytes: int) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.max_bytes = int(max_bytes)

    def folder(self, key: str) -> Path:
        return self.root / key

    def meta(self, key: str) -> DocKVMeta | None:
        """The stored document's metadata, or None when it is not (or no longer) stored."""
        try:
            return DocKVMeta.load(self.folder(key))
        except (OSError, ValueError, TypeError):
            return None

    def put(self, meta: DocKVMeta, keys: torch.Tensor, values: torch.Tensor) -> DocKVMeta:
        """Stores `keys`, `values` `(L, H_kv, T, D)` under `meta.key` (replacing any old copy),
        then evicts least-recently-used documents until the store fits `max_bytes`."""
        if keys.shape != values.shape or keys.shape[2] != meta.tokens:
            raise ValueError(f"KV shape {tuple(keys.shape)} does not match {meta.tokens} tokens")
        if meta.nbytes > self.max_bytes:
            raise ValueError(
                f"document {meta.doc_id}: its KV ({meta.nbytes} B) exceeds the cold-tier cap "
                f"({self.max_bytes} B)"
            )
        tmp = self.root / f".tmp-{uuid.uuid4().hex}"
        tmp.mkdir()
        meta.crc32 = []
        for g in range(meta.groups):
            a, b = g * meta.group_tokens, min((g + 1) * meta.group_tokens, meta.tokens)
            meta.crc32.append(write_group(tmp, g, keys[:, :, a:b], values[:, :, a:b]))
        meta.save(tmp)
        final = self.folder(meta.key)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        self.evict_to(self.max_bytes, keep=meta.key)
        return meta

    def load(self, key: str, start: int = 0, end: int | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values `(L, H_kv, end - start, D)` of tokens [start, end), checksums verified.

        Raises KeyError when the document is not stored and KVIntegrityError when a group's bytes
        do not match their checksum; marks the document as just used (for eviction)."""
        folder = self.folder(key)
        meta = self.meta(key)
        if meta is None:
            raise KeyError(f"no cold KV stored under {key}")
        end = meta.tokens if end is None else end
        if not 0 <= start < end <= meta.tokens:
            raise ValueError(f"span [{start}, {end}) outside the {meta.tokens} stored tokens")
        g0, g1 = start // meta.group_tokens, (end - 1) // meta.group_tokens
        parts = [read_group(folder, meta, g) for g in range(g0, g1 + 1)]
        ks = torch.cat([k for k, _ in parts], dim=2) if len(parts) > 1 else parts[0][0]
        vs = torch.cat([v for _, v in parts], dim=2) if len(parts) > 1 else parts[0][1]
        off = g0 * meta.group_tokens
        now = time.time()
        os.utime(folder / "meta.json", (now, now))
        return ks[:, :, start - off:end - off], vs[:, :, start - off:end - off]

    def find(self, doc_id: str, model_key: str) -> DocKVMeta | None:
        """The most recently stored KV of `doc_id` for this model and block format, if any."""
        best: tuple[float, DocKVMeta] | None = None
        for mtime, _, key in self.entries():
            meta = self.meta(key)
            if (meta is not None and meta.doc_id == doc_id and meta.model_key == model_key
                    and meta.format_version == FORMAT_VERSION and (best is None or mtime >= best[0])):
                best = (mtime, meta)
        return best[1] if best else None

    def drop(self, key: str) -> None:
        """Removes a document's KV (e.g. after an integrity error, so it is rebuilt, not reused)."""
        shutil.rmtree(self.folder(key), ignore_errors=True)

    def entries(self) -> list[tuple[float, int, str]]:
        """(last use time, bytes, key) of every stored document, least recently used first."""
        out = []
        for folder in self.root.iterdir():
            if folder.name.startswith(".") or not (folder / "meta.json").exists():
                continue
            size = sum(f.stat().st_size for f in folder.iterdir())
            out.append(((folder / "meta.json").stat().st_mtime, size, folder.name))
        return sorted(out)

    def usage_bytes(self) -> int:
        return sum(size for _, size, _ in self.entries())

    def evict_to(self, max_bytes: int, keep: str | None = None) -> list[str]:
        """Drops least-recently-used documents until the total is <= max_bytes; returns their keys."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        evicted = []
        for _, size, key in entries:
            if total <= max_bytes:
                break
            if key == keep:
                continue
            self.drop(key)
            total -= size
            evicted.append(key)
        return evicted


__all__ = ["DocKVStore", "DocKVMeta", "KVIntegrityError", "doc_kv_key", "model_fingerprint"]
