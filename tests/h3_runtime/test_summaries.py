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



def test_sketches_estimate_each_token_s_score_and_rank_blocks_by_their_best_token():
    H, D, r, T, nb = 2, 32, 8, 16, 40
    g = torch.Generator().manual_seed(0)
    basis = torch.linalg.qr(torch.randn(H, D, r, generator=g))[0]  # (H, D, r) orthonormal
    # keys in the basis's span (what a fitted basis captures); one needle in block 27 of head 0,
    # along the basis's last direction, 3x longer than any other key
    keys = torch.bmm(torch.randn(H, nb * T, r, generator=g), basis.transpose(1, 2))  # (H, n, D)
    needle = basis[0, :, -1]
    keys[0, 27 * T + 5] = 3.0 * keys.norm(dim=-1).max() * needle
    s = BlockSummaries(H, D, basis)
    s.add(0, keys[:, : 2 * T], T)  # blocks arrive in two calls (the arrays grow)
    s.add(2, keys[:, 2 * T :], T)
    q = torch.randn(1, 2 * H, 1, D, generator=g)  # two query heads per KV head
    q[0, 0, 0] = 2.0 * needle + 0.1 * q[0, 0, 0]  # head 0's first query head looks for the needle
    qg = q[0, :, 0].reshape(H, 2, D)
    exact = torch.einsum("hgd,hnd->hgn", qg, keys)  # (H, 2, n)
    scale = s.sketch_scale[:, : nb * T].float()
    est = torch.einsum("hgd,hdr,hrn->hgn", qg, basis, s.sketch[:, :, : nb * T].float()) * scale[:, None]
    assert (est - exact).abs().max() < 0.05 * exact.abs().max()  # int8 per token: a few quanta
    rel = s.relevance(q, nb, scaling=1.0)
    assert rel.shape == (H, nb) and int(rel[0].argmax()) == 27
    per_token_head = (s.sketch.numel() + 2 * s.sketch_scale.numel()) / (H * s.sketch.shape[2])
    assert per_token_head == r + 2  # int8 sketch + float16 scale: 18 B at r = 16 (3.5% of fp32 KV)
    assert s.nbytes == s.sketch.nbytes + s.sketch_scale.nbytes + s.in_warm.nbytes  # no box
    assert s.block_vectors(nb).shape == (nb, H * r)


def test_sketches_rank_by_a_real_token_where_the_box_bound_adds_up_different_tokens():
    # the query reads dimensions 0 and 2. Every decoy block holds one token high on dimension 0
    # and another high on dimension 2: its box bounds q.k by 3 + 3 although no token scores
    # above 3. Block 5 holds one token at 2.5 on both (a real 5): the box ranks it below the
    # decoys (5 < 6), the sketches above them
    H, D, T, nb = 1, 8, 16, 12
    g = torch.Generator().manual_seed(1)
    keys = 0.05 * torch.randn(H, nb * T, D, generator=g)
    for b in range(nb):
        if b == 5:
            keys[0, b * T + 7, 0] = keys[0, b * T + 7, 2] = 2.5
        else:
            keys[0, b * T + 1, 0] = keys[0, b * T + 9, 2] = 3.0
    q = torch.zeros(1, 1, 1, D)
    q[..., 0] = q[..., 2] = 1.0
    basis = torch.eye(D)[None, :, :4]  # the dimensions holding the keys' energy
    sketched, boxed = BlockSummaries(H, D, basis), BlockSummaries(H, D)
    sketched.add(0, keys, T)
    boxed.add(0, keys, T)
    assert int(sketched.relevance(q, nb, 1.0)[0].argmax()) == 5
    assert int(boxed.relevance(q, nb, 1.0)[0].argmax()) != 5  # the bound is fooled
