"""Writes docs/benchmarks.md from the current reports: `python -m benchmarks.docs_report`.

One section per benchmarks/results/<name>.json: what it measures (DESCRIPTIONS, by hand), the
`h3 bench` command that produces it (options taken from the report where it records them), when
it ran (where recorded) and a table of its headline figures, picked generically: the numbers
and yes/no fields of the report, grouped by the object that holds them, at most MAX_DEPTH
levels down. Per-item detail (each prompt, question or run) stays in the JSON, except lists
of at most SHORT_LIST objects (a variant or a length each), which are shown item by item.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
OUT = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
MAX_DEPTH = 3    # levels below a scenario's own object
MAX_ROWS = 30    # table rows per scenario
SHORT_LIST = 4   # a list of at most this many objects is shown item by item
# breakdowns that are detail rather than headline, wherever a report has them
DETAIL = {"misses", "stage_cpu_s", "stage_pages_per_s", "stage_cpu_s_per_page", "company_filings",
          "time_s_by_part_profiled"}

# What each scenario measures, one line each.
DESCRIPTIONS = {
    "navigate": "H⁴ navigation: the development questions asked with `--doc` on their own filing: "
                "branch recall at 1/3/5 parts (an evidence page inside the chosen parts) and "
                "of the shipped branch (`branch_recall_shipped`: among the passages it loads), KV "
                "loaded per question against the whole document's, beside flat recall (top 5 "
                "chunks) and the leading chunks that fit the model (`fit_chunks`, before); the "
                "document summary's section coverage; time to first token on a sample.",
    "ingest": "Ingestion speed and text recall on the docling test PDFs plus the sample corpus, "
              "57 labelled queries (tests/fixtures/recall_queries.jsonl): dense, full-text, "
              "hybrid and router variants, time per stage, SBERT precision and batch size.",
    "relation": "Relation extraction (precision/recall of labelled facts) and relation questions "
                "(answered by the first `via: relation` hit) on generated company news: the set "
                "the rules were tuned on and a held-out set.",
    "structure": "Structural recall of the docling test PDFs' tables and pictures (hit: same page, "
                 "IoU >= 0.5 with docling's box), and the time the knowledge-graph and semantic "
                 "stages add to ingestion.",
    "chinese": "Chinese and mixed documents (a generated corpus, tests/fixtures/chinese_corpus.py): "
               "recall per intent, cross-lingual recall both ways, OCR character accuracy of a "
               "scanned page; `multilingual_embedding: auto` (shipped) against `non_english`.",
    "needle": "Passkey retrieval with the default model at several lengths and depths: full "
              "attention, a sinks + window baseline and H³ at 5%, 10% and 20% hot budgets.",
    "context_scale": "Mechanics only (a tiny random Llama, no quality claim): prefill and decode at long "
             "lengths under a 5% hot budget, the rest of the KV in warm.",
    "decode": "Decode time per token: full attention, the model alone on a 24-token prompt (the "
              "floor no KV scheme goes below) and H³ at 10% and 5%; `kv_cost_removed` = "
              "(full - H³) / (full - model alone).",
    "ruler": "RULER-style tasks: the share of full attention's answers H³ keeps at 10% and 5% hot "
             "budgets, over the prompts full attention solves.",
    "passkey_api": "Passkey retrieval through the public API (`model.generate` wrapped by "
                   "`engine.wrap_forward`), against plain `model.generate`.",
    "prefill": "Prefill: time, resident KV and peak RSS of H³ (10%, 5%, and 10% with a capped warm "
               "tier that spills to cold) against full attention; a tiny model at 64K tokens.",
    "docs": "`h3 ask` over one report PDF: time to first token with the document's KV loaded from "
            "the cold tier against recomputing it, on a plain cache and on the tiered cache.",
    "code": "The same on code: source files rendered as text, questions about their calls.",
    "multihop": "Several documents prefilled separately and asked together (the first an exact "
                "prefix, the others re-positioned with a recompute at each boundary); one run "
                "with a corrupted block.",
    "trace": "The corpus KV cache over streams of questions on the development filings (zipf, "
             "sequential readings, drifting topics, a burst on one company; tune and check "
             "halves pooled, each in `halves`): AHAS, LRU, LFU and no cache on the same stream, "
             "warm budget a quarter of the streams' KV; warm/hot hit rates, bytes read from "
             "disk, prefetch precision/recall, TTFT through the `h3 ask` path; `ablation`: AHAS "
             "with one rule off; `seed_spread`: 20 streams of each kind per policy (placeholder "
             "blocks), AHAS's margin over LRU as mean, min and max.",
    "filings": "Page recall, routing and CEO/CFO questions on the development filings (companies "
               "split into a tune and a check half), with and without the routing prior and "
               "with the company taken out of the question; recall latency.",
    "filings_runtime": "Questions over real filings at 8K tokens: how closely H³ (10%, 5%) and a "
                       "sinks + window baseline (10%) follow full attention's answers "
                       "(all questions, and the tune and check halves in `halves`).",
    "filings_gate": "Decode's re-selection gate on real filings at 8K tokens: each variant "
                    "teacher-forced along full attention's answer (top-1 agreement, KL, layers "
                    "re-selecting a token): shipped, the gate before 2026-12-07, no gate; per half.",
    "filings_passkey": "Passkeys hidden in real filings' text at three lengths: retention of full "
                       "attention's finds at 20%, 10% and 5% hot budgets.",
    "profiles": "Document profiles read from each development filing's first pages: issuer, form, "
                "fiscal period, 8-K date, per half.",
    "scaleout": "The same documents ingested in process and on a dask cluster of 1, 2 and 4 "
                "workers (PostgreSQL instance), with the events and documents per second each asks "
                "of the shared services; LanceDB commits and PostgreSQL events/s from 1, 2 and 4 "
                "concurrent writers; `plan`: machines like this one the services carry.",
    "embedding_engines": "SBERT through torch and through onnxruntime: CPU time and recall.",
    "scale": "The document store at 10K, 100K and 1M chunks (the development store's real chunks "
             "repeated with new ids, copies' vectors perturbed in float32): ANN build time, "
             "bytes per chunk on disk and in memory, warm recall p50/p95 in text and auto modes "
             "and the ANN's agreement with exact search at k = 10, IVF_PQ and HNSW side by side "
             "(at 1M also IVF_PQ with Lance's own parameters, the store before issue 38).",
    "disk": "Bytes per stored page of each part of an H3_HOME (LanceDB tables one by one, token "
            "vectors, figures, staging per stage, KV, Dagster; models apart as a fixed cost) "
            "against the PDFs' own bytes.",
    "answers": "Grounded `h3 ask` on the development filings a store holds: evidence recalled, "
               "the labelled value (or the evidence page's line items) quoted, model answers "
               "passing the grounding check, refusals for absent companies, seconds per ask "
               "and recall from the shell.",
    "long_document": "A 500-page filing (a labelled question's 10-K followed by other development "
                     "filings) against 20 pages of the same 10-K around the evidence page: the "
                     "same `h3 ask --doc` question on each, the hot peak and warm bytes against "
                     "their budgets, the branch's KV loaded, prompt tokens and time to first token.",
    "ingest_floor": "`h3 index-build` against the naive floor (PyMuPDF text, the layout model on every "
                    "page, MiniLM through sentence-transformers) on the same folder of PDFs in one "
                    "run: pages/s and their ratio, wall and CPU per stage, the share of the run "
                    "both cores were busy.",
}

# Which scenarios take which `h3 bench` options (benchmarks/cli.py's help says the same).
TAKES = {"lengths": {"ruler", "decode", "passkey_api"}, "seeds": {"ruler", "passkey_api"},
         "variants": {"ruler", "decode"}, "home": {"filings", "answers", "navigate", "long_document",
                                                              "embedding_engines", "scale", "disk", "trace"},
         "path": {"ingest_floor", "scaleout"}}


def scenarios(report: dict, name: str) -> dict[str, dict]:
    """{scenario: its report}: an `h3 bench` report.json holds several, a renamed one just one."""
    return report["scenarios"] if isinstance(report.get("scenarios"), dict) else {name: report}


def _items(body: dict) -> list[dict]:
    lists = [body.get(key) for key in ("rows", "runs")]  # ("runs" is a count in some reports)
    return [r for items in lists if isinstance(items, list) for r in items if isinstance(r, dict)]


def options(name: str, body: dict) -> tuple[list[str], str]:
    """The options a report records for its scenario, and a note for what no option reproduces."""
    opts, note = [], ""
    rows = _items(body)
    if name in TAKES["lengths"]:
        lengths = body.get("lengths") or ([body["length"]] if "length" in body else
                                          sorted({r["length"] for r in rows if "length" in r}))
        if lengths:
            opts.append("--lengths " + ",".join(str(n) for n in lengths))
    if name in TAKES["seeds"]:
        seeds = body.get("seeds") or sorted({r["seed"] for r in rows if r.get("seed") is not None})
        if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
            opts.append(f"--samples {len(seeds)} --first-seed {seeds[0]}")
        elif seeds:
            note = f"seeds {', '.join(map(str, seeds))} (more than one --first-seed range)"
    if name in TAKES["variants"]:
        named = body.get("variants")  # a list of names, or else the rows' keys name them
        named = named if isinstance(named, list) else list(rows[0]) if rows else []
        tiered = [v for v in named if str(v).startswith("h3_")]
        if tiered:
            opts.append("--variants " + ",".join(tiered))
    ingestion = body.get("ingestion")
    if name in TAKES["home"] and (isinstance(ingestion, dict) and ingestion.get("reused_home")
                                  or body.get("home") or body.get("source_home")):
        opts.append("--home H3_HOME")  # (scale, disk: the home they measured)
    if name in TAKES["path"] and body.get("folder"):
        opts.append(f"--path {body['folder']}")
    return opts, note


def command(report: dict, bodies: dict[str, dict]) -> tuple[str, list[str]]:
    if report.get("command"):
        return report["command"], []
    parts, notes = ["h3 bench"], []
    for name, body in bodies.items():
        parts.append(f"--scenario {name}")
        opts, note = options(name, body)
        parts += opts
        notes += [f"{name}: {note}"] if note else []
    parts.append("--out DIR")
    if report.get("quick"):
        parts.append("--quick")
    return " ".join(parts), notes


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(round(v, 4)) if isinstance(v, float) else str(v)


def _label(key: str, item: dict) -> str:
    first = next(((k, v) for k, v in item.items() if isinstance(v, (str, int, float))), None)
    return f"{key} [{first[0]} {first[1]}]" if first else key


def figures(obj: dict, path: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """(path, "name value, ...") for each object holding numbers, in the report's order."""
    scalars = [f"{k} {_value(v)}" for k, v in obj.items()
               if isinstance(v, (bool, int, float)) and k != "quick"]
    rows = [(path or "(top level)", ", ".join(scalars))] if scalars else []
    if depth == MAX_DEPTH:
        return rows
    for key, v in obj.items():
        sub = f"{path}.{key}" if path else str(key)
        if key in DETAIL:
            continue
        if isinstance(v, dict) and not any(" " in str(k) for k in v):  # not keyed by question
            rows += figures(v, sub, depth + 1)
        elif isinstance(v, list) and 0 < len(v) <= SHORT_LIST and all(isinstance(x, dict) for x in v):
            for x in v:
                rows += figures(x, _label(sub, x), depth + 1)
    return rows


def section(path: Path) -> list[str]:
    report = json.loads(path.read_text())
    bodies = scenarios(report, path.stem)
    cmd, notes = command(report, bodies)
    lines = [f"## {path.stem}", ""]
    lines += [f"- {DESCRIPTIONS[n]}" for n in bodies if n in DESCRIPTIONS]
    lines.append(f"- Command: `{cmd}`" + ("; " + "; ".join(notes) if notes else ""))
    lines.append(f"- Ran: {report['started']}" if report.get("started") else
                 "- Ran: not recorded in the report")
    lines.append(f"- Report: [`benchmarks/results/{path.name}`](../benchmarks/results/{path.name})"
                 + (f", plot [`{path.stem}.png`](../benchmarks/results/{path.stem}.png)"
                    if path.with_suffix(".png").exists() else ""))
    if isinstance(report.get("what"), str):
        lines.append(f"- The report says: {report['what']}")
    for name, body in bodies.items():
        rows = figures(body)
        title = f"{name}: headline figures" if len(bodies) > 1 else "Headline figures"
        lines += ["", f"{title}:", "", "| where | figures |", "|---|---|"]
        lines += [f"| {where} | {text} |" for where, text in rows[:MAX_ROWS]]
        if len(rows) > MAX_ROWS:
            lines.append(f"| ... | {len(rows) - MAX_ROWS} more groups in the report |")
    return lines + [""]


def main() -> int:
    lines = ["# Benchmarks", "",
             "Generated by `python -m benchmarks.docs_report` from `benchmarks/results/*.json` "
             "(one current report per scenario; older reports are in git history). Do not edit "
             "by hand: re-run the script after a report changes.", "",
             "Reports are written by `h3 bench --scenario NAME --out DIR` from a checkout "
             "(`make bench` runs the default set into `bench-results/`); copying `DIR/report.json` "
             "to `benchmarks/results/NAME.json` makes it the current one (it records when it "
             "ran; `DIR/NAME.json` does not). The corpora are read from `../shared/corpora/` "
             "beside the checkout (docling's test PDFs; the development filings for `filings*` "
             "and `profiles`, or `H3_FILINGS_CORPUS`). The reports were measured on a 2-core "
             "CPU machine without a GPU, several beside other jobs: compare variants of one run "
             "rather than absolute times.", ""]
    for path in sorted(RESULTS.glob("*.json")):
        lines += section(path)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(lines))
    print(f"wrote {OUT} ({len(lines)} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
