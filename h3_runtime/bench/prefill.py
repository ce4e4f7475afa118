"""`h3 bench --scenario prefill`: prefill time and memory at 8K tokens (--quick: 4K), full
attention vs H3's exact streaming prefill under small hot budgets, side by side in one run.

Each variant runs in its own process (spawned one after the other), so its peak RSS
(`ru_maxrss`) is its own: full attention (DynamicCache + sdpa), then H3 at 10% and 5% of the
full KV with the warm tier capped below the document's KV (`hbf_size_gb` = 25% of it: the
rest spills to the cold tier and is streamed back). Reported per variant: prefill seconds, the
ratio to full attention, peak RSS, resident KV bytes (hot + warm) against the full KV, cold
bytes, and for H3 where the prefill time went (cProfile, cumulative seconds of the main parts).
"""

from __future__ import annotations

import cProfile
import multiprocessing as mp
import pstats
import resource
import sys
import time
from pathlib import Path

import torch

GiB = 2**30
WARM_SHARE = 0.25  # hbf_size_gb as a share of the document's KV: most blocks must spill to cold
PARTS = {"streamed_exact_attention": "exact attention over earlier blocks (streamed)",
         "_forward_chunks": "whole prefill", "linear": "projections + MLP (torch linear)",
         "apply_rotary_pos_emb": "RoPE", "add_blocks": "blocks -> warm (summaries, checksums)",
         "fetch": "block fetches from warm / cold", "store": "cold writes"}


def _variant(name: str, frac: float, n: int, out_dir: str, queue) -> None:
    torch.set_num_threads(torch.get_num_threads())
    from transformers import DynamicCache

    from h3_runtime.engine import H3Engine
    from h3_runtime.evals.ruler_tasks import passkey

    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "prefill-kv")
    model, tok = base.model, base.tokenizer
    ids = passkey(tok, n, 0.5, seed=1).ids
    full_kv = len(ids) * base.bytes_per_token_layer * base.n_layers
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row: dict = {"tokens": len(ids), "full_kv_bytes": full_kv, "rss_before_bytes": rss0}
    with torch.inference_mode():
        if name == "full":
            model.set_attn_implementation("sdpa")
            cache = DynamicCache(config=model.config)
            t0 = time.perf_counter()
            model(torch.tensor([ids]), cache=cache, use_cache=True, logits_to_keep=1)
            row["prefill_s"] = time.perf_counter() - t0
            row["resident_kv_bytes"] = sum(lay.keys.nbytes + lay.values.nbytes for lay in cache.layers)
        else:
            engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=full_kv * frac / GiB,
                              hbf_size_gb=full_kv * WARM_SHARE / GiB,
                              cold_storage_path=Path(out_dir) / f"prefill-kv-{name}")
            prof = cProfile.Profile()
            prof.enable()
            engine.generate(ids, max_new_tokens=1)
            prof.disable()
            s = engine.stats()
            row["prefill_s"] = s["prefill_s"]
            row["hot_peak_bytes"], row["hot_budget_bytes"] = s["hot_peak_bytes"], s["hot_budget_bytes"]
            row["warm_bytes"], row["cold_bytes"] = s["warm_bytes"], s["cold_bytes"]
            row["resident_kv_bytes"] = s["hot_peak_bytes"] + s["warm_bytes"]
            row["block_tokens"] = engine.geometry.block_tokens
            stats = pstats.Stats(prof).stats  # {(file, line, func): (cc, nc, tt, ct, callers)}
            row["time_s_by_part"] = {
                label: round(sum(v[3] for k, v in stats.items() if k[2] == func
                                 and (func != "store" or "cold" in k[0])), 2)
                for func, label in PARTS.items()}
    row["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row["resident_kv_vs_full"] = round(row["resident_kv_bytes"] / full_kv, 3)
    queue.put(row)


def run_prefill(out_dir: Path, quick: bool) -> dict:
    n = 4096 if quick else 8192
    variants = (("full", 1.0), ("h3_10%", 0.10), ("h3_5%", 0.05))
    ctx = mp.get_context("spawn")
    rows: dict = {}
    for name, frac in variants:
        q = ctx.Queue()
        p = ctx.Process(target=_variant, args=(name, frac, n, str(out_dir), q))
        p.start()
        rows[name] = q.get()
        p.join()
        print(f"prefill {n}: {name} {rows[name]['prefill_s']:.1f} s, peak RSS "
              f"{rows[name]['peak_rss_bytes'] / 2**20:.0f} MiB", file=sys.stderr, flush=True)
    for name in rows:
        rows[name]["prefill_vs_full"] = round(rows[name]["prefill_s"] / rows["full"]["prefill_s"], 3)
    return {"model": "SmolLM2-135M-Instruct (fp32)", "tokens": n, "warm_share_of_kv": WARM_SHARE,
            "variants": rows}
