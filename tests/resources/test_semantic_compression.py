"""PCA, learned pooling, document index and CLIP as pure functions on small arrays."""

import numpy as np
import pytest
import torch

from h3.resources.semantic.clip import load_clip, tiny_random_clip
from h3.resources.semantic.contrastive import ChunkInfo, positive_pairs, separation, train_pooler
from h3.resources.semantic.doc_index import build_index, document_vector, measure
from h3.resources.semantic.pca import PcaModel, fit_pca
from h3.resources.semantic.pooling import MAX_PARAMETERS, ChunkPooler, num_parameters, summarise
from h3.resources.settings import Settings
from h3_runtime.config import ConfigError


def low_rank_tokens(n=3000, d=384, rank=20, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    basis = rng.normal(size=(rank, d))
    return (rng.normal(size=(n, rank)) @ basis + 0.01 * rng.normal(size=(n, d))).astype(np.float32)


def test_pca_below_128_is_refused_by_config_and_by_the_fit():
    with pytest.raises(ConfigError, match="compression_pca_dim"):
        Settings.parse({"hbf": {"compression_pca_dim": 64}})
    with pytest.raises(ConfigError, match=">= 128"):
        fit_pca(low_rank_tokens(), 64)


def test_pca_fit_captures_a_low_rank_corpus_and_round_trips(tmp_path):
    x = low_rank_tokens()
    model = fit_pca(x, 128)
    assert model.components.shape == (128, 384)
    assert model.explained_variance_ratio.sum() > 0.99  # the corpus has rank 20
    assert np.allclose(model.components @ model.components.T, np.eye(128), atol=1e-4)
    assert model.transform(x[:5]).shape == (5, 128)
    model.save(tmp_path / "pca.safetensors", {"corpus": "test"})
    again = PcaModel.load(tmp_path / "pca.safetensors")
    assert np.array_equal(again.components, model.components)
    assert fit_pca(x, 128).components.tobytes() == model.components.tobytes()  # deterministic


def topic_corpus(docs=4, chunks=8, tokens=40, dim=128, seed=0):
    """Chunks whose tokens scatter around one direction per document (its topic)."""
    rng = np.random.default_rng(seed)
    arrays, infos = [], []
    for d in range(docs):
        centre = rng.normal(size=dim) * 2
        for c in range(chunks):
            arrays.append((centre + rng.normal(size=(tokens, dim))).astype(np.float32))
            infos.append(ChunkInfo(f"doc{d}", c, f"section{c // 4}"))
    return arrays, infos


def test_pooler_is_small_and_summaries_are_unit_512d():
    model = ChunkPooler(in_dim=128)
    assert num_parameters(model) < MAX_PARAMETERS
    arrays, _ = topic_corpus(docs=1, chunks=3)
    out = summarise(model, arrays + [np.zeros((0, 128), np.float32)])
    assert out.shape == (4, 512)
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


def test_positive_pairs_stay_inside_a_document():
    _, infos = topic_corpus(docs=2, chunks=5)
    pairs = positive_pairs(infos)
    assert pairs and all(infos[i].doc_id == infos[j].doc_id for i, j in pairs)


def test_contrastive_training_separates_topics_and_is_deterministic():
    arrays, infos = topic_corpus()
    model, report = train_pooler(arrays, infos, in_dim=128, seed=3, steps=40)
    again, _ = train_pooler(arrays, infos, in_dim=128, seed=3, steps=40)
    assert report.trained
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                  again.state_dict().values(), strict=True))
    assert report.same_topic_cosine >= 0.85
    assert report.same_topic_cosine - report.different_topic_cosine >= 0.3
    untrained = ChunkPooler(in_dim=128)
    same0, diff0 = separation(summarise(untrained, arrays), infos)
    assert report.same_topic_cosine - report.different_topic_cosine > same0 - diff0


def test_one_document_is_not_trained_and_says_so():
    arrays, infos = topic_corpus(docs=1)
    _, report = train_pooler(arrays, infos, in_dim=128)
    assert not report.trained and "2 documents" in report.note


def unit_rows(n, d=1024, seed=0):
    v = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_document_vector_is_1024d_unit():
    v = document_vector(unit_rows(5, 512))
    assert v.shape == (1024,) and abs(np.linalg.norm(v) - 1) < 1e-5


@pytest.mark.parametrize("n,requested,kind", [(50, "IVF_PQ", "exact"), (50, "HNSW", "HNSW"),
                                              (1200, "IVF_PQ", "IVF_PQ"),
                                              (1200, "IVF_SQ", "IVF_SQ")])
def test_index_kind_follows_config_and_corpus_size(n, requested, kind):
    vectors = unit_rows(n)
    index, used, _ = build_index(vectors, requested)
    assert used == kind
    report = measure(index, vectors, used, requested, 0.0, n_queries=10)
    assert report.bytes > 0 and report.query_ms > 0
    # each vector finds itself first (PQ is lossy, so only mostly for IVF_PQ)
    _, ids = index.search(vectors[:10], 1)
    assert (ids[:, 0] == np.arange(10)).mean() >= (0.7 if kind == "IVF_PQ" else 1.0)


def test_clip_without_weights_says_why_and_tiny_clip_embeds(tmp_path):
    clip, why = load_clip(None)
    assert clip is None and "clip_weights" in why and "caption" in why
    clip, why = load_clip(str(tmp_path / "missing.bin"))
    assert clip is None and "no such file" in why
    from PIL import Image

    paths = []
    for i, colour in enumerate([(255, 0, 0), (0, 0, 255)]):
        paths.append(tmp_path / f"f{i}.png")
        Image.new("RGB", (60, 40), colour).save(paths[-1])
    vecs = tiny_random_clip().embed_images(paths)
    assert vecs.shape == (2, 16)
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    with pytest.raises(OSError, match="nope.png"):
        tiny_random_clip().embed_images([tmp_path / "nope.png"])


def test_token_sources_and_their_file_round_trip(tmp_path):
    from h3.resources.models.embedder import get_embedder
    from h3.resources.semantic.tokens import (
        encode_tokens,
        load_doc_tokens,
        save_doc_tokens,
        token_source,
    )

    model = get_embedder()
    texts = ["Tandem Motors bought Lumen Batteries.", ""]
    static = encode_tokens(model, texts, "static")
    contextual = encode_tokens(model, texts, "contextual")
    assert static[0].shape[1] == contextual[0].shape[1] == 384 and static[1].shape[0] == 0
    # the contextual pass adds [CLS]/[SEP]; the static lookup takes the word pieces only
    assert contextual[0].shape[0] == static[0].shape[0] + 2
    with pytest.raises(ValueError, match="token source"):
        encode_tokens(model, texts, "bogus")
    save_doc_tokens(tmp_path / "d.npz", ["d:c0", "d:c1"], static, "static")
    ids, back = load_doc_tokens(tmp_path / "d.npz")
    assert ids == ["d:c0", "d:c1"] and token_source(tmp_path / "d.npz") == "static"
    assert np.allclose(back[0], static[0], atol=1e-2)  # float16 on disk
    # the static source's file holds the word-piece ids only: the same numbers on load (the
    # table's rows rounded through float16, as the vector file held them), 384x fewer bytes
    pieces = model.word_piece_ids(texts)
    small = save_doc_tokens(tmp_path / "p.npz", ["d:c0", "d:c1"], None, "static", pieces)
    assert small * 4 < (tmp_path / "d.npz").stat().st_size  # (npz headers dominate 2 chunks)
    ids_p, back_p = load_doc_tokens(tmp_path / "p.npz")
    assert ids_p == ids and token_source(tmp_path / "p.npz") == "static"
    assert all(np.array_equal(a, b) for a, b in zip(back_p, back, strict=True))


def test_hand_written_adamw_matches_torch_optim_adamw():
    from h3.resources.semantic.contrastive import AdamW

    torch.manual_seed(0)
    ours, theirs = torch.nn.Linear(8, 4), torch.nn.Linear(8, 4)
    theirs.load_state_dict(ours.state_dict())
    start = ours.weight.detach().clone()
    opt_ours = AdamW(ours.parameters(), lr=3e-3, weight_decay=1e-4)
    opt_theirs = torch.optim.AdamW(theirs.parameters(), lr=3e-3, weight_decay=1e-4)
    for step in range(20):
        x = torch.randn(16, 8, generator=torch.Generator().manual_seed(step))
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            opt.zero_grad()
            (model(x) ** 2).mean().backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    assert (ours.weight - start).abs().max() > 1e-2  # it did train


def test_search_projection_keeps_dot_products_where_textbook_pca_does_not():
    """Unit vectors with a large shared component (as sentence vectors have): at full dimension
    the search projection keeps every dot product; at a smaller one it keeps them up to the
    dropped variance, while centring + re-normalising changes them wholesale."""
    from h3.resources.semantic.pca import fit_search_projection

    rng = np.random.default_rng(0)
    shared = rng.normal(size=64)
    x = shared + 0.4 * rng.normal(size=(300, 64)) @ np.diag(np.geomspace(2, 0.01, 64))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    exact = x @ x.T
    full = x @ fit_search_projection(x, 64)
    assert np.allclose(full @ full.T, exact, atol=1e-5)
    p = x @ fit_search_projection(x, 16)
    mean = x.mean(axis=0)
    textbook = (x - mean) @ np.linalg.svd(x - mean, full_matrices=False)[2][:16].T
    textbook /= np.linalg.norm(textbook, axis=1, keepdims=True)
    off = ~np.eye(len(x), dtype=bool)
    assert np.abs(p @ p.T - exact).max() < 0.05
    assert np.abs(textbook @ textbook.T - exact)[off].mean() > 0.5

    def nearest(scores: np.ndarray) -> list[set]:  # each vector's 5 nearest others
        scores = np.where(off, scores, -np.inf)
        return [set(row) for row in np.argsort(-scores, axis=1)[:, :5]]

    def kept(approx: np.ndarray) -> float:
        return float(np.mean([len(a & b) / 5 for a, b in zip(nearest(approx), nearest(exact),
                                                             strict=True)]))

    assert kept(p @ p.T) > kept(textbook @ textbook.T) + 0.15
    with pytest.raises(ValueError, match="dim"):
        fit_search_projection(x, 65)
