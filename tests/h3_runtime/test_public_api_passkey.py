"""The issue's own check, as a user runs it: a passkey hidden in varied prose (~2.4K tokens,
the needle at 10% depth), the unmodified model's `generate` through `engine.wrap_forward`, the
shipped defaults, a hot budget of 10% of the full KV. H3 must find the passkey full attention finds, token for token,
within its budget (the real default model: what selection keeps decides the answer)."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from benchmarks.evals.ruler_tasks import passkey
from h3_runtime.engine import H3Engine
from tests.h3_runtime.conftest import kv_bytes_per_token

pytestmark = pytest.mark.slow


def test_wrapped_generate_finds_the_passkey_at_10_percent(default_model_dir, tmp_path):
    tok = AutoTokenizer.from_pretrained(default_model_dir)
    model = AutoModelForCausalLM.from_pretrained(default_model_dir).eval()
    sample = passkey(tok, 2400, 0.1, seed=21)  # an early needle: far from the recent window
    ids = torch.tensor([sample.ids])
    model.set_attn_implementation("sdpa")  # full attention as transformers runs it
    with torch.no_grad():
        full = model.generate(ids, max_new_tokens=12, do_sample=False)[0, ids.shape[1]:].tolist()
    assert sample.answers[0] in tok.decode(full)  # full attention finds it: the reference

    full_kv = ids.shape[1] * kv_bytes_per_token(model)
    engine = H3Engine(model=model, tokenizer=tok, hbm_size_gb=0.1 * full_kv / 2**30,
                      cold_storage_path=tmp_path / "kv")
    model.forward = engine.wrap_forward(model.forward)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=12, do_sample=False)[0, ids.shape[1]:].tolist()
    stats = engine.stats()
    assert stats["mode"] == "sparse"  # the budget forced the tiers
    assert stats["hot_peak_bytes"] <= stats["hot_budget_bytes"] < stats["full_kv_bytes"]
    assert out == full
