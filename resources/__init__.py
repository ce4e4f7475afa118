"""H³'s Dagster resources and the domain library they wrap (store, recall, answers, nlp, models).

The two a user's own assets call are importable from here:

    from h3.resources import H3RuntimeResource, DocumentStoreResource

`DocumentStoreResource.recall(query, k=5, mode="auto") -> list[Hit]` and
`H3RuntimeResource.ask(question, doc_id=None, k=5) -> Answer`. They load lazily (PEP 562):
`import h3.resources.recall` from the command line must not wait for Dagster to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from h3.resources.runtime import H3RuntimeResource
    from h3.resources.store.resource import DocumentStoreResource

__all__ = ["DocumentStoreResource", "H3RuntimeResource"]


def __getattr__(name: str) -> Any:
    if name == "H3RuntimeResource":
        from h3.resources.runtime import H3RuntimeResource

        return H3RuntimeResource
    if name == "DocumentStoreResource":
        from h3.resources.store.resource import DocumentStoreResource

        return DocumentStoreResource
    raise AttributeError(f"module 'h3.resources' has no attribute {name!r}")
