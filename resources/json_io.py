"""The default IO manager of the code location: outputs as JSON under $H3_HOME/outputs, so
nothing Dagster stores for H³ is ever a pickle (Dagster's built-in default pickles every output,
and unpickling is code execution for whoever can write those files).

Corpus-level assets (token_pca, chunk_pooling, doc_index...) return small summaries; the real
artifacts are safetensors/FAISS files they write themselves. Per-document payloads go through
`staging_io` instead (resources/staging_io.py).

Both are Dagster `UPathIOManager`s (path layout, partitions, fsspec filesystems); what stays
ours is the JSON format, the atomic write and the file layout below, which predates the move.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar

from dagster import ConfigurableIOManager, InputContext, OutputContext, UPathIOManager
from pydantic import Field

from h3_runtime.home import under_home

if TYPE_CHECKING:
    from upath import UPath


def refuse_path_like_key(key: str) -> str:
    """Partition keys are doc ids; refuse anything that is not a plain file name (Dagster's
    default only escapes a leading `/`)."""
    if "/" in key or key.startswith("."):
        raise ValueError(f"refusing a partition key that is not a file name: {key!r}")
    return key


def write_json_atomic(path: UPath, obj: Any, what: str) -> None:
    """Compact UTF-8 JSON, written beside and then renamed: a reader never sees half a file."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except TypeError as exc:
        raise TypeError(f"output {what} is not JSON: {exc}") from exc
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


class JsonUPathIOManager(ConfigurableIOManager, UPathIOManager):
    """Shared base: a configurable (`base_dir`) UPathIOManager writing `.json` files."""

    extension: ClassVar[str] = ".json"
    home_folder: ClassVar[str] = "outputs"

    base_dir: str | None = Field(default=None, description="null: a folder under $H3_HOME")

    @property
    def _base_path(self) -> UPath:  # read by UPathIOManager; resolved per call, as H3_HOME may move
        from upath import UPath

        return UPath(self.base_dir) if self.base_dir else UPath(under_home(self.home_folder))

    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        return base_path / refuse_path_like_key(partition)

    def dump_to_path(self, context: OutputContext, obj: Any, path: UPath) -> None:
        write_json_atomic(path, obj, f"{path.parent.name}/{path.stem}")

    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        return json.loads(path.read_text())


class JsonOutputIOManager(JsonUPathIOManager):
    """One JSON file per (asset or op output, partition): `<asset path>/<partition>.json`, or
    `<asset path>/__all__.json` unpartitioned, `<step>/<output>/__all__.json` for op outputs. A
    value JSON cannot hold is an error that names the output, never a silent pickle."""

    home_folder: ClassVar[str] = "outputs"
    base_dir: str | None = Field(default=None, description="null: $H3_HOME/outputs")

    def get_asset_relative_path(self, context: InputContext | OutputContext) -> UPath:
        from upath import UPath

        parts = list(context.asset_key.path)
        return UPath(*parts) if context.has_asset_partitions else UPath(*parts, "__all__")

    def get_op_output_relative_path(self, context: InputContext | OutputContext) -> UPath:
        from upath import UPath

        if isinstance(context, InputContext):
            context = context.upstream_output or context
        return UPath(context.step_key or "op", context.name or "result", "__all__")

    def handle_output(self, context: OutputContext, obj: Any) -> None:
        if obj is None:  # an asset that returns nothing stores nothing
            return
        super().handle_output(context, obj)

    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        # a missing file reads as None, as before the move (not Dagster's FileNotFoundError)
        return json.loads(path.read_text()) if self.path_exists(path) else None
