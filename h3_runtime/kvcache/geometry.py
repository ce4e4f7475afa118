"""How a hot budget is split: per layer [sinks | recent ring | block slots], plus one transient
chunk (the new tokens of the layer being computed).

A hot buffer costs b + beta bytes per token-layer: K and V (b = 2 * H_kv * D * element size)
and the column of its float32 attention bias (beta = 4 * H_kv, ~1.6% of a float16 buffer at
D = 64), which is how attention skips empty columns. While prefilling:

    (n_layers * P + chunk + (P + chunk)) * (b + beta) <= budget

(P = per_layer_tokens; the last term is the attention staging copy of one layer's hot buffer
plus its new tokens, alive only while that layer attends; the exact prefill streams its block
groups through that room). Decoding needs neither the chunk nor the staging: each new token is
one token, read in place. So each layer's block slots grow to `decode_slots` for decode (and
shrink back before the next prefill chunk). Decode may also keep its hot buffers in a narrower
dtype than the model's (`runtime.decode_kv_dtype`: int8 by default, with a float32 scale per
head and token, hot_codec.py, so b_dec is ~0.27x a float32 model's b; float16: half of b), so
the same bytes hold ~3.6x (int8) or twice (float16) the tokens. Decoding stays within

    n_layers * P_dec * (b_dec + beta) + P_dec * sigma + b <= budget

(P_dec = decode_layer_tokens; sigma: what decode attention allocates per buffer token of the
one layer attending - its scores and probabilities, plus an up-cast copy of the buffer's K,
then of its V, where the device cannot multiply the narrow dtype natively:
sparse_attention.decode_attention; the
last term is the new token). Every layer switches between its prefill and its decode buffer
before any layer attends (hf/cache.py), each releasing its old buffer before reserving the new
one (its sinks and ring wait in host memory meanwhile), so a switch never holds more than
n_layers * max(P * (b + beta), P_dec * (b_dec + beta)), which both bounds cover.
The hot tier can never exceed its budget, whatever the prompt length, and decode attends to
~3.4x (int8) or ~1.9x (float16) the tokens a float32 buffer would hold (the bias and the
up-cast scratch take the rest).
"""

from __future__ import annotations

from dataclasses import dataclass

from h3_runtime.config import RuntimeConfig


class BudgetTooSmallError(ValueError):
    """The hot budget cannot hold even one block per layer plus the sinks."""


@dataclass(frozen=True, slots=True)
class Geometry:
    block_tokens: int  # T
    sink_tokens: int  # S (<= T)
    n_slots: int  # selectable block slots per layer
    recent_capacity: int  # ring size: the recent window R plus one partial block T
    chunk_tokens: int  # prefill chunk C (its KV is hot while its layer computes)
    top_k: int  # blocks chosen by relevance per query (the scheduler caps it at the slots)
    bytes_per_token_layer: int  # 2 * H_kv * D * element size
    decode_slots: int  # block slots per layer while decoding (>= n_slots; see above)
    decode_bytes_per_token_layer: int  # the same in decode's hot dtype (module doc)
    bias_bytes_per_token_layer: int = 0  # a buffer's attention bias column (module doc: beta)
    decode_scratch_bytes_per_token: int = 0  # decode attention's transient bytes (sigma)

    @property
    def per_layer_tokens(self) -> int:
        """Tokens a layer's hot buffer holds while prefilling."""
        return self.layer_tokens(self.n_slots)

    @property
    def decode_layer_tokens(self) -> int:
        """Tokens a layer's hot buffer holds while decoding."""
        return self.layer_tokens(self.decode_slots)

    def layer_tokens(self, n_slots: int) -> int:
        return self.sink_tokens + self.recent_capacity + n_slots * self.block_tokens

    def hot_bytes(self, n_layers: int) -> int:
        """Hot bytes at most, in either phase: prefill (every layer's buffers, one transient
        chunk, one staging copy) or decode (every layer's larger buffers, the up-cast copy of
        one, one new token)."""
        P, C, Pd = self.per_layer_tokens, self.chunk_tokens, self.decode_layer_tokens
        b, beta = self.bytes_per_token_layer, self.bias_bytes_per_token_layer
        return max((n_layers * P + C + P + C) * (b + beta),
                   decode_peak_bytes(Pd, n_layers, b, self.decode_bytes_per_token_layer, beta,
                                     self.decode_scratch_bytes_per_token))


def decode_peak_bytes(Pd: int, n_layers: int, b: int, b_dec: int, beta: int = 0,
                      sigma: int = 0) -> int:
    """Hot bytes at most while decoding with Pd tokens per layer in b_dec bytes each plus beta
    of bias, sigma of one layer's attention scratch per token (b: the model's bytes per
    token-layer, for the new token; module doc)."""
    return n_layers * Pd * (b_dec + beta) + Pd * sigma + b


MIN_SLOTS = 32  # fewer selectable blocks than this and the block size halves (see below)
MIN_BLOCK_TOKENS = 8


def plan_geometry(budget_bytes: int, n_layers: int, bytes_per_token_layer: int,
                  rt: RuntimeConfig, selection: bool = True,
                  decode_bytes_per_token_layer: int | None = None,
                  bias_bytes_per_token_layer: int = 0,
                  decode_scratch_bytes_per_token: int = 0) -> Geometry:
    """Splits the budget. `selection=False` gives the sinks + window baseline (StreamingLLM-like:
    no block slots while prefilling, the whole per-layer budget is the recent window; decoding,
    the window widens over the decode buffer's slots).
    `decode_bytes_per_token_layer`: decode's hot bytes per token-layer when its buffers are
    narrower than the model's dtype (module doc); None: the same.
    `bias_bytes_per_token_layer`, `decode_scratch_bytes_per_token`: beta and sigma (module doc).

    `runtime.block_tokens` is the largest block size: while the budget holds fewer than MIN_SLOTS
    block slots per layer, the block size halves (down to MIN_BLOCK_TOKENS). A small budget thus
    gets many small blocks instead of a few big ones: a small block's score (its best token's
    estimated q.k; before the key sketches, its min/max-key box's bound) speaks for fewer
    tokens, and the same hot bytes then hold the needles' blocks plus many more candidates
    (RULER tasks, 4K tokens, 5% of the KV, held-out seeds, box bound: 7 slots of 16 tokens per
    head kept 0.61 of full attention's score, 15 of 8 kept 0.84)."""
    T = rt.block_tokens
    while True:
        g = _split(budget_bytes, n_layers, bytes_per_token_layer, rt, selection, T,
                   decode_bytes_per_token_layer or bytes_per_token_layer,
                   bias_bytes_per_token_layer, decode_scratch_bytes_per_token)
        if g is not None and (not selection or g.n_slots >= MIN_SLOTS or T // 2 < MIN_BLOCK_TOKENS):
            return g
        if T // 2 < MIN_BLOCK_TOKENS:
            break
        T //= 2
    sinks = min(rt.sink_tokens, T)
    per_layer = _per_layer(budget_bytes, n_layers, bytes_per_token_layer + bias_bytes_per_token_layer,
                           rt)[1]
    raise BudgetTooSmallError(
        f"hbm_size_gb={budget_bytes / 2**30:.6f}: {budget_bytes} B hold {per_layer} tokens per "
        f"layer, fewer than sinks + one block ({sinks + T}); raise it or lower block_tokens")


def _per_layer(budget_bytes: int, n_layers: int, bytes_per_token_layer: int,
               rt: RuntimeConfig) -> tuple[int, int]:
    total = budget_bytes // bytes_per_token_layer  # layer-tokens the budget holds
    chunk = max(1, min(rt.prefill_chunk_tokens, total // 8))
    return chunk, (total - 2 * chunk) // (n_layers + 1)


def _split(budget_bytes: int, n_layers: int, bytes_per_token_layer: int, rt: RuntimeConfig,
           selection: bool, T: int, decode_bpt: int, beta: int, sigma: int) -> Geometry | None:
    """The split for block size T, or None if the budget cannot hold sinks + one block."""
    chunk, per_layer = _per_layer(budget_bytes, n_layers, bytes_per_token_layer + beta, rt)
    sinks = min(rt.sink_tokens, T)
    if per_layer < sinks + T:
        return None
    room = per_layer - sinks
    # decoding: no chunk and no staging copy (module doc)
    b = bytes_per_token_layer
    per_token = n_layers * (decode_bpt + beta) + sigma  # decode_peak_bytes' slope
    decode_tokens = (budget_bytes - b) // per_token
    if not selection:
        # the window: the ring is the whole room while prefilling; decoding, the slots the decode
        # buffer has room for hold the newest blocks before the ring (tiered_attention.py), so the
        # baseline's window spans as many tokens as H3 attends in the same bytes
        # (a ring is whole blocks plus one partial block: a decoded token writes its column
        # modulo the ring, so a ring of any other size overwrote its oldest tokens while the
        # bias still counted them live)
        ring = (room // T) * T
        decode_slots = max(0, (decode_tokens - sinks - ring) // T)
        return Geometry(T, sinks, 0, ring, chunk, 0, b, decode_slots, decode_bpt, beta, sigma)
    recent = min(rt.recent_tokens, ((room - T) // 4 // T) * T)
    recent_capacity = recent + T
    n_slots = (room - recent_capacity) // T
    decode_slots = max(n_slots, (decode_tokens - sinks - recent_capacity) // T)
    return Geometry(T, sinks, n_slots, recent_capacity, chunk, rt.top_k_blocks, b, decode_slots,
                    decode_bpt, beta, sigma)
