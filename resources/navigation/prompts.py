"""What the model reads when it works from a document's tree instead of its first pages.

- `summary_prompt_chunks`: every top section's extractive summary, each cut to an equal share
  of the model's context (the map over sections; the model combines them), so a summary of a
  300-page filing draws on all of its sections;
- `branch_segments`: a navigated branch as prompt segments over stored KV. Each part's KV is
  stored in the cold tier as its own entry (`<doc_id>#<part id>`, head + the part's chunks),
  computed the first time navigation reaches the part; a branch then loads only its parts'
  spans, whatever the document's length.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from h3.ontology.sections import Section
from h3.resources.navigation.tree import chunk_order
from h3_runtime.reuse.prompt import ChunkText

if TYPE_CHECKING:
    from h3.resources.navigation.navigate import Branch
    from h3_runtime.reuse.runtime import ReuseRuntime

_CHARS_PER_TOKEN = 3  # a first cut; the token count is checked after


def part_kv_id(doc_id: str, section_id: str) -> str:
    return f"{doc_id}#{section_id}"


def summary_prompt_chunks(sections: Sequence[Section], count: Callable[[ChunkText], int],
                          limit: int) -> list[ChunkText]:
    """One prompt chunk per top section (chunk_id = its section id, page = its first page):
    its summary cut to an equal share of `limit` tokens; sections are dropped from the end
    only if even the shortest cut does not fit."""
    top = [s for s in sections if s.level == 1]
    if not top:
        return []
    share = max(limit // len(top), 16)
    chunks = []
    for s in top:
        body = " ".join(s.summary.split("\n")[1:]) or s.title
        chunks.append(ChunkText(s.section_id, s.page_start,
                                f"{s.title} (p{s.pages}): {body}"[:share * _CHARS_PER_TOKEN]))
    sizes = [count(c) for c in chunks]
    while sum(sizes) > limit and len(chunks) > 1:
        chunks.pop()
        sizes.pop()
    return chunks


def chunk_text(row: dict) -> ChunkText:
    return ChunkText(row["chunk_id"], int(row["page"]), row["text"])


def branch_segments(runtime: ReuseRuntime, branch: Branch, question: str, reuse: bool = True
                    ) -> tuple[list, dict]:
    """The prompt segments of a branch (head, its passages, the question), storing each part's
    KV first if it is not stored yet; and what was loaded: {"branch_kv": per part "stored",
    "stored (document KV)" or "computed_and_stored", "kv_computed_tokens", "kv_compute_s"}."""
    rows = {r["chunk_id"]: r for r in branch.part_chunks or branch.chunks}
    wanted = {r["chunk_id"] for r in branch.chunks}
    parts = sorted(branch.parts, key=lambda p: chunk_order(p.chunk_ids[0]) if p.chunk_ids else 0)
    state: dict = {"branch_kv": {}, "kv_computed_tokens": 0, "kv_compute_s": 0.0}
    # the document's own stored KV (stage `kv`, `index-build --with-kv`: its leading chunks
    # that fit the model) serves every part it covers: nothing is computed for those
    document = runtime.store.find(branch.doc_id, runtime.model_key) if reuse else None
    covered = set(document.span_digests) if document is not None else set()
    pieces, rank_of = [], {p.section_id: i for i, p in enumerate(branch.parts)}  # best first
    part_of: dict[str, int] = {}  # passage chunk id -> its part's rank
    for part in parts:
        # the whole part is stored (the passages are slices of it), so a later question that
        # loads other passages of the part finds them stored too
        whole = [chunk_text(rows[c]) for c in part.chunk_ids if c in rows]
        in_document = bool(whole) and all(t.digest() in covered for t in whole)
        kv_id = branch.doc_id if in_document else part_kv_id(branch.doc_id, part.section_id)
        pieces += [(kv_id, t) for t in whole if t.chunk_id in wanted]
        part_of.update((t.chunk_id, rank_of[part.section_id]) for t in whole)
        if not reuse or not whole:
            continue
        if in_document:
            state["branch_kv"][part.section_id] = "stored (document KV)"
            continue
        t0 = time.perf_counter()
        index, computed = runtime.precompute(kv_id, whole)
        state["branch_kv"][part.section_id] = "computed_and_stored" if computed else "stored"
        if computed:
            state["kv_computed_tokens"] += index.tokens
            state["kv_compute_s"] += time.perf_counter() - t0
    state["kv_compute_s"] = round(state["kv_compute_s"], 3)
    pieces, dropped = fit_context(pieces, part_of, runtime)
    if dropped:
        state["passages_dropped_to_fit"] = dropped
    return runtime.evidence_segments(pieces, question), state


def fit_context(pieces: list[tuple[str, ChunkText]], part_of: dict[str, int],
                runtime: ReuseRuntime) -> tuple[list[tuple[str, ChunkText]], int]:
    """The passages that fit the model's context (`max_document_tokens`, counted with the
    model's own tokenizer), and how many were dropped: the last passages of the lowest-ranked
    part go first, never the last one. The branch's token bound counts the ingestion
    tokenizer's tokens, and the model's counts ~1.7x as many on tables of figures: a branch of
    4,500 such tokens made a 7.7K-token prompt, at the bundled model's limit."""
    limit = runtime.max_document_tokens()
    sizes = [len(runtime.layout.chunk_ids(t)) for _, t in pieces]
    total = len(runtime.layout.head_ids) + sum(sizes)
    kept = list(range(len(pieces)))
    while total > limit and len(kept) > 1:
        worst = max(kept, key=lambda i: (part_of.get(pieces[i][1].chunk_id, 0), i))
        kept.remove(worst)
        total -= sizes[worst]
    return [pieces[i] for i in kept], len(pieces) - len(kept)
