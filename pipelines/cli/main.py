"""The `h3` command line. Each subcommand lives in its own module with `add_parser` and `run`;
this file only assembles them, and imports a module only when its command runs (fast start)."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from h3.pipelines.cli.output import CliError
from h3_runtime.config import ConfigError
from h3_runtime.home import H3HomeError

STORAGE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EFBIG}

# command name -> module that implements it (each has add_parser(subparsers) and run(args) -> int)
COMMANDS: dict[str, str] = {
    "index-build": "h3.pipelines.cli.index_build",
    "recall": "h3.pipelines.cli.recall",
    "stats": "h3.pipelines.cli.stats",
    "list": "h3.pipelines.cli.documents",
    "delete": "h3.pipelines.cli.delete",
    "ask": "h3.pipelines.cli.ask",
    "outline": "h3.pipelines.cli.outline",
    "monitor": "h3.pipelines.cli.runtime_tools",
    "corruption-test": "h3.pipelines.cli.runtime_tools",
    "bandwidth-test": "h3.pipelines.cli.runtime_tools",
    "bench": "h3.pipelines.cli.bench",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="h3", description="H³: long-document ingestion, recall and tiered-KV inference")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    seen: set[str] = set()
    only_module = COMMANDS.get(only) if only is not None else None
    for name, module_name in COMMANDS.items():
        # a module may register several commands (runtime_tools): the one that implements the
        # command asked for registers all of its own, the others are listed without importing
        if only is not None and module_name != only_module:
            sub.add_parser(name)  # listed in --help without importing its module
            continue
        if module_name in seen:
            continue
        seen.add(module_name)
        importlib.import_module(module_name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # The offline rule holds for every command: never reach for a model hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only=command if command in COMMANDS else None)
    args = parser.parse_args(argv)
    module = importlib.import_module(COMMANDS[args.command])
    try:
        return int(module.run(args) or 0)
    except (CliError, H3HomeError, ConfigError) as exc:  # a bad h3_config.yaml: its key, no trace
        print(f"h3 {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `h3 stats | head`: the reader left; stop quietly, as shell tools do
        # Python would print a second error flushing stdout at exit: point it at devnull
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped by a closed pipe
    except OSError as exc:  # a full or read-only disk under H3_HOME: say so, no traceback
        if exc.errno not in STORAGE_ERRNOS:
            raise
        print(f"h3 {args.command}: cannot write {exc.filename or 'under H3_HOME'}: "
              f"{exc.strerror or exc} (H3_HOME={os.environ.get('H3_HOME') or '.h3'})",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"h3 {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
