"""Learned chunk pooling: a chunk's PCA-reduced token vectors -> one 512-d summary.

A small MLP (< 1M parameters) lifts each token, an attention head weights them, and the
weighted mean is projected and L2-normalised. It is trained contrastively on the corpus itself
(resources/semantic/contrastive.py): summaries of chunks from the same section or neighbouring
chunks are pulled together, chunks of other documents pushed apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

SUMMARY_DIM = 512
MAX_PARAMETERS = 1_000_000


class ChunkPooler(nn.Module):
    def __init__(self, in_dim: int = 128, hidden: int = 256, out_dim: int = SUMMARY_DIM) -> None:
        super().__init__()
        self.token_mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(),
                                       nn.Linear(hidden, hidden), nn.GELU())
        self.attn = nn.Linear(hidden, 1)
        self.out = nn.Linear(hidden, out_dim)
        n = sum(p.numel() for p in self.parameters())
        if n >= MAX_PARAMETERS:
            raise ValueError(f"pooling MLP has {n} parameters; the budget is < {MAX_PARAMETERS}")

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """tokens (B, T, in_dim), mask (B, T) bool (True = real token) -> (B, out_dim), unit norm."""
        h = self.token_mlp(tokens)  # (B, T, H)
        scores = self.attn(h).squeeze(-1)  # (B, T)
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1).unsqueeze(-1)  # (B, T, 1)
        pooled = (weights * h).sum(dim=1)  # (B, H)
        return nn.functional.normalize(self.out(pooled), dim=-1)  # (B, out_dim)


def num_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def pad(chunks: Sequence[np.ndarray], max_tokens: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Variable-length (T_i, D) arrays -> tokens (B, T, D) float32 and mask (B, T) bool."""
    if len(chunks) == 0:
        raise ValueError("pad: no chunks")
    dim = chunks[0].shape[1]
    t = max(1, min(max_tokens, max(len(c) for c in chunks)))
    tokens = torch.zeros(len(chunks), t, dim)  # (B, T, D)
    mask = torch.zeros(len(chunks), t, dtype=torch.bool)  # (B, T)
    for i, c in enumerate(chunks):
        n = min(len(c), t)
        if n:
            tokens[i, :n] = torch.from_numpy(np.asarray(c[:n], dtype=np.float32))
            mask[i, :n] = True
        else:
            mask[i, 0] = True  # an empty chunk pools its single zero vector
    return tokens, mask


@torch.no_grad()
def summarise(model: ChunkPooler, chunks: Sequence[np.ndarray], batch_size: int = 64
              ) -> np.ndarray:
    """(N, 512) float32 unit vectors, one per chunk (PCA-reduced token arrays)."""
    model.eval()
    out = np.zeros((len(chunks), SUMMARY_DIM), np.float32)
    # batches of similar length: a batch runs at its longest chunk, and masked padding changes
    # nothing in the result, only the time (chunks of 20-256 tokens in corpus order pad ~30%)
    order = sorted(range(len(chunks)), key=lambda i: len(chunks[i]))
    for start in range(0, len(order), batch_size):
        picked = order[start:start + batch_size]
        tokens, mask = pad([chunks[i] for i in picked])  # (B, T, D), (B, T)
        out[picked] = model(tokens, mask).numpy()  # (B, 512)
    return out
