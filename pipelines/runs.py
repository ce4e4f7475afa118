"""Running one job of the definitions in this process and summarising the run: what the benches
report and what the tests check (assets' numeric metadata, asset-check results, stage seconds)."""

from __future__ import annotations

import time

WARNINGS_ONLY = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def run_job(name: str) -> dict:
    """Executes job `name` on this H3_HOME's instance (failures are reported, not raised).

    Returns {"wall_s", "stage_s" (the steps' summed seconds), "success", "run_id", "assets":
    {asset: {metadata key: int|float|str|bool}}, "checks": {check name: passed}}."""
    from h3.pipelines.definitions import defs
    from h3.pipelines.instance import get_instance

    instance = get_instance()
    t0 = time.perf_counter()
    result = defs.resolve_job_def(name).execute_in_process(
        instance=instance, raise_on_error=False, run_config=WARNINGS_ONLY)
    wall = time.perf_counter() - t0
    steps = instance.get_run_step_stats(result.run_id)
    stage_s = sum(st.end_time - st.start_time for st in steps if st.end_time and st.start_time)
    assets: dict = {}
    checks: dict = {}
    for ev in result.all_events:
        if ev.event_type_value == "ASSET_MATERIALIZATION":
            mat = ev.event_specific_data.materialization
            assets[mat.asset_key.to_user_string()] = {
                k: getattr(v, "value", v) for k, v in mat.metadata.items()
                if isinstance(getattr(v, "value", v), (int, float, str, bool))}
        elif ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data = ev.event_specific_data
            checks[data.check_name] = bool(data.passed)
    return {"wall_s": round(wall, 2), "stage_s": round(stage_s, 2), "success": result.success,
            "run_id": result.run_id, "assets": assets, "checks": checks}
