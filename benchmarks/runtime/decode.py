"""`h3 bench --scenario decode`: time per decoded token at long context, full attention vs H3.

Every variant decodes from the same prompt KV (one full-attention prefill; H3 loads it into its
tiers, the cold-reuse path), so the comparison isolates the per-token cost: full attention reads
(and `DynamicCache` re-concatenates) the whole KV per token, H3 reads sinks + window + the
selected blocks from its hot buffer and runs the AHAS bookkeeping. The variants alternate over
several rounds and the median round counts: the machine is shared, and alternation keeps a burst
of background load from landing on one side only.

Where H3's time goes, from the same runs: `full_24_tokens` is full attention decoding after a
24-token prompt (the model's own per-token cost, which no KV scheme removes), and each H3
variant reports its first decoded step (which fills every slot), its re-selecting steps (some
layer re-selected its hot blocks) and the steps in between (medians of each forward call's wall
time, and how many steps of a run were of each kind), and how many of the layers re-selected in
an average step after the first (`layers_reselecting_per_step`).

`full_24_tokens`' `vs_full` is the floor of the ratio: the per-token time no KV scheme can go
below on this machine (the weights are read once a token whatever the cache holds). Each H3
variant's `kv_cost_removed` is the share of full attention's KV cost it takes away, (full -
H3) / (full - model alone): 1.0 would be a free cache, 0 no better than full attention, and
unlike `vs_full` it does not move with the model's own share of the step (a machine whose
memory copies are fast shrinks full attention's KV cost, and with it how far below 1.0 any
ratio can go: 0.30x on one machine, 0.49x on another, at 8K).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

from benchmarks.runtime.needle import BENCH_CONFIG, full_attention, passkey_prompt, run_variant
from h3_runtime.decode import greedy_decode
from h3_runtime.engine import H3Engine
from h3_runtime.reuse.cache_io import PlainCache

# (name, hot budget as a share of the full KV, runtime keys changed from the shipped defaults):
# 20% and 5% show how the cost moves with the budget (a re-selection's is mostly fixed per layer);
# by default a layer re-selects only once its query has moved (runtime.decode_reselect_cosine,
# kvcache/reselect_gate.py): without that gate it re-selects every token, or every 3 tokens (the
# default before the gate), or every 4 (it cost fidelity on real filings: README, runtime);
# float16 decode KV (the default before int8) attends ~half int8's tokens in the same hot bytes,
# for less time per token; ranking by the key sketches alone (no exact re-scoring of their
# candidates, kvcache/rescore.py) is what that saves; the gate at 0.5 (the default before
# 2026-12-07: fewer re-selections, a 3-6x larger KL from full attention on real filings), and
# every KV head of a layer re-selecting when one head's query moved (before 2026-12-07)
NO_GATE = {"decode_reselect_cosine": 1.0}
GATE_05 = {"decode_reselect_cosine": 0.5, "decode_reselect_heads": "all"}
ALL_HEADS = {"decode_reselect_heads": "all"}
H3_VARIANTS = (("h3_10%", 0.10, {}), ("h3_20%", 0.20, {}), ("h3_5%", 0.05, {}),
               ("h3_10%_reselect_every_token", 0.10, {**NO_GATE, "decode_reselect_every": 1}),
               ("h3_10%_reselect_every_3", 0.10, {**NO_GATE, "decode_reselect_every": 3}),
               ("h3_10%_reselect_every_4", 0.10, {**NO_GATE, "decode_reselect_every": 4}),
               ("h3_10%_float16", 0.10, {"decode_kv_dtype": "float16"}),
               ("h3_10%_bfloat16", 0.10, {"decode_kv_dtype": "bfloat16"}),
               ("h3_5%_bfloat16", 0.05, {"decode_kv_dtype": "bfloat16"}),
               ("h3_10%_sketches_only", 0.10, {"decode_exact_rescore": 0}),
               ("h3_10%_reselect_cosine_0.5", 0.10, GATE_05),
               ("h3_5%_reselect_cosine_0.5", 0.05, GATE_05),
               ("h3_10%_reselect_all_heads", 0.10, ALL_HEADS),
               ("h3_5%_reselect_all_heads", 0.05, ALL_HEADS))


@torch.inference_mode()
def full_decode(model, prompt_kv: list, ids: list[int], n_new: int) -> tuple[list[int], float]:
    """Greedy decode on a DynamicCache rebuilt from the prompt KV (all but the last prompt
    token, which is run here for the first logits). Returns (new ids, ms per decoded token)."""
    cache = PlainCache(config=model.config)
    m = len(ids) - 1
    for layer, (k, v) in enumerate(prompt_kv):
        cache.update(k[None, :, :m].clone(), v[None, :, :m].clone(), layer)  # (1, H_kv, m, D)
    out = model(torch.tensor([ids[m:]]), cache=cache, use_cache=True)
    t0 = time.perf_counter()
    new = greedy_decode(model, cache, out.logits[0, -1], n_new)  # no EOS stop: n_new tokens
    return new, 1000 * (time.perf_counter() - t0) / max(n_new - 1, 1)


def kv_cost_removed(full_ms: float, model_alone_ms: float, h3_ms: float) -> float | None:
    """The share of full attention's per-token KV cost (its time over the model alone's) that a
    variant removes; None where full attention costs no more than the model alone (no KV cost
    to remove at that length)."""
    kv_cost = full_ms - model_alone_ms
    if kv_cost <= 0:
        return None
    return round((full_ms - h3_ms) / kv_cost, 3)


def reselecting_layers(engine) -> list[int]:
    """Per decoded step of the engine's last generate, how many layers re-selected their hot
    blocks (the cache's `reselect_log`); without one (a stand-in engine), every
    `decode_reselect_every`-th step counts as re-selecting in every layer."""
    n = len(engine.decode_step_seconds)
    log = getattr(getattr(getattr(engine, "cache", None), "ctx", None), "reselect_log", None)
    if log is not None and len(log) >= n:
        return list(log[:n])
    every = engine.config.runtime.decode_reselect_every
    layers = getattr(engine, "n_layers", 1)
    return [layers if i % every == 0 else 0 for i in range(n)]


def variant_names() -> list[str]:
    """The tiered variants `run_decode` can run beside full attention (`h3 bench --variants`)."""
    return [name for name, _, _ in H3_VARIANTS]


def run_decode(out_dir: Path, quick: bool, lengths: list[int] | None = None,
               variants: list[str] | None = None) -> dict:
    """`lengths`: prompt lengths in tokens (default 4096 and 8192); `variants`: the H3 variants
    to time beside full attention (default: all; fewer rounds of the machine's time each)."""
    lengths = sorted(set(lengths)) if lengths else [2048] if quick else [4096, 8192]
    rounds, n_new = (2, 12) if quick else (3, 32)
    chosen = tuple(v for v in H3_VARIANTS if variants is None or v[0] in variants)
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "decode-kv",
                    config=BENCH_CONFIG)
    model, tok = base.model, base.tokenizer
    h3_names = [name for name, _, _ in chosen]
    variants = ["full", "full_24_tokens"] + h3_names
    rows = []
    for n in lengths:
        ids = passkey_prompt(tok, n, 0.5, 31337)
        prompt_kv: list = []
        full_attention(model, ids, 1, keep=prompt_kv)  # the shared prompt KV
        short_ids, short_kv = ids[-24:], []
        full_attention(model, short_ids, 1, keep=short_kv)  # the model's own cost per token
        full_kv = n * base.bytes_per_token_layer * base.n_layers
        ms: dict[str, list[float]] = {v: [] for v in variants}
        peaks: dict[str, tuple[int, int]] = {}
        texts: dict[str, str] = {}
        steps: dict[str, dict[str, list[float]]] = {}  # variant -> step kind -> ms
        counts: dict[str, list[int]] = {}  # variant -> layers re-selecting, each step after the first
        for _ in range(rounds):
            new, per_token = full_decode(model, prompt_kv, ids, n_new)
            ms["full"].append(per_token)
            texts["full"] = tok.decode(new, skip_special_tokens=True)
            new, per_token = full_decode(model, short_kv, short_ids, n_new)
            ms["full_24_tokens"].append(per_token)
            texts["full_24_tokens"] = tok.decode(new, skip_special_tokens=True)
            for name, frac, changes in chosen:
                config = {"runtime": changes} if changes else BENCH_CONFIG
                engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=full_kv * frac / 2**30,
                                  cold_storage_path=Path(out_dir) / "decode-kv", config=config)
                r = run_variant(engine, ids, n_new, prompt_kv)
                tokens = max(engine.stats()["decode_tokens"], 1)
                ms[name].append(1000 * r["decode_s"] / tokens)
                peaks[name] = (r["hot_peak_bytes"], r["hot_budget_bytes"])
                texts[name] = tok.decode(r["ids"], skip_special_tokens=True)
                kinds = steps.setdefault(name, {"first": [], "reselecting": [], "between": []})
                layers = reselecting_layers(engine)
                for i, sec in enumerate(engine.decode_step_seconds):
                    kind = ("first" if i == 0 else "reselecting" if layers[i] else "between")
                    kinds[kind].append(1000 * sec)
                counts.setdefault(name, []).extend(layers[1:])
                engine.new_cache()  # release this run's tiers
        row = {"length": n, "full_kv_bytes": full_kv, "decode_tokens": n_new, "rounds": rounds}
        for v in variants:
            row[v] = {"decode_ms_per_token": round(statistics.median(ms[v]), 2),
                      "rounds_ms_per_token": [round(x, 2) for x in ms[v]], "text": texts[v]}
            if v in peaks:
                row[v]["hot_peak_bytes"], row[v]["hot_budget_bytes"] = peaks[v]
            if v in steps:
                row[v]["step_ms_median"] = {kind: round(statistics.median(x), 1) if x else None
                                            for kind, x in steps[v].items()}
                row[v]["steps"] = {kind: len(x) // rounds for kind, x in steps[v].items()}
            if counts.get(v):  # after the first step (which selects in every layer)
                row[v]["layers_reselecting_per_step"] = round(statistics.mean(counts[v]), 2)
            row[v]["vs_full"] = round(row[v]["decode_ms_per_token"]
                                      / row["full"]["decode_ms_per_token"], 3)
        for v in h3_names:
            row[v]["kv_cost_removed"] = kv_cost_removed(
                row["full"]["decode_ms_per_token"], row["full_24_tokens"]["decode_ms_per_token"],
                row[v]["decode_ms_per_token"])
        print(f"decode {n} tokens: " + ", ".join(
            f"{v} {row[v]['decode_ms_per_token']} ms/token" for v in variants),
            file=sys.stderr, flush=True)
        rows.append(row)
    return {"model": "SmolLM2-135M-Instruct (fp32)", "variants": variants, "rows": rows,
            "h3_no_slower_than_full": {str(r["length"]): all(
                r[v]["decode_ms_per_token"] <= r["full"]["decode_ms_per_token"]
                for v in h3_names) for r in rows},
            "hot_budget_never_exceeded": all(
                r[v]["hot_peak_bytes"] <= r[v]["hot_budget_bytes"]
                for r in rows for v in h3_names)}
