"""How `h3 bench --scenario filings_runtime` lays a FinanceBench question over its filing's pages:
the prompt has the requested length, holds the evidence page whole at about the requested depth,
and ends with the question (a character-per-token tokenizer double stands in for the model's)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks.documents.filings_runtime import build_sample, evidence_pages
from h3_runtime.reuse.prompt import PromptLayout


class CharTokenizer:
    """One token per character (no chat template: PromptLayout's plain fallback)."""

    def __call__(self, text: str, add_special_tokens: bool = False):
        return SimpleNamespace(input_ids=[ord(c) for c in text])


def _decode(ids: list[int]) -> str:
    return "".join(map(chr, ids))


PAGES = [f"page {i + 1} " + chr(ord("a") + i % 26) * 300 for i in range(40)]
QUESTION = {"question": "What was revenue?", "answer": "$1", "pages": [20]}


@pytest.mark.parametrize("depth", [0.1, 0.5, 0.9])
def test_the_evidence_page_sits_whole_at_the_requested_depth(depth):
    layout = PromptLayout(CharTokenizer())
    sample = build_sample(layout, PAGES, QUESTION, 3000, depth)
    text = _decode(sample.ids)
    assert len(sample.ids) == 3000
    assert PAGES[19].strip() in text  # the evidence page (1-based 20), whole
    assert text.rstrip().endswith("Question: What was revenue?" + layout.tail_text.rstrip())
    body_start = len(layout.head_ids)
    body_end = len(text) - len(layout.question_ids(QUESTION["question"]))
    where = (text.index("[p20]") - body_start) / (body_end - body_start)
    assert abs(where - depth) < 0.12  # whole pages of ~320 tokens in a ~2,950-token body
    assert sample.answers == ["$1"]


def test_a_document_start_leaves_the_room_to_the_pages_after_the_evidence():
    layout = PromptLayout(CharTokenizer())
    sample = build_sample(layout, PAGES, {**QUESTION, "pages": [1]}, 3000, 0.9)
    text = _decode(sample.ids)
    assert len(sample.ids) == 3000
    assert text.index("[p1]") < text.index("[p2]") < text.index("[p3]")


def test_evidence_pages_keep_a_short_range_and_drop_a_scattered_one():
    assert evidence_pages([69, 70], 100) == [68, 69]
    assert evidence_pages([8, 10, 14], 100) == [7]
    assert evidence_pages([120], 100) == []


def test_evidence_beyond_the_document_is_a_clear_error():
    with pytest.raises(ValueError, match="q9: evidence pages \\[120\\]"):
        build_sample(PromptLayout(CharTokenizer()), PAGES, {**QUESTION, "id": "q9", "pages": [120]},
                     3000, 0.5)


@pytest.mark.parametrize("depth", [0.1, 0.5, 0.9])
def test_the_filing_passkey_needle_sits_between_sentences_at_its_depth(depth):
    from benchmarks.documents.filings_runtime import filing_sentences, passkey_prompt

    pages = [f"Revenue rose {i} percent. Costs fell in region {i}!  Margins held.\n" for i in range(400)]
    sentences = filing_sentences(pages, 7)
    assert sentences[0] == "Revenue rose 7 percent."  # starts at the page asked, whitespace folded
    ids = passkey_prompt(CharTokenizer(), sentences, 4000, depth, "12345")
    text = _decode(ids)
    assert 3900 < len(ids) <= 4000
    needle = " The pass key is 12345. Remember it. 12345 is the pass key."
    at = text.index(needle)
    assert text[at - 1] in ".!"  # after a whole sentence
    assert abs(at / len(text) - depth) < 0.06
    assert text.endswith("Answer with the number.<|im_end|>\n<|im_start|>assistant\nThe pass key is")


def _row(file: str, kl: float) -> dict:
    variant = {"text": "x", "same_as_full": True, "agreement": 1.0, "score": 0.0,
               "forced_top1": 1.0, "forced_kl": kl}
    return {"file": file, "full": {"score": 0.0}, "h3_10%": variant}


def test_the_report_sets_the_tune_and_check_halves_side_by_side():
    from benchmarks.documents.filings_runtime import _summary, summary_by_half

    # three companies: the first and third (alphabetically) are the tune half
    rows = [_row("ALPHA_2019_10K.pdf", 0.1), _row("ALPHA_2020_10K.pdf", 0.3),
            _row("BETA_2019_10K.pdf", 0.7), _row("GAMMA_2021_10K.pdf", 0.5)]
    got = summary_by_half(rows, lambda half: _summary(half, ["h3_10%"]))
    assert got["tune"]["h3_10%"]["answers"] == 3 and got["check"]["h3_10%"]["answers"] == 1
    assert got["tune"]["h3_10%"]["forced_kl"] == pytest.approx(0.3)
    assert got["check"]["h3_10%"]["forced_kl"] == pytest.approx(0.7)


def test_teacher_forcing_builds_each_variant_with_its_runtime_keys(tmp_path):
    """filings_gate's variants differ only in runtime keys: forced_fidelity must build each
    engine with them (the gate off re-selects every layer at every token; shipped fewer)."""
    import torch

    from benchmarks.documents.filings_runtime import forced_fidelity
    from benchmarks.runtime.ruler import _prefill_only
    from h3_runtime.engine import H3Engine
    from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama

    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (700,), generator=torch.Generator().manual_seed(3)).tolist()
    kv: list = []
    _prefill_only(model, ids, kv)
    base = H3Engine(model=model, hbm_size_gb=1.0, cold_storage_path=tmp_path / "kv")
    answer = torch.randint(0, 128, (12,), generator=torch.Generator().manual_seed(4)).tolist()
    row: dict = {}
    share = 100 * kv_bytes_per_token(model) / (len(ids) * base.bytes_per_token_layer * base.n_layers)
    forced_fidelity(base, ids, kv, answer, row, tmp_path / "kv",
                    [("shipped", share, True, None),
                     ("no_gate", share, True, None, {"decode_reselect_cosine": 1.0})])
    assert row["no_gate"]["layers_reselecting_per_token"] == 2.0  # both layers, every token
    assert row["shipped"]["layers_reselecting_per_token"] < 2.0
    for name in ("shipped", "no_gate"):
        assert 0.0 <= row[name]["forced_top1"] <= 1.0 and row[name]["forced_kl"] >= 0.0
