"""How documents and questions become token ids, so that a document's stored KV is a reusable
prefix of every `--doc` prompt and each chunk's KV is a slice that recall-assembled prompts reuse.

Layout (ChatML through the tokenizer's own chat template):
    head = <system prompt> + user turn opening            (same for every prompt)
    document = head + chunk_1 + chunk_2 + ...             (each chunk tokenized on its own)
    prompt   = head + chunk/ document pieces + question + assistant turn opening
Tokenizing each chunk separately is what makes a chunk's ids identical wherever it is placed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

SYSTEM_PROMPT = (
    "You are a careful analyst. Answer only from the documents given; "
    "cite the page of each fact as [p N]."
)
_MARK = "\x00H3-USER-CONTENT\x00"


@dataclass(frozen=True, slots=True)
class ChunkText:
    chunk_id: str
    page: int
    text: str

    def rendered(self) -> str:
        return f"[p{self.page}] {self.text.strip()}\n\n"

    def digest(self) -> str:
        """Identifies the chunk's rendered text (how a recall hit finds its stored span)."""
        return text_digest(self.page, self.text)


def text_digest(page: int, text: str) -> str:
    return hashlib.blake2b(f"{page}\x00{text.strip()}".encode(), digest_size=8).hexdigest()


class PromptLayout:
    """Token ids of the fixed head, a chunk, a whole document and a question's tail."""

    def __init__(self, tokenizer, system: str = SYSTEM_PROMPT) -> None:
        self.tokenizer = tokenizer
        messages = [{"role": "system", "content": system}, {"role": "user", "content": _MARK}]
        try:
            rendered = tokenizer.apply_chat_template(messages, tokenize=False,
                                                     add_generation_prompt=True)
        except (ValueError, AttributeError):  # a tokenizer without a chat template
            rendered = f"{system}\n\n{_MARK}\n\nAnswer:"
        head, tail = rendered.split(_MARK)
        self.head_ids: tuple[int, ...] = tuple(self.encode(head))
        self.tail_text = tail

    def encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False).input_ids

    def chunk_ids(self, chunk: ChunkText) -> tuple[int, ...]:
        return tuple(self.encode(chunk.rendered()))

    def document(self, chunks: Sequence[ChunkText]
                 ) -> tuple[list[int], list[tuple[int, int]], list[str], list[str]]:
        """The document's ids (head + chunks), each chunk's [start, end), ids and digests."""
        ids = list(self.head_ids)
        spans, chunk_ids, digests = [], [], []
        for chunk in chunks:
            piece = self.chunk_ids(chunk)
            spans.append((len(ids), len(ids) + len(piece)))
            ids += piece
            chunk_ids.append(chunk.chunk_id)
            digests.append(chunk.digest())
        return ids, spans, chunk_ids, digests

    def question_ids(self, question: str) -> tuple[int, ...]:
        return tuple(self.encode(f"Question: {question.strip()}" + self.tail_text))
