"""`h3 bench --scenario filings_runtime`: the runtime's answers on real 10-K text.

RULER and the passkey (h3_runtime/bench/ruler.py) are synthetic by design; this scenario asks the
FinanceBench questions (`questions.jsonl` of `../shared/corpora/financebench-dev`, or
`H3_FILINGS_CORPUS`) over the filing's own pages: the evidence page(s) plus the pages around them,
trimmed to 8K tokens (--quick: 4K, five questions), the evidence placed at 10%, 50% or 90% depth
(by question, in turn). The prompt is laid out as `h3 ask --doc` lays it out
(h3_runtime/reuse/prompt.py: system prompt, "[pN] page text" chunks, the question).

Side by side in one run, with the shipped defaults (h3_config.yaml): full attention
(DynamicCache + sdpa) and H3 at 10% and 5% of the full KV, the sinks + window baseline at 10%.
The default 135M model rarely states FinanceBench's gold figure (its `score` is reported, string
match as RULER scores), so what is measured is whether H3 keeps full attention's answer: the
share of answers token-for-token equal to full attention's, and the mean prefix agreement (the
share of full attention's answer tokens H3 reproduces before the first differing token).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pymupdf

from h3_runtime.bench.ruler import run_sample
from h3_runtime.engine import H3Engine
from h3_runtime.evals.ruler_tasks import Sample
from h3_runtime.reuse.prompt import ChunkText, PromptLayout
from pipelines.bench.filings import corpus_dir

VARIANTS = (("window_10%", 0.10, False, None), ("h3_10%", 0.10, True, None),
            ("h3_5%", 0.05, True, None))
DEPTHS = (0.1, 0.5, 0.9)
MAX_NEW = 32
QUICK_QUESTIONS = 5


def evidence_pages(pages: list[int], n_pages: int) -> list[int]:
    """0-based pages to keep together: the 1-based evidence pages' range when it is short (a
    statement and its continuation), else the first one."""
    first, last = min(pages) - 1, max(pages) - 1
    if last - first > 2:
        last = first
    return [p for p in range(first, last + 1) if 0 <= p < n_pages]


def build_sample(layout: PromptLayout, page_texts: list[str], question: dict, length: int,
                 depth: float) -> Sample:
    """The question over the evidence pages and their neighbours, `length` tokens in all, the
    evidence starting at about `depth` of the document (fewer pages on one side of the evidence
    are made up from the other side). Pages beyond the budget are trimmed at their far end."""
    def ids(p: int) -> list[int]:
        return list(layout.chunk_ids(ChunkText(f"p{p + 1}", p + 1, page_texts[p])))

    q_ids = list(layout.question_ids(question["question"]))
    evidence = evidence_pages(question["pages"], len(page_texts))
    if not evidence:
        raise ValueError(f"question {question.get('id', '?')}: evidence pages {question['pages']} "
                         f"are not in the document's {len(page_texts)} pages")
    ev_ids = [t for p in evidence for t in ids(p)]
    room = length - len(layout.head_ids) - len(q_ids) - len(ev_ids)
    if room < 0:
        ev_ids = ev_ids[: len(ev_ids) + room]
        room = 0
    before: list[list[int]] = []  # pages before the evidence, nearest first
    after: list[list[int]] = []
    want_before = int(room * depth)
    p = evidence[0] - 1
    while p >= 0 and sum(map(len, before)) < want_before:
        before.append(ids(p))
        p -= 1
    p = evidence[-1] + 1
    while p < len(page_texts) and sum(map(len, before)) + sum(map(len, after)) < room:
        after.append(ids(p))
        p += 1
    p = evidence[0] - 1 - len(before)
    while p >= 0 and sum(map(len, before)) + sum(map(len, after)) < room:  # the end came first
        before.append(ids(p))
        p -= 1
    over = sum(map(len, before)) + sum(map(len, after)) - room
    if over > 0 and after:  # trim the far end of the last page after the evidence ...
        cut = min(over, len(after[-1]))
        after[-1] = after[-1][: len(after[-1]) - cut]
        over -= cut
    if over > 0 and before:  # ... or the start of the farthest page before it
        before[-1] = before[-1][over:]
    body = [t for page in reversed(before) for t in page] + ev_ids + [t for page in after for t in page]
    return Sample("financebench", length, list(layout.head_ids) + body + q_ids,
                  [question["answer"]], MAX_NEW)


def _summary(rows: list[dict], names: list[str]) -> dict:
    out = {}
    for name in names:
        got = [r[name] for r in rows if "text" in r[name] and "error" not in r[name]]
        out[name] = {
            "answers": len(got),
            "same_as_full": sum(bool(g["same_as_full"]) for g in got),
            "same_as_full_share": round(statistics.fmean(bool(g["same_as_full"]) for g in got), 3)
            if got else None,
            "mean_prefix_agreement": round(statistics.fmean(g["agreement"] for g in got), 3)
            if got else None,
            "score": round(sum(g["score"] for g in got), 2),
        }
    out["full"] = {"score": round(sum(r["full"]["score"] for r in rows), 2), "answers": len(rows)}
    return out


def run(out_dir: Path, quick: bool) -> dict:
    corpus = corpus_dir()
    questions = [json.loads(line) for line in (corpus / "questions.jsonl").read_text().splitlines()
                 if line.strip()]
    if quick:
        questions = questions[:QUICK_QUESTIONS]
    length = 4096 if quick else 8192
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "ruler-kv")
    layout = PromptLayout(base.tokenizer)
    t0 = time.perf_counter()
    texts: dict[str, list[str]] = {}
    rows = []
    for i, q in enumerate(questions):
        if q["file"] not in texts:
            with pymupdf.open(corpus / "pdfs" / q["file"]) as doc:
                texts[q["file"]] = [page.get_text() for page in doc]
        depth = DEPTHS[i % len(DEPTHS)]
        sample = build_sample(layout, texts[q["file"]], q, length, depth)
        row = run_sample(base, sample, VARIANTS, Path(out_dir))
        row.update(id=q["id"], file=q["file"], question=q["question"], depth_target=depth)
        rows.append(row)
    names = [name for name, *_ in VARIANTS]
    return {
        "model": "SmolLM2-135M-Instruct (fp32)",
        "length_target": length,
        "questions": len(rows),
        "seconds": round(time.perf_counter() - t0, 1),
        "summary": _summary(rows, names),
        "hot_budget_never_exceeded": all(r[v]["hot_peak_bytes"] <= r[v]["hot_budget_bytes"]
                                         for r in rows for v in names if "hot_peak_bytes" in r[v]),
        "rows": rows,
    }
