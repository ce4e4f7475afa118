"""The router fuses the intents' lists by rank (RRF), never by comparing their scores; context
hits come after every answer. Scripted intents over the in-memory store double."""

from __future__ import annotations

import pytest

from h3.ontology.document import Hit
from h3.resources.recall import Ranked, recall, register_intent
from h3.resources.recall.router import fuse
from tests.doubles import scripted_intents


def hit(page: int, score: float, via: str, x: float = 0.0) -> Hit:
    return Hit("d", "d.pdf", page, (x, 0.0, x + 10, 10.0), "text", f"{via} p{page}", score, via)


@pytest.fixture
def scripted():
    """Intents that return fixed lists: text (always), structure (huge scores), relation."""
    text = [hit(1, 0.9, "text"), hit(2, 0.8, "text"), hit(3, 0.7, "text")]
    structure = [hit(7, 100.0, "structure", 50), hit(8, 99.0, "structure", 50)]
    relation = Ranked([hit(2, 1.5, "relation")], context=[hit(9, 0.35, "relation")])

    def register() -> None:
        register_intent("text", lambda ctx, q, k: text, always_in_auto=True)
        register_intent("structure", lambda ctx, q, k: structure, detect=lambda q: "figure" in q)
        register_intent("relation", lambda ctx, q, k: relation, detect=lambda q: "who" in q)

    with scripted_intents(register, pages=20) as context:
        yield context


def pages(result: dict) -> list[tuple[str, int]]:
    return [(h["via"], h["page"]) for h in result["hits"]]


def test_lists_interleave_by_rank_whatever_their_scores(scripted):
    [result] = recall(scripted.store, ["figure of the pump"], k=5, ctx=scripted)
    # structure's scores (100, 99) do not push text out: rank 1 of each list, then rank 2 ...
    # and at equal rank the intent the query asked for comes first
    assert pages(result) == [("structure", 7), ("text", 1), ("structure", 8), ("text", 2),
                             ("text", 3)]
    assert result["hits"][0]["score"] == 100.0  # each hit keeps its intent's own score


def test_a_page_two_intents_found_ranks_first_and_context_comes_last(scripted):
    [result] = recall(scripted.store, ["who runs the pump maker"], k=5, ctx=scripted)
    # page 2: relation's answer (rank 1) and text's rank 2 -> fused above text's rank 1
    assert pages(result) == [("relation", 2), ("text", 1), ("text", 3), ("relation", 9)]
    assert result["hits"][0]["boxes"] == [[0.0, 0.0, 10.0, 10.0]]  # one box: the same region


def test_one_list_keeps_its_own_order():
    lists = [[hit(1, 0.2, "text"), hit(2, 0.9, "text"), hit(1, 0.1, "text", 20)]]
    assert [(h.page, h.score) for h in fuse(lists)] == [(2, 0.9), (1, 0.2), (1, 0.1)]


def test_fusion_interleaves_lists_but_never_reorders_one():
    """Relation's second edge sits on text's first page: that page, found twice, comes first
    (text's hit leads it), but relation's own first edge still comes before its second one (an
    intent's ranking is its own evidence); plain RRF put the second edge first."""
    relation = [hit(8, 1.5, "relation"), hit(9, 1.4, "relation")]
    text = [hit(9, 0.9, "text"), hit(4, 0.8, "text")]
    fused = [(h.via, h.page) for h in fuse([relation, text])]
    assert fused == [("text", 9), ("relation", 8), ("relation", 9), ("text", 4)]
