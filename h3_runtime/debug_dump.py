"""A readable snapshot of the scheduler: blocks per tier, heat, thresholds in force,
migrations, prefetches, hit rates (what `h3 monitor --dump-scheduler-state` prints)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from h3_runtime.engine import H3Engine


def scheduler_state(engine: H3Engine) -> dict:
    cache = engine.cache
    pool = cache.pool if cache else None
    pressure = pool.pressure if pool else 0.0
    layers = []
    totals = {"hot": 0, "warm": 0, "cold": 0}
    if cache is not None:
        for i, layer in enumerate(cache.layers):
            store = layer.store
            if store is None:
                layers.append({"layer": i, "mode": "exact", "tokens": layer.get_seq_length()})
                continue
            n = store.n_blocks
            hot = sorted({b for head in store.slots for b in head.slot_of})  # any head's
            warm = int(store.in_warm[:n].sum())
            cold = n - warm
            totals["hot"] += len(hot)
            totals["warm"] += warm
            totals["cold"] += cold
            heat = store.heat.heat[:, :n].amax(0)  # (n,) a block's hottest head
            top = heat.argsort(descending=True)[:5].tolist() if n else []
            layers.append({
                "layer": i, "mode": "sparse", "tokens": store.n, "blocks": n,
                "hot_blocks": hot, "warm_blocks": warm, "cold_blocks": cold,
                "recent_window": [store.recent_start, store.n],
                "hottest": [{"block": b, "heat": round(float(heat[b]), 4)} for b in top],
                "access_pattern": store.last_pattern,
            })
    sched = engine.config.scheduler
    return {
        "thresholds": {
            "hbm_threshold": sched.hbm_threshold,
            "hot_threshold_in_force": engine.scheduler.hot_threshold(pressure),
            "hbf_threshold": sched.hbf_threshold,
            "cold_threshold": sched.cold_threshold,
            "pressure_watermark": sched.pressure_watermark,
            "ahaz_alpha": sched.ahaz_alpha,
            "relevance_weight": sched.relevance_weight,
        },
        "hot_pressure": round(pressure, 4),
        "geometry": dataclasses.asdict(engine.geometry),
        "blocks_per_tier": totals,  # every block is in warm or cold; hot ones keep that copy
        "layers": layers,
        "stats": engine.stats(),
    }
