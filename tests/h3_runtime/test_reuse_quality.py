"""Cold reuse with the real default model (short texts, so it stays a few seconds): prefix reuse
is token-for-token equal to a full prefill; re-positioned spans with selective recompute stay
closer to the full prefill than without it."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from h3_runtime.kvcache.cold import KVBlockStore
from h3_runtime.reuse.doc_kv import DocumentKV
from h3_runtime.reuse.prompt import ChunkText
from h3_runtime.reuse.runtime import ReuseRuntime

pytestmark = pytest.mark.slow
REPORT = [
    ChunkText("r:c0", 1, "Annual report 2023. Total revenue was 48.7 million euros, up 12% on "
                         "2022. The board proposes a dividend of 1.10 euros per share."),
    ChunkText("r:c1", 2, "Risks. The credit facility with Dunmore Bank carries an interest rate "
                         "of 5% and a change of control clause. A claim for damages of 2.75 "
                         "million euros is pending before the court in Porto."),
]
NOTE = [ChunkText("n:c0", 1, "Memo. The chief executive officer of Elmstead Logistics is Jonas "
                             "Lindqvist, who was born in Ljubljana and joined in 2019. " * 3)]


@pytest.fixture(scope="module")
def runtime(default_model_dir, tmp_path_factory):
    tok = AutoTokenizer.from_pretrained(default_model_dir)
    model = AutoModelForCausalLM.from_pretrained(default_model_dir, dtype=torch.float32).eval()
    root = tmp_path_factory.mktemp("kv")
    store = DocumentKV(KVBlockStore(root, 10**9), root / "docs")
    return ReuseRuntime(model, tok, store)  # PlainCache: full attention


def test_prefix_reuse_equals_full_prefill_token_for_token(runtime):
    runtime.precompute("report", REPORT)
    segs = runtime.document_segments("report", REPORT, "What was the total revenue in 2023?")
    reused = runtime.answer(segs, max_new_tokens=24)
    full = runtime.answer(segs, max_new_tokens=24, reuse=False)
    assert reused.stats["kv_tokens_loaded_cold"] == reused.stats["kv_tokens_exact_prefix"] > 60
    question = len(runtime.layout.question_ids("What was the total revenue in 2023?"))
    assert reused.stats["prefill_tokens_computed"] == question  # only the question is computed
    assert reused.token_ids == full.token_ids
    assert "48.7" in full.text  # the real model reads the document


def test_selective_recompute_brings_repositioned_spans_closer(runtime):
    runtime.precompute("report", REPORT)
    runtime.precompute("note", NOTE)
    evidence = [("report", c) for c in REPORT] + [("note", c) for c in NOTE]
    segs = runtime.evidence_segments(evidence, "Where was the chief executive officer born?")
    full = runtime.answer(segs, max_new_tokens=20, reuse=False)
    r16 = runtime.answer(segs, max_new_tokens=20, recompute_tokens=16)
    r0 = runtime.answer(segs, max_new_tokens=20, recompute_tokens=0)
    assert r0.stats["kv_tokens_loaded_cold"] > r16.stats["kv_tokens_loaded_cold"] > 0

    def agree(a):
        return next((i for i, (x, y) in enumerate(zip(a.token_ids, full.token_ids,
                                                      strict=False)) if x != y),
                    min(len(a.token_ids), len(full.token_ids)))

    assert "Ljubljana" in full.text  # the reference answer is right
    assert agree(r16) >= max(agree(r0), 5)  # recompute keeps at least as close, and close
