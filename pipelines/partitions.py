"""The per-document partitions, and how a batch of documents maps onto partition-range runs.

The definition itself lives in assets/partitioning.py (assets must not import pipelines).

Keys are readable: `<file name>-<doc_id>` (h3.ontology.ids.partition_key_for), so the UI's
partition picker finds a document by its file name. Everything here takes and returns doc ids
(THE id in every JSON, table and file); a doc_id becomes its key only where Dagster needs one
(adding partitions, a run's partition tags). One document (one content) has one partition: the
same bytes under a second name keep the first key (its name is the file registered first, or
the last one registered in the same call: the one the documents row records).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from h3.assets.partitioning import (
    DOCUMENTS_PARTITIONS,
    delete_document_partitions,
    partition_keys_by_doc,
)
from h3.ontology.ids import is_legacy_partition_key, partition_key_for

__all__ = ["DOCUMENTS_PARTITIONS", "add_partitions", "contiguous_batches",
           "delete_document_partitions", "migrate_partition_keys", "partition_keys_by_doc",
           "range_tags"]

# A run in one of these states may still resolve its partition range, which needs the keys it
# names to exist: the migration waits until none such names an old-style key.
_IN_FLIGHT = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")
_PARTITION_TAGS = ("dagster/partition", "dagster/asset_partition_range_start",
                   "dagster/asset_partition_range_end")


def _sources(store, doc_ids: list[str]) -> dict[str, str | None]:
    """doc_id -> the registered source path (the documents table), for those that have a row."""
    from h3.resources.store import open_store, sql_str

    if not doc_ids:
        return {}
    store = store or open_store()
    rows = store.rows("documents", f"doc_id IN ({', '.join(sql_str(d) for d in doc_ids)})",
                      ["doc_id", "source"])
    return {r["doc_id"]: r.get("source") for r in rows}


def _name(source: str | None) -> str | None:
    return Path(source).name if source else None


def add_partitions(instance, doc_ids: list[str], sources: Mapping[str, str | None] | None = None,
                   store=None) -> list[str]:
    """Adds a partition for each document that has none yet (in the given order); returns the
    keys added. A key's name comes from `sources` (doc_id -> path), else from the documents row.
    Old-style keys of the store are renamed first (`migrate_partition_keys`)."""
    migrate_partition_keys(instance, store)
    existing = partition_keys_by_doc(instance)
    new = [d for d in dict.fromkeys(doc_ids) if d not in existing]
    if not new:
        return []
    names = dict(sources or {})
    missing = [d for d in new if not names.get(d)]
    names.update(_sources(store, missing))
    keys = [partition_key_for(_name(names.get(d)), d) for d in new]
    instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS.name, keys)
    return keys


def migrate_partition_keys(instance, store=None) -> dict[str, str]:
    """Renames old-style partitions (key = the bare doc_id) to readable keys; returns {old: new}.

    Dagster cannot rename a dynamic partition, so the readable keys are added (in the old keys'
    order, after every existing key) and then the old ones deleted. The materialisation history
    (runs, events, the asset's Materialized/Failed statuses) stays recorded under the old keys,
    which no longer show in the partition list; the new partitions start without history until
    their document's next run. Nothing in the store changes: doc ids, rows, staged payloads and
    KV are all named by the doc_id, which is also the new key's suffix. Idempotent: a store
    without old keys, or one already migrated, is left as it is. Postponed (returns {}) while a
    run that names an old key is queued or running: its partition range must keep existing."""
    from dagster import DagsterRunStatus, RunsFilter

    keys = instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS.name)
    old = [k for k in keys if is_legacy_partition_key(k)]
    if not old:
        return {}
    legacy = set(old)
    in_flight = instance.get_runs(filters=RunsFilter(
        statuses=[DagsterRunStatus[s] for s in _IN_FLIGHT]))
    if any(run.tags.get(t) in legacy for run in in_flight for t in _PARTITION_TAGS):
        return {}
    names = _sources(store, old)
    renamed = {k: partition_key_for(_name(names.get(k)), k) for k in old}
    instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS.name, list(renamed.values()))
    for key in old:
        instance.delete_dynamic_partition(DOCUMENTS_PARTITIONS.name, key)
    return renamed


def contiguous_batches(instance, doc_ids: list[str], batch_size: int) -> list[list[str]]:
    """Splits doc_ids into runs of at most batch_size documents whose partitions are adjacent in
    the partition order, so each batch is exactly one partition range (a range includes every
    key between its ends)."""
    position = {k: i for i, k in enumerate(instance.get_dynamic_partitions(
        DOCUMENTS_PARTITIONS.name))}
    order = {d: position[k] for d, k in partition_keys_by_doc(instance).items()}
    ids = sorted(set(doc_ids), key=lambda d: order[d])
    batches: list[list[str]] = []
    for doc_id in ids:
        if batches and len(batches[-1]) < batch_size and order[doc_id] == order[batches[-1][-1]] + 1:
            batches[-1].append(doc_id)
        else:
            batches.append([doc_id])
    return batches


def range_tags(batch: list[str], instance) -> dict[str, str]:
    """Run tags that make one run cover the partition range of the documents batch[0]..batch[-1]
    (doc ids, as `contiguous_batches` returns them; mapped to their keys through `instance`)."""
    keys = partition_keys_by_doc(instance)
    first, last = keys.get(batch[0], batch[0]), keys.get(batch[-1], batch[-1])
    if len(batch) == 1:
        return {"dagster/partition": first}
    return {"dagster/asset_partition_range_start": first,
            "dagster/asset_partition_range_end": last}
