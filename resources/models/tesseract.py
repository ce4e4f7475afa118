"""Running tesseract on one page image (plain Python: no Dagster, for the OCR stage and the
issuer profile's cover OCR alike).

tesseract's OpenMP threads, left to their default, spin against each other on a small machine:
one scanned page took 1.77 s with them and 0.59 s on one thread (2 cores, tesseract 5.3). The
thread limit is set for tesseract's process only: pytesseract hands its subprocess this
process's environment, and an OMP_THREAD_LIMIT set there would also bind torch's OpenMP threads.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path

import numpy as np

TESSERACT_ENV = {"OMP_THREAD_LIMIT": "1"}


def tesseract_output(image: np.ndarray, languages: str, output: str = "txt",
                     config: str = "") -> str:
    """What tesseract prints for one page image (H, W, 3) uint8 RGB: "txt" its text (as
    pytesseract.image_to_string), "tsv" its words with boxes and confidences (as
    image_to_data). Raises RuntimeError with tesseract's message when it fails."""
    from PIL import Image

    with tempfile.TemporaryDirectory(prefix="h3-ocr-") as folder:
        page = Path(folder) / "page.png"
        Image.fromarray(np.ascontiguousarray(image)).save(page)
        args = ["tesseract", str(page), "stdout", "-l", languages, *shlex.split(config)]
        done = subprocess.run(args + ([output] if output != "txt" else []), capture_output=True,
                              text=True, env={**os.environ, **TESSERACT_ENV}, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"tesseract failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return done.stdout
