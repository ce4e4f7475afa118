"""How many threads this process's models may run at once.

One process (the CLI, `dagster dev`, a test) may use every core. The local workers of
`h3 index-build` (pipelines/scaleout.py) share the machine: each is started with
H3_CPU_THREADS = cores // workers, so that two single-thread workers on two cores do not run
two threads each and wait on each other at every op.
"""

from __future__ import annotations

import os

CPU_THREADS_ENV = "H3_CPU_THREADS"
MAX_THREADS = 8  # past this the small CPU models here gain nothing from more threads


def cpu_threads() -> int:
    """$H3_CPU_THREADS when set, else the machine's cores (at most MAX_THREADS)."""
    value = os.environ.get(CPU_THREADS_ENV)
    if value:
        try:
            threads = int(value)
        except ValueError:
            threads = 0
        if threads < 1:
            raise ValueError(f"{CPU_THREADS_ENV}={value!r}: expected a whole number >= 1")
        return threads
    return max(1, min(os.cpu_count() or 1, MAX_THREADS))
