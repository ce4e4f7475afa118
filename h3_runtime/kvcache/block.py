"""A block: a fixed number of consecutive tokens of one layer, keys and values of all KV heads.

Blocks are named two ways: `BlockId(layer, index)` inside one sequence, and a content key
(model fingerprint + chained hash of every token id up to the block's end + layer) for the
cold tier, so the same prefix under the same model maps to the same files across runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch


@dataclass(frozen=True, slots=True)
class BlockId:
    layer: int
    index: int  # block b holds token positions [b * block_tokens, (b + 1) * block_tokens)


@dataclass(slots=True)
class KVBlock:
    keys: torch.Tensor  # (H_kv, T, D), RoPE already applied (HF caches rotated keys)
    values: torch.Tensor  # (H_kv, T, D)
    checksum: int

    @property
    def nbytes(self) -> int:
        return self.keys.nbytes + self.values.nbytes


def chain_hashes(model_fingerprint: str, token_ids: list[int], block_tokens: int) -> list[str]:
    """One hex key per complete block: h_b = sha256(h_{b-1} || tokens of block b).

    A block's key therefore depends on the whole prefix up to its end, which is exactly what
    its KV depends on in a causal model (same prefix, same model -> same KV)."""
    out: list[str] = []
    h = hashlib.sha256(f"h3-kv-v1|{model_fingerprint}|{block_tokens}".encode()).digest()
    for start in range(0, len(token_ids) - block_tokens + 1, block_tokens):
        chunk = token_ids[start : start + block_tokens]
        h = hashlib.sha256(h + b"|" + ",".join(map(str, chunk)).encode()).digest()
        out.append(h.hex())
    return out


def content_key(prefix_hash: str, layer: int) -> str:
    """The cold-tier key of one layer's block whose prefix hash is `prefix_hash`."""
    return f"{prefix_hash[:40]}-L{layer:03d}"
