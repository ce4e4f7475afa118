"""`h3 bench --scenario long_document --home H3_HOME`: does a 500-page filing answer within the
same hot and warm budgets as a 20-page one (H⁴ navigation, `h3 ask --doc`)?

Two PDFs are cut from real development filings (benchmarks/documents/split.py's files, read in
place) into a scratch H3_HOME (the --home store is only read, for its converted model):
- `long`: a labelled question's own filing, then the other labelled filings in name order,
  until LONG_PAGES pages (a 500-page "filing" whose sections come from several real ones);
- `short`: SHORT_PAGES pages of the same filing around the question's evidence page.
Both are ingested with `h3 index-build`'s code path, then the same question is asked with `--doc`
on each, twice (first reach: the branch's parts' KV is computed and stored; then it is loaded
from the cold tier). Reported per document and ask: the document's tokens and KV (estimated: it
is never prefilled whole), the branch's KV loaded, the hot tier's peak against its budget
(`runtime.hbm_size_gb`), the warm bytes the request's tiers and the corpus cache hold against
`runtime.hbf_size_gb`, the prompt's tokens, time to first token, and whether the branch holds
the evidence page. The shipped h3_config.yaml throughout.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.documents.filings import _jsonl, corpus_dir

LONG_PAGES = 500
SHORT_PAGES = 20


def _question(corpus: Path) -> dict:
    """The first labelled question (file order) with one evidence page, and its filing."""
    for q in sorted(_jsonl(corpus / "questions.jsonl"), key=lambda q: (q["file"], q["question"])):
        if len(q["pages"]) == 1 and (corpus / "pdfs" / q["file"]).exists():
            return q
    raise FileNotFoundError(f"{corpus}: no labelled question with one evidence page")


def build_pdfs(corpus: Path, question: dict, folder: Path) -> dict[str, Path]:
    """`long.pdf` and `short.pdf` (see the module's docstring) under `folder`."""
    import pymupdf

    folder.mkdir(parents=True, exist_ok=True)
    own = corpus / "pdfs" / question["file"]
    others = sorted(p for p in (corpus / "pdfs").glob("*.pdf") if p != own)
    long_doc = pymupdf.open()
    for path in [own, *others]:
        with pymupdf.open(path) as src:
            take = min(src.page_count, LONG_PAGES - long_doc.page_count)
            long_doc.insert_pdf(src, from_page=0, to_page=take - 1)
        if long_doc.page_count >= LONG_PAGES:
            break
    long_doc.save(folder / "long.pdf")
    evidence = question["pages"][0]  # 1-based, as the labels give it
    with pymupdf.open(own) as src:
        first = max(0, min(evidence - 1 - SHORT_PAGES // 4, src.page_count - SHORT_PAGES))
        short_doc = pymupdf.open()
        short_doc.insert_pdf(src, from_page=first, to_page=first + SHORT_PAGES - 1)
    short_doc.save(folder / "short.pdf")
    return {"long": folder / "long.pdf", "short": folder / "short.pdf",
            "short_first_page": first + 1, "long_pages": long_doc.page_count}


def _ask_row(question: str, db, doc_id: str, runtime, evidence_page: int) -> dict:
    from h3.resources.answers import ask

    a = ask(question, db, doc_id=doc_id, runtime=runtime, max_new_tokens=16)
    s, nav = a.stats, a.stats.get("navigation", {})
    rt = runtime()
    corpus = rt.store.cache.stats() if rt.store.cache is not None else {}
    request_warm = rt.engine.cache.ctx.warm.reserved_bytes if rt.engine and rt.engine.cache else 0
    pages = {p for sec in nav.get("sections", [])
             for p in range(sec["page_start"], sec["page_end"] + 1)}
    return {"ttft_s": s.get("ttft_s"), "prompt_tokens": s.get("prompt_tokens"),
            "branch_kv": sorted(set(nav.get("branch_kv", {}).values())),
            "kv_bytes_loaded": nav.get("kv_bytes_loaded"),
            "kv_computed_tokens": nav.get("kv_computed_tokens"),
            "document_tokens": nav.get("document_tokens"),
            "document_kv_bytes_estimate": nav.get("document_kv_bytes_estimate"),
            "hot_peak_bytes": s.get("hot_peak_bytes"), "hot_budget_bytes": s.get("hot_budget_bytes"),
            "request_warm_bytes": request_warm,
            "corpus_warm_bytes": corpus.get("warm_bytes"), "corpus_hot_bytes": corpus.get("hot_bytes"),
            "warm_budget_bytes": corpus.get("warm_budget"),
            "branch_holds_evidence": evidence_page in pages,
            "answer_pages": sorted({q["page"] for q in a.quotes})}


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    from h3.pipelines.cli.index_build import ingest
    from h3.pipelines.instance import h3_home_env
    from h3.resources.runtime import H3RuntimeResource
    from h3.resources.settings import load_config
    from h3.resources.store import open_store

    corpus = corpus_dir()
    question = _question(corpus)
    out: dict = {"question": question["question"], "file": question["file"],
                 "evidence_page": question["pages"][0], "config": {
                     "hbm_size_gb": load_config().runtime.runtime.hbm_size_gb,
                     "hbf_size_gb": load_config().runtime.runtime.hbf_size_gb,
                     **load_config().navigation.model_dump()}}
    with tempfile.TemporaryDirectory(prefix="h3-long-") as scratch:
        work = Path(scratch)
        pdfs = build_pdfs(corpus, question, work / "pdfs")
        if home and (Path(home) / "models").is_dir():  # the converted model, not converted again
            shutil.copytree(Path(home) / "models", work / "h3" / "models")
        with h3_home_env(work / "h3"):
            t0 = time.perf_counter()
            report = ingest([str(work / "pdfs")])
            out["ingest_s"] = round(time.perf_counter() - t0, 1)
            if report["failed"]:
                raise RuntimeError(f"long_document: ingestion failed: {report['documents']}")
            db = open_store()
            ids = {Path(r["source"]).stem: r["doc_id"]
                   for r in db.rows("documents", "status = 'ok'", ["source", "doc_id"])}
            runtime = H3RuntimeResource().get_runtime
            evidence = {"long": question["pages"][0],
                        "short": question["pages"][0] - pdfs["short_first_page"] + 1}
            for name in ("short", "long"):
                pages = pdfs["long_pages"] if name == "long" else SHORT_PAGES
                out[name] = {"pages": pages, "evidence_page": evidence[name]}
                for ask_name in ("first", "again"):
                    out[name][ask_name] = _ask_row(question["question"], db, ids[name], runtime,
                                                   evidence[name])
    out["within_budgets"] = all(
        r["hot_peak_bytes"] <= r["hot_budget_bytes"]
        and r["request_warm_bytes"] + (r["corpus_warm_bytes"] or 0) <= (r["warm_budget_bytes"] or 0)
        for name in ("short", "long") for r in (out[name]["first"], out[name]["again"]))
    long_kv, short_kv = out["long"]["again"]["kv_bytes_loaded"], out["short"]["again"]["kv_bytes_loaded"]
    out["branch_kv_ratio_long_to_short"] = round(long_kv / short_kv, 3) if short_kv else None
    return out
