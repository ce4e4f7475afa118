"""The per-document partitions, and how a batch of documents maps onto partition-range runs.

The definition itself lives in assets/partitioning.py (assets must not import pipelines)."""

from __future__ import annotations

from h3.assets.partitioning import DOCUMENTS_PARTITIONS

__all__ = ["DOCUMENTS_PARTITIONS", "add_partitions", "contiguous_batches", "range_tags"]


def add_partitions(instance, doc_ids: list[str]) -> list[str]:
    """Adds the partitions that do not exist yet (in the given order); returns those added."""
    existing = set(instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS.name))
    new = [d for d in dict.fromkeys(doc_ids) if d not in existing]
    if new:
        instance.add_dynamic_partitions(DOCUMENTS_PARTITIONS.name, new)
    return new


def contiguous_batches(instance, doc_ids: list[str], batch_size: int) -> list[list[str]]:
    """Splits doc_ids into runs of at most batch_size keys that are adjacent in the partition
    order, so each batch is exactly one partition range (a range includes every key between its
    ends)."""
    order = {k: i for i, k in enumerate(instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS.name))}
    keys = sorted(set(doc_ids), key=lambda k: order[k])
    batches: list[list[str]] = []
    for key in keys:
        if batches and len(batches[-1]) < batch_size and order[key] == order[batches[-1][-1]] + 1:
            batches[-1].append(key)
        else:
            batches.append([key])
    return batches


def range_tags(batch: list[str]) -> dict[str, str]:
    """Run tags that make one run cover the partition range batch[0]..batch[-1]."""
    if len(batch) == 1:
        return {"dagster/partition": batch[0]}
    return {"dagster/asset_partition_range_start": batch[0],
            "dagster/asset_partition_range_end": batch[-1]}
