"""Security: active PDF content is never executed, names cannot write outside H3_HOME, the UI
binds to 127.0.0.1, and nothing unpickles (no pickle loads in the code, no pickle files in a
store after ingestion)."""

from __future__ import annotations

import re
from pathlib import Path

import pymupdf
import pytest

from tests.conftest import h3_home_env
from tests.security.scan import find_pickles

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ["ontology", "h3_runtime", "resources", "assets", "pipelines"]


def hostile_pdf(path: Path, marker: Path) -> bytes:
    """A PDF that, if any active content ran, would create `marker`: a launch action on open, a
    JavaScript open action and name-tree script, a launch link, and an embedded shell script
    whose attachment name tries to climb out of any folder it were saved to."""
    script = f"#!/bin/sh\ntouch {marker}\n".encode()
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 160), "Quarterly security memo", fontsize=16)
    page.insert_textbox(pymupdf.Rect(72, 190, 520, 600), (
        "The vault in Basel is audited every quarter by two officers. The audit found no "
        "missing items and recommends new locks for the east door. ") * 3, fontsize=11)
    doc.embfile_add("../../../../../../tmp/h3-escape.sh", script, filename="../../evil.sh")
    catalog = doc.pdf_catalog()
    launch = f"<< /S /Launch /F << /Type /Filespec /F ({marker.parent}/run.sh) >> >>"
    js = f"<< /S /JavaScript /JS (app.launchURL('file://{marker}'); this.exportDataObject" \
         "({cName: 'evil.sh', nLaunch: 2});) /Next " + launch + " >>"
    doc.xref_set_key(catalog, "OpenAction", js)
    page.insert_link({"kind": pymupdf.LINK_LAUNCH, "from": pymupdf.Rect(72, 150, 300, 170),
                      "file": f"{marker.parent}/run.sh"})
    doc.save(path)
    return script


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")} if root.exists() else set()


def _outside(root: Path, home: Path) -> set[Path]:
    return {p for p in _files(root) if p != home and home not in p.parents}


@pytest.mark.slow
def test_hostile_pdf_is_ingested_as_text_only(tmp_path):
    from h3.pipelines.cli.index_build import ingest
    from h3.resources.store import open_store

    outside, corpus, home = tmp_path / "outside", tmp_path / "in..$(touch x);", tmp_path / "h3"
    outside.mkdir()
    corpus.mkdir()
    marker = outside / "pwned"
    (outside / "run.sh").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (outside / "run.sh").chmod(0o755)
    script = hostile_pdf(corpus / "memo ..;`touch x`.pdf", marker)
    assert pymupdf.open(corpus / "memo ..;`touch x`.pdf").embfile_count() == 1
    before = _outside(tmp_path, home)

    with h3_home_env(home):
        report = ingest([str(corpus)])
        store = open_store()
        assert report["ok"] == 1, report
        text = " ".join(r["text"] for r in store.rows("chunks"))
        assert "vault in Basel" in text and "touch" not in text

    assert not marker.exists() and not Path("/tmp/h3-escape.sh").exists()
    assert _outside(tmp_path, home) == before  # nothing written outside H3_HOME
    leaked = [p for p in _files(home) if p.is_file() and script in p.read_bytes()]
    assert not leaked, leaked  # the attachment was never extracted
    assert find_pickles(home) == []


@pytest.mark.parametrize("parts", [("..", "x"), ("figures", "..", "..", "etc"), ("/etc",),
                                   ("staging", "/tmp/x.json")])
def test_under_home_refuses_escapes(h3_home, parts):
    from h3_runtime.home import H3HomeError, under_home

    with pytest.raises(H3HomeError, match="outside H3_HOME"):
        under_home(*parts)


def test_symlink_out_of_home_is_refused(h3_home, tmp_path):
    from h3_runtime.home import H3HomeError, under_home

    (h3_home / "figures").mkdir(parents=True)
    (h3_home / "figures" / "abcdef0123456789").symlink_to(tmp_path)
    with pytest.raises(H3HomeError):
        under_home("figures", "abcdef0123456789", "p1-f0.png")


def test_io_managers_refuse_partition_keys_that_are_paths(h3_home):
    from dagster import AssetKey, build_output_context

    from h3.resources.json_io import JsonOutputIOManager

    context = build_output_context(asset_key=AssetKey("doc_index"), partition_key="../../x")
    with pytest.raises(ValueError, match="not a file name"):
        JsonOutputIOManager().handle_output(context, {"a": 1})
    assert not list(h3_home.parent.glob("x.json"))


def test_json_io_manager_never_pickles(h3_home):
    from dagster import AssetKey, build_output_context

    from h3.resources.json_io import JsonOutputIOManager

    manager = JsonOutputIOManager()
    manager.handle_output(build_output_context(asset_key=AssetKey("doc_index")), {"n": 3})
    assert (h3_home / "outputs" / "doc_index" / "__all__.json").read_text() == '{"n":3}'
    with pytest.raises(TypeError, match="not JSON"):
        manager.handle_output(build_output_context(asset_key=AssetKey("x")), {"n": object()})


def test_webserver_binds_to_localhost_by_default():
    ui = re.search(r"^ui:.*?(?=^\S)", (REPO / "Makefile").read_text(), re.S | re.M).group(0)
    assert "-m h3.pipelines.ui" in ui  # the wrapper that starts (and stops) `dagster dev`
    from h3.pipelines import ui as ui_wrapper

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("H3_UI_HOST", raising=False)
        command = ui_wrapper.dagster_dev_command(ui_wrapper.default_host(), "3000")
    assert command[1:4] == ["dev", "-h", "127.0.0.1"], command
    from dagster_webserver.cli import DEFAULT_WEBSERVER_HOST

    assert DEFAULT_WEBSERVER_HOST == "127.0.0.1"


UNSAFE = [
    (re.compile(r"\bpickle\.loads?\("), "pickle.load"),
    (re.compile(r"\b(cPickle|dill|cloudpickle|joblib)\.load"), "pickle-based load"),
    (re.compile(r"read_pickle\("), "pandas.read_pickle"),
    (re.compile(r"allow_pickle\s*=\s*True"), "np.load(allow_pickle=True)"),
    (re.compile(r"weights_only\s*=\s*False"), "torch.load(weights_only=False)"),
]


def test_no_code_unpickles_untrusted_bytes():
    found = []
    for package in PRODUCT:
        for path in (REPO / package).rglob("*.py"):
            source = path.read_text()
            found += [f"{path.relative_to(REPO)}: {why}" for rx, why in UNSAFE
                      if rx.search(source)]
            for call in re.finditer(r"torch\.load\(([^)]*)\)", source):
                if "weights_only=True" not in call.group(1).replace(" ", ""):
                    found.append(f"{path.relative_to(REPO)}: torch.load without weights_only=True")
    assert not found, found
