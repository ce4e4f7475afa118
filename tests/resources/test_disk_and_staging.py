"""Disk bytes per part of H3_HOME (resources/disk_usage.py) and the staging an ingestion run
clears once a document is stored (`cold_storage.keep_staging`)."""

from __future__ import annotations

from h3.resources.store import LanceDocumentStore


def _home(tmp_path):
    home = tmp_path / "h3"
    store = LanceDocumentStore(home / "lancedb")
    store.upsert_document({"doc_id": "a", "source": "a.pdf", "status": "ok", "pages": 10,
                           "bytes": 50_000})
    store.upsert_document({"doc_id": "b", "source": "b.pdf", "status": "failed", "pages": 99,
                           "bytes": 9})
    for asset in ("layout", "chunks"):
        (home / "staging" / asset).mkdir(parents=True)
        for doc in ("a", "b"):
            (home / "staging" / asset / f"{doc}.json").write_text("x" * 1000)
    (home / "staging" / "document_kv").mkdir()
    (home / "staging" / "document_kv" / "a.json").write_text("{}")
    (home / "semantic" / "tokens").mkdir(parents=True)
    (home / "semantic" / "tokens" / "a.npz").write_bytes(b"t" * 300)
    (home / "semantic" / "doc_index.faiss").write_bytes(b"i" * 70)
    (home / "models").mkdir()
    (home / "models" / "m.bin").write_bytes(b"m" * 5000)
    return home


def test_disk_report_splits_the_home_by_part_and_counts_ok_pages(tmp_path):
    from h3.resources.disk_usage import disk_report

    home = _home(tmp_path)
    report = disk_report(home)
    parts = {p["part"]: p for p in report["parts"]}
    assert report["pages"] == 10 and report["pdf_bytes"] == 50_000  # the failed row left out
    assert parts["staging/layout"]["bytes"] == 2000 and parts["staging/layout"]["bytes_per_page"] == 200
    assert parts["semantic/tokens"]["bytes"] == 300 and parts["semantic (other)"]["bytes"] == 70
    assert parts["semantic/tokens"]["kind"] == "document" and parts["semantic (other)"]["kind"] == "fixed"
    assert parts["models"]["kind"] == "fixed" and report["totals"]["fixed"] == 5070
    assert "lancedb/documents" in parts and parts["lancedb/documents"]["kind"] == "document"
    assert report["document_bytes_over_pdf_bytes"] == round(report["totals"]["document"] / 50_000, 2)


def test_stored_documents_lose_their_ingestion_staging_unless_kept(tmp_path, monkeypatch):
    from h3.assets.ingested import clear_staging

    home = _home(tmp_path)
    monkeypatch.setenv("H3_HOME", str(home))
    kept = tmp_path / "keep.yaml"
    kept.write_text("cold_storage:\n  keep_staging: true\n")
    monkeypatch.setenv("H3_CONFIG", str(kept))
    assert clear_staging(["a"]) == 0 and (home / "staging" / "layout" / "a.json").exists()
    monkeypatch.delenv("H3_CONFIG")  # the shipped h3_config.yaml: keep_staging false
    assert clear_staging(["a"]) == 2
    assert not (home / "staging" / "layout" / "a.json").exists()
    assert (home / "staging" / "layout" / "b.json").exists()  # not stored: a re-run reads it
    assert (home / "staging" / "document_kv" / "a.json").exists()  # another job's output


def test_an_ingestion_leaves_no_staging_of_the_documents_it_stored(ingested_sample):
    stored = {d["doc_id"] for d in ingested_sample["report"]["documents"] if d["status"] == "ok"}
    left = [p.relative_to(ingested_sample["home"]).as_posix()
            for p in (ingested_sample["home"] / "staging").rglob("*.json") if p.stem in stored]
    assert stored and not left, left  # every per-document stage's JSON went, `sections` included


def test_a_grey_figure_crop_is_stored_with_one_channel_and_reads_back_the_same(tmp_path):
    """assets/figures.py `save_crop`: lossless; what CLIP reads (RGB) is the same pixels."""
    import numpy as np
    import pymupdf
    from PIL import Image

    from h3.assets.figures import save_crop

    doc = pymupdf.open()
    page = doc.new_page(width=200, height=100)
    page.draw_rect(pymupdf.Rect(10, 10, 90, 90), color=(0, 0, 0), fill=(0.6, 0.6, 0.6))
    page.insert_text((20, 50), "Revenue by quarter", fontsize=9)
    page.draw_rect(pymupdf.Rect(110, 10, 190, 90), fill=(0.9, 0.2, 0.1))  # red: not grey
    for name, clip in (("grey", pymupdf.Rect(0, 0, 100, 100)),
                       ("colour", pymupdf.Rect(100, 0, 200, 100))):
        pix = page.get_pixmap(clip=clip, dpi=110)
        rgb = np.frombuffer(pix.samples, np.uint8).reshape(pix.height, pix.width, 3)
        save_crop(pix, tmp_path / f"{name}.png")
        pix.save(str(tmp_path / f"{name}-rgb.png"))
        with Image.open(tmp_path / f"{name}.png") as im:
            assert im.mode == ("L" if name == "grey" else "RGB")
            assert np.array_equal(np.asarray(im.convert("RGB")), rgb)
    assert (tmp_path / "grey.png").stat().st_size < (tmp_path / "grey-rgb.png").stat().st_size
