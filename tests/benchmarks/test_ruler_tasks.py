"""The RULER-style generator: prompts of the asked length that contain their answers, and
RULER's string_match_all scoring (tokenizer only: no model run)."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from benchmarks.evals.ruler_tasks import TASKS, make_sample, passkey, string_match_all


@pytest.fixture(scope="module")
def tok(default_model_dir):
    return AutoTokenizer.from_pretrained(default_model_dir)


@pytest.mark.parametrize("task", TASKS)
def test_prompts_fit_the_length_and_hold_the_answers(tok, task):
    s = make_sample(tok, task, 2048, seed=0)
    text = tok.decode(s.ids)
    assert 0.85 * 2048 <= len(s.ids) <= 2048  # cwe trims whole numbered entries to fit
    assert s.answers and all(a in text.split("<|im_start|>assistant")[0] for a in s.answers)
    assert make_sample(tok, task, 2048, seed=0).ids == s.ids  # deterministic


def test_every_task_builds_at_8k(tok):
    # the needle haystack of niah_multikey_2 needs more keys at 8K than there are adjective-noun
    # pairs: drawing unique ones never ended
    for task in TASKS:
        s = make_sample(tok, task, 8192, seed=2)
        assert 0.85 * 8192 <= len(s.ids) <= 8192


def test_passkey_haystack_is_varied_prose(tok):
    s = passkey(tok, 2048, 0.5, seed=0)
    text = tok.decode(s.ids)
    assert s.answers[0] in text and "The grass is green" not in text
    sentences = [x for x in text.split(". ") if len(x) > 20]
    assert len(set(sentences)) > 0.9 * len(sentences)  # not one sentence repeated


def test_string_match_all():
    assert string_match_all("Numbers: 123 and 456", ["123", "456"]) == 1.0
    assert string_match_all("only 123", ["123", "456"]) == 0.5
    assert string_match_all("none", ["ABC"]) == 0.0


def test_prefix_agreement_counts_the_reference_tokens_kept_before_the_first_difference():
    from benchmarks.runtime.ruler import prefix_agreement

    assert prefix_agreement([1, 2, 9, 4], [1, 2, 3, 4]) == 0.5  # the match after a difference: no
    assert prefix_agreement([1, 2, 3, 4, 5], [1, 2, 3, 4]) == 1.0
    assert prefix_agreement([], [7]) == 0.0


def test_answer_margin_is_the_smallest_lead_on_the_tokens_that_spell_a_reference(tok):
    from benchmarks.runtime.ruler import answer_margin

    ids = tok(":\n\n1. 3995758\n2. 2057403", add_special_tokens=False).input_ids
    text_of = [tok.decode(ids[: i + 1]) for i in range(len(ids))]
    first = next(i for i, t in enumerate(text_of) if t.endswith("3") and "399" not in t)
    margins = [9.0] * len(ids)
    margins[first] = 0.08  # the first digit of 3995758: a near-tie
    margins[0] = 0.01  # the colon: not part of any reference, ignored
    assert answer_margin(tok, ids, margins, ["3995758"]) == 0.08
    assert answer_margin(tok, ids, margins, ["2057403"]) == 9.0
    assert answer_margin(tok, ids, margins, ["7581089"]) is None  # not in the answer


def test_decisive_retention_leaves_out_near_ties_only():
    from benchmarks.runtime.ruler import DECISIVE_MARGIN, summarise

    def row(margin, full, h3):
        return {"length_target": 4096, "task": "t", "full": {"score": full, "answer_margin": margin},
                "h3": {"score": h3}}

    rows = [row(5.0, 1.0, 1.0), row(DECISIVE_MARGIN / 10, 1.0, 0.0), row(None, 0.0, 1.0)]
    s = summarise(rows, ["h3"])["4096"]
    assert s["retention_vs_full"] == {"h3": 0.5} and s["samples_full_solves"] == 2
    assert s["retention_vs_full_decisive"] == {"h3": 1.0}
    assert s["samples_full_solves_decisively"] == 1


def test_a_variant_with_runtime_changes_builds_its_engine_with_them(monkeypatch, tmp_path):
    """A RULER variant's fifth item (runtime keys changed, e.g. h3_10%_bfloat16's decode dtype)
    reaches its engine's config; the shipped variants get none (the engine's own defaults)."""
    import types

    import benchmarks.runtime.ruler as ruler
    from benchmarks.evals.ruler_tasks import Sample
    from h3_runtime.kvcache.geometry import BudgetTooSmallError

    ran: list = []

    def engine(**kw):  # records the config, then declines (run_sample records the error)
        ran.append(kw.get("config"))
        raise BudgetTooSmallError("recorded")

    monkeypatch.setattr(ruler, "H3Engine", engine)
    monkeypatch.setattr(ruler, "full_answer", lambda *a, **k: [7])
    monkeypatch.setattr(ruler, "answer_margin", lambda *a, **k: None)
    tok = types.SimpleNamespace(decode=lambda ids, **k: "x", eos_token_id=0)
    base = types.SimpleNamespace(model=None, tokenizer=tok, bytes_per_token_layer=2**20,
                                 n_layers=2**10)
    chosen = [v for v in ruler.RULER_VARIANTS if v[0] in ("h3_10%", "h3_10%_bfloat16")]
    row = ruler.run_sample(base, Sample("fwe", 1, [1], ["x"], 1), chosen, tmp_path,
                           prompt=([], None))
    assert row["h3_10%"]["error"] == row["h3_10%_bfloat16"]["error"] == "recorded"
    assert ran == [None, {"runtime": {"decode_kv_dtype": "bfloat16"}}]
