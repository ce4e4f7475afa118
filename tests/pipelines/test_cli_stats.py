"""`h3 stats` lists every cold-store table, whatever modules the process imported."""

import json
import os
import subprocess
import sys
from pathlib import Path

# every table the pipeline writes (assets and resources); a new table belongs here and in
# resources/store/tables.py
EXPECTED = {"documents", "regions", "chunks", "chunks_ml", "edges", "entities", "structures",
            "figure_embeddings", "chunk_summaries", "kv_blocks", "analysis", "cross_checks", "sections"}


def test_stats_on_an_empty_store_lists_every_table(tmp_path):
    # a fresh process that imports only the CLI's stats module: no asset module is loaded, so a
    # table declared as an import side effect of an asset would be missing here
    env = os.environ | {"H3_HOME": str(tmp_path / "h3")}
    out = subprocess.run([sys.executable, "-m", "h3.pipelines.cli.main", "stats", "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["tables"] == {name: 0 for name in EXPECTED}
    assert report["documents"] == {}


def test_a_bad_config_is_one_line_naming_the_key(tmp_path):
    config = tmp_path / "h3_config.yaml"
    config.write_text("cold_storage:\n  ocr_enable: true\n")
    env = os.environ | {"H3_HOME": str(tmp_path / "h3"), "H3_CONFIG": str(config)}
    out = subprocess.run([sys.executable, "-m", "h3.pipelines.cli.main", "stats", "--json"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "cold_storage.ocr_enable" in out.stderr
    assert "ocr_enabled" in out.stderr  # what is allowed there


def test_importing_the_pipeline_declares_no_other_table():
    code = ("from resources.store.tables import TABLES; before = set(TABLES); "
            "import pipelines.definitions; print(sorted(set(TABLES) - before))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_table_specs_are_declared_in_the_schema_module_only():
    root = Path(__file__).resolve().parents[2]
    declaring = sorted(str(p.relative_to(root)) for package in ("assets", "resources", "pipelines")
                       for p in (root / package).rglob("*.py") if "TableSpec(" in p.read_text())
    assert declaring == ["resources/store/tables.py"]


def test_a_closed_pipe_ends_the_command_quietly(tmp_path):
    """`h3 stats | head -1`: no BrokenPipeError traceback on stderr."""
    import subprocess
    import sys

    script = ("import sys; from pipelines.cli.main import main; sys.exit(main(['stats']))")
    env = {**__import__("os").environ, "H3_HOME": str(tmp_path / "h3")}
    shell = f"{sys.executable} -c \"{script}\" | head -c 1 > /dev/null"
    proc = subprocess.run(["bash", "-c", shell + "; echo ${PIPESTATUS[0]} >&2"],
                          capture_output=True, text=True, env=env, timeout=120,
                          cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
