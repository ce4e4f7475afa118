"""The instance of an H3_HOME stores runs with the cached-engine SQLite event log
(pipelines/dagster_storage.py, chosen by dagster.yaml), and reads them back like Dagster's own."""

from __future__ import annotations

from dagster import AssetKey, DagsterInstance, DynamicPartitionsDefinition, asset, materialize

from pipelines.dagster_storage import CachedEngineSqliteEventLogStorage, H3SqliteStorage
from pipelines.instance import get_instance

PARTS = DynamicPartitionsDefinition(name="storage_test_docs")


@asset(partitions_def=PARTS)
def numbers(context) -> int:
    context.log.info(f"partition {context.partition_key}")
    return len(context.partition_key)


def test_runs_events_and_partitions_round_trip(h3_home):
    instance = get_instance()
    assert isinstance(instance.get_ref().storage, H3SqliteStorage)
    events = instance.event_log_storage
    assert isinstance(events, CachedEngineSqliteEventLogStorage)
    instance.add_dynamic_partitions(PARTS.name, ["a", "bb", "ccc"])
    assert instance.has_dynamic_partition(PARTS.name, "bb")
    assert not instance.has_dynamic_partition(PARTS.name, "zz")
    assert events.has_table("dynamic_partitions") and not events.has_table("no_such_table")
    run_ids = []
    for key in ("a", "bb", "ccc"):
        result = materialize([numbers], instance=instance, partition_key=key)
        assert result.success
        run_ids.append(result.run_id)
    # Dozens of statements went through two kinds of shard (index + one per run): one engine each.
    assert set(events._engines) == {"index", *run_ids}  # noqa: SLF001
    assert len(instance.get_run_records()) == 3
    latest = instance.get_latest_materialization_event(AssetKey("numbers"))
    assert latest is not None and latest.dagster_event.partition == "ccc"
    logs = instance.all_logs(run_ids[1])
    assert any("partition bb" in (e.user_message or "") for e in logs)
    materialized = instance.get_materialized_partitions(AssetKey("numbers"))
    assert materialized == {"a", "bb", "ccc"}

    # A second instance on the same files (another process, e.g. `dagster dev`) sees it all.
    other = DagsterInstance.from_ref(instance.get_ref())
    assert len(other.get_run_records()) == 3
    assert other.get_materialized_partitions(AssetKey("numbers")) == {"a", "bb", "ccc"}
    other.dispose()
    instance.dispose()
    assert events._engines == {}  # noqa: SLF001
