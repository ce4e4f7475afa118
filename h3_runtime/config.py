"""The runtime's configuration: the `model`, `runtime`, `scheduler` and `hbf` keys of
`h3_config.yaml` that the tiered-KV library reads, validated once.

Every runtime seed knob lives here (`scheduler.ahaz_alpha`, the thresholds,
`hbf.prefetch_window`, ...). An unknown key or a bad value raises `ConfigError` naming the key and
what is allowed. Sections are frozen dataclasses; `H3Config.from_any` accepts a path, a dict, an
`H3Config` or None (the defaults).

The same file also holds the pipeline's settings (`hbf.compression_pca_dim`, `cold_storage.*`);
this library does not know them: `H3Config.split` builds the runtime's part and hands back the
keys it does not own, which the pipeline's loader (`resources/settings.py`) validates, so the
whole file is still checked once and every unknown key is named.
"""

from __future__ import annotations

import dataclasses
import difflib
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
        one_of("model.dtype", self.dtype, ("float32", "bfloat16", "float16"))
        one_of("model.device", self.device, ("auto", "cpu", "cuda"))


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    hbm_size_gb: float = 0.05  # hot-tier budget, GiB (2**30 bytes); never exceeded
    hbf_size_gb: float = 2.0  # warm-tier budget, GiB
    cold_storage_path: str | None = None  # None: $H3_HOME/kv
    # the whole cold tier (stored documents' blocks and the tiered cache's spilled ones, one
    # LRU) evicts to stay under this
    cold_storage_max_gb: float = 20.0
    # tokens per KV block (one layer), at most: a budget holding fewer than 32 block slots per
    # layer halves it down to 8 (kvcache/geometry.py)
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
    # decode re-selects each layer's hot blocks for the current query every this many tokens
    # (1: every token, as Quest does); in between the hot set stays. Selection is most of a
    # decoded token's own cost on a CPU (h3 bench --scenario decode)
    decode_reselect_every: int = 3
    # decode keeps its hot KV (sinks, window, selected blocks) in this dtype when it is narrower
    # than the model's ("model": the model's own). "int8" (kvcache/hot_codec.py): values with a
    # scale per head and token, ~3.6x a float32 model's tokens in the same hot bytes; "float16"
    # ~1.9x, faster per token (README, runtime). Attention reads an up-cast copy (geometry.py)
    decode_kv_dtype: str = "int8"
    # > 0: a re-selection ranks blocks by the key sketches, then re-scores each KV head's best
    # this-many x its slots with their exact keys from warm (kvcache/rescore.py): 2 kept more
    # RULER keys at 4K and halved the KL on real filings, for ~10-20% more time a decoded token
    # on a CPU (README, runtime); 0 ranks by the sketches alone
    decode_exact_rescore: int = 2

    def __post_init__(self) -> None:
        _positive("runtime.hbm_size_gb", self.hbm_size_gb)
        _positive("runtime.hbf_size_gb", self.hbf_size_gb)
        _positive("runtime.cold_storage_max_gb", self.cold_storage_max_gb)
        for name in ("block_tokens", "top_k_blocks", "prefill_chunk_tokens", "decode_reselect_every"):
            _positive(f"runtime.{name}", getattr(self, name))
        one_of("runtime.prefill_attention", self.prefill_attention, ("exact", "sparse"))
        one_of("runtime.decode_kv_dtype", self.decode_kv_dtype, ("int8", "float16", "bfloat16", "model"))
        for name in ("sink_tokens", "recent_tokens", "decode_exact_rescore"):
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

    def __post_init__(self) -> None:
        if self.prefetch_window < 0:
            raise ConfigError(f"hbf.prefetch_window must be >= 0, got {self.prefetch_window!r}")


@dataclass(frozen=True, slots=True)
class H3Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    hbf: HbfConfig = field(default_factory=HbfConfig)

    @classmethod
    def sections(cls) -> dict[str, type]:
        """Section name -> its dataclass."""
        return {f.name: f.default_factory().__class__ for f in fields(cls)}  # type: ignore[misc]

    @classmethod
    def split(cls, data: Any) -> tuple[H3Config, dict[str, Any]]:
        """The runtime's part of `data`, validated, and the sections/keys it does not own."""
        built, rest = split_sections(data, cls.sections())
        return cls(**built), rest

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, strict: bool = True) -> H3Config:
        """Builds and validates; bad types and values are errors naming the key. `strict`: a key
        the runtime does not own is an error too; otherwise it is left to its owner (the
        pipeline's loader checks the shared file's other keys)."""
        cfg, rest = cls.split(data)
        if strict:
            reject_unknown(rest, {"": cls.sections()})
        else:
            reject_near_misses(rest, cls.sections())
        return cfg

    @classmethod
    def load(cls, path: str | Path, strict: bool = True) -> H3Config:
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
            return cls.from_dict(data, strict)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from exc

    @classmethod
    def from_any(cls, config: str | Path | dict | H3Config | None,
                 strict: bool = True) -> H3Config:
        if config is None:
            return cls()
        if isinstance(config, H3Config):
            return config
        if isinstance(config, dict):
            return cls.from_dict(config, strict)
        return cls.load(config, strict)

    def replace(self, section: str, **changes: Any) -> H3Config:
        """A copy with some keys of one section changed (validated again)."""
        return dataclasses.replace(
            self, **{section: dataclasses.replace(getattr(self, section), **changes)}
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def split_sections(data: Any, sections: dict[str, type]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Builds (and validates) the `sections` found in `data`, a mapping of section -> keys.

    Returns the built sections by name and what `data` holds beyond them: whole sections not in
    `sections`, and keys of a known section its dataclass does not declare (`{section: {key:
    value}}`), for another owner of the same file to build."""
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"h3 config must be a mapping of sections, got {type(data).__name__}")
    built: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for name, values in data.items():
        if name not in sections:
            rest[name] = values
            continue
        if values is None:
            values = {}
        if not isinstance(values, dict):
            raise ConfigError(f"config section {name!r} must be a mapping, got {values!r}")
        section_cls = sections[name]
        own = {f.name for f in fields(section_cls)}
        mine = {k: v for k, v in values.items() if k in own}
        others = {k: v for k, v in values.items() if k not in own}
        for key, value in mine.items():
            _check_type(f"{name}.{key}", value, getattr(section_cls(), key))
        built[name] = section_cls(**mine)
        if others:
            rest[name] = others
    return built, rest


def reject_unknown(rest: dict[str, Any], owners: dict[str, dict[str, type]]) -> None:
    """Raises ConfigError naming the first section or key of `rest` (what no owner built);
    the message lists what the owners (label -> their sections) allow there."""
    allowed_sections = sorted({s for sections in owners.values() for s in sections})
    for name, values in rest.items():
        keys = sorted({f.name for sections in owners.values() if name in sections
                       for f in fields(sections[name])})
        if not keys:
            raise ConfigError(f"unknown config section {name!r}; allowed: {allowed_sections}")
        key = next(iter(values))
        raise ConfigError(f"unknown config key {name}.{key}; allowed: {keys}")


def reject_near_misses(rest: dict[str, Any], sections: dict[str, type]) -> None:
    """Lenient loading leaves unowned keys to another owner of the file, but a name one typo
    away from one of `sections`' own (`schedular:`, `runtime.devcie`) is nobody else's: it is an
    error naming the key and what was probably meant."""
    for name, values in rest.items():
        if name not in sections:
            guess = difflib.get_close_matches(name, sections, n=1, cutoff=0.8)
            if guess:
                raise ConfigError(f"unknown config section {name!r}; did you mean {guess[0]!r}?")
            continue
        own = [f.name for f in fields(sections[name])]
        for key in values:
            guess = difflib.get_close_matches(key, own, n=1, cutoff=0.8)
            if guess:
                raise ConfigError(f"unknown config key {name}.{key}; did you mean "
                                  f"{name}.{guess[0]}?")


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


def one_of(key: str, value: Any, allowed: tuple) -> None:
    if value not in allowed:
        raise ConfigError(f"{key} must be one of {list(allowed)}, got {value!r}")


def _positive(key: str, value: float) -> None:
    if not value > 0:
        raise ConfigError(f"{key} must be > 0, got {value!r}")
