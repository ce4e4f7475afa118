"""H³ runtime: tiered-KV long-context inference for unmodified HuggingFace models.

Never imports Dagster; the Dagster resource wrapping it lives in `resources/`.
"""
