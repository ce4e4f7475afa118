"""A block: a fixed number of consecutive tokens of one layer, keys and values of all KV heads.

Blocks are named two ways: `BlockId(layer, index)` inside one sequence, and a content key
(model fingerprint + chained hash of every token id up to the block's end + layer) for the
cold tier, so the same prefix under the same model maps to the same files across runs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import NamedTuple

import torch

# the dtypes KV is stored in, by the name files and configs use
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
_FP16_MAX = torch.finfo(torch.float16).max


def decode_kv_dtype(model_dtype: torch.dtype, setting: str) -> torch.dtype:
    """Decode's hot KV dtype for `runtime.decode_kv_dtype`: the named one where it is narrower
    than the model's (a bfloat16 model keeps bfloat16: float16 would save nothing and could
    overflow), else the model's. int8 is narrower than any model dtype (hot_codec.py: values
    with a scale per head and token)."""
    if setting == "int8":
        return torch.int8
    if setting == "model" or DTYPES[setting].itemsize >= model_dtype.itemsize:
        return model_dtype
    return DTYPES[setting]


def to_hot(x: torch.Tensor, dtype: torch.dtype, scratch: bool = False) -> torch.Tensor:
    """`x` in a hot buffer's dtype; float16 saturates at its largest finite value instead of
    turning a large key into inf (which would poison attention with NaN). `scratch`: x is a
    temporary the caller owns, clamped in place (one pass and one allocation fewer)."""
    if dtype == torch.float16 and x.dtype != dtype:
        x = x.clamp_(-_FP16_MAX, _FP16_MAX) if scratch else x.clamp(-_FP16_MAX, _FP16_MAX)
    return x.to(dtype)


class BlockId(NamedTuple):
    """A block of one sequence in the warm tier's index. A tuple: decode hashes ~80 of these
    per layer and re-selection, and a tuple hashes in C (a frozen dataclass's hash is Python)."""

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


def _chain_seed(model_fingerprint: str, block_tokens: int) -> bytes:
    return hashlib.sha256(f"h3-kv-v1|{model_fingerprint}|{block_tokens}".encode()).digest()


def _chain_step(h: bytes, block: list[int]) -> bytes:
    return hashlib.sha256(h + b"|" + ",".join(map(str, block)).encode()).digest()


def chain_hashes(model_fingerprint: str, token_ids: list[int], block_tokens: int,
                 partial_tail: bool = False) -> list[str]:
    """One hex key per complete block: h_b = sha256(h_{b-1} || tokens of block b); with
    `partial_tail`, one more for the tokens after the last complete block (a stored document's
    shorter last block).

    A block's key therefore depends on the whole prefix up to its end, which is exactly what
    its KV depends on in a causal model (same prefix, same model -> same KV)."""
    out: list[str] = []
    h = _chain_seed(model_fingerprint, block_tokens)
    end = len(token_ids) if partial_tail else len(token_ids) - block_tokens + 1
    for start in range(0, end, block_tokens):
        h = _chain_step(h, token_ids[start : start + block_tokens])
        out.append(h.hex())
    return out


class BlockKeys:
    """The cold-tier key of every block of one sequence, from the token ids seen so far: the
    content key (chained prefix hash + layer) of each complete block whose ids are known, a key
    private to this sequence otherwise. The chain is extended incrementally as ids arrive."""

    def __init__(self, model_fingerprint: str, block_tokens: int, session: str):
        self.block_tokens, self.session = block_tokens, session
        self.token_ids: list[int] = []  # ids seen so far (a sequence only grows)
        self._hashes: list[str] = []
        self._last = _chain_seed(model_fingerprint, block_tokens)

    def extend(self, token_ids: list[int]) -> None:
        self.token_ids.extend(int(t) for t in token_ids)

    def prefix_hashes(self) -> list[str]:
        """The chained hash of each complete block so far (same as `chain_hashes`)."""
        T = self.block_tokens
        for b in range(len(self._hashes), len(self.token_ids) // T):
            self._last = _chain_step(self._last, self.token_ids[b * T : (b + 1) * T])
            self._hashes.append(self._last.hex())
        return self._hashes

    def cold_key(self, layer: int, b: int) -> str:
        hashes = self.prefix_hashes()
        if b < len(hashes):
            return content_key(hashes[b], layer)
        return f"s{self.session}-L{layer:03d}-B{b}"


def content_key(prefix_hash: str, layer: int | None) -> str:
    """The cold-tier key of one layer's block whose prefix hash is `prefix_hash`; `layer=None`:
    the block of every layer (a stored document's)."""
    return f"{prefix_hash[:40]}-all" if layer is None else f"{prefix_hash[:40]}-L{layer:03d}"
