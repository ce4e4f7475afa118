"""The runtime serves RoPE + GQA models other than Llama through the same extension points
(README, runtime: "Llama / Qwen / Mistral style"): tiny randomly initialised Qwen2 (biases on
q/k/v), Qwen3 (q/k RMS norms before RoPE) and Mistral configs, mechanics only.

- budget that holds the whole KV: greedy output equals DynamicCache, token for token, through
  `engine.generate` and through the model's own `generate` wrapped;
- budget far below the KV: the exact streamed prefill gives full attention's last logits, decode
  runs on the tiers within the hot budget;
- a model without RoPE is refused naming the reason.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache

from h3_runtime.engine import H3Engine
from h3_runtime.models import ModelLoadError
from tests.h3_runtime.conftest import kv_bytes_per_token

ARCHITECTURES = {
    "qwen2": {},
    "qwen3": {},
    "mistral": {"sliding_window": None},
}


def tiny(model_type: str, seed: int = 0, **extra):
    torch.manual_seed(seed)
    cfg = AutoConfig.for_model(model_type, vocab_size=128, hidden_size=64, intermediate_size=128,
                               num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                               head_dim=16, max_position_embeddings=4096, **extra)
    return AutoModelForCausalLM.from_config(cfg).eval()


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_exact_mode_equals_dynamic_cache(cold_dir, arch):
    model = tiny(arch, **ARCHITECTURES[arch])
    ids = torch.randint(0, 128, (1, 150), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model.generate(ids, max_new_tokens=16, do_sample=False,
                             cache=DynamicCache(config=model.config))[0, 150:].tolist()
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=cold_dir)
    assert engine.generate(ids, max_new_tokens=16, return_ids=True) == ref
    assert engine.stats()["mode"] == "exact"
    model.forward = engine.wrap_forward(model.forward)
    with torch.no_grad():
        assert model.generate(ids, max_new_tokens=16, do_sample=False)[0, 150:].tolist() == ref


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_tiers_prefill_exactly_and_decode_within_budget(cold_dir, arch):
    model = tiny(arch, seed=3, **ARCHITECTURES[arch])
    ids = torch.randint(0, 128, (1, 600), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        ref = model(ids).logits[0, -1]
    budget = kv_bytes_per_token(model) * 150  # a quarter of the prompt's KV
    engine = H3Engine(model=model, hbm_size_gb=budget / 2**30, cold_storage_path=cold_dir)
    logits = engine.continuation_logits(ids, [int(ref.argmax())])
    torch.testing.assert_close(logits[0], ref.float(), atol=1e-4, rtol=1e-4)
    out = engine.generate(ids, max_new_tokens=12, return_ids=True)
    s = engine.stats()
    assert len(out) == 12 and out[0] == int(ref.argmax())
    assert s["mode"] == "sparse"
    assert s["hot_peak_bytes"] <= s["hot_budget_bytes"] < s["full_kv_bytes"]


def test_a_model_without_rope_is_refused_naming_the_reason(cold_dir):
    torch.manual_seed(0)
    cfg = AutoConfig.for_model("gpt2", vocab_size=128, n_embd=64, n_layer=2, n_head=4,
                               bos_token_id=0, eos_token_id=0)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    with pytest.raises(ModelLoadError, match="RoPE"):
        H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=cold_dir)
