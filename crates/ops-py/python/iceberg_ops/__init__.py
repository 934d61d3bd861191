"""iceberg-ops: operate Apache Iceberg tables from Python, on a Rust core.

The seed library's modules keep their paths:

- :mod:`iceberg_ops.data_migration` — ``DataMigrator``, ``SchemaReconciler``,
  ``CheckpointStore`` and their results;
- :mod:`iceberg_ops.runner` — ``MigrationRunner``, ``Migration`` and ``normalize_version``;
- :mod:`iceberg_ops.history` — ``MigrationHistory`` and ``ConcurrentMigrationError``;
- :mod:`iceberg_ops.core.catalog` — ``CatalogFactory``.

Work runs in Rust (``iceberg_ops._native``) with the GIL released; structured values cross as
JSON, Arrow data through the Arrow PyCapsule interface without copies.
"""

from iceberg_ops._native import __version__

__all__ = ["__version__"]
