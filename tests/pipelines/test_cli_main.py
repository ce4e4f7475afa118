"""The `h3` entry point: every subcommand in INTERFACES.md is listed and accepts --json."""

import subprocess
import sys

import pytest

INTERFACE_COMMANDS = [
    "index-build", "recall", "ask", "stats", "list", "delete", "monitor", "bench", "corruption-test",
    "bandwidth-test",
]


def test_help_lists_every_interface_command():
    out = subprocess.run(
        [sys.executable, "-m", "h3.pipelines.cli.main", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    for command in INTERFACE_COMMANDS:
        assert command in out.stdout


@pytest.mark.parametrize("command", INTERFACE_COMMANDS)
def test_every_command_accepts_json(command):
    out = subprocess.run(
        [sys.executable, "-m", "h3.pipelines.cli.main", command, "--help"],
        capture_output=True, text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "--json" in out.stdout


@pytest.mark.parametrize("flag, value", [("--lengths", "4k"), ("--lengths", "100"),
                                         ("--lengths", ""), ("--tasks", "fwe,nope"),
                                         ("--tasks", ""), ("--tasks", "passkeys"),
                                         ("--variants", "h3_10%,h3_7%")])
def test_bench_rejects_a_bad_value_naming_the_flag(flag, value):
    out = subprocess.run(
        [sys.executable, "-m", "h3.pipelines.cli.main", "bench", "--scenario", "ruler",
         flag, value, "--out", "/nonexistent/never-created"],
        capture_output=True, text=True,
    )
    assert out.returncode == 2 and flag in out.stderr, out.stderr


def test_bench_lengths_are_parsed_as_token_counts():
    from benchmarks.cli import _lengths

    assert _lengths("8192,4096") == [8192, 4096]


def _record_ruler_runs(monkeypatch) -> list[tuple]:
    """run_ruler with its model runs replaced by a recorder (what the CLI tests check is which
    samples and variants run): each run_sample call appends (sample, variant names)."""
    import types

    import benchmarks.runtime.ruler as ruler

    ran: list[tuple] = []
    fake_engine = types.SimpleNamespace(
        tokenizer=None, config=types.SimpleNamespace(runtime=types.SimpleNamespace(
            block_tokens=64, top_k_blocks=8, recent_tokens=64, sink_tokens=4)))
    monkeypatch.setattr(ruler, "H3Engine", lambda **kw: fake_engine)
    monkeypatch.setattr(ruler, "make_sample", lambda tok, task, n, seed: ("ruler", task, n, seed))
    monkeypatch.setattr(ruler, "passkey", lambda tok, n, d, seed: ("passkey", d, n, seed))
    monkeypatch.setattr(ruler, "summarise", lambda rows, names: {})

    def fake_run_sample(base, sample, variants, out_dir):
        ran.append((sample, [name for name, *_ in variants]))
        return {"full": {"score": 1.0, "prefill_s": None}} | {name: {} for name, *_ in variants}

    monkeypatch.setattr(ruler, "run_sample", fake_run_sample)
    return ran


def test_bench_ruler_runs_only_the_tasks_named(tmp_path, monkeypatch):
    """--tasks reaches run_ruler: only those RULER tasks run, and the passkey part only when
    named."""
    import benchmarks.runtime.ruler as ruler
    from benchmarks.cli import _tasks

    ran = _record_ruler_runs(monkeypatch)
    report = ruler.run_ruler(tmp_path, False, lengths=[4096], tasks=_tasks("fwe,cwe"))
    assert [s[1] for s, _ in ran] == ["fwe", "cwe"] and not report["passkey_part_run"]
    ran.clear()
    ruler.run_ruler(tmp_path, False, samples=2, lengths=[4096], tasks=_tasks("passkey,vt"))
    kinds = [s[0] for s, _ in ran]
    assert kinds.count("ruler") == 2 and kinds.count("passkey") == 6


def test_bench_ruler_runs_only_the_variants_named(tmp_path, monkeypatch):
    """--variants reaches run_ruler: beside full attention only those tiered variants run, in
    the RULER part and the passkey part."""
    import benchmarks.runtime.ruler as ruler
    from benchmarks.cli import _variants

    ran = _record_ruler_runs(monkeypatch)
    report = ruler.run_ruler(tmp_path, False, lengths=[4096], tasks=["fwe", "passkey"],
                             variants=_variants("h3_10%,h3_5%"))
    assert ran and all(names == ["h3_10%", "h3_5%"] for _, names in ran)
    assert report["ruler"]["variants"] == ["h3_10%", "h3_5%"] == report["passkey_prose"]["variants"]
    ran.clear()
    ruler.run_ruler(tmp_path, False, lengths=[4096], tasks=["fwe"])  # default: every variant
    assert [names for _, names in ran] == [[name for name, *_ in ruler.RULER_VARIANTS]]


def test_bench_rejects_variants_a_chosen_scenario_does_not_have(tmp_path):
    """A ruler-only variant with the decode scenario (or any with a scenario without variants)
    is refused naming the scenario, before anything runs (nothing is written to --out)."""
    from benchmarks.runtime import decode, ruler

    cases = (("decode", "h3_2.5%"), ("ruler", "h3_10%_sketches_only"), ("needle", "h3_10%"))
    # the premise: each variant belongs to another scenario, not to the one it is given to
    assert "h3_2.5%" in ruler.variant_names() and "h3_2.5%" not in decode.variant_names()
    assert "h3_10%_sketches_only" not in ruler.variant_names()
    for scenario, variant in cases:
        out_dir = tmp_path / scenario
        out = subprocess.run(
            [sys.executable, "-m", "h3.pipelines.cli.main", "bench", "--scenario", scenario,
             "--variants", variant, "--out", str(out_dir)],
            capture_output=True, text=True, timeout=300,  # a refusal is immediate
        )
        assert out.returncode == 2, out.stderr
        assert not out_dir.exists()
        assert "--variants" in out.stderr and f"scenario {scenario}" in out.stderr, out.stderr


def test_bench_refuses_a_sample_count_below_one_and_passes_seed_zero(tmp_path, monkeypatch):
    """--samples 0 would run nothing and write an empty report: refused by argparse (exit 2,
    naming the flag). --first-seed 0 reaches the scenario (a falsy value was dropped before,
    leaving passkey_api on its own default, 21)."""
    out = subprocess.run(
        [sys.executable, "-m", "h3.pipelines.cli.main", "bench", "--scenario", "ruler",
         "--samples", "0", "--out", "/nonexistent/never-created"],
        capture_output=True, text=True,
    )
    assert out.returncode == 2 and "--samples" in out.stderr and ">= 1" in out.stderr, out.stderr

    import benchmarks.runtime.passkey_api as passkey_api
    from h3.pipelines.cli.main import main

    seen = {}

    def fake(out_dir, quick, samples=1, first_seed=21, lengths=None):  # run_passkey_api's own
        seen.update(samples=samples, first_seed=first_seed, lengths=lengths)
        return {"rows": []}

    monkeypatch.setattr(passkey_api, "run_passkey_api", fake)
    assert main(["bench", "--scenario", "passkey_api", "--first-seed", "0",
                 "--out", str(tmp_path)]) == 0
    assert seen == {"samples": 1, "first_seed": 0, "lengths": None}


def test_bench_decode_runs_only_the_variants_and_lengths_named(tmp_path, monkeypatch):
    """--variants and --lengths reach run_decode: beside full attention only the named H3
    variants are timed, at the named lengths."""
    import types

    import benchmarks.runtime.decode as decode
    from benchmarks.cli import _variants

    timed: list[int] = []  # the prompt length of each H3 run
    fake_engine = types.SimpleNamespace(
        model=None, tokenizer=types.SimpleNamespace(decode=lambda ids, **kw: "x"),
        bytes_per_token_layer=1, n_layers=1, decode_step_seconds=[0.1, 0.1],
        config=types.SimpleNamespace(runtime=types.SimpleNamespace(decode_reselect_every=3)),
        stats=lambda: {"decode_tokens": 2}, new_cache=lambda: None)
    monkeypatch.setattr(decode, "H3Engine", lambda **kw: fake_engine)
    monkeypatch.setattr(decode, "passkey_prompt", lambda tok, n, depth, key: list(range(n)))
    monkeypatch.setattr(decode, "full_attention", lambda model, ids, n, keep: None)
    monkeypatch.setattr(decode, "full_decode", lambda model, kv, ids, n_new: ([1], 1.0))

    def fake_run_variant(engine, ids, n_new, kv):
        timed.append(len(ids))
        return {"decode_s": 0.2, "hot_peak_bytes": 1, "hot_budget_bytes": 2, "ids": [1]}

    monkeypatch.setattr(decode, "run_variant", fake_run_variant)
    report = decode.run_decode(tmp_path, False, lengths=[3000],
                               variants=_variants("h3_10%,h3_10%_sketches_only"))
    assert report["variants"] == ["full", "full_24_tokens", "h3_10%", "h3_10%_sketches_only"]
    assert [row["length"] for row in report["rows"]] == [3000]
    assert timed == [3000] * 2 * report["rows"][0]["rounds"]
    assert report["rows"][0]["h3_10%"]["kv_cost_removed"] is None  # (full = model alone here)


def test_decode_kv_cost_removed_is_the_share_of_full_attentions_kv_time():
    """(full - H3) / (full - model alone): all of it for a cache as cheap as the model alone,
    none for one as slow as full attention, and no figure where there is no KV cost."""
    from benchmarks.runtime.decode import kv_cost_removed

    assert kv_cost_removed(78.0, 38.0, 38.0) == 1.0
    assert kv_cost_removed(78.0, 38.0, 78.0) == 0.0
    assert kv_cost_removed(78.0, 38.0, 58.0) == 0.5
    assert kv_cost_removed(109.0, 33.2, 72.2) == 0.485
    assert kv_cost_removed(40.0, 40.0, 45.0) is None
