"""`CorpusKVCache`: stored document KV blocks kept across questions in hot, warm and cold.

- cold: the KV block store on disk (kvcache/cold.py), where every stored block lives;
- warm: host memory, at most `runtime.hbf_size_gb`, blocks as stored;
- hot: copies of some warm blocks, at most `runtime.hbm_size_gb`, on the model's device (on a
  GPU a hot block is appended to a request's cache with no host-to-device copy; on a CPU hot
  and warm are the same memory and a hot hit saves only a dtype cast).
Hot is a subset of warm: dropping a block from warm drops its hot copy.

A question reads each block it needs through `get`, served from the fastest tier holding it (a
block read again in the same question comes from the request's own memory and is counted once).
Between questions (`end_question`) the policy (scheduler/corpus_policy.py: ahas, lru, lfu, none)
decides what stays warm, what is hot and what to prefetch from cold; the cache carries it out
within the budgets and counts hits, bytes read from disk and whether prefetches were used.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable
from dataclasses import asdict, dataclass

import torch

from h3_runtime.kvcache.block import KVBlock
from h3_runtime.kvcache.checksum import IntegrityError
from h3_runtime.scheduler.corpus_policy import CachePolicy, UnitInfo, unit_vector

GIB = 2**30

log = logging.getLogger("h3_runtime")


@dataclass(slots=True)
class CacheCounters:
    accesses: int = 0  # block reads a question asked for (each block once per question)
    hot_hits: int = 0
    warm_hits: int = 0  # served from warm (not hot)
    cold_reads: int = 0  # demand reads from disk
    cold_bytes_read: int = 0  # demand + prefetch bytes read from disk
    prefetch_bytes_read: int = 0
    prefetched: int = 0  # blocks brought to warm by a prefetch
    prefetch_used: int = 0  # ... and asked for by a later question before leaving memory
    promotions: int = 0  # warm -> hot moves
    promoted_bytes: int = 0
    questions: int = 0
    cold_read_s: float = 0.0
    # prefetches skipped because the block on disk failed its checksum (a demand read of it
    # raises to the caller, which recomputes the KV: reuse/assemble.py)
    prefetch_integrity_errors: int = 0

    def figures(self) -> dict:
        n = max(self.accesses, 1)
        memory = self.hot_hits + self.warm_hits
        prefetch_served = self.prefetch_used
        return {
            "accesses": self.accesses,
            # served from memory (hot or warm) instead of disk
            "warm_hit_rate": round(memory / n, 4),
            "hot_hit_rate": round(self.hot_hits / n, 4),
            "cold_bytes_read": self.cold_bytes_read,
            "prefetch_bytes_read": self.prefetch_bytes_read,
            "prefetched": self.prefetched,
            "prefetch_precision": round(self.prefetch_used / self.prefetched, 4)
            if self.prefetched else None,
            # of the reads that would have gone to disk without a prefetch, the share it served
            "prefetch_recall": round(prefetch_served / (prefetch_served + self.cold_reads), 4)
            if prefetch_served + self.cold_reads else None,
            "promotions": self.promotions,
            "promoted_bytes": self.promoted_bytes,
            # hot hits a hot copy earned: what a promotion (a host-to-device copy) bought
            "hot_hits_per_promotion": round(self.hot_hits / self.promotions, 4)
            if self.promotions else None,
            "prefetch_integrity_errors": self.prefetch_integrity_errors,
        }


class CorpusKVCache:
    """Hot / warm / cold placement of stored KV blocks across questions (module docstring).

    `cold`: anything with `load(key) -> KVBlock` (a `KVBlockStore`); `policy`: a `CachePolicy`;
    `serve_dtype` / `device`: what a served block is converted to (the model's)."""

    def __init__(self, cold, policy: CachePolicy, *, hot_bytes: int, warm_bytes: int,
                 serve_dtype: torch.dtype | None = None, device: str | torch.device = "cpu"
                 ) -> None:
        if hot_bytes < 0 or warm_bytes < 0:
            raise ValueError(f"corpus cache budgets must be >= 0 (hot {hot_bytes}, warm {warm_bytes})")
        self.cold, self.policy = cold, policy
        self.hot_budget, self.warm_budget = int(hot_bytes), int(warm_bytes)
        self.serve_dtype, self.device = serve_dtype, torch.device(device)
        self.hot: dict[str, KVBlock] = {}
        self.warm: dict[str, KVBlock] = {}
        self.size: dict[str, int] = {}
        self.counters = CacheCounters()
        self._question: dict[str, KVBlock] | None = None  # blocks the current question read
        self._order: list[str] = []  # ... in order
        self._tiers: list[str] = []  # ... and the tier each came from
        self._prefetched: set[str] = set()  # in memory by a prefetch, not yet asked for
        self._fresh: set[str] = set()  # prefetched after the last question
        self.last_pattern: str | None = None

    @classmethod
    def from_config(cls, cold, config, serve_dtype: torch.dtype | None = None,
                    device: str | torch.device = "cpu") -> CorpusKVCache:
        """The cache `h3_config.yaml` describes: `runtime.corpus_cache` names the policy,
        `runtime.hbm_size_gb` / `hbf_size_gb` are the hot / warm budgets."""
        from h3_runtime.scheduler.corpus_policy import make_policy

        rt = config.runtime
        policy = make_policy(rt.corpus_cache, config.scheduler, config.hbf)
        return cls(cold, policy, hot_bytes=int(rt.hbm_size_gb * GIB),
                   warm_bytes=int(rt.hbf_size_gb * GIB), serve_dtype=serve_dtype, device=device)

    # ---- what the callers tell it -----------------------------------------------------------
    def describe(self, key: Hashable, *, nbytes: int, group: str | None = None, order: int = 0,
                 vector: torch.Tensor | None = None) -> None:
        """Registers a block: its size, its document and place in it, optionally a vector
        (for relevance and similar-block prefetch). Prefetch only brings described blocks."""
        key = str(key)
        self.size[key] = int(nbytes)
        self.policy.describe(key, UnitInfo(int(nbytes), group, int(order),
                                           None if vector is None else unit_vector(vector)))

    def begin_question(self, vector: torch.Tensor | None = None) -> None:
        if self._question is not None:
            self.end_question()
        self._question, self._order, self._tiers = {}, [], []
        self.counters.questions += 1
        self.policy.on_question(vector)

    def get(self, key: Hashable) -> KVBlock:
        """The block, from the fastest tier holding it (KeyError / IntegrityError from cold)."""
        key = str(key)
        if self._question is None:  # a read outside a question: one of its own
            self.begin_question()
        if key in self._question:
            return self._question[key]
        c = self.counters
        c.accesses += 1
        if key in self._prefetched:
            self._prefetched.discard(key)
            c.prefetch_used += 1
        if key in self.hot:
            c.hot_hits += 1
            block, tier = self.hot[key], "hot"
        elif key in self.warm:
            c.warm_hits += 1
            block, tier = self._serve(self.warm[key]), "warm"
        else:
            tier = "cold"
            block = self._read_cold(key)
            c.cold_reads += 1
            c.cold_bytes_read += self.size[key]
            self._admit(key, block)
            block = self._serve(block)
        self.policy.on_access(key)
        self._question[key] = block
        self._order.append(key)
        self._tiers.append(tier)
        return block

    def knows(self, key: Hashable) -> bool:
        """Whether `describe` registered the block."""
        return str(key) in self.size

    def end_question(self) -> dict:
        """Applies the policy's moves; returns this question's reads by tier."""
        if self._question is None:
            return {}
        accessed, tiers = list(self._order), list(self._tiers)
        self._question, self._order, self._tiers = None, [], []
        held = list(self.warm)
        plan = self.policy.plan(held, accessed, self.hot.keys(), self.hot_fill())
        self.last_pattern = plan.pattern
        self._place_hot(plan.hot)
        self._fresh = set()
        for key in plan.prefetch:
            self._prefetch(key, plan.droppable)
        return {"accessed": accessed, "tiers": tiers, "pattern": plan.pattern}

    # ---- placement --------------------------------------------------------------------------
    def hot_fill(self) -> float:
        return self._used(self.hot) / self.hot_budget if self.hot_budget else 1.0

    def _used(self, tier: dict[str, KVBlock]) -> int:
        return sum(self.size[k] for k in tier)

    def _place_hot(self, wanted: list[str]) -> None:
        """Hot becomes the longest prefix-by-priority of `wanted` that fits (others to warm)."""
        keep, used = [], 0
        for key in wanted:
            if used + self.size[key] <= self.hot_budget:
                keep.append(key)
                used += self.size[key]
        keep_set = set(keep)
        for key in [k for k in self.hot if k not in keep_set]:  # its warm copy stays
            del self.hot[key]
        for key in keep:
            if key in self.warm and key not in self.hot:
                block = self.warm[key]
                self.hot[key] = self._serve(block)
                self.counters.promotions += 1
                self.counters.promoted_bytes += self.size[key]

    def _shrink_warm(self, need: int, only: set[str] | None = None) -> bool:
        """Drops the lowest-scored warm blocks (only those in `only` when given) until `need`
        more bytes fit; False (nothing dropped) when they cannot."""
        free = self.warm_budget - self._used(self.warm)
        if free >= need:
            return True
        # a block prefetched for the next question is not dropped to admit that question's reads
        pool = [k for k in self.warm if (only is None or k in only) and k not in self._fresh]
        pool.sort(key=self.policy.score)
        victims, gain = [], 0
        for key in pool:
            if free + gain >= need:
                break
            victims.append(key)
            gain += self.size[key]
        if free + gain < need:
            return False
        for key in victims:
            del self.warm[key]
            self.hot.pop(key, None)
            self._prefetched.discard(key)
        return True

    def _admit(self, key: str, block: KVBlock) -> None:
        """A block just read from cold stays warm if the policy keeps anything and it fits."""
        if not self.policy.keeps or self.size[key] > self.warm_budget:
            return
        if self._shrink_warm(self.size[key]):
            self.warm[key] = block

    def _prefetch(self, key: str, droppable: set[str]) -> None:
        if key in self.hot or key in self.warm or key not in self.size:
            return
        if not self._shrink_warm(self.size[key], only=droppable):
            return
        try:
            block = self._read_cold(key)
        except KeyError:
            return  # no longer stored: nothing to bring
        except IntegrityError as exc:  # a guess, not the question's read: skip it, say so
            self.counters.prefetch_integrity_errors += 1
            log.warning("corpus cache: prefetch of %s skipped: %s", key, exc)
            return
        self.warm[key] = block
        self._prefetched.add(key)
        self._fresh.add(key)
        self.counters.prefetched += 1
        self.counters.prefetch_bytes_read += self.size[key]
        self.counters.cold_bytes_read += self.size[key]

    def _read_cold(self, key: str) -> KVBlock:
        t0 = time.perf_counter()
        block = self.cold.load(key)
        self.counters.cold_read_s += time.perf_counter() - t0
        if key not in self.size:
            self.size[key] = int(block.keys.nbytes + block.values.nbytes)
        return block

    def _serve(self, block: KVBlock) -> KVBlock:
        """The block on the model's device in its dtype."""
        dtype = self.serve_dtype or block.keys.dtype
        if block.keys.dtype == dtype and block.keys.device == self.device:
            return block
        return KVBlock(block.keys.to(self.device, dtype), block.values.to(self.device, dtype),
                       block.checksum)

    def stats(self) -> dict:
        out = self.counters.figures()
        out.update(policy=self.policy.name, hot_bytes=self._used(self.hot),
                   warm_bytes=self._used(self.warm), hot_budget=self.hot_budget,
                   warm_budget=self.warm_budget)
        return out

    def counters_dict(self) -> dict:
        return asdict(self.counters)
