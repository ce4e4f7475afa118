"""OCR of pages without a text layer: tesseract through layoutparser's TesseractAgent."""

from __future__ import annotations

import threading

import numpy as np
from dagster import ConfigurableResource
from pydantic import Field

from resources.settings import load_config

_AGENTS: dict[str, object] = {}
_LOCK = threading.Lock()


class TesseractOcr:
    """Page image -> layoutparser Layout of paragraph TextBlocks (pixel coordinates)."""

    def __init__(self, languages: str = "eng") -> None:
        with _LOCK:
            if languages not in _AGENTS:
                import layoutparser as lp

                _AGENTS[languages] = lp.TesseractAgent(languages=languages)
            self.agent = _AGENTS[languages]
        self.languages = languages

    def read(self, image_rgb: np.ndarray):
        """A layoutparser Layout: one TextBlock per paragraph, with its text, mean word
        confidence and the union of its words' boxes (pixels)."""
        import csv
        import io

        import layoutparser as lp
        import pandas as pd
        import pytesseract

        # One tesseract pass (TesseractAgent.detect runs two: string + data). The paragraphs are
        # gathered here, not by TesseractAgent.gather_data: that takes a paragraph's width and
        # height as its widest word's and tallest word's, so its boxes cover a corner of the
        # paragraph only (a 3-line paragraph came out as one word wide and one line high).
        tsv = pytesseract.image_to_data(image_rgb, lang=self.agent.lang, **self.agent.configs)
        data = pd.read_csv(io.StringIO(tsv), quoting=csv.QUOTE_NONE, encoding="utf-8", sep="\t",
                           converters={"text": str})
        # a page whose words are all blank parses `text` as float NaNs, converter or not
        data["text"] = data["text"].fillna("").astype(str).str.strip()
        words = data[(data["level"] == 5) & (data["conf"] >= 0) & (data["text"] != "")]
        blocks = []
        for i, (_, para) in enumerate(words.groupby(["page_num", "block_num", "par_num"],
                                                    sort=False)):
            box = lp.Rectangle(int(para["left"].min()), int(para["top"].min()),
                               int((para["left"] + para["width"]).max()),
                               int((para["top"] + para["height"]).max()))
            blocks.append(lp.TextBlock(box, text=" ".join(para["text"]), id=i,
                                       score=float(para["conf"].mean())))
        return lp.Layout(blocks)


class OcrResource(ConfigurableResource):
    """Tesseract OCR. `enabled`/`languages` null: take cold_storage.ocr_enabled/ocr_languages
    from h3_config.yaml."""

    enabled: bool | None = Field(default=None, description="null: cold_storage.ocr_enabled")
    languages: str | None = Field(default=None, description="null: cold_storage.ocr_languages")
    dpi: int = Field(default=200, description="render resolution for OCR")

    def is_enabled(self) -> bool:
        return load_config().cold_storage.ocr_enabled if self.enabled is None else self.enabled

    def get_ocr(self) -> TesseractOcr:
        return TesseractOcr(self.languages or load_config().cold_storage.ocr_languages)
