"""`H3Cache`: a transformers `Cache` whose layers live across the hot / warm / cold tiers.

While the hot budget holds the whole KV (plus one transient layer), a layer behaves exactly
like `DynamicLayer` (same tensors, same attention call): greedy output equals `DynamicCache`
token for token. When the next tokens would not fit, each layer switches once to sparse mode
(`TieredLayerAttention`): sinks + recent window + blocks selected from the warm summaries are hot, the
rest is in warm/cold, and `update` only hands the new tokens to the `h3` attention function.
"""

from __future__ import annotations

import threading

import torch
from transformers import Cache
from transformers.cache_utils import CacheLayerMixin

from h3_runtime.kvcache.block import BlockKeys
from h3_runtime.kvcache.block_moves import TierContext
from h3_runtime.kvcache.exact_prefill import PROBE_QUERIES
from h3_runtime.kvcache.geometry import Geometry
from h3_runtime.kvcache.hot import HotPool
from h3_runtime.kvcache.tiered_attention import TieredLayerAttention

# Exact mode writes new tokens into a buffer with room for this many more, where a plain
# DynamicLayer copies the whole KV (torch.cat) for every decoded token: at 1.4K tokens that copy
# was ~0.4 ms a layer, 20-25 ms of each ~100 ms token on the bundled model (2-core CPU).
EXACT_SPARE_TOKENS = 128

# update() -> attention: which cache/layer owns these new keys. transformers' attention
# interface is called with the module, q, k, v and the mask only (not the cache), so the sparse
# update hands its layer over here; the key tensor's identity ties the two calls together.
_pending = threading.local()


def take_pending(key: torch.Tensor) -> tuple[H3Cache, int] | None:
    """The (cache, layer) whose sparse update just returned `key`, once; else None."""
    item = getattr(_pending, "item", None)
    if item is not None and item[2] is key:
        _pending.item = None
        return item[0], item[1]
    return None


class H3Layer(CacheLayerMixin):
    is_sliding = False

    def __init__(self):
        super().__init__()
        self.store: TieredLayerAttention | None = None  # set once the layer goes sparse
        self.n_exact = 0
        # exact mode: `keys` / `values` are views of the first n_exact tokens of these buffers,
        # whose whole size (exact_bytes) is what the hot pool accounts for
        self.key_buffer: torch.Tensor | None = None
        self.value_buffer: torch.Tensor | None = None
        self.exact_bytes = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        self.keys = key_states[:, :, :0]
        self.values = value_states[:, :, :0]
        self.is_initialized = True

    def update(self, key_states, value_states, *args, **kwargs):  # pragma: no cover - unused
        raise NotImplementedError("H3Cache.update drives its layers")

    def get_seq_length(self) -> int:
        return self.store.n if self.store is not None else self.n_exact

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        if self.store is not None:  # sparse: the mask only covers the new tokens (causal)
            return query_length, self.store.n
        return self.n_exact + query_length, 0

    def get_max_length(self) -> int:
        return -1


class H3Cache(Cache):
    def __init__(self, n_layers: int, geometry: Geometry, ctx: TierContext, block_keys: BlockKeys,
                 device: torch.device | str = "cpu", exact_allowed: bool = True):
        """`block_keys`: the cold-tier keys of this sequence's blocks (the one `ctx` uses)."""
        super().__init__(layers=[H3Layer() for _ in range(n_layers)])
        self.device = torch.device(device)
        self.geometry, self.ctx = geometry, ctx
        self.exact_allowed = exact_allowed
        self.sparse = False
        self.block_keys = block_keys  # ids seen so far -> content keys for the cold tier
        self._transient = 0
        self._spare = 0  # tokens of room a growing exact buffer takes now (update, layer 0)
        self._expected = 0  # tokens the prompt being built will hold (expect_tokens)

    @property
    def pool(self) -> HotPool:
        return self.ctx.pool

    @property
    def token_ids(self) -> list[int]:
        """The ids seen so far (batch 1)."""
        return self.block_keys.token_ids

    def prefix_hashes(self) -> list[str]:
        """The chained prefix hash of each complete block seen so far."""
        return self.block_keys.prefix_hashes()

    def exact_fits(self, new_tokens: int, batch: int = 1) -> bool:
        """Whether all KV after `new_tokens` more, plus one layer's transient, fits the budget
        (for `batch` sequences side by side)."""
        if not self.exact_allowed or self.sparse:
            return False
        n = self.get_seq_length()
        bpt = self.geometry.bytes_per_token_layer * batch
        # the transient: a layer's old buffer while it grows into a new one
        buffer = self.layers[0].key_buffer
        held = max(n, 0 if buffer is None else buffer.shape[-2])
        need = (n + new_tokens) * bpt * len(self.layers) + max(held, self.geometry.chunk_tokens) * bpt
        return need <= self.pool.budget_bytes

    def plan_chunks(self, q_len: int) -> list[int]:
        """Sizes of the forward calls for q_len new tokens: one call when exact, else chunks."""
        if self.exact_fits(q_len):
            return [q_len]
        C = self.geometry.chunk_tokens
        tail = min(max(self.geometry.block_tokens, PROBE_QUERIES), C, q_len)
        # the last few tokens get their own call: the blocks they select (from the summaries)
        # are the ones the next token needs, undiluted by the rest of a big chunk's queries; in
        # an exact prefill their queries are the observation window (exact_prefill._BlockMass)
        head = q_len - tail
        if 0 < head < tail and q_len <= C:  # one call (a 1-token head would pass for a decode)
            return [q_len]
        if head == 1:
            head, tail = 2, tail - 1
        return [min(C, head - s) for s in range(0, head, C)] + [tail]

    def expect_tokens(self, n_tokens: int) -> None:
        """The prompt being built will hold `n_tokens` tokens: each layer's warm arena is
        reserved for them at once (`reserve_warm`), not grown as the tokens come."""
        self._expected = max(self._expected, n_tokens)

    def _warm_tokens(self) -> int:
        """Tokens a layer's warm arena makes room for: those seen, or the expected prompt's."""
        return max(len(self.token_ids), self._expected)

    def note_tokens(self, input_ids: torch.Tensor | None) -> None:
        """Records the ids of the next forward (batch 1), for content-addressed cold keys."""
        if input_ids is not None and input_ids.shape[0] == 1:
            self.block_keys.extend(input_ids[0].tolist())

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int,
               *args, **kwargs) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact mode: appends and returns all KV (like DynamicLayer; hot bytes accounted).
        Sparse mode: reserves the new tokens' transient hot bytes and returns them unchanged;
        the `h3` attention function then attends over the tiers and commits them."""
        layer = self.layers[layer_idx]
        if not layer.is_initialized:
            layer.lazy_initialization(key_states, value_states)
        q, batch = key_states.shape[-2], key_states.shape[0]
        if layer_idx == 0 and not self.sparse and not self.exact_fits(q, batch):
            if batch > 1:  # (else the exact KV's reservation fails with a budget error instead)
                raise ValueError(
                    f"H3: a batch of {batch} sequences needs the tiered mode (its KV does not fit "
                    f"the hot budget of {self.pool.budget_bytes} B), which serves one sequence "
                    f"at a time: run the {batch} prompts one by one")
            self.sparse = True
            # every layer leaves exact mode now, one after the other (each frees its exact KV
            # before reserving its buffers), so no exact KV is left hot while a layer attends
            for i, other in enumerate(self.layers):
                if other.is_initialized and other.store is None:
                    self._to_sparse(i, key_states)
        if layer_idx == 0 and self.sparse:
            # every layer switches buffers before any attends (geometry.py): a prefill chunk
            # after decoding gets its room (and its dtype) back from decode's larger block slots;
            # the first decoded token gets them
            for other in self.layers:
                if other.store is not None:
                    other.store.resize_slots(decoding=q == 1)
        nbytes = key_states.nbytes + value_states.nbytes
        if getattr(_pending, "item", None) is not None:
            _pending.item = None
            raise RuntimeError("H3Cache in sparse mode needs the model's attention set to 'h3' "
                               "(engine.wrap_forward or model.set_attn_implementation('h3'))")
        if not self.sparse:
            if layer_idx == 0:  # the same spare room for every layer (exact_fits counts all)
                self._spare = EXACT_SPARE_TOKENS if self.exact_fits(q + EXACT_SPARE_TOKENS, batch) else 0
            self._append_exact(layer, key_states, value_states)
            return layer.keys, layer.values
        if layer.store is None:
            self._to_sparse(layer_idx, key_states)
        if q > 1:  # a prefill chunk: the forward call's ids are all noted already
            layer.store.reserve_warm(self._warm_tokens(), len(self.layers))
        self.pool.reserve(nbytes, "transient chunk")
        self._transient = nbytes
        _pending.item = (self, layer_idx, key_states)
        return key_states, value_states

    def _append_exact(self, layer: H3Layer, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Writes the new tokens after the layer's exact KV (growing its buffers when full);
        `layer.keys` / `layer.values` then view all of it: (B, H_kv, n + q, D)."""
        n, q = layer.n_exact, keys.shape[-2]
        if layer.key_buffer is None or n + q > layer.key_buffer.shape[-2]:
            self._grow_exact(layer, n + q + self._spare, keys, values)
        layer.key_buffer[:, :, n:n + q] = keys
        layer.value_buffer[:, :, n:n + q] = values
        layer.n_exact = n + q
        layer.keys = layer.key_buffer[:, :, :n + q]
        layer.values = layer.value_buffer[:, :, :n + q]
        self.pool.occupy(keys.nbytes + values.nbytes)

    def _grow_exact(self, layer: H3Layer, tokens: int, keys: torch.Tensor,
                    values: torch.Tensor) -> None:
        """New buffers for `tokens` tokens holding the layer's exact KV so far (old and new are
        alive at once during the copy: both are reserved)."""
        B, H, _, D = keys.shape
        nbytes = 2 * B * H * tokens * D * keys.element_size()
        self.pool.reserve(nbytes, "exact kv")
        k_buf = keys.new_empty(B, H, tokens, D)
        v_buf = values.new_empty(B, H, tokens, D)
        n = layer.n_exact
        if n:
            k_buf[:, :, :n] = layer.key_buffer[:, :, :n]
            v_buf[:, :, :n] = layer.value_buffer[:, :, :n]
        self._free_exact(layer, vacate=False)
        layer.key_buffer, layer.value_buffer, layer.exact_bytes = k_buf, v_buf, nbytes

    def _free_exact(self, layer: H3Layer, vacate: bool = True) -> None:
        """Gives the layer's exact buffers back to the pool (`vacate`: their tokens go too)."""
        if layer.exact_bytes:
            self.pool.release(layer.exact_bytes, "exact kv")
        if vacate and layer.n_exact:
            self.pool.vacate(2 * layer.keys.nbytes)  # keys and values: the same shape
        layer.key_buffer = layer.value_buffer = None
        layer.exact_bytes = 0

    def _to_sparse(self, layer_idx: int, like: torch.Tensor) -> None:
        """Switches one layer to the tiers: its exact KV moves to host memory first (freeing its
        hot bytes), then the hot buffers are reserved and filled from there."""
        layer = self.layers[layer_idx]
        H, D = like.shape[1], like.shape[3]
        keys = values = None
        if layer.n_exact:
            if layer.keys.shape[0] != 1:
                raise ValueError("H3 sparse mode serves batch size 1")
            keys, values = layer.keys[0].to("cpu"), layer.values[0].to("cpu")  # (H_kv, n, D)
        self._free_exact(layer)
        layer.keys = layer.values = None
        store = TieredLayerAttention(layer_idx, self.geometry, H, D, like.dtype, like.device, self.ctx)
        store.reserve_warm(self._warm_tokens(), len(self.layers))
        if keys is not None:
            store.commit(keys, values)  # -> sinks / warm blocks / ring
        layer.store = store

    def attend(self, layer_idx: int, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               scaling: float) -> torch.Tensor:
        """Sparse attention for the pending new tokens of `layer_idx`: (1, C, Hq, D)."""
        try:
            return self.layers[layer_idx].store.attend(query, key, value, scaling)
        finally:
            self.pool.release(self._transient, "transient chunk")
            self._transient = 0

    def append_kv(self, keys: torch.Tensor, values: torch.Tensor, token_ids: list[int]) -> None:
        """Appends T precomputed tokens to every layer (keys, values: (L, H_kv, T, D), e.g.
        document KV loaded from the cold tier): hot while the whole KV still fits the budget
        (exact mode), else into the tiers (sparse mode; the hot budget holds either way)."""
        n = keys.shape[2]
        self.block_keys.extend(token_ids)
        if not self.sparse and not self.exact_fits(n):
            self.sparse = True
        for layer_idx in range(keys.shape[0]):
            k, v = keys[layer_idx][None], values[layer_idx][None]  # (1, H_kv, T, D)
            if not self.sparse:
                self.update(k.to(self.device), v.to(self.device), layer_idx)
                continue
            layer = self.layers[layer_idx]
            empty_k = k[:, :, :0].to(self.device)  # the hot buffers live on the model's device
            if not layer.is_initialized:
                layer.lazy_initialization(empty_k, v[:, :, :0].to(self.device))
            if layer.store is None:
                self._to_sparse(layer_idx, empty_k)
            layer.store.reserve_warm(self._warm_tokens(), len(self.layers))
            layer.store.commit(keys[layer_idx], values[layer_idx])  # (H_kv, T, D) -> tiers

    @torch.inference_mode()
    def release(self) -> None:
        """Frees everything this cache holds in hot and warm (cold files stay for reuse). In
        inference mode: a cache filled by `H3Engine.generate` (inference mode) holds inference
        tensors, which the release updates in place, and is often retired from outside it (the
        wrapped model's own `generate` runs under no_grad and starts a new cache)."""
        for layer in self.layers:
            if layer.store is not None:
                layer.store.release()
                layer.store = None
            elif layer.keys is not None and layer.is_initialized:
                self._free_exact(layer)
                layer.keys = layer.values = None
