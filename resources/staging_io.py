"""JSON IO manager for per-document intermediate results (no pickle anywhere).

An ingestion asset returns `dict[doc_id, payload]` (a run may cover several partitions); each
payload is written to `$H3_HOME/staging/<asset>/<doc_id>.json` and read back the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dagster import ConfigurableIOManager, InputContext, OutputContext
from pydantic import Field

from h3_runtime.home import under_home


class JsonStagingIOManager(ConfigurableIOManager):
    """Writes/reads one JSON file per (asset, partition); payloads must be JSON-serialisable."""

    base_dir: str | None = Field(default=None, description="null: $H3_HOME/staging")

    def _dir(self, asset_path: list[str]) -> Path:
        root = Path(self.base_dir) if self.base_dir else under_home("staging")
        return root.joinpath(*asset_path)

    def handle_output(self, context: OutputContext, obj: dict[str, Any]) -> None:
        if not isinstance(obj, dict):
            raise TypeError(f"{context.asset_key.to_user_string()}: expected dict[doc_id, payload],"
                            f" got {type(obj).__name__}")
        folder = self._dir(context.asset_key.path)
        folder.mkdir(parents=True, exist_ok=True)
        for doc_id, payload in obj.items():
            target = folder / f"{doc_id}.json"
            tmp = target.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
            os.replace(tmp, target)  # atomic: a reader never sees half a file
        context.add_output_metadata({"staged_documents": len(obj)})

    def load_input(self, context: InputContext) -> dict[str, Any]:
        folder = self._dir(context.asset_key.path)
        keys = context.asset_partition_keys if context.has_asset_partitions else []
        loaded: dict[str, Any] = {}
        for doc_id in keys:
            path = folder / f"{doc_id}.json"
            if not path.exists():
                loaded[doc_id] = {"status": "failed", "reason":
                                  f"{context.asset_key.to_user_string()} was not materialised"}
                continue
            loaded[doc_id] = json.loads(path.read_text())
        return loaded


def drop_staged(doc_id: str, base_dir: str | None = None) -> int:
    """Deletes a document's staged files under every asset folder; returns how many."""
    root = Path(base_dir) if base_dir else under_home("staging")
    removed = 0
    # .pdf: the rebuild of a file MuPDF could not read (assets/_second_reader.py)
    for pattern in (f"**/{doc_id}.json", f"rebuilt/{doc_id}.pdf"):
        for path in root.glob(pattern) if root.exists() else []:
            path.unlink(missing_ok=True)
            removed += 1
    return removed
