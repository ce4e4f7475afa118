"""The per-document partitioning shared by every ingestion asset.

Key = the file's name and its doc_id, e.g. `annual-report-2023.pdf-3f9a1c2b4d5e6f70`
(h3.ontology.ids.partition_key_for): readable in the Dagster UI's partition picker, and mapped
back to the doc_id (THE id of every payload, row and file) by `doc_id_of_partition`, with no
lookup. Old stores' bare-doc_id keys still map; pipelines/partitions.py renames them."""

import warnings

from dagster import BackfillPolicy, BetaWarning, DynamicPartitionsDefinition, asset

from h3.ontology.ids import doc_id_of_partition

# Every ingestion asset uses BackfillPolicy.single_run() (one run covers many documents, which is
# what keeps ingestion fast); the parameter is marked beta in dagster 1.13 and warns on each use,
# as do other beta parameters dagster itself passes (sensor owners): noise for CLI users.
warnings.filterwarnings("ignore", category=BetaWarning)

DOCUMENTS_PARTITIONS = DynamicPartitionsDefinition(name="documents")


def document_asset(**kwargs):
    """`@asset` for a per-document stage: a partition per document, payloads staged as JSON
    (staging_io), one run covering a whole batch of documents (single_run backfills)."""
    return asset(partitions_def=DOCUMENTS_PARTITIONS, io_manager_key="staging_io",
                 backfill_policy=BackfillPolicy.single_run(), **kwargs)


def partition_keys_by_doc(instance) -> dict[str, str]:
    """doc_id -> its partition key, for every document partition (in partition order; a
    document with two keys, e.g. mid-migration, maps to its last one)."""
    out: dict[str, str] = {}
    for key in instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS.name):
        try:
            out[doc_id_of_partition(key)] = key
        except ValueError:  # not a document key (added by hand): no document of ours
            continue
    return out


def delete_document_partitions(instance, doc_id: str) -> list[str]:
    """Deletes every partition of `doc_id` (its readable key, an old-style one); returns them."""
    keys = []
    for key in instance.get_dynamic_partitions(DOCUMENTS_PARTITIONS.name):
        try:
            if doc_id_of_partition(key) == doc_id:
                keys.append(key)
        except ValueError:
            continue
    for key in keys:
        instance.delete_dynamic_partition(DOCUMENTS_PARTITIONS.name, key)
    return keys
