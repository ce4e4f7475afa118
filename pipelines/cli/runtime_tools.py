"""`h3 monitor`, `h3 corruption-test`, `h3 bandwidth-test`: looking into the tiered-KV runtime."""

from __future__ import annotations

import argparse
import json
import re

from h3.pipelines.cli.output import CliError, emit, log


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Registers monitor, corruption-test and bandwidth-test."""
    m = sub.add_parser("monitor", help="runtime scheduler state after a warm-up workload")
    m.add_argument("--dump-scheduler-state", action="store_true",
                   help="print blocks per tier, heat, thresholds, migrations, prefetches, hit rates")
    _engine_args(m)
    m.add_argument("--tokens", type=int, default=1024, help="warm-up prompt length (tokens)")
    m.add_argument("--json", action="store_true")

    c = sub.add_parser("corruption-test", help="inject bit flips into KV blocks moving between tiers")
    c.add_argument("--iterations", type=int, default=100)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--json", action="store_true")

    b = sub.add_parser("bandwidth-test", help="block transfer bandwidth into the hot tier")
    b.add_argument("--size", default="256MB", help="bytes to move, e.g. 64MB, 1GiB")
    b.add_argument("--tier", choices=["hot", "warm", "cold"], default="warm")
    b.add_argument("--block-tokens", type=int, default=64)
    b.add_argument("--json", action="store_true")


def _engine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=None, help="local HF model folder (default: the bundled model)")
    p.add_argument("--hbm-size-gb", type=float, default=None)
    p.add_argument("--config", default=None, help="h3_config.yaml path")


def run(args: argparse.Namespace) -> int:
    return {"monitor": _monitor, "corruption-test": _corruption,
            "bandwidth-test": _bandwidth}[args.command](args)


def _monitor(args: argparse.Namespace) -> int:
    from h3.resources.settings import load_config
    from h3_runtime.config import ConfigError
    from h3_runtime.engine import H3Engine
    from h3_runtime.kvcache.geometry import BudgetTooSmallError
    from h3_runtime.models import ModelLoadError

    if args.tokens < 1:
        raise CliError(f"--tokens must be >= 1, got {args.tokens}")
    try:  # the file is checked whole (pipeline keys too): --config, else $H3_CONFIG or the
        # repository's h3_config.yaml, as `h3 ask` reads it (the thresholds in force are its)
        config = load_config(args.config).runtime
        engine = H3Engine(model_path=args.model, hbm_size_gb=args.hbm_size_gb, config=config)
    except (ConfigError, ModelLoadError, BudgetTooSmallError) as exc:
        raise CliError(str(exc)) from exc
    log(f"monitor: warm-up of {args.tokens} tokens ...")
    engine.warmup_tokens(args.tokens)
    stats = engine.stats()
    if stats["mode"] == "exact":  # an empty state is not a broken one: say why
        log(f"monitor: the warm-up's KV ({args.tokens} tokens) fits the hot budget, so no block "
            "left it (exact mode: nothing in warm or cold); raise --tokens or lower "
            "--hbm-size-gb to see the tiers at work")
    state = engine.dump_scheduler_state() if args.dump_scheduler_state else stats
    emit(state, args.json, human=json.dumps(state, indent=2, default=str))
    return 0


def _corruption(args: argparse.Namespace) -> int:
    from h3_runtime.tools import corruption_test

    if args.iterations < 1:
        raise CliError(f"--iterations must be >= 1, got {args.iterations}")
    report = corruption_test(args.iterations, seed=args.seed)
    human = (f"injected {report['injected']} bit flips, detected {report['detected']}, "
             f"missed {report['missed']}  {json.dumps(report['by_path'])}")
    emit(report, args.json, human=human)
    return 0 if report["missed"] == 0 else 1


def _bandwidth(args: argparse.Namespace) -> int:
    from h3_runtime.tools import bandwidth_test

    report = bandwidth_test(parse_size(args.size), args.tier, block_tokens=args.block_tokens)
    human = (f"{args.tier} -> hot: {report['bytes']} B in {report['seconds']:.3f} s = "
             f"{report['gb_per_s']:.2f} GB/s ({report['blocks']} blocks, {report['device']})")
    emit(report, args.json, human=human)
    return 0


_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20,
          "GIB": 2**30, "K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    """'64MB' -> 64_000_000, '1GiB' -> 2**30; a clear error otherwise."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([A-Za-z]*)\s*", text)
    if not m or m.group(2).upper() not in _UNITS:
        raise CliError(f"--size {text!r}: expected a number with an optional unit "
                       f"(B, KB, MB, GB, KiB, MiB, GiB)")
    size = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if size <= 0:
        raise CliError(f"--size {text!r}: must be > 0")
    return size
