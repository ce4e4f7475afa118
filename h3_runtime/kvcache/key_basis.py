"""A low-rank basis of each layer's keys, fitted once per model: what the per-token key sketches
(summaries.py) are written in.

Keys of one KV head live near a low-dimensional subspace (Loki, Singhania et al. 2024: about a
quarter of the head dimension holds most of their energy), so q.k is approximated well by
(q P).(k P) with P the top r eigenvectors of the keys' second moment (r = sketch_rank(D): 16
for the 135M model). Storing k P per token (int8) lets decode rank blocks by an estimate of each
token's own score - the max over a block's tokens - instead of the min/max-key box's upper
bound, which one large coordinate loosens for the whole block.

The basis is fitted on the model's keys for FIT_TOKENS tokens of real documents' prose
(basis_prose.txt: text blocks of the docling project's MIT-licensed test PDFs, a database manual,
an aviation handbook, papers), never on the document being served: the same basis for every
prompt keeps answers independent of where the KV came from, and the documents a user serves are
never read to fit it. Nor is it fitted on the generator of the RULER haystacks it is measured on
(benchmarks/evals/ruler_tasks.py), so those runs measure text the basis has not seen. Cached
under $H3_HOME/key_basis/<model fingerprint>-<BASIS_TEXT>-r<r>.pt (a torn or foreign file is
refitted).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch
from transformers import DynamicCache

from h3_runtime.home import under_home
from h3_runtime.models import own_forward

log = logging.getLogger("h3_runtime")

BASIS_TEXT = Path(__file__).with_name("basis_prose.txt")
RANK = 16  # sketch dimensions per KV head at most: int8 + a float16 scale = 18 B per token-head
FIT_TOKENS = 4096


def sketch_rank(head_dim: int) -> int:
    """Sketch dimensions for a head dimension: a quarter of it (Loki's finding: that much holds
    most of the keys' energy), at most RANK. A quarter keeps the sketches (r int8 + a 2-byte
    scale per token-head) at 1/32 + 1/(4D) of the float32 KV or less: 3.5% for the 135M model's
    64-dim heads, 1.8% for 128-dim ones, 4.7% for the 16-dim heads of the tests' tiny model
    (14% when r was the whole head dimension)."""
    return max(1, min(RANK, head_dim // 4))


def key_basis(model, tokenizer, fingerprint: str) -> torch.Tensor:
    """(n_layers, H_kv, D, r) float32 on the host, r = sketch_rank(D): the model's key basis,
    loaded from H3_HOME or fitted (about 6 s for the 135M model on 2 cores) and cached there."""
    cfg = model.config
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    # the text's name in the file name: a basis fitted on other text is refitted, not reused
    path = under_home("key_basis", f"{fingerprint}-{BASIS_TEXT.stem}-r{sketch_rank(head_dim)}.pt")
    if path.exists():
        try:
            basis = torch.load(path, weights_only=True)
            if isinstance(basis, torch.Tensor) and basis.ndim == 4:
                return basis
        except Exception:  # a torn write: refit  # noqa: BLE001
            pass
        log.warning("key basis %s unreadable: refitting it", path)
        path.unlink(missing_ok=True)
    t0 = time.perf_counter()
    basis = fit_key_basis(model, _fit_ids(model, tokenizer)).clone()  # not an inference tensor
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{time.time_ns()}")
    torch.save(basis, tmp)
    tmp.replace(path)
    log.info("key basis fitted in %.1f s: %s", time.perf_counter() - t0, path)
    return basis


@torch.inference_mode()
def fit_key_basis(model, ids: torch.Tensor) -> torch.Tensor:
    """The top-r eigenvectors of each (layer, KV head)'s key second moment over `ids` (1, n):
    the rank-r subspace that keeps most of the keys' energy, so of q.k. (n_layers, H_kv, D, r)."""
    previous = model.config._attn_implementation
    model.set_attn_implementation("sdpa")
    # the class's own forward: `model.forward` may be an engine's wrap_forward already, which
    # would build a tiered cache, which needs this basis (a user who wraps the model before
    # anything else runs fits it here: without this, an endless recursion)
    forward = own_forward(model)
    try:
        cache = DynamicCache(config=model.config)
        forward(input_ids=ids.to(next(model.parameters()).device), cache=cache, use_cache=True,
                logits_to_keep=1)
    finally:
        model.set_attn_implementation(previous)
    out = []
    for layer in cache.layers:
        k = layer.keys[0].float().cpu()  # (H_kv, n, D), RoPE applied: what attention reads
        second_moment = k.transpose(1, 2) @ k / k.shape[1]  # (H_kv, D, D)
        _, vectors = torch.linalg.eigh(second_moment.double())  # ascending eigenvalues
        r = sketch_rank(k.shape[2])
        out.append(vectors[:, :, -r:].flip(-1).float())  # (H_kv, D, r), largest first
    return torch.stack(out).contiguous()


def _fit_ids(model, tokenizer) -> torch.Tensor:
    """FIT_TOKENS of prose for a model with a tokenizer; deterministic ids otherwise (the tiny
    random models of the tests, which have no words to read)."""
    n = min(FIT_TOKENS, int(getattr(model.config, "max_position_embeddings", FIT_TOKENS) or FIT_TOKENS))
    if tokenizer is not None:
        ids: list[int] = []
        for paragraph in _basis_paragraphs():
            ids.extend(tokenizer(" " + paragraph, add_special_tokens=False).input_ids)
            if len(ids) >= n:
                break
        # the file holds ~7K tokens of the 135M model's tokenizer; a coarser tokenizer repeats it
        while ids and len(ids) < n:
            ids.extend(ids[: n - len(ids)])
        return torch.tensor([ids[:n]])
    vocab = int(model.config.vocab_size)
    return (torch.arange(n) * 7919 % max(vocab - 10, 1) + 5)[None]


def _basis_paragraphs() -> list[str]:
    """The paragraphs of basis_prose.txt (its '#' lines name the source)."""
    lines = BASIS_TEXT.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]
