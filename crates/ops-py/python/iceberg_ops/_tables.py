"""The user's PyIceberg tables and row filters, described for the Rust core.

A table crosses as its catalog (name, kind and properties) and identifier: the Rust side opens
the same catalog and loads the same table, so every catalog kind iceberg-ops supports works and
its commits show in the user's objects after ``table.refresh()``.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

# PyIceberg catalog classes by name (checked along the MRO, so subclasses count), and the kind
# the Rust catalog factory knows them by.
_KINDS = {
    "SqlCatalog": "sql",
    "RestCatalog": "rest",
    "GlueCatalog": "glue",
    "S3TablesCatalog": "s3tables",
}
_WHICH = "a SqlCatalog (SQLite or PostgreSQL), RestCatalog, GlueCatalog or S3TablesCatalog"


def catalog_spec(catalog: Any, argument: str) -> dict[str, Any]:
    """A PyIceberg catalog as ``{name, properties}`` for the Rust catalog factory."""
    kind = next((_KINDS[c.__name__] for c in type(catalog).__mro__ if c.__name__ in _KINDS), None)
    if kind is None:
        raise TypeError(
            f"{argument}: a {type(catalog).__name__} cannot be opened by iceberg-ops; load the "
            f"table from {_WHICH}"
        )
    properties = {str(k): str(v) for k, v in dict(getattr(catalog, "properties", {}) or {}).items()}
    uri = properties.get("uri", "")
    if kind == "sql" and ":memory:" in uri:
        raise TypeError(
            f"{argument}: an in-memory SQLite catalog ({uri}) lives in this process only and "
            "cannot be opened by iceberg-ops; use a file-backed SqlCatalog "
            "(uri='sqlite:///path/catalog.db')"
        )
    properties["type"] = kind
    return {"name": str(getattr(catalog, "name", "default") or "default"), "properties": properties}


def table_spec(table: Any, argument: str) -> dict[str, Any]:
    """A PyIceberg ``Table`` (or ``(catalog, "ns.table")``) as ``{catalog, identifier}``."""
    from pyiceberg.catalog import Catalog, load_catalog
    from pyiceberg.table import StaticTable, Table

    if isinstance(table, StaticTable):
        raise TypeError(
            f"{argument}: a StaticTable has no catalog to commit through; load the table from "
            f"{_WHICH}"
        )
    if isinstance(table, Table):
        return {"catalog": catalog_spec(table.catalog, argument), "identifier": list(table.name())}
    if isinstance(table, tuple) and len(table) == 2:
        catalog, name = table
        if isinstance(catalog, str):
            catalog = load_catalog(catalog)
        if not isinstance(catalog, Catalog) or not isinstance(name, str):
            raise TypeError(
                f"{argument}: a tuple must be (catalog or catalog name, 'namespace.table')"
            )
        identifier = Catalog.identifier_to_tuple(name)
        if len(identifier) < 2:
            raise ValueError(f"{argument}: {name!r} is not 'namespace.table'")
        return {"catalog": catalog_spec(catalog, argument), "identifier": list(identifier)}
    raise TypeError(
        f"{argument} must be a pyiceberg Table (or a (catalog, 'namespace.table') tuple), not "
        f"{type(table).__name__}"
    )


def table_uuid(table: Any) -> str | None:
    """The table's UUID when it is a loaded PyIceberg table."""
    metadata = getattr(table, "metadata", None)
    uuid = getattr(metadata, "table_uuid", None)
    return None if uuid is None else str(uuid)


def _column(name: str) -> str:
    return ".".join('"' + part.replace('"', '""') + '"' for part in name.split("."))


def _literal(literal: Any) -> str:
    kind = type(literal).__name__
    value = getattr(literal, "value", literal)
    if kind == "DateLiteral":
        value = datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
    elif kind in ("TimestampLiteral", "TimestamptzLiteral"):
        value = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(decimal.Decimal(repr(value)), "f")
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (datetime.date, datetime.datetime)):
        value = value.isoformat()
    if isinstance(value, (str,)) or kind == "UUIDLiteral":
        return "'" + str(value).replace("'", "''") + "'"
    raise TypeError(
        f"row_filter: a literal of type {type(value).__name__} cannot be passed on; write the "
        "filter as a string, e.g. \"d >= '2026-01-01'\""
    )


def filter_text(expression: Any) -> str | None:
    """A row filter as the filter string the Rust core parses (PyIceberg's syntax).

    ``None`` for no filter (``AlwaysTrue``). A string passes as it is.
    """
    if expression is None or isinstance(expression, str):
        return expression
    from pyiceberg import expressions as e

    if isinstance(expression, e.AlwaysTrue):
        return None
    # An explicit stack, not recursion: a generated filter can nest deeply.
    out: list[str] = []
    stack: list[Any] = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            out.append(node)
        elif isinstance(node, e.AlwaysTrue):
            out.append("true")
        elif isinstance(node, e.AlwaysFalse):
            out.append("false")
        elif isinstance(node, (e.And, e.Or)):
            op = " AND " if isinstance(node, e.And) else " OR "
            stack.extend([")", node.right, op, node.left, "("])
        elif isinstance(node, e.Not):
            stack.extend([")", node.child, "NOT ("])
        elif isinstance(node, e.UnboundPredicate):
            out.append(_predicate(node, e))
        else:
            raise TypeError(
                f"row_filter: {type(node).__name__} is not a filter iceberg-ops can pass on; use "
                "PyIceberg's unbound expressions or a filter string"
            )
    return "".join(out)


def _predicate(p: Any, e: Any) -> str:
    column = _column(p.term.name)
    unary = {
        e.IsNull: "IS NULL",
        e.NotNull: "IS NOT NULL",
        e.IsNaN: "IS NaN",
        e.NotNaN: "IS NOT NaN",
    }
    for cls, text in unary.items():
        if isinstance(p, cls):
            return f"{column} {text}"
    if isinstance(p, (e.In, e.NotIn)):
        values = ", ".join(sorted(_literal(v) for v in p.literals))
        return f"{column} {'NOT IN' if isinstance(p, e.NotIn) else 'IN'} ({values})"
    if isinstance(p, (e.StartsWith, e.NotStartsWith)):
        # The filter grammar's LIKE: a trailing % is the prefix match, \% a literal percent.
        prefix = str(p.literal.value).replace("%", "\\%")
        pattern = "'" + prefix.replace("'", "''") + "%'"
        return f"{column} {'NOT LIKE' if isinstance(p, e.NotStartsWith) else 'LIKE'} {pattern}"
    binary = {
        e.EqualTo: "=",
        e.NotEqualTo: "!=",
        e.LessThan: "<",
        e.LessThanOrEqual: "<=",
        e.GreaterThan: ">",
        e.GreaterThanOrEqual: ">=",
    }
    for cls, op in binary.items():
        if isinstance(p, cls):
            return f"{column} {op} {_literal(p.literal)}"
    raise TypeError(f"row_filter: {type(p).__name__} is not a predicate iceberg-ops can pass on")
