"""`h3 bench --scenario navigate --home H3_HOME`: H⁴ navigation (`h3 ask --doc`) on the
development filings, each question asked over its own filing.

Per labelled question whose filing the store holds (the store is only read: a tree the store
lacks is built from its chunks, as `h3 ask --doc` does):
- branch recall at 1/3/5 parts: an evidence page among the pages of the chosen parts' chunks
  (the shipped branch is navigation.branch_sections parts); and shipped: among the pages of
  the passages the shipped branch loads (its parts' best chunks, within branch_tokens and
  branch_share of the document);
- KV loaded per question: the branch's tokens (the model's tokenizer, prompt layout included)
  x the model's bytes per token, against the whole document's KV (all its chunks, estimated
  the same way: a 190-page filing does not fit the model, so it is never prefilled whole);
- side by side over the same document: flat recall (the top 5 chunks by the same chunk score,
  their pages and tokens) and today's leading-chunks behaviour (`fit_chunks`: the leading
  chunks that fit the model's context: does it hold an evidence page, and its KV);
- the document summary's coverage: the share of the filing's top sections whose summary the
  `document_summary` prompt holds (assets/analysis.py: summary_prompt_chunks);
- time to first token (with the model, not with --quick): `h3 ask --doc` on a sample of
  SAMPLE_TTFT questions per half, navigated (its parts' KV computed on first reach, then loaded
  from the cold tier on a second ask) against the leading chunks (prefilled), in a scratch
  H3_HOME whose cold tier is thrown away (the --home store is never written).
Every figure is given for the tune and the check half (benchmarks/documents/split.py).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.documents.filings import _jsonl, by_half, corpus_dir
from benchmarks.documents.split import half_of, halves
from h3.resources.settings import load_config

SAMPLE_TTFT = 1  # questions per half timed with the model (seconds each on 2 cores)
FLAT_K = 5


def _mean(values: list[float]) -> float | None:
    return round(float(np.mean(values)), 4) if values else None


def score(rows: list[dict]) -> dict:
    if not rows:
        return {"questions": 0}
    out = {"questions": len(rows)}
    for k in (1, 3, 5):
        out[f"branch_recall_at_{k}"] = _mean([r[f"branch_hit_{k}"] for r in rows])
    out["branch_recall_shipped"] = _mean([r["shipped_hit"] for r in rows])
    out["flat_recall_at_5_chunks"] = _mean([r["flat_hit"] for r in rows])
    out["leading_chunks_recall"] = _mean([r["leading_hit"] for r in rows])
    out["branch_kv_share_of_document"] = _mean([r["branch_kv_share"] for r in rows])
    out["branch_kv_share_max"] = round(max(r["branch_kv_share"] for r in rows), 4)
    out["branch_kv_mb"] = _mean([r["branch_kv_bytes"] / 1e6 for r in rows])
    out["flat_kv_mb"] = _mean([r["flat_kv_bytes"] / 1e6 for r in rows])
    out["leading_kv_mb"] = _mean([r["leading_kv_bytes"] / 1e6 for r in rows])
    out["document_kv_mb"] = _mean([r["document_kv_bytes"] / 1e6 for r in rows])
    out["navigate_s"] = _mean([r["navigate_s"] for r in rows])
    return out


def _model_tokens():
    """(tokens of one chunk in the prompt layout, head tokens, bytes per token) of the bundled
    model, from its tokenizer and config only (the weights are not loaded)."""
    from transformers import AutoConfig, AutoTokenizer

    from h3_runtime.models import ensure_default_model
    from h3_runtime.reuse.prompt import PromptLayout

    path = ensure_default_model()
    layout = PromptLayout(AutoTokenizer.from_pretrained(path))
    cfg = AutoConfig.from_pretrained(path)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * 4  # float32
    limit = int(getattr(cfg, "max_position_embeddings", 8192)) - 512  # max_document_tokens
    return layout, per_token, limit


def measure(db, tree, question: dict, embed, layout, per_token: int, limit: int,
            cache: dict) -> dict:
    from h3.resources.navigation import choose
    from h3.resources.navigation.navigate import chunk_scores
    from h3_runtime.reuse.prompt import ChunkText

    rows = tree.chunks
    if tree.doc_id not in cache:
        cache[tree.doc_id] = [len(layout.chunk_ids(ChunkText(r["chunk_id"], int(r["page"]),
                                                             r["text"]))) for r in rows]
    tokens = cache[tree.doc_id]
    by_id = {r["chunk_id"]: t for r, t in zip(rows, tokens, strict=True)}
    head = len(layout.head_ids)
    evidence = set(question["pages"])
    t0 = time.perf_counter()
    qvec = embed([question["question"]])[0]
    branch = choose(question["question"], tree.sections, rows, qvec, sections=5)
    seconds = time.perf_counter() - t0
    ranked = [p for p, _ in branch.ranked]
    out = {"file": question["file"], "question": question["question"][:90],
           "pages": question["pages"], "navigate_s": round(seconds, 3)}
    for k in (1, 3, 5):
        pages = {int(r["page"]) for r in rows if r["chunk_id"] in
                 {c for p in ranked[:k] for c in p.chunk_ids}}
        out[f"branch_hit_{k}"] = bool(pages & evidence)
    nav = load_config().navigation
    shipped = choose(question["question"], tree.sections, rows, qvec,
                     sections=nav.branch_sections, max_tokens=nav.branch_tokens,
                     max_share=nav.branch_share)
    out["branch"] = [f"{p.section_id} p{p.pages}" for p in shipped.parts]
    # the passages the shipped branch loads (its parts' best chunks when over its bounds)
    out["shipped_hit"] = bool({int(r["page"]) for r in shipped.chunks} & evidence)
    branch_tokens = head + sum(by_id[r["chunk_id"]] for r in shipped.chunks)
    document_tokens = head + sum(tokens)
    flat = np.argsort(-chunk_scores(question["question"], rows, qvec), kind="stable")[:FLAT_K]
    out["flat_hit"] = bool({int(rows[i]["page"]) for i in flat} & evidence)
    leading, total = [], head
    for r, t in zip(rows, tokens, strict=True):
        if total + t > limit:
            break
        leading.append(r)
        total += t
    out["leading_hit"] = bool({int(r["page"]) for r in leading} & evidence)
    out.update(branch_kv_bytes=branch_tokens * per_token,
               flat_kv_bytes=(head + sum(tokens[i] for i in flat)) * per_token,
               leading_kv_bytes=total * per_token, document_kv_bytes=document_tokens * per_token,
               branch_kv_share=round(branch_tokens / document_tokens, 4))
    return out


def coverage_of_summary(tree, layout, limit: int) -> float:
    """The share of the tree's top sections the `document_summary` prompt holds (the same
    call as assets/analysis.py, with the model's tokenizer)."""
    from h3.resources.navigation.prompts import summary_prompt_chunks

    top = [s for s in tree.sections if s.level == 1]
    chunks = summary_prompt_chunks(tree.sections, lambda c: len(layout.chunk_ids(c)),
                                   limit - len(layout.head_ids))
    drawn = {c.chunk_id for c in chunks}
    return round(sum(s.section_id in drawn for s in top) / max(len(top), 1), 3)


def time_to_first_token(home: Path, db, samples: list[dict]) -> list[dict]:
    """`ask --doc` timed navigated (first reach: parts' KV computed and stored; then loaded)
    and over the leading chunks, in a scratch H3_HOME (the model copied from `home`)."""
    from h3.pipelines.instance import h3_home_env
    from h3.resources.answers import ask
    from h3.resources.runtime import H3RuntimeResource

    out = []
    with tempfile.TemporaryDirectory(prefix="h3-navigate-") as scratch:
        if (home / "models").is_dir():  # a copy: H3_HOME refuses links out of itself
            shutil.copytree(home / "models", Path(scratch) / "models")
        with h3_home_env(Path(scratch)):
            runtime = H3RuntimeResource().get_runtime
            for q in samples:
                row = {"file": q["file"], "question": q["question"][:90]}
                for name, navigate in (("navigated_first", True), ("navigated_stored", True),
                                       ("leading_chunks", False)):
                    a = ask(q["question"], db, doc_id=q["doc_id"], runtime=runtime,
                            max_new_tokens=8, navigate=navigate)
                    s = a.stats
                    row[name] = {"ttft_s": s.get("ttft_s"), "prompt_tokens": s.get("prompt_tokens"),
                                 "kv_bytes_loaded": s.get("kv_bytes_loaded",
                                                          s.get("kv_tokens_loaded_cold", 0)
                                                          * runtime().bytes_per_token),
                                 "computed_tokens": s.get("prefill_tokens_computed")}
                out.append(row)
    return out


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    if not home or not (Path(home) / "lancedb").exists():
        raise FileNotFoundError("--home H3_HOME holding the ingested development filings")
    from h3.pipelines.instance import h3_home_env
    from h3.resources.models.embedder import get_embedder
    from h3.resources.navigation import document_tree
    from h3.resources.store import open_store

    corpus = corpus_dir()
    questions = _jsonl(corpus / "questions.jsonl")
    split = halves([p.name for f in (corpus / "pdfs", corpus / "unlabelled")
                    for p in f.glob("*.pdf")])
    with h3_home_env(Path(home)):
        db = open_store()
        stored = {Path(r["source"]).name: r["doc_id"]
                  for r in db.rows("documents", "status = 'ok'", ["source", "doc_id"])}
        questions = [{**q, "doc_id": stored[q["file"]]} for q in questions if q["file"] in stored]
        if not questions:
            raise FileNotFoundError(f"{home}: none of the labelled filings is stored yet")
        embed = get_embedder().encode
        layout, per_token, limit = _model_tokens()
        trees, cache, rows, coverage = {}, {}, [], []
        t0 = time.perf_counter()
        for q in questions:
            if q["doc_id"] not in trees:
                trees[q["doc_id"]] = document_tree(db, q["doc_id"])
                tree = trees[q["doc_id"]]
                coverage.append({"file": q["file"], "stored_tree": tree.stored,
                                 "top_sections": sum(s.level == 1 for s in tree.sections),
                                 "parts": sum(s.level == 2 for s in tree.sections),
                                 "origin": tree.sections[0].origin,
                                 "summary_section_coverage": coverage_of_summary(
                                     tree, layout, limit)})
            rows.append(measure(db, trees[q["doc_id"]], q, embed, layout, per_token, limit,
                                cache))
        seconds = time.perf_counter() - t0
        ttft: list[dict] = []
        if not quick:
            sample = []
            for half in ("tune", "check"):
                sample += [q for q in questions
                           if half_of(q["file"], split) == half][:SAMPLE_TTFT]
            ttft = time_to_first_token(Path(home), db, sample)
    return {
        "home": str(home), "ingestion": {"reused_home": True},  # --home is only read
        "filings_stored": len(stored), "questions": len(rows),
        "bytes_per_token": per_token, "model_context_tokens": limit,
        "navigation": by_half(rows, split, score),
        "summary_coverage": by_half(coverage, split, lambda cs: {
            "filings": len(cs),
            "section_coverage_mean": _mean([c["summary_section_coverage"] for c in cs]),
            "section_coverage_min": min((c["summary_section_coverage"] for c in cs),
                                        default=None)}),
        "ttft_sample": ttft, "ttft_note": (f"{SAMPLE_TTFT} question(s) per half with the bundled "
                                           "model (8 new tokens); none with --quick"),
        "seconds": round(seconds, 1), "rows": rows, "filings": coverage,
    }
