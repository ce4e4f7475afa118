"""`import lancedb` without a second of start-up spent on a client no local store calls.

lancedb imports lance-namespace's generated REST client, whose ~370 API methods are wrapped in
pydantic's `validate_call` and whose ~200 request and response models are pydantic models;
pydantic builds each wrapper's and each model's validator when the module is imported: about
0.9 s (the wrappers) and then 0.45 s (the models) of `h3 recall` from the shell, for HTTP calls a
store under $H3_HOME never makes. Importing that client with `defer_build` (pydantic's own
setting: a wrapper or model builds its validator on its first use instead) keeps every check the
client makes, and moves the cost to the first use that needs it: never, here. (`import lancedb`
measured 1.27 s before the models were deferred, 0.62 s after, beside a running ingestion.)
"""

from __future__ import annotations

import sys
from types import ModuleType

import pydantic

_REST_CLIENT = "lance_namespace_urllib3_client"


def import_lancedb() -> ModuleType:
    """The `lancedb` module (imported once per process; later calls return it at once)."""
    if "lancedb" in sys.modules:
        return sys.modules["lancedb"]
    if _REST_CLIENT in sys.modules:  # someone imported the client already: nothing to save
        import lancedb

        return lancedb
    eager = pydantic.validate_call

    def deferred(func=None, /, *, config=None, validate_return=False):  # noqa: ANN001, ANN202
        return eager(func, config={**(config or {}), "defer_build": True},
                     validate_return=validate_return)

    def deferred_config(**settings):  # noqa: ANN003, ANN202
        return eager_config(**{**settings, "defer_build": True})

    eager_config = pydantic.ConfigDict
    # the client reads both at import (`from pydantic import`)
    pydantic.validate_call, pydantic.ConfigDict = deferred, deferred_config
    try:
        import lancedb
    finally:
        pydantic.validate_call, pydantic.ConfigDict = eager, eager_config
    return lancedb
