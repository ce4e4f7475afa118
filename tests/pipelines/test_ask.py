"""`h3 ask` end to end on the ingested sample corpus, with a tiny random Llama (real tokenizer)
standing in for the default model: stats, cold reuse vs recompute, bad input."""

from __future__ import annotations

import json
import os

import pytest

from h3.pipelines.cli.main import main
from tests.assets._runtime_fixtures import copy_store, tiny_model_dir, write_config
from tests.conftest import h3_home_env

pytestmark = pytest.mark.slow
STATS = {"ttft_s", "total_s", "prompt_tokens", "prefill_tokens_computed", "kv_tokens_loaded_cold",
         "hot_peak_bytes", "hot_budget_bytes", "full_kv_bytes", "integrity_errors"}


@pytest.fixture(scope="module")
def home(ingested_sample, default_model_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("ask")
    config = write_config(base / "h3_config.yaml", tiny_model_dir(default_model_dir, base / "tiny"))
    old = os.environ.get("H3_CONFIG")
    os.environ["H3_CONFIG"] = str(config)
    with h3_home_env(base / "h3") as h:
        copy_store(ingested_sample["home"], h)
        report = next(d["doc_id"] for d in ingested_sample["report"]["documents"]
                      if d["source"].endswith("annual_report.pdf"))
        yield {"home": h, "report": report}
    if old is None:
        os.environ.pop("H3_CONFIG", None)
    else:
        os.environ["H3_CONFIG"] = old


def ask(capsys, *args) -> dict:
    assert main(["ask", *args, "--json", "--max-new-tokens", "6"]) == 0
    return json.loads(capsys.readouterr().out)


def test_doc_reuse_is_exact_and_loads_instead_of_prefilling(home, capsys):
    q = "What was the total revenue in 2023?"
    first = ask(capsys, q, "--doc", home["report"])  # prefills + stores the document once
    again = ask(capsys, q, "--doc", home["report"])
    full = ask(capsys, q, "--doc", home["report"], "--no-cold-reuse")
    assert STATS <= set(again["stats"])
    s = again["stats"]
    assert s["kv_tokens_loaded_cold"] > 100 and s["integrity_errors"] == 0
    assert s["prefill_tokens_computed"] + s["kv_tokens_loaded_cold"] == s["prompt_tokens"]
    assert full["stats"]["kv_tokens_loaded_cold"] == 0
    assert full["stats"]["prefill_tokens_computed"] == s["prompt_tokens"]
    assert 0 < s["hot_peak_bytes"] <= s["hot_budget_bytes"]
    assert again["answer"] == full["answer"] == first["answer"]
    assert list((home["home"] / "kv" / "docs").iterdir())  # stored under H3_HOME's cold tier


def test_recalled_evidence_reuses_stored_chunks(home, capsys):
    out = ask(capsys, "What was the total revenue in 2023?", "--k", "3", "--no-cold-reuse")
    assert out["evidence"] and all("page" in h and "text" in h for h in out["evidence"])
    assert home["report"] in {h["doc_id"] for h in out["evidence"]}
    for doc_id in {h["doc_id"] for h in out["evidence"]}:
        ask(capsys, "store it", "--doc", doc_id)  # every evidence document's KV is stored now
    reused = ask(capsys, "What was the total revenue in 2023?", "--k", "3")
    assert STATS <= set(reused["stats"])
    # at least the shared prompt head comes from the first document's KV; chunks long enough
    # to be worth it are loaded and re-positioned
    assert reused["stats"]["kv_tokens_loaded_cold"] > 0
    assert reused["stats"]["prefill_tokens_computed"] < out["stats"]["prefill_tokens_computed"]
    assert out["stats"]["kv_tokens_loaded_cold"] == 0
    assert [h["doc_id"] for h in reused["evidence"]] == [h["doc_id"] for h in out["evidence"]]


def test_unknown_document_is_a_clear_error(home, capsys):
    assert main(["ask", "anything", "--doc", "0000000000000000", "--json"]) == 2
    assert "--doc 0000000000000000: not in the store" in capsys.readouterr().err


def test_a_company_the_store_lacks_is_refused_with_the_reason(home, capsys):
    out = ask(capsys, "What was Tesla's automotive gross margin in Q3 2023?")
    assert out["refused"] is True and "Tesla" in out["reason"] and out["answer"] == ""
    assert out["evidence"]  # what recall found is still shown, for the user to judge
    assert not out["stats"]  # the model never ran
    answered = ask(capsys, "What was the total revenue in 2023?", "--k", "3")
    assert answered["refused"] is False and answered["reason"] is None
