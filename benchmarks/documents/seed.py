"""`h3 bench --scenario docs|code|multihop`: the seed's three workloads, scaled to this machine.

Each question is answered side by side in one run by:
- `full_attention`: a full prefill on a plain DynamicCache (the reference answer);
- `full_attention_cold_reuse`: the same cache, stored document KV loaded instead of prefilled
  (shows that prefix reuse is exact: token-for-token equal answers);
- `h3_no_reuse`: the H³ engine's tiered cache (hot budget from h3_config.yaml), all computed;
- `h3_cold_reuse`: the H³ engine's tiered cache with cold document KV loaded.
Measured: time to first token, total latency, hot peak bytes, agreement with the reference
(exact match and share of leading tokens equal), and a task score against the known answer.
Document KV is prefilled once before the questions (its cost is reported as `precompute_s`).
The KV files were just written, so reads come from the OS page cache (a warm cold tier).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from benchmarks.documents import seed_corpus
from benchmarks.documents.seed_report import plot_scenario, summarise

VARIANTS = ("full_attention", "full_attention_cold_reuse", "h3_no_reuse", "h3_cold_reuse")


def _open_runtimes(kv_dir: Path):
    """(H³ tiered runtime, full-attention runtime) sharing one model and one document store."""
    import torch

    from h3.resources.runtime import H3RuntimeResource
    from h3_runtime.engine import H3Engine
    from h3_runtime.reuse.doc_kv import DocumentKV
    from h3_runtime.reuse.runtime import ReuseRuntime

    cfg = H3RuntimeResource().load_config()
    engine = H3Engine(config=cfg, cold_storage_path=kv_dir)
    engine.model.set_attn_implementation("h3")  # exact layers run plain sdpa through it
    store = DocumentKV(engine.cold, kv_dir / "docs")
    chunk = cfg.runtime.prefill_chunk_tokens
    h3 = ReuseRuntime(engine.model, engine.tokenizer, store, cache_factory=engine.new_cache,
                      cache_stats=engine.cache_stats, chunk_tokens=chunk)
    full = ReuseRuntime(engine.model, engine.tokenizer, store, chunk_tokens=chunk)  # PlainCache
    with torch.inference_mode():  # one-time kernel and allocator warm-up, outside the timings
        engine.model(input_ids=torch.tensor([[1, 2, 3, 4]], device=engine.device))
    return h3, full


def compare(h3, full, segments, max_new: int, score=None, variants=VARIANTS,
            recompute_tokens: int | None = None) -> dict:
    """Answers one prompt with every variant; the first variant's answer is the reference."""
    from benchmarks.runtime.ruler import prefix_agreement

    out: dict[str, dict] = {}
    ref: list[int] | None = None
    for name in variants:
        rt = full if name.startswith("full_attention") else h3
        ans = rt.answer(segments, max_new, reuse="cold_reuse" in name,
                        recompute_tokens=0 if name.endswith("_r0") else recompute_tokens)
        ref = ans.token_ids if ref is None else ref
        row = {k: ans.stats.get(k) for k in (
            "ttft_s", "total_s", "prompt_tokens", "prefill_tokens_computed",
            "kv_tokens_loaded_cold", "hot_peak_bytes", "hot_budget_bytes", "full_kv_bytes",
            "integrity_errors", "kv_mode")}
        row.update(answer=ans.text, exact_match=ans.token_ids == ref,
                   agreement=prefix_agreement(ans.token_ids, ref))
        if score is not None:
            row["task_score"] = score(ans.text)
        out[name] = row
        print(f"  {name}: ttft {row['ttft_s']:.3f} s, total {row['total_s']:.2f} s, "
              f"agreement {row['agreement']}", file=sys.stderr, flush=True)
    return out


def _pdf_chunks(path: Path, words_per_chunk: int = 120):
    """Page-numbered chunks of a PDF's text layer (paragraph-sized)."""
    import pymupdf

    from h3_runtime.reuse.prompt import ChunkText

    chunks = []
    with pymupdf.open(path) as doc:
        for page_no, page in enumerate(doc, 1):
            words = page.get_text().split()
            for a in range(0, len(words), words_per_chunk):
                chunks.append(ChunkText(f"report:c{len(chunks)}", page_no,
                                        " ".join(words[a:a + words_per_chunk])))
    return chunks


def _precompute(rt, doc_id: str, chunks) -> dict:
    t0 = time.perf_counter()
    meta, _ = rt.precompute(doc_id, chunks, force=True)
    print(f"  {doc_id}: {meta.tokens} tokens prefilled and stored in "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return {"doc_tokens": meta.tokens, "kv_bytes": meta.nbytes,
            "precompute_s": round(time.perf_counter() - t0, 3)}


def run_docs(out_dir: Path, quick: bool) -> dict:
    """Document understanding: summary + key facts over a long report PDF (~4K tokens)."""
    from h3.assets._facts import extract_facts

    with tempfile.TemporaryDirectory(prefix="h3-bench-docs-") as tmp:
        pdf = seed_corpus.report_pdf(Path(tmp) / "report.pdf", 250 if quick else 2950)
        chunks = _pdf_chunks(pdf)
        h3, full = _open_runtimes(Path(tmp) / "kv")
        info = _precompute(h3, "report", chunks)
        facts = extract_facts([(c.page, c.text) for c in chunks])
        questions = ["Summarise this document in three sentences.",
                     "List the key facts of this document: parties, amounts, dates and risk "
                     "clauses, with their pages."]
        results = {q: compare(h3, full, h3.document_segments("report", chunks, q),
                              12 if quick else 16,
                              score=lambda a: float("48.5" in a or "Acme" in a))
                   for q in questions}
    report = {**info, "facts_extracted": len(facts),
              "facts_with_page": sum(f.page >= 1 for f in facts), "questions": results}
    report.update(summarise(results))
    plot_scenario("docs", report, out_dir)
    return report


def run_code(out_dir: Path, quick: bool) -> dict:
    """Code analysis: "which external APIs does function X call?" over a code base as text."""
    from h3_runtime.reuse.prompt import ChunkText

    code, truth = seed_corpus.code_base(4 if quick else 16)
    files = code.split("# file: ")[1:]
    chunks = [ChunkText(f"code:c{i}", i + 1, "# file: " + f) for i, f in enumerate(files)]
    with tempfile.TemporaryDirectory(prefix="h3-bench-code-") as tmp:
        h3, full = _open_runtimes(Path(tmp) / "kv")
        info = _precompute(h3, "code", chunks)
        results = {}
        for name in list(truth)[: 1 if quick else 3]:
            apis = truth[name]
            q = f"Which external APIs does the function {name} call?"
            results[q] = compare(h3, full, h3.document_segments("code", chunks, q),
                                 12 if quick else 32,
                                 score=lambda a, apis=apis: sum(x in a for x in apis) / len(apis))
    report = {**info, "functions": len(truth), "questions": results}
    report.update(summarise(results))
    plot_scenario("code", report, out_dir)
    return report


def run_multihop(out_dir: Path, quick: bool) -> dict:
    """Multi-hop QA over 3-5 related documents, each prefilled separately: the first document is
    an exact prefix, the others are re-positioned (RoPE) with selective recompute."""
    from h3_runtime.reuse.prompt import ChunkText

    docs, qa = seed_corpus.related_documents(3 if quick else 4, 4 if quick else 12)
    variants = (*VARIANTS, "full_attention_cold_reuse_r0", "h3_cold_reuse_r0")
    with tempfile.TemporaryDirectory(prefix="h3-bench-multihop-") as tmp:
        h3, full = _open_runtimes(Path(tmp) / "kv")
        per_doc = {f"rel{i}": [ChunkText(f"rel{i}:c0", 1, d)] for i, d in enumerate(docs)}
        infos = [_precompute(h3, d, c) for d, c in per_doc.items()]
        evidence = [(d, c) for d, cs in per_doc.items() for c in cs]
        results = {item["question"]: compare(
            h3, full, h3.evidence_segments(evidence, item["question"]), 12 if quick else 24,
            score=lambda a, ans=item["answer"]: float(ans.split()[-1] in a), variants=variants)
            for item in qa[: 1 if quick else 2]}
        # Reliability: one flipped byte in a stored document is detected and recomputed.
        index = h3.store.find("rel1", h3.model_key)
        path = h3.store.blocks.path_for(index.block_keys()[len(index.blocks) // 2])
        raw = bytearray(path.read_bytes())
        raw[len(raw) // 2] ^= 0x01
        path.write_bytes(bytes(raw))
        q0 = qa[0]["question"]
        corrupted = compare(h3, full, h3.evidence_segments(evidence, q0), 12 if quick else 24,
                            variants=("full_attention", "full_attention_cold_reuse"))
    report = {"documents": len(docs), "doc_tokens": sum(i["doc_tokens"] for i in infos),
              "precompute_s": round(sum(i["precompute_s"] for i in infos), 3),
              "questions": results,
              "corruption": {k: corrupted["full_attention_cold_reuse"][k] for k in (
                  "integrity_errors", "agreement", "prefill_tokens_computed",
                  "kv_tokens_loaded_cold")}}
    report.update(summarise(results))
    plot_scenario("multihop", report, out_dir)
    return report
