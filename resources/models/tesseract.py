"""Running tesseract on one page image (plain Python: no Dagster, for the OCR stage and the
issuer profile's cover OCR alike).

tesseract's OpenMP threads, left to their default, spin against each other on a small machine:
one scanned page took 1.77 s with them and 0.59 s on one thread (2 cores, tesseract 5.3). The
thread limit is set for tesseract's process only: pytesseract hands its subprocess this
process's environment, and an OMP_THREAD_LIMIT set there would also bind torch's OpenMP threads.
"""

from __future__ import annotations

import functools
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


@functools.cache
def installed_languages() -> frozenset[str]:
    """The languages tesseract has data for (`tesseract --list-langs`; empty when it cannot
    say). Asked once per process."""
    try:
        done = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True,
                              check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    lines = (done.stdout or done.stderr).splitlines()
    return frozenset(ln.strip() for ln in lines[1:] if ln.strip())  # line 1: the data folder


def missing_languages(spec: str) -> list[str]:
    """The languages of a tesseract spec ("chi_sim+eng") that tesseract has no data for (none
    when it cannot list its languages: tesseract itself then says what is wrong)."""
    have = installed_languages()
    return [lang for lang in spec.split("+") if have and lang not in have]


def language_error(spec: str, missing: list[str]) -> str:
    """What a user reads when `cold_storage.ocr_languages` names languages without data."""
    packages = " ".join(f"tesseract-ocr-{m.replace('_', '-')}" for m in missing)
    return (f"cold_storage.ocr_languages {spec!r}: tesseract has no data for "
            f"{', '.join(missing)} (installed: {', '.join(sorted(installed_languages()))}); "
            f"install it (apt install {packages}) or change the key")
