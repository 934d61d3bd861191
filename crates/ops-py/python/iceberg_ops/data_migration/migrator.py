"""Streaming, schema-reconciling, resumable Iceberg-to-Iceberg data migration.

A :class:`DataMigrator` reads a source Iceberg table at a pinned snapshot, projects each batch
through a :class:`~iceberg_ops.data_migration.reconciler.SchemaReconciler`, and writes to a
destination Iceberg table — appending, upserting, or partition-overwriting per ``write_mode`` —
one catalog commit per batch of at most ``batch_rows`` rows, recorded in a
:class:`~iceberg_ops.data_migration.checkpoint.CheckpointStore` so a crashed run resumes.

The migration runs in Rust with the GIL released: the tables are opened from their PyIceberg
catalogs' properties and identifiers, so its commits show in your ``Table`` objects after
``table.refresh()``. Ctrl-C raises ``KeyboardInterrupt`` at an await point; the checkpoint is
intact and the same call resumes. See the iceberg-ops documentation for the algorithm, the
resume rules and the verify methods; they are the ``iceberg-ops migrate-data`` command's.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal

from iceberg_ops import _native, _tables
from iceberg_ops.data_migration.checkpoint import CheckpointStore
from iceberg_ops.data_migration.reconciler import (
    ReconciliationPlan,
    SchemaReconciler,
    _LazyPlan,
)

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

__all__ = ["DataMigrator", "MigrationResult", "PartitionStrategy", "VerificationResult"]

_WRITE_MODES = ("append", "upsert", "overwrite_partition")
_VERIFY_METHODS = ("row_count", "partition_hash", "sample")
_COPY_MODES = ("auto", "rewrite", "files", "reference")
_DUPLICATE_KEYS = ("error", "last")
# What JSON carries to Rust exactly (a u64 / usize there).
_MAX_INT = 2**63 - 1


class PartitionStrategy(str, Enum):
    """How the migrator treats the destination partition spec.

    Only ``PRESERVE`` is implemented: the destination's own spec dictates the layout.
    """

    PRESERVE = "preserve"

    def __str__(self) -> str:
        return self.value


@dataclass
class MigrationResult:
    """Outcome of :meth:`DataMigrator.run`.

    The seed's fields first; then what iceberg-ops adds (file routes, batches, the job id).
    """

    rows_moved: int = 0
    bytes_moved: int = 0
    new_snapshots: list[int] = field(default_factory=list)
    schema_changes: list[str] = field(default_factory=list)
    duration_seconds: float = 0.0
    checkpoint_path: Path | None = None
    dry_run: bool = False
    estimated_rows: int | None = None
    estimated_bytes: int | None = None
    plan: ReconciliationPlan | None = None
    dest_snapshot_before: int | None = None
    rows_inserted: int | None = None
    rows_updated: int | None = None
    #: Source data files copied byte for byte, referenced in place, or decoded and rewritten.
    files_copied: int = 0
    files_referenced: int = 0
    files_rewritten: int = 0
    #: Batches this run committed, and those skipped because the checkpoint had them.
    batches_committed: int = 0
    batches_skipped: int = 0
    #: The job id stamped into every snapshot summary (``iceberg-ops.migration-job``).
    job_id: str | None = None
    #: The source snapshot read.
    source_snapshot_id: int | None = None
    #: What the run warned of as it started (each also raised as a ``UserWarning``): another
    #: job's marker on the destination, or a completed job that wrote the rows this append adds.
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def _from_json(cls, text: str, plan: ReconciliationPlan | None) -> MigrationResult:
        raw = json.loads(text)
        names = {f for f in cls.__dataclass_fields__ if f != "plan"}
        values = {k: v for k, v in raw.items() if k in names}
        if values.get("checkpoint_path") is not None:
            values["checkpoint_path"] = Path(values["checkpoint_path"])
        return cls(plan=plan, **values)


@dataclass
class VerificationResult:
    """Outcome of :meth:`DataMigrator.verify`."""

    method: str
    matches: bool
    source_count: int | None = None
    dest_count: int | None = None
    sample_size: int | None = None
    mismatched_partitions: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    @classmethod
    def _from_json(cls, text: str) -> VerificationResult:
        raw = json.loads(text)
        return cls(**{k: v for k, v in raw.items() if k in cls.__dataclass_fields__})


class DataMigrator:
    """Streaming, schema-reconciling, resumable cross-table migrator.

    Args:
        source: Source table: a PyIceberg ``Table`` loaded from a catalog, or a
            ``(catalog, "namespace.table")`` tuple (a catalog object or a catalog name).
        dest: Destination table, in the same or another catalog.
        schema_reconciler: Source -> destination mapping; default: strict (errors on any
            mismatch).
        partition_strategy: Only ``PartitionStrategy.PRESERVE``.
        row_filter: A filter string (``"region = 'eu' AND qty >= 10"``) or a PyIceberg
            ``BooleanExpression``; default: every row.
        source_snapshot: Pin the read to this snapshot id; default: the current one.
        batch_rows: Rows per destination commit (default 50,000).
        write_mode: ``"append"``, ``"upsert"`` (needs ``upsert_keys``) or
            ``"overwrite_partition"``.
        upsert_keys: Key columns of an upsert.
        checkpoint: A :class:`CheckpointStore`; an existing file is resumed when it matches.
        progress: ``progress(rows_done, rows_total_or_none)``, called after each commit.
        dry_run: Plan and read without writing.
        on_duplicate_keys: An iceberg-ops extension (keyword only), for upserts: ``"error"``
            (default) refuses, before anything is written, a source in which a key repeats;
            ``"last"`` keeps each key's last row in the read order (later commits' files after
            earlier ones), whichever batch holds it — the seed's "the later row wins", made
            independent of ``batch_rows``.
        copy_mode: An iceberg-ops extension (keyword only, after the seed's arguments): how
            source files reach the destination. ``"auto"`` (default) copies a file byte for
            byte when its columns and field ids already match the destination's (renames and
            promotions only, the same partition spec, no delete file applies, the filter
            decided by its partition) and rewrites the others; ``"rewrite"`` decodes and
            re-encodes every row, as the seed's algorithm does; ``"files"`` copies and refuses
            what cannot be; ``"reference"`` registers the source's files in place.
        create_dest: An iceberg-ops extension (keyword only): when ``dest`` names a table
            (``(catalog, "namespace.table")``) that does not exist, create it from the
            reconciled source schema and the source's partition spec, as the CLI's
            ``--create-dest`` does; without it such a destination is refused.

    Raises:
        ValueError: upsert without keys, keys for another mode, a blank or repeated key,
            ``batch_rows <= 0``, a strategy other than PRESERVE, or source and dest the same
            table (same UUID).
        TypeError: a table iceberg-ops cannot open (a ``StaticTable``, an unsupported catalog).
    """

    def __init__(
        self,
        source: Table | tuple[Any, str],
        dest: Table | tuple[Any, str],
        *,
        schema_reconciler: SchemaReconciler | None = None,
        partition_strategy: PartitionStrategy = PartitionStrategy.PRESERVE,
        row_filter: str | BooleanExpression | None = None,
        source_snapshot: int | None = None,
        batch_rows: int = 50_000,
        write_mode: Literal["append", "upsert", "overwrite_partition"] = "append",
        upsert_keys: list[str] | None = None,
        checkpoint: CheckpointStore | None = None,
        progress: Callable[[int, int | None], None] | None = None,
        dry_run: bool = False,
        copy_mode: Literal["auto", "rewrite", "files", "reference"] = "auto",
        on_duplicate_keys: Literal["error", "last"] = "error",
        create_dest: bool = False,
    ) -> None:
        if on_duplicate_keys not in _DUPLICATE_KEYS:
            raise ValueError(
                f"on_duplicate_keys={on_duplicate_keys!r}: use one of {', '.join(_DUPLICATE_KEYS)}"
            )
        if not isinstance(dry_run, bool):
            raise TypeError(f"dry_run must be True or False, not {dry_run!r}")
        if not isinstance(create_dest, bool):
            raise TypeError(f"create_dest must be True or False, not {create_dest!r}")
        if copy_mode not in _COPY_MODES:
            raise ValueError(f"copy_mode={copy_mode!r}: use one of {', '.join(_COPY_MODES)}")
        if write_mode not in _WRITE_MODES:
            raise ValueError(f"write_mode={write_mode!r}: use one of {', '.join(_WRITE_MODES)}")
        if write_mode == "upsert" and not upsert_keys:
            raise ValueError("write_mode='upsert' needs upsert_keys (the key columns)")
        if write_mode != "upsert" and upsert_keys is not None:
            raise ValueError(f"upsert_keys is only for write_mode='upsert', not {write_mode!r}")
        if upsert_keys is not None:
            if isinstance(upsert_keys, (str, bytes)):
                raise TypeError(
                    f"upsert_keys must be a list of column names, not the string {upsert_keys!r} "
                    f"(write [{upsert_keys!r}])"
                )
            keys = list(upsert_keys)
            if any(not isinstance(k, str) or not k.strip() for k in keys):
                raise ValueError(f"upsert_keys holds a blank or non-string name: {keys!r}")
            if len(set(keys)) != len(keys):
                raise ValueError(f"upsert_keys repeats a name: {keys!r}")
            upsert_keys = keys
        if (
            isinstance(batch_rows, bool)
            or not isinstance(batch_rows, int)
            or not 0 < batch_rows <= _MAX_INT
        ):
            raise ValueError(f"batch_rows must be a positive int, not {batch_rows!r}")
        if PartitionStrategy(partition_strategy) != PartitionStrategy.PRESERVE:
            raise ValueError("partition_strategy: only PartitionStrategy.PRESERVE is supported")
        if schema_reconciler is not None and not isinstance(schema_reconciler, SchemaReconciler):
            raise TypeError("schema_reconciler must be a SchemaReconciler")
        if checkpoint is not None and not isinstance(checkpoint, CheckpointStore):
            raise TypeError("checkpoint must be a CheckpointStore")
        if progress is not None and not callable(progress):
            raise TypeError("progress must be callable as progress(rows_done, rows_total)")
        if source_snapshot is not None and (
            isinstance(source_snapshot, bool) or not isinstance(source_snapshot, int)
        ):
            raise TypeError("source_snapshot must be a snapshot id (int)")
        self._source = _tables.table_spec(source, "source")
        self._dest = _tables.table_spec(dest, "dest")
        uuid = _tables.table_uuid(source)
        if uuid is not None and uuid == _tables.table_uuid(dest):
            raise ValueError(
                f"source and dest are the same table (UUID {uuid}); migrate into a different table"
            )
        self.source = source
        self.dest = dest
        self.schema_reconciler = schema_reconciler or SchemaReconciler()
        self.partition_strategy = PartitionStrategy(partition_strategy)
        self.row_filter = row_filter
        schema_of = getattr(source, "schema", None)
        schema = schema_of() if callable(schema_of) else None
        self._row_filter_text = _tables.filter_text(row_filter, schema)
        self.source_snapshot = source_snapshot
        self.batch_rows = batch_rows
        self.write_mode = write_mode
        self.upsert_keys = upsert_keys
        self.checkpoint = checkpoint
        self.progress = progress
        self.dry_run = dry_run
        self.copy_mode = copy_mode
        self.on_duplicate_keys = on_duplicate_keys
        self.create_dest = create_dest
        self._last_source_snapshot: int | None = None

    def _job(self, source_snapshot: int | None) -> str:
        return json.dumps(
            {
                "source": self._source,
                "dest": self._dest,
                "reconciler": json.loads(self.schema_reconciler._to_json()),
                "row_filter": self._row_filter_text,
                "source_snapshot": source_snapshot,
                "batch_rows": self.batch_rows,
                "write_mode": self.write_mode,
                "upsert_keys": self.upsert_keys,
                "checkpoint": None if self.checkpoint is None else str(self.checkpoint.path),
                "dry_run": bool(self.dry_run),
                "copy_mode": self.copy_mode,
                "on_duplicate_keys": self.on_duplicate_keys,
                "create_dest": bool(self.create_dest),
            }
        )

    def run(self) -> MigrationResult:
        """Execute the migration (see the module docstring).

        Raises:
            CheckpointError: the checkpoint cannot be resumed (completed, other settings, its
                snapshot gone, its batches no longer in the destination); before any write.
            ValueError: the schemas cannot be reconciled, or the write mode's conditions fail
                (before any write); an upsert batch with a repeated key (earlier batches stay
                committed).
        """
        text, native_plan = _native.run_migration(self._job(self.source_snapshot), self.progress)
        plan = None if native_plan is None else _LazyPlan(native_plan)
        result = MigrationResult._from_json(text, plan)
        self._last_source_snapshot = result.source_snapshot_id
        for message in result.warnings:
            # Python shows no `tracing` log: a warning Python users see.
            warnings.warn(message, UserWarning, stacklevel=2)
        return result

    def verify(
        self,
        *,
        method: Literal["row_count", "partition_hash", "sample"] = "row_count",
        sample_size: int = 100,
    ) -> VerificationResult:
        """Compare the destination with the source (filtered and pinned as the run read it).

        The source is read at ``source_snapshot``, else at the snapshot the last :meth:`run`
        read, else at its current snapshot.

        Raises:
            ValueError: an unknown method, or ``sample_size <= 0`` for ``"sample"``.
        """
        if method not in _VERIFY_METHODS:
            raise ValueError(f"method={method!r}: use one of {', '.join(_VERIFY_METHODS)}")
        if method == "sample" and (
            isinstance(sample_size, bool)
            or not isinstance(sample_size, int)
            or not 0 < sample_size <= _MAX_INT
        ):
            raise ValueError(f"sample_size must be a positive int, not {sample_size!r}")
        snapshot = self.source_snapshot
        if snapshot is None:
            snapshot = self._last_source_snapshot
        size = sample_size if isinstance(sample_size, int) and 0 < sample_size <= _MAX_INT else 1
        text = _native.verify_migration(self._job(snapshot), method, size)
        return VerificationResult._from_json(text)
