"""Integrity and bandwidth checks of the tiers (behind `h3 corruption-test` / `bandwidth-test`)."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time

import torch

from h3_runtime.home import under_home
from h3_runtime.kvcache.block import KVBlock
from h3_runtime.kvcache.checksum import IntegrityError, block_checksum, verify
from h3_runtime.kvcache.cold import KVBlockStore, decode_block
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.tiers import HotSlots, WarmTier

SHAPE = (3, 64, 64)  # (H_kv, T, D) of the default model


def _block(rng: random.Random, dtype=torch.float32, shape=SHAPE) -> KVBlock:
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    k, v = torch.randn(shape, generator=g).to(dtype), torch.randn(shape, generator=g).to(dtype)
    return KVBlock(k, v, block_checksum(k, v))


def corruption_test(iterations: int, seed: int = 0) -> dict:
    """Flips one random bit per iteration in a block on one of three paths and counts how many
    the checksums catch: a cold file on disk, bytes read from cold in transit, a warm -> hot copy."""
    rng = random.Random(seed)
    root = tempfile.mkdtemp(prefix="corruption-", dir=under_home())
    cold = KVBlockStore(root, 2**34)
    paths = ("cold_file", "cold_read", "warm_to_hot")
    by_path = {p: {"injected": 0, "detected": 0} for p in paths}
    try:
        for i in range(iterations):
            path = paths[i % 3]
            dtype = rng.choice([torch.float32, torch.bfloat16, torch.float16])
            block = _block(rng, dtype)
            by_path[path]["injected"] += 1
            if by_path[path] and _inject(path, block, cold, rng, f"b{i}"):
                by_path[path]["detected"] += 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    injected = sum(p["injected"] for p in by_path.values())
    detected = sum(p["detected"] for p in by_path.values())
    return {"iterations": iterations, "injected": injected, "detected": detected,
            "missed": injected - detected, "by_path": by_path}


def _inject(path: str, block: KVBlock, cold: KVBlockStore, rng: random.Random, key: str) -> bool:
    """True when the flipped bit was detected (IntegrityError)."""
    if path in ("cold_file", "cold_read"):
        cold.store(key, block)
        file = cold.path_for(key)
        data = bytearray(file.read_bytes())
        pos = rng.randrange(4, len(data))
        data[pos] ^= 1 << rng.randrange(8)
        try:
            if path == "cold_file":
                file.write_bytes(bytes(data))
                cold.load(key)
            else:
                decode_block(bytes(data), what=key)
        except IntegrityError:
            return True
        finally:
            cold.drop(key)
        return False
    warm = WarmTier(2**30)
    warm.store(key, block)
    src = warm.load(key)
    moved_k = src.keys.clone()  # the bytes as they arrive in hot
    raw = moved_k.view(-1).view(torch.uint8)
    raw[rng.randrange(raw.numel())] ^= 1 << rng.randrange(8)
    try:
        verify(moved_k, src.values, src.checksum, key)
    except IntegrityError:
        return True
    return False


def bandwidth_test(size_bytes: int, tier: str, block_tokens: int = 64) -> dict:
    """Moves `size_bytes` of KV blocks from `tier` into hot slots; cold reads come from files
    written first and then dropped from the OS page cache where the OS allows it."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    shape = (SHAPE[0], block_tokens, SHAPE[2])
    rng = random.Random(0)
    proto = _block(rng, shape=shape)
    n_blocks = max(1, size_bytes // proto.nbytes)
    slots = min(n_blocks, 256)
    k = torch.zeros(shape[0], slots * block_tokens, shape[2], device=device)
    hot = HotSlots(k, torch.zeros_like(k), torch.zeros(slots * block_tokens, device=device),
                   block_tokens, HotPool(2**62))
    root = tempfile.mkdtemp(prefix="bandwidth-", dir=under_home())
    try:
        sources = _sources(tier, proto, n_blocks, device, root)
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(n_blocks):
            block = sources(i)
            hot.drop(i - slots)
            hot.store(i, block)
        if device.type == "cuda":
            torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(root, ignore_errors=True)
    moved = n_blocks * proto.nbytes
    return {"tier": tier, "bytes": moved, "blocks": n_blocks, "block_bytes": proto.nbytes,
            "seconds": round(seconds, 6), "gb_per_s": round(moved / seconds / 1e9, 3),
            "device": str(device)}


def _sources(tier: str, proto: KVBlock, n: int, device: torch.device, root: str):
    if tier == "hot":
        k, v = proto.keys.to(device), proto.values.to(device)
        return lambda i: KVBlock(k, v, proto.checksum)
    if tier == "warm":
        warm = WarmTier(2**62, pin=device.type == "cuda")
        for i in range(min(n, 64)):  # a ring of host blocks, reused (host memory is the source)
            warm.store(i, proto)
        return lambda i: warm.load(i % min(n, 64))
    cold = KVBlockStore(root, 2**62)
    for i in range(n):
        cold.store(f"b{i}", proto)
        with open(cold.path_for(f"b{i}"), "rb") as f:
            os.fsync(f.fileno()) if hasattr(os, "fsync") else None
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    return lambda i: cold.load(f"b{i}")
