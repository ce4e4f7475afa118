"""Figure boxes from embedded images and vector drawings (assets/_figure_boxes.py), on a PDF
drawn here: what a figure is and what is only decoration or a framed text."""

from __future__ import annotations

import pymupdf

from h3.assets._figure_boxes import figure_boxes, join_tiles
from h3.ontology.boxes import iou


def _png(width: int, height: int) -> bytes:
    pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, width, height), False)
    pix.set_rect(pix.irect, (200, 30, 30))
    return pix.tobytes("png")


def _page() -> tuple[pymupdf.Document, list[list[float]]]:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_image(pymupdf.Rect(400, 40, 440, 80), stream=_png(40, 40))  # small logo image
    page.insert_image(pymupdf.Rect(100, 200, 300, 300), stream=_png(200, 100))  # picture
    page.insert_image(pymupdf.Rect(10, 10, 14, 14), stream=_png(4, 4))  # speck
    shape = page.new_shape()  # a vector logo: a filled circle, no text
    shape.draw_circle((80, 60), 25)
    shape.finish(color=(0, 0, 1), fill=(0, 0, 1))
    shape.draw_rect(pymupdf.Rect(72, 500, 540, 560))  # a shaded box framing text
    shape.finish(fill=(0.9, 0.9, 0.9))
    shape.draw_line((72, 700), (540, 700))  # a rule under a paragraph
    shape.finish(color=(0, 0, 0))
    shape.commit()
    page.insert_text((80, 530), "A note framed by a shaded box, which is no figure at all.")
    text = [list(b[:4]) for b in page.get_text("blocks")]
    return doc, text


def test_images_and_vector_logos_are_figures_decoration_is_not():
    doc, text = _page()
    page = doc[0]
    found = figure_boxes(page, [], text, [])
    boxes = [b for b, _ in found]
    for expected in ([400, 40, 440, 80], [100, 200, 300, 300], [55, 35, 105, 85]):
        assert max(iou(b, expected) for b in boxes) >= 0.8, (expected, found)
    assert all(iou(b, [72, 500, 540, 560]) < 0.5 for b in boxes), found  # framed text
    assert all(b[3] - b[1] >= 12 and b[2] - b[0] >= 12 for b in boxes), found  # speck, rule
    assert len(found) == 3, found


def test_model_box_absorbs_the_image_under_it_and_tables_own_their_rulings():
    doc, text = _page()
    page = doc[0]
    found = figure_boxes(page, [[98, 198, 305, 310]], text, [[50, 20, 120, 100]])
    picture = [(b, o) for b, o in found if iou(b, [100, 200, 300, 300]) >= 0.8]
    assert len(picture) == 1 and picture[0][1] == "layout-model"
    assert all(iou(b, [55, 35, 105, 85]) < 0.5 for b, _ in found)  # inside a table: dropped


def test_image_tiles_are_joined():
    tiles = [[0, 0, 100, 10], [0, 10, 100, 20], [0, 21, 100, 30], [300, 0, 310, 10]]
    assert join_tiles(tiles) == [[0, 0, 100, 30], [300, 0, 310, 10]]


def _logo_page() -> pymupdf.Page:
    """A page with artwork that bleeds off the top edge, a two-piece logo in the footer, a
    plain header bar and a rule: only the artwork and the logo are figures."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    shape = page.new_shape()
    shape.draw_circle((90, 20), 40)  # crosses y = 0: cluster_drawings alone would drop it
    shape.finish(fill=(0.2, 0.5, 0.8))
    shape.draw_circle((450, 760), 10)  # the logo's mark ...
    shape.finish(fill=(0.1, 0.1, 0.6))
    shape.draw_oval(pymupdf.Rect(465, 752, 540, 768))  # ... and its wordmark, 5 points away
    shape.finish(fill=(0.1, 0.1, 0.6))
    shape.draw_rect(pymupdf.Rect(200, 0, 560, 30))  # a bare header bar
    shape.finish(fill=(0.9, 0.9, 0.9))
    shape.draw_line((72, 700), (540, 700))  # a rule elsewhere on the page
    shape.finish(color=(0, 0, 0))
    shape.commit()
    return page


def test_bleeding_artwork_and_two_piece_logos_are_whole_figures_bars_are_not():
    page = _logo_page()
    boxes = [b for b, _ in figure_boxes(page, [], [], [])]
    assert max(iou(b, [50, 0, 130, 60]) for b in boxes) >= 0.9, boxes  # clipped to the page
    assert max(iou(b, [440, 750, 540, 770]) for b in boxes) >= 0.9, boxes  # mark + wordmark
    assert all(iou(b, [200, 0, 560, 30]) < 0.5 for b in boxes), boxes  # header bar
    assert len(boxes) == 2, boxes


def test_a_drawing_that_bridges_two_model_figures_is_not_a_third():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    shape = page.new_shape()
    for x in (80, 330):  # two pictures side by side, joined by a frame line
        shape.draw_circle((x + 100, 300), 90)
        shape.finish(fill=(0.3, 0.3, 0.3))
    shape.draw_line((80, 395), (530, 395))
    shape.finish(color=(0, 0, 0))
    shape.commit()
    models = [[80, 200, 280, 400], [330, 200, 530, 400]]
    found = figure_boxes(page, models, [], [])
    assert [b for b, _ in found] == models, found


def test_a_logo_on_a_shaded_backdrop_is_found_and_the_backdrop_is_not_a_figure():
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    shape = page.new_shape()
    shape.draw_rect(pymupdf.Rect(60, 100, 550, 700))  # the panel behind the page's text
    shape.finish(fill=(0.95, 0.95, 0.9))
    for i in range(6):  # a striped logo: short strokes 2 points apart
        shape.draw_line((150, 272 + 3 * i), (178, 272 + 3 * i))
        shape.draw_bezier((150, 272 + 3 * i), (160, 273 + 3 * i), (170, 273 + 3 * i),
                          (178, 272 + 3 * i))
    shape.finish(color=(0.1, 0.2, 0.7), width=1)
    shape.commit()
    for y in range(320, 680, 14):
        page.insert_text((80, y), "Text printed on the panel, line after line of it. " * 2,
                         fontsize=9)
    text = [list(b[:4]) for b in page.get_text("blocks")]
    boxes = [b for b, _ in figure_boxes(page, [], text, [])]
    assert len(boxes) == 1 and iou(boxes[0], [150, 272, 178, 288]) >= 0.6, boxes


def test_a_model_figure_that_is_only_text_or_a_ruled_table_is_left_out():
    """SEC filings: the layout model calls paragraphs and ruled, shaded statements "figure".
    A model box with no image and no curve or slanted line in it, mostly covered by text, is
    not a figure; a chart (a polyline and its labels) and a picture under a model box are."""
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    para = "We acquire, license and produce content, including original programming. " * 6
    page.insert_textbox(pymupdf.Rect(72, 72, 540, 180), para, fontsize=10)  # a paragraph
    shape = page.new_shape()  # a statement: shaded rows and rules under its numbers
    for i in range(6):
        y = 220 + 18 * i
        if i % 2:
            shape.draw_rect(pymupdf.Rect(72, y, 540, y + 18))
            shape.finish(fill=(0.9, 0.9, 0.9), color=None)
        shape.draw_line((400, y + 17), (540, y + 17))
        shape.finish(color=(0, 0, 0))
    shape.draw_polyline([(100, 560), (160, 480), (220, 520), (280, 430)])  # a line chart
    shape.finish(color=(0, 0, 1))
    shape.commit()
    for i in range(6):  # its rows: a label and three years' figures
        page.insert_text((76, 232 + 18 * i), f"Revenues in segment {i}, net of returns",
                         fontsize=12)
        page.insert_text((330, 232 + 18 * i), "1,234,567    2,345,678    3,456,789", fontsize=12)
    page.insert_text((100, 580), "2013   2014   2015")
    page.insert_image(pymupdf.Rect(350, 420, 500, 560), stream=_png(150, 140))  # a picture
    text = [list(b[:4]) for b in page.get_text("blocks")]
    model = [[70, 70, 545, 185], [70, 218, 545, 330], [90, 420, 300, 590], [345, 415, 505, 565]]
    kept = [b for b, o in figure_boxes(page, model, text, []) if o == "layout-model"]
    assert kept == [model[2], model[3]], kept  # the chart and the picture; not text, not table
