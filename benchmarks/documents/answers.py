"""`h3 bench --scenario answers --home H3_HOME`: grounded `h3 ask` on the development filings.

For each labelled question (the store must hold the development filings: `h3 index-build` of
financebench-dev/pdfs and unlabelled, then `--home` that H3_HOME):
- whether recall reached an evidence page (the labelled file and page among the hits),
- whether the extractive answer quotes the labelled value (a figure equal to it at the label's
  precision, read in units, thousands or millions), or quotes a table row / sentence with a figure
  from an evidence page (the line items the value is computed from: a weaker check, since the
  labels do not list those items),
- the model's answers: how many pass the grounding check, and how many state a figure or name
  absent from the evidence yet are shown (must be 0),
- refusals: questions about companies the corpus lacks (the labelled questions with the company
  swapped for one of ABSENT_COMPANIES) must all be refused with a reason,
- seconds per `h3 ask` and `h3 recall` from the shell: the first call of a fresh process (cold)
  and the ones after it in the same process (warm, `--queries-file`).
Every figure is reported for the tune and the check half (benchmarks/documents/split.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.documents.filings import _jsonl, by_half, corpus_dir, page_rank
from benchmarks.documents.split import halves

# Well-known issuers with no filing in the development corpus (checked against profiles.jsonl
# at run time: one that is there is skipped, so the refusal figure stays honest).
ABSENT_COMPANIES = ("Tesla", "Toyota", "Nestle", "Samsung Electronics", "Siemens",
                    "Unilever", "Volkswagen", "Alibaba", "Shell", "Novartis")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def label_values(answer: str) -> list[tuple[float, int]]:
    """The figures of a labelled answer with their decimals: "$1577.00" -> [(1577.0, 2)]."""
    out = []
    for m in _NUMBER.finditer(answer):
        text = m.group(0).replace(",", "")
        decimals = len(text.split(".", 1)[1]) if "." in text else 0
        out.append((float(text), decimals))
    return out


def quotes_value(quotes: list[dict], answer: str) -> bool:
    """A quoted figure equals a labelled one at the label's precision, in units, thousands or
    millions (statements report in thousands or millions; labels often in billions)."""
    wanted = label_values(answer)
    if not wanted:
        return False
    for q in quotes:
        for m in _NUMBER.finditer(q["text"]):
            figure = float(m.group(0).replace(",", ""))
            for value, decimals in wanted:
                if any(round(figure * scale, decimals) == round(value, decimals)
                       for scale in (1, 1e-3, 1e-6, 1e3)):
                    return True
    return False


def quotes_evidence_page(quotes: list[dict], file: str, pages: list[int]) -> bool:
    """A quote with a figure from one of the labelled evidence pages of the labelled file."""
    return any(Path(q["source"] or "").name == file and q["page"] in pages
               and _NUMBER.search(q["text"]) for q in quotes)


def _share(rows: list[dict], key: str) -> float | None:
    return round(sum(bool(r[key]) for r in rows) / len(rows), 3) if rows else None


def score(rows: list[dict]) -> dict:
    reached = [r for r in rows if r["evidence_recalled"]]
    model = [r for r in rows if r["model_checked"]]
    return {
        "questions": len(rows),
        "evidence_recalled": _share(rows, "evidence_recalled"),
        "refused": sum(r["refused"] for r in rows),
        # the target: over the questions whose evidence page was recalled
        "value_or_inputs_quoted_when_recalled": _share(reached, "value_or_inputs"),
        "value_quoted_when_recalled": _share(reached, "value_quoted"),
        "value_or_inputs_quoted": _share(rows, "value_or_inputs"),
        "model_answers": len(model),
        "model_grounded": _share(model, "model_grounded"),
        "shown_ungrounded": sum(r["shown_ungrounded"] for r in rows),
    }


def swap_company(question: str, company: str, other: str) -> str:
    """The question about `other` instead of `company`. The company's other name in the
    question goes too ("Block (formerly known as Square)" -> "Tesla", not "Tesla (formerly
    known as Square)"): that question says it is about the stored company under a new name,
    and `h3 ask` answers it from that company's filings with a note, as it should."""
    swapped = re.sub(re.escape(company), other, question, flags=re.IGNORECASE)
    return re.sub(r"\s*\((?:formerly|previously|now)\b[^)]*\)", "", swapped, flags=re.I)


def shell_seconds(home: Path, questions: list[str], model: bool) -> dict:
    """`h3 ask` and `h3 recall` timed from the shell: cold = a fresh process with one question,
    warm = seconds per question after the first in one process (`--queries-file`)."""
    env = {**os.environ, "H3_HOME": str(home)}
    h3 = [sys.executable, "-m", "h3.pipelines.cli.main"]
    extra = [] if model else ["--no-model"]
    out = {}
    for command in ("ask", "recall"):
        flags = extra if command == "ask" else []
        t0 = time.perf_counter()
        subprocess.run([*h3, command, questions[0], "--json", *flags], env=env, check=True,
                       capture_output=True)
        cold = time.perf_counter() - t0
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(questions))
        t0 = time.perf_counter()
        subprocess.run([*h3, command, "--queries-file", f.name, "--json", *flags], env=env,
                       check=True, capture_output=True)
        batch = time.perf_counter() - t0
        Path(f.name).unlink()
        out[command] = {"cold_s": round(cold, 2),
                        "warm_per_question_s": round(max(batch - cold, 0) / max(len(questions) - 1, 1), 2),
                        "questions": len(questions)}
    return out


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    if not home or not (Path(home) / "lancedb").exists():
        raise FileNotFoundError("--home H3_HOME holding the ingested development filings "
                                "(h3 index-build of financebench-dev/pdfs and unlabelled)")
    from h3.pipelines.instance import h3_home_env
    from h3.resources.answers import ask
    from h3.resources.runtime import H3RuntimeResource
    from h3.resources.store import open_store

    corpus = corpus_dir()
    questions = _jsonl(corpus / "questions.jsonl")
    issuers = " ".join(p["issuer"].lower() for p in _jsonl(corpus / "profiles.jsonl"))
    absent = [c for c in ABSENT_COMPANIES if c.lower().split()[0] not in issuers]
    split = halves([p.name for f in (corpus / "pdfs", corpus / "unlabelled") for p in f.glob("*.pdf")])
    if quick:
        questions = questions[::6]
    with h3_home_env(Path(home)):
        db = open_store()
        # a store still being built (or a partial one) answers the questions of its filings
        stored = {Path(r["source"]).name for r in db.rows("documents", "status = 'ok'",
                                                          ["source"])}
        skipped = [q["file"] for q in questions if q["file"] not in stored]
        questions = [q for q in questions if q["file"] in stored]
        if not questions:
            raise FileNotFoundError(f"{home}: none of the labelled filings is stored yet")
        runtime = H3RuntimeResource().get_runtime if not quick else None
        rows, refusals = [], []
        for i, q in enumerate(questions):
            t0 = time.perf_counter()
            a = ask(q["question"], db, k=5, runtime=runtime)
            seconds = time.perf_counter() - t0
            value = quotes_value(a.quotes, q["answer"])
            g = a.grounding
            rows.append({
                "file": q["file"], "question": q["question"][:100], "label": q["answer"][:80],
                "evidence_recalled": page_rank(a.evidence, q["file"], q["pages"]) is not None,
                "refused": a.refused, "reason": a.reason,
                "value_quoted": value,
                "value_or_inputs": value or quotes_evidence_page(a.quotes, q["file"], q["pages"]),
                "answer": a.text[:160],
                "model_checked": bool(g.get("checked")),
                "model_grounded": bool(g.get("grounded")),
                "model_text": (g.get("model_text") or "")[:160],
                "unsupported": g.get("unsupported_figures", []) + g.get("unsupported_names", []),
                "shown_ungrounded": a.generated is not None and not g.get("grounded"),
                "seconds": round(seconds, 2),
            })
            other = absent[i % len(absent)]
            swapped = swap_company(q["question"], q["company"], other)
            if swapped != q["question"]:
                r = ask(swapped, db, k=5, runtime=None)
                refusals.append({"file": q["file"], "company": other, "refused": r.refused,
                                 "reason": r.reason, "question": swapped[:100]})
        shell = shell_seconds(Path(home), [q["question"] for q in questions[:4]],
                              model=not quick)
    return {
        "home": str(home), "model": not quick,
        "filings_stored": len(stored), "questions_skipped_not_stored": len(skipped),
        "answers": by_half(rows, split, score),
        "absent_company_refusals": by_half(refusals, split, lambda rs: {
            "questions": len(rs), "refused": _share(rs, "refused"),
            "with_reason": _share([r for r in rs if r["refused"]], "reason")}),
        "shell_seconds": shell,
        "rows": rows, "refusal_rows": refusals,
    }
