"""`h3 bench --scenario ingest_floor --path DIR`: the pipeline against the naive floor on any
folder of PDFs (issue 38: ingestion as fast as a naive pass on filings nobody tuned for).

In one run, on the same PDFs: the naive floor (benchmarks/documents/floor.py, a fresh process:
PyMuPDF text, the layout model on every page, MiniLM through sentence-transformers) and then
`h3 index-build`'s own path into a fresh H3_HOME (every stage, the knowledge graph and the
corpus compression included). Reported: pages/s of both and their ratio (`share_of_floor`), the
pipeline's wall and CPU seconds per stage (from its Dagster run's step stats and each staged
payload), what is left to Dagster, and per-core utilisation with the share of the run in which
both cores were busy. Nothing is read from the folder but its PDFs; nothing is written there.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from benchmarks.documents.filings import ingest_corpus
from benchmarks.documents.floor import with_floor


def run(out_dir: Path, quick: bool, path: str | None = None) -> dict:
    if not path:
        raise FileNotFoundError("ingest_floor needs --path DIR (a folder of PDFs)")
    folder = Path(path).expanduser().resolve()
    pdfs = sorted(folder.glob("*.pdf"))
    if not pdfs:
        raise FileNotFoundError(f"{folder}: no PDF files to ingest")
    if quick:  # a handful of files: the mechanics, not a figure
        folder = _subset(pdfs[:3], Path(tempfile.mkdtemp(prefix="h3-floor-pdfs-")))
    home = Path(tempfile.mkdtemp(prefix="h3-floor-home-"))
    try:
        report = with_floor(ingest_corpus, home, [folder])
    finally:
        shutil.rmtree(home, ignore_errors=True)
        if quick:
            shutil.rmtree(folder, ignore_errors=True)
    stage_cpu = report.get("stage_cpu_s", {})
    report["stages"] = [{"stage": name, "wall_s": wall, "cpu_s": stage_cpu.get(name)}
                        for name, wall in report.get("stage_wall_s", {}).items()]
    # (`wall_s` is the pipeline's: `h3 bench` writes the whole scenario's over it)
    report["pipeline_wall_s"] = report.pop("wall_s")
    return {"folder": str(Path(path).expanduser()), "files": len(pdfs) if not quick else 3,
            **report}


def _subset(pdfs: list[Path], dest: Path) -> Path:
    """A folder of links to `pdfs` (the source folder is never written to)."""
    for pdf in pdfs:
        (dest / pdf.name).symlink_to(pdf)
    return dest
