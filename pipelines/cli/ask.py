"""`h3 ask QUESTION [...] [--queries-file F] [--doc DOC_ID] [--no-model] [--no-cold-reuse]
[--max-new-tokens N] [--k K] [--json]`.

Answers with quotes: the sentences and table rows of the recalled evidence (or of one whole
document, `--doc`) that answer the question, with file and page. The H³ runtime's model writes
its own answer beside them, shown only when every figure and name it states is in the evidence
(`--no-model`: quotes only, nothing loads). A question about a company the store lacks, or a
weak match, is refused with the reason. Many questions (`--queries-file`) share one loaded model.
Stored document KV (stage `kv`) is loaded instead of prefilled; a `--doc` document without it is
prefilled and stored first, and its stats say so. JSON fields: see INTERFACES.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from h3.pipelines.cli.output import CliError, emit, log
from h3.pipelines.cli.queries_file import read_queries


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer a question with quotes from the store (and the model)")
    p.add_argument("questions", nargs="*", metavar="QUESTION", help="the question(s)")
    p.add_argument("--queries-file", help="questions, one a line (or JSONL / a JSON array, as "
                                          "`h3 recall` reads): the model loads once for all")
    p.add_argument("--doc", metavar="DOC", help="answer over this document (doc id, partition key "
                                             "or file name): from the sections it navigates to")
    p.add_argument("--no-model", action="store_true",
                   help="quotes only: do not load the model (fast)")
    p.add_argument("--no-cold-reuse", action="store_true",
                   help="recompute all KV instead of loading precomputed cold KV")
    p.add_argument("--max-new-tokens", type=int, default=64, help="model answer length limit")
    p.add_argument("--k", type=int, default=5, help="evidence chunks to recall (without --doc)")
    p.add_argument("--json", action="store_true", help="JSON on stdout (a list for several)")


def run(args: argparse.Namespace) -> int:
    questions = list(args.questions) + (read_queries(args.queries_file) if args.queries_file else [])
    if not questions or not all(q.strip() for q in questions):
        raise CliError("QUESTION is empty" if questions else "give a QUESTION or --queries-file")
    if args.max_new_tokens < 1 or args.k < 1:
        raise CliError("--max-new-tokens and --k must be >= 1")
    from h3.resources.answers import ask
    from h3.resources.runtime import H3RuntimeResource
    from h3.resources.store import open_store

    db = open_store()
    opened = []

    def runtime():
        if not opened:
            log("ask: loading the runtime ...")
            opened.append(H3RuntimeResource().get_runtime())
        return opened[0]

    answers = []
    for question in questions:
        try:
            answer = ask(question, db, doc_id=args.doc, k=args.k,
                         runtime=None if args.no_model else runtime,
                         max_new_tokens=args.max_new_tokens, reuse=not args.no_cold_reuse)
        except LookupError as exc:
            raise CliError(f"--doc {args.doc}: {str(exc).split(': ', 1)[-1]}") from exc
        if answer.stats.get("integrity_errors"):
            log(f"ask: {answer.stats['integrity_errors']} corrupted cold KV span(s) detected "
                "and recomputed")
        if answer.stats.get("doc_kv") == "computed_and_stored":
            log(f"ask: {args.doc} had no stored KV: computed and stored it "
                f"({answer.stats['doc_kv_computed_tokens']} tokens, "
                f"{answer.stats['doc_kv_compute_s']} s); the next question loads it")
        nav = answer.stats.get("navigation") or {}
        if nav.get("kv_computed_tokens"):
            log(f"ask: {args.doc}: KV of {sum(v == 'computed_and_stored' for v in nav['branch_kv'].values())}"
                f" part(s) computed and stored ({nav['kv_computed_tokens']} tokens, "
                f"{nav['kv_compute_s']} s); the next question reaching them loads it")
        answers.append(answer)
    payload = [a.to_json() for a in answers]
    emit(payload[0] if len(payload) == 1 else payload, args.json,
         human="\n\n".join(human_text(a) for a in answers))
    return 0


def human_text(answer) -> str:
    """What a person reads: the answer, its quotes with file and page, the model's text when it
    passed the check (or why not), the timings."""
    head = f"Q: {answer.question}\n" if answer.question else ""
    if answer.refused:
        return f"{head}refused: {answer.reason}\n\n{evidence_pages(answer.evidence)}"
    lines = [head + "quotes:"]
    if answer.stats.get("overview"):  # a question about the whole document: its outline first
        lines = [f"{head}outline: {answer.text}", "quotes (the largest sections' openings):"]
    for q in answer.quotes:
        lines.append(f"  “{q['text']}” ({Path(q['source'] or q['doc_id'] or '?').name} p.{q['page']})")
    g = answer.grounding
    if answer.generated:
        lines.append(f"model: {answer.generated}")
    elif g.get("checked"):
        missing = ", ".join(g.get("unsupported_figures", []) + g.get("unsupported_names", []))
        lines.append("model: not shown: it states what the evidence does not hold"
                     + (f" ({missing})" if missing else " (it wrote nothing)"))
    lines.append(evidence_pages(answer.evidence))
    stats = answer.stats
    nav = stats.get("navigation")
    if nav and nav.get("sections"):
        parts = "; ".join(f"{s['title'][:40]} p.{s['pages']}" for s in nav["sections"])
        kv = (f", {nav['kv_bytes_loaded'] / 1e6:.1f} MB KV from the {nav['kv_tier']} tier"
              if "kv_bytes_loaded" in nav else "")
        lines.append(f"branch: {parts} ({nav['branch_tokens']} of {nav['document_tokens']} "
                     f"tokens{kv})")
    if "ttft_s" in stats:
        lines.append(f"-- ttft {stats['ttft_s']:.3f} s, total {stats['total_s']:.3f} s, "
                     f"{stats['prompt_tokens']} prompt tokens: {stats['prefill_tokens_computed']} "
                     f"computed, {stats['kv_tokens_loaded_cold']} loaded from the cold tier")
    return "\n".join(lines)


def evidence_pages(evidence: list[dict]) -> str:
    """"evidence: report.pdf p.3, 5; notes.pdf p.1": the pages the answer was given from, per
    file in the order recall ranked them (what `--json` lists as `evidence`)."""
    pages: dict[str, list[int]] = {}
    for hit in evidence:
        name = Path(hit.get("source") or hit.get("doc_id") or "?").name
        page = int(hit.get("page") or 0)
        if page and page not in pages.setdefault(name, []):
            pages[name].append(page)
    if not pages:
        return "evidence: none"
    return "evidence: " + "; ".join(f"{name} p.{', '.join(map(str, sorted(ps)))}"
                                   for name, ps in pages.items())
