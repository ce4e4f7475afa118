"""`h3 bench --scenario passkey_api`: the passkey check as a user runs it, through the public API.

The other runtime benches drive the engine directly and share one full-attention prefill
between variants (the ruler bench loads it into the tiers: the cold-reuse path). This one does
what issue 13's report did: the unmodified model's own `generate`, plain (transformers' cache,
sdpa) for full attention, and with `model.forward = engine.wrap_forward(model.forward)` for H3
at 20% and 10% of the full KV with the shipped defaults, so H3 computes its own streamed prefill
and nothing is shared between the variants but the prompt. The haystack is varied prose
(`ruler_tasks.passkey`), ~2.4K, ~4.7K and ~7.8K tokens, the needle at 10 / 50 / 90% depth; scored by
RULER's string match, retention over the prompts full attention solves.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

from benchmarks.evals.ruler_tasks import passkey, string_match_all
from benchmarks.runtime.ruler import retention
from h3_runtime.engine import H3Engine

GiB = 2**30
# the issue report's lengths (tokens, approximately), and the top of its target's 2K-8K range
# (the 135M model itself rarely finds a key at ~7.8K: 2 of 9 prompts, seeds 31-33)
LENGTHS = (2400, 4700, 7800)
DEPTHS = (0.1, 0.5, 0.9)
BUDGETS = (("h3_20%", 0.20), ("h3_10%", 0.10))
MAX_NEW = 12  # "The pass key is" + a 5-digit key and a few tokens more
FIRST_SEED = 21  # the ruler bench's passkey part uses seeds from 0: these prompts are others


@torch.inference_mode()
def _generate(model, ids: torch.Tensor) -> list[int]:
    out = model.generate(ids, max_new_tokens=MAX_NEW, do_sample=False)
    return out[0, ids.shape[1]:].tolist()


def _scored(tok, new: list[int], answers: list[str]) -> dict:
    """An answer's text (as the ruler bench keeps it) and its RULER string-match score."""
    text = tok.decode(new, skip_special_tokens=True)
    return {"text": text, "score": string_match_all(text, answers)}


def _h3_answer(model, tok, ids: torch.Tensor, full_kv: int, frac: float,
               kv_dir: Path) -> tuple[list[int], dict]:
    """H3's answer at `frac` of the full KV (`full_kv` bytes) through `wrap_forward`; the
    model's own forward is put back afterwards, whatever happens."""
    engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=full_kv * frac / GiB,
                      cold_storage_path=kv_dir)
    forward = model.forward
    model.forward = engine.wrap_forward(forward)
    try:
        t0 = time.perf_counter()
        new = _generate(model, ids)
        seconds = time.perf_counter() - t0
    finally:
        model.forward = forward
    stats = engine.stats()
    engine.new_cache()  # release this run's tiers
    return new, {"seconds": round(seconds, 2), "mode": stats["mode"],
                 "hot_peak_bytes": stats["hot_peak_bytes"],
                 "hot_budget_bytes": stats["hot_budget_bytes"], "full_kv_bytes": full_kv}


def run_passkey_api(out_dir: Path, quick: bool, samples: int = 1, first_seed: int = FIRST_SEED,
                    lengths: list[int] | None = None) -> dict:
    """`samples`: prompts per length and depth (seeds first_seed, first_seed + 1, ...);
    `lengths`: context lengths in tokens instead of LENGTHS. --quick: one ~2.4K prompt."""
    lengths = sorted(set(lengths)) if lengths else [LENGTHS[0]] if quick else list(LENGTHS)
    depths = (0.5,) if quick else DEPTHS
    kv_dir = Path(out_dir) / "passkey-api-kv"
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=kv_dir)
    model, tok = base.model, base.tokenizer
    rows = []
    for n in lengths:
        for seed in range(first_seed, first_seed + samples):
            for depth in depths:
                s = passkey(tok, n, depth, seed)
                ids = torch.tensor([s.ids])
                full_kv = ids.shape[1] * base.bytes_per_token_layer * base.n_layers
                model.set_attn_implementation("sdpa")
                full = _generate(model, ids)
                row = {"length": len(s.ids), "depth": depth, "seed": seed, "passkey": s.answers[0],
                       "full": _scored(tok, full, s.answers)}
                for name, frac in BUDGETS:
                    new, info = _h3_answer(model, tok, ids, full_kv, frac, kv_dir)
                    row[name] = {**_scored(tok, new, s.answers), "same_as_full": new == full, **info}
                print(f"bench passkey_api {len(s.ids)} depth {depth}: full {row['full']['score']:.0f} "
                      + ", ".join(f"{v} {row[v]['score']:.0f}" for v, _ in BUDGETS),
                      file=sys.stderr, flush=True)
                rows.append(row)
    names = [v for v, _ in BUDGETS]
    solved = [r for r in rows if r["full"]["score"] > 0]
    return {
        "model": "SmolLM2-135M-Instruct (fp32)", "path": "model.generate via engine.wrap_forward",
        "lengths": lengths, "depths": list(depths), "seeds": list(range(first_seed, first_seed + samples)),
        "prompts": len(rows), "prompts_full_solves": len(solved),
        "retention_vs_full": retention(solved, names),
        "identical_to_full": {v: sum(r[v]["same_as_full"] for r in solved) for v in names},
        "h3_seconds_median": {v: round(statistics.median(r[v]["seconds"] for r in rows), 2)
                              for v in names},
        "hot_budget_never_exceeded": all(r[v]["hot_peak_bytes"] <= r[v]["hot_budget_bytes"]
                                         for r in rows for v in names),
        "rows": rows,
    }
