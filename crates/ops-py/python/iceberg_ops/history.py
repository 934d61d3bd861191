"""MigrationHistory — migration records as an Iceberg table in a meta-namespace of the user's
own catalog (``_iceberg_ops.migration_history`` by default).

One row per ``(version, namespace)`` holds its latest status. A write that finds the key's row
changed by another process since this handle last read it raises
:class:`ConcurrentMigrationError`; a write that loses a race against other keys is retried.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from iceberg_ops import _native, _tables

if TYPE_CHECKING:
    import pyarrow as pa


class _Schema:
    """``MigrationHistory.SCHEMA``, built (and pyarrow imported) on first use."""

    def __get__(self, obj: object, owner: type) -> pa.Schema:
        import pyarrow as pa

        return pa.schema(
            [
                pa.field("version", pa.large_string(), nullable=False),
                pa.field("namespace", pa.large_string(), nullable=False),
                pa.field("description", pa.large_string()),
                pa.field("applied_at", pa.large_string(), nullable=False),
                pa.field("status", pa.large_string(), nullable=False),
                pa.field("error", pa.large_string()),
            ]
        )
from iceberg_ops._native import ConcurrentMigrationError

__all__ = ["ConcurrentMigrationError", "MigrationHistory"]

_COLUMNS = ("version", "namespace", "description", "applied_at", "status", "error")


class MigrationHistory:
    """Iceberg-backed migration state store.

    The meta-namespace and its ``migration_history`` table are created on first write; reads
    of an absent table return nothing and create nothing.

    Args:
        catalog: The live PyIceberg catalog.
        meta_namespace: Namespace for framework metadata (default ``"_iceberg_ops"``).
    """

    SCHEMA = _Schema()

    def __init__(self, catalog: Any, meta_namespace: str = "_iceberg_ops") -> None:
        self.catalog = catalog
        self.meta_namespace = meta_namespace
        self._native = _native.NativeHistory(
            json.dumps(_tables.catalog_spec(catalog, "catalog")), meta_namespace
        )

    def record_applied(self, version: str, namespace: str, description: str) -> None:
        """Record ``version`` of ``namespace`` as applied."""
        self._native.record("applied", version, namespace, description)

    def record_rolled_back(self, version: str, namespace: str, description: str) -> None:
        """Record ``version`` of ``namespace`` as rolled back."""
        self._native.record("rolled_back", version, namespace, description)

    def record_failed(self, version: str, namespace: str, description: str, error: str) -> None:
        """Record a failed attempt; ``error`` is truncated to 2000 characters."""
        self._native.record("failed", version, namespace, description, str(error)[:2000])

    def get_applied_versions(self, namespace: str) -> set[str]:
        """The versions whose current status is ``"applied"``."""
        return {r["version"] for r in self.get_all(namespace) if r["status"] == "applied"}

    def get_all(self, namespace: str) -> list[dict[str, Any]]:
        """The current row of every version of ``namespace``, ascending by version."""
        rows = json.loads(self._native.get_all(namespace))
        return sorted(({k: r.get(k) for k in _COLUMNS} for r in rows), key=lambda r: r["version"])
