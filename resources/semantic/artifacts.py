"""Model artifacts under H3_HOME as safetensors (never pickle), with lineage in the header."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


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
