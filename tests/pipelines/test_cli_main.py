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
        [sys.executable, "-m", "pipelines.cli.main", "--help"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    for command in INTERFACE_COMMANDS:
        assert command in out.stdout


@pytest.mark.parametrize("command", INTERFACE_COMMANDS)
def test_every_command_accepts_json(command):
    out = subprocess.run(
        [sys.executable, "-m", "pipelines.cli.main", command, "--help"],
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
        [sys.executable, "-m", "pipelines.cli.main", "bench", "--scenario", "ruler",
         flag, value, "--out", "/nonexistent/never-created"],
        capture_output=True, text=True,
    )
    assert out.returncode == 2 and flag in out.stderr, out.stderr


def test_bench_lengths_are_parsed_as_token_counts():
    from pipelines.cli.bench import _lengths

    assert _lengths("8192,4096") == [8192, 4096]


def test_bench_ruler_runs_only_the_tasks_named(tmp_path, monkeypatch):
    """--tasks reaches run_ruler: only those RULER tasks run, and the passkey part only when
    named (the model runs are replaced by a recorder: what is tested is the selection)."""
    import types

    import h3_runtime.bench.ruler as ruler
    from pipelines.cli.bench import _tasks

    ran = []
    fake_engine = types.SimpleNamespace(
        tokenizer=None, config=types.SimpleNamespace(runtime=types.SimpleNamespace(
            block_tokens=64, top_k_blocks=8, recent_tokens=64, sink_tokens=4)))
    monkeypatch.setattr(ruler, "H3Engine", lambda **kw: fake_engine)
    monkeypatch.setattr(ruler, "make_sample", lambda tok, task, n, seed: ("ruler", task, n, seed))
    monkeypatch.setattr(ruler, "passkey", lambda tok, n, d, seed: ("passkey", d, n, seed))
    monkeypatch.setattr(ruler, "summarise", lambda rows, names: {})

    def fake_run_sample(base, sample, variants, out_dir):
        ran.append(sample)
        return {"full": {"score": 1.0, "prefill_s": None}} | {name: {} for name, *_ in variants}

    monkeypatch.setattr(ruler, "run_sample", fake_run_sample)
    report = ruler.run_ruler(tmp_path, False, lengths=[4096], tasks=_tasks("fwe,cwe"))
    assert [s[1] for s in ran] == ["fwe", "cwe"] and not report["passkey_part_run"]
    ran.clear()
    ruler.run_ruler(tmp_path, False, samples=2, lengths=[4096], tasks=_tasks("passkey,vt"))
    assert [s[0] for s in ran].count("ruler") == 2 and [s[0] for s in ran].count("passkey") == 6


def test_bench_ruler_runs_only_the_variants_named(tmp_path, monkeypatch):
    """--variants reaches run_ruler: beside full attention only those tiered variants run, in
    the RULER part and the passkey part (same recorder as above)."""
    import types

    import h3_runtime.bench.ruler as ruler
    from pipelines.cli.bench import _variants

    seen: list[list[str]] = []
    fake_engine = types.SimpleNamespace(
        tokenizer=None, config=types.SimpleNamespace(runtime=types.SimpleNamespace(
            block_tokens=64, top_k_blocks=8, recent_tokens=64, sink_tokens=4)))
    monkeypatch.setattr(ruler, "H3Engine", lambda **kw: fake_engine)
    monkeypatch.setattr(ruler, "make_sample", lambda tok, task, n, seed: ("ruler", task, n, seed))
    monkeypatch.setattr(ruler, "passkey", lambda tok, n, d, seed: ("passkey", d, n, seed))
    monkeypatch.setattr(ruler, "summarise", lambda rows, names: {})

    def fake_run_sample(base, sample, variants, out_dir):
        seen.append([name for name, *_ in variants])
        return {"full": {"score": 1.0, "prefill_s": None}} | {name: {} for name, *_ in variants}

    monkeypatch.setattr(ruler, "run_sample", fake_run_sample)
    report = ruler.run_ruler(tmp_path, False, lengths=[4096], tasks=["fwe", "passkey"],
                             variants=_variants("h3_10%,h3_5%"))
    assert seen[0] == ["h3_10%", "h3_5%"] and all(s == ["h3_10%", "h3_5%"] for s in seen)
    assert report["ruler"]["variants"] == ["h3_10%", "h3_5%"] == report["passkey_prose"]["variants"]
    seen.clear()
    ruler.run_ruler(tmp_path, False, lengths=[4096], tasks=["fwe"])  # default: every variant
    assert seen == [[name for name, *_ in ruler.RULER_VARIANTS]]
