"""The key basis decode's sketches are written in: fitted once per model, cached under H3_HOME,
refitted when the cached file is torn, and holding more of the keys' energy than any other
subspace of its rank would."""

from __future__ import annotations

import logging

import torch
from transformers import DynamicCache

from h3_runtime.engine import H3Engine
from h3_runtime.home import under_home
from h3_runtime.kvcache import key_basis as kb
from h3_runtime.models import fingerprint
from tests.h3_runtime.conftest import kv_bytes_per_token, tiny_llama


def _keys(model, ids: torch.Tensor) -> list[torch.Tensor]:
    model.set_attn_implementation("sdpa")
    cache = DynamicCache(config=model.config)
    with torch.inference_mode():
        model(ids, cache=cache, use_cache=True)
    return [layer.keys[0].float().clone() for layer in cache.layers]  # (H_kv, n, D) each


def test_the_basis_is_orthonormal_and_keeps_more_key_energy_than_a_random_subspace():
    model = tiny_llama(layers=2, kv_heads=2, heads=4, hidden=128)  # head_dim 32: rank 8
    basis = kb.key_basis(model, None, fingerprint(model))
    L, H, D, r = basis.shape
    assert (L, H, D, r) == (2, 2, 32, 8) and kb.sketch_rank(64) == 16 == kb.sketch_rank(256)
    eye = torch.eye(r)
    for layer in range(L):
        for h in range(H):
            assert torch.allclose(basis[layer, h].T @ basis[layer, h], eye, atol=1e-4)
    # on the text it was fitted on, no other rank-r subspace keeps more of the keys' energy
    # (PCA's optimality: a wrong or unsorted eigenvector choice fails this); on other text it
    # still keeps more than random subspaces do on average
    g = torch.Generator().manual_seed(0)
    rand = [torch.linalg.qr(torch.randn(D, r, generator=g))[0] for _ in range(8)]
    held_out = torch.randint(5, 120, (1, 512), generator=torch.Generator().manual_seed(3))
    for ids, strict in ((kb._fit_ids(model, None), True), (held_out, False)):
        for layer, k in enumerate(_keys(model, ids)):
            for h in range(H):
                total = k[h].pow(2).sum()
                kept = (k[h] @ basis[layer, h]).pow(2).sum() / total
                others = torch.stack([(k[h] @ p).pow(2).sum() / total for p in rand])
                assert kept > (others.max() if strict else others.mean()) and kept > r / D


def test_the_basis_is_cached_per_model_and_a_torn_file_is_refitted(monkeypatch, caplog, tmp_path):
    monkeypatch.setenv("H3_HOME", str(tmp_path / "home"))  # its own cache, even under `make test`
    model = tiny_llama(layers=2)
    fp = fingerprint(model)
    fits = []
    fit = kb.fit_key_basis
    monkeypatch.setattr(kb, "fit_key_basis", lambda m, ids: fits.append(1) or fit(m, ids))
    first = kb.key_basis(model, None, fp)
    again = kb.key_basis(model, None, fp)
    assert len(fits) == 1 and torch.equal(first, again)  # the second came from H3_HOME
    path = under_home("key_basis", f"{fp}-{kb.BASIS_TEXT.stem}-r{kb.sketch_rank(16)}.pt")
    path.write_bytes(path.read_bytes()[:100])  # a torn write
    with caplog.at_level(logging.WARNING, logger="h3_runtime"):
        third = kb.key_basis(model, None, fp)
    assert len(fits) == 2 and torch.equal(first, third) and "refitting" in caplog.text
    assert not first.is_inference()  # usable outside inference mode (a user's own forward)


def test_the_engine_gives_every_layer_its_basis_and_the_window_baseline_none(cold_dir):
    model = tiny_llama(layers=2)
    budget = kv_bytes_per_token(model) * 100 / 2**30
    engine = H3Engine(model=model, hbm_size_gb=budget, cold_storage_path=cold_dir)
    ids = torch.randint(0, 128, (1, 300), generator=torch.Generator().manual_seed(1))
    engine.generate(ids, max_new_tokens=2)
    for layer, cached in enumerate(engine.cache.layers):
        s = cached.store.summaries
        assert torch.equal(s.basis, engine.key_basis[layer])
        assert s.sketch.shape[2] >= s.n_blocks * s.block_tokens and s.center.numel() == 0
    window = H3Engine(model=model, hbm_size_gb=budget, cold_storage_path=cold_dir, selection=False)
    window.generate(ids, max_new_tokens=2)
    assert window.cache.ctx.key_basis is None
