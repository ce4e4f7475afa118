"""The runtime's configuration: the `model`, `runtime`, `scheduler` and `hbf` keys of
`h3_config.yaml` that the tiered-KV library reads, as pydantic models validated once.

Every runtime seed knob lives here (`scheduler.ahaz_alpha`, the thresholds,
`hbf.prefetch_window`, ...). Models are frozen, strict (no "128" for 128, no "yes" for true) and
forbid unknown keys; any validation error becomes a `ConfigError` naming the key, the reason and
the value. `H3Config.from_any` accepts a path, a dict, an `H3Config` or None (the defaults).

The same file also holds the pipeline's settings (`hbf.compression_pca_dim`, `cold_storage.*`):
`resources/settings.py` extends `H3Config` with them into the one schema of the whole file. This
library does not know them; its lenient load (the engine's) skips keys it does not own, but still
refuses one a typo away from its own.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator


class ConfigError(ValueError):
    """A bad h3_config.yaml: the message names the key and the allowed values."""


class Section(BaseModel):
    """Base of every config model: direct construction (`RuntimeConfig(block_tokens=0)`) raises
    ConfigError too, prefixed with the section's name (its title)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise config_error(exc, type(self), type(self).model_config.get("title")) from None


class ModelConfig(Section):
    model_config = ConfigDict(title="model")

    path: str | None = None  # None: the bundled default model (SmolLM2-135M-Instruct)
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    device: Literal["auto", "cpu", "cuda"] = "auto"


class RuntimeConfig(Section):
    model_config = ConfigDict(title="runtime")

    hbm_size_gb: float = Field(0.05, gt=0)  # hot-tier budget, GiB (2**30 bytes); never exceeded
    hbf_size_gb: float = Field(2.0, gt=0)  # warm-tier budget, GiB
    cold_storage_path: str | None = None  # None: $H3_HOME/kv
    # the whole cold tier (stored documents' blocks and the tiered cache's spilled ones, one
    # LRU) evicts to stay under this
    cold_storage_max_gb: float = Field(20.0, gt=0)
    # tokens per KV block (one layer), at most: a budget holding fewer than 32 block slots per
    # layer halves it down to 8 (kvcache/geometry.py)
    block_tokens: int = Field(64, gt=0)
    sink_tokens: int = Field(4, ge=0)  # attention sinks always kept hot
    recent_tokens: int = Field(256, ge=0)  # recent window always kept hot
    # blocks chosen per query by relevance (capped by the slots the budget holds: by default
    # every slot holds one of the most relevant blocks for the current token)
    top_k_blocks: int = Field(256, gt=0)
    prefill_chunk_tokens: int = Field(512, gt=0)  # chunked prefill: never the whole prompt's KV hot
    # sparse prefill chunks: "exact" streams every warm block through hot staging (exact
    # attention within the budget; needle bench: passkey kept at 10%/20%), "sparse" attends to
    # sinks + ring + top-k blocks only
    prefill_attention: Literal["exact", "sparse"] = "exact"
    # decode considers re-selecting each layer's hot blocks for the current query every this
    # many tokens (1: every token, as Quest does); in between the hot set stays. Selection is
    # most of a decoded token's own cost on a CPU (h3 bench --scenario decode)
    decode_reselect_every: int = Field(1, gt=0)
    # ... and a considered token re-selects a layer only if its query moved: some KV head's
    # query (the mean of its query heads, in the layer's key basis) has a cosine below this to
    # the one at the layer's last selection; else the last choice is reused (blocks leaving the
    # recent window join the slots meanwhile). 1.0: every considered token re-selects (no
    # gate). Lower re-selects less and strays further from full attention: on real filings at
    # 8K tokens 0.5 re-selected ~0.3 layers of 30 a token and its next-token KL from full
    # attention was 3-4x 0.7's, which re-selects ~2.3 (kvcache/reselect_gate.py,
    # h3 bench --scenario filings_gate, h3 bench --scenario decode)
    decode_reselect_cosine: float = Field(0.7, ge=0, le=1)
    # the gate's safety bound: one choice serves at most this many decoded tokens, whatever
    # the cosine (then the next considered token re-selects)
    decode_reselect_max_tokens: int = Field(32, gt=0)
    # which KV heads of a layer re-select when the gate opens: "moved" (the heads whose query
    # moved; the others keep their blocks: ~1.2 of 3 heads a re-selection at 8K) or "all"
    decode_reselect_heads: Literal["moved", "all"] = "moved"
    # decode keeps its hot KV (sinks, window, selected blocks) in this dtype when it is narrower
    # than the model's ("model": the model's own). "int8" (kvcache/hot_codec.py): values with a
    # scale per head and token, ~3.6x a float32 model's tokens in the same hot bytes; "float16"
    # ~1.9x, faster per token (README, runtime). Attention reads an up-cast copy (geometry.py)
    decode_kv_dtype: Literal["int8", "float16", "bfloat16", "model"] = "int8"
    # > 0: a re-selection ranks blocks by the key sketches, then re-scores each KV head's best
    # this-many x its slots with their exact keys from warm (kvcache/rescore.py): 2 kept more
    # RULER keys at 4K and halved the KL on real filings, for ~10-20% more time a decoded token
    # on a CPU (README, runtime); 0 ranks by the sketches alone
    decode_exact_rescore: int = Field(2, ge=0)
    # which stored document KV blocks stay in memory between questions (kvcache/corpus.py):
    # ahas (heat, thresholds, prefetch: scheduler.*, hbf.prefetch_*), lru, lfu or none
    corpus_cache: Literal["ahas", "lru", "lfu", "none"] = "ahas"


class SchedulerConfig(Section):
    model_config = ConfigDict(title="scheduler")

    # every knob but relevance_window (questions) is a heat or a fraction: in [0, 1]
    ahaz_alpha: float = Field(0.999, ge=0, le=1)  # decay of the access-frequency term of a block's heat
    hbm_threshold: float = Field(0.95, ge=0, le=1)  # heat above this -> hot
    hbf_threshold: float = Field(0.3, ge=0, le=1)  # heat between cold_threshold and this -> warm
    cold_threshold: float = Field(0.05, ge=0, le=1)  # heat below this -> cold ("T_cold")
    # hot usage above this fraction raises the hot threshold...
    pressure_watermark: float = Field(0.85, ge=0, le=1)
    pressure_hbm_threshold: float = Field(0.98, ge=0, le=1)  # ... to this
    relevance_weight: float = Field(0.5, ge=0, le=1)  # heat = (1 - w) * frequency + w * relevance
    # blocks below cold_threshold go to cold once the warm tier is fuller than this fraction;
    # below it host memory is free and a disk round trip would be pure cost
    warm_watermark: float = Field(0.5, ge=0, le=1)
    # the corpus cache's relevance term: a block's best cosine with the last this-many questions
    relevance_window: int = Field(10, gt=0)
    # the corpus cache: of the warm blocks a question did not read, the coolest this share may
    # be dropped for a prefetch (0: a prefetch only fills free room)
    corpus_replaceable_share: float = Field(0.5, ge=0, le=1)

    @model_validator(mode="after")
    def _ordered(self) -> SchedulerConfig:
        if not self.cold_threshold <= self.hbf_threshold <= self.hbm_threshold:
            raise ValueError(
                "thresholds must satisfy cold_threshold <= hbf_threshold <= hbm_threshold (got "
                f"{self.cold_threshold}, {self.hbf_threshold}, {self.hbm_threshold})")
        return self


class HbfConfig(Section):
    model_config = ConfigDict(title="hbf")

    prefetch_window: int = Field(2, ge=0)  # sequential pattern: prefetch this many next blocks
    prefetch_similarity: float = 0.7  # jumping pattern: prefetch blocks whose summary is this similar
    # the corpus cache's jump prefetch: blocks whose vector (a chunk's embedding) has a cosine
    # above this with the question's. 0.5 was tuned on the tune half of the trace bench
    # (0.7: drift -2.5 / +1.7 points vs LRU on tune / check; 0.5: +5.0 / +10.0)
    corpus_prefetch_similarity: float = Field(0.5, ge=-1, le=1)
    # ... and after a question that changed topic (its cosine with the previous question's at or
    # below corpus_prefetch_similarity), this many blocks instead of prefetch_window
    corpus_jump_prefetch_window: int = Field(6, ge=0)


class H3Config(Section):
    """The runtime's sections; `resources/settings.py` subclasses it for the whole file."""

    model: ModelConfig = ModelConfig()
    runtime: RuntimeConfig = RuntimeConfig()
    scheduler: SchedulerConfig = SchedulerConfig()
    hbf: HbfConfig = HbfConfig()

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        # `cold_storage:` with every key commented out is YAML null: the defaults
        if isinstance(data, dict):
            return {k: {} if v is None else v for k, v in data.items()}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, strict: bool = True) -> H3Config:
        """Builds and validates; bad types and values are errors naming the key. `strict`: a key
        the schema does not declare is an error too; otherwise it is skipped, left to its owner
        (the pipeline's loader checks the shared file's other keys), unless a typo of one here."""
        data = {} if data is None else data
        if not strict:
            data = _owned(cls, data)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise config_error(exc, cls) from None

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
        old = getattr(self, section)
        return type(self)(**{**dict(self), section: type(old)(**{**dict(old), **changes})})

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()


# ---- pydantic errors -> ConfigError -------------------------------------------------------------

_KINDS = {"int_type": "an integer", "float_type": "a number", "bool_type": "true or false",
          "string_type": "a string", "model_type": "a mapping of keys", "dict_type": "a mapping"}
_BOUNDS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<",
           "less_than_equal": "<="}


def config_error(exc: ValidationError, schema: type[BaseModel], prefix: str | None = None
                 ) -> ConfigError:
    """One ConfigError for all of `exc`'s errors, each `dotted.key: reason (got value)`."""
    return ConfigError("; ".join(_describe(e, schema, prefix) for e in exc.errors()))


def _describe(err: Any, schema: type[BaseModel], prefix: str | None) -> str:
    loc = tuple(str(p) for p in err["loc"])
    key = ".".join(((prefix,) if prefix else ()) + loc)
    kind, ctx, got = err["type"], err.get("ctx") or {}, err["input"]
    parent = _model_at(schema, loc[:-1])
    field = parent.model_fields.get(loc[-1]) if parent and loc else None
    if kind == "extra_forbidden":
        return _unknown(key, list(parent.model_fields) if parent else [], True)
    if not key and kind == "model_type":
        return f"h3 config must be a mapping of sections, got {type(got).__name__}"
    if isinstance(ctx.get("error"), ConfigError):
        # a nested section's own __init__ (pydantic calls a custom one) already said it all,
        # prefixed with its title, which is its field's name in H3Config
        return str(ctx["error"])
    if kind == "value_error":  # our validators' messages carry their own values
        return f"{key}: {ctx['error']}"
    args = get_args(field.annotation) if field else ()
    if kind == "literal_error":
        reason = "must be one of " + ", ".join(map(str, args))
    elif kind in _BOUNDS:
        reason = f"must be {_BOUNDS[kind]} {next(iter(ctx.values()))}"
    elif kind in _KINDS:
        reason = f"must be {_KINDS[kind]}" + (" or null" if type(None) in args else "")
    else:
        reason = err["msg"][:1].lower() + err["msg"][1:]
    reason += f" (got {got!r})"
    if field and field.description:  # why the constraint: shown with its error
        reason += f": {field.description}"
    return f"{key}: {reason}" if key else reason


def _model_at(schema: Any, loc: tuple[str, ...]) -> Any:
    """The model class at `loc` under `schema` (`schema` itself at ()), or None."""
    for part in loc:
        field = schema.model_fields.get(part) if _is_model(schema) else None
        schema = field.annotation if field else None
    return schema if _is_model(schema) else None


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _unknown(key: str, allowed: list[str], list_allowed: bool) -> str:
    *section, name = key.split(".")
    what = "key" if section else "section"
    message = f"unknown config {what} {key if section else repr(key)}"
    guess = difflib.get_close_matches(name, allowed, n=1, cutoff=0.8)
    if guess:
        message += ("; did you mean " + (".".join([*section, guess[0]]) if section
                                         else repr(guess[0])) + "?")
    if list_allowed:
        message += f" (allowed: {', '.join(allowed)})"
    return message


def _owned(schema: type[H3Config], data: Any) -> Any:
    """Lenient loading: `data` less the sections and keys `schema` does not declare (another
    owner's), but a name one typo away from one of its own is nobody else's: an error."""
    if not isinstance(data, dict):
        return data  # validation names the problem
    kept: dict[str, Any] = {}
    for name, values in data.items():
        section = schema.model_fields.get(name)
        if section is None:
            if difflib.get_close_matches(name, schema.model_fields, n=1, cutoff=0.8):
                raise ConfigError(_unknown(name, list(schema.model_fields), False))
            continue
        own = section.annotation.model_fields  # type: ignore[union-attr]
        if isinstance(values, dict):
            for key in values:
                if key not in own and difflib.get_close_matches(key, own, n=1, cutoff=0.8):
                    raise ConfigError(_unknown(f"{name}.{key}", list(own), False))
            values = {k: v for k, v in values.items() if k in own}
        kept[name] = values
    return kept
