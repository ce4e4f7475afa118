"""Jobs of the reuse and analysis stages (kept apart from ingestion: prefilling a document's KV
costs ~10 s per 1K tokens on 2 CPU cores, so `h3 index-build` does not wait for it).

- `precompute_kv`: per document, the cold-tier KV only (`h3 index-build --with-kv` runs it).
- `prefill_and_analyse`: per document, the cold-tier KV then its summary and key facts.
- `cross_check_documents`: the cross-document check over every analysed document.
"""

from __future__ import annotations

from dagster import AssetSelection, define_asset_job

from h3.assets.partitioning import DOCUMENTS_PARTITIONS

precompute_kv_job = define_asset_job(
    "precompute_kv",
    selection=AssetSelection.assets("document_kv"),
    partitions_def=DOCUMENTS_PARTITIONS,
    description="Document KV prefilled once into the cold tier, so that the first `h3 ask "
                "--doc` loads it instead of computing it.",
)

prefill_and_analyse_job = define_asset_job(
    "prefill_and_analyse",
    selection=AssetSelection.assets("document_kv", "document_summary", "key_facts"),
    partitions_def=DOCUMENTS_PARTITIONS,
    description="Document KV prefilled once into the cold tier, then summary + key facts "
                "generated over it (cold reuse).",
)

cross_check_job = define_asset_job(
    "cross_check_documents",
    selection=AssetSelection.assets("cross_document_checks"),
    description="Checks that amounts, dates and parties agree across the analysed documents.",
)
