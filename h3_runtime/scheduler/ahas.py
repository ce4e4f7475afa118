"""AHAS: adaptive heat-aware scheduling of KV blocks across hot / warm / cold.

Each block's heat combines an exponentially decayed access frequency (decay `ahaz_alpha` per
step) and its relevance to the current query (from the warm-tier summaries):

    heat = (1 - w) * freq / max(freq) + w * relevance / max(relevance)      (w = relevance_weight)

Placement for one layer and one step (`place`):
1. the top-k most relevant blocks are hot (attention needs them now);
2. then blocks with heat >= the hot threshold (`hbm_threshold`, raised to
   `pressure_hbm_threshold` when hot usage is above `pressure_watermark`), hottest first;
3. then, unless under memory pressure, blocks with heat >= `hbf_threshold`, hottest first,
   while slots remain; everything else hot is evicted to warm (its bytes are already there);
4. blocks with heat < `cold_threshold` are demoted from warm to cold (the layer store carries
   this out once the warm tier is fuller than `warm_watermark`: with host memory to spare, a
   disk round trip would only cost time);
5. prefetch candidates (prefetch.py) fill free hot slots and are brought from cold to warm.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from h3_runtime.config import HbfConfig, SchedulerConfig
from h3_runtime.scheduler.prefetch import detect_pattern, prefetch_candidates


@dataclass(slots=True)
class Placement:
    hot: list[int]  # blocks that must be in hot slots after this step, in priority order
    evict: list[int]  # resident hot blocks to drop (back to warm/cold)
    demote_cold: list[int]  # warm blocks to move to cold
    prefetch: list[int]  # blocks to bring closer (free hot slots, else cold -> warm)
    pattern: str | None
    hot_threshold: float


@dataclass(slots=True)
class LayerHeat:
    """Per-layer scheduler state; arrays are indexed by block and grow with the sequence."""

    freq: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.float64))
    heat: torch.Tensor = field(default_factory=lambda: torch.zeros(0, dtype=torch.float64))
    last_top: int | None = None
    steps: int = 0

    def grow(self, n: int) -> None:
        if n > self.freq.numel():
            pad = torch.zeros(n - self.freq.numel(), dtype=torch.float64)
            self.freq = torch.cat([self.freq, pad])
            self.heat = torch.cat([self.heat, pad.clone()])


class AhasScheduler:
    def __init__(self, scheduler: SchedulerConfig, hbf: HbfConfig):
        self.cfg, self.hbf = scheduler, hbf

    def hot_threshold(self, pressure: float) -> float:
        """The hot threshold in force: raised under memory pressure (feedback)."""
        if pressure > self.cfg.pressure_watermark:
            return max(self.cfg.hbm_threshold, self.cfg.pressure_hbm_threshold)
        return self.cfg.hbm_threshold

    def compute_heat(self, state: LayerHeat, relevance: torch.Tensor) -> torch.Tensor:
        """heat (n,) in [0, 1] for the n candidate blocks; stores it in `state.heat`."""
        n = relevance.numel()
        state.grow(n)
        freq = state.freq[:n]
        f = freq / freq.max() if n and freq.max() > 0 else torch.zeros_like(freq)
        rel = relevance.to(torch.float64)
        r = rel / rel.max() if n and rel.max() > 0 else torch.zeros_like(rel)
        w = self.cfg.relevance_weight
        heat = (1.0 - w) * f + w * r  # (n,)
        state.heat[:n] = heat
        return heat

    def place(self, state: LayerHeat, relevance: torch.Tensor, resident: set[int], n_slots: int,
              top_k: int, pressure: float, in_warm: torch.Tensor | None = None,
              summaries: torch.Tensor | None = None, demotions: bool = True) -> Placement:
        """Decides this step's placement for one layer (pure decision: moves nothing).

        relevance: (n,) >= 0 for the n candidate blocks; in_warm: (n,) bool, blocks in warm;
        summaries: (n, F) block vectors for the jumping-pattern prefetch; demotions: whether
        the caller acts on warm -> cold demotions this step (it does only while warm is above
        its watermark), so they are not computed for nothing. This runs once per layer per
        decoded token: work whose result cannot change the step is skipped."""
        n = relevance.numel()
        heat = self.compute_heat(state, relevance)
        thr = self.hot_threshold(pressure)
        if n == 0 or n_slots == 0:
            return Placement([], sorted(resident), [], [], None, thr)
        k = min(top_k, n_slots, n)
        must = torch.topk(relevance, k).indices.tolist()
        chosen: list[int] = list(must)
        seen = set(must)
        if len(chosen) < n_slots:  # slots left after the top-k: the hottest blocks fill them
            by_heat = torch.argsort(heat, descending=True).tolist()
            floors = (thr,) if pressure > self.cfg.pressure_watermark else (thr, self.cfg.hbf_threshold)
            for floor in floors:
                for b in by_heat:
                    if len(chosen) >= n_slots or heat[b] < floor:
                        break
                    if b not in seen:
                        chosen.append(b)
                        seen.add(b)
        evict = sorted(resident - seen)
        demote: list[int] = []
        if demotions:
            cold_mask = heat < self.cfg.cold_threshold  # (n,)
            if in_warm is not None:
                cold_mask &= in_warm[:n]
            cold_mask[torch.tensor(chosen, dtype=torch.long)] = False
            demote = torch.nonzero(cold_mask).flatten().tolist()
        top = must[0]
        pattern = detect_pattern(state.last_top, top, self.hbf.prefetch_window)
        # a prefetch either fills a free hot slot or brings a block from cold to warm: with every
        # slot taken and every block in warm it would move nothing
        useful = len(chosen) < n_slots or in_warm is None or not bool(in_warm[:n].all())
        prefetch: list[int] = []
        if useful:
            feats = summaries if summaries is not None else torch.zeros(n, 1)
            prefetch = [b for b in prefetch_candidates(pattern, top, n, self.hbf.prefetch_window,
                                                       feats, self.hbf.prefetch_similarity)
                        if b not in seen]
        if demote and prefetch:
            fetching = set(prefetch)
            demote = [b for b in demote if b not in fetching]
        return Placement(chosen, evict, demote, prefetch, pattern, thr)

    def record_access(self, state: LayerHeat, accessed: list[int]) -> None:
        """Decays every block's frequency by alpha and counts one access for `accessed`."""
        state.freq.mul_(self.cfg.ahaz_alpha)
        if accessed:
            state.grow(max(accessed) + 1)
            state.freq[torch.tensor(accessed, dtype=torch.long)] += 1.0
        state.steps += 1

    def finish_step(self, state: LayerHeat, top: int | None) -> None:
        state.last_top = top
