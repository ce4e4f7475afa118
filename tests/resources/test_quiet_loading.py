"""Loading the models prints nothing of its own (issue 37): no onnxruntime quantizer warning on
the root logger (nor the root handler its first `logging.warning` would install, which prints
every library's warnings afterwards), no transformers "Loading weights" bars on `h3 ask`."""

from __future__ import annotations

import os
import subprocess
import sys


def _run(code: str, home, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "H3_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=600)


def test_minilm_onnx_export_and_session_are_quiet(tmp_path):
    # a fresh H3_HOME: the int8 graph is exported and quantised, then its session built
    out = _run("import logging\n"
               "from h3.resources.models.minilm_onnx import OnnxMiniLM, onnx_path\n"
               "OnnxMiniLM('int8')\n"
               "print(onnx_path('int8').exists(), len(logging.getLogger().handlers))",
               tmp_path / "h3")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "0"], out.stdout  # exported; no root handler installed
    assert "WARNING" not in out.stderr and "quantization" not in out.stderr, out.stderr
    assert "onnxruntime" not in out.stderr, out.stderr
    # the graph's fusions were saved beside it; the next process's session runs the saved
    # graph (no optimisation pass) and gives the same vectors
    saved = list((tmp_path / "h3" / "models").glob("minilm-int8-*.optimized.onnx"))
    assert len(saved) == 1 and not list((tmp_path / "h3" / "models").glob("*.part"))
    encode = ("import numpy as np\n"
              "from h3.resources.models.minilm_onnx import OnnxMiniLM\n"
              "ids = np.array([[101, 7592, 2088, 102]]); mask = np.ones_like(ids)\n"
              "print(*OnnxMiniLM('int8').embed(ids, mask)[0][:8].round(6))")
    saved[0].unlink()  # the first of the two optimises the graph (and saves it again)
    first, again = _run(encode, tmp_path / "h3"), _run(encode, tmp_path / "h3")
    assert saved[0].exists()
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    assert first.stdout == again.stdout and len(first.stdout.split()) == 8


def test_loading_the_runtime_model_shows_no_progress_bars(tmp_path, default_model_dir):
    out = _run("import sys\n"
               "from transformers.utils import logging as hf_logging\n"
               "from h3_runtime.models import load_model\n"
               "model, tok = load_model(sys.argv[1])\n"
               "print(type(model).__name__, hf_logging.is_progress_bar_enabled())",
               tmp_path / "h3", str(default_model_dir))
    assert out.returncode == 0, out.stderr
    # loaded; the bars are back on afterwards for whoever else uses transformers in the process
    assert out.stdout.split() == ["LlamaForCausalLM", "True"], out.stdout
    assert "Loading weights" not in out.stderr and "it/s" not in out.stderr, out.stderr
