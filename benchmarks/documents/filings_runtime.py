"""`h3 bench --scenario filings_runtime`: the runtime's answers on real 10-K text.

RULER and the passkey (benchmarks/runtime/ruler.py) are synthetic by design; this scenario asks the
FinanceBench questions (`questions.jsonl` of `../shared/corpora/financebench-dev`, or
`H3_FILINGS_CORPUS`) over the filing's own pages: the evidence page(s) plus the pages around them,
trimmed to 8K tokens (--quick: 4K, five questions), the evidence placed at 10%, 50% or 90% depth
(by question, in turn). The prompt is laid out as `h3 ask --doc` lays it out
(h3_runtime/reuse/prompt.py: system prompt, "[pN] page text" chunks, the question).

Side by side in one run, with the shipped defaults (h3_config.yaml): full attention
(DynamicCache + sdpa) and H3 at 10% and 5% of the full KV, the sinks + window baseline at 10%.
The default 135M model rarely states FinanceBench's gold figure (its `score` is reported, string
match as RULER scores), so what is measured is whether H3 keeps full attention's answer: the
share of answers token-for-token equal to full attention's, the mean prefix agreement (the
share of full attention's answer tokens H3 reproduces before the first differing token), and,
without the drift of free-running greedy decoding (one early different token changes the rest
of a free-form answer), teacher forcing along full attention's answer
(`H3Engine.continuation_logits`): the share of its tokens each variant also ranks first given the
same preceding tokens (top-1 agreement) and the mean KL divergence of its next-token
distribution from full attention's. Each figure is given for all questions and, side by side, for
the development set's tune and check halves (by company, benchmarks/documents/split.py): a
runtime setting chosen on one half is kept only where the other agrees.

`h3 bench --scenario filings_passkey`: the passkey test of issue 13 with the filings' own prose as
the haystack (not the WordNet sentences the RULER bench draws from), through the path a user
takes: `model.forward = engine.wrap_forward(model.forward)` and `model.generate` (H3's own
streamed exact prefill, not the bench's cold-reuse shortcut), 2.4K / 4.7K / 8K tokens, the needle
at 10/50/90% depth, two filings' stretches per cell; full attention (`model.generate` on
DynamicCache) against H3 at 20%, 10% and 5% of the full KV, shipped defaults.
"""

from __future__ import annotations

import functools
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pymupdf
import torch

from benchmarks.documents.filings import corpus_dir
from benchmarks.documents.split import HALVES, half_of, halves
from benchmarks.evals.ruler_tasks import Sample
from benchmarks.runtime.needle import loaded_cache
from benchmarks.runtime.ruler import GiB, full_attention_cache, prompt_kv, run_sample
from h3_runtime.engine import H3Engine
from h3_runtime.reuse.prompt import ChunkText, PromptLayout

VARIANTS = (("window_10%", 0.10, False, None), ("h3_10%", 0.10, True, None),
            ("h3_5%", 0.05, True, None))
DEPTHS = (0.1, 0.5, 0.9)
MAX_NEW = 32
QUICK_QUESTIONS = 5


@functools.cache
def filing_pages(pdf: Path) -> list[str]:
    """The text of each page of a filing (read once per run: several questions share a file)."""
    with pymupdf.open(pdf) as doc:
        return [page.get_text() for page in doc]


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


@torch.inference_mode()
def forced_fidelity(base: H3Engine, ids: list[int], kv: list, answer: list[int], row: dict,
                    cold_dir: Path, variants=None) -> None:
    """Teacher forcing along full attention's answer `answer` (kv: the prompt's full-attention
    KV): into each variant's entry of `row`, the share of its tokens the variant ranks first and
    the mean KL(full || variant), and how many layers re-selected per token after the first.
    `variants`: as the RULER bench's (name, share of the full KV, selection, warm share (unused
    here: None), optionally runtime keys changed); default this scenario's."""
    if not answer:
        return
    model = base.model
    m = len(ids) - 1
    cache = full_attention_cache(model, kv, m)
    tail = torch.tensor([ids[m:] + answer[:-1]])
    full = model(tail, cache=cache, use_cache=True).logits[0].float().cpu()  # (len(answer), V)
    ref = torch.tensor(answer)
    full_logp = torch.log_softmax(full, -1)
    full_kv = len(ids) * base.bytes_per_token_layer * base.n_layers
    for name, frac, selection, _warm, *changes in VARIANTS if variants is None else variants:
        if "error" in row.setdefault(name, {}):  # the budget could not hold one block (run_sample)
            continue
        engine = H3Engine(model=model, tokenizer=base.tokenizer, hbm_size_gb=full_kv * frac / GiB,
                          cold_storage_path=cold_dir, selection=selection,
                          config={"runtime": changes[0]} if changes else None)
        cache, _ = loaded_cache(engine, ids, kv)
        got = engine.continuation_logits(ids, answer, cache=cache)
        log = list(cache.ctx.reselect_log)[1:]  # layers re-selecting, each token after the first
        engine.new_cache()  # release this run's tiers
        logp = torch.log_softmax(got, -1)
        row[name]["forced_top1"] = round(float((got.argmax(-1) == ref).float().mean()), 4)
        row[name]["forced_kl"] = round(float((full_logp.exp() * (full_logp - logp)).sum(-1).mean()), 4)
        if log:
            row[name]["layers_reselecting_per_token"] = round(statistics.fmean(log), 2)


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
            "forced_top1": _mean(g.get("forced_top1") for g in got),
            "forced_kl": _mean(g.get("forced_kl") for g in got),
        }
    out["full"] = {"score": round(sum(r["full"]["score"] for r in rows), 2), "answers": len(rows)}
    return out


def summary_by_half(rows: list[dict], summarise: Callable[[list[dict]], dict]) -> dict:
    """`summarise` of the tune half's questions and of the check half's (by the company of each
    row's `file`), side by side."""
    split = halves(r["file"] for r in rows)
    return {half: summarise([r for r in rows if half_of(r["file"], split) == half])
            for half in HALVES}


def prompt_length(quick: bool) -> int:
    """Tokens of each question's prompt: 8K (--quick: 4K)."""
    return 4096 if quick else 8192


def _mean(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.fmean(values), 4) if values else None


def question_samples(tokenizer, quick: bool, skipped: list[str]) -> Iterator[tuple[dict, float, Sample]]:
    """(question, depth, its prompt) for each labelled development question: 8K tokens (--quick:
    4K, the first QUICK_QUESTIONS), the evidence at DEPTHS in turn. A question whose evidence is
    not in its file is named in `skipped` and left out."""
    corpus = corpus_dir()
    questions = [json.loads(line) for line in (corpus / "questions.jsonl").read_text().splitlines()
                 if line.strip()]
    if quick:
        questions = questions[:QUICK_QUESTIONS]
    layout = PromptLayout(tokenizer)
    for i, q in enumerate(questions):
        depth = DEPTHS[i % len(DEPTHS)]
        try:
            sample = build_sample(layout, filing_pages(corpus / "pdfs" / q["file"]), q,
                                  prompt_length(quick), depth)
        except ValueError as exc:
            skipped.append(str(exc))
            print(f"bench: skipped {exc}", file=sys.stderr, flush=True)
            continue
        yield q, depth, sample


def run(out_dir: Path, quick: bool) -> dict:
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "ruler-kv")
    t0 = time.perf_counter()
    rows, skipped = [], []
    for q, depth, sample in question_samples(base.tokenizer, quick, skipped):
        prompt = prompt_kv(base.model, base.fingerprint, sample.ids)  # read once for both
        row = run_sample(base, sample, VARIANTS, Path(out_dir), prompt=prompt)
        row.update(id=q["id"], file=q["file"], question=q["question"], depth_target=depth)
        forced_fidelity(base, sample.ids, prompt[0], row["full"]["ids"], row,
                        Path(out_dir) / "ruler-kv")
        del prompt  # one prompt KV alive at a time
        rows.append(row)
    names = [name for name, *_ in VARIANTS]
    return {
        "model": "SmolLM2-135M-Instruct (fp32)",
        "length_target": prompt_length(quick),
        "questions": len(rows),
        "skipped": skipped,
        "seconds": round(time.perf_counter() - t0, 1),
        "summary": _summary(rows, names),
        "halves": summary_by_half(rows, lambda half: _summary(half, names)),
        "hot_budget_never_exceeded": all(r[v]["hot_peak_bytes"] <= r[v]["hot_budget_bytes"]
                                         for r in rows for v in names if "hot_peak_bytes" in r[v]),
        "rows": rows,
    }


PASSKEY_LENGTHS = (2400, 4700, 8000)
PASSKEY_FRACTIONS = (0.20, 0.10, 0.05)
PASSKEY_SEEDS = 2
PASSKEY_HEAD = "There is an important info hidden inside a lot of irrelevant text. Find it and memorize it."
PASSKEY_TAIL = " What is the pass key? Answer with the number."
PASSKEY_ANSWER = "The pass key is"


def filing_sentences(page_texts: list[str], start_page: int) -> list[str]:
    """The filing's prose from `start_page` on (wrapping), as sentences with whitespace folded."""
    text = " ".join(page_texts[start_page:] + page_texts[:start_page])
    return [t for t in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", text)) if t]


def passkey_prompt(tok, sentences: list[str], length: int, depth: float, key: str) -> list[int]:
    """Chat-formatted ids of about `length` tokens: the haystack of whole sentences with the
    needle between two of them at `depth`, the question, the assistant's answer prefix."""
    def enc(text: str) -> list[int]:
        return tok(text, add_special_tokens=False).input_ids

    head = enc("<|im_start|>user\n" + PASSKEY_HEAD + "\n")
    tail = enc(PASSKEY_TAIL + "<|im_end|>\n<|im_start|>assistant\n" + PASSKEY_ANSWER)
    needle = enc(f" The pass key is {key}. Remember it. {key} is the pass key.")
    room = length - len(head) - len(tail) - len(needle)
    hay: list[list[int]] = []
    used = 0
    for sentence in sentences:
        ids = enc(" " + sentence)
        if used + len(ids) > room:
            break
        hay.append(ids)
        used += len(ids)
    cut, acc = 0, 0
    while cut < len(hay) and acc + len(hay[cut]) <= depth * used:
        acc += len(hay[cut])
        cut += 1
    body = [t for s in hay[:cut] for t in s] + needle + [t for s in hay[cut:] for t in s]
    return head + body + tail


@torch.inference_mode()
def _generate(model, ids: list[int], max_new: int) -> list[int]:
    out = model.generate(torch.tensor([ids]), max_new_tokens=max_new, do_sample=False,
                         pad_token_id=model.config.eos_token_id)
    return out[0, len(ids):].tolist()


def run_passkey(out_dir: Path, quick: bool) -> dict:
    corpus = corpus_dir()
    pdfs = sorted((corpus / "pdfs").glob("*.pdf"))
    base = H3Engine(hbm_size_gb=1.0, cold_storage_path=Path(out_dir) / "passkey-kv")
    model, tok = base.model, base.tokenizer
    forward = model.forward
    lengths = PASSKEY_LENGTHS[:1] if quick else PASSKEY_LENGTHS
    t0 = time.perf_counter()
    rows = []
    for length in lengths:
        for seed in range(1 if quick else PASSKEY_SEEDS):
            for depth in DEPTHS:
                rng = random.Random(f"filings-passkey-{length}-{seed}-{depth}")
                pdf = pdfs[rng.randrange(len(pdfs))]
                pages = filing_pages(pdf)
                key = str(rng.randint(10000, 99999))
                ids = passkey_prompt(tok, filing_sentences(pages, rng.randrange(len(pages))),
                                     length, depth, key)
                model.forward = forward
                model.set_attn_implementation("sdpa")
                full = _generate(model, ids, 12)
                full_text = tok.decode(full, skip_special_tokens=True)
                row = {"file": pdf.name, "length_target": length, "length": len(ids),
                       "depth": depth, "key": key,
                       "full": {"text": full_text, "found": key in full_text}}
                full_kv = len(ids) * base.bytes_per_token_layer * base.n_layers
                for frac in PASSKEY_FRACTIONS:
                    engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=full_kv * frac / GiB,
                                      cold_storage_path=Path(out_dir) / "passkey-kv")
                    model.forward = engine.wrap_forward(forward)
                    got = _generate(model, ids, 12)
                    text = tok.decode(got, skip_special_tokens=True)
                    st = engine.stats()
                    row[f"h3_{frac:.0%}"] = {"text": text, "found": key in text,
                                             "same_as_full": got == full,
                                             "hot_peak_bytes": st["hot_peak_bytes"],
                                             "hot_budget_bytes": st["hot_budget_bytes"]}
                    engine.new_cache()  # releases this run's tiers
                model.forward = forward
                rows.append(row)
                print(f"bench filings passkey {pdf.name} {len(ids)} @{depth}: full "
                      f"{row['full']['found']} " + ", ".join(
                          f"{n} {row[n]['found']}" for n in row if n.startswith("h3_")),
                      file=sys.stderr, flush=True)
    names = [f"h3_{frac:.0%}" for frac in PASSKEY_FRACTIONS]
    return {
        "model": "SmolLM2-135M-Instruct (fp32)",
        "prompts": len(rows),
        "seconds": round(time.perf_counter() - t0, 1),
        "all": _passkey_summary(rows, names),
        "per_length": {str(n): _passkey_summary([r for r in rows if r["length_target"] == n], names)
                       for n in lengths},
        "hot_budget_never_exceeded": all(r[n]["hot_peak_bytes"] <= r[n]["hot_budget_bytes"]
                                         for r in rows for n in names),
        "rows": rows,
    }


def _passkey_summary(rows: list[dict], names: list[str]) -> dict:
    """Over the prompts full attention answers: how many each variant answers (retention) and
    how many it answers token for token as full attention does."""
    found = [r for r in rows if r["full"]["found"]]
    return {"prompts": len(rows), "full_attention_finds": len(found),
            "retention": {n: round(sum(r[n]["found"] for r in found) / len(found), 3)
                          if found else None for n in names},
            "same_as_full": {n: sum(r[n]["same_as_full"] for r in found) for n in names}}
