"""Model artifacts under H3_HOME as safetensors (never pickle), with lineage in the header; and
where the compression assets keep theirs, here so that recall reads them without importing the
assets that write them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from h3_runtime.home import under_home

if TYPE_CHECKING:
    from h3.resources.semantic.pooling import ChunkPooler


def pca_path() -> Path:
    """The `token_pca` asset's model."""
    return under_home("semantic", "token_pca.safetensors")


def pooler_path() -> Path:
    """The `chunk_pooling` asset's MLP weights."""
    return under_home("semantic", "chunk_pooler.safetensors")


def index_path() -> Path:
    """The `doc_index` asset's FAISS index."""
    return under_home("semantic", "doc_index.faiss")


def save_tensors(path: Path, tensors: dict[str, np.ndarray], lineage: dict) -> None:
    """Writes atomically; `lineage` (JSON-serialisable) lands in the safetensors metadata."""
    from safetensors.numpy import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(tmp),
              metadata={"lineage": json.dumps(lineage, sort_keys=True, default=str)})
    tmp.replace(path)


def load_tensors(path: Path) -> tuple[dict[str, np.ndarray], dict]:
    """(tensors, lineage) of a file written by `save_tensors`."""
    from safetensors import safe_open
    from safetensors.numpy import load_file

    if not path.exists():
        raise FileNotFoundError(f"{path}: no such artifact (materialise its asset first)")
    with safe_open(str(path), framework="np") as f:
        meta = json.loads((f.metadata() or {}).get("lineage", "{}"))
    return load_file(str(path)), meta


def load_pooler(path: Path | None = None) -> tuple[ChunkPooler, dict]:
    """(the pooling MLP in eval mode, its lineage) from `path` (default: `pooler_path()`)."""
    import torch

    from h3.resources.semantic.pooling import ChunkPooler

    tensors, lineage = load_tensors(path or pooler_path())
    model = ChunkPooler(in_dim=int(lineage["in_dim"]))
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()})
    return model.eval(), lineage
