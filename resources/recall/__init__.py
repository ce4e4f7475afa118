"""Recall over the document store: a router of intents (text here; structure and relation are added
by their own modules with `register_intent`)."""

from h3.resources.recall.router import INTENTS, Ranked, RecallContext, recall, register_intent

__all__ = ["INTENTS", "Ranked", "RecallContext", "recall", "register_intent"]
