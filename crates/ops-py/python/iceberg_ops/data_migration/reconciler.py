"""Schema reconciliation primitive for the cross-table data migrator.

A :class:`SchemaReconciler` declares how to map a source Iceberg schema to a destination
Iceberg schema — column renames, type coercions, and policies for columns missing from one
side. It produces a :class:`ReconciliationPlan` with a per-dest-column
:class:`ColumnProjection`, and projects individual ``pyarrow.RecordBatch`` instances against
that plan in O(rows x columns) memory.

Casts are safe as pyarrow's default cast is: a value the cast would change (a fraction cut
off, an integer rounded to a double, a timestamp losing precision) raises
``pyarrow.lib.ArrowInvalid`` naming the column and the value, unless ``allow_lossy_casts``.
The plan and the projection run in Rust; batches cross through the Arrow PyCapsule interface
without copies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from iceberg_ops import _native

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.schema import Schema as IcebergSchema
    from pyiceberg.types import IcebergType

# pyarrow is imported where it is used, not with the package: a migration that never looks at
# its plan's Arrow types runs without it (about 37 MiB of the process's peak RSS).


def _empty_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([])

__all__ = ["ColumnProjection", "ReconciliationPlan", "SchemaReconciler"]

_ON_MISSING_IN_SOURCE = ("error", "skip", "null")
_ON_MISSING_IN_DEST = ("error", "auto_add")


@dataclass
class ColumnProjection:
    """One column in the reconciled output.

    Attributes:
        dest_name: Column name in the destination schema.
        source_name: Column name in the source schema; ``None`` when ``fill_with_null``.
        dest_arrow_type: Cast target (the destination type, or its coercion).
        fill_with_null: True when the column is missing from the source and the
            ``on_missing_in_source`` policy is ``"null"``.
    """

    dest_name: str
    source_name: str | None
    dest_arrow_type: pa.DataType
    fill_with_null: bool = False


@dataclass
class ReconciliationPlan:
    """Plan returned by :meth:`SchemaReconciler.compute_plan`.

    Attributes:
        projections: One entry per output column, in destination order.
        auto_add_columns: ``(name, IcebergType)`` of source columns the destination lacks,
            when ``on_missing_in_dest="auto_add"``; the migrator adds them before writing.
        warnings: Non-fatal findings (doc-only differences, null-fill, lossy casts).
        dest_arrow_schema: The schema of projected batches.
    """

    projections: list[ColumnProjection] = field(default_factory=list)
    auto_add_columns: list[tuple[str, IcebergType]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dest_arrow_schema: pa.Schema = field(default_factory=_empty_schema)

    # The Rust plan behind a computed plan, which project_batch() hands back; not a field, so
    # a plan (and a MigrationResult holding one) copies, pickles and converts with asdict().
    _native: ClassVar[Any] = None  # set per instance by _from_native

    def __getstate__(self) -> dict[str, Any]:
        state = {f.name: getattr(self, f.name) for f in fields(self)}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @classmethod
    def _from_native(cls, native: _native.NativePlan) -> ReconciliationPlan:
        from pyiceberg.types import IcebergType

        plan = cls(
            projections=[
                ColumnProjection(dest, source, arrow_type, fill)
                for dest, source, arrow_type, fill in native.projections()
            ],
            auto_add_columns=[
                (name, IcebergType.model_validate_json(ty))
                for name, ty in native.auto_add_columns()
            ],
            warnings=native.warnings(),
            dest_arrow_schema=native.dest_arrow_schema(),
        )
        object.__setattr__(plan, "_native", native)
        return plan


def _schema_input(schema: Any, argument: str) -> Any:
    """A schema as the native module takes it: an Iceberg schema's JSON, or an Arrow schema."""
    from pyiceberg.schema import Schema as IcebergSchema

    if isinstance(schema, IcebergSchema):
        return schema.model_dump_json()
    if hasattr(schema, "__arrow_c_schema__"):
        return schema
    raise TypeError(
        f"{argument} must be a pyiceberg.schema.Schema or a pyarrow.Schema, "
        f"not {type(schema).__name__}"
    )


@dataclass
class SchemaReconciler:
    """Declarative source -> destination schema reconciliation policy.

    A plan factory without per-batch state: call :meth:`compute_plan` once, then reuse the
    plan for every batch.

    Args:
        column_mapping: Source-name to destination-name renames (one-to-one; every key must
            name a source column). Unmapped columns match by exact name.
        type_coercions: Destination column name to the Iceberg type to cast to. For a column
            the destination has, it must be its type or a legal promotion of it.
        on_missing_in_source: ``"error"``, ``"skip"`` or ``"null"`` for a destination column
            without a source.
        on_missing_in_dest: ``"error"`` or ``"auto_add"`` for a source column without a
            destination.
        allow_lossy_casts: Accept casts that change values (an extension of the seed; off by
            default, as pyarrow's safe cast).

    Example:
        >>> reconciler = SchemaReconciler(column_mapping={"order_total": "total_amount"})
        >>> plan = reconciler.compute_plan(src.schema(), dst.schema())
        >>> out = reconciler.project_batch(batch, plan)
    """

    column_mapping: dict[str, str] | None = None
    type_coercions: dict[str, IcebergType] | None = None
    on_missing_in_source: Literal["error", "skip", "null"] = "error"
    on_missing_in_dest: Literal["error", "auto_add"] = "error"
    allow_lossy_casts: bool = False

    def __post_init__(self) -> None:
        if self.on_missing_in_source not in _ON_MISSING_IN_SOURCE:
            raise ValueError(
                f"on_missing_in_source={self.on_missing_in_source!r}: use one of "
                f"{', '.join(_ON_MISSING_IN_SOURCE)}"
            )
        if self.on_missing_in_dest not in _ON_MISSING_IN_DEST:
            raise ValueError(
                f"on_missing_in_dest={self.on_missing_in_dest!r}: use one of "
                f"{', '.join(_ON_MISSING_IN_DEST)}"
            )
        if self.column_mapping is not None and not isinstance(self.column_mapping, dict):
            raise TypeError("column_mapping must be a dict of source name to destination name")
        if self.type_coercions is not None and not isinstance(self.type_coercions, dict):
            raise TypeError("type_coercions must be a dict of column name to IcebergType")

    def _to_json(self) -> str:
        from pyiceberg.types import IcebergType

        coercions = {}
        for name, ty in (self.type_coercions or {}).items():
            if not isinstance(ty, IcebergType):
                raise TypeError(
                    f"type_coercions[{name!r}] must be a pyiceberg IcebergType (e.g. LongType()), "
                    f"not {type(ty).__name__}"
                )
            coercions[name] = json.loads(ty.model_dump_json())
        return json.dumps(
            {
                "column_mapping": dict(self.column_mapping or {}),
                "type_coercions": coercions,
                "on_missing_in_source": self.on_missing_in_source,
                "on_missing_in_dest": self.on_missing_in_dest,
                "allow_lossy_casts": bool(self.allow_lossy_casts),
            }
        )

    def compute_plan(self, source_schema: Any, dest_schema: Any) -> ReconciliationPlan:
        """Compute the plan that turns ``source_schema`` into ``dest_schema``.

        Both may be a ``pyiceberg.schema.Schema`` or a ``pyarrow.Schema``.

        Raises:
            ValueError: when a policy cannot be met; every issue in one message.
            TypeError: for a schema of another kind.
        """
        native = _native.compute_plan(
            self._to_json(),
            _schema_input(source_schema, "source_schema"),
            _schema_input(dest_schema, "dest_schema"),
        )
        return ReconciliationPlan._from_native(native)

    def project_batch(self, batch: pa.RecordBatch, plan: ReconciliationPlan) -> pa.RecordBatch:
        """Project one source batch according to ``plan``.

        Returns a ``pyarrow.RecordBatch`` in ``plan.dest_arrow_schema`` with ``batch``'s rows.

        Raises:
            KeyError: ``batch`` lacks a source column the plan references.
            pyarrow.lib.ArrowInvalid: a cast fails on the data.
        """
        if not isinstance(plan, ReconciliationPlan) or plan._native is None:
            raise TypeError(
                "plan must be a ReconciliationPlan returned by compute_plan() in this process "
                "(a copied or unpickled plan has no projection; compute it again)"
            )
        return _native.project_batch(batch, plan._native)


class _LazyPlan(ReconciliationPlan):
    """A migration's plan, read from Rust on first use of a field (which imports pyarrow for
    its Arrow types): a result whose plan nobody reads costs nothing for it."""

    def __init__(self, native: Any) -> None:  # noqa: D107 - not a dataclass __init__
        object.__setattr__(self, "_native", native)

    def __getattr__(self, name: str) -> Any:
        # Called only for attributes not set yet: the fields, before their first use.
        if name in {f.name for f in fields(ReconciliationPlan)}:
            real = ReconciliationPlan._from_native(object.__getattribute__(self, "_native"))
            for f in fields(real):
                object.__setattr__(self, f.name, getattr(real, f.name))
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    def __reduce__(self) -> Any:
        # Copies and pickles are plain plans with the fields read.
        return (_plain_plan, (self.__getstate__(),))


def _plain_plan(state: dict[str, Any]) -> ReconciliationPlan:
    return ReconciliationPlan(**state)
