"""Document KV: a document prefilled once, its KV kept as blocks in the KV block store
(kvcache/cold.py) and indexed per document.

A document's tokens are cut into blocks of `block_tokens` (256 by default; the last may be
shorter); each block holds every layer's keys and values `(L, H_kv, T, D)` and is stored under the
chained hash of the token prefix up to its end (kvcache/block.py: model fingerprint + every token id so far), so the
same prefix is stored once and a changed document or another model never loads stale KV. A
document's index (`DocKVIndex`, one small JSON file under `<cold tier>/docs/`) maps it to its
block keys and its chunks' token spans; a span is loaded by reading the blocks that cover it.
One cap (`cold_storage_max_gb`) covers every block, the ones the tiered cache spills included:
the least recently used go first, and a document missing a block is simply not found (the `kv`
asset or `h3 ask --doc` prefills it again). Folders written by the first format (one folder per
document with `meta.json` and `g0000.kv` groups) are found by `legacy_documents`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from transformers import DynamicCache

from h3_runtime.kvcache.block import DTYPES, KVBlock, chain_hashes, content_key
from h3_runtime.kvcache.checksum import block_checksum
from h3_runtime.kvcache.cold import KVBlockStore
from h3_runtime.kvcache.corpus import CorpusKVCache

FORMAT_VERSION = 2  # 1: per-document folders of 256-token groups (reuse/blocks.py, removed)
# Tokens per stored document block: a whole-document load concatenates its blocks, and 64-token
# blocks made that 2-2.5x slower than 256-token ones (the first format's group size) for a 4K doc.
DOC_BLOCK_TOKENS = 256


@dataclass(slots=True)
class DocKVIndex:
    key: str  # the chained hash of all the document's tokens: its content key
    doc_id: str
    model_key: str  # models.fingerprint of the model that computed it
    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    tokens: int
    block_tokens: int
    blocks: list[str] = field(default_factory=list)  # chained prefix hash of each block
    crc32: list[int] = field(default_factory=list)  # checksum of each block as written
    spans: list[list[int]] = field(default_factory=list)  # [start, end) token range of each chunk
    span_ids: list[str] = field(default_factory=list)  # chunk id of each span
    span_digests: list[str] = field(default_factory=list)  # prompt.text_digest of each chunk
    format_version: int = FORMAT_VERSION
    seconds: float = 0.0  # prefill time that produced it

    @property
    def bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * DTYPES[self.dtype].itemsize

    @property
    def nbytes(self) -> int:
        return self.tokens * self.bytes_per_token

    def block_span(self, b: int) -> tuple[int, int]:
        """[start, end) tokens of block b."""
        return b * self.block_tokens, min((b + 1) * self.block_tokens, self.tokens)

    def block_keys(self) -> list[str]:
        return [content_key(h, None) for h in self.blocks]


def block_vector(index: DocKVIndex, start: int, end: int,
                 vectors: Mapping[str, Sequence[float]]) -> torch.Tensor | None:
    """The mean vector of the chunks whose token spans overlap [start, end), or None when
    none of them has one."""
    found = [vectors[cid] for (s, e), cid in zip(index.spans, index.span_ids, strict=False)
             if s < end and e > start and cid in vectors]
    if not found:
        return None
    return torch.tensor(found, dtype=torch.float32).mean(dim=0)


def document_hashes(model_key: str, token_ids: Sequence[int], block_tokens: int) -> list[str]:
    """The chained prefix hash of each block of a document, the shorter last one included."""
    return chain_hashes(model_key, list(token_ids), block_tokens, partial_tail=True)


class DocumentKV:
    """Stored document KV: per-document indexes over the blocks of one `KVBlockStore`."""

    def __init__(self, blocks: KVBlockStore, root: str | Path,
                 block_tokens: int = DOC_BLOCK_TOKENS, cache: CorpusKVCache | None = None) -> None:
        self.blocks, self.block_tokens = blocks, int(block_tokens)
        # blocks are read through the corpus cache (hot / warm / cold across questions) when set
        self.cache = cache
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._by_key: dict[str, DocKVIndex] = {}
        # an index -> {chunk id: its embedding} of its spans' chunks, when the caller has them
        # (the resource reads the document store's chunk vectors): a block's vector is the mean
        # of its chunks', which lets the corpus cache's relevance rule compare blocks with the
        # questions asked
        self.span_vectors: Callable[[DocKVIndex], Mapping[str, Sequence[float]]] | None = None

    def index_path(self, doc_id: str, model_key: str) -> Path:
        name = hashlib.blake2b(doc_id.encode(), digest_size=8).hexdigest()
        return self.root / f"{name}-{model_key}.json"

    def _read(self, path: Path) -> DocKVIndex | None:
        try:
            data = json.loads(path.read_text())
            index = DocKVIndex(**data)
        except (OSError, ValueError, TypeError):
            return None
        return index if index.format_version == FORMAT_VERSION else None

    def find(self, doc_id: str, model_key: str) -> DocKVIndex | None:
        """The stored KV of `doc_id` for this model, if every one of its blocks is still stored."""
        index = self._read(self.index_path(doc_id, model_key))
        if index is None or not all(self.blocks.lookup(k) for k in index.block_keys()):
            return None
        self._remember(index)
        return index

    def _remember(self, index: DocKVIndex) -> None:
        """Indexes it by key and tells the corpus cache its blocks (document, order, size)."""
        if self.cache is not None and index.key not in self._by_key:
            vectors = self.span_vectors(index) if self.span_vectors is not None else {}
            for b, name in enumerate(index.block_keys()):
                if self.cache.knows(name):  # the caller described it (e.g. with a vector)
                    continue
                start, end = index.block_span(b)
                self.cache.describe(name, nbytes=(end - start) * index.bytes_per_token,
                                    group=index.doc_id, order=b,
                                    vector=block_vector(index, start, end, vectors))
        self._by_key[index.key] = index

    def put(self, doc_id: str, model_key: str, token_ids: Sequence[int], keys: torch.Tensor,
            values: torch.Tensor, *, spans: Sequence[tuple[int, int]] = (),
            span_ids: Sequence[str] = (), span_digests: Sequence[str] = (),
            seconds: float = 0.0) -> DocKVIndex:
        """Stores `keys`, `values` `(L, H_kv, T, D)` of `token_ids` as blocks (a block already
        stored under the same prefix hash is kept) and writes the document's index."""
        L, H, T, D = keys.shape  # noqa: N806
        if values.shape != keys.shape or T != len(token_ids):
            raise ValueError(f"KV shape {tuple(keys.shape)} does not match {len(token_ids)} tokens")
        hashes = document_hashes(model_key, token_ids, self.block_tokens)
        index = DocKVIndex(
            key=hashes[-1] if hashes else "", doc_id=doc_id, model_key=model_key, layers=L,
            kv_heads=H, head_dim=D, dtype=str(keys.dtype).removeprefix("torch."), tokens=T,
            block_tokens=self.block_tokens, blocks=hashes, spans=[list(s) for s in spans],
            span_ids=list(span_ids), span_digests=list(span_digests), seconds=round(seconds, 3))
        if index.nbytes > self.blocks.max_bytes:
            raise ValueError(f"document {doc_id}: its KV ({index.nbytes} B) exceeds the cold-tier "
                             f"cap ({self.blocks.max_bytes} B)")
        for b, key in enumerate(index.block_keys()):
            a, e = index.block_span(b)
            k = keys[:, :, a:e].contiguous()  # (L, H_kv, T_b, D)
            v = values[:, :, a:e].contiguous()
            block = KVBlock(k, v, block_checksum(k, v))
            self.blocks.store(key, block, -1, b)
            index.crc32.append(block.checksum)
        path = self.index_path(doc_id, model_key)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(asdict(index)))
        os.replace(tmp, path)
        self._remember(index)
        return index

    def load(self, key: str, start: int = 0, end: int | None = None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values `(L, H_kv, end - start, D)` of tokens [start, end) of the document
        stored under `key` (found by `find` or `put` first), every block verified.

        Raises KeyError when the document or one of its blocks is not stored and IntegrityError
        when a block's bytes do not match their checksum; marks the blocks as just used."""
        index = self._by_key.get(key)
        if index is None:
            raise KeyError(f"no cold KV stored under {key}")
        end = index.tokens if end is None else end
        if not 0 <= start < end <= index.tokens:
            raise ValueError(f"span [{start}, {end}) outside the {index.tokens} stored tokens")
        T = index.block_tokens
        b0, b1 = start // T, (end - 1) // T
        names = index.block_keys()
        read = self.blocks.load if self.cache is None else self.cache.get
        parts = [read(names[b]) for b in range(b0, b1 + 1)]
        for b in range(b0, b1 + 1):
            self.blocks.touch(names[b])
        ks = torch.cat([p.keys for p in parts], dim=2) if len(parts) > 1 else parts[0].keys
        vs = torch.cat([p.values for p in parts], dim=2) if len(parts) > 1 else parts[0].values
        off = b0 * T
        return ks[:, :, start - off:end - off], vs[:, :, start - off:end - off]

    def drop(self, key: str) -> None:
        """Forgets a document's KV (e.g. after an integrity error, so it is rebuilt, not reused):
        its index and its blocks."""
        index = self._by_key.pop(key, None)
        if index is None:
            return
        self.index_path(index.doc_id, index.model_key).unlink(missing_ok=True)
        for name in index.block_keys():
            self.blocks.drop(name)

    def indexes(self) -> list[DocKVIndex]:
        """Every stored document's index (whatever its model)."""
        found = (self._read(p) for p in sorted(self.root.glob("*.json")))
        return [i for i in found if i is not None]

    def drop_document(self, doc_id: str) -> list[str]:
        """Removes every stored KV of `doc_id` (any model) and its blocks that no other document
        uses; returns the removed documents' keys."""
        mine = [i for i in self.indexes() if i.doc_id == doc_id]
        if not mine:
            return []
        shared = {k for i in self.indexes() if i.doc_id != doc_id for k in i.block_keys()}
        for index in mine:
            self.index_path(index.doc_id, index.model_key).unlink(missing_ok=True)
            self._by_key.pop(index.key, None)
            for name in index.block_keys():
                if name not in shared:
                    self.blocks.drop(name)
        return sorted(i.key for i in mine)

    def usage_bytes(self) -> int:
        """Bytes of the whole cold tier (document blocks and the tiered cache's spilled ones)."""
        return self.blocks.usage_bytes

    def legacy_documents(self) -> list[Path]:
        """Folders written by the first format (one per document: meta.json + g*.kv groups)."""
        return sorted(p for p in self.root.iterdir() if p.is_dir() and (p / "meta.json").exists())

    def drop_legacy(self) -> int:
        """Removes the first format's folders (their documents are prefilled again); returns how
        many there were."""
        old = self.legacy_documents()
        for folder in old:
            shutil.rmtree(folder, ignore_errors=True)
        return len(old)


@torch.no_grad()
def prefill_kv(model: torch.nn.Module, token_ids: Sequence[int], chunk_tokens: int = 512
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's keys and values `(L, H_kv, T, D)` for `token_ids` at positions 0..T-1, computed
    in chunks of `chunk_tokens` (same result as one pass, bounded activation memory)."""
    device = next(model.parameters()).device
    cache = DynamicCache()
    for a in range(0, len(token_ids), chunk_tokens):
        ids = torch.tensor([list(token_ids[a:a + chunk_tokens])], device=device)  # (1, T_c)
        model(input_ids=ids, cache=cache, use_cache=True, logits_to_keep=1)
    keys = torch.stack([layer.keys[0] for layer in cache.layers])  # (L, H_kv, T, D)
    values = torch.stack([layer.values[0] for layer in cache.layers])  # (L, H_kv, T, D)
    return keys.cpu(), values.cpu()


def precompute_document(model: torch.nn.Module, store: DocumentKV, *, doc_id: str,
                        token_ids: Sequence[int], model_key: str,
                        spans: Sequence[tuple[int, int]] = (), span_ids: Sequence[str] = (),
                        span_digests: Sequence[str] = (), chunk_tokens: int = 512,
                        force: bool = False) -> tuple[DocKVIndex, bool]:
    """Stores the document's KV unless the same tokens are already stored for it (and `force` is
    off); returns its index and whether it was computed now. `spans` are the [start, end) token
    ranges of its chunks, kept so that recalled chunks can be loaded as slices later."""
    if not token_ids:
        raise ValueError(f"document {doc_id}: no tokens to prefill")
    existing = store.find(doc_id, model_key)
    key = document_hashes(model_key, token_ids, store.block_tokens)[-1]
    if existing is not None and existing.key == key and not force:
        return existing, False
    t0 = time.perf_counter()
    keys, values = prefill_kv(model, token_ids, chunk_tokens)
    index = store.put(doc_id, model_key, token_ids, keys, values, spans=spans, span_ids=span_ids,
                      span_digests=span_digests, seconds=time.perf_counter() - t0)
    return index, True
