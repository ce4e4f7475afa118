"""`h3 bench --scenario relation`: relation recall on labelled synthetic company news.

The articles of tests/fixtures/kg/company_news.json (the set the extraction rules were tuned
on) and company_news_heldout.json (written afterwards, never tuned on) are written as PDFs and
ingested through the real pipeline. Then:
- extraction: precision and recall of the labelled (head, relation, tail) facts among the
  `edges` table's relation edges (names compared normalised);
- questions ("which company did X acquire?", "who is the chief executive of X?"): a question
  is answered when the first `via: relation` hit of `h3 recall --mode auto` names the right
  entity; also whether any of the top-5 hits does.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.documents.fixtures import fixture_module
from benchmarks.documents.semantic_ingest import warm_all
from h3.pipelines.instance import h3_home_env

REPO = Path(__file__).resolve().parents[2]
KG = REPO / "tests" / "fixtures" / "kg"
SETS = {"tuned": KG / "company_news.json", "held_out": KG / "company_news_heldout.json"}


def _names(hit: dict) -> set[str]:
    from h3.ontology.entities import normalise_name

    return {normalise_name(e["text"]) for e in hit.get("entities") or []}


def extraction_quality(store, data: dict, doc_ids: set[str]) -> dict:
    from h3.ontology.entities import normalise_name as norm

    edges = store.rows("edges", "relation != 'mentions'",
                       ["doc_id", "relation", "head_text", "tail_text"])
    got = {(norm(e["head_text"]), e["relation"], norm(e["tail_text"]))
           for e in edges if e["doc_id"] in doc_ids}
    facts = {(norm(h), r, norm(t)) for h, r, t in data["facts"]}
    found = facts & got
    return {"facts": len(facts), "extracted": len(got),
            "recall": round(len(found) / len(facts), 3),
            "precision": round(len(found) / max(1, len(got)), 3),
            "missed": sorted(" ".join(f) for f in facts - got),
            "extra": sorted(" ".join(f) for f in got - facts)}


def answer_questions(store, ctx, questions: list[dict]) -> dict:
    from h3.ontology.entities import normalise_name
    from h3.resources.recall.router import recall

    rows = []
    t0 = time.perf_counter()
    results = recall(store, [q["q"] for q in questions], k=5, mode="auto", ctx=ctx)
    seconds = time.perf_counter() - t0
    for q, res in zip(questions, results, strict=True):
        answer = normalise_name(q["answer"])
        rel_hits = [h for h in res["hits"] if h["via"] == "relation"]
        first_ok = bool(rel_hits) and answer in _names(rel_hits[0])
        any_ok = any(answer in _names(h) for h in res["hits"])
        rows.append({"q": q["q"], "answer": q["answer"], "first_relation_hit_ok": first_ok,
                     "top5_ok": any_ok, "intent": res["intent"],
                     "first_relation_hit": rel_hits[0]["text"][:100] if rel_hits else None})
    n = len(rows)
    return {"questions": n,
            "answered_by_first_relation_hit": round(sum(r["first_relation_hit_ok"]
                                                        for r in rows) / n, 3),
            "answer_in_top5": round(sum(r["top5_ok"] for r in rows) / n, 3),
            "ms_per_query": round(seconds * 1000 / n, 1), "per_question": rows}


def run(out_dir: Path, quick: bool) -> dict:
    from h3.pipelines.cli.index_build import ingest
    from h3.resources.recall.router import make_context
    from h3.resources.store import open_store

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="h3-bench-relation-"))
    try:
        warm_all()
        write_set = fixture_module("news_corpus").write_set
        corpora = {name: write_set(path, work / "corpus" / name) for name, path in SETS.items()}
        result: dict = {}
        with h3_home_env(work / "home"):
            t0 = time.perf_counter()
            report = ingest([str(work / "corpus")])
            result["ingest_s"] = round(time.perf_counter() - t0, 2)
            result["documents_ok"] = report["ok"]
            store = open_store()
            ctx = make_context(store)
            by_name = {Path(s).stem: d for d, s in ctx.doc_sources.items()}
            for name, path in SETS.items():
                data = json.loads(path.read_text())
                doc_ids = {by_name[p.stem] for p in corpora[name] if p.stem in by_name}
                result[name] = {"extraction": extraction_quality(store, data, doc_ids),
                                "questions": answer_questions(store, ctx, data["questions"])}
        all_q = [r for name in SETS for r in result[name]["questions"]["per_question"]]
        result["answered_by_first_relation_hit"] = round(
            sum(r["first_relation_hit_ok"] for r in all_q) / len(all_q), 3)
        result["targets"] = {"relation_answer_ge_0.9": result["answered_by_first_relation_hit"]
                             >= 0.9}
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
