"""When the hot budget holds everything, H3 is exact: greedy output equals DynamicCache token
for token (tiny random Llama, and the real default model); with everything in the slots the
sparse path matches full attention's logits."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache

from h3_runtime.engine import H3Engine
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama


def greedy_dynamic(model, ids, n):
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=n, do_sample=False, cache=DynamicCache(config=model.config))
    return out[0, ids.shape[1]:].tolist()


@pytest.mark.parametrize("seed", [0, 1])
def test_greedy_equals_dynamic_cache_tiny_llama(cold_dir, seed):
    model = tiny_llama(layers=3, seed=seed)
    ids = torch.randint(0, 128, (1, 200), generator=torch.Generator().manual_seed(seed))
    ref = greedy_dynamic(model, ids, 24)
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=cold_dir)
    assert engine.generate(ids, max_new_tokens=24, return_ids=True) == ref
    assert engine.stats()["mode"] == "exact"
    assert engine.stats()["hot_peak_bytes"] <= engine.budget_bytes
    # the unmodified model's own generate, through wrap_forward
    model.forward = engine.wrap_forward(model.forward)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=24, do_sample=False)
    assert out[0, 200:].tolist() == ref
    assert engine.stats()["hot_peak_bytes"] <= engine.budget_bytes


def test_wrapping_first_on_a_fresh_home_fits_the_key_basis_without_recursing(cold_dir):
    """The documented first use: wrap the model, then call its own generate, with no key basis
    cached under H3_HOME yet. Fitting the basis runs the model, which must not go through the
    wrapped forward (that builds a tiered cache, which needs the basis: RecursionError)."""
    model = tiny_llama(layers=3, seed=2)
    ids = torch.randint(0, 128, (1, 120), generator=torch.Generator().manual_seed(2))
    ref = greedy_dynamic(model, ids, 12)
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=cold_dir)
    model.forward = engine.wrap_forward(model.forward)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=12, do_sample=False)
    assert out[0, 120:].tolist() == ref
    assert engine.key_basis.ndim == 4  # fitted on the way, once


def test_a_cache_made_in_inference_mode_is_released_outside_it(cold_dir):
    """`engine.generate` runs in inference mode; the wrapped model's own `generate` (no_grad)
    afterwards retires that cache, whose tier tensors are inference tensors: releasing them
    must not update them in place outside inference mode (RuntimeError)."""
    model = tiny_llama(layers=2, seed=5)
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(5))
    budget = kv_bytes_per_token(model) * 120  # sparse: warm arenas, sketches, slots
    engine = H3Engine(model=model, hbm_size_gb=budget / 2**30, cold_storage_path=cold_dir,
                      config={"runtime": {"block_tokens": 16, "recent_tokens": 16,
                                          "prefill_chunk_tokens": 32}})
    first = engine.generate(ids, max_new_tokens=8, return_ids=True)
    assert engine.stats()["mode"] == "sparse"
    model.forward = engine.wrap_forward(model.forward)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=8, do_sample=False)[0, 400:].tolist()
    assert out == first  # the same question on a fresh cache: the same tokens
    engine.new_cache()  # and that one, made outside inference mode, released again


def test_a_batch_that_needs_the_tiers_is_refused_with_the_reason(cold_dir):
    """Exact mode takes a batch while its KV fits; past that the tiers serve one sequence at a
    time, and the error says so (not a hot-budget figure the user cannot act on)."""
    model = tiny_llama(layers=2, seed=6)
    ids = torch.randint(0, 128, (2, 300), generator=torch.Generator().manual_seed(6))
    engine = H3Engine(model=model, hbm_size_gb=kv_bytes_per_token(model) * 400 / 2**30,
                      cold_storage_path=cold_dir)  # one sequence's 300 tokens fit, two do not
    model.forward = engine.wrap_forward(model.forward)
    with torch.no_grad(), pytest.raises(ValueError, match="batch of 2 sequences.*one by one"):
        model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=4, do_sample=False)
    with torch.no_grad():  # one at a time is served
        out = model.generate(ids[:1], max_new_tokens=4, do_sample=False)
    assert out.shape == (1, 304)


@pytest.mark.parametrize("prompt", [[], torch.zeros(0, dtype=torch.long), "", [0.5, 1.5]])
def test_an_empty_or_non_integer_prompt_is_refused_naming_it(cold_dir, prompt):
    """Caught before the model runs, with the reason (not a reshape error from inside torch)."""
    engine = H3Engine(model=tiny_llama(layers=2), hbm_size_gb=0.001, cold_storage_path=cold_dir,
                      tokenizer=_NoTokens())
    with pytest.raises(ValueError, match="prompt"):
        engine.generate(prompt, max_new_tokens=2)


class _NoTokens:
    """A tokenizer that turns any text into no tokens (as some do with an empty string)."""

    eos_token_id = None

    def __call__(self, text, **kwargs):
        import types

        return types.SimpleNamespace(input_ids=torch.zeros(1, 0, dtype=torch.long))


def test_sparse_path_with_all_blocks_hot_matches_full_attention(cold_dir):
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 300), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = model(ids).logits[0, -1]
    cfg = {"runtime": {"block_tokens": 16, "recent_tokens": 32, "prefill_chunk_tokens": 64}}
    engine = H3Engine(model=model, hbm_size_gb=1e-3, cold_storage_path=cold_dir, config=cfg)
    cache = engine.new_cache(exact_allowed=False)  # chunked prefill through the tiers
    model.set_attn_implementation("h3")
    with torch.no_grad():
        out = engine._forward_chunks(engine._raw_forward(), cache, input_ids=ids)
    assert cache.sparse and engine.geometry.n_slots * 16 >= 300
    torch.testing.assert_close(out.logits[0, -1], ref, atol=1e-4, rtol=1e-4)


def test_exact_to_sparse_switch_keeps_generation_going(cold_dir):
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(4))
    budget = kv_bytes_per_token(model) * 120  # far below the 400-token KV
    engine = H3Engine(model=model, hbm_size_gb=budget / 2**30, cold_storage_path=cold_dir,
                      config={"runtime": {"block_tokens": 16, "recent_tokens": 16,
                                          "prefill_chunk_tokens": 32}})
    out = engine.generate(ids, max_new_tokens=16, return_ids=True)
    s = engine.stats()
    assert len(out) == 16 and s["mode"] == "sparse"
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"] < s["full_kv_bytes"]
    assert s["tier_hits"]  # blocks were looked up in the tiers


@pytest.mark.slow
def test_greedy_equals_dynamic_cache_default_model(cold_dir):
    engine = H3Engine(hbm_size_gb=0.5, cold_storage_path=cold_dir)
    tok = engine.tokenizer
    text = tok.apply_chat_template([{"role": "user", "content": "Name three colours of the rainbow."}],
                                   tokenize=False, add_generation_prompt=True)
    ids = tok(text, return_tensors="pt").input_ids
    ref = greedy_dynamic(engine.model, ids, 20)
    assert engine.generate(ids, max_new_tokens=20, return_ids=True) == ref
    assert engine.stats()["hot_peak_bytes"] <= engine.budget_bytes


def test_continuation_logits_follow_the_reference_tokens(cold_dir):
    """Teacher forcing: exact mode gives full attention's logits along a given continuation;
    under a small budget the first row is the prefill's (generate's first token) and later rows
    come from the tiered decode path, within the budget."""
    model = tiny_llama(layers=2)
    ids = torch.randint(0, 128, (1, 400), generator=torch.Generator().manual_seed(5))
    cont = torch.randint(0, 128, (12,), generator=torch.Generator().manual_seed(6)).tolist()
    with torch.no_grad():
        ref = model(torch.cat([ids, torch.tensor([cont[:-1]])], 1)).logits[0, 399:]  # (12, V)
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=cold_dir)
    got = engine.continuation_logits(ids, cont)
    assert engine.stats()["mode"] == "exact"
    torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)
    budget = kv_bytes_per_token(model) * 120  # far below the 400-token KV
    small = H3Engine(model=model, hbm_size_gb=budget / 2**30, cold_storage_path=cold_dir,
                     config={"runtime": {"block_tokens": 16, "recent_tokens": 16,
                                         "prefill_chunk_tokens": 32}})
    tiered = small.continuation_logits(ids, cont)
    assert tiered.shape == ref.shape and small.stats()["mode"] == "sparse"
    assert int(tiered[0].argmax()) == small.generate(ids, max_new_tokens=1, return_ids=True)[0]
    assert not torch.allclose(tiered[1:], ref[1:], atol=1e-4)  # the tiers do change later rows
    assert small.stats()["hot_peak_bytes"] <= small.budget_bytes


def test_generate_refuses_a_negative_length_and_decodes_nothing_at_zero(cold_dir):
    engine = H3Engine(model=tiny_llama(layers=2, seed=3), hbm_size_gb=0.01, cold_storage_path=cold_dir)
    ids = torch.randint(0, 128, (1, 20), generator=torch.Generator().manual_seed(3))
    with pytest.raises(ValueError, match="max_new_tokens must be >= 0, got -1"):
        engine.generate(ids, max_new_tokens=-1)
    assert engine.generate(ids, max_new_tokens=0, return_ids=True) == []
