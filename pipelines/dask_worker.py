"""Preloaded by every dask worker of an H³ cluster: `dask worker tcp://host:8786 --nthreads 1
--preload pipelines.dask_worker` (the LocalCluster of pipelines/scaleout.py does the same).

Why a preload: a dask worker is one long-lived process that runs step after step, so the models
that the resources keep in module-level caches (resources/models/*: `_MODELS`, `functools.cache`)
load on a worker's first step and stay loaded for every later one; importing the code location
here moves torch's and Dagster's import cost out of the first step too. The H3_HOME check makes a
worker that cannot reach the shared folder refuse to start with one line, instead of failing
steps later.
"""

from __future__ import annotations

import logging

log = logging.getLogger("h3.dask_worker")


def dask_setup(worker) -> None:
    import signal
    import threading

    from h3_runtime.home import h3_home

    # A worker started by a process that ignores SIGTERM inherits that, and so does every
    # process it starts: Dagster's log capture stops its `tail` processes with SIGTERM and waits
    # 30 s for each, so every step took a minute longer. How a parent comes to ignore it:
    # started in the background of a script (SIGINT ignored), its first Dagster run maps
    # SIGTERM to SIGINT's handler and leaves it so (dagster._utils.interrupts).
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN \
            and threading.current_thread() is threading.main_thread():  # (signal's rule)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    home = h3_home()  # raises H3HomeError naming the folder when it is not writable
    import h3.pipelines.definitions  # noqa: F401  (heavy imports once per worker process)

    log.info("h3 worker %s ready on H3_HOME %s", worker.address, home)


def loaded_models() -> list[str]:
    """The models this process holds (for `client.run`: shows they outlive a step)."""
    from h3.resources.models import embedder, layout

    return sorted([f"sbert:{k}" for k in embedder._MODELS] + [f"layout:{k}" for k in layout._MODELS])
