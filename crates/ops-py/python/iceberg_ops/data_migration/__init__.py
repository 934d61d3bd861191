"""Cross-table, schema-reconciling, streaming Iceberg-to-Iceberg data migration.

The names are importable from this package or from their submodules (``.migrator``,
``.reconciler``, ``.checkpoint``); both bindings are the same objects.
"""

from iceberg_ops.data_migration.checkpoint import CheckpointError, CheckpointStore
from iceberg_ops.data_migration.migrator import (
    DataMigrator,
    MigrationResult,
    PartitionStrategy,
    VerificationResult,
)
from iceberg_ops.data_migration.reconciler import (
    ColumnProjection,
    ReconciliationPlan,
    SchemaReconciler,
)

__all__ = [
    "CheckpointError",
    "CheckpointStore",
    "ColumnProjection",
    "DataMigrator",
    "MigrationResult",
    "PartitionStrategy",
    "ReconciliationPlan",
    "SchemaReconciler",
    "VerificationResult",
]
