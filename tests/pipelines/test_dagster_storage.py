"""The instance of an H3_HOME stores runs with Dagster's own SQLite storage in
$H3_HOME/dagster, chosen by dagster.yaml without needing DAGSTER_HOME (a plain `dagster dev` in
the repository root), and reads them back like Dagster's own."""

from __future__ import annotations

import os
import shutil

from dagster import AssetKey, DagsterInstance, DynamicPartitionsDefinition, asset, materialize
from dagster._core.instance.ref import InstanceRef

from h3.pipelines.dagster_storage import H3HomeComputeLogManager, H3HomeSqliteStorage
from h3.pipelines.instance import REPO_ROOT, get_instance

PARTS = DynamicPartitionsDefinition(name="storage_test_docs")


@asset(partitions_def=PARTS)
def numbers(context) -> int:
    context.log.info(f"partition {context.partition_key}")
    return len(context.partition_key)


def test_runs_events_and_partitions_round_trip(h3_home):
    instance = get_instance()
    assert isinstance(instance.get_ref().storage, H3HomeSqliteStorage)
    assert isinstance(instance.compute_log_manager, H3HomeComputeLogManager)
    instance.add_dynamic_partitions(PARTS.name, ["a", "bb", "ccc"])
    assert instance.has_dynamic_partition(PARTS.name, "bb")
    run_ids = [materialize([numbers], instance=instance, partition_key=k).run_id
               for k in ("a", "bb", "ccc")]
    assert len(instance.get_run_records()) == 3
    assert any("partition bb" in (e.user_message or "") for e in instance.all_logs(run_ids[1]))
    assert instance.get_materialized_partitions(AssetKey("numbers")) == {"a", "bb", "ccc"}
    # Dagster's own files, where Dagster puts them for DAGSTER_HOME=$H3_HOME/dagster
    assert (h3_home / "dagster" / "history" / "runs.db").exists()
    assert (h3_home / "dagster" / "storage").is_dir()  # compute logs
    instance.dispose()


def test_without_dagster_home_the_repo_config_finds_the_same_instance(h3_home, tmp_path,
                                                                      monkeypatch):
    """What `dagster dev` does in the repository root when DAGSTER_HOME is unset: a temporary
    home configured by the root's dagster.yaml. Its runs are the CLI's."""
    cli = get_instance()
    cli.add_dynamic_partitions(PARTS.name, ["x"])
    run_id = materialize([numbers], instance=cli, partition_key="x").run_id
    cli.dispose()
    monkeypatch.delenv("DAGSTER_HOME")
    temp_home = tmp_path / "tmp_dagster_home"
    temp_home.mkdir()
    shutil.copy(REPO_ROOT / "dagster.yaml", temp_home / "dagster.yaml")
    dev = DagsterInstance.from_ref(InstanceRef.from_dir(str(temp_home)))
    assert [r.run_id for r in dev.get_runs()] == [run_id]
    assert dev.has_dynamic_partition(PARTS.name, "x")
    assert os.environ["H3_HOME"] == str(h3_home.resolve())  # inherited by Dagster's processes
    dev.dispose()
