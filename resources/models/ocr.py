"""OCR of pages without a text layer: tesseract through layoutparser's TesseractAgent."""

from __future__ import annotations

import re
import threading

import numpy as np
from dagster import ConfigurableResource
from pydantic import Field

from h3.resources.models.tesseract import language_error, missing_languages, tesseract_output
from h3.resources.settings import load_config

# tesseract agents per language spec stay process-wide: cheap, but every run of a CLI command
# or a dask worker would otherwise build them again for each page batch
_AGENTS: dict[str, object] = {}
_LOCK = threading.Lock()


AUTO = "auto"
# "auto": a page is read in English first; when its words' mean confidence is below this, it is
# read again with Chinese + English and the more confident reading is kept. English pages cost
# one pass as before (a clean English page scores ~95, a Chinese page read as English ~27);
# tesseract's script detection (OSD) would cost a pass of its own on every page (~4 s here).
AUTO_RETRY_CONFIDENCE = 60.0
AUTO_FALLBACK = "chi_sim+eng"
# tesseract separates Chinese characters with spaces ("关于 做 好"): joined back
_CJK = r"\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}])\s+(?=[{_CJK}0-9])|(?<=[{_CJK}0-9])\s+(?=[{_CJK}])")


def _agent(languages: str):
    with _LOCK:
        if languages not in _AGENTS:
            import layoutparser as lp

            _AGENTS[languages] = lp.TesseractAgent(languages=languages)
        return _AGENTS[languages]


class TesseractOcr:
    """Page image -> layoutparser Layout of paragraph TextBlocks (pixel coordinates).
    `languages`: tesseract's ("eng", "chi_sim+eng") or "auto" (AUTO_RETRY_CONFIDENCE)."""

    def __init__(self, languages: str = "eng") -> None:
        """Raises ValueError naming the languages tesseract has no data for."""
        self.languages = languages
        missing = missing_languages("eng" if languages == AUTO else languages)
        if missing:
            raise ValueError(language_error(languages, missing))
        self.agent = _agent("eng" if languages == AUTO else languages)
        self.last_languages = self.agent.lang  # what the last page was read with
        # "auto" without Chinese data: a page stays read in English (a retry would fail and
        # lose the English reading with it); `note` says so
        self.fallback: str | None = None
        self.note: str | None = None
        if languages == AUTO:
            missing = missing_languages(AUTO_FALLBACK)
            if missing:
                self.note = f"no Chinese retry: {language_error(AUTO, missing)}"
            else:
                self.fallback = AUTO_FALLBACK

    def read(self, image_rgb: np.ndarray):
        """A layoutparser Layout: one TextBlock per paragraph, with its text, mean word
        confidence and the union of its words' boxes (pixels)."""
        layout, confidence = self._read(image_rgb, self.agent)
        self.last_languages = self.agent.lang
        if self.fallback and layout and confidence < AUTO_RETRY_CONFIDENCE:
            other, other_conf = self._read(image_rgb, _agent(self.fallback))
            if other_conf > confidence:
                layout, self.last_languages = other, self.fallback
        return layout

    def _read(self, image_rgb: np.ndarray, agent) -> tuple[object, float]:
        """(Layout, mean word confidence) of one tesseract pass."""
        import csv
        import io

        import layoutparser as lp
        import pandas as pd

        # One tesseract pass (TesseractAgent.detect runs two: string + data). The paragraphs are
        # gathered here, not by TesseractAgent.gather_data: that takes a paragraph's width and
        # height as its widest word's and tallest word's, so its boxes cover a corner of the
        # paragraph only (a 3-line paragraph came out as one word wide and one line high).
        tsv = tesseract_output(image_rgb, agent.lang, "tsv", agent.configs.get("config", ""))
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
            text = _CJK_GAP.sub("", " ".join(para["text"]))
            blocks.append(lp.TextBlock(box, text=text, id=i, score=float(para["conf"].mean())))
        return lp.Layout(blocks), float(words["conf"].mean()) if len(words) else 0.0


class OcrResource(ConfigurableResource):
    """Tesseract OCR. `enabled`/`languages` null: take cold_storage.ocr_enabled/ocr_languages
    from h3_config.yaml."""

    enabled: bool | None = Field(default=None, description="null: cold_storage.ocr_enabled")
    languages: str | None = Field(default=None, description="null: cold_storage.ocr_languages")
    dpi: int = Field(default=200, description="render resolution for OCR")

    def is_enabled(self) -> bool:
        return load_config().cold_storage.ocr_enabled if self.enabled is None else self.enabled

    def language_setting(self) -> str:
        """`languages`, or cold_storage.ocr_languages: tesseract's ("eng") or "auto"."""
        return self.languages or load_config().cold_storage.ocr_languages

