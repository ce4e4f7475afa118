"""`h3 bench --scenario passkey_api` on one short prompt with the real default model: the
report's shape, the budgets kept, and the model's own forward given back after each wrapped
run (the bench wraps and unwraps it per variant)."""

from __future__ import annotations

import pytest

from benchmarks.runtime import passkey_api

pytestmark = pytest.mark.slow


def test_passkey_api_bench_reports_each_variant_through_wrapped_generate(
        tmp_path, monkeypatch, default_model_dir):
    real_engine = passkey_api.H3Engine

    def engine(**kw):  # the session's converted default model (no second conversion)
        return real_engine(**kw) if "model" in kw else real_engine(model_path=default_model_dir, **kw)

    monkeypatch.setattr(passkey_api, "H3Engine", engine)
    wrapped_calls = []
    real_h3_answer = passkey_api._h3_answer

    def spy(model, tok, ids, full_kv, frac, kv_dir):
        own = model.forward
        out = real_h3_answer(model, tok, ids, full_kv, frac, kv_dir)
        wrapped_calls.append((frac, model.forward == own))  # the forward is given back
        return out

    monkeypatch.setattr(passkey_api, "_h3_answer", spy)
    report = passkey_api.run_passkey_api(tmp_path, quick=True, lengths=[1024], first_seed=3)
    assert report["prompts"] == 1 and len(report["rows"]) == 1
    row = report["rows"][0]
    assert 1000 <= row["length"] <= 1024 and row["depth"] == 0.5
    assert wrapped_calls == [(0.2, True), (0.1, True)]
    for name in ("h3_20%", "h3_10%"):
        assert row[name]["mode"] == "sparse"  # the budget forced the tiers
        assert row[name]["hot_peak_bytes"] <= row[name]["hot_budget_bytes"] < row[name]["full_kv_bytes"]
        assert row[name]["score"] in (0.0, 1.0)
    assert report["hot_budget_never_exceeded"]
    solved = report["prompts_full_solves"]
    assert solved == int(row["full"]["score"] > 0)
    if solved:
        assert report["retention_vs_full"]["h3_10%"] == row["h3_10%"]["score"] / row["full"]["score"]
