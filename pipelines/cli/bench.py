"""`h3 bench [--scenario NAME ...] [--out DIR] [--quick]`: runs the repository's benchmarks.

The benchmarks (top-level `benchmarks/`: scenarios, evals, corpus builders, one current report
per scenario) are not part of the installed product: they read the development corpora and
write reports beside the code. This thin entry point finds the checkout the `h3` command was
installed from (`make install` installs it in place) and hands the arguments to
`benchmarks/cli.py`; from a plain wheel it says what it needs instead of failing on an import.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

from h3.pipelines.cli.output import CliError

CHECKOUT = Path(__file__).resolve().parents[2]  # pipelines/cli/bench.py -> the repository root


def _benchmarks_cli():
    """`benchmarks.cli` of the checkout, or None where the package was installed without one."""
    if not (CHECKOUT / "benchmarks" / "cli.py").is_file():
        return None
    if str(CHECKOUT) not in sys.path:
        sys.path.insert(0, str(CHECKOUT))
    # a name in a string, not an import statement: the product never depends on benchmarks/
    return importlib.import_module("benchmarks.cli")


def add_parser(sub: argparse._SubParsersAction) -> None:
    cli = _benchmarks_cli()
    if cli is not None:
        cli.add_parser(sub)
        return
    p = sub.add_parser("bench", help="run the benchmark suite (needs a checkout of the repository)")
    p.add_argument("rest", nargs=argparse.REMAINDER)


def run(args: argparse.Namespace) -> int:
    cli = _benchmarks_cli()
    if cli is None:
        raise CliError(f"the benchmarks live in the repository's benchmarks/ folder, not in the "
                       f"installed package (looked in {CHECKOUT}): clone the repository and run "
                       "`make install` there")
    return cli.run(args)
