"""Stable ids: a document's id comes from its content, so the same bytes get the same id anywhere."""

from __future__ import annotations

import hashlib
import re
import unicodedata


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def doc_id_for_bytes(data: bytes) -> str:
    """16 hex characters of the SHA-256 of the file: stable, and safe as a Dagster partition key."""
    return content_hash(data)[:16]


# --- Dagster partition keys (issue 37 item 7) -----------------------------------------------
# A document's partition key is what a person types into the Dagster UI's partition picker: the
# file's name, sanitised and cut short, then "-" and the doc_id, e.g.
# `annual-report-2023.pdf-3f9a1c2b4d5e6f70`. The suffix is the whole doc_id (itself the short
# content hash: 16 hex of the file's SHA-256), so a key maps back to its doc_id without any
# lookup, in every process (dask workers, IO managers); the doc_id stays THE id in every JSON
# output, table and file name. Stores made before keys were readable used the bare doc_id as the
# key; `doc_id_of_partition` still reads those (pipelines/partitions.py renames them).
DOC_ID_PATTERN = re.compile(r"[0-9a-f]{16}")
PARTITION_NAME_CHARS = 60  # of the file name's stem, after sanitising
UNNAMED = "document"  # the name part when the file's name is unknown (a partition without a row)
_KEY_SUFFIX = re.compile(r"-([0-9a-f]{16})$")
_NOT_KEPT = re.compile(r"[^\w.-]+")  # \w: letters and digits of any script, and "_"
_REPEATS = re.compile(r"([._-])[._-]+")  # "..." is Dagster's range separator: never 2 dots


def _clean(text: str) -> str:
    """Letters, digits, `.`, `_`, `-` only (Dagster refuses control characters and `...` in
    keys; `,`, `|`, `[`, `]` separate keys in its selections; `/` and a leading `.` would make
    a key a path), no run of separators, none at either end."""
    text = _NOT_KEPT.sub("-", unicodedata.normalize("NFC", text))
    return _REPEATS.sub(r"\1", text).strip("._-")


def partition_key_for(file_name: str | None, doc_id: str) -> str:
    """The readable partition key of `doc_id`, registered as `file_name` (a name or a path; only
    its last part counts): `<stem cut to PARTITION_NAME_CHARS><.ext>-<doc_id>`."""
    if not DOC_ID_PATTERN.fullmatch(doc_id or ""):
        raise ValueError(f"not a document id: {doc_id!r} (expected 16 lowercase hex characters)")
    name = re.split(r"[\\/]", file_name or "")[-1]
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem.strip(".") or len(ext) > 8:  # no extension, a dotfile, a long tail
        stem, ext = name, ""
    stem = _clean(stem)[:PARTITION_NAME_CHARS].rstrip("._-") or UNNAMED
    ext = _clean(ext)
    return f"{stem}.{ext}-{doc_id}" if ext else f"{stem}-{doc_id}"


def doc_id_of_partition(key: str) -> str:
    """The doc_id a document partition key names: its `-<16 hex>` suffix, or the key itself for
    an old-style key (the bare doc_id). Raises ValueError for anything else."""
    if DOC_ID_PATTERN.fullmatch(key or ""):
        return key
    found = _KEY_SUFFIX.search(key or "")
    if found is None:
        raise ValueError(f"not a document partition key: {key!r} (expected "
                         "<file name>-<16 hex doc_id>)")
    return found.group(1)


def is_legacy_partition_key(key: str) -> bool:
    """Whether `key` is an old-style partition key: the bare doc_id."""
    return bool(DOC_ID_PATTERN.fullmatch(key or ""))
