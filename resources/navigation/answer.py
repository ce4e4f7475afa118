"""`h3 ask --doc`'s navigated evidence: the branch a question takes through its document's tree,
as evidence hits, and what `--json` reports of it (`stats.navigation`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from h3.resources.navigation.navigate import Branch, choose
from h3.resources.navigation.store import DocumentTree, document_tree
from h3.resources.settings import load_config
from h3.resources.store import DocumentStore

if TYPE_CHECKING:
    import numpy as np


def navigated_evidence(db: DocumentStore, doc: str, question: str,
                       embed: Callable[[list[str]], np.ndarray] | None = None
                       ) -> tuple[list[dict], Branch, DocumentTree]:
    """The passages of the branch `question` takes through the document `doc` names (doc id,
    partition key or file name), as evidence hits in reading order; the branch; the tree.
    Raises LookupError naming `doc` when it is not stored or has no chunks."""
    tree = document_tree(db, doc)
    if embed is None:
        from h3.resources.models.embedder import get_embedder

        embed = get_embedder().encode
    nav = load_config().navigation  # the branch's size: navigation.branch_* keys
    branch = choose(question, tree.sections, tree.chunks, embed([question])[0],
                    sections=nav.branch_sections, max_tokens=nav.branch_tokens,
                    max_share=nav.branch_share)
    evidence = [{"doc_id": tree.doc_id, "source": tree.source, "page": int(r["page"]),
                 "bbox": list(r.get("bbox") or []), "kind": "text", "text": r["text"],
                 "score": 0.0, "via": "navigation"} for r in branch.chunks]
    return evidence, branch, tree


def navigation_stats(branch: Branch, tree: DocumentTree) -> dict:
    """The branch taken: its parts (ids, titles, pages), passages and tokens against the
    document's, and whether the tree was stored or built now."""
    out = {"sections": branch.to_json(), "passages": len(branch.chunks),
           "branch_tokens": branch.tokens, "document_tokens": branch.doc_tokens,
           "tree": "stored" if tree.stored else "built from stored chunks"}
    if tree.origin_note:
        out["note"] = tree.origin_note
    return out


def kv_stats(bytes_per_token: int, generated: dict, parts_kv: dict, branch: Branch) -> dict:
    """KV loaded for the answer and from which tier, beside an estimate of the whole
    document's (its chunks' tokens x the model's bytes per token)."""
    return {"kv_bytes_loaded": int(generated.get("kv_tokens_loaded_cold", 0)) * bytes_per_token,
            "kv_tier": "cold", "kv_bytes_computed":
                int(generated.get("prefill_tokens_computed", 0)) * bytes_per_token,
            "document_kv_bytes_estimate": branch.doc_tokens * bytes_per_token, **parts_kv}
