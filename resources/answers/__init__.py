"""Grounded answers: extractive quotes first, the model's text only where the evidence holds it."""

from h3.resources.answers.ask import ask, document_chunks, refusal_reason

__all__ = ["ask", "document_chunks", "refusal_reason"]
