"""JSON IO manager for per-document intermediate results (no pickle anywhere).

An ingestion asset returns `dict[doc_id, payload]` (a run may cover several partitions); each
payload is written to `$H3_HOME/staging/<asset>/<doc_id>.json` and read back the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from dagster import InputContext, OutputContext
from pydantic import Field

from h3.ontology.ids import doc_id_of_partition
from h3.resources.json_io import JsonUPathIOManager
from h3_runtime.home import under_home


class JsonStagingIOManager(JsonUPathIOManager):
    """Writes/reads one JSON file per (asset, partition); payloads must be JSON-serialisable.

    Paths and JSON come from the UPathIOManager base; handle_output/load_input stay ours because
    every ingestion asset runs with BackfillPolicy.single_run() (one output holds many partitions,
    which UPathIOManager.handle_output refuses) and a missing upstream partition must read as a
    `failed` payload that flows on, not an error that stops the run."""

    home_folder: ClassVar[str] = "staging"
    base_dir: str | None = Field(default=None, description="null: $H3_HOME/staging")

    def _doc_path(self, context: InputContext | OutputContext, doc_id: str):
        folder = self._get_path_without_extension(context)
        return self._with_extension(self.get_path_for_partition(context, folder, doc_id))

    def handle_output(self, context: OutputContext, obj: dict[str, Any]) -> None:
        if not isinstance(obj, dict):
            raise TypeError(f"{context.asset_key.to_user_string()}: expected dict[doc_id, payload],"
                            f" got {type(obj).__name__}")
        for doc_id, payload in obj.items():
            path = self._doc_path(context, doc_id)
            self.make_directory(path.parent)
            self.dump_to_path(context, payload, path)
        context.add_output_metadata({"staged_documents": len(obj)})

    def load_input(self, context: InputContext) -> dict[str, Any]:
        keys = context.asset_partition_keys if context.has_asset_partitions else []
        loaded: dict[str, Any] = {}
        for doc_id in map(doc_id_of_partition, keys):  # readable keys name their doc_id
            path = self._doc_path(context, doc_id)
            if not self.path_exists(path):
                loaded[doc_id] = {"status": "failed", "reason":
                                  f"{context.asset_key.to_user_string()} was not materialised"}
                continue
            loaded[doc_id] = self.load_from_path(context, path)
        return loaded


def drop_staged(doc_id: str, base_dir: str | None = None,
                assets: Sequence[str] | None = None) -> int:
    """Deletes a document's staged files under every asset folder (or only under `assets`'
    folders, the rebuilt PDF kept); returns how many."""
    root = Path(base_dir) if base_dir else under_home("staging")
    removed = 0
    # .pdf: the rebuild of a file MuPDF could not read (assets/_second_reader.py)
    patterns = ([f"**/{doc_id}.json", f"rebuilt/{doc_id}.pdf"] if assets is None
                else [f"{asset}/{doc_id}.json" for asset in assets])
    for pattern in patterns:
        for path in root.glob(pattern) if root.exists() else []:
            path.unlink(missing_ok=True)
            removed += 1
    return removed
