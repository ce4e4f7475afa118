"""H³ runtime: tiered-KV long-context inference for unmodified HuggingFace models.

Never imports Dagster; the Dagster resource wrapping it lives in `resources/`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from h3_runtime.engine import H3Engine

__all__ = ["H3Engine"]


def __getattr__(name: str):
    # lazy: `import h3_runtime` stays cheap (config/home users need no torch)
    if name == "H3Engine":
        from h3_runtime.engine import H3Engine

        return H3Engine
    raise AttributeError(name)
