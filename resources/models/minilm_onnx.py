"""MiniLM sentence vectors through onnxruntime: the CPU path of `SbertEmbedder.encode`.

Why: profiling the filings ingest (py-spy, issue 12) put ~40% of the embeddings stage's time
outside the matrix products, in torch's eager LayerNorm, GELU, residual adds, head reshapes
and mean pooling, op by op on (B, T, 384|1536) tensors. onnxruntime fuses those
(LayerNormalization, Gelu, MatMul+Add) and runs the int8 products with its own kernels.

The graph is exported once from the same torch module (resources/models/minilm.py: pooling and
normalisation included) and cached under $H3_HOME/models, keyed by the checkpoint's hash and
the precision. "int8" quantises the same layers `embedder.quantize_int8` does (attention
Q/K/V/output and FFN input, per-channel int8 weights, dynamic int8 activations) and keeps the
FFN output projections in fp32 (their post-GELU inputs have outliers).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from h3.resources.models.cpu import cpu_threads
from h3_runtime.home import under_home

# onnxruntime sessions (and the graph file each runs) per (precision, threads): a model cache,
# process-wide like the torch weights in embedder.py (each run would otherwise build its session
# again, ~1 s)
_SESSIONS: dict[tuple[str, int], tuple[object, Path]] = {}
_LOCK = threading.Lock()


def _checkpoint_hash() -> str:
    from h3.resources.models.wordpiece import model_dir

    digest = hashlib.sha256()
    with open(model_dir() / "model.safetensors", "rb") as f:
        digest.update(f.read(1 << 20))  # the header and first tensors: enough to tell versions
    digest.update(str((model_dir() / "model.safetensors").stat().st_size).encode())
    return digest.hexdigest()[:12]


def onnx_path(precision: str) -> Path:
    return under_home("models", f"minilm-{precision}-{_checkpoint_hash()}.onnx")


def _quantized_nodes(model) -> list[str]:
    """The MatMul nodes of the Linear layers `embedder.quantize_int8` quantises."""
    picked = []
    for node in model.graph.node:
        if node.op_type != "MatMul":
            continue
        name = node.name
        if any(k in name for k in ("/query/", "/key/", "/value/", "attention/output/dense",
                                   "intermediate/dense")):
            picked.append(name)
    return picked


def export(precision: str, target: Path) -> Path:
    """Writes the graph for `precision` to `target` (atomically: a rename at the end)."""
    import torch
    from torch import nn

    from h3.resources.models.minilm import load_minilm

    class Pooled(nn.Module):
        def __init__(self, minilm) -> None:
            super().__init__()
            self.minilm = minilm

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            return self.minilm.embed.__wrapped__(self.minilm, ids, mask)  # no inference_mode

    target.parent.mkdir(parents=True, exist_ok=True)
    fp32 = target.with_name(target.stem + f".{os.getpid()}.fp32.onnx")
    example = (torch.ones(2, 8, dtype=torch.int64), torch.ones(2, 8, dtype=torch.int64))
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled(load_minilm()), example, str(fp32), input_names=["ids", "mask"],
                          output_names=["vectors"], opset_version=17, dynamo=False,
                          dynamic_axes={"ids": {0: "batch", 1: "tokens"},
                                        "mask": {0: "batch", 1: "tokens"},
                                        "vectors": {0: "batch"}})
    staged = target.with_name(target.stem + f".{os.getpid()}.onnx")
    if precision == "int8":
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic

        nodes = _quantized_nodes(onnx.load(str(fp32)))
        with warnings.catch_warnings(), _root_logging_muted():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(fp32), str(staged), nodes_to_quantize=nodes, per_channel=True,
                             weight_type=QuantType.QInt8)
        fp32.unlink()
    else:
        fp32.rename(staged)
    staged.rename(target)
    return target


@contextlib.contextmanager
def _root_logging_muted() -> Iterator[None]:
    """Meanwhile, records on the root logger go nowhere. onnxruntime's quantizer logs on it
    ("WARNING:root:Please consider to run pre-processing before quantization"), and its first
    `logging.warning` would also install a root handler on stderr (logging.basicConfig) that
    prints every library's warnings afterwards: a NullHandler keeps basicConfig from doing it."""
    root = logging.getLogger()
    null = logging.NullHandler()

    def drop(_record) -> bool:
        return False

    root.addHandler(null)
    root.addFilter(drop)
    try:
        yield
    finally:
        root.removeFilter(drop)
        root.removeHandler(null)


def _session(precision: str, threads: int):
    import onnxruntime as ort

    ort.set_default_logger_severity(3)  # errors only: no warning glued to the CLI's output
    path = onnx_path(precision)
    if not path.exists():
        export(precision, path)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # The graph's fusions are worked out once and saved beside it: a session of the saved graph
    # skips them (0.25 -> 0.12 s of every `h3 recall`'s start on 2 cores, same vectors). Only
    # "extended" fusions are saved, never hardware-specific layouts; the file names the
    # onnxruntime version that wrote it.
    optimized = path.with_name(f"{path.stem}.ort-{ort.__version__}.optimized.onnx")
    staged = None
    if optimized.exists():
        path, level = optimized, ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    else:
        staged = optimized.with_name(f"{optimized.name}.{os.getpid()}.part")
        options.optimized_model_filepath = str(staged)
        level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.graph_optimization_level = level
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # idle threads sleep instead of spinning (resources/models/layout.py says why)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(path), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    if staged is not None and staged.exists():
        staged.replace(optimized)  # whole or not at all, whoever of two processes comes last
    return session


class OnnxMiniLM:
    """(B, T) token ids and mask -> (B, 384) unit-length float32 vectors."""

    def __init__(self, precision: str, threads: int | None = None) -> None:
        threads = threads or cpu_threads()
        key = (precision, threads)
        with _LOCK:
            if key not in _SESSIONS:
                _SESSIONS[key] = (_session(precision, threads), onnx_path(precision))
            # path: the graph this session runs. Sessions are shared by the process, so it lies
            # under the H3_HOME of whoever built it first, not necessarily today's H3_HOME.
            self.session, self.path = _SESSIONS[key]

    def embed(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run(None, {"ids": ids, "mask": mask})[0]
