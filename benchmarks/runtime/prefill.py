"""`h3 bench --scenario prefill`: prefill time and memory at 8K tokens (--quick: 4K), full
attention vs H3's exact streaming prefill under small hot budgets, side by side in one run.

Each variant runs in its own process (spawned one after the other), so its peak RSS
(`ru_maxrss`) is its own: full attention (DynamicCache + sdpa); H3 at 10% and 5% of the full KV
with the shipped warm tier (`hbf_size_gb`: 2 GiB, the whole KV fits: the prefill-time target);
H3 at 10% with the warm tier capped at 6% of the document's KV ("spill": the other blocks go
to the cold tier and are streamed back, so resident KV, hot + warm blocks + the blocks'
summaries, is at most 20% of full);
then the same pair at 64K tokens with a tiny random Llama (mechanics only: its KV is too small
to move the RSS much, the resident KV bytes are the figure). Reported per variant: prefill
seconds, the ratio to full attention of the same model and length, peak RSS, resident KV bytes
(hot peak + warm) against the full KV, cold bytes, and for H3 where the prefill time went
(cProfile, cumulative seconds of the main parts).
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
# the spill variant's warm tier, as a share of the document's KV: hot (10%) + warm blocks (6%) +
# the block summaries in warm (1/(2T): 3.1% at 16-token blocks) stay within 20% of the KV
SPILL_WARM_SHARE = 0.06
TINY_TOKENS = 65536
PARTS = {"streamed_exact_attention": "exact attention over earlier blocks (streamed)",
         "_forward_chunks": "whole prefill", "linear": "projections + MLP (torch linear)",
         "apply_rotary_pos_emb": "RoPE", "add_blocks": "blocks -> warm (summaries, checksums)",
         "fetch_group": "block fetches from warm / cold", "store": "cold writes"}


def _variant(name: str, frac: float, warm_share: float | None, n: int, out_dir: str,
             queue) -> None:
    torch.set_num_threads(torch.get_num_threads())
    from transformers import DynamicCache

    from benchmarks.evals.ruler_tasks import passkey
    from benchmarks.runtime.needle import tiny_mechanics_model
    from h3_runtime.engine import H3Engine

    tiny = name.startswith("tiny")
    if tiny:
        base = H3Engine(model=tiny_mechanics_model(), hbm_size_gb=1.0,
                        cold_storage_path=Path(out_dir) / "prefill-kv")
        ids = torch.randint(0, 256, (n,), generator=torch.Generator().manual_seed(n)).tolist()
    else:
        base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "prefill-kv")
        ids = passkey(base.tokenizer, n, 0.5, seed=1).ids
    model, tok = base.model, base.tokenizer
    full_kv = len(ids) * base.bytes_per_token_layer * base.n_layers
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row: dict = {"tokens": len(ids), "full_kv_bytes": full_kv, "rss_before_bytes": rss0}
    with torch.inference_mode():
        if name.endswith("full"):
            model.set_attn_implementation("sdpa")
            cache = DynamicCache(config=model.config)
            t0 = time.perf_counter()
            model(torch.tensor([ids]), cache=cache, use_cache=True, logits_to_keep=1)
            row["prefill_s"] = time.perf_counter() - t0
            row["resident_kv_bytes"] = sum(lay.keys.nbytes + lay.values.nbytes for lay in cache.layers)
        else:
            warm = {} if warm_share is None else {"hbf_size_gb": full_kv * warm_share / GiB}
            engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=full_kv * frac / GiB,
                              cold_storage_path=Path(out_dir) / f"prefill-kv-{name}", **warm)
            engine.generate(ids, max_new_tokens=1)  # timed without a profiler (it slows Python)
            s = engine.stats()
            row["prefill_s"] = s["prefill_s"]
            row["hot_peak_bytes"], row["hot_budget_bytes"] = s["hot_peak_bytes"], s["hot_budget_bytes"]
            row["warm_bytes"], row["cold_bytes"] = s["warm_bytes"], s["cold_bytes"]
            row["warm_reserved_bytes"] = s["warm_reserved_bytes"]  # rows never written: no RSS
            row["resident_kv_bytes"] = s["hot_peak_bytes"] + s["warm_bytes"]
            row["warm_summary_bytes"] = s["warm_summary_bytes"]  # block summaries, beside the blocks
            row["block_tokens"] = engine.geometry.block_tokens
            if name == "h3_10%":  # where the time went: a second, profiled prefill
                engine.new_cache()
                prof = cProfile.Profile()
                prof.enable()
                engine.generate(ids, max_new_tokens=1)
                prof.disable()
                stats = pstats.Stats(prof).stats  # {(file, line, func): (cc, nc, tt, ct, callers)}
                row["profiled_prefill_s"] = round(engine.stats()["prefill_s"], 2)
                row["time_s_by_part_profiled"] = {
                    label: round(sum(v[3] for k, v in stats.items()
                                     if (k[2] == func or k[2].endswith(f".{func}>"))  # built-ins
                                     and (func != "store" or "cold" in k[0])), 2)
                    for func, label in PARTS.items()}
    row["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    row["resident_kv_vs_full"] = round(row["resident_kv_bytes"] / full_kv, 3)
    row["resident_with_summaries_vs_full"] = round(
        (row["resident_kv_bytes"] + row.get("warm_summary_bytes", 0)) / full_kv, 3)
    queue.put(row)


def run_prefill(out_dir: Path, quick: bool) -> dict:
    n = 4096 if quick else 8192
    # (name, hot budget as a share of the full KV, warm tier as a share of it or None: shipped)
    variants = [("full", 1.0, None), ("h3_10%", 0.10, None), ("h3_5%", 0.05, None),
                ("h3_10%_spill", 0.10, SPILL_WARM_SHARE)]
    tiny = [] if quick else [("tiny_full", 1.0, None), ("tiny_h3_5%_spill", 0.05, 0.05)]
    ctx = mp.get_context("spawn")
    rows: dict = {}
    for name, frac, warm in variants + tiny:
        q = ctx.Queue()
        length = TINY_TOKENS if name.startswith("tiny") else n
        p = ctx.Process(target=_variant, args=(name, frac, warm, length, str(out_dir), q))
        p.start()
        rows[name] = q.get()
        p.join()
        print(f"prefill {length}: {name} {rows[name]['prefill_s']:.1f} s, peak RSS "
              f"{rows[name]['peak_rss_bytes'] / 2**20:.0f} MiB, resident KV "
              f"{rows[name]['resident_kv_vs_full']:.3f} of full", file=sys.stderr, flush=True)
    for name in rows:
        ref = rows["tiny_full" if name.startswith("tiny") else "full"]
        rows[name]["prefill_vs_full"] = round(rows[name]["prefill_s"] / ref["prefill_s"], 3)
        rows[name]["peak_rss_vs_full"] = round(rows[name]["peak_rss_bytes"] / ref["peak_rss_bytes"], 3)
    return {"model": "SmolLM2-135M-Instruct (fp32); tiny_*: a random 2-layer Llama",
            "tokens": n, "tiny_tokens": TINY_TOKENS if tiny else None, "variants": rows}
