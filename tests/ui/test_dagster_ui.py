"""The Dagster UI in a real browser: `dagster dev` on 127.0.0.1 (a free port, DAGSTER_HOME under
a temporary H3_HOME), driven by headless Chromium (Debian's, through Playwright): the ingestion
job's asset graph opens, "Materialize all" launches the backfill of the sample corpus plus one
broken PDF, the good documents are stored, the run is shown failed naming the broken file and
the reason, `ingested_documents` shows that partition Failed (the others Materialized, with
their file names), and the assets show with their metadata. Screenshots: test-artifacts/ui/."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.conftest import SAMPLE_CORPUS, h3_home_env

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "test-artifacts" / "ui"
CHROMIUM = os.environ.get("H3_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
LOCATION = "h3.pipelines.definitions"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening_hosts(port: int) -> set[str]:
    return {c.laddr.ip for c in psutil.net_connections("inet")
            if c.status == psutil.CONN_LISTEN and c.laddr.port == port}


def _wait_http(url: str, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"dagster dev exited: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise AssertionError(f"dagster dev did not answer in {timeout_s} s: {log.read_text()[-3000:]}")


def _graphql(base: str, query: str) -> dict:
    request = urllib.request.Request(f"{base}/graphql", data=json.dumps({"query": query}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]


def _stop(proc: subprocess.Popen) -> None:
    """Ends dagster dev and everything it started (webserver, daemon, code servers, run
    workers), whatever state they are in."""
    try:
        family = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in family:  # a child that left the group
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass
    proc.wait(timeout=30)


def _register_sample(home: Path, corpus: Path) -> list[str]:
    """What the inbox sensor or `h3 index-build` does before a run: rows + partitions."""
    from h3.pipelines.instance import ensure_dagster_home, get_instance
    from h3.pipelines.partitions import add_partitions
    from h3.pipelines.registry import find_pdfs, register
    from h3.resources.store import open_store

    with h3_home_env(home):
        ensure_dagster_home()
        store = open_store()
        doc_ids = [register(store, f).doc_id for f in find_pdfs([str(corpus)])[0]]
        add_partitions(get_instance(), doc_ids)
    return doc_ids


def _partition_keys(home: Path) -> dict[str, str]:
    """doc_id -> its partition key (`<file name>-<doc_id>`), as the UI lists them."""
    from h3.pipelines.instance import get_instance
    from h3.pipelines.partitions import partition_keys_by_doc

    with h3_home_env(home):
        return partition_keys_by_doc(get_instance())


def _wait_for_run(home: Path, timeout_s: float, expected=None) -> str:
    from dagster import DagsterRunStatus

    from h3.pipelines.instance import get_instance

    deadline = time.monotonic() + timeout_s
    with h3_home_env(home):
        instance = get_instance()
        while time.monotonic() < deadline:
            runs = instance.get_runs()
            done = [r for r in runs if r.status in (DagsterRunStatus.SUCCESS,
                                                    DagsterRunStatus.FAILURE,
                                                    DagsterRunStatus.CANCELED)]
            if done:
                assert done[0].status == (expected or DagsterRunStatus.SUCCESS), done[0]
                return done[0].run_id
            time.sleep(2)
    raise AssertionError(f"no ingestion run finished in {timeout_s} s")


BROKEN = "broken_scan.pdf"


def _partition_statuses(base: str, asset: str) -> dict:
    """What the asset's partitions view shows (the same GraphQL field the UI reads)."""
    query = ("{ assetNodes(assetKeys: [{path: [\"ASSET\"]}]) { assetPartitionStatuses "
             "{ ... on DefaultPartitionStatuses { materializedPartitions failedPartitions } } } }")
    data = _graphql(base, query.replace("ASSET", asset))
    return data["assetNodes"][0]["assetPartitionStatuses"]


@pytest.mark.slow
def test_ui_launches_ingestion_and_shows_failed_documents(machine_to_itself, tmp_path):
    from dagster import DagsterRunStatus
    from playwright.sync_api import expect, sync_playwright

    if shutil.which(CHROMIUM) is None:
        pytest.fail(f"{CHROMIUM} missing: `make install` installs Debian's chromium")
    SHOTS.mkdir(parents=True, exist_ok=True)
    home, corpus = tmp_path / "h3", tmp_path / "corpus"
    shutil.copytree(SAMPLE_CORPUS, corpus)
    # a PDF cut in the middle: it fails the first stage, the others must be stored anyway
    (corpus / BROKEN).write_bytes((corpus / "lab_handbook.pdf").read_bytes()[:1500])
    doc_ids = _register_sample(home, corpus)
    broken_id = doc_ids[sorted(p.name for p in corpus.glob("*.pdf")).index(BROKEN)]
    good_ids = set(doc_ids) - {broken_id}
    keys = _partition_keys(home)
    assert keys[broken_id] == f"{BROKEN}-{broken_id}"  # the picker finds it by its file name
    port, log = _free_port(), tmp_path / "dagster-dev.log"
    env = {**os.environ, "H3_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    dagster = str(Path(sys.executable).with_name("dagster"))
    with open(log, "w") as out:
        proc = subprocess.Popen([dagster, "dev", "-h", "127.0.0.1", "-p", str(port),
                                 "-w", str(REPO / "workspace.yaml")], cwd=REPO, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/server_info", proc, log, 240)
        assert _listening_hosts(port) == {"127.0.0.1"}  # never on a public interface
        # dagster.yaml turns the community prompt off: offline it cannot load, and its modal
        # opens a second after any page and can cover the launch dialog.
        assert _graphql(base, "{ shouldShowNux }") == {"shouldShowNux": False}
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1800, "height": 1000})
            page.set_default_timeout(90_000)

            expect.set_options(timeout=90_000)  # the code location loads torch etc.: slow
            page.goto(f"{base}/locations/{LOCATION}/jobs/ingest_documents", timeout=120_000)
            expect(page.get_by_text("View 14 assets")).to_be_visible(timeout=180_000)
            for group in ("ingestion", "knowledge", "compression"):  # the graph, by concern
                expect(page.get_by_text(group, exact=True).first).to_be_visible()
            page.screenshot(path=SHOTS / "1-asset-graph.png")

            page.get_by_role("button", name="Materialize all").click()
            dialog = page.locator("[role=dialog]").filter(has_text="Launch runs to materialize")
            dialog.get_by_role("button", name="All", exact=True).click()
            expect(dialog.get_by_text(f"{len(doc_ids)} partitions")).to_be_visible()
            page.screenshot(path=SHOTS / "2-launch-backfill.png")
            dialog.get_by_role("button", name="Launch backfill").click()
            expect(dialog).to_be_hidden()

            # one bad document: the run is Failed (not a plain success), the good ones stored
            run_id = _wait_for_run(home, 540, expected=DagsterRunStatus.FAILURE)
            page.goto(f"{base}/runs/{run_id}")
            expect(page.get_by_text("Failure").first).to_be_visible()
            expect(page.get_by_text("Loading run logs")).to_have_count(0)
            # the step failure names the file and the reason
            expect(page.get_by_text("1 of 4 documents failed").first).to_be_visible()
            expect(page.get_by_text(f"{BROKEN}: truncated PDF").first).to_be_visible()
            page.screenshot(path=SHOTS / "3-run-failed-one-document.png")
            with h3_home_env(home):
                from h3.pipelines.instance import get_instance

                tags = get_instance().get_run_by_id(run_id).tags
            assert tags["h3/failed_files"] == BROKEN, tags
            assert set(tags["h3/files"].split(", ")) == {p.name for p in corpus.glob("*.pdf")}
            page.goto(f"{base}/runs")
            expect(page.get_by_text("Failure").first).to_be_visible()
            page.screenshot(path=SHOTS / "3b-runs-list.png")

            statuses = _partition_statuses(base, "ingested_documents")
            assert statuses["failedPartitions"] == [keys[broken_id]], statuses
            assert set(statuses["materializedPartitions"]) == {keys[d] for d in good_ids}, statuses
            page.goto(f"{base}/assets/ingested_documents?view=partitions")
            expect(page.get_by_text("Failed").first).to_be_visible()
            page.get_by_text(keys[broken_id]).first.click()
            expect(page.get_by_text("failed, and did not materialize this asset")).to_be_visible()
            page.screenshot(path=SHOTS / "4-partitions-failed.png", full_page=True)
            # its history holds the observation naming the file and the reason
            page.get_by_role("button", name="View all historical events").click()
            history = page.get_by_role("dialog")
            expect(history.get_by_text("Observation").first).to_be_visible()
            history.get_by_role("button", name="arrow_drop_down").first.click()  # its metadata
            expect(history.get_by_text(BROKEN).first).to_be_visible()
            expect(history.get_by_text("truncated PDF").first).to_be_visible()
            page.screenshot(path=SHOTS / "4b-failed-partition-history.png", full_page=True)
            history.get_by_role("button", name="OK").click()
            good = sorted(good_ids)[0]
            page.get_by_text(keys[good]).first.click()
            expect(page.get_by_text("file", exact=True).first).to_be_visible()
            page.screenshot(path=SHOTS / "5-partition-file-name.png", full_page=True)

            page.goto(f"{base}/assets/cold_store")
            for key in ("documents_ok", "rows_chunks", "rows_regions", "preview"):
                expect(page.get_by_text(key, exact=True).first).to_be_visible()
            page.screenshot(path=SHOTS / "6-cold-store-metadata.png", full_page=True)
            page.goto(f"{base}/locations/{LOCATION}/asset-groups/ingestion")
            expect(page.get_by_text("cold_store").first).to_be_visible()
            page.screenshot(path=SHOTS / "7-ingestion-group.png")
            browser.close()
    finally:
        _stop(proc)
    with h3_home_env(home):
        from h3.resources.store import open_store

        assert open_store().ok_doc_ids() == good_ids


@pytest.mark.slow
def test_dg_dev_in_the_repo_root_serves_the_h3_home_instance(tmp_path):
    """`dg dev` typed in the repository root (no DAGSTER_HOME, no arguments): pyproject's
    [tool.dg] names the same definitions as `dagster dev`, the code location loads without
    error, and the instance is $H3_HOME's (runs and partitions shared with the CLI)."""
    home = tmp_path / "h3"
    port, log = _free_port(), tmp_path / "dg-dev.log"
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(H3_HOME=str(home), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    dg = str(Path(sys.executable).with_name("dg"))
    with open(log, "w") as out:
        proc = subprocess.Popen([dg, "dev", "--host", "127.0.0.1", "--port", str(port)],
                                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(f"{base}/server_info", proc, log, 240)
        query = ("{ workspaceOrError { ... on Workspace { locationEntries { name "
                 "locationOrLoadError { __typename ... on PythonError { message } } } } } }")
        deadline, entries = time.monotonic() + 180, []
        while time.monotonic() < deadline:  # the code server imports torch etc.: slow
            entries = _graphql(base, query)["workspaceOrError"]["locationEntries"]
            if entries and all(e["locationOrLoadError"] for e in entries):
                break
            time.sleep(2)
        assert [e["name"] for e in entries] == [LOCATION]
        assert entries[0]["locationOrLoadError"]["__typename"] == "RepositoryLocation", entries
        assert (home / "dagster" / "history" / "runs.db").exists()  # H3_HOME's instance
    finally:
        _stop(proc)
