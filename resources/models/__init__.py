"""Model resources (SBERT embedder, layout model, tesseract OCR); each model loads once per process."""
