"""Decode's second ranking stage (kvcache/rescore.py): the sketches' best candidates get their
exact best q.k from the warm tier's keys, so a block whose match lies outside the sketch basis
ranks where its keys put it; blocks in cold keep their estimates."""

from __future__ import annotations

import torch

from h3_runtime.kvcache.block import BlockId, KVBlock
from h3_runtime.kvcache.checksum import block_checksum
from h3_runtime.kvcache.rescore import rescore_exactly
from h3_runtime.kvcache.summaries import BlockSummaries
from h3_runtime.kvcache.tiers import WarmTier

H, D, T, NB = 2, 8, 4, 12


def _store(keys: torch.Tensor, cold: set[int] = frozenset()) -> tuple[BlockSummaries, WarmTier]:
    """Sketches in the basis of dimensions 0-1, and every block not in `cold` in a real warm tier."""
    s = BlockSummaries(H, D, torch.eye(D)[None, :, :2].expand(H, D, 2).contiguous())
    s.add(0, keys, T)
    warm = WarmTier(10**8)
    for b in range(NB):
        if b in cold:
            continue
        k = keys[:, b * T : (b + 1) * T].contiguous()
        warm.store(BlockId(0, b), KVBlock(k, k.clone(), block_checksum(k, k)))
        s.in_warm[b] = True
    return s, warm


def _keys() -> torch.Tensor:
    """Three decoy blocks (1, 2, 3) match the query inside the basis (q.k = 2); block 7 matches it
    a little there (1.5) and strongly outside it (dimension 5: exactly 4.5); the rest ~0."""
    keys = 0.01 * torch.randn(H, NB * T, D, generator=torch.Generator().manual_seed(0))
    for b in (1, 2, 3):
        keys[:, b * T + 1, 0] = 2.0
    keys[:, 7 * T + 2, 0], keys[:, 7 * T + 2, 5] = 1.5, 3.0
    return keys


def _rescorer(s: BlockSummaries, warm: WarmTier, shortlist: int, seen: list | None = None):
    """The refine step decode passes to relevance (tiered_attention.py), over a real warm tier;
    `seen` receives a copy of the scores it leaves."""
    def gather_keys(blocks: torch.Tensor, heads: torch.Tensor) -> torch.Tensor | None:
        got = warm.gather(0, blocks, heads, values=False)
        return None if got is None else got[0]

    def refine(qg: torch.Tensor, score: torch.Tensor, kv_heads: list[int]) -> None:
        assert kv_heads == list(range(H))  # every head ranked
        rescore_exactly(qg, score, shortlist, s.in_warm, gather_keys)
        if seen is not None:
            seen.append(score.clone())
    return refine


def _query() -> torch.Tensor:
    q = torch.zeros(1, H, 1, D)  # one query head per KV head
    q[..., 0] = q[..., 5] = 1.0
    return q


def test_exact_rescoring_ranks_the_block_whose_match_the_sketches_miss_first():
    keys = _keys()
    s, warm = _store(keys)
    q = _query()
    estimated = s.relevance(q, NB, scaling=1.0)
    assert int(estimated[0].argmax()) in (1, 2, 3)  # the sketches see dimensions 0-1 only
    assert all(float(estimated[h, 7]) < float(estimated[h, 1]) for h in range(H))
    # decode_exact_rescore: 2 with two slots: each head's 4 best estimates, block 7 among them
    seen: list = []
    ranked = s.relevance(q, NB, scaling=1.0, refine=_rescorer(s, warm, 4, seen))
    assert [int(ranked[h].argmax()) for h in range(H)] == [7, 7]
    # the re-scored blocks hold their exact best q.k; the others keep their estimates
    exact = torch.einsum("hd,hnd->hn", q[0, :, 0], keys).reshape(H, NB, T).amax(-1)
    for b in (1, 2, 3, 7):
        assert torch.allclose(seen[0][:, 0, b], exact[:, b])
    assert not torch.allclose(seen[0][:, 0, 9], exact[:, 9], atol=1e-4)  # not a candidate


def test_a_block_in_cold_keeps_its_estimate_and_an_empty_shortlist_reads_nothing():
    keys = _keys()
    s, warm = _store(keys, cold={7})
    q = _query()
    ranked = s.relevance(q, NB, scaling=1.0, refine=_rescorer(s, warm, 4))
    assert int(ranked[0].argmax()) in (1, 2, 3)  # block 7's bytes are on disk: not read to rank

    def no_reads(blocks, heads):
        raise AssertionError("gathered with an empty shortlist")

    def empty(qg, score, kv_heads):
        rescore_exactly(qg, score, 0, s.in_warm, no_reads)
    plain = s.relevance(q, NB, scaling=1.0)
    zero = s.relevance(q, NB, scaling=1.0, refine=empty)
    assert torch.equal(plain, zero)
