"""Fixtures: tiny randomly initialised Llama models (mechanics only; quality uses the real model)."""

from __future__ import annotations

import os

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def tiny_llama(layers: int = 2, kv_heads: int = 2, heads: int = 4, hidden: int = 64,
               seed: int = 0) -> LlamaForCausalLM:
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=128, hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=heads,
                      num_key_value_heads=kv_heads, max_position_embeddings=70_000)
    return LlamaForCausalLM(cfg).eval()


def kv_bytes_per_token(model) -> int:
    """Float32 K and V bytes of one token over every layer (any config with GQA fields)."""
    c = model.config
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    return 2 * c.num_hidden_layers * c.num_key_value_heads * head_dim * 4


@pytest.fixture
def tiny_model():
    return tiny_llama()


@pytest.fixture
def cold_dir(tmp_path):
    return tmp_path / "kv"


@pytest.fixture(autouse=True)
def private_home(tmp_path, monkeypatch):
    """Every test gets its own H3_HOME unless it asks for the shared model cache."""
    if "H3_HOME" not in os.environ:
        monkeypatch.setenv("H3_HOME", str(tmp_path / "h3home"))
