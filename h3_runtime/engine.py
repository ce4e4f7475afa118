"""`H3Engine`: serves an unmodified HF causal LM from a small hot KV budget.

    engine = H3Engine(hbm_size_gb=0.05)                  # the default model
    model.forward = engine.wrap_forward(model.forward)   # then model.generate(...) as usual
    engine.generate("prompt", max_new_tokens=64)

Plugs in only through public extension points: an `H3Cache` (a `Cache` subclass) given to
forward/generate, the `h3` function registered with `AttentionInterface` (selected with
`model.set_attn_implementation`), and chunked prefill done around `forward`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

import torch

from h3_runtime.config import H3Config
from h3_runtime.debug_dump import scheduler_state
from h3_runtime.decode import greedy_decode
from h3_runtime.hf.attention import register
from h3_runtime.hf.cache import H3Cache
from h3_runtime.kvcache.block import BlockKeys, decode_kv_dtype
from h3_runtime.kvcache.block_moves import TierContext
from h3_runtime.kvcache.cold import KVBlockStore, cold_root
from h3_runtime.kvcache.geometry import plan_geometry
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.hot_codec import hot_bytes_per_token_layer
from h3_runtime.kvcache.key_basis import key_basis
from h3_runtime.kvcache.sparse_attention import (
    BIAS_DTYPE,
    decode_scratch_bytes_per_token,
    native_narrow_matmul,
)
from h3_runtime.kvcache.stats import TierStats
from h3_runtime.kvcache.tiers import WarmTier
from h3_runtime.models import check_supported, fingerprint, kv_geometry, load_model, own_forward
from h3_runtime.scheduler.ahas import AhasScheduler

GiB = 2**30


class H3Engine:
    def __init__(self, model_path: str | Path | None = None, hbm_size_gb: float | None = None,
                 hbf_size_gb: float | None = None, cold_storage_path: str | Path | None = None,
                 config: str | Path | dict | H3Config | None = None, model=None, tokenizer=None,
                 selection: bool = True):
        """`selection=False` keeps only sinks + recent window hot (the StreamingLLM-like baseline).

        A `config` file or dict may hold the pipeline's keys too (the shared h3_config.yaml):
        the engine checks the runtime's own keys and leaves the others to their owner."""
        cfg = H3Config.from_any(config, strict=False)
        changes = {k: v for k, v in {"hbm_size_gb": hbm_size_gb, "hbf_size_gb": hbf_size_gb,
                                     "cold_storage_path": str(cold_storage_path) if cold_storage_path
                                     else None}.items() if v is not None}
        self.config = cfg.replace("runtime", **changes) if changes else cfg
        rt = self.config.runtime
        if model is None:
            model, tokenizer = load_model(model_path or self.config.model.path,
                                          self.config.model.dtype, self.config.model.device)
        else:
            check_supported(model)
        self.model, self.tokenizer = model, tokenizer
        self.n_layers, self.n_kv_heads, self.head_dim, self.elt = kv_geometry(model)
        self.bytes_per_token_layer = 2 * self.n_kv_heads * self.head_dim * self.elt
        self.budget_bytes = int(rt.hbm_size_gb * GiB)
        self.selection = selection
        param = next(model.parameters())  # the model's dtype and device
        model_dtype, self.device = param.dtype, param.device
        self.decode_dtype = decode_kv_dtype(model_dtype, rt.decode_kv_dtype)
        self.decode_native_matmul = native_narrow_matmul(self.device, self.decode_dtype)
        self.geometry = plan_geometry(
            self.budget_bytes, self.n_layers, self.bytes_per_token_layer, rt, selection=selection,
            decode_bytes_per_token_layer=hot_bytes_per_token_layer(
                self.n_kv_heads, self.head_dim, self.decode_dtype),
            bias_bytes_per_token_layer=self.n_kv_heads * BIAS_DTYPE.itemsize,
            decode_scratch_bytes_per_token=decode_scratch_bytes_per_token(
                model.config.num_attention_heads, self.bytes_per_token_layer, model_dtype,
                self.decode_dtype, self.decode_native_matmul))
        self.cold = KVBlockStore(cold_root(rt.cold_storage_path), int(rt.cold_storage_max_gb * GiB))
        self.scheduler = AhasScheduler(self.config.scheduler, self.config.hbf)
        self.fingerprint = fingerprint(model)
        self.stats_counters = TierStats()
        self.cache: H3Cache | None = None  # the most recent cache (what stats() describe)
        self.hot_peak_bytes = 0
        self.timings: dict[str, float] = {}
        self.decode_step_seconds: list[float] = []  # the last generate's, one per forward call
        register()

    # ---- caches -------------------------------------------------------------------------------
    def new_cache(self, exact_allowed: bool = True) -> H3Cache:
        """A fresh tiered cache on this engine's budget (releases the previous one)."""
        self._retire()
        pool = HotPool(self.budget_bytes)
        warm = WarmTier(int(self.config.runtime.hbf_size_gb * GiB), pin=self.device.type == "cuda")
        keys = BlockKeys(self.fingerprint, self.geometry.block_tokens, f"{time.time_ns():x}")
        ctx = TierContext(pool, warm, self.cold, self.stats_counters, self.scheduler, keys.cold_key,
                          selection=self.selection,
                          exact_prefill=self.config.runtime.prefill_attention == "exact",
                          reselect_every=self.config.runtime.decode_reselect_every,
                          reselect_cosine=self.config.runtime.decode_reselect_cosine,
                          reselect_max_tokens=self.config.runtime.decode_reselect_max_tokens,
                          reselect_moved_heads=self.config.runtime.decode_reselect_heads == "moved",
                          exact_rescore=self.config.runtime.decode_exact_rescore,
                          key_basis=self.key_basis if self.selection else None,
                          decode_dtype=self.decode_dtype,
                          decode_native_matmul=self.decode_native_matmul)
        cache = H3Cache(self.n_layers, self.geometry, ctx, keys, self.device, exact_allowed)
        self.cache = cache
        return cache

    @functools.cached_property
    def key_basis(self) -> torch.Tensor:
        """(n_layers, H_kv, D, r): the model's key basis for decode's per-token sketches (fitted
        once per model and cached under H3_HOME: kvcache/key_basis.py)."""
        return key_basis(self.model, self.tokenizer, self.fingerprint)

    def cache_stats(self, cache: H3Cache) -> dict:
        """What one request's cache used of this engine's hot budget (ReuseRuntime reports it)."""
        return {"hot_peak_bytes": int(cache.pool.peak_bytes),
                "hot_budget_bytes": int(self.budget_bytes),
                "kv_mode": "sparse" if cache.sparse else "exact"}

    def _retire(self) -> None:
        if self.cache is not None:
            self.hot_peak_bytes = max(self.hot_peak_bytes, self.cache.pool.peak_bytes)
            self.cache.release()

    # ---- running the model --------------------------------------------------------------------
    def wrap_forward(self, forward: Callable) -> Callable:
        """A drop-in `model.forward` that runs on an H3Cache (created when the caller gives none
        or an empty one) and prefills long inputs in chunks. Switches the model to `h3` attention."""
        self.model.set_attn_implementation("h3")

        @functools.wraps(forward)
        def wrapped(*args, **kwargs):
            if args:
                kwargs["input_ids"] = args[0]
                args = args[1:]
            cache = kwargs.pop("cache", None) or kwargs.pop("past_key_values", None)
            if not isinstance(cache, H3Cache):
                if cache is not None and cache.get_seq_length() > 0:
                    return forward(*args, cache=cache, **kwargs)  # someone else's cache: untouched
                cache = self.new_cache()
            return self._forward_chunks(forward, cache, *args, **kwargs)

        return wrapped

    def _forward_chunks(self, forward: Callable, cache: H3Cache, *args, **kwargs):
        ids = kwargs.get("input_ids")
        q = ids.shape[1] if ids is not None else kwargs["inputs_embeds"].shape[1]
        cache.note_tokens(ids)
        if self.model.config._attn_implementation != "h3":
            self.model.set_attn_implementation("h3")
        kwargs["use_cache"] = True
        sizes = cache.plan_chunks(q)
        if len(sizes) == 1:
            return forward(*args, cache=cache, **kwargs)
        past, start, out = cache.get_seq_length(), 0, None
        for i, size in enumerate(sizes):
            end = start + size
            part = dict(kwargs)
            for name in ("input_ids", "inputs_embeds", "position_ids"):
                if part.get(name) is not None:
                    part[name] = part[name][:, start:end]
            if part.get("attention_mask") is not None and part["attention_mask"].ndim == 2:
                part["attention_mask"] = part["attention_mask"][:, : past + end]
            if i < len(sizes) - 1:
                part["logits_to_keep"] = 1  # only the last chunk's logits matter
            cache.ctx.observe_window = i == len(sizes) - 1  # decode follows the last chunk only
            try:
                out = forward(*args, cache=cache, **part)
            finally:
                cache.ctx.observe_window = True
            start = end
        return out

    @torch.inference_mode()
    def generate(self, prompt: str | list[int] | torch.Tensor, max_new_tokens: int = 64,
                 cache: H3Cache | None = None, return_ids: bool = False):
        """Greedy generation on the tiered cache. `prompt`: text or token ids; `cache`: e.g. one
        holding loaded KV (its tokens must be a prefix of the prompt). Returns the text."""
        if max_new_tokens < 0:  # (0: the prompt is prefilled into the cache, nothing decoded)
            raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        ids = self._ids(prompt)
        cache = cache if cache is not None else self.new_cache()
        done = cache.get_seq_length()
        forward = self._raw_forward()
        t0 = time.perf_counter()
        out = self._prefill_rest(forward, cache, ids)
        t1 = time.perf_counter()
        eos = getattr(self.tokenizer, "eos_token_id", None)
        self.decode_step_seconds = []  # each decoded token's forward call (the decode bench)
        new = greedy_decode(self.model, cache, out.logits[0, -1], max_new_tokens,
                            eos_ids=(eos,) if isinstance(eos, int) else (), forward=forward,
                            step_seconds=self.decode_step_seconds)
        t2 = time.perf_counter()
        self.timings = {"prefill_s": t1 - t0, "decode_s": t2 - t1,
                        "decode_tokens": max(len(new) - 1, 0), "prompt_tokens": ids.shape[1],
                        "prefill_tokens_computed": ids.shape[1] - done}
        self.hot_peak_bytes = max(self.hot_peak_bytes, cache.pool.peak_bytes)
        if return_ids:
            return new
        return self.tokenizer.decode(new, skip_special_tokens=True) if self.tokenizer else new

    @torch.inference_mode()
    def continuation_logits(self, prompt: str | list[int] | torch.Tensor, continuation: list[int],
                            cache: H3Cache | None = None) -> torch.Tensor:
        """Teacher forcing: the logits `(len(continuation), V)` (float32, host) the model gives
        each token of `continuation` after the prompt and the continuation's tokens before it,
        computed as decode computes them (the prompt prefilled on the tiers, then one token per
        forward call, block re-selection included). Fed a reference answer (e.g. full
        attention's), this measures how far the tiers move each prediction without the drift of
        free-running greedy decoding. `cache`: as in `generate`."""
        cache = cache if cache is not None else self.new_cache()
        forward = self._raw_forward()
        out = self._prefill_rest(forward, cache, self._ids(prompt))
        rows = [out.logits[0, -1].float().cpu()]
        for token in continuation[:-1]:
            step = torch.tensor([[int(token)]], device=self.device)  # (1, 1)
            cache.note_tokens(step)
            rows.append(forward(input_ids=step, cache=cache, use_cache=True).logits[0, -1].float().cpu())
        self.hot_peak_bytes = max(self.hot_peak_bytes, cache.pool.peak_bytes)
        return torch.stack(rows)

    def _prefill_rest(self, forward: Callable, cache: H3Cache, ids: torch.Tensor):
        """Prefills the prompt tokens `cache` does not hold yet (its tokens are a prefix of
        `ids`), keeping the last position's logits only."""
        self.model.set_attn_implementation("h3")
        done = cache.get_seq_length()
        return self._forward_chunks(forward, cache, input_ids=ids[:, done:].to(self.device),
                                    logits_to_keep=1)

    def _raw_forward(self) -> Callable:
        """The model's own forward even if it was wrapped (generate() does its own chunking)."""
        return own_forward(self.model)

    def _ids(self, prompt) -> torch.Tensor:
        """The prompt as (1, n) token ids: text through the tokenizer, or ids as given."""
        if isinstance(prompt, str):
            if self.tokenizer is None:
                raise ValueError("a text prompt needs a tokenizer")
            ids = self.tokenizer(prompt, return_tensors="pt").input_ids
        else:
            ids = torch.as_tensor(prompt)
            ids = ids[None] if ids.ndim == 1 else ids
        # (caught here: past this point an empty or non-integer prompt fails deep in torch,
        # e.g. "cannot reshape tensor of 0 elements", naming neither the prompt nor the reason)
        if ids.numel() == 0:
            raise ValueError("empty prompt: nothing to generate from (give at least one token)")
        if ids.is_floating_point() or ids.dtype == torch.bool or ids.ndim != 2:
            raise ValueError(f"prompt: expected token ids (integers, shape (n,) or (1, n)), got "
                             f"{ids.dtype} of shape {tuple(ids.shape)}")
        return ids

    @torch.inference_mode()
    def warmup_tokens(self, n_tokens: int) -> dict:
        """Prefills `n_tokens` of deterministic filler text and decodes a few tokens, so the
        tiers and the scheduler hold real state (what `h3 monitor` then shows)."""
        vocab = int(self.model.config.vocab_size)
        ids = (torch.arange(n_tokens) * 7919 % max(vocab - 10, 1) + 5)[None]  # (1, n)
        self.generate(ids, max_new_tokens=4)
        return self.stats()

    # ---- reporting ----------------------------------------------------------------------------
    def full_kv_bytes(self, n_tokens: int | None = None) -> int:
        n = n_tokens if n_tokens is not None else (self.cache.get_seq_length() if self.cache else 0)
        return n * self.bytes_per_token_layer * self.n_layers

    def stats(self) -> dict:
        pool = self.cache.pool if self.cache else HotPool(self.budget_bytes)
        warm = self.cache.ctx.warm if self.cache else None
        return {
            "hot_peak_bytes": max(self.hot_peak_bytes, pool.peak_bytes),
            "hot_budget_bytes": self.budget_bytes,
            "hot_used_bytes": pool.used_bytes,
            "full_kv_bytes": self.full_kv_bytes(),
            "tokens": self.cache.get_seq_length() if self.cache else 0,
            "mode": ("sparse" if self.cache and self.cache.sparse else "exact"),
            "warm_bytes": warm.usage_bytes if warm else 0,
            "warm_reserved_bytes": warm.reserved_bytes if warm else 0,  # arenas' rows, used or not
            "warm_summary_bytes": self._summary_bytes(),
            "cold_bytes": self.cold.usage_bytes,
            **self.stats_counters.to_dict(),
            **{k: round(v, 4) if isinstance(v, float) else v for k, v in self.timings.items()},
        }

    def _summary_bytes(self) -> int:
        """Host bytes of the block summaries (warm, beside the blocks; summaries.py)."""
        if self.cache is None:
            return 0
        return sum(layer.store.summaries.nbytes for layer in self.cache.layers
                   if layer.store is not None)

    def dump_scheduler_state(self) -> dict:
        """What `h3 monitor --dump-scheduler-state` prints (see debug_dump.py)."""
        return scheduler_state(self)
