"""Token-level PCA calibrated on this corpus's own token vectors (not a generic projection).

`hbf.compression_pca_dim` sets the output dimension and must be >= 128; `fit_pca` runs the
settings' one check (`resources.settings.check_pca_dim`) so a caller passing a number directly
gets the same clear error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from h3.resources.settings import check_pca_dim


@dataclass(frozen=True)
class PcaModel:
    mean: np.ndarray  # (D,)
    components: np.ndarray  # (k, D), rows orthonormal, by decreasing variance
    explained_variance_ratio: np.ndarray  # (k,)
    n_fit: int  # token vectors the fit saw

    @property
    def dim(self) -> int:
        return int(self.components.shape[0])

    def transform(self, x: np.ndarray) -> np.ndarray:
        """(N, D) -> (N, k) float32."""
        return ((x - self.mean) @ self.components.T).astype(np.float32)  # (N, k)

    def save(self, path: Path, lineage: dict | None = None) -> None:
        from h3.resources.semantic.artifacts import save_tensors

        save_tensors(path, {"mean": self.mean, "components": self.components,
                            "explained_variance_ratio": self.explained_variance_ratio},
                     {"n_fit": self.n_fit, **(lineage or {})})

    @classmethod
    def load(cls, path: Path) -> PcaModel:
        from h3.resources.semantic.artifacts import load_tensors

        t, meta = load_tensors(path)
        return cls(t["mean"], t["components"], t["explained_variance_ratio"], int(meta["n_fit"]))


def fit_pca(x: np.ndarray, dim: int, max_samples: int = 200_000, seed: int = 0) -> PcaModel:
    """Fits on (N, D) token vectors (a seeded sample of at most `max_samples` rows).

    Exact: the eigen-decomposition of the (D, D) covariance (accumulated in float32,
    decomposed in float64)."""
    check_pca_dim(dim, x.shape[1])
    if x.shape[0] < 2:
        raise ValueError(f"PCA needs at least 2 token vectors, got {x.shape[0]}")
    rng = np.random.default_rng(seed)
    if x.shape[0] > max_samples:
        x = x[rng.choice(x.shape[0], size=max_samples, replace=False)]
    xt = torch.from_numpy(np.asarray(x, dtype=np.float32))  # (N, D)
    mean = xt.double().mean(dim=0)  # (D,)
    centred = xt - mean.float()  # (N, D)
    # the (N, D) product in float32 (3-4x faster than float64; relative error ~1e-6 on
    # centred data), the (D, D) decomposition in float64
    cov = (centred.T @ centred).double() / max(1, xt.shape[0] - 1)  # (D, D)
    evals, evecs = torch.linalg.eigh(cov)  # ascending
    order = torch.argsort(evals, descending=True)
    evals, evecs = evals[order].clamp(min=0), evecs[:, order]
    # a deterministic sign per component (eigenvectors are defined up to sign)
    signs = torch.sign(evecs[evecs.abs().argmax(dim=0), torch.arange(evecs.shape[1])])
    evecs = evecs * torch.where(signs == 0, torch.ones_like(signs), signs)
    ratio = evals / evals.sum().clamp(min=1e-12)
    return PcaModel(mean.numpy().astype(np.float32),
                    evecs[:, :dim].T.contiguous().numpy().astype(np.float32),  # (k, D)
                    ratio[:dim].numpy().astype(np.float32), int(xt.shape[0]))


def fit_search_projection(x: np.ndarray, dim: int) -> np.ndarray:
    """A (D, dim) orthonormal projection for cosine search over unit vectors `x` (N, D): the
    corpus's mean direction, then the top `dim - 1` principal components of what is left.

    Scores are dot products of the projected vectors, used as they are. Centring the vectors and
    re-normalising after the projection (the textbook PCA) changes the metric itself: unit
    sentence vectors share a large mean component, and on the filings benchmark that alone
    moved ranks even at 256 of 384 dims. Keeping the mean direction keeps `v @ w` exact up to the
    variance of the dropped components."""
    if not 1 <= dim <= x.shape[1]:
        raise ValueError(f"search projection: dim must be in 1..{x.shape[1]}, got {dim}")
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=0)
    direction = mean / max(float(np.linalg.norm(mean)), 1e-12)
    rest = x - mean
    rest -= np.outer(rest @ direction, direction)  # what the mean direction does not explain
    _, _, vt = np.linalg.svd(rest, full_matrices=False)
    basis = np.concatenate([direction[None, :], vt[:dim - 1]])  # (dim, D), rows orthonormal
    return basis.T.astype(np.float32)
