"""`h3 bench --scenario needle` / `--scenario context_scale`.

needle: passkey retrieval with the default model at several lengths and depths, side by side in
one run: full attention (DynamicCache + sdpa), a sinks + recent window baseline
(StreamingLLM-like, 10% budget) and H3 at hot budgets of 5%, 10% and 20% of the full KV.
Reports retention vs full attention, prefill seconds, decode ms/token and hot peak bytes.

H3 at 10% runs its own streaming exact prefill on every prompt (its prefill seconds are the H3
prefill cost). The prompt KV does not depend on the budget (exact prefill reproduces full
attention's KV, tests/h3_runtime/test_exact_prefill.py), so the other tiered variants start from
the full-attention prompt KV loaded into their tiers (the cold-reuse path) and compute only the
last partial block themselves: that keeps the 2K-8K grid affordable on two CPU cores while every
variant still decodes through its own budget and selection.

context_scale: a tiny random Llama at growing lengths (up to 64K tokens) with a 5% hot budget: time,
hot peak vs budget, where the KV bytes went. Mechanics only (random weights say nothing on quality).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

import torch

from benchmarks.runtime.plots import plot_context_scale, plot_needle
from h3_runtime.decode import greedy_decode
from h3_runtime.engine import H3Engine
from h3_runtime.hf.cache import H3Cache
from h3_runtime.kvcache.exact_prefill import PROBE_QUERIES
from h3_runtime.reuse.cache_io import PlainCache

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
BUDGETS = (0.05, 0.10, 0.20)
STREAMING_BUDGET = 0.10
BENCH_CONFIG = None  # the shipped defaults (the block size adapts to the budget: geometry.py)
OWN_PREFILL = "h3_10%"  # the tiered variant that prefills every prompt itself


def passkey_prompt(tok, n_tokens: int, depth: float, key: int) -> list[int]:
    """Chat-formatted passkey prompt of exactly n_tokens ids with the needle at `depth`."""
    enc = lambda s: tok(s, add_special_tokens=False).input_ids  # noqa: E731
    head = enc("<|im_start|>user\nThere is an important info hidden inside a lot of irrelevant "
               "text. Find it and memorize it.")
    needle = enc(f" The pass key is {key}. Remember it. {key} is the pass key. ")
    question = enc(" What is the pass key?<|im_end|>\n<|im_start|>assistant\nThe pass key is")
    body = n_tokens - len(head) - len(needle) - len(question)
    filler = enc(FILLER)
    fill = (filler * (body // len(filler) + 1))[:body]
    at = int(body * depth)
    return head + fill[:at] + needle + fill[at:] + question


@torch.inference_mode()
def full_attention(model, ids: list[int], max_new: int,
                   keep: list | None = None) -> tuple[list[int], float, float]:
    """Greedy decoding with transformers' DynamicCache and sdpa: (ids, prefill s, decode s).
    `keep`, when given, receives the prompt's KV per layer ((H_kv, n, D) keys, values)."""
    model.set_attn_implementation("sdpa")
    cache = PlainCache(config=model.config)
    t0 = time.perf_counter()
    out = model(torch.tensor([ids]), cache=cache, use_cache=True, logits_to_keep=1)
    t1 = time.perf_counter()
    if keep is not None:
        keep.extend((layer.keys[0].clone(), layer.values[0].clone()) for layer in cache.layers)
    t1b = time.perf_counter()  # the copy above is bench bookkeeping, not decode time
    new = greedy_decode(model, cache, out.logits[0, -1], max_new)  # no EOS stop: max_new tokens
    return new, t1 - t0, time.perf_counter() - t1b


def loaded_cache(engine: H3Engine, ids: list[int], prompt_kv: list) -> tuple[H3Cache, int]:
    """A fresh cache holding the prompt KV's complete blocks before the prompt's last
    PROBE_QUERIES tokens, and how many tokens that is. Those last tokens are left to be computed,
    as in a prefill of the whole prompt: their exact attention (SnapKV's observation window)
    guides decode's selection, so both paths derive it from the same queries and the same KV."""
    T = engine.geometry.block_tokens
    loaded = max(0, (len(ids) - PROBE_QUERIES) // T * T)
    cache = engine.new_cache()
    cache.append_kv(torch.stack([k[:, :loaded] for k, _ in prompt_kv]),  # (L, H_kv, n, D)
                    torch.stack([v[:, :loaded] for _, v in prompt_kv]), ids[:loaded])
    return cache, loaded


def run_variant(engine: H3Engine, ids: list[int], max_new: int,
                prompt_kv: list | None = None) -> dict:
    """One tiered run. With prompt_kv, the complete blocks before the prompt's last
    PROBE_QUERIES tokens are loaded into the tiers first and only the rest is computed here."""
    cache, loaded = loaded_cache(engine, ids, prompt_kv) if prompt_kv is not None else (None, 0)
    new = engine.generate(ids, max_new_tokens=max_new, cache=cache, return_ids=True)
    s = engine.stats()
    return {"ids": new, "prefill_s": None if loaded else s["prefill_s"],
            "prompt_tokens_loaded": loaded, "decode_s": s["decode_s"],
            "hot_peak_bytes": s["hot_peak_bytes"], "hot_budget_bytes": s["hot_budget_bytes"],
            "integrity_errors": s["integrity_errors"]}


def run_needle(out_dir: Path, quick: bool) -> dict:
    lengths = [2048] if quick else [2048, 4096, 8192]
    depths = [0.5] if quick else [0.1, 0.3, 0.5, 0.7, 0.9]
    max_new = 8
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "needle-kv",
                    config=BENCH_CONFIG)
    model, tok = base.model, base.tokenizer
    variants = ["full", "streaming_10%"] + [f"h3_{int(b * 100)}%" for b in BUDGETS]
    runs: list[dict] = []
    for n in lengths:
        full_kv = n * base.bytes_per_token_layer * base.n_layers
        for depth in depths:
            key = random.Random(n * 100 + int(depth * 100)).randint(10000, 99999)
            ids = passkey_prompt(tok, n, depth, key)
            row = {"length": n, "depth": depth, "passkey": key, "full_kv_bytes": full_kv}
            prompt_kv: list = []
            new, pre, dec = full_attention(model, ids, max_new, keep=prompt_kv)
            row["full"] = {"ids": new, "prefill_s": pre, "decode_s": dec,
                           "hot_peak_bytes": full_kv, "hot_budget_bytes": None}
            for name, frac, selection in [("streaming_10%", STREAMING_BUDGET, False)] + [
                    (f"h3_{int(b * 100)}%", b, True) for b in BUDGETS]:
                engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=full_kv * frac / 2**30,
                                  cold_storage_path=Path(out_dir) / "needle-kv", selection=selection,
                                  config=BENCH_CONFIG)
                row[name] = run_variant(engine, ids, max_new,
                                         None if name == OWN_PREFILL else prompt_kv)
                engine.new_cache()  # release this run's tiers
            del prompt_kv
            print(f"needle {n} tokens, depth {depth:.0%}: " + ", ".join(
                f"{v} {'ok' if str(key) in tok.decode(row[v]['ids']).replace(' ', '') else 'miss'}"
                for v in variants), file=sys.stderr, flush=True)
            for name in variants:
                r = row[name]
                r["text"] = tok.decode(r.pop("ids"), skip_special_tokens=True)
                r["correct"] = str(key) in r["text"].replace(" ", "")
                r["decode_ms_per_token"] = round(1000 * r["decode_s"] / (max_new - 1), 2)
            runs.append(row)
    summary = _summarise(runs, variants, lengths)
    report = {"model": "SmolLM2-135M-Instruct (fp32)", "lengths": lengths, "depths": depths,
              "block_tokens": base.geometry.block_tokens, "variants": variants,
              "own_prefill_variant": OWN_PREFILL,
              "summary": summary, "runs": runs,
              "hot_budget_never_exceeded": all(
                  r[v]["hot_budget_bytes"] is None or r[v]["hot_peak_bytes"] <= r[v]["hot_budget_bytes"]
                  for r in runs for v in variants)}
    report["plot"] = str(plot_needle(summary, variants, lengths, Path(out_dir) / "needle.png"))
    return report


def _summarise(runs: list[dict], variants: list[str], lengths: list[int]) -> dict:
    out: dict = {}
    for n in lengths:
        rows = [r for r in runs if r["length"] == n]
        full_acc = sum(r["full"]["correct"] for r in rows) / len(rows)
        out[str(n)] = {}
        for v in variants:
            acc = sum(r[v]["correct"] for r in rows) / len(rows)
            out[str(n)][v] = {
                "accuracy": round(acc, 3),
                "retention_vs_full": round(acc / full_acc, 3) if full_acc else None,
                "prefill_s": _mean_or_none([r[v]["prefill_s"] for r in rows]),
                "decode_ms_per_token": round(statistics.mean(r[v]["decode_ms_per_token"] for r in rows), 2),
                "hot_peak_bytes": max(r[v]["hot_peak_bytes"] for r in rows),
                "hot_budget_bytes": rows[0][v]["hot_budget_bytes"],
            }
    return out


def _mean_or_none(values: list[float | None]) -> float | None:
    """None for variants that loaded the prompt KV instead of prefilling it."""
    measured = [v for v in values if v is not None]
    return round(statistics.mean(measured), 3) if measured else None


def tiny_mechanics_model():
    """A random 2-layer Llama (2 KV heads, head_dim 16) for 64K-token mechanics: no quality claim."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=70_000)
    return LlamaForCausalLM(cfg).eval()


def run_context_scale(out_dir: Path, quick: bool) -> dict:
    model = tiny_mechanics_model()
    lengths = [4096, 16384] if quick else [8192, 32768, 65536]
    rows = []
    for n in lengths:
        ids = torch.randint(0, 256, (n,), generator=torch.Generator().manual_seed(n)).tolist()
        engine0 = H3Engine(model=model, hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "scale-kv")
        full_kv = engine0.full_kv_bytes(n)
        row = {"length": n, "full_kv_bytes": full_kv}
        if n <= 16384:
            _, pre, dec = full_attention(model, ids, 4)
            row["full"] = {"prefill_s": round(pre, 3), "decode_ms_per_token": round(1000 * dec / 3, 2),
                           "hot_peak_bytes": full_kv}
        engine = H3Engine(model=model, hbm_size_gb=full_kv * 0.05 / 2**30,
                          cold_storage_path=Path(out_dir) / "scale-kv")
        engine.generate(ids, max_new_tokens=4)
        s = engine.stats()
        row["h3_5%"] = {"prefill_s": s["prefill_s"], "decode_ms_per_token": round(1000 * s["decode_s"] / 3, 2),
                        "hot_peak_bytes": s["hot_peak_bytes"], "hot_budget_bytes": s["hot_budget_bytes"],
                        "warm_bytes": s["warm_bytes"], "cold_bytes": s["cold_bytes"],
                        "tokens_per_s": round(n / s["prefill_s"], 1)}
        engine.new_cache()
        rows.append(row)
    report = {"model": "tiny random Llama (2 layers, 2 KV heads, head_dim 16)", "rows": rows,
              "hot_budget_never_exceeded": all(
                  r["h3_5%"]["hot_peak_bytes"] <= r["h3_5%"]["hot_budget_bytes"] for r in rows)}
    report["plot"] = str(plot_context_scale(rows, Path(out_dir) / "context_scale.png"))
    return report
