"""`h3 bench --scenario filings_gate`: how decode's re-selection gate moves H3 away from full
attention on real filings (kvcache/reselect_gate.py).

The development set's labelled questions over their filings' pages at 8K tokens, laid out as `filings_runtime`
lays them (the evidence at 10/50/90% depth, by question); each variant teacher-forced along full
attention's own answer (`forced_fidelity`): the share of full attention's tokens it ranks first,
the mean KL(full || variant) of the next-token distribution, and how many of the 30 layers
re-selected their hot blocks per token. A figure answer reads a different block every few
tokens, which a gate tuned on one synthetic prompt missed: at 0.5 the KL at 10% was no better
than the sinks + window baseline's. Variants: the shipped defaults at 10% and 5%, the gate
before 2026-12-07 (cosine 0.5, every head of a layer re-selecting) and no gate (every token
re-selects: the ceiling the gate trades against decode time, `h3 bench --scenario decode`).
Reported for all questions and per half of the development set (tune / check, by company).
--quick: five questions at 4K.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from benchmarks.documents.filings_runtime import (
    _mean,
    forced_fidelity,
    prompt_length,
    question_samples,
    summary_by_half,
)
from benchmarks.runtime.decode import GATE_05, NO_GATE
from benchmarks.runtime.ruler import full_answer, prompt_kv
from h3_runtime.engine import H3Engine

VARIANTS = (("h3_10%", 0.10, True, None), ("h3_5%", 0.05, True, None),
            ("h3_10%_gate_0.5_all_heads", 0.10, True, None, GATE_05),
            ("h3_5%_gate_0.5_all_heads", 0.05, True, None, GATE_05),
            ("h3_10%_no_gate", 0.10, True, None, NO_GATE),
            ("h3_5%_no_gate", 0.05, True, None, NO_GATE))
MAX_NEW = 32


def _summary(rows: list[dict]) -> dict:
    return {name: {key: _mean(r[name].get(key) for r in rows)
                   for key in ("forced_top1", "forced_kl", "layers_reselecting_per_token")}
            | {"questions": len(rows)} for name, *_ in VARIANTS}


def run(out_dir: Path, quick: bool) -> dict:
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "gate-kv")
    eos = getattr(base.tokenizer, "eos_token_id", None)
    t0 = time.perf_counter()
    rows, skipped = [], []
    for q, _depth, sample in question_samples(base.tokenizer, quick, skipped):
        kv = prompt_kv(base.model, base.fingerprint, sample.ids)[0]
        answer = full_answer(base.model, kv, sample.ids, MAX_NEW, eos)
        row = {"id": q["id"], "file": q["file"], "answer_tokens": len(answer)}
        forced_fidelity(base, sample.ids, kv, answer, row, Path(out_dir) / "gate-kv", VARIANTS)
        del kv  # one prompt KV alive at a time
        rows.append(row)
        print(f"filings_gate {len(rows)}: " + ", ".join(
            f"{name} kl {row[name].get('forced_kl')}" for name, *_ in VARIANTS),
            file=sys.stderr, flush=True)
    return {"model": "SmolLM2-135M-Instruct (fp32)", "length_target": prompt_length(quick),
            "questions": len(rows), "skipped": skipped,
            "seconds": round(time.perf_counter() - t0, 1),
            "summary": _summary(rows),
            "halves": summary_by_half(rows, _summary),
            "rows": rows}
