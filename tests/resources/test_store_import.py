"""Opening the store imports lancedb with lance-namespace's REST client built lazily
(resources/store/lancedb_import.py): the client's calls and models still validate what they are
given, and pydantic
is left as it was for everyone else."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import pydantic
eager, eager_config = pydantic.validate_call, pydantic.ConfigDict
from h3.resources.store.lancedb_import import import_lancedb
lancedb = import_lancedb()
assert pydantic.validate_call is eager, "pydantic.validate_call was not restored"
assert pydantic.ConfigDict is eager_config, "pydantic.ConfigDict was not restored"
from lance_namespace_urllib3_client.models import DescribeTableRequest
assert not DescribeTableRequest.__pydantic_complete__  # built on first use, not at import
try:
    DescribeTableRequest(id=5)
except pydantic.ValidationError:
    print("model validated")
else:
    raise SystemExit("the REST client's models no longer validate")
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

class Later(pydantic.BaseModel):  # a model defined after the import: built at once
    model_config = pydantic.ConfigDict(frozen=True)
    n: int
assert Later.__pydantic_complete__ and Later(n="4").n == 4
"""


def test_lancedb_import_keeps_the_clients_checks_and_restores_pydantic():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "validated: 2 errors" in done.stdout and "model validated" in done.stdout
