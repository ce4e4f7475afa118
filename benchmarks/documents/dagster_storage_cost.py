"""What dropping the cached-engine event log (pipelines/dagster_storage.py before issue 10) costs:
process CPU of the old storage vs Dagster's own SQLite storage, interleaved (old, new) x 3 after
a warm-up, same Dagster-only workload: 40 dynamic partitions, 4 ranged runs of a 3-asset
partitioned chain over all 40 (many partition lookups and events, no document work).

    mkdir -p /tmp/oldstore && git show ac67a4a:pipelines/dagster_storage.py \\
        > /tmp/oldstore/old_dagster_storage.py
    PYTHONPATH=. python benchmarks/documents/dagster_storage_cost.py /tmp/oldstore
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

STORAGES = {
    "old": "storage:\n  custom:\n    module: old_dagster_storage\n    class: H3SqliteStorage\n"
           "    config:\n      base_dir: {home}\n",
    "new": "storage:\n  custom:\n    module: pipelines.dagster_storage\n"
           "    class: H3HomeSqliteStorage\n    config: {{}}\n",
}
QUIET = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _job():
    from dagster import (
        BackfillPolicy,
        Definitions,
        DynamicPartitionsDefinition,
        asset,
        define_asset_job,
        mem_io_manager,
    )

    parts = DynamicPartitionsDefinition(name="docs")
    policy = BackfillPolicy.single_run()

    @asset(partitions_def=parts, backfill_policy=policy, io_manager_key="mem")
    def a(context):
        return {k: 1 for k in context.partition_keys}

    @asset(partitions_def=parts, backfill_policy=policy, io_manager_key="mem")
    def b(a):
        return a

    @asset(partitions_def=parts, backfill_policy=policy, io_manager_key="mem")
    def c(b):
        return b

    return Definitions(assets=[a, b, c], jobs=[define_asset_job("j", partitions_def=parts)],
                       resources={"mem": mem_io_manager}).resolve_job_def("j")


def one(kind: str, job) -> float:
    from dagster import AssetKey, DagsterInstance

    home = tempfile.mkdtemp()
    with open(os.path.join(home, "dagster.yaml"), "w") as f:
        f.write("telemetry:\n  enabled: false\n" + STORAGES[kind].format(home=home))
    os.environ["DAGSTER_HOME"] = home
    instance = DagsterInstance.get()
    keys = [f"d{i:03d}" for i in range(40)]
    instance.add_dynamic_partitions("docs", keys)
    tags = {"dagster/asset_partition_range_start": keys[0],
            "dagster/asset_partition_range_end": keys[-1]}
    cpu0 = time.process_time()
    for _ in range(4):
        assert job.execute_in_process(instance=instance, tags=tags, run_config=QUIET).success
    for _ in keys:
        instance.get_latest_materialization_event(AssetKey("c"))
    cpu = time.process_time() - cpu0
    instance.dispose()
    return cpu


def main() -> int:
    sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "/tmp/oldstore")
    job = _job()
    one("old", job), one("new", job)  # warm-up (imports, caches)
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(3):
        for kind in cpu:
            cpu[kind].append(round(one(kind, job), 3))
    print(json.dumps({k: {"cpu_s": v, "median": sorted(v)[1]} for k, v in cpu.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
