"""Contrastive training of the chunk pooler on the corpus, deterministic for a given seed.

Positives for a chunk: another chunk of the same document in the same section, else its
neighbour (the next or previous chunk). Negatives: every chunk of *other* documents in the
batch (same-document chunks are left out of the denominator: they may share a topic). Loss:
symmetric InfoNCE at temperature `tau`.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from h3.resources.semantic.pooling import ChunkPooler, pad, summarise

MIN_PAIRS = 16  # fewer same-topic pairs than this: nothing to learn from, keep the seeded init


@dataclass(frozen=True, slots=True)
class ChunkInfo:
    doc_id: str
    index: int  # position in its document
    section: str


def positive_pairs(chunks: Sequence[ChunkInfo]) -> list[tuple[int, int]]:
    """(i, j) pairs: same document and same non-empty section, or neighbouring chunks."""
    by_doc: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(chunks):
        by_doc[c.doc_id].append(i)
    pairs: set[tuple[int, int]] = set()
    for members in by_doc.values():
        members = sorted(members, key=lambda i: chunks[i].index)
        for a, b in zip(members, members[1:], strict=False):
            pairs.add((a, b))
        by_section: dict[str, list[int]] = defaultdict(list)
        for i in members:
            if chunks[i].section:
                by_section[chunks[i].section].append(i)
        for group in by_section.values():
            for x in range(len(group)):
                for y in range(x + 1, min(len(group), x + 4)):
                    pairs.add((group[x], group[y]))
    return sorted(pairs)


@dataclass
class TrainReport:
    steps: int
    final_loss: float
    same_topic_cosine: float  # mean cosine over positive pairs
    different_topic_cosine: float  # mean cosine over chunks of different documents
    trained: bool
    note: str = ""
    # (N, 512) summaries of every chunk by the returned model (the separation is measured on
    # them): the caller stores these instead of summarising the corpus a second time
    summaries: np.ndarray | None = None


def _subsample(tokens: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """At most n of a chunk's token vectors, chosen at random (the pooler ignores order, so a
    random subset is both a cheaper step and an augmentation)."""
    if len(tokens) <= n:
        return tokens
    return tokens[np.sort(rng.choice(len(tokens), size=n, replace=False))]


def train_pooler(tokens: Sequence[np.ndarray], chunks: Sequence[ChunkInfo], in_dim: int,
                 seed: int = 0, steps: int = 60, batch_pairs: int = 32, tau: float = 0.1,
                 lr: float = 3e-3, tokens_per_chunk: int = 32
                 ) -> tuple[ChunkPooler, TrainReport]:
    """Trains a fresh pooler on PCA-reduced token arrays (one (T_i, in_dim) per chunk).

    Deterministic: the same inputs, seed and thread count give bit-identical weights (torch's
    CPU kernels are deterministic here). With fewer than two documents there are no negatives:
    the seeded untrained pooler is returned and the report says so."""
    threads = torch.get_num_threads()
    # One thread. The matrices are small (2,048 x 256 a step), so every op is a short parallel
    # region whose threads meet at a barrier: on 2 idle cores two threads train 1.3-1.5x faster
    # (1.3 vs 2.0 s on the 1,370 chunks of two 10-Ks), but on a busy machine each barrier waits
    # for a descheduled thread and two threads took 2.5x longer than one (7.7 vs 3.1 s, same
    # chunks, 4 competing busy loops) and ~40% more CPU always. Weights are bit-identical for a
    # given thread count (1 and 2 threads differ in the last float bits).
    torch.set_num_threads(1)
    try:
        return _train(tokens, chunks, in_dim, seed, steps, batch_pairs, tau, lr, tokens_per_chunk)
    finally:
        torch.set_num_threads(threads)


def _train(tokens, chunks, in_dim, seed, steps, batch_pairs, tau, lr, tokens_per_chunk):
    torch.manual_seed(seed)
    model = ChunkPooler(in_dim=in_dim)
    all_pairs = positive_pairs(chunks)
    n_docs = len({c.doc_id for c in chunks})
    if n_docs < 2 or len(all_pairs) < MIN_PAIRS:
        summaries = summarise(model, tokens)  # (N, 512)
        same, diff = separation(summaries, chunks, all_pairs)
        return model, TrainReport(0, float("nan"), same, diff, False,
                                  f"not trained: needs >= 2 documents and >= {MIN_PAIRS} "
                                  f"same-topic pairs, found {n_docs} and {len(all_pairs)}",
                                  summaries)
    # a seeded fifth of the positive pairs is held out: the reported same-topic cosine is
    # measured on pairs the training never saw
    shuffled = list(all_pairs)
    random.Random(seed + 1).shuffle(shuffled)
    held_out = shuffled[: max(1, len(shuffled) // 5)]
    pairs = shuffled[len(held_out):]
    rng = random.Random(seed)
    np_rng = np.random.default_rng(seed)
    docs = [c.doc_id for c in chunks]
    opt = AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    loss_value = float("nan")
    model.train()
    for _ in range(steps):
        batch = rng.sample(pairs, min(batch_pairs, len(pairs)))
        left = [i for i, _ in batch]
        right = [j for _, j in batch]
        a_tok, a_mask = pad([_subsample(tokens[i], tokens_per_chunk, np_rng) for i in left])
        b_tok, b_mask = pad([_subsample(tokens[j], tokens_per_chunk, np_rng) for j in right])
        za = model(a_tok, a_mask)  # (P, 512)
        zb = model(b_tok, b_mask)  # (P, 512)
        logits = za @ zb.T / tau  # (P, P)
        same_doc = torch.tensor([[docs[i] == docs[j] for j in right] for i in left])  # (P, P)
        eye = torch.eye(len(batch), dtype=torch.bool)
        logits = logits.masked_fill(same_doc & ~eye, float("-inf"))  # only other docs negative
        target = torch.arange(len(batch))
        loss = (torch.nn.functional.cross_entropy(logits, target)
                + torch.nn.functional.cross_entropy(logits.T, target)) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss_value = float(loss.detach())
    summaries = summarise(model, tokens)  # (N, 512)
    same, diff = separation(summaries, chunks, held_out)
    return model, TrainReport(steps, loss_value, same, diff, True,
                              f"same-topic cosine on {len(held_out)} held-out pairs", summaries)


class AdamW:
    """torch.optim.AdamW's update (bias-corrected moments, decoupled weight decay), written out:
    constructing any torch.optim optimizer imports torch._dynamo, ~1.3 s of a 2-core machine in
    every process that trains a pooler (each Dagster run is one), for a 60-step training that
    itself takes about a second."""

    def __init__(self, params, lr: float, weight_decay: float = 1e-2,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.exp_avg = [torch.zeros_like(p) for p in self.params]
        self.exp_avg_sq = [torch.zeros_like(p) for p in self.params]
        self.steps = 0

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        """One update of every parameter that has a gradient (changes them in place)."""
        self.steps += 1
        beta1, beta2 = self.betas
        correction1, correction2 = 1 - beta1 ** self.steps, 1 - beta2 ** self.steps
        for p, m, v in zip(self.params, self.exp_avg, self.exp_avg_sq, strict=True):
            if p.grad is None:
                continue
            p.mul_(1 - self.lr * self.weight_decay)
            m.lerp_(p.grad, 1 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            denom = (v.sqrt() / correction2 ** 0.5).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / correction1)


def separation(summaries: np.ndarray, chunks: Sequence[ChunkInfo],
               pairs: Sequence[tuple[int, int]] | None = None, max_pairs: int = 20_000,
               seed: int = 0) -> tuple[float, float]:
    """(mean cosine of same-topic pairs, mean cosine of different-document pairs)."""
    pairs = positive_pairs(chunks) if pairs is None else pairs
    same = float(np.mean([summaries[i] @ summaries[j] for i, j in pairs])) if pairs else float("nan")
    rng = np.random.default_rng(seed)
    n = len(chunks)
    if n < 2:
        return same, float("nan")
    a = rng.integers(0, n, size=max_pairs)
    b = rng.integers(0, n, size=max_pairs)
    keep = np.array([chunks[i].doc_id != chunks[j].doc_id for i, j in zip(a, b, strict=True)])
    if not keep.any():
        return same, float("nan")
    diff = float(np.mean(np.sum(summaries[a[keep]] * summaries[b[keep]], axis=1)))
    return same, diff
