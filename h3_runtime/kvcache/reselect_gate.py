"""Decode's re-selection gate: a layer re-selects its hot blocks only once its query has moved.

A re-selection (sketch ranking, exact re-scoring, the scheduler, the block copies: several times
a decoded token's own cost on a CPU, `h3 bench --scenario decode`) chooses blocks for the query
of that step. While the next queries point where that one pointed, the same blocks serve them,
so the choice is reused. Per layer the gate keeps the query at the last selection, per KV head
the mean of its query heads (GQA: the heads that read one KV head's slots), projected on the
layer's key basis where it has one (key_basis.py: the 16 directions the sketches rank blocks in;
the raw query also turns with RoPE's fast dimensions, which move the recent window, not the
choice of old blocks), and at each considered step (`runtime.decode_reselect_every`) compares
the current one with it:

- some KV head's cosine to its reference below `runtime.decode_reselect_cosine`: the query has
  moved, re-select (the reference becomes this query);
- else reuse the last choice, but one choice serves at most `runtime.decode_reselect_max_tokens`
  decoded tokens (a safety bound: slow drift, and the blocks completed meanwhile, are ranked
  again at the latest then);
- `decode_reselect_cosine` >= 1.0 turns the gate off: every considered step re-selects (the
  behaviour before the gate).

Only the KV heads whose query moved re-select (`runtime.decode_reselect_heads: moved`): each
KV head ranks blocks for its own slots, so a head whose query still points where it pointed
keeps its blocks and its reference, and its ranking and block copies are not paid for. At 8K on
the decode bench's prompt, 82 of 99 gate openings had one of the three heads moved, 17 two
(`all`, the behaviour before: every head of the layer re-selects). The safety bound counts from
the layer's last all-head selection.

Measured (bundled model, the decode bench's 8K passkey prompt, 32 tokens, 10%): re-selecting
every token, the hot set of a head changes by up to 20-70% from one token to the next (the
ranking is flat below the needle's blocks), and the projected query's cosine to the one at the
first token falls to ~0.6-0.9. Thresholds 0.9 / 0.8 / 0.7 / 0.5 re-selected 424 / 228 / 99 / 31
of the 900 layer-steps after the first (every 3 tokens: 300), all with full attention's text;
at 4K tokens the RULER prompts of seeds 0-2 kept 0.94 of full attention's score at 0.5 and 0.89
re-selecting every 3 tokens (docs/runtime.md). 0.5 shipped first.

Then real filings said otherwise (`h3 bench --scenario filings_gate`: the development set's
labelled questions over their filings' pages at 8K tokens, teacher-forced along full attention's
answer; an answer quoting figures reads a different block every few tokens). 0.5 re-selected ~0.3 layers of 30 a token
there and its next-token KL from full attention was 0.012 at 10% / 0.040 at 5%, no better than
the sinks + window baseline's 0.012 at 10%; re-selecting every token gave 0.0005 / 0.0013. Per
half of the development set (tune / check, by company), KL at 10% and 5%: 0.5: 0.015 / 0.011
and 0.038 / 0.041; 0.6: 0.0047 / 0.0097 and 0.016 / 0.033 (0.8 layers a token); 0.7: 0.0029 /
0.0047 and 0.0097 / 0.011 (2.5 layers); 0.8: 0.0010 / 0.0014 and 0.0034 / 0.0050 (5.7 layers).
0.7 ships: it holds on the half it was not chosen on, for ~2 more layer re-selections a token
than 0.5, each of the moved heads only (below; docs/runtime.md has the decode and RULER figures).

While a layer reuses its choice and a block leaves the recent ring (it completes: the ring moves
on by a block), that block would be attended by no one until the next re-selection. The layer
hands it to every KV head's slots instead (tiered_attention.TieredLayerAttention._hand_over), in
place of the head's block that ranked lowest at the last selection: the window keeps covering it.
"""

from __future__ import annotations

import numpy as np
import torch


class ReselectGate:
    """One layer's decision, step by step, whether its decode re-selects (module doc)."""

    def __init__(self, every: int, cosine: float, max_tokens: int,
                 basis: torch.Tensor | None = None):
        """`basis`: the layer's key basis (H_kv, D, r) (key_basis.py), if it has one: queries
        are compared in it, the r directions the sketches rank blocks in."""
        self.every, self.cosine, self.max_tokens = every, cosine, max_tokens
        self.basis = None if basis is None else basis.detach().to("cpu", torch.float32)
        self._basis_np = None if basis is None else self.basis.numpy()
        self.ref: np.ndarray | torch.Tensor | None = None  # (H_kv, D) unit: the last selection's
        self.steps = 0  # decode steps since the last prefill (considered or not)
        self.since = 0  # decode steps since the last re-selection of every head
        self.last_cosine: float | None = None  # the lowest head cosine at the last check
        # the KV heads whose query moved at the last step `due` said yes to (H_kv,) bool; None:
        # every head re-selects (the first step, the gate off, the safety bound reached)
        self.moved: np.ndarray | torch.Tensor | None = None

    @property
    def enabled(self) -> bool:
        """Whether the query's drift is looked at (else every considered step re-selects)."""
        return self.cosine < 1.0

    def reset(self) -> None:
        """After a prefill: the next decode step selects afresh."""
        self.ref, self.steps, self.since, self.last_cosine = None, 0, 0, None
        self.moved = None

    def head_queries(self, q: torch.Tensor, n_kv_heads: int) -> np.ndarray | torch.Tensor:
        """q (1, Hq, 1, D) -> (H_kv, D) (or (H_kv, r) in the key basis) float32 unit vectors:
        each KV head's query heads' mean. On a CPU a numpy array: a few microseconds where each
        torch op costs several (the gate runs in every layer at every decoded token); elsewhere
        a tensor on q's device."""
        qh = q[0, :, -1].detach()
        if qh.device.type == "cpu":
            # (the sum: the mean's direction, one division fewer)
            m = qh.to(torch.float32).numpy().reshape(n_kv_heads, -1, q.shape[-1]).sum(1)
            if self._basis_np is not None:
                m = np.matmul(m[:, None, :], self._basis_np)[:, 0]  # (H_kv, r)
            return m / np.maximum(np.sqrt((m * m).sum(-1, keepdims=True)), 1e-30)
        m = qh.to(torch.float32).reshape(n_kv_heads, -1, q.shape[-1]).mean(1)
        if self.basis is not None:
            if self.basis.device != m.device:
                self.basis = self.basis.to(m.device)
            m = torch.einsum("hd,hdr->hr", m, self.basis)
        return torch.nn.functional.normalize(m, dim=-1)

    def due(self, q: torch.Tensor, n_kv_heads: int) -> bool:
        """Whether this decode step (query q: (1, Hq, 1, D)) re-selects; counts the step."""
        step, self.steps = self.steps, self.steps + 1
        self.since += 1
        self.moved = None
        if step % self.every:  # not a considered step
            return False
        if self.ref is None or not self.enabled or self.since >= self.max_tokens:
            return True
        cos = (self.head_queries(q, n_kv_heads) * self.ref).sum(-1)  # (H_kv,)
        self.last_cosine = float(cos.min())
        if self.last_cosine >= self.cosine:
            return False
        self.moved = cos < self.cosine
        return True

    def moved_heads(self) -> list[int] | None:
        """The KV heads that re-select at the step `due` just said yes to: those whose query
        moved, or None for every head (the layer's first selection, the gate off, the safety
        bound reached)."""
        if self.moved is None:
            return None
        moved = self.moved.cpu().numpy() if isinstance(self.moved, torch.Tensor) else self.moved
        return [int(h) for h in np.flatnonzero(moved)]

    def selected(self, q: torch.Tensor, n_kv_heads: int, heads: list[int] | None = None) -> None:
        """The layer re-selected for query q (`heads`: only those KV heads; None: all): it is
        their reference from now on. The safety bound counts from the last selection of every
        head (a head whose query never moves is ranked again then)."""
        if heads is None:
            self.since = 0
        if not self.enabled:
            return
        now = self.head_queries(q, n_kv_heads)
        if heads is None or self.ref is None:
            self.ref = now
        else:
            self.ref[heads] = now[heads]
