"""AHAS: adaptive heat-aware scheduling of KV blocks across hot / warm / cold.

Hot slots are per KV head (Quest-style: each head of a layer attends to its own blocks), so every
score below is per (KV head, block). A block's heat combines an exponentially decayed access
frequency (decay `ahaz_alpha` per step) and its relevance to the current query (from the warm-tier
summaries):

    heat = (1 - w) * freq / max(freq) + w * relevance / max(relevance)      (w = relevance_weight)

Placement for one layer and one step (`place`), per KV head:
1. the top-k most relevant blocks are hot (attention needs them now);
2. then blocks with heat >= the hot threshold (`hbm_threshold`, raised to
   `pressure_hbm_threshold` when hot usage is above `pressure_watermark`), hottest first;
3. then, unless under memory pressure, blocks with heat >= `hbf_threshold`, hottest first,
   while slots remain; everything else hot is evicted to warm (its bytes are already there);
and per block (its bytes hold every head, so the warm/cold tier is the block's; its heat there is
its hottest head's):
4. blocks with heat < `cold_threshold` are demoted from warm to cold (the layer store carries
   this out once the warm tier is fuller than `warm_watermark`: with host memory to spare, a
   disk round trip would only cost time);
5. prefetch candidates (prefetch.py) fill free hot slots and are brought from cold to warm.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from h3_runtime.config import HbfConfig, SchedulerConfig
from h3_runtime.scheduler.prefetch import detect_pattern, prefetch_candidates


@dataclass(slots=True)
class Placement:
    hot: list[list[int]]  # per KV head: blocks in its hot slots after this step, priority order
    evict: list[list[int]]  # per KV head: resident hot blocks to drop (back to warm/cold)
    demote_cold: list[int]  # warm blocks to move to cold
    prefetch: list[int]  # blocks to bring closer (free hot slots, else cold -> warm)
    pattern: str | None
    hot_threshold: float
    top: int | None = None  # the block most relevant to any head (the access pattern's step)


@dataclass(slots=True)
class LayerHeat:
    """Per-layer scheduler state: (KV heads, blocks) arrays that grow with the sequence."""

    n_heads: int = 1
    freq: torch.Tensor = field(init=False)
    heat: torch.Tensor = field(init=False)
    last_top: int | None = None
    steps: int = 0

    def __post_init__(self) -> None:
        self.freq = torch.zeros(self.n_heads, 0, dtype=torch.float64)
        self.heat = torch.zeros(self.n_heads, 0, dtype=torch.float64)

    def grow(self, n: int) -> None:
        if n > self.freq.shape[1]:
            pad = torch.zeros(self.n_heads, n - self.freq.shape[1], dtype=torch.float64)
            self.freq = torch.cat([self.freq, pad], 1)
            self.heat = torch.cat([self.heat, pad.clone()], 1)


class AhasScheduler:
    def __init__(self, scheduler: SchedulerConfig, hbf: HbfConfig):
        self.cfg, self.hbf = scheduler, hbf

    def hot_threshold(self, pressure: float) -> float:
        """The hot threshold in force: raised under memory pressure (feedback)."""
        if pressure > self.cfg.pressure_watermark:
            return max(self.cfg.hbm_threshold, self.cfg.pressure_hbm_threshold)
        return self.cfg.hbm_threshold

    def compute_heat(self, state: LayerHeat, relevance: torch.Tensor) -> torch.Tensor:
        """heat (H, n) in [0, 1] for the n candidate blocks of each KV head (relevance (H, n),
        normalised per head); stores it in `state.heat`."""
        n = relevance.shape[1]
        state.grow(n)
        w = self.cfg.relevance_weight
        heat = (1.0 - w) * _per_head_share(state.freq[:, :n]) + w * _per_head_share(
            relevance.to(torch.float64))  # (H, n)
        state.heat[:, :n] = heat
        return heat

    def place(self, state: LayerHeat, relevance: torch.Tensor, resident: list[set[int]],
              n_slots: int, top_k: int, pressure: float, in_warm: torch.Tensor | None = None,
              summaries: torch.Tensor | Callable[[], torch.Tensor] | None = None,
              demotions: bool = True) -> Placement:
        """Decides this step's placement for one layer (pure decision: moves nothing).

        relevance: (H, n) >= 0, per KV head, for the n candidate blocks; resident: per head, the
        blocks in its hot slots; n_slots: hot slots per head; in_warm: (n,) bool, blocks in warm;
        summaries: (n, F) block vectors for the jumping-pattern prefetch (or what makes them: built
        only when a prefetch could move something); demotions: whether
        the caller acts on warm -> cold demotions this step (it does only while warm is above
        its watermark), so they are not computed for nothing. This runs once per layer per
        decoded token: work whose result cannot change the step is skipped."""
        H, n = relevance.shape
        heat = self.compute_heat(state, relevance)  # (H, n)
        thr = self.hot_threshold(pressure)
        if n == 0 or n_slots == 0:
            return Placement([[] for _ in range(H)], [sorted(r) for r in resident], [], [], None, thr)
        k = min(top_k, n_slots, n)
        must = torch.topk(relevance, k, dim=1).indices.tolist()  # (H, k) most relevant first
        hot = [self._fill(list(m), heat[h], n_slots, thr, pressure) for h, m in enumerate(must)]
        evict = [sorted(r - set(c)) for r, c in zip(resident, hot, strict=True)]
        chosen = {b for c in hot for b in c}
        demote: list[int] = []
        if demotions:  # a block's bytes serve every head: its heat is its hottest head's
            cold_mask = heat.amax(0) < self.cfg.cold_threshold  # (n,)
            if in_warm is not None:
                cold_mask &= in_warm[:n]
            cold_mask[torch.tensor(sorted(chosen), dtype=torch.long)] = False
            demote = torch.nonzero(cold_mask).flatten().tolist()
        top = int(relevance.amax(0).argmax())
        pattern = detect_pattern(state.last_top, top, self.hbf.prefetch_window)
        # a prefetch either fills a free hot slot or brings a block from cold to warm: with every
        # slot taken and every block in warm it would move nothing
        free = any(len(c) < n_slots for c in hot)
        useful = free or in_warm is None or not bool(in_warm[:n].all())
        prefetch: list[int] = []
        if useful:
            feats = summaries() if callable(summaries) else summaries
            feats = feats if feats is not None else torch.zeros(n, 1)
            prefetch = [b for b in prefetch_candidates(pattern, top, n, self.hbf.prefetch_window,
                                                       feats, self.hbf.prefetch_similarity)
                        if b not in chosen]
        if demote and prefetch:
            fetching = set(prefetch)
            demote = [b for b in demote if b not in fetching]
        return Placement(hot, evict, demote, prefetch, pattern, thr, top)

    def _fill(self, chosen: list[int], heat: torch.Tensor, n_slots: int, thr: float,
              pressure: float) -> list[int]:
        """One head's slots left after its top-k: its hottest blocks fill them (rules 2-3)."""
        if len(chosen) >= n_slots:
            return chosen
        seen = set(chosen)
        by_heat = torch.argsort(heat, descending=True).tolist()
        floors = (thr,) if pressure > self.cfg.pressure_watermark else (thr, self.cfg.hbf_threshold)
        for floor in floors:
            for b in by_heat:
                if len(chosen) >= n_slots or heat[b] < floor:
                    break
                if b not in seen:
                    chosen.append(b)
                    seen.add(b)
        return chosen

    def record_access(self, state: LayerHeat, accessed: list[list[int]]) -> None:
        """Decays every frequency by alpha and counts one access for each head's `accessed`."""
        heads = [h for h, a in enumerate(accessed) for _ in a]
        blocks = [b for a in accessed for b in a]
        pairs = torch.tensor([heads, blocks], dtype=torch.long)
        self.record_index(state, pairs[0], pairs[1])

    def record_index(self, state: LayerHeat, heads: torch.Tensor, blocks: torch.Tensor) -> None:
        """`record_access` given the accessed (head, block) pairs as two index tensors (each
        pair once; `LayerSlots.held` keeps them)."""
        state.freq.mul_(self.cfg.ahaz_alpha)
        if blocks.numel():
            state.grow(int(blocks.max()) + 1)
            state.freq[heads, blocks] += 1.0  # one per (head, block)
        state.steps += 1

    def finish_step(self, state: LayerHeat, top: int | None) -> None:
        state.last_top = top


def _per_head_share(x: torch.Tensor) -> torch.Tensor:
    """(H, n) >= 0 scaled so each head's largest value is 1 (a head of zeros stays 0)."""
    if not x.shape[1]:
        return x
    return x / x.amax(1, keepdim=True).clamp_min(1e-300)
