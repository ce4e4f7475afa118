"""Block summaries: a float16 key box per block that bounds q.k and ranks blocks, at 1/(2T) of the
float32 KV it summarises."""

from __future__ import annotations

import torch

from h3_runtime.kvcache.summaries import BlockSummaries


def test_the_box_bounds_every_key_s_score_and_ranks_the_matching_block_first():
    H, T, D, nb = 2, 16, 8, 6
    g = torch.Generator().manual_seed(0)
    keys = 0.3 * torch.randn(H, nb * T, D, generator=g)  # background keys; one strong match:
    q = torch.randn(1, 2 * H, 1, D, generator=g)  # two query heads per KV head
    keys[:, 4 * T + 3] = 6.0 * q[0, ::2, 0] / q[0, ::2, 0].norm(dim=-1, keepdim=True)  # block 4
    s = BlockSummaries(H, D)
    s.add(0, keys[:, : 3 * T], T)  # blocks arrive in two calls (the array grows)
    s.add(3, keys[:, 3 * T :], T)
    assert s.n_blocks == nb and s.center.dtype == torch.float16
    center, radius = s.center[:, :, :nb].float(), s.radius[:, :, :nb].float()
    qg = q[0, :, 0].reshape(H, 2, D)
    bound = torch.bmm(qg, center) + torch.bmm(qg.abs(), radius)  # (H, 2, nb)
    scores = torch.einsum("hgd,hnd->hgn", qg, keys).reshape(H, 2, nb, T).amax(-1)
    assert (bound >= scores - 1e-2 * scores.abs().clamp_min(1)).all()  # up to float16 rounding
    rel = s.relevance(q, nb, scaling=1.0)  # (H, nb)
    assert rel.shape == (H, nb) and int(rel[0].argmax()) == 4
    kv_bytes = 2 * keys.numel() * 4  # float32 keys and values
    assert s.center[:, :, :nb].nbytes + s.radius[:, :, :nb].nbytes == kv_bytes // (2 * T)
    vectors = s.block_vectors(nb)  # the prefetch's per-block vectors: the box centres
    assert vectors.shape == (nb, H * D) and vectors.dtype == torch.float32


def test_keys_beyond_float16_range_saturate_instead_of_poisoning_the_ranking():
    H, T, D = 1, 4, 2
    keys = torch.zeros(H, 2 * T, D)
    keys[0, 0, 0] = 1e6  # far outside float16
    s = BlockSummaries(H, D)
    s.add(0, keys, T)
    assert torch.isfinite(s.center.float()).all() and torch.isfinite(s.radius.float()).all()
    rel = s.relevance(torch.ones(1, 1, 1, D), 2, scaling=1e-3)
    assert torch.isfinite(rel).all() and int(rel[0].argmax()) == 0
