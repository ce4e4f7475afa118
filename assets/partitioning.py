"""The per-document partitioning shared by every ingestion asset (key = doc_id, 16 hex)."""

import warnings

from dagster import BetaWarning, DynamicPartitionsDefinition

# Every ingestion asset uses BackfillPolicy.single_run() (one run covers many documents, which is
# what keeps ingestion fast); the parameter is marked beta in dagster 1.13 and warns on each use,
# as do other beta parameters dagster itself passes (sensor owners): noise for CLI users.
warnings.filterwarnings("ignore", category=BetaWarning)

DOCUMENTS_PARTITIONS = DynamicPartitionsDefinition(name="documents")
