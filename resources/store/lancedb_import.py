"""`import lancedb` without a second of start-up spent on a client no local store calls.

lancedb imports lance-namespace's generated REST client, whose ~370 API methods are wrapped in
pydantic's `validate_call`; pydantic builds each wrapper's validator when the module is imported:
about 0.9 s of a 2.6 s `h3 recall` from the shell, for HTTP calls a store under $H3_HOME never
makes. Importing that client with `defer_build` (pydantic's own setting: a wrapper builds its
validator on its first call instead) keeps every check the client makes, and moves the cost to
the first call that needs it: never, here.
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

    pydantic.validate_call = deferred  # the client reads it at import (`from pydantic import`)
    try:
        import lancedb
    finally:
        pydantic.validate_call = eager
    return lancedb
