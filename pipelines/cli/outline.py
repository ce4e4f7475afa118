"""`h3 outline DOC [--parts] [--json]`: a stored document's section tree.

DOC is its doc id, its partition key (`report.pdf-<doc_id>`) or its file name, as `h3 ask --doc`
takes it. Prints the top sections with their pages and tokens (`--parts`: each one's parts too,
the units `h3 ask --doc` loads) and the document's extractive summary. A document stored before
the `sections` stage has its tree built from its stored chunks (said on stderr; nothing is
written). JSON: {doc_id, source, tree: "stored" | "built from stored chunks", origin, summary,
sections: [{section_id, level, title, page_start, page_end, parent_id, chunks, tokens, origin,
summary}]}.
"""

from __future__ import annotations

import argparse

from h3.pipelines.cli.output import CliError, emit, log


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("outline", help="a stored document's sections and parts, with pages")
    p.add_argument("doc", metavar="DOC", help="doc id, partition key or file name")
    p.add_argument("--parts", action="store_true", help="list each section's parts too")
    p.add_argument("--json", action="store_true", help="JSON on stdout")


def run(args: argparse.Namespace) -> int:
    from h3.resources.navigation import document_tree
    from h3.resources.navigation.summaries import document_summary_text
    from h3.resources.store import open_store

    try:
        tree = document_tree(open_store(), args.doc)
    except LookupError as exc:
        raise CliError(str(exc)) from exc
    if tree.origin_note:
        log(f"outline: {tree.origin_note}")
    top = [s for s in tree.sections if s.level == 1]
    payload = {"doc_id": tree.doc_id, "source": tree.source,
               "tree": "stored" if tree.stored else "built from stored chunks",
               "origin": top[0].origin if top else None,
               "summary": document_summary_text(top),
               "sections": [s.to_json() for s in tree.sections
                            if args.parts or args.json or s.level == 1]}
    lines = [f"{tree.source or tree.doc_id} ({tree.doc_id}): {len(top)} sections from its "
             f"{payload['origin']}, {sum(s.level == 2 for s in tree.sections)} parts"]
    for s in tree.sections:
        if s.level == 1 or args.parts:
            indent = "  " if s.level == 1 else "      "
            lines.append(f"{indent}{s.section_id:<7} p.{s.pages:<9} {s.tokens:>6} tok  {s.title}")
    emit(payload, args.json, human="\n".join(lines))
    return 0
