"""`h3 bench --scenario disk [--home H3_HOME]`: the bytes each part of an H3_HOME holds per stored
page (LanceDB tables one by one, token vectors, figures, staging per stage, KV, Dagster, models),
against the PDFs' own bytes (resources/disk_usage.py; reads file sizes only).

Budget (issue 38): H3_HOME without the documents' KV <= 3x the PDFs' bytes. The models
(converted once, ~600 MB whatever the corpus) are reported apart as a fixed cost; the ratio
is over the parts that grow with the corpus. `without_staging` is the same home with its
staging folders left out: what ingestion leaves since it clears a stored document's staging
(`cold_storage.keep_staging: false`, the default). The LanceDB tables are measured as they lie:
an ingestion run compacts the tables it wrote and keeps their latest version only
(resources/store/compaction.py); a home written before that holds every version until
`store_indexes` runs.
"""

from __future__ import annotations

from pathlib import Path

from h3.resources.disk_usage import disk_report

BUDGET = 3.0  # document bytes over PDF bytes


def run(out_dir: Path, quick: bool, home: str | None = None) -> dict:
    from h3_runtime.home import h3_home

    source = Path(home).expanduser().resolve() if home else h3_home(create=False)
    if not source.is_dir():
        raise FileNotFoundError(f"{source}: no H3_HOME folder to measure")
    report = disk_report(source)
    staging = sum(p["bytes"] for p in report["parts"] if p["part"].startswith("staging/"))
    document = report["totals"]["document"]
    pdf = report["pdf_bytes"]
    report["pdf_bytes_per_page"] = round(pdf / report["pages"]) if report["pages"] else None
    report["without_staging"] = {
        "document_bytes_per_page": round((document - staging) / report["pages"])
        if report["pages"] else None,
        "document_bytes_over_pdf_bytes": round((document - staging) / pdf, 2) if pdf else None}
    report["budget_document_over_pdf"] = BUDGET
    report["per_1000_filings"] = per_thousand(report)
    report["plot"] = str(plot(report, Path(out_dir) / "disk.png"))
    return report


def per_thousand(report: dict) -> dict | None:
    """What 1,000 filings of this store's average size need on disk (GB), staging cleared."""
    docs = report.get("documents_ok")
    if not docs or not report["pages"]:
        return None
    pages = report["pages"] / docs * 1000
    per_page = report["without_staging"]["document_bytes_per_page"]
    return {"pages": round(pages), "document_gb": round(pages * per_page / 1e9, 2),
            "pdf_gb": round(report["pdf_bytes"] / docs * 1000 / 1e9, 2),
            "fixed_gb": round(report["totals"]["fixed"] / 1e9, 2)}


def plot(report: dict, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [p for p in report["parts"] if p["kind"] != "fixed" and p["bytes"]][::-1]
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(rows) + 1.5))
    colours = ["tab:orange" if r["part"].startswith("staging/") else "tab:blue" for r in rows]
    ax.barh([r["part"] for r in rows], [r["bytes_per_page"] / 1000 for r in rows], color=colours)
    if report.get("pdf_bytes_per_page"):
        ax.axvline(report["pdf_bytes_per_page"] / 1000, color="grey", lw=0.8, label="PDF KB / page")
        ax.legend(fontsize=7)
    ax.set_xlabel("KB per stored page (orange: staging, cleared once a document is stored)")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
