"""Stable ids: a document's id comes from its content, so the same bytes get the same id anywhere."""

from __future__ import annotations

import hashlib


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def doc_id_for_bytes(data: bytes) -> str:
    """16 hex characters of the SHA-256 of the file: stable, and safe as a Dagster partition key."""
    return content_hash(data)[:16]
