"""`ReuseRuntime`: answers questions over documents whose KV was prefilled once into the cold tier.

It owns the model, its prompt layout and a `DocumentKV`; `precompute` stores a document's KV,
`document_segments` / `evidence_segments` turn a whole document or recalled chunks into prompt
segments that point at stored KV, and `answer` builds the cache (loading what is stored) and
decodes greedily, timing the first token. `reuse=False` computes everything (the comparison).
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from h3_runtime.models import fingerprint
from h3_runtime.reuse.assemble import CachedSpan, Segment, build_cache, greedy_decode
from h3_runtime.reuse.cache_io import PlainCache, ReuseCache
from h3_runtime.reuse.doc_kv import DocKVIndex, DocumentKV, precompute_document
from h3_runtime.reuse.prompt import ChunkText, PromptLayout, text_digest
from h3_runtime.reuse.rope import rope_inv_freq

# The end of a statement: a sentence mark after a word or figure, then white space ("1.05" and
# "$1,577.0" are not ends: a digit follows their point), or a blank line.
_STATEMENT_END = re.compile(r"[^\s.][.!?][\"')\]]*\s|\S\s*\n\s*\n")
MIN_STATEMENT_WORDS = 3  # "1. " or "Item 7. " opening a list or a heading is not a statement


@dataclass(slots=True)
class Answer:
    text: str
    token_ids: list[int]
    stats: dict = field(default_factory=dict)


def statement_end(text: str) -> int | None:
    """Where `text`'s first statement ends (see ReuseRuntime._statement_ended), or None."""
    for m in _STATEMENT_END.finditer(text):
        if len(text[:m.end()].split()) >= MIN_STATEMENT_WORDS:
            return m.end()
    return None


def first_statement(text: str) -> str:
    """`text` up to the end of its first statement (all of it when it holds none)."""
    end = statement_end(text)
    return text if end is None else text[:end].strip()


class ReuseRuntime:
    """Document KV reuse around one loaded model. Not thread-safe (one question at a time)."""

    def __init__(self, model: torch.nn.Module, tokenizer, store: DocumentKV, *,
                 cache_factory: Callable[[], ReuseCache] | None = None,
                 cache_stats: Callable[[object], dict] | None = None,
                 recompute_tokens: int = 16, chunk_tokens: int = 512) -> None:
        self.model, self.tokenizer, self.store = model, tokenizer, store
        self.layout = PromptLayout(tokenizer)
        self.model_key = fingerprint(model)
        self.inv_freq = rope_inv_freq(model)
        self.cache_factory = cache_factory or functools.partial(PlainCache, chunk_tokens=chunk_tokens)
        self.cache_stats = cache_stats
        self.recompute_tokens = recompute_tokens
        self.chunk_tokens = chunk_tokens
        self.engine = None  # the H3Engine whose tiered caches cache_factory makes, if any
        cfg = model.config
        head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        itemsize = next(model.parameters()).element_size()
        self.bytes_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * itemsize
        eos = tokenizer.eos_token_id
        self.eos_ids = tuple(eos if isinstance(eos, list) else [eos]) if eos is not None else ()

    def _statement_ended(self, tokens: list[int]) -> bool:
        """Whether the text of `tokens` holds a whole statement: a sentence of at least
        MIN_STATEMENT_WORDS words ended by its mark and a space, or a paragraph ended by a
        blank line."""
        tail = self.tokenizer.decode(tokens[-2:], skip_special_tokens=True)
        if not any(c.isspace() for c in tail):
            return False  # cheap test first: an end is followed by white space just written
        return statement_end(self.tokenizer.decode(tokens, skip_special_tokens=True)) is not None

    def precompute(self, doc_id: str, chunks: Sequence[ChunkText], force: bool = False
                   ) -> tuple[DocKVIndex, bool]:
        """Stores the document's KV (head + chunks) unless already stored; (index, computed now)."""
        ids, spans, chunk_ids, digests = self.layout.document(chunks)
        return precompute_document(
            self.model, self.store, doc_id=doc_id, token_ids=ids, model_key=self.model_key,
            spans=spans, span_ids=chunk_ids, span_digests=digests,
            chunk_tokens=self.chunk_tokens, force=force)

    def max_document_tokens(self, reserve: int = 512) -> int:
        """The longest document prompt: the model's trained context minus room for a question
        and an answer."""
        return int(getattr(self.model.config, "max_position_embeddings", 8192)) - reserve

    def fit_chunks(self, chunks: Sequence[ChunkText], max_tokens: int | None = None
                   ) -> list[ChunkText]:
        """The longest run of leading chunks whose prompt layout fits `max_tokens` (default:
        `max_document_tokens()`)."""
        limit = self.max_document_tokens() if max_tokens is None else max_tokens
        total = len(self.layout.head_ids)
        kept = []
        for chunk in chunks:
            total += len(self.layout.chunk_ids(chunk))
            if total > limit:
                break
            kept.append(chunk)
        return kept

    def document_segments(self, doc_id: str, chunks: Sequence[ChunkText], question: str
                          ) -> list[Segment]:
        """The whole document then the question: the stored KV is an exact prefix."""
        ids, *_ = self.layout.document(chunks)
        meta = self.store.find(doc_id, self.model_key)
        usable = meta is not None and meta.tokens == len(ids)
        span = CachedSpan(meta.key, 0) if usable else None
        return [Segment(tuple(ids), span), Segment(self.layout.question_ids(question))]

    def evidence_segments(self, evidence: Sequence[tuple[str, ChunkText]], question: str
                          ) -> list[Segment]:
        """Head, then each recalled chunk (its stored slice when its document's KV holds it,
        re-positioned to where it lands), then the question."""
        # The head is the same in every stored document: taking it from the first evidence
        # document's KV makes that document's leading chunks an exact prefix.
        first = self.store.find(evidence[0][0], self.model_key) if evidence else None
        segments = [Segment(self.layout.head_ids, CachedSpan(first.key, 0) if first else None)]
        index: dict[str, dict[str, tuple[str, int, int]]] = {}
        for doc_id, chunk in evidence:
            if doc_id not in index:
                meta = self.store.find(doc_id, self.model_key)
                index[doc_id] = {} if meta is None else {
                    d: (meta.key, s, e) for d, (s, e) in zip(meta.span_digests, meta.spans,
                                                              strict=False)}
            ids = self.layout.chunk_ids(chunk)
            hit = index[doc_id].get(text_digest(chunk.page, chunk.text))
            usable = hit is not None and hit[2] - hit[1] == len(ids)
            segments.append(Segment(ids, CachedSpan(hit[0], hit[1]) if usable else None))
        segments.append(Segment(self.layout.question_ids(question)))
        return segments

    def answer(self, segments: Sequence[Segment], max_new_tokens: int = 64, reuse: bool = True,
               recompute_tokens: int | None = None, no_repeat_ngram: int = 0,
               query_vector: torch.Tensor | None = None, one_statement: bool = False
               ) -> Answer:
        """Builds the cache (loading stored spans when `reuse`), decodes greedily (never
        repeating a `no_repeat_ngram`-gram when > 0: see greedy_decode); stats hold
        ttft_s, total_s, prompt_tokens, prefill_tokens_computed, kv_tokens_loaded_cold, the
        hot-tier bytes and integrity_errors. `query_vector`: the question's embedding, for the
        corpus cache's relevance and similar-block prefetch (optional). `one_statement`: stop at
        the end of the first sentence or paragraph (an answer, not the essay a small model goes
        on to write: shorter to decode, and less for it to state without evidence)."""
        t0 = time.perf_counter()
        cache = self.cache_factory()
        corpus = self.store.cache  # stored KV across questions (kvcache/corpus.py), if any
        if corpus is not None:
            corpus.begin_question(query_vector)
        try:
            logits, built = build_cache(
                self.model, segments, cache, store=self.store, inv_freq=self.inv_freq,
                reuse=reuse, recompute_tokens=self.recompute_tokens if recompute_tokens is None
                else recompute_tokens)
        finally:  # between questions: the cache's policy promotes, demotes, prefetches
            tiers = corpus.end_question() if corpus is not None else {}
        first: list[float] = []
        tokens = greedy_decode(self.model, cache, logits, max_new_tokens, self.eos_ids,
                               on_first=lambda: first.append(time.perf_counter() - t0),
                               no_repeat_ngram=no_repeat_ngram,
                               stop=self._statement_ended if one_statement else None)
        total = time.perf_counter() - t0
        text = self.tokenizer.decode([t for t in tokens if t not in self.eos_ids],
                                     skip_special_tokens=True).strip()
        if one_statement:  # the end shows once the next word's token (" In") is written
            text = first_statement(text)
        full_kv = (built.prompt_tokens + len(tokens)) * self.bytes_per_token
        stats = {
            "ttft_s": round(first[0] if first else total, 4), "total_s": round(total, 4),
            "prompt_tokens": built.prompt_tokens,
            "prefill_tokens_computed": built.prefill_tokens_computed,
            "kv_tokens_loaded_cold": built.kv_tokens_loaded_cold,
            "kv_tokens_exact_prefix": built.exact_tokens,
            "hot_peak_bytes": full_kv, "hot_budget_bytes": 0, "full_kv_bytes": full_kv,
            "integrity_errors": built.integrity_errors,
            "cold_load_s": round(built.load_s, 4), "compute_s": round(built.compute_s, 4),
            "new_tokens": len(tokens),
        }
        if corpus is not None:
            stats["corpus_cache"] = {"policy": corpus.policy.name,
                                     "blocks_read": len(tiers.get("accessed", ())),
                                     "tiers": tiers.get("tiers", [])}
        if self.cache_stats is not None:  # a tiered cache reports its own hot-tier numbers
            stats.update(self.cache_stats(cache))
        if built.errors:
            stats["errors"] = built.errors
        return Answer(text, tokens, stats)
