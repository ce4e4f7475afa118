"""`h3 ask QUESTION [--doc DOC_ID] [--no-cold-reuse] [--max-new-tokens N] [--k K] [--json]`.

Answers with the H³ runtime: over the recalled evidence (chunks from `h3 recall`), or over one
whole document with `--doc`. Stored document KV (stage `kv`) is loaded instead of prefilled: an
exact prefix for `--doc`, re-positioned slices (RoPE + selective recompute) for recalled chunks.
A `--doc` document without stored KV is prefilled and stored first (the next question reuses
it). `--no-cold-reuse` computes everything, for comparison. Stats: see INTERFACES.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from h3.pipelines.cli.annotate import notes_of, weak_line
from h3.pipelines.cli.output import CliError, emit, log


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ask", help="answer a question with the H³ runtime over recalled evidence")
    p.add_argument("question", metavar="QUESTION", help="the question")
    p.add_argument("--doc", metavar="DOC_ID", help="answer over this whole document")
    p.add_argument("--no-cold-reuse", action="store_true",
                   help="recompute all KV instead of loading precomputed cold KV")
    p.add_argument("--max-new-tokens", type=int, default=64, help="answer length limit")
    p.add_argument("--k", type=int, default=5, help="evidence chunks to recall (without --doc)")
    p.add_argument("--json", action="store_true", help="JSON on stdout")


def run(args: argparse.Namespace) -> int:
    if not args.question.strip():
        raise CliError("QUESTION is empty")
    if args.max_new_tokens < 1 or args.k < 1:
        raise CliError("--max-new-tokens and --k must be >= 1")
    from h3.assets.kv import document_chunks
    from h3.resources.runtime import H3RuntimeResource
    from h3.resources.store import open_store
    from h3_runtime.reuse.prompt import ChunkText

    db = open_store()
    reuse = not args.no_cold_reuse
    if args.doc:
        doc = db.get_document(args.doc)
        if doc is None or doc.get("status") != "ok":
            state = "not in the store" if doc is None else f"status {doc.get('status')}"
            raise CliError(f"--doc {args.doc}: {state} (see `h3 list`, `h3 index-build`)")
        chunks = document_chunks(db, args.doc)
        if not chunks:
            raise CliError(f"--doc {args.doc}: the document has no text chunks")
        evidence = [{"doc_id": args.doc, "source": doc.get("source"), "page": c.page,
                     "kind": "text", "text": c.text, "via": "document"} for c in chunks]
    else:
        from h3.resources.recall import recall

        recalled = recall(db, [args.question], k=args.k)[0]
        evidence = recalled["hits"]
        if not evidence:
            raise CliError("no evidence recalled (is the store empty? run `h3 index-build`)")
        reason = refusal_reason(recalled)
        if reason:  # nothing to answer from: say why, never let the model make one up
            emit({"answer": "", "refused": True, "reason": reason, "evidence": evidence,
                  "stats": {}}, args.json,
                 human=f"refused: {reason}\n\n{evidence_pages(evidence)}")
            return 0
    log("ask: loading the runtime ...")
    runtime = H3RuntimeResource().get_runtime()
    if args.doc:
        chunks = runtime.fit_chunks(chunks)
        if reuse and runtime.store.find(args.doc, runtime.model_key) is None:
            log(f"ask: no cold KV for {args.doc} yet: prefilling it once ({len(chunks)} chunks)")
            runtime.precompute(args.doc, chunks)
        segments = runtime.document_segments(args.doc, chunks, args.question)
    else:
        pieces = [(h["doc_id"], ChunkText("", int(h["page"]), h["text"])) for h in evidence]
        segments = runtime.evidence_segments(pieces, args.question)
    answer = runtime.answer(segments, args.max_new_tokens, reuse=reuse)
    stats = answer.stats
    if stats["integrity_errors"]:
        log(f"ask: {stats['integrity_errors']} corrupted cold KV span(s) detected and recomputed")
    result = {"answer": answer.text, "refused": False, "reason": None,
              "evidence": evidence[:args.k] if args.doc else evidence, "stats": stats}
    weak = weak_line(evidence) if not args.doc else None
    human = (f"{answer.text}\n\n{evidence_pages(result['evidence'])}\n"
             + (f"{weak.strip()}\n" if weak else "") + f"-- ttft {stats['ttft_s']:.3f} s, total {stats['total_s']:.3f} s, "
             f"{stats['prompt_tokens']} prompt tokens: {stats['prefill_tokens_computed']} computed, "
             f"{stats['kv_tokens_loaded_cold']} loaded from the cold tier")
    emit(result, args.json, human=human)
    return 0


def refusal_reason(recalled: dict) -> str | None:
    """Why the recalled evidence cannot answer the question, or None: the question names a
    company no stored document is from (recall's note), or the best evidence is a weak match."""
    from h3.resources.recall.documents import ABSENT_COMPANY_NOTE

    absent = [n for n in notes_of(recalled) if n.startswith(ABSENT_COMPANY_NOTE)]
    if absent:
        return absent[0]
    weak = weak_line(recalled["hits"])
    return weak.strip() if weak else None


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
