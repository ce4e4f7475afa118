"""Greedy decoding: the one decode loop, used by `H3Engine.generate` and by reuse's answers."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from h3_runtime.reuse.cache_io import ReuseCache


@torch.no_grad()
def greedy_decode(model: torch.nn.Module, cache: ReuseCache, first_logits: torch.Tensor,
                  max_new_tokens: int, eos_ids: Sequence[int] = (),
                  on_first: Callable[[], None] | None = None,
                  forward: Callable | None = None,
                  step_seconds: list[float] | None = None,
                  margins: list[float] | None = None) -> list[int]:
    """Greedy continuation from `first_logits` `(V,)` over `cache` (which it extends); stops at
    an EOS or after `max_new_tokens`. `forward`: what runs one token (default: the model; the
    engine passes the model's own forward when `model.forward` is wrapped). `step_seconds`, if
    given, receives each forward call's wall time, in order; `margins`, if given, each chosen
    token's logit lead over the runner-up (how near a tie the greedy choice was)."""
    run = forward if forward is not None else model
    device = first_logits.device
    out: list[int] = []
    logits = first_logits
    for step in range(max_new_tokens):
        token = int(torch.argmax(logits))
        if margins is not None:
            top2 = torch.topk(logits.float(), 2).values
            margins.append(float(top2[0] - top2[1]))
        if step == 0 and on_first is not None:
            on_first()
        out.append(token)
        if token in eos_ids or step == max_new_tokens - 1:
            break
        ids = torch.tensor([[token]], device=device)  # (1, 1)
        cache.note_tokens(ids)
        t0 = time.perf_counter()
        logits = run(input_ids=ids, cache=cache, use_cache=True).logits[0, -1]  # (V,)
        if step_seconds is not None:
            step_seconds.append(time.perf_counter() - t0)
    return out
