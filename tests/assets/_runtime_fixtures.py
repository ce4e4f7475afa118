"""A fast stand-in for the default model in pipeline tests: a tiny random Llama with the default
model's real tokenizer (same vocabulary), saved as a HF folder and selected through h3_config."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
import yaml
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM


def tiny_model_dir(tokenizer_dir: Path, out: Path) -> Path:
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=16, max_position_embeddings=8192, rope_theta=1e5,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=True)
    LlamaForCausalLM(cfg).eval().save_pretrained(out)
    tok.save_pretrained(out)
    return out


def write_config(path: Path, model_dir: Path, hbm_size_gb: float = 1.0) -> Path:
    """An h3_config.yaml selecting `model_dir` (a budget that holds everything: exact mode)."""
    path.write_text(yaml.safe_dump({"model": {"path": str(model_dir)},
                                    "runtime": {"hbm_size_gb": hbm_size_gb}}))
    return path


def copy_store(ingested_home: Path, home: Path) -> None:
    """A writable copy of a session's ingested LanceDB store."""
    shutil.copytree(ingested_home / "lancedb", home / "lancedb")
