"""Opening the store imports lancedb with lance-namespace's REST client built lazily
(resources/store/lancedb_import.py): the client still validates what it is given, and pydantic
is left as it was for everyone else."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import pydantic
eager = pydantic.validate_call
from h3.resources.store.lancedb_import import import_lancedb
lancedb = import_lancedb()
assert pydantic.validate_call is eager, "pydantic.validate_call was not restored"
assert import_lancedb() is lancedb
from lance_namespace_urllib3_client.api.table_api import TableApi
try:
    TableApi().describe_table(id=5, describe_table_request=object())
except pydantic.ValidationError as exc:
    print("validated:", exc.error_count(), "errors")
else:
    raise SystemExit("the REST client no longer validates its arguments")

@pydantic.validate_call
def later(n: int) -> int:  # defined after the import: built at once, as pydantic does
    return n
assert later("3") == 3
"""


def test_lancedb_import_keeps_the_clients_checks_and_restores_pydantic():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "validated: 2 errors" in done.stdout
