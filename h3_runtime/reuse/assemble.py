"""Builds a prompt's KV cache from computed text and cold-tier spans, then generates greedily.

A prompt is a list of `Segment`s (token ids; a segment may say where its KV is stored). Walking
them in order, a cached segment is:
- *exact prefix reuse* when everything before it in the prompt is the same stored document's
  tokens [0, start): its KV is loaded as is and equals a full prefill's (same tokens, positions);
- *re-positioned reuse* otherwise: its first `recompute_tokens` tokens are recomputed with the real
  preceding context (CacheBlend-style selective recompute at the span boundary, where a reused
  span's KV deviates most), the rest is loaded and its keys are rotated to their new positions.
A span whose stored bytes fail their checksum is counted in `integrity_errors` and recomputed.
Decoding from the built cache is `h3_runtime.decode.greedy_decode` (re-exported here).
Only the `ReuseCache` methods and the model's forward are used, so either cache (`PlainCache`, full
attention, or the runtime's tiered `H3Cache`) can hold the result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from h3_runtime.decode import greedy_decode
from h3_runtime.kvcache.checksum import IntegrityError
from h3_runtime.reuse.cache_io import ReuseCache, forward_tokens
from h3_runtime.reuse.doc_kv import DocumentKV
from h3_runtime.reuse.rope import shift_keys


@dataclass(frozen=True, slots=True)
class CachedSpan:
    key: str  # the stored document's content key (DocKVIndex.key)
    start: int  # offset of the segment's first token in the stored document


@dataclass(frozen=True, slots=True)
class Segment:
    token_ids: tuple[int, ...]
    cached: CachedSpan | None = None


@dataclass(slots=True)
class BuildStats:
    prompt_tokens: int = 0
    prefill_tokens_computed: int = 0
    kv_tokens_loaded_cold: int = 0
    exact_tokens: int = 0  # loaded tokens that are an exact prefix (no re-positioning)
    integrity_errors: int = 0
    load_s: float = 0.0
    compute_s: float = 0.0
    errors: list[str] = field(default_factory=list)


@torch.no_grad()
def build_cache(model: torch.nn.Module, segments: Sequence[Segment], cache: ReuseCache, *,
                store: DocumentKV | None, inv_freq: torch.Tensor | None, reuse: bool = True,
                recompute_tokens: int = 16, min_reuse_tokens: int = 64
                ) -> tuple[torch.Tensor, BuildStats]:
    """Fills `cache` (empty on entry) with the whole prompt's KV; returns the last token's logits
    `(V,)` and what was computed vs loaded. With `reuse=False` everything is computed.

    A re-positioned span shorter than `min_reuse_tokens` (after its recomputed head) is computed
    instead: loading it would cost an extra forward call and save less than that call costs,
    which is how a cold hit could end up slower than recomputing."""
    stats = BuildStats()
    device = next(model.parameters()).device
    pending: list[int] = []
    last_logits: torch.Tensor | None = None
    prefix_key: str | None = None  # the prompt so far is exactly this document's tokens [0, pos)
    pos = 0
    # the tiered cache reserves its warm arenas for the whole prompt at once: grown as each
    # segment arrives, they were copied ~40 times a layer (1.3 s of a 9 s branch answer)
    cache.expect_tokens(sum(len(seg.token_ids) for seg in segments))

    def flush() -> None:
        nonlocal last_logits, pending
        if not pending:
            return
        t0 = time.perf_counter()
        last_logits = forward_tokens(model, cache, pending)
        stats.prefill_tokens_computed += len(pending)
        stats.compute_s += time.perf_counter() - t0
        pending = []

    for i, seg in enumerate(segments):
        ids = list(seg.token_ids)
        is_last = i == len(segments) - 1
        span = seg.cached if reuse and store is not None else None
        if span is None or len(ids) <= 1 and is_last:
            pending += ids
            prefix_key = None
            pos += len(ids)
            continue
        exact = span.start == pos and (pos == 0 or prefix_key == span.key) and not pending
        head = 0 if exact else min(recompute_tokens, len(ids))
        tail = 1 if is_last else 0  # the last token is always computed: its logits start decoding
        lo, hi = head, len(ids) - tail
        if lo < hi and (exact or hi - lo >= min_reuse_tokens):
            pending += ids[:lo]
            flush()
            t0 = time.perf_counter()
            try:
                keys, values = store.load(span.key, span.start + lo, span.start + hi)
            except (IntegrityError, KeyError) as exc:
                if isinstance(exc, IntegrityError):
                    stats.integrity_errors += 1
                    store.drop(span.key)  # never reuse it again; the KV asset rebuilds it
                stats.errors.append(str(exc))
                keys = None
            if keys is not None:
                delta = pos - span.start
                keys = keys.to(device) if delta == 0 else shift_keys(keys.to(device), delta, inv_freq)
                values = values.to(device)
                cache.append_kv(keys, values, ids[lo:hi])
                stats.kv_tokens_loaded_cold += hi - lo
                stats.exact_tokens += (hi - lo) if exact else 0
                stats.load_s += time.perf_counter() - t0
                pending += ids[hi:]
                prefix_key = span.key if exact and not tail else None
            else:
                pending += ids[lo:]
                prefix_key = None
        else:
            pending += ids
            prefix_key = None
        pos += len(ids)
    flush()
    stats.prompt_tokens = pos
    if last_logits is None:
        raise ValueError("empty prompt: nothing to generate from")
    return last_logits, stats


__all__ = ["BuildStats", "CachedSpan", "Segment", "build_cache", "greedy_decode"]
