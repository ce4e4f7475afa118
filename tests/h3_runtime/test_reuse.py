"""Mechanics of cold-tier KV reuse on tiny random Llama models (quality uses the real model in
test_reuse_quality.py)."""

from __future__ import annotations

import pytest
import torch
from transformers import DynamicCache, LlamaConfig, LlamaForCausalLM

from h3_runtime.kvcache.checksum import IntegrityError
from h3_runtime.kvcache.cold import KVBlockStore
from h3_runtime.models import fingerprint
from h3_runtime.reuse.assemble import CachedSpan, Segment, build_cache, greedy_decode
from h3_runtime.reuse.cache_io import PlainCache
from h3_runtime.reuse.doc_kv import DocumentKV, document_hashes, precompute_document, prefill_kv
from h3_runtime.reuse.rope import rope_inv_freq, shift_keys


def tiny_llama(layers: int = 2, seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=97, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                      max_position_embeddings=4096, rope_theta=10000.0)
    return LlamaForCausalLM(cfg).eval()


def ids(n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, 97, (n,), generator=g).tolist()


def doc_store(root, max_bytes: int = 10**8, block_tokens: int = 64) -> DocumentKV:
    """Document KV over a KV block store in `root` (as the runtime resource arranges them)."""
    return DocumentKV(KVBlockStore(root, max_bytes), root / "docs", block_tokens)


def stored(model, root, doc: list[int], doc_id: str = "d"):
    """(store, index) of `doc`'s KV prefilled once into a fresh store under `root`."""
    store = doc_store(root)
    index, computed = precompute_document(model, store, doc_id=doc_id, token_ids=doc,
                                          model_key=fingerprint(model))
    assert computed
    return store, index


def full_prefill(model, prompt: list[int], new: int = 8):
    cache = PlainCache()
    logits, _ = build_cache(model, [Segment(tuple(prompt))], cache, store=None, inv_freq=None)
    return logits, greedy_decode(model, cache, logits, new)


def test_shift_keys_equals_keys_computed_at_shifted_positions():
    model = tiny_llama(layers=1)
    tokens = torch.tensor([ids(40, 1)])
    inv = rope_inv_freq(model)
    for p0, d in [(0, 7), (5, 1000), (300, -250)]:
        pos = torch.arange(p0, p0 + 40)[None]
        c1, c2 = DynamicCache(), DynamicCache()
        model(input_ids=tokens, position_ids=pos, cache=c1, use_cache=True)
        model(input_ids=tokens, position_ids=pos + d, cache=c2, use_cache=True)
        moved = shift_keys(c1.layers[0].keys, d, inv)  # (1, H_kv, T, D)
        assert torch.allclose(moved, c2.layers[0].keys, atol=1e-4), (p0, d)
        assert not torch.allclose(c1.layers[0].keys, c2.layers[0].keys, atol=1e-2)
        assert torch.equal(c1.layers[0].values, c2.layers[0].values)


def test_prefix_reuse_is_token_for_token_equal(tmp_path):
    model = tiny_llama()
    doc, question = ids(300, 2), ids(12, 3)
    store, meta = stored(model, tmp_path, doc)
    assert meta.tokens == 300 and len(meta.blocks) == 5  # 4 x 64 + a 44-token tail
    cache = PlainCache()
    segs = [Segment(tuple(doc), CachedSpan(meta.key, 0)), Segment(tuple(question))]
    logits, stats = build_cache(model, segs, cache, store=store, inv_freq=rope_inv_freq(model))
    assert stats.kv_tokens_loaded_cold == 300 and stats.exact_tokens == 300
    assert stats.prefill_tokens_computed == 12 and stats.prompt_tokens == 312
    ref_logits, ref_tokens = full_prefill(model, doc + question, new=16)
    assert torch.allclose(logits, ref_logits, atol=1e-4)
    assert greedy_decode(model, cache, logits, 16) == ref_tokens


def test_repositioned_span_is_exact_for_one_layer_model(tmp_path):
    # With one layer a token's KV depends only on the token and its position, so moving a stored
    # span to a new position must reproduce a full prefill: this checks the re-positioning path.
    model = tiny_llama(layers=1)
    doc = ids(200, 4)
    store, meta = stored(model, tmp_path, doc)
    lead, question = ids(37, 5), ids(9, 6)
    segs = [Segment(tuple(lead)), Segment(tuple(doc[50:150]), CachedSpan(meta.key, 50)),
            Segment(tuple(question))]
    logits, stats = build_cache(model, segs, PlainCache(), store=store,
                                inv_freq=rope_inv_freq(model), recompute_tokens=4)
    assert stats.kv_tokens_loaded_cold == 96 and stats.exact_tokens == 0
    assert stats.prefill_tokens_computed == 37 + 4 + 9
    ref_logits, _ = full_prefill(model, lead + doc[50:150] + question)
    assert torch.allclose(logits, ref_logits, atol=1e-4)


def test_flipped_byte_is_detected_and_span_recomputed(tmp_path):
    model = tiny_llama()
    doc, question = ids(130, 7), ids(5, 8)
    store, meta = stored(model, tmp_path, doc)
    path = store.blocks.path_for(meta.block_keys()[1])
    raw = bytearray(path.read_bytes())
    raw[-1234] ^= 0x10
    path.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match="checksum"):
        store.load(meta.key, 0, 130)
    segs = [Segment(tuple(doc), CachedSpan(meta.key, 0)), Segment(tuple(question))]
    logits, stats = build_cache(model, segs, PlainCache(), store=store,
                                inv_freq=rope_inv_freq(model))
    assert stats.integrity_errors == 1 and stats.kv_tokens_loaded_cold == 0
    assert stats.prefill_tokens_computed == 135
    assert torch.allclose(logits, full_prefill(model, doc + question)[0], atol=1e-5)
    assert store.find("d", meta.model_key) is None  # dropped: rebuilt by the KV asset, never reused


def test_store_evicts_to_cap_and_survives_restart(tmp_path):
    model = tiny_llama()
    key = fingerprint(model)
    one_doc = prefill_kv(model, ids(128, 0))[0].numel() * 4 * 2  # bytes of 128 tokens of K and V
    store = doc_store(tmp_path, max_bytes=int(2.5 * one_doc))
    metas = [precompute_document(model, store, doc_id=f"d{i}", token_ids=ids(128, 10 + i),
                                 model_key=key)[0] for i in range(2)]
    store.load(metas[0].key, 0, 128)  # d0 used more recently than d1
    third, _ = precompute_document(model, store, doc_id="d2", token_ids=ids(128, 12), model_key=key)
    assert store.usage_bytes() <= store.blocks.max_bytes
    reopened = doc_store(tmp_path, max_bytes=store.blocks.max_bytes)  # a new process
    assert reopened.find("d1", key) is None  # least recently used: (partly) evicted
    assert reopened.find("d0", key) is not None and reopened.find("d2", key) is not None
    k, v = reopened.load(third.key)
    k2, v2 = prefill_kv(model, ids(128, 12))
    assert torch.equal(k, k2) and torch.equal(v, v2)
    again, computed = precompute_document(model, reopened, doc_id="d2", token_ids=ids(128, 12),
                                          model_key=key)
    assert not computed and again.key == third.key


def test_documents_with_a_common_prefix_share_its_blocks(tmp_path):
    model = tiny_llama()
    store = doc_store(tmp_path)
    common = ids(128, 20)
    a, _ = precompute_document(model, store, doc_id="a", token_ids=common + ids(40, 21),
                               model_key="m")
    files = len(store.blocks)
    b, _ = precompute_document(model, store, doc_id="b", token_ids=common + ids(40, 22),
                               model_key="m")
    assert a.blocks[:2] == b.blocks[:2] and a.blocks[2] != b.blocks[2]
    assert len(store.blocks) == files + 1  # only b's own last block is new
    assert store.drop_document("a") == [a.key]
    assert store.find("b", "m") is not None  # the shared blocks stay with b
    assert len(store.blocks) == files


def test_key_changes_with_model_and_tokens():
    a, b = tiny_llama(seed=0), tiny_llama(seed=1)
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a) == fingerprint(tiny_llama(seed=0))
    assert document_hashes("m", [1, 2, 3], 2) != document_hashes("m", [1, 2, 4], 2)
    assert document_hashes("m", [1, 2, 3], 2) != document_hashes("n", [1, 2, 3], 2)
    assert document_hashes("m", [1, 2, 3], 2)[0] == document_hashes("m", [1, 2, 4], 2)[0]


def test_first_format_folders_are_found_and_removed(tmp_path):
    store = doc_store(tmp_path)
    old = tmp_path / "docs" / ("ab" * 16)
    old.mkdir(parents=True)
    (old / "meta.json").write_text('{"doc_id": "d", "format_version": 1}')
    (old / "g0000.kv").write_bytes(b"\0" * 64)
    assert store.legacy_documents() == [old] and store.find("d", "m") is None
    assert store.drop_legacy() == 1 and not old.exists() and store.legacy_documents() == []


def test_cold_kv_into_the_engines_tiered_cache(tmp_path):
    from h3_runtime.engine import H3Engine

    model = tiny_llama()
    store = doc_store(tmp_path / "kv")
    doc, question = ids(600, 2), ids(10, 3)
    meta, _ = precompute_document(model, store, doc_id="d", token_ids=doc, model_key="m")
    segs = [Segment(tuple(doc), CachedSpan(meta.key, 0)), Segment(tuple(question))]
    ref_logits, ref_tokens = full_prefill(model, doc + question, new=10)
    small = {"runtime": {"block_tokens": 16, "recent_tokens": 64, "prefill_chunk_tokens": 64}}
    for gb, exact in ((1.0, True), (0.0003, False)):
        engine = H3Engine(model=model, tokenizer=None, hbm_size_gb=gb,
                          cold_storage_path=tmp_path / "kv", config=small)
        model.set_attn_implementation("h3")
        cache = engine.new_cache()
        logits, stats = build_cache(model, segs, cache, store=store, inv_freq=rope_inv_freq(model))
        tokens = greedy_decode(model, cache, logits, 10)
        assert stats.kv_tokens_loaded_cold == 600 and cache.sparse is not exact
        assert cache.pool.peak_bytes <= engine.budget_bytes  # loaded KV respects the hot budget
        if exact:
            assert tokens == ref_tokens and torch.allclose(logits, ref_logits, atol=1e-5)
    model.set_attn_implementation("sdpa")


def test_greedy_decode_reports_each_choice_lead_over_the_runner_up():
    class Fixed(torch.nn.Module):  # logits (V=3) that only depend on the step
        def __init__(self):
            super().__init__()
            self.step = 0

        def forward(self, input_ids, cache=None, use_cache=True):
            self.step += 1
            logits = torch.tensor([[[0.0, 2.0, 1.5]]]) if self.step == 1 else torch.tensor([[[3.0, 0.0, 0.0]]])
            return type("Out", (), {"logits": logits})()

    class NoCache:
        def note_tokens(self, ids):
            pass

    margins: list[float] = []
    out = greedy_decode(Fixed(), NoCache(), torch.tensor([1.0, 0.0, 0.75]), 3, margins=margins)
    assert out == [0, 1, 0] and margins == [0.25, 0.5, 3.0]
