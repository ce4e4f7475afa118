"""Offline officer-relation measure on the development set (issue 35): no store, no Dagster.

For each labelled "who is the CEO / CFO of X" question (the corpus's `relations.jsonl` plus
`benchmarks/documents/labels/relations.jsonl`), `resources.nlp.roles.extract_roles` runs over the
text of the labelled pages only, as the knowledge-graph stage would see them: one `RoleUnit`
per PyMuPDF text block in reading order, its lines kept (the `layout` stage stores those blocks
as regions and `assets/entities.role_units` hands them over), with the issuer read from the
cover by `resources.nlp.issuer.profile_pdf`. A question counts as answered when an edge of the
asked relation (ceo_of / cfo_of) names the labelled person; a wrong edge is that relation given
to somebody else on those pages (a director who runs another company, a former officer, a
business-unit CEO). Figures are split into the tune / check halves of benchmarks/documents/split.py.

    .venv/bin/python -m benchmarks.documents.roles_offline [--roles path/to/other/roles.py]
        [--timing pdfs/NIKE_2023_10K.pdf]

`--roles` measures another implementation of the module (e.g. a copy of the previous one) on
the same labels, for a before/after table; `--timing` also times extract_roles over every page of
a filing (median of three runs, after one call that loads the NER model).

Issue 35 (item 5), "before" = the module as it was (fixed-word titles, ASCII names), "after" =
the title model and Unicode names: answered tune 16/19 -> 19/19, check 18/20 -> 20/20; questions
with a wrong holder 0 -> 0 (tune), 2 -> 0 (check); the 12 shared labels were 12/12 both times.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.documents.split import HALVES, company_key, halves

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpora" / "financebench-dev"
LABELS = Path(__file__).resolve().parent / "labels" / "relations.jsonl"
_SUFFIXES = {"jr", "sr", "ii", "iii", "iv"}


def corpus_dir() -> Path:
    """The development set (`H3_FILINGS_CORPUS` or ../shared/corpora/financebench-dev)."""
    return Path(os.environ.get("H3_FILINGS_CORPUS") or CORPUS)


def load_module(path: str | None) -> ModuleType:
    """The roles module to measure: the project's, or the file at `path`."""
    if not path:
        import h3.resources.nlp.roles as roles

        return roles
    spec = importlib.util.spec_from_file_location("roles_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def labelled_relations(corpus: Path | None = None) -> list[dict]:
    """The shared labels (their `file` is a bare name in pdfs/) and ours (`file_path` relative
    to the corpus), each with `file_path` and `source` ("shared" / "new")."""
    corpus = corpus or corpus_dir()
    rows = []
    for source, path in (("shared", corpus / "relations.jsonl"), ("new", LABELS)):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                row.setdefault("file_path", row["file"] if "/" in row["file"]
                               else f"pdfs/{row['file']}")
                rows.append({**row, "source": source})
    return rows


def asked_relation(question: str) -> str:
    """ceo_of or cfo_of, from the question's words."""
    q = question.lower()
    return "cfo_of" if re.search(r"\bcfo\b|chief financial", q) else "ceo_of"


def _name_key(name: str) -> tuple[str, ...]:
    """Words of a person's name without initials, suffixes, accents or case: "John J. Doe II"
    and "JOHN DOE" share one key."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    words = re.findall(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", text)
    return tuple(w for w in words if len(w) > 1 and w not in _SUFFIXES)


def same_person(found: str, answer: str) -> bool:
    """Same first and last name (initials, suffixes, accents and case aside)."""
    a, f = _name_key(answer), _name_key(found)
    return bool(a) and bool(f) and a[0] == f[0] and a[-1] == f[-1]


def page_units(module: ModuleType, doc: Any, doc_id: str, pages: list[int]) -> list:
    """RoleUnits of the given 1-based pages: PyMuPDF's text blocks, lines joined by newlines
    and spans of a line by nothing, as assets/layout.py stores regions."""
    units = []
    for number in pages:
        if not 1 <= number <= doc.page_count:
            continue
        for block in doc[number - 1].get_text("dict")["blocks"]:
            if block.get("type") != 0:
                continue
            lines = ["".join(s.get("text", "") for s in line.get("spans", [])).strip()
                     for line in block.get("lines", [])]
            text = "\n".join(ln for ln in lines if ln)
            if text.strip():
                units.append(module.RoleUnit(doc_id, number, tuple(block["bbox"]), text))
    return units


def measure(module: ModuleType, corpus: Path | None = None) -> dict:
    """Answered / wrong per half and per question (module docstring)."""
    import pymupdf

    corpus = corpus or corpus_dir()
    rows = labelled_relations(corpus)
    files = [f"{d}/{p.name}" for d in ("pdfs", "unlabelled") for p in (corpus / d).glob("*.pdf")]
    split = halves(files)
    per_question, seconds = [], 0.0
    module.extract_roles([module.RoleUnit("warm-up", 1, (0.0, 0.0, 1.0, 1.0),
                                          "“Fine,” said Omar al-Hassan, Chief Executive Officer.")],
                         "Warm-Up Corp.")  # loads what it loads (a model) before the clock
    for row in rows:
        path = corpus / row["file_path"]
        issuer, aliases, error = _issuer(path)
        relation = asked_relation(row["question"])
        with pymupdf.open(path) as doc:
            units = page_units(module, doc, row["file_path"], row["pages"])
        t0 = time.perf_counter()
        edges = module.extract_roles(units, issuer, aliases)
        seconds += time.perf_counter() - t0
        holders = sorted({e.head_text for e in edges if e.relation == relation})
        right = [h for h in holders if same_person(h, row["answer"])]
        per_question.append({
            "half": split[company_key(row["file_path"])], "source": row["source"],
            "file": row["file_path"], "relation": relation, "answer": row["answer"],
            "issuer": issuer, "issuer_error": error, "answered": bool(right),
            "wrong": [h for h in holders if h not in right]})
    out: dict = {"questions": len(per_question), "extract_seconds": round(seconds, 3)}
    for half in HALVES + ("all",):
        qs = [q for q in per_question if half in ("all", q["half"])]
        out[half] = {"questions": len(qs), "answered": sum(q["answered"] for q in qs),
                     "with_wrong_holder": sum(bool(q["wrong"]) for q in qs),
                     "no_issuer": sum(not q["issuer"] for q in qs),
                     "new_labels": sum(q["source"] == "new" for q in qs)}
    out["per_question"] = per_question
    return out


def _issuer(path: Path) -> tuple[str, tuple[str, ...], str]:
    """(issuer, aliases, error) from the cover: a profiling failure is reported, not fatal
    (extract_roles then has no issuer and finds nothing, as in the pipeline)."""
    from h3.resources.nlp.issuer import profile_pdf

    try:
        profile = profile_pdf(str(path))
    except Exception as exc:  # noqa: BLE001 - the profiler is measured elsewhere
        return "", (), f"{type(exc).__name__}: {exc}"
    return profile.issuer, tuple(profile.aliases), ""


def time_document(module: ModuleType, path: Path, repeats: int = 3) -> dict:
    """Seconds of extract_roles over every page of one filing (median of `repeats`)."""
    import pymupdf

    issuer, aliases, _ = _issuer(path)
    with pymupdf.open(path) as doc:
        units = page_units(module, doc, path.name, list(range(1, doc.page_count + 1)))
        pages = doc.page_count
    module.extract_roles(units[:50], issuer, aliases)  # loads what it loads (a model) first
    times, edges = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        edges = module.extract_roles(units, issuer, aliases)
        times.append(time.perf_counter() - t0)
    return {"file": path.name, "pages": pages, "units": len(units),
            "seconds": round(statistics.median(times), 3), "edges": len(edges),
            "by_relation": {r: sum(e.relation == r for e in edges)
                            for r in sorted({e.relation for e in edges})}}


def _table(result: dict) -> str:
    lines = ["| half | questions | answered | with a wrong holder | no issuer | new labels |",
             "|---|---|---|---|---|---|"]
    for half in HALVES + ("all",):
        r = result[half]
        lines.append(f"| {half} | {r['questions']} | {r['answered']} | "
                     f"{r['with_wrong_holder']} | {r['no_issuer']} | {r['new_labels']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None,
         printer: Callable[[str], None] = print) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--roles", help="measure this roles.py instead of the project's")
    parser.add_argument("--timing", action="append", default=[],
                        help="also time extract_roles over every page of this corpus PDF")
    parser.add_argument("--verbose", action="store_true", help="one line per question")
    args = parser.parse_args(argv)
    module = load_module(args.roles)
    result = measure(module)
    if args.verbose:
        for q in result["per_question"]:
            printer(f"{q['half']:5} {'ok ' if q['answered'] else 'MISS'} {q['relation']} "
                    f"{q['file']} {q['answer']!r} wrong={q['wrong']} issuer={q['issuer']!r}"
                    + (f" ({q['issuer_error']})" if q["issuer_error"] else ""))
    printer(_table(result))
    printer(f"extract_roles over the labelled pages: {result['extract_seconds']} s")
    result["timing"] = [time_document(module, corpus_dir() / f) for f in args.timing]
    for t in result["timing"]:
        printer(f"timing {t['file']}: {t['pages']} pages, {t['units']} units, {t['seconds']} s, "
                f"{t['edges']} edges {t['by_relation']}")
    return result


if __name__ == "__main__":
    main()
