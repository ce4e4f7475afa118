"""`h3 ask --doc` for a question about the whole document ("Summarize this report", "What is
this document about?", "Give me an overview"): the document's outline, quoted.

Such a question (an overview phrase and no other content word: `asks_overview`; "Summarise
the risk factors" names a part and navigates to it) names nothing the document holds, so
word-matched quotes answer it only by chance (a page that happens to say "document"), and a
question without a content word was refused. Its answer is the document's own structure
instead: the top sections' titles with their pages, in reading order, and as quotes the opening
key line (resources/navigation/summaries.key_line) of the largest sections, each with its page
and box (a table of contents is no section's opening: its entries say where, not what).
Nothing is generated: every word is the document's, so the model is not asked.
"""

from __future__ import annotations

import re
from pathlib import Path

from h3.ontology.answer import Answer
from h3.resources.answers.extractive import contents_entry
from h3.resources.navigation.store import DocumentTree
from h3.resources.navigation.summaries import key_line
from h3.resources.navigation.tree import parts_of, top_sections
from h3.resources.recall.text import word_stems

OVERVIEW_QUOTES = 5  # the largest sections' opening lines quoted
TITLES_SHOWN = 12  # section titles in the answer at most (then "and N more")

DOCUMENT_NOUNS = ("document", "report", "file", "paper", "filing", "pdf", "text", "book",
                  "manual", "contract", "article")
_DOCUMENT = "(?:" + "|".join(DOCUMENT_NOUNS) + ")"
# whole-document asks (English); a question about something *in* the document goes to navigation
_OVERVIEW = re.compile(
    r"\b(?:summari[sz]e|summary|overview|outline|gist|tl;?dr|synopsis)\b"
    r"|\b(?:main|key)\s+(?:points?|topics?|ideas?|takeaways?|themes?|sections?)\b"
    rf"|\bwhat\s+(?:is|'s)\s+(?:this|the)\s+{_DOCUMENT}\s+about\b"
    rf"|\bwhat\s+does\s+(?:this|the)\s+{_DOCUMENT}\s+(?:cover|say|discuss|contain|describe)\b",
    re.IGNORECASE)


# the words a whole-document ask is made of: any other content word names something in the
# document ("Summarise the risk factors": navigate to them)
_ASK_WORDS = frozenset(
    "summarise summarize summary summaries overview outline gist tl dr tldr synopsis main key "
    "points point topics topic ideas idea takeaways takeaway themes theme sections section "
    "give provide brief short quick please about cover covers say says discuss discusses "
    "contain contains describe describes whole entire".split()) | set(DOCUMENT_NOUNS)


def asks_overview(question: str) -> bool:
    """Whether `question` asks about the whole document rather than something in it: an
    overview phrase and no other content word."""
    if not _OVERVIEW.search(question):
        return False
    words = {w for forms in word_stems(question).values() for w in forms}
    return all(w.lower() in _ASK_WORDS for w in words)


def overview_answer(question: str, tree: DocumentTree, k: int = OVERVIEW_QUOTES) -> Answer:
    """The outline answer (module docstring) of the document `tree` holds."""
    sections = top_sections(tree.sections)
    if len(sections) <= 1:  # no headings found: the parts (~1.2K tokens each) outline it
        sections = parts_of(tree.sections) or sections
    name = Path(tree.source or tree.doc_id).name
    rows = {r["chunk_id"]: r for r in tree.chunks}
    titles = [f"{s.title} (p{s.pages})" for s in sections[:TITLES_SHOWN]]
    more = len(sections) - len(titles)
    text = f"{name}: {len(sections)} section(s): " + "; ".join(titles) \
        + (f"; and {more} more" if more > 0 else "")
    # section id -> (its first chunk whose key line is no contents entry, that line)
    opening = {}
    for s in sections:
        lines = ((rows[c], key_line(rows[c])) for c in s.chunk_ids if c in rows)
        first = next(((row, line) for row, line in lines if line and not contents_entry(line)),
                     None)
        if first is not None:
            opening[s.section_id] = first
    largest = sorted(sorted((s for s in sections if s.section_id in opening),
                            key=lambda s: -s.tokens)[:k],
                     key=lambda s: (s.page_start, s.section_id))
    quotes, evidence = [], []
    for section in largest:
        row, line = opening[section.section_id]
        hit = {"doc_id": tree.doc_id, "source": tree.source, "page": int(row["page"]),
               "bbox": list(row.get("bbox") or []), "kind": "text", "text": row["text"],
               "score": 0.0, "via": "outline"}
        evidence.append(hit)
        quotes.append({"text": line, "doc_id": tree.doc_id, "source": tree.source,
                       "page": hit["page"], "bbox": hit["bbox"], "kind": "sentence",
                       "section": section.title})
    answer = Answer(question, text, quotes=quotes, evidence=evidence)
    answer.stats["overview"] = {"sections": len(sections), "quoted": len(quotes),
                                "note": "the document's outline and its largest sections' "
                                        "opening lines, quoted (nothing generated)"}
    return answer
