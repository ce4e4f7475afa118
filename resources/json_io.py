"""The default IO manager of the code location: outputs as JSON under $H3_HOME/outputs, so
nothing Dagster stores for H³ is ever a pickle (Dagster's built-in default pickles every output,
and unpickling is code execution for whoever can write those files).

Corpus-level assets (token_pca, chunk_pooling, doc_index...) return small summaries; the real
artifacts are safetensors/FAISS files they write themselves. Per-document payloads go through
`staging_io` instead (resources/staging_io.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dagster import ConfigurableIOManager, InputContext, OutputContext
from pydantic import Field

from h3_runtime.home import under_home


class JsonOutputIOManager(ConfigurableIOManager):
    """One JSON file per (asset or op output, partition); a value JSON cannot hold is an error
    that names the output, never a silent pickle."""

    base_dir: str | None = Field(default=None, description="null: $H3_HOME/outputs")

    def _path(self, context: OutputContext | InputContext) -> Path:
        root = Path(self.base_dir) if self.base_dir else under_home("outputs")
        if context.has_asset_key:
            parts = list(context.asset_key.path)
        else:
            parts = [context.step_key or "op", context.name or "result"]
        name = context.asset_partition_key if context.has_asset_partitions else "__all__"
        if "/" in name or name.startswith("."):  # partition keys are doc ids; refuse anything else
            raise ValueError(f"refusing a partition key that is not a file name: {name!r}")
        return root.joinpath(*parts, f"{name}.json")

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if obj is None:
            return
        path = self._path(context)
        try:
            text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        except TypeError as exc:
            raise TypeError(f"output {path.parent.name}/{path.stem} is not JSON: {exc}") from exc
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # atomic: a reader never sees half a file

    def load_input(self, context: InputContext) -> Any:
        path = self._path(context.upstream_output or context)
        return json.loads(path.read_text()) if path.exists() else None
