"""Odd real-world PDFs, one stage at a time: unreadable text layers, rotated pages, text off the
page, junk after %%EOF, a damaged file, a dangling symlink, OCR paragraph boxes."""

from __future__ import annotations

import os

import pymupdf
import pytest

from h3.assets.documents import inspect_pdf, unreadable
from h3.assets.layout import page_layout
from h3.assets.ocr import ocr_page
from h3.assets.tables import page_tables
from h3.resources.models.ocr import TesseractOcr

# A ToUnicode map sending every glyph to the private-use area: the text renders correctly but
# extracts as garbage, as in PDFs whose fonts carry a broken or custom Unicode map.
PUA_CMAP = b"""/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CMapName /Garbled def /CMapType 2 def
1 begincodespacerange <0000> <FFFF> endcodespacerange
1 beginbfrange <0000> <0FFF> <E000> endbfrange
endcmap CMapName currentdict /CMap defineresource pop end end"""
TEXT = "Harbour cranes were repaired in March by the northern terminal crew. "


def garbled_pdf(path, table: bool = False):
    """One page whose visible text (and, with `table`, a ruled table's cells) extracts as
    private-use characters."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="F9", fontbuffer=pymupdf.Font("helv").buffer)
    page.insert_textbox(pymupdf.Rect(50, 80, 545, 400), TEXT * 3, fontsize=14, fontname="F9")
    if table:
        for r in range(6):
            for c, x in enumerate((60, 220, 380)):
                page.insert_text((x + 4, 464 + r * 20), f"cell {r}{c}", fontsize=10,
                                 fontname="F9")
            page.draw_line((60, 450 + r * 20), (540, 450 + r * 20))
        page.draw_line((60, 570), (540, 570))
        for x in (60, 220, 380, 540):
            page.draw_line((x, 450), (x, 570))
    for xref in range(1, doc.xref_length()):
        kind, value = doc.xref_get_key(xref, "ToUnicode")
        if kind == "xref":
            doc.update_stream(int(value.split()[0]), PUA_CMAP)
    doc.save(path)
    return path


def scan_pdf(path, rotation: int = 0):
    """A scanned page (an image of text, no text layer) stored so that it *displays* upright
    with /Rotate `rotation`, as scanners write landscape-fed pages."""
    src = pymupdf.open()
    src.new_page().insert_textbox(pymupdf.Rect(36, 36, 559, 806), "SCANNED INVOICE\n\n" + TEXT * 2,
                                  fontsize=14)
    pix = src[0].get_pixmap(matrix=pymupdf.Matrix(2, 2).prerotate(-rotation))
    doc = pymupdf.open()
    w, h = (842, 595) if rotation in (90, 270) else (595, 842)
    page = doc.new_page(width=w, height=h)
    page.insert_image(page.rect, pixmap=pix)
    page.set_rotation(rotation)
    doc.save(path)
    return path


@pytest.mark.parametrize(("text", "garbage"), [
    ("\ufffd" * 40, True),
    (" ".join(f"(cid:{i})" for i in range(30)), True),
    ("".join(chr(0xE000 + i) for i in range(40)), True),
    ("\x03\x04\x05\x06 abc" * 10, True),
    ("\u00b7" * 60, True),  # symbol soup: no letter or digit at all
    ("Introduction " + "." * 60 + " 1\n" * 20, False),  # a table of contents
    ("x = \u2211 \u03b1_i \u03b2_i + \u222b f(x) dx", False),
    ("東京港の貨物量は前年より増加した", False),
    ("مرحبا بالعالم هذا مستند اختبار", False),
])
def test_unreadable_tells_glyph_garbage_from_text(text, garbage):
    assert unreadable(text) is garbage


def test_unreadable_text_layer_is_treated_as_scanned_and_ocr_reads_it(tmp_path):
    path = garbled_pdf(tmp_path / "garbled.pdf")
    info = inspect_pdf(path)
    assert info.text_pages == (False,) and info.garbled_pages == (1,)
    assert any(str(path) in w and "unreadable text layer" in w for w in info.warnings)
    with pymupdf.open(path) as doc:
        assert page_layout(doc[0], None, 72).blocks  # garbage is there...
        assert page_layout(doc[0], None, 72, keep_text=False).blocks == ()
        paragraphs = ocr_page(doc[0], TesseractOcr("eng"), 150)  # ...OCR reads the glyphs
    assert "northern terminal" in " ".join(p.text for p in paragraphs)


def test_ocr_paragraph_box_covers_all_its_words(tmp_path):
    with pymupdf.open(scan_pdf(tmp_path / "scan.pdf")) as doc:
        paragraphs = ocr_page(doc[0], TesseractOcr("eng"), 150)
    body = next(p for p in paragraphs if "northern" in p.text)
    x0, y0, x1, y1 = body.bbox
    # the text box spans 36..559 pt and wraps onto two lines of 14 pt type
    assert x0 < 60 and x1 > 450 and y1 - y0 > 25, body.bbox


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_ocr_boxes_on_rotated_scans_are_in_unrotated_page_space(tmp_path, rotation):
    ocr = TesseractOcr("eng")
    with pymupdf.open(scan_pdf(tmp_path / "upright.pdf")) as doc:
        upright = ocr_page(doc[0], ocr, 150)
    with pymupdf.open(scan_pdf(tmp_path / f"rot{rotation}.pdf", rotation)) as doc:
        page = doc[0]
        rotated = ocr_page(page, ocr, 150)
        unrotated_page = page.rect * page.derotation_matrix
        assert [p.text for p in rotated] == [p.text for p in upright]
        for a, b in zip(rotated, upright, strict=True):
            assert pymupdf.Rect(a.bbox) in unrotated_page + (-1, -1, 1, 1)
            shown = pymupdf.Rect(a.bbox) * page.rotation_matrix  # where a viewer shows it
            assert all(abs(u - v) < 3 for u, v in zip(shown, b.bbox, strict=True)), (
                shown, b.bbox)


def ruled_table_page(doc, rotation):
    page = doc.new_page()
    for r in range(6):
        for c, x in enumerate((40, 160, 300)):
            page.insert_text((x + 2, 114 + r * 20), f"r{r}c{c}", fontsize=9)
        page.draw_line((40, 100 + r * 20), (440, 100 + r * 20))
    page.draw_line((40, 220), (440, 220))
    for x in (40, 160, 300, 440):
        page.draw_line((x, 100), (x, 220))
    page.set_rotation(rotation)
    return page


@pytest.mark.parametrize("rotation", [0, 90, 180, 270])
def test_rotated_page_keeps_text_tables_and_model_boxes_in_one_space(rotation):
    doc = pymupdf.open()
    page = ruled_table_page(doc, rotation)
    layout = page_layout(page, None, 72)
    assert (layout.width, layout.height, layout.rotation) == (595, 842, rotation)
    (table,) = page_tables(page, [], model_ran=False)
    assert table.bbox == (40, 100, 440, 220)  # where the text and rulings are
    cells = {c for row in table.rows for c in row}
    assert {f"r{r}c{c}" for r in range(6) for c in range(3)} == cells
    # a model box in pixels of the rendered (rotated) page maps back onto the table
    from h3.assets._page_space import from_pixels, render_clip

    shown = render_clip(page, [40, 100, 440, 220])
    pixels = [v * 2 for v in shown]  # a 144-dpi render
    assert [round(v) for v in from_pixels(page, pixels, 144)] == [40, 100, 440, 220]


def test_text_running_off_the_page_is_cut_to_the_page():
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=200)
    page.insert_text((20, 50), "blob:" + "Qk3x9" * 200, fontsize=8)
    page.insert_text((400, 50), "entirely off the page", fontsize=8)
    blocks = page_layout(page, None, 72).blocks
    assert len(blocks) == 1 and blocks[0].text.startswith("blob:")
    assert blocks[0].x_2 <= 300


def test_junk_around_the_pdf_is_accepted_with_a_warning_and_repair_is_reported(tmp_path):
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), TEXT)
    data = doc.tobytes()
    padded = tmp_path / "padded.pdf"
    padded.write_bytes(data + b"\n" + b"\0" * 4000)  # scanners pad with NULs: no warning
    assert inspect_pdf(padded).pages == 1
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(data + b"\n<html>mail footer</html>\n" * 200)
    info = inspect_pdf(junk)
    assert info.pages == 1
    assert any("junk after %%EOF" in w and str(junk) in w for w in info.warnings)
    prefixed = tmp_path / "prefixed.pdf"  # a mail header saved before the PDF
    prefixed.write_bytes(b"Content-Type: application/pdf\r\n\r\n" + data)
    info = inspect_pdf(prefixed)
    assert info.pages == 1 and any("before the %PDF header" in w for w in info.warnings)
    broken = bytearray(data)
    start = broken.index(b"xref")
    broken[start:start + 4] = b"xxxx"  # no cross-reference table: MuPDF rebuilds it
    damaged = tmp_path / "damaged.pdf"
    damaged.write_bytes(bytes(broken))
    info = inspect_pdf(damaged)
    assert info.repaired and any("repaired" in w for w in info.warnings)


def test_dangling_pdf_symlink_is_reported_not_skipped(tmp_path, h3_home):
    from h3.pipelines.registry import find_pdfs, register_many
    from h3.resources.store import open_store

    (tmp_path / "docs").mkdir()
    link = tmp_path / "docs" / "gone.pdf"
    os.symlink(tmp_path / "nowhere.pdf", link)
    (tmp_path / "docs" / "notes.txt").write_text("not a pdf")
    files, missing = find_pdfs([str(tmp_path / "docs")])
    assert files == [link] and missing == []
    (reg,) = register_many(open_store(), files)
    assert reg.state == "failed" and str(link) in reg.reason and "cannot read" in reg.reason


def test_file_name_that_is_not_utf8_fails_alone_with_a_printable_reason(tmp_path, h3_home):
    from h3.pipelines.registry import find_pdfs, register_many
    from h3.resources.store import open_store

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), TEXT)
    latin1 = tmp_path / os.fsdecode(b"caf\xe9.pdf")  # a Latin-1 name from an old archive
    latin1.write_bytes(doc.tobytes())
    doc.save(tmp_path / "fine.pdf")
    files, _ = find_pdfs([str(tmp_path)])
    bad, good = register_many(open_store(), sorted(files, key=lambda p: p.name != latin1.name))
    assert bad.state == "failed" and bad.doc_id is None
    assert "caf\\xe9.pdf: file name is not valid UTF-8" in bad.reason
    assert (bad.source + bad.reason).encode("utf-8")  # printable on stdout and in JSON
    assert good.state == "new"


def test_huge_page_is_rendered_below_the_pixel_cap_and_boxes_stay_in_points(tmp_path,
                                                                              monkeypatch):
    from h3.assets._page_space import MAX_RENDER_PIXELS, capped_dpi

    with pymupdf.open(scan_pdf(tmp_path / "scan.pdf")) as src:
        pix = src[0].get_pixmap(dpi=100)
    doc = pymupdf.open()
    page = doc.new_page(width=3000, height=3000 * 842 / 595)  # an A4 scan blown up 5x
    page.insert_image(page.rect, pixmap=pix)
    assert capped_dpi(pymupdf.open().new_page(), 200) == 200  # A4 untouched
    dpi = capped_dpi(page, 200)
    assert 100 < dpi < 200
    rendered = page.get_pixmap(dpi=dpi)
    assert rendered.width * rendered.height <= MAX_RENDER_PIXELS
    renders, real = [], pymupdf.Page.get_pixmap

    def spy(self, *args, **kwargs):  # records what OCR renders, then renders it
        renders.append(real(self, *args, **kwargs))
        return renders[-1]

    monkeypatch.setattr(pymupdf.Page, "get_pixmap", spy)
    paragraphs = ocr_page(page, TesseractOcr("eng"), 200)
    assert [r.width * r.height <= MAX_RENDER_PIXELS for r in renders] == [True]
    title = next(p for p in paragraphs if "SCANNED" in p.text)
    x0, y0, x1, y1 = title.bbox  # the title sits at 36..165 x 40..51 pt of A4, times 5
    assert abs(x0 - 5 * 36) < 25 and abs(y0 - 5 * 40) < 25 and x1 < 5 * 200


def test_text_without_sentence_ends_and_huge_words_are_cut_to_the_budget():
    import base64

    from h3.assets._chunking import _split_long

    def count(text: str) -> int:  # additive like word pieces: ~3 characters a piece
        return sum(-(-len(w) // 3) for w in text.split())

    words = " ".join(f"item{i}" for i in range(3000))  # OCR/list text: no sentence end
    pieces = _split_long(words, count, 256)
    assert max(count(p) for p in pieces) <= 256 and " ".join(pieces) == words
    blob = base64.b64encode(bytes(range(256)) * 60).decode()  # 20,480 characters, no space
    pieces = _split_long(f"Attachment follows: {blob}", count, 256)
    assert max(count(p) for p in pieces) <= 256
    assert "".join(pieces[1:]) == blob and pieces[0] == "Attachment follows:"


def test_index_build_keeps_library_chatter_off_stdout():
    import subprocess
    import sys
    from pathlib import Path

    code = """import os, pymupdf
from h3.pipelines.cli.index_build import stdout_to_stderr
with stdout_to_stderr():
    pymupdf.message("find_tables: exception occurred: demo")  # PyMuPDF's default: stdout
    os.write(1, b"C-level chatter\\n")
    print("a stray print")
print('{"json": true}')
"""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                          text=True, timeout=60, check=True)
    assert done.stdout == '{"json": true}\n'
    for noise in ("find_tables", "C-level chatter", "a stray print"):
        assert noise in done.stderr


def test_document_warnings_say_what_was_not_read():
    from dataclasses import replace

    from h3.assets.chunks import document_warnings
    from h3.ontology.records import ChunkRecord, DocumentRecord, OcrRecord

    doc = DocumentRecord(source="a.pdf", pages=3, title="a", metadata={}, content_hash="",
                         bytes=1, text_pages=(True, False, False), page_sizes=((595, 842),) * 3,
                         repaired=True, warnings=("a.pdf: damaged PDF repaired by MuPDF (x)",))
    ocr_off = OcrRecord(source="a.pdf", skipped_pages=(2, 3))
    ocr_failed = OcrRecord(source="a.pdf", errors=("page 2 of a.pdf: OCR failed",))
    chunk = [ChunkRecord(doc_id="d", chunk_id="d:c0", page=1, bbox=(0, 0, 1, 1), text="x",
                         section="", kind="text", token_count=1, region_ids=("d:p1:r0",))]
    assert document_warnings(doc, ocr_off, chunk) == [
        "a.pdf: damaged PDF repaired by MuPDF (x)",
        "a.pdf: 2 pages without a text layer not read (cold_storage.ocr_enabled is false)"]
    assert document_warnings(doc, ocr_failed, [])[1:] == [
        "page 2 of a.pdf: OCR failed",
        "a.pdf: no text found (not even by OCR): the document is stored but nothing in it can "
        "be recalled by text"]
    clean = replace(doc, source="b.pdf", warnings=(), repaired=False)
    assert document_warnings(clean, OcrRecord(source="b.pdf"), chunk) == []
