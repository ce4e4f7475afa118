"""Cold-tier KV reuse through the engine: a document's KV stored once as blocks is found again
by a new engine (a restart), verified, and generation from it on the tiered cache equals
recomputing everything; a corrupted block is detected and recomputed."""

from __future__ import annotations

import torch

from h3_runtime.engine import H3Engine
from h3_runtime.models import fingerprint
from h3_runtime.reuse.assemble import CachedSpan, Segment
from h3_runtime.reuse.doc_kv import DocumentKV, precompute_document
from h3_runtime.reuse.rope import shift_keys
from h3_runtime.reuse.runtime import ReuseRuntime
from tests.h3_runtime.conftest import tiny_llama

CFG = {"runtime": {"block_tokens": 16}}


class _Tok:  # ReuseRuntime's prompt layout wants a tokenizer; these tests give token ids
    eos_token_id = None

    def __call__(self, text, add_special_tokens=False):
        return type("Enc", (), {"input_ids": [3] * len(text.split())})()

    def apply_chat_template(self, *a, **k):
        raise ValueError("no template")

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def _runtime(model, root) -> ReuseRuntime:
    """The runtime resource's arrangement: document KV indexed over the engine's block store."""
    engine = H3Engine(model=model, hbm_size_gb=0.01, cold_storage_path=root, config=CFG)
    model.set_attn_implementation("h3")
    store = DocumentKV(engine.cold, root / "docs", engine.config.runtime.block_tokens)
    return ReuseRuntime(model, _Tok(), store, cache_factory=engine.new_cache,
                        cache_stats=engine.cache_stats)


def test_document_kv_survives_restart_and_equals_recompute(tmp_path):
    model = tiny_llama(layers=2)
    doc = torch.randint(0, 128, (100,), generator=torch.Generator().manual_seed(7)).tolist()
    question = (5, 6, 7, 8, 9)
    rt = _runtime(model, tmp_path)
    index, computed = precompute_document(model, rt.store, doc_id="d", token_ids=doc,
                                          model_key=fingerprint(model))
    assert computed and len(index.blocks) == 7  # six blocks of 16 tokens + a 4-token tail
    segs = [Segment(tuple(doc), CachedSpan(index.key, 0)), Segment(question)]
    ref = rt.answer(segs, max_new_tokens=10, reuse=False)
    restarted = _runtime(model, tmp_path)  # a new engine and store over the same folder
    found = restarted.store.find("d", restarted.model_key)
    assert found is not None and found.key == index.key
    out = restarted.answer(segs, max_new_tokens=10)
    assert out.token_ids == ref.token_ids
    assert out.stats["kv_tokens_loaded_cold"] == 100 and out.stats["prefill_tokens_computed"] == 5
    # a different prefix is another document: nothing found under its key
    assert restarted.store.find("other", restarted.model_key) is None
    model.set_attn_implementation("sdpa")


def test_corrupted_block_is_detected_and_recomputed(tmp_path):
    model = tiny_llama(layers=2)
    doc = list(range(20, 52))
    rt = _runtime(model, tmp_path)
    index, _ = precompute_document(model, rt.store, doc_id="d", token_ids=doc, model_key="m")
    victim = rt.store.blocks.path_for(index.block_keys()[1])
    data = bytearray(victim.read_bytes())
    data[-3] ^= 0x10
    victim.write_bytes(bytes(data))
    segs = [Segment(tuple(doc), CachedSpan(index.key, 0)), Segment((5, 6, 7))]
    out = rt.answer(segs, max_new_tokens=6)
    assert out.stats["integrity_errors"] == 1 and out.stats["kv_tokens_loaded_cold"] == 0
    assert out.token_ids == rt.answer(segs, max_new_tokens=6, reuse=False).token_ids
    assert rt.store.find("d", "m") is None  # dropped: the kv asset prefills it again
    model.set_attn_implementation("sdpa")


def test_rope_shift_equals_keys_computed_at_the_later_position():
    model = tiny_llama(layers=1)
    rot = model.model.rotary_emb
    attn = model.model.layers[0].self_attn
    x = torch.randn(1, 8, model.config.hidden_size)
    raw = attn.k_proj(x).view(1, 8, -1, attn.head_dim).transpose(1, 2)  # (1, H_kv, 8, D)

    def rope_at(start: int) -> torch.Tensor:
        pos = torch.arange(start, start + 8)[None]
        cos, sin = rot(x, pos)
        from transformers.models.llama.modeling_llama import apply_rotary_pos_emb
        _, k = apply_rotary_pos_emb(raw, raw, cos, sin)
        return k

    with torch.no_grad():
        shifted = shift_keys(rope_at(10), 500, rot.inv_freq)
        torch.testing.assert_close(shifted, rope_at(510), atol=1e-4, rtol=1e-4)
