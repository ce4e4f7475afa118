"""What `h3 ask` and `H3RuntimeResource.ask` return: an answer that carries the evidence it rests on.

The answer a user reads (`text`) is extractive: sentences and table rows quoted from the recalled
evidence, each with its file, page and box. The bundled model's own wording (`generated`) is kept
only when every number and name it states appears in that evidence; otherwise `grounding` says
which ones did not. A refusal (`refused`, `reason`) is an answer too: the store cannot answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Answer:
    """One question's answer. `quotes` are dicts: text, doc_id, source, page, bbox, kind
    ("sentence" or "table_row"); `evidence` the recalled hits (`Hit.to_json()` form) it was
    given; `stats` what `h3 ask --json` reports under "stats" (empty when the model did not run)."""

    question: str
    text: str
    quotes: list[dict] = field(default_factory=list)
    refused: bool = False
    reason: str | None = None
    generated: str | None = None  # the model's text, present only when it passed the check
    grounding: dict = field(default_factory=dict)  # checked, grounded, unsupported, model_text
    evidence: list[dict] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"question": self.question, "answer": self.text, "quotes": self.quotes,
                "refused": self.refused, "reason": self.reason, "generated": self.generated,
                "grounding": self.grounding, "evidence": self.evidence, "stats": self.stats}
