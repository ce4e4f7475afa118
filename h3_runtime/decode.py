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
                  margins: list[float] | None = None,
                  no_repeat_ngram: int = 0,
                  stop: Callable[[list[int]], bool] | None = None) -> list[int]:
    """Greedy continuation from `first_logits` `(V,)` over `cache` (which it extends); stops at
    an EOS, after `max_new_tokens`, or once `stop(tokens so far)` is true. `forward`: what runs
    one token (default: the model; the engine passes the model's own forward when
    `model.forward` is wrapped). `step_seconds`, if
    given, receives each forward call's wall time, in order; `margins`, if given, each chosen
    token's logit lead over the runner-up (how near a tie the greedy choice was).
    `no_repeat_ngram` n > 0: a token that would repeat an n-gram already generated is never
    chosen (the next best is), so a small model cannot loop ("1. X 2. X 3. X ..."); only the
    generated tokens count, so quoting the prompt stays possible. 0 (the default): plain greedy,
    what the benches compare with full attention."""
    run = forward if forward is not None else model
    device = first_logits.device
    out: list[int] = []
    logits = first_logits
    for step in range(max_new_tokens):
        if no_repeat_ngram > 0:
            logits = _without_repeats(logits, out, no_repeat_ngram)
        token = int(torch.argmax(logits))
        if margins is not None:
            top2 = torch.topk(logits.float(), 2).values
            margins.append(float(top2[0] - top2[1]))
        if step == 0 and on_first is not None:
            on_first()
        out.append(token)
        if token in eos_ids or step == max_new_tokens - 1 or (stop is not None and stop(out)):
            break
        ids = torch.tensor([[token]], device=device)  # (1, 1)
        cache.note_tokens(ids)
        t0 = time.perf_counter()
        logits = run(input_ids=ids, cache=cache, use_cache=True).logits[0, -1]  # (V,)
        if step_seconds is not None:
            step_seconds.append(time.perf_counter() - t0)
    return out


def _without_repeats(logits: torch.Tensor, out: list[int], n: int) -> torch.Tensor:
    """`logits` (V,) with -inf for each token that would complete an n-gram `out` already has."""
    if len(out) < n:
        return logits
    prefix = out[len(out) - n + 1:]
    banned = {out[i + n - 1] for i in range(len(out) - n + 1) if out[i:i + n - 1] == prefix}
    if not banned:
        return logits
    logits = logits.clone()
    logits[list(banned)] = float("-inf")
    return logits
