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
        """A layoutparser Layout: one TextBlock per paragraph, with its text and confidence."""
        import csv
        import io

        import pandas as pd
        import pytesseract
        from layoutparser.ocr import TesseractFeatureType

        # One tesseract pass (TesseractAgent.detect runs two: string + data); gather_data only
        # needs the word table, parsed as the agent parses it (text kept as str).
        tsv = pytesseract.image_to_data(image_rgb, lang=self.agent.lang, **self.agent.configs)
        data = pd.read_csv(io.StringIO(tsv), quoting=csv.QUOTE_NONE, encoding="utf-8", sep="\t",
                           converters={"text": str})
        if not (data["conf"] > 0).any():  # nothing readable (gather_data fails on no words)
            import layoutparser as lp

            return lp.Layout([])
        return self.agent.gather_data({"data": data}, TesseractFeatureType.PARA)


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
