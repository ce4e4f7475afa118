"""Which stored KV blocks a corpus KV cache keeps in memory between questions: one interface
(`CachePolicy`), four policies: `ahas` (heat, thresholds, prefetch), `lru` (LMCache's default),
`lfu` and `none` (every block read from disk each question).

A policy ranks the blocks the cache holds (`score`: the lowest goes first when a block must make
room) and, between two questions, plans moves (`plan`): which blocks are hot (the budgeted pool
next to the model), which warm blocks may be dropped for a prefetch, which blocks to prefetch
from cold to warm. The cache (kvcache/corpus.py) carries the plan out within its budgets.

AHAS (the source design's rules, every number from `h3_config.yaml`):
    heat = (1 - w) * freq / max(freq) + w * relevance              (w: scheduler.relevance_weight)
- freq: accesses, every count decayed by `scheduler.ahaz_alpha` after each question;
- relevance: the block's vector's best cosine with the last `scheduler.relevance_window`
  questions' vectors, rescaled so the median block's is 0 (0 for a block without a vector);
- hot: the blocks the latest question read first, then the others by heat, as many as
  `runtime.hbm_size_gb` holds (the next question most often re-reads the last one's blocks:
  a heat bar, `scheduler.hbm_threshold`, left hot nearly empty, up to 50 points fewer hot hits
  than LRU in the trace bench; the in-request rules `hbf_threshold` and the memory-pressure
  bar are not used here either: neither changed a figure);
- cold: of the warm blocks the latest question did not read, the coolest
  `scheduler.corpus_replaceable_share` (by heat) may be dropped (their bytes are on disk) to make
  room for a prefetch; no other block is ever dropped for a guess;
- prefetch (`hbf.prefetch_window` blocks a question): a question whose first block follows the
  previous question's in the same document (sequential reading) brings the next blocks of that
  document; any other question (a jump) brings the blocks most similar to the blocks it read
  (best cosine with any of them above `hbf.corpus_prefetch_similarity`; similar to what was
  read, not to the question: a chunk's neighbours are chunks, while a question's embedding sits
  apart from the chunks that answer it). A jump to another topic (the question's cosine with
  the previous question's at or below that bar) brings `hbf.corpus_jump_prefetch_window`
  blocks: the next questions on a new topic read its neighbourhood, while a question on the
  same topic finds most of it already there. Like a read-ahead that grows on hits, a deep
  prefetch waits until a block of the last one has been read (or `scheduler.relevance_window`
  questions have passed): a stream where every question is a new topic (Zipf-popular
  filings) would otherwise read twice what no cache reads. A reader whose last question read
  forward in a document and who now jumps is likely starting another reading: no deep
  prefetch for them (it read more bytes than no cache on sequential readings).
Each rule can be switched off (`AhasPolicy(off=...)`) for the trace bench's ablation table.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch

from h3_runtime.config import HbfConfig, SchedulerConfig

POLICIES = ("ahas", "lru", "lfu", "none")
# the AHAS rules the trace bench switches off one at a time
RULES = ("frequency", "relevance", "latest_hot", "cold_demotion", "sequential_prefetch",
         "semantic_prefetch", "jump_depth")


@dataclass(slots=True)
class UnitInfo:
    """What a policy may know of a block: its size, its document and place in it, a vector."""

    nbytes: int
    group: str | None = None  # the document it belongs to
    order: int = 0  # its place in the document (reading order)
    vector: torch.Tensor | None = None  # unit-norm (F,), e.g. the chunk's embedding


@dataclass(slots=True)
class Plan:
    """Moves between two questions: `hot` in priority order (the cache keeps those that fit),
    `droppable` warm blocks a prefetch may replace, `prefetch` blocks to bring to warm, best first."""

    hot: list[str] = field(default_factory=list)
    droppable: set[str] = field(default_factory=set)
    prefetch: list[str] = field(default_factory=list)
    pattern: str | None = None


class CachePolicy:
    """LRU: the most recently used blocks stay (and the most recent are hot). The base of all."""

    name = "lru"
    keeps = True  # False: nothing is kept between questions (`none`)

    def __init__(self) -> None:
        self.units: dict[str, UnitInfo] = {}
        self.clock = 0  # questions seen
        self.last: dict[str, int] = {}
        self.count: dict[str, int] = {}

    def describe(self, key: str, info: UnitInfo) -> None:
        self.units[key] = info

    def on_question(self, vector: torch.Tensor | None) -> None:
        """A question starts (`vector`: its embedding, when the caller has one)."""
        self.clock += 1

    def on_access(self, key: str) -> None:
        """One access to `key` in the current question (counted once per question by the cache)."""
        self.last[key] = self.clock
        self.count[key] = self.count.get(key, 0) + 1

    def score(self, key: str) -> float:
        """Keep-worthiness of a held block: the lowest is dropped first."""
        return float(self.last.get(key, -1))

    def plan(self, held: Iterable[str], accessed: Sequence[str], hot: Iterable[str],
             hot_fill: float) -> Plan:
        """After a question: hot = the held blocks by score (the cache keeps what fits)."""
        return Plan(hot=sorted(held, key=self.score, reverse=True))


class LfuPolicy(CachePolicy):
    """LFU: the most often used blocks stay (ties: the most recent)."""

    name = "lfu"

    def score(self, key: str) -> float:
        return self.count.get(key, 0) + self.last.get(key, -1) / (self.clock + 1)


class NoCachePolicy(CachePolicy):
    """No cache: every question reads its blocks from cold (the blocks it reads twice are read
    once: they are in the request's own memory)."""

    name = "none"
    keeps = False

    def plan(self, held: Iterable[str], accessed: Sequence[str], hot: Iterable[str],
             hot_fill: float) -> Plan:
        return Plan()


class AhasPolicy(CachePolicy):
    """Adaptive heat-aware scheduling across questions (rules in the module docstring)."""

    name = "ahas"

    def __init__(self, scheduler: SchedulerConfig, hbf: HbfConfig,
                 off: Iterable[str] = ()) -> None:
        super().__init__()
        self.cfg, self.hbf = scheduler, hbf
        self.off = frozenset(off)
        unknown = self.off - set(RULES)
        if unknown:
            raise ValueError(f"unknown AHAS rule(s) {sorted(unknown)}; rules: {', '.join(RULES)}")
        self.freq: dict[str, float] = {}
        self.recent: deque[torch.Tensor] = deque(maxlen=max(scheduler.relevance_window, 1))
        self._rel: dict[str, float] = {}
        self._prev: tuple[str | None, int] | None = None  # previous question's first block's place
        self._query: torch.Tensor | None = None
        self._prev_query: torch.Tensor | None = None  # the question before this one's vector
        self._deep: set[str] = set()  # the blocks the last deep (topic change) prefetch brought
        self._deep_paid = True  # ... one of them has been read since: the next may go deep
        self._deep_at = 0  # ... at this question (`clock`)
        self._pattern: str | None = None  # the last question's access pattern
        self._matrix: tuple[list[str], torch.Tensor] | None = None

    def describe(self, key: str, info: UnitInfo) -> None:
        super().describe(key, info)
        self._matrix = None

    def on_question(self, vector: torch.Tensor | None) -> None:
        super().on_question(vector)
        self._prev_query = self._query
        self._query = None if vector is None else _unit(vector)
        if self._query is not None:
            self.recent.append(self._query)
        self._rel = {}

    def on_access(self, key: str) -> None:
        super().on_access(key)
        self.freq[key] = self.freq.get(key, 0.0) + 1.0
        if key in self._deep:
            self._deep_paid = True

    def relevance(self, key: str) -> float:
        """The block's best cosine with the recent questions, rescaled so that the median
        described block's is 0 and 1 stays 1 (unrelated chunks of one corpus still have cosines
        of 0.2-0.4: without the rescale no block would ever be below the cold threshold)."""
        if "relevance" in self.off or not self.recent:
            return 0.0
        if not self._rel:
            keys, mat = self._vectors()
            if keys:
                best = (mat @ torch.stack(list(self.recent)).T).amax(1)  # (n,)
                mid = float(best.median())
                scaled = ((best - mid) / max(1.0 - mid, 1e-6)).clamp(0.0, 1.0)
                self._rel = dict(zip(keys, scaled.tolist(), strict=True))
        return self._rel.get(key, 0.0)

    def heat(self, key: str) -> float:
        w = self.cfg.relevance_weight
        top = max(self.freq.values(), default=0.0)
        f = 0.0 if "frequency" in self.off or top <= 0 else self.freq.get(key, 0.0) / top
        if "frequency" in self.off:
            return self.relevance(key)
        if "relevance" in self.off:
            return f
        return (1.0 - w) * f + w * self.relevance(key)

    def score(self, key: str) -> float:
        return self.heat(key)

    def plan(self, held: Iterable[str], accessed: Sequence[str], hot: Iterable[str],
             hot_fill: float) -> Plan:
        held = list(held)
        heat = {k: self.heat(k) for k in held}
        cfg = self.cfg
        # hot: the latest question's blocks, then by heat (the cache keeps what fits)
        if "latest_hot" in self.off:
            order = sorted(held, key=heat.get, reverse=True)
        else:
            order = sorted(held, key=lambda k: (self.last.get(k, -1), heat[k]), reverse=True)
        # cold: the coolest share of the blocks this question did not read. A share, not a heat
        # bar: heat's scale moves with the stream (frequency is relative to the top block), and
        # a bar left a full warm tier with nothing a prefetch could replace
        if "cold_demotion" in self.off:
            droppable: set[str] = set()
        else:
            read = set(accessed)
            spare = sorted((k for k in held if k not in read), key=heat.get)
            droppable = set(spare[:int(len(spare) * cfg.corpus_replaceable_share)])
        pattern, prefetch = self._prefetch(held, accessed)
        self._pattern = pattern
        # decay after the plan: this question's accesses count fully once
        alpha = cfg.ahaz_alpha
        for k in self.freq:
            self.freq[k] *= alpha
        return Plan(hot=order, droppable=droppable, prefetch=prefetch, pattern=pattern)

    def _prefetch(self, held: list[str], accessed: Sequence[str]) -> tuple[str | None, list[str]]:
        """(pattern, blocks to prefetch) after a question that read `accessed`."""
        first = self.units.get(accessed[0]) if accessed else None
        if first is None or self.hbf.prefetch_window <= 0:
            return None, []
        prev, self._prev = self._prev, (first.group, first.order)
        have = set(held) | set(accessed)
        if (prev is not None and first.group is not None and prev[0] == first.group
                and first.order > prev[1]):  # forward in the document the last question read
            if "sequential_prefetch" in self.off:
                return "sequential", []
            return "sequential", self._next_in_document(first, accessed, have)
        if "semantic_prefetch" in self.off:
            return "jumping", []
        return "jumping", self._like_what_was_read(accessed, have)

    def _next_in_document(self, first: UnitInfo, accessed: Sequence[str],
                          have: set[str]) -> list[str]:
        """The `prefetch_window` blocks after the last one `accessed` read in `first`'s
        document, in reading order, less those in memory (`have`)."""
        window = self.hbf.prefetch_window
        last = max((self.units[k].order for k in accessed
                    if k in self.units and self.units[k].group == first.group),
                   default=first.order)
        nxt = sorted((info.order, k) for k, info in self.units.items()
                     if info.group == first.group and last < info.order <= last + window)
        return [k for _, k in nxt if k not in have][:window]

    def _like_what_was_read(self, accessed: Sequence[str], have: set[str]) -> list[str]:
        """The blocks most like the ones `accessed` read (best cosine above the bar), as many as
        `prefetch_window`, or `corpus_jump_prefetch_window` when the question goes deep."""
        keys, mat = self._vectors()
        read = [self.units[k].vector for k in accessed
                if k in self.units and self.units[k].vector is not None]
        if not keys or (not read and self._query is None):
            return []
        # each block's best cosine with the blocks this question read (the question's own
        # vector when none of them has one)
        sims = (mat @ torch.stack(read).T).amax(1) if read else mat @ self._query  # (n,)
        bar = self.hbf.corpus_prefetch_similarity
        deep = self._goes_deep(bar)
        window = self.hbf.corpus_jump_prefetch_window if deep else self.hbf.prefetch_window
        order = torch.argsort(sims, descending=True).tolist()
        picked = [keys[i] for i in order if float(sims[i]) > bar and keys[i] not in have]
        picked = picked[:window]
        if deep and picked:  # the next deep prefetch waits until one of these is read
            self._deep, self._deep_paid, self._deep_at = set(picked), False, self.clock
        return picked

    def _goes_deep(self, bar: float) -> bool:
        """Whether this jump prefetches `corpus_jump_prefetch_window` blocks: it changed topic,
        the last deep prefetch was read (or it was `relevance_window` questions ago: a stream's
        habits change, an unread guess does not block for good), and the question before did
        not read forward in a document (a reader who was reading in order and jumps is likely
        starting another reading, not a topic's questions)."""
        if "jump_depth" in self.off or self._pattern == "sequential":
            return False
        rearmed = self._deep_paid or self.clock - self._deep_at >= self.cfg.relevance_window
        return rearmed and self._new_topic(bar)

    def _new_topic(self, bar: float) -> bool:
        """Whether this question left the previous one's topic: its vector's cosine with the
        previous question's is at or below `bar` (or there is no previous question to compare)."""
        if self._query is None or self._prev_query is None:
            return True
        return float(self._query @ self._prev_query) <= bar

    def _vectors(self) -> tuple[list[str], torch.Tensor]:
        if self._matrix is None:
            keys = [k for k, u in self.units.items() if u.vector is not None]
            mat = (torch.stack([self.units[k].vector for k in keys]) if keys
                   else torch.zeros(0, 1))
            self._matrix = (keys, mat)
        return self._matrix


def _unit(v: torch.Tensor) -> torch.Tensor:
    v = v.detach().to(torch.float32).flatten()
    return v / v.norm().clamp_min(1e-12)


def make_policy(name: str, scheduler: SchedulerConfig | None = None,
                hbf: HbfConfig | None = None, off: Iterable[str] = ()) -> CachePolicy:
    """The policy named `name` (one of POLICIES); `off`: AHAS rules switched off."""
    if name == "ahas":
        return AhasPolicy(scheduler or SchedulerConfig(), hbf or HbfConfig(), off)
    if off:
        raise ValueError(f"policy {name}: only ahas has rules to switch off")
    kinds = {"lru": CachePolicy, "lfu": LfuPolicy, "none": NoCachePolicy}
    if name not in kinds:
        raise ValueError(f"unknown corpus cache policy {name!r}; choose from {', '.join(POLICIES)}")
    return kinds[name]()


def unit_vector(v: torch.Tensor) -> torch.Tensor:
    """`v` flattened, float32, scaled to unit norm (how UnitInfo.vector is kept)."""
    return _unit(v)
