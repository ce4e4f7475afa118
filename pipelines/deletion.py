"""Deleting documents: `delete_document(doc_id)` for scripts, and the `delete_documents` job the
inbox sensor launches when a PDF disappears (so every deletion is a run in the Dagster UI)."""

from dagster import Config, MetadataValue, OpExecutionContext, job, op

from h3.assets.partitioning import delete_document_partitions
from h3.resources.store import DocumentStoreResource, open_store
from h3.resources.store.deletion import PurgeReport, check_doc_id, purge_document


def delete_document(doc_id: str, instance=None, store=None) -> PurgeReport:
    """Removes the document's rows (every doc-scoped table), the knowledge-graph nodes only it
    supported, its figure crops, token vectors, staged payloads, cold KV, and its Dagster
    partition. Idempotent. `instance` defaults to this H3_HOME's Dagster instance."""
    check_doc_id(doc_id)
    if instance is None:
        from h3.pipelines.instance import get_instance

        instance = get_instance()
    report = purge_document(store or open_store(), doc_id)
    delete_document_partitions(instance, doc_id)  # its readable key (or an old-style one)
    return report


class DeleteConfig(Config):
    doc_ids: list[str]
    reason: str = "removed"


@op(description="Removes each listed document everywhere (rows, graph nodes, files, KV, "
                "partition).")
def delete_documents_op(context: OpExecutionContext, config: DeleteConfig,
                        store: DocumentStoreResource) -> None:
    db = store.get_store()
    rows = []
    for doc_id in config.doc_ids:
        report = delete_document(doc_id, instance=context.instance, store=db).as_dict()
        context.log.info(f"deleted {doc_id} ({config.reason}): {report}")
        rows.append(f"| {doc_id} | {sum(report['rows'].values())} | "
                    f"{report['entities_removed']} | {report['files_removed']} | "
                    f"{report['kv_removed']} |")
    table = ["| doc_id | rows | graph nodes | files | KV |", "|---|---|---|---|---|", *rows]
    context.add_output_metadata({"documents": len(config.doc_ids),
                                 "deleted": MetadataValue.md("\n".join(table))})


@job(description="Deletes documents whose PDF left the inbox: rows, graph nodes only they "
                 "supported, figure crops, cold KV, partitions.")
def delete_documents() -> None:
    delete_documents_op()
