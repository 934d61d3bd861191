"""The user's PyIceberg tables and row filters, described for the Rust core.

A table crosses as its catalog (name, kind and properties) and identifier: the Rust side opens
the same catalog and loads the same table, so every catalog kind iceberg-ops supports works and
its commits show in the user's objects after ``table.refresh()``.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
from typing import Any

# PyIceberg catalog classes by name (checked along the MRO, so subclasses count), and the kind
# the Rust catalog factory knows them by.
# (S3 Tables is reached through PyIceberg's RestCatalog with SigV4, which iceberg-ops opens as a
# REST catalog too.)
_KINDS = {
    "SqlCatalog": "sql",
    "RestCatalog": "rest",
    "GlueCatalog": "glue",
}
_WHICH = "a SqlCatalog (SQLite or PostgreSQL), a RestCatalog (S3 Tables included) or a GlueCatalog"


def _flatten(properties: dict[str, Any], argument: str) -> dict[str, str]:
    """PyIceberg's properties as the flat ``a.b`` keys of a ``.pyiceberg.yaml``: a nested block
    (a RestCatalog's ``ssl: {cabundle: ...}``) becomes ``ssl.cabundle``, as PyIceberg's own
    configuration loader flattens the file."""
    out: dict[str, str] = {}
    stack = [("", properties)]
    while stack:
        prefix, block = stack.pop()
        for key, value in block.items():
            name = f"{prefix}{key}"
            if name == "auth":
                raise TypeError(
                    f"{argument}: the catalog's 'auth' block (PyIceberg's pluggable REST "
                    "authentication) is not supported by iceberg-ops; configure the catalog with "
                    "'credential' (OAuth2 client credentials) or 'token' instead"
                )
            if isinstance(value, dict):
                stack.append((f"{name}.", value))
            elif isinstance(value, bool):
                out[name] = "true" if value else "false"
            elif value is not None:
                out[name] = str(value)
    return out


def catalog_spec(catalog: Any, argument: str) -> dict[str, Any]:
    """A PyIceberg catalog as ``{name, properties}`` for the Rust catalog factory."""
    kind = next((_KINDS[c.__name__] for c in type(catalog).__mro__ if c.__name__ in _KINDS), None)
    if kind is None:
        raise TypeError(
            f"{argument}: a {type(catalog).__name__} cannot be opened by iceberg-ops; load the "
            f"table from {_WHICH}"
        )
    properties = _flatten(dict(getattr(catalog, "properties", {}) or {}), argument)
    uri = properties.get("uri", "")
    if kind == "sql" and ":memory:" in uri:
        raise TypeError(
            f"{argument}: an in-memory SQLite catalog ({uri}) lives in this process only and "
            "cannot be opened by iceberg-ops; use a file-backed SqlCatalog "
            "(uri='sqlite:///path/catalog.db')"
        )
    properties["type"] = kind
    spec = {"name": str(getattr(catalog, "name", "default") or "default"), "properties": properties}
    # The catalog factory's checks (required keys, values), now rather than at run().
    from iceberg_ops import _native

    try:
        _native.check_catalog(json.dumps(spec))
    except ValueError as e:
        raise ValueError(f"{argument}: {e}") from None
    return spec


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


def _column(name: str, top_level: frozenset[str]) -> str:
    # A top-level column whose name holds a dot is one identifier; otherwise a dotted name is a
    # path to a nested field (`address.city`), as PyIceberg resolves both.
    parts = [name] if name in top_level or "." not in name else name.split(".")
    return ".".join('"' + part.replace('"', '""') + '"' for part in parts)


_EPOCH = datetime.datetime(1970, 1, 1)


def _literal(literal: Any) -> str:
    kind = type(literal).__name__
    value = getattr(literal, "value", literal)
    # Bound-style literals hold their value as a number since the epoch.
    if kind == "DateLiteral":
        value = datetime.date(1970, 1, 1) + datetime.timedelta(days=value)
    elif kind == "TimestampLiteral":
        value = _EPOCH + datetime.timedelta(microseconds=value)
    elif kind == "TimestamptzLiteral":
        value = (_EPOCH + datetime.timedelta(microseconds=value)).replace(
            tzinfo=datetime.timezone.utc
        )
    elif kind == "TimeLiteral":
        value = (_EPOCH + datetime.timedelta(microseconds=value)).time()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, decimal.Decimal)):
        if isinstance(value, float) and not math.isfinite(value) or (
            isinstance(value, decimal.Decimal) and not value.is_finite()
        ):
            raise ValueError(
                f"row_filter: the literal {value} cannot be written in the filter syntax; use "
                "IsNaN/NotNaN, or bound the column with a finite value"
            )
        return format(decimal.Decimal(repr(value)) if isinstance(value, float) else value, "f")
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        value = value.isoformat()
    if isinstance(value, str) or kind == "UUIDLiteral":
        return "'" + str(value).replace("'", "''") + "'"
    raise TypeError(
        f"row_filter: a literal of type {type(value).__name__} cannot be passed on; write the "
        "filter as a string, e.g. \"d >= '2026-01-01'\""
    )


def _operands(node: Any, cls: Any) -> list[Any]:
    """The operands of a chain of one operator (``Or(Or(a, b), c)`` -> ``[a, b, c]``), left to
    right: written as one flat chain, a filter generated by ``reduce(Or, ...)`` does not nest."""
    out: list[Any] = []
    stack: list[Any] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, cls):
            stack.extend([n.right, n.left])
        else:
            out.append(n)
    return out


def filter_text(expression: Any, schema: Any = None) -> str | None:
    """A row filter as the filter string the Rust core parses (PyIceberg's syntax).

    ``None`` for no filter (``AlwaysTrue``). A string passes as it is. ``schema`` (the source's
    PyIceberg schema, when known) tells a top-level column named ``a.b`` from a nested field.
    """
    if expression is None or isinstance(expression, str):
        return expression
    from pyiceberg import expressions as e

    if isinstance(expression, e.AlwaysTrue):
        return None
    top_level = frozenset(f.name for f in schema.fields) if schema is not None else frozenset()
    # An explicit stack, not recursion: a generated filter can nest deeply.
    out: list[str] = []
    work: list[tuple[str, Any]] = [("visit", expression)]
    while work:
        step, item = work.pop()
        if step == "join":
            separator, n = item
            parts = out[len(out) - n:]
            del out[len(out) - n:]
            out.append("(" + separator.join(parts) + ")")
        elif step == "not":
            out.append("NOT (" + out.pop() + ")")
        elif isinstance(item, (e.And, e.Or)):
            cls = e.And if isinstance(item, e.And) else e.Or
            operands = _operands(item, cls)
            work.append(("join", (" AND " if cls is e.And else " OR ", len(operands))))
            work.extend(("visit", child) for child in reversed(operands))
        elif isinstance(item, e.Not):
            work.append(("not", None))
            work.append(("visit", item.child))
        elif isinstance(item, e.AlwaysTrue):
            out.append("true")
        elif isinstance(item, e.AlwaysFalse):
            out.append("false")
        elif isinstance(item, e.UnboundPredicate):
            out.append(_predicate(item, e, top_level))
        else:
            raise TypeError(
                f"row_filter: {type(item).__name__} is not a filter iceberg-ops can pass on; use "
                "PyIceberg's unbound expressions or a filter string"
            )
    return out[0]


def _predicate(p: Any, e: Any, top_level: frozenset[str]) -> str:
    column = _column(p.term.name, top_level)
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
        prefix = str(p.literal.value)
        if prefix.endswith("\\"):
            raise ValueError(
                f"row_filter: the prefix {prefix!r} ends in a backslash, which the filter syntax "
                "reads as escaping the final %; filter with a string instead"
            )
        prefix = prefix.replace("%", "\\%")
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
