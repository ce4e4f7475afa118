"""One question, answered with its evidence: what `h3 ask`, `H3RuntimeResource.ask` and the
analysis assets all call.

1. Evidence: recalled hits (or, with `doc_id`, every chunk of that document). A question
   about a whole document (`doc_id`, navigated: "Summarize this report") is answered with its
   outline, quoted (overview.py).
2. Refusal before anything else: a company the store has no document of (recall's note), a weak
   best match, a company the `doc_id` document is not from and never mentions, or evidence that
   shares no word with the question. The model never runs then.
3. The extractive answer (extractive.py): quoted sentences and table rows, file, page, box.
4. The model (optional): its text over the same evidence, kept only if every figure and name it
   states is in that evidence (grounding.py); otherwise the result says which were not.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from h3.ontology.answer import Answer
from h3.ontology.ids import doc_id_of_partition
from h3.resources.answers.extractive import extract, passages
from h3.resources.answers.grounding import check
from h3.resources.answers.overview import asks_overview, overview_answer
from h3.resources.recall.documents import ABSENT_COMPANY_NOTE
from h3.resources.store import DocumentStore, sql_str
from h3_runtime.reuse.prompt import ChunkText

if TYPE_CHECKING:
    from h3_runtime.reuse.runtime import ReuseRuntime

# The best hit's score below which recall's evidence is a weak match (the answer is probably not
# in the store), from real score distributions (benchmarks/documents/weak_match.py): 3 of 57
# answered queries below it, 0 of 20 off-topic at or above. `h3 recall` marks the same.
WEAK_SCORE = 0.43
# The model never repeats a 6-token phrase it already wrote: a loop ("1. X 2. X 3. X") repeats
# longer runs than that, while a figure may recur ("$1,577.0 million" is 7 tokens: only its
# second mention in a row is blocked, and the check below reads figures, not repeats).
NO_REPEAT_NGRAM = 6
NO_WORDS = "the recalled evidence shares no content word with the question"


def document_chunks(db: DocumentStore, doc_id: str) -> list[ChunkText]:
    """The document's chunks from the document store, in reading order (chunk ids end in :c<i>)."""
    return [_chunk_text(r) for r in _chunk_rows(db, doc_id)]


def _chunk_text(row: dict) -> ChunkText:
    return ChunkText(row["chunk_id"], int(row["page"]), row["text"])


def _chunk_rows(db: DocumentStore, doc_id: str) -> list[dict]:
    rows = db.rows("chunks", f"doc_id = {sql_str(doc_id)}", ["chunk_id", "page", "text", "bbox"])

    def order(row: dict) -> int:
        tail = row["chunk_id"].rsplit(":c", 1)[-1]
        return int(tail) if tail.isdigit() else 0

    return sorted(rows, key=order)


def notes_of(result: dict) -> list[str]:
    """The notes of one recall result (`note`: one string; `notes`: a list), in order."""
    notes = [result["note"]] if result.get("note") else []
    return notes + [n for n in result.get("notes") or [] if n]


def refusal_reason(recalled: dict) -> str | None:
    """Why recalled evidence cannot answer its question, or None: a company no stored document
    is from (recall's note, or its routing's `absent` names) that the evidence never mentions,
    a name the corpus mentions (routing's `mentioned`: a segment, product or counterparty) that
    no recalled hit mentions, or a best hit scoring below WEAK_SCORE. A name the evidence
    mentions is not called absent: "What does Table 1 show about HPO?" was refused as "no
    document is from 'HPO'" over a stored paper about HPO."""
    from h3.resources.recall.mentions import mentions

    routing = recalled.get("routing") or {}
    texts = [h.get("text") or "" for h in recalled["hits"]]

    def unmentioned(names: list[str]) -> list[str]:
        return [n for n in names if not any(mentions(t, n) for t in texts)]

    absent_notes = [n for n in notes_of(recalled) if n.startswith(ABSENT_COMPANY_NOTE)]
    # refused on the absent-company note when: the result has no routing names (an older
    # caller's), an absent name the evidence never mentions, or an organisation the question is
    # about that the corpus only mentions (routing's `about`: even where the evidence mentions
    # it, those are another company's words about it)
    if absent_notes and ("absent" not in routing or unmentioned(routing["absent"])
                         or routing.get("about")):
        return absent_notes[0]
    if missing := unmentioned(routing.get("mentioned") or []):
        return (f"the question names {missing[0]!r}: no stored document is from it, and the "
                "recalled evidence never mentions it")
    if not recalled["hits"]:
        return "nothing recalled (is the store empty? run `h3 index-build`)"
    return weak_match(recalled["hits"])


def weak_match(hits: list[dict]) -> str | None:
    """"weak match: ..." when there are hits and the best scores below WEAK_SCORE, else None."""
    if not hits:
        return None
    best = max(float(h.get("score") or 0.0) for h in hits)
    if best >= WEAK_SCORE:
        return None
    return f"weak match: best score {best:.3f} < {WEAK_SCORE} (the answer may not be in the store)"


def document_evidence(db: DocumentStore, doc_id: str) -> tuple[list[dict], list[ChunkText]]:
    """Every chunk of one stored document, as evidence hits and as the model's chunks (raises
    LookupError naming it when it is not stored or did not ingest)."""
    doc = db.get_document(doc_id)
    if doc is None or doc.get("status") != "ok":
        state = "not in the store" if doc is None else f"status {doc.get('status')}"
        raise LookupError(f"document {doc_id}: {state} (see `h3 list`, `h3 index-build`)")
    rows = _chunk_rows(db, doc_id)
    if not rows:
        raise LookupError(f"document {doc_id}: it has no text chunks")
    evidence = [{"doc_id": doc_id, "source": doc.get("source"), "page": int(r["page"]),
                 "bbox": list(r.get("bbox") or []), "kind": "text", "text": r["text"],
                 "score": 0.0, "via": "document"} for r in rows]
    return evidence, [_chunk_text(r) for r in rows]


def ask(question: str, db: DocumentStore, *, doc_id: str | None = None, k: int = 5,
        runtime: Callable[[], ReuseRuntime] | None = None, max_new_tokens: int = 64,
        reuse: bool = True, navigate: bool = True) -> Answer:
    """Answers `question` from the store `db` (over the document `doc_id` if given: the branch
    of its section tree the question navigates to (resources/navigation), or with
    `navigate=False` its leading chunks that fit the model, as before navigation).
    `doc_id` may be the content id, the document's partition key (`report.pdf-<doc_id>`) or,
    navigated, its file name.
    `runtime` opens the model when called (None: extractive only, the model never loads).
    Raises ValueError for an empty question or k < 1, LookupError for a document not stored."""
    if not question.strip():
        raise ValueError("the question is empty")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    branch, off_period = None, frozenset()
    if doc_id and navigate:
        from h3.resources.navigation.answer import navigated_evidence

        evidence, branch, tree = navigated_evidence(db, doc_id, question)
        doc_id, chunks = tree.doc_id, []
    elif doc_id:
        with contextlib.suppress(ValueError):  # a partition key as the UI shows it: its doc_id
            doc_id = doc_id_of_partition(doc_id)
        evidence, chunks = document_evidence(db, doc_id)
    else:
        chunks = []
        from h3.resources.recall import recall

        recalled = recall(db, [question], k=k)[0]
        evidence = recalled["hits"]
        off_period = frozenset((recalled.get("routing") or {}).get("off_period") or ())
        reason = refusal_reason(recalled)
        if reason:
            return Answer(question, "", refused=True, reason=reason, evidence=evidence)
    if doc_id:
        texts = [r["text"] for r in (tree.chunks if branch is not None else evidence)]
        if (name := absent_from_document(question, db, doc_id, texts)) is not None:
            source = (db.get_document(doc_id) or {}).get("source") or doc_id
            reason = (f"the question names {name!r}, which {Path(source).name} is not from "
                      "and never mentions")
            return Answer(question, "", refused=True, reason=reason, evidence=evidence[:k])
    if branch is not None and asks_overview(question):  # the whole document: its outline
        return overview_answer(question, tree)
    quotes = extract(question, evidence, off_period=off_period)
    if not quotes:
        return Answer(question, "", refused=True, reason=NO_WORDS,
                      evidence=evidence[:k] if doc_id else evidence)
    shown = _quoted_hits(evidence, quotes, k) if doc_id else evidence
    answer = Answer(question, quotes[0]["text"], quotes=quotes, evidence=shown)
    if runtime is not None:
        _generate(answer, runtime(), doc_id, evidence, chunks, max_new_tokens, reuse, branch)
    if branch is not None:
        from h3.resources.navigation.answer import navigation_stats

        answer.stats["navigation"] = {**navigation_stats(branch, tree),
                                      **answer.stats.get("navigation", {})}
    return answer


def absent_from_document(question: str, db: DocumentStore, doc_id: str,
                         texts: list[str]) -> str | None:
    """A company the question names that the document (`texts`: its chunks) neither is from
    (its issuer profile) nor mentions, or None. Without this, `h3 ask --doc` answered "What
    was Tesla's revenue?" with another company's revenue sentence from the chosen document."""
    from h3.resources.nlp.issuer import DocumentProfile
    from h3.resources.recall.companies import IssuerRegistry, fold
    from h3.resources.recall.documents import alias_in, core_name, unknown_companies

    named = [n for n in unknown_companies(question) if core_name(n)]
    if not named:
        return None
    doc = db.get_document(doc_id) or {}
    profile = json.loads(doc.get("metadata_json") or "{}").get("profile")
    registry = IssuerRegistry({doc_id: DocumentProfile.from_json(profile)}) if profile else None
    text = f" {fold(' '.join(texts))} "

    def known(name: str) -> bool:
        return ((registry is not None and registry.knows(name))
                or f" {fold(core_name(name))} " in text)

    for name in named:
        # "Block's (formerly known as Square)": the name the document uses is given beside it
        partner = alias_in(question, name)
        if not known(name) and not (partner and known(partner)):
            return name
    return None


def _quoted_hits(evidence: list[dict], quotes: list[dict], k: int) -> list[dict]:
    """The chunks of a whole document the quotes came from (what `--doc` lists as evidence)."""
    pages = {(q["doc_id"], q["page"]) for q in quotes}
    return [h for h in evidence if (h["doc_id"], h["page"]) in pages][:k]


def _generate(answer: Answer, runtime: ReuseRuntime, doc_id: str | None, evidence: list[dict],
              doc_chunks: list[ChunkText], max_new_tokens: int, reuse: bool,
              branch=None) -> None:
    """Runs the model over the evidence (a navigated branch: its parts' stored KV; a whole
    document: `doc_chunks`, its leading ones that fit); keeps its text only if grounded;
    fills the stats."""
    more: dict = {}  # what the stats add about the KV or the evidence the model read
    if branch is not None:
        from h3.resources.navigation.prompts import branch_segments

        given = [h["text"] for h in evidence]
        segments, parts_kv = branch_segments(runtime, branch, answer.question, reuse)
    elif doc_id:
        chunks = runtime.fit_chunks(doc_chunks)
        given = [c.text for c in chunks]
        if reuse and runtime.store.find(doc_id, runtime.model_key) is None:
            # computed here, stored, then read back below: the stats say so instead of
            # counting it as KV that was waiting in the cold tier
            t0 = time.perf_counter()
            index, _ = runtime.precompute(doc_id, chunks)
            more = {"doc_kv": "computed_and_stored", "doc_kv_computed_tokens": index.tokens,
                      "doc_kv_compute_s": round(time.perf_counter() - t0, 3)}
        elif reuse:
            more = {"doc_kv": "stored"}
        segments = runtime.document_segments(doc_id, chunks, answer.question)
    else:
        read = model_evidence(evidence, answer.quotes, runtime, evidence_tokens())
        given = [h["text"] for h in read]
        pieces = [(h["doc_id"], ChunkText("", int(h["page"]), h["text"])) for h in read]
        segments = runtime.evidence_segments(pieces, answer.question)
        more = {"model_evidence": {"hits_read": len(read), "hits_recalled": len(evidence)}}
    # stored KV is read through the corpus cache, whose relevance rule keeps the blocks near
    # recent questions warm: it needs the question's vector (evidence hits are prefilled anew)
    vector = question_vector(answer.question) if branch is not None or doc_id else None
    generated, grounding = checked_generation(runtime, segments, given, answer.question,
                                              max_new_tokens, reuse, one_statement=True,
                                              query_vector=vector)
    answer.generated = generated.text if grounding["grounded"] else None
    answer.grounding = grounding
    answer.stats = {**generated.stats, **more}
    if branch is not None:
        from h3.resources.navigation.answer import kv_stats

        answer.stats["navigation"] = kv_stats(runtime.bytes_per_token, generated.stats, parts_kv,
                                              branch)


def evidence_tokens() -> int:
    """`answers.model_evidence_tokens` of h3_config.yaml."""
    from h3.resources.settings import load_config

    return load_config().answers.model_evidence_tokens


def model_evidence(evidence: list[dict], quotes: list[dict], runtime: ReuseRuntime,
                   max_tokens: int) -> list[dict]:
    """The recalled hits the model reads: the ones the quotes came from first (best quote
    first), then the others in recall order, while their prompt tokens fit `max_tokens` (the
    first always). Prefill time grows with every token the model reads, and a small model
    answers closer to the quotes when the other hits do not crowd them out."""
    where = {(q["doc_id"], q["page"], tuple(q["bbox"])): i for i, q in reversed(list(enumerate(quotes)))}

    def key_of(hit: dict) -> tuple:
        return (hit.get("doc_id"), int(hit.get("page") or 0), tuple(hit.get("bbox") or []))

    def order(item: tuple[int, dict]) -> tuple[int, int]:
        rank, hit = item
        return (where.get(key_of(hit), len(quotes)), rank)

    # a quote may stand in a page's other matched chunk (recall's `passages`): that one too
    quoted = [piece for hit in evidence for piece in passages(hit)[1:] if key_of(piece) in where]
    pieces = evidence + quoted
    read, used = [], 0
    for _, hit in sorted(enumerate(pieces), key=order):
        tokens = len(runtime.layout.chunk_ids(ChunkText("", int(hit["page"]), hit["text"])))
        if read and used + tokens > max_tokens:
            continue  # a shorter hit further down may still fit
        read.append(hit)
        used += tokens
    return read


def question_vector(question: str):  # noqa: ANN201  (torch.Tensor; torch loads with the model)
    """The question's SBERT vector `(384,)`, as the chunks' vectors are computed."""
    import torch

    from h3.resources.models.embedder import get_embedder

    return torch.from_numpy(get_embedder().encode([question])[0].copy())


def checked_generation(runtime: ReuseRuntime, segments: list, given: list[str], question: str,
                       max_new_tokens: int, reuse: bool = True, one_statement: bool = False,
                       query_vector=None) -> tuple:  # noqa: ANN001  (torch.Tensor | None)
    """The model's answer over `segments` (it cannot loop: NO_REPEAT_NGRAM) and its check
    against the texts it was `given`: (the runtime's Answer, {"checked", "model_text",
    "grounded", "unsupported_figures", "unsupported_names"}). Used by `ask` and the analysis
    assets, so every generated text a user sees passed the same check. `one_statement`: stop
    at the end of the model's first sentence or paragraph (ask: one answer; ReuseRuntime.answer)."""
    generated = runtime.answer(segments, max_new_tokens, reuse=reuse,
                               no_repeat_ngram=NO_REPEAT_NGRAM, one_statement=one_statement,
                               query_vector=query_vector)
    verdict = check(generated.text, given, question)
    return generated, {"checked": True, "model_text": generated.text, **verdict.to_json()}
