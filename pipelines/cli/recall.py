"""`h3 recall QUERY [...] [--queries-file F] [--k 5] [--mode auto|text|structure|relation|documents]`."""

from __future__ import annotations

import argparse
from pathlib import Path

from h3.pipelines.cli.annotate import is_weak, notes_of, snippet, table_lines, weak_line
from h3.pipelines.cli.output import CliError, emit
from h3.pipelines.cli.queries_file import read_queries


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("recall", help="intent-driven recall over the document store")
    p.add_argument("queries", nargs="*", metavar="QUERY")
    p.add_argument("--queries-file", help="one query a line, JSONL objects with a 'query' field, or a JSON array")
    p.add_argument("--k", type=int, default=5, help="hits per query")
    p.add_argument("--mode", default="auto", choices=["auto", "text", "structure", "relation", "documents"],
                   help="documents: the documents ranked for the query (issuer, form, period)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def _human(results: list[dict]) -> str:
    lines = []
    for r in results:
        lines.append(f"> {r['query']}   [{', '.join(r['intent'])}; {r['latency_ms']} ms]")
        for i, h in enumerate(r["hits"], 1):
            box = ", ".join(f"{v:.0f}" for v in h["bbox"])
            head = (f"  {i}. {Path(h['source']).name} p.{h['page']} [{box}] {h['kind']} "
                    f"({h['score']:.3f}):")
            table = table_lines(h["text"], r["query"]) if h["kind"] == "table" else None
            if table:  # rows on their own lines, columns aligned (--json keeps the raw text)
                lines += [head] + [f"       {row}" for row in table]
            else:
                lines.append(f"{head} {snippet(h['text'], r['query'])}")
        if not r["hits"]:
            lines.append("  (no hits)")
        lines += [f"  note: {n}" for n in notes_of(r)] + list(filter(None, [weak_line(r["hits"])]))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from h3.resources.recall import recall
    from h3.resources.store import open_store

    queries = list(args.queries) + (read_queries(args.queries_file) if args.queries_file else [])
    if not queries:
        raise CliError("give at least one QUERY or --queries-file")
    if args.k < 1:
        raise CliError(f"--k must be >= 1, got {args.k}")
    store = open_store()
    if store.count_rows("chunks") == 0:
        raise CliError("the document store is empty: run `h3 index-build --path DIR` first")
    try:
        results = recall(store, queries, k=args.k, mode=args.mode)
    except ValueError as exc:
        raise CliError(str(exc)) from exc
    for r in results:  # the mark the text output shows, for scripts too
        r["weak_match"] = is_weak(r["hits"])
    emit(results, args.json, human=_human(results))
    return 0
