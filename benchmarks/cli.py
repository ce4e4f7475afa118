"""`h3 bench [--scenario NAME ...] [--out DIR] [--quick]`: the benchmark suite.

Each scenario is a function `run(out_dir: Path, quick: bool) -> dict` in its own module; it
compares its variants side by side in one run (the machine is shared and noisy: read ratios),
writes its PNG plots into out_dir and returns its JSON report.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import time
from pathlib import Path

from benchmarks.evals.ruler_tasks import PASSKEY, TASKS
from h3.pipelines.cli.output import CliError, emit, log

TASK_CHOICES = (*TASKS, PASSKEY)  # what --tasks accepts: the RULER tasks and the passkey part

# scenario name -> "module:function"
SCENARIOS: dict[str, str] = {
    "ingest": "benchmarks.documents.ingest:run",
    "structure": "benchmarks.documents.structure:run",
    "relation": "benchmarks.documents.relation:run",
    "chinese": "benchmarks.documents.chinese:run",
    "needle": "benchmarks.runtime.needle:run_needle",
    "context_scale": "benchmarks.runtime.needle:run_context_scale",
    "scale": "benchmarks.documents.scale:run",
    "decode": "benchmarks.runtime.decode:run_decode",
    "ruler": "benchmarks.runtime.ruler:run_ruler",
    "passkey_api": "benchmarks.runtime.passkey_api:run_passkey_api",
    "prefill": "benchmarks.runtime.prefill:run_prefill",
    "trace": "benchmarks.runtime.trace:run_trace",
    "docs": "benchmarks.documents.seed:run_docs",
    "code": "benchmarks.documents.seed:run_code",
    "multihop": "benchmarks.documents.seed:run_multihop",
    "filings": "benchmarks.documents.filings:run",
    "answers": "benchmarks.documents.answers:run",
    "navigate": "benchmarks.documents.navigate:run",
    "long_document": "benchmarks.documents.long_document:run",
    "filings_runtime": "benchmarks.documents.filings_runtime:run",
    "filings_passkey": "benchmarks.documents.filings_runtime:run_passkey",
    "filings_gate": "benchmarks.documents.filings_gate:run",
    "profiles": "benchmarks.documents.profiles:run",
    "embedding_engines": "benchmarks.documents.embedding_engines:run",
    "scaleout": "benchmarks.documents.scaleout:run",
    "disk": "benchmarks.documents.disk:run",
    "ingest_floor": "benchmarks.documents.ingest_floor:run",
}
DEFAULT_SCENARIOS = ["ingest", "needle"]
# scenarios that take --variants -> "module:function" naming their variants
VARIANT_NAMES: dict[str, str] = {
    "ruler": "benchmarks.runtime.ruler:variant_names",
    "decode": "benchmarks.runtime.decode:variant_names",
}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run the benchmark suite (JSON report + PNG plots)")
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                   help="scenario to run (repeatable); default: " + ", ".join(DEFAULT_SCENARIOS))
    p.add_argument("--out", default="bench-results", help="folder for report.json and plots")
    p.add_argument("--quick", action="store_true", help="a small version, for CI")
    p.add_argument("--home", help="filings, answers, navigate, long_document, embedding_engines, scale, disk, trace: this H3_HOME, "
                                   "which holds the corpus, instead of ingesting it into a fresh one")
    p.add_argument("--path", help="ingest_floor: the folder of PDFs to ingest beside the naive "
                                  "floor; scaleout: the folder to ingest (default: the sample "
                                  "corpus and docling's test PDFs)")
    p.add_argument("--samples", type=_at_least_one, help="ruler, passkey_api: samples per task (or "
                                                 "depth) and length (different seeds; default 1)")
    p.add_argument("--first-seed", type=int, help="ruler, passkey_api: the first of those seeds "
                                                    "(default 0, passkey_api 21; another range "
                                                    "measures held-out prompts)")
    p.add_argument("--lengths", type=_lengths, help="ruler, decode, passkey_api: context lengths "
                                                   "in tokens, comma-separated (default 4096,8192; "
                                                   "ruler's passkey part: 2048,4096,8192; "
                                                   "passkey_api: 2400,4700,7800)")
    p.add_argument("--tasks", type=_tasks, help="ruler: the tasks to run, comma-separated, of "
                                               + ", ".join(TASK_CHOICES) + " (default: all; "
                                               "without 'passkey' its part is skipped)")
    p.add_argument("--variants", type=_variants, help="ruler, decode: the tiered variants to run "
                                                     "beside full attention, comma-separated, named "
                                                     "as in the scenario's report (e.g. "
                                                     "h3_10%%,h3_5%%; default: all)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")


def _at_least_one(text: str) -> int:
    """`--samples 3` -> 3; 0 or less would run nothing and write an empty report."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be >= 1")
    return value


def _lengths(text: str) -> list[int]:
    """`--lengths 4096,8192` -> [4096, 8192] (argparse reports a bad value with the flag's name)."""
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected token counts like 4096,8192") from None
    if min(values) < 256:  # (an empty item fails int() above)
        raise argparse.ArgumentTypeError(f"{text!r}: each length must be >= 256 tokens")
    return values


def _tasks(text: str) -> list[str]:
    """`--tasks fwe,passkey` -> ["fwe", "passkey"], each a RULER task or the passkey part."""
    names = [x.strip() for x in text.split(",")]
    unknown = [x for x in names if x not in TASK_CHOICES]
    if unknown:  # (an empty value is one unknown name, "")
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown task(s) {unknown}; choose from {', '.join(TASK_CHOICES)}")
    return names


def _scenario_variants(scenario: str) -> list[str]:
    """The variant names a scenario that takes --variants knows."""
    # imported here: the bench modules load torch, which `h3 --help` should not wait for
    module_name, func_name = VARIANT_NAMES[scenario].split(":")
    return getattr(importlib.import_module(module_name), func_name)()


def _variants(text: str) -> list[str]:
    """`--variants h3_10%,h3_5%` -> ["h3_10%", "h3_5%"], each a variant of a scenario that
    takes them (`run` checks each scenario run has at least one of its own)."""
    choices = list(dict.fromkeys(v for s in VARIANT_NAMES for v in _scenario_variants(s)))
    names = [x.strip() for x in text.split(",")]
    unknown = [x for x in names if x not in choices]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown variant(s) {unknown}; choose from {', '.join(choices)}")
    return names


def run(args: argparse.Namespace) -> int:
    scenarios = args.scenario or DEFAULT_SCENARIOS
    for name in scenarios if getattr(args, "variants", None) else ():
        known = _scenario_variants(name) if name in VARIANT_NAMES else []
        if not set(args.variants) & set(known):  # it would run no tiered variant, or ignore them
            raise CliError(f"--variants {','.join(args.variants)}: scenario {name} has none of "
                           f"them (its variants: {', '.join(known) or 'none, it takes no --variants'})")
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot create --out {out}: {exc.strerror or exc}") from exc
    report: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%S"), "quick": args.quick, "scenarios": {}}
    for name in scenarios:
        module_name, func_name = SCENARIOS[name].split(":")
        log(f"bench: scenario {name} ...")
        t0 = time.perf_counter()
        func = getattr(importlib.import_module(module_name), func_name)
        params = inspect.signature(func).parameters
        extra = {opt: getattr(args, opt)
                 for opt in ("home", "path", "samples", "first_seed", "lengths", "tasks", "variants")
                 if getattr(args, opt, None) is not None and opt in params}  # (--first-seed 0 too)
        try:
            result = func(out, args.quick, **extra)
        except FileNotFoundError as exc:  # a corpus or model folder the scenario needs is absent
            raise CliError(f"scenario {name}: {exc}") from exc
        result["wall_s"] = round(time.perf_counter() - t0, 2)
        report["scenarios"][name] = result
        (out / f"{name}.json").write_text(json.dumps(result, indent=2, default=str))
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
    emit(report, args.json, human=json.dumps(report, indent=2, default=str))
    log(f"bench: report written to {out / 'report.json'}")
    return 0
