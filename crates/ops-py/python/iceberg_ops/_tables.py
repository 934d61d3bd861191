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
import uuid
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
    value = getattr(metadata, "table_uuid", None)
    return None if value is None else str(value)


def _column(name: str, top_level: frozenset[str]) -> str:
    # A top-level column whose name holds a dot is one identifier; otherwise a dotted name is a
    # path to a nested field (`address.city`), as PyIceberg resolves both.
    parts = [name] if name in top_level or "." not in name else name.split(".")
    return _quoted(parts)


def _quoted(parts: list[str]) -> str:
    return ".".join('"' + part.replace('"', '""') + '"' for part in parts)


def _field_path(schema: Any, field_id: int) -> list[str] | None:
    """The names from the top-level column down to field ``field_id`` through structs (a name
    may hold dots: PyIceberg's dotted full name cannot tell ``s.a.b`` in ``s`` from ``b`` in
    ``s.a``); ``None`` when it is not reached through structs alone. Walked with a stack."""
    from pyiceberg.types import StructType

    stack: list[tuple[list[str], Any]] = [([f.name], f) for f in schema.fields]
    while stack:
        path, field = stack.pop()
        if field.field_id == field_id:
            return path
        if isinstance(field.field_type, StructType):
            stack.extend((path + [c.name], c) for c in field.field_type.fields)
    return None


_EPOCH = datetime.datetime(1970, 1, 1)


def _literal(literal: Any, zone: bool = False) -> str:
    """``literal`` as the filter syntax writes it; ``zone``: the column is a timestamptz (a
    timestamp PyIceberg holds as microseconds is UTC there)."""
    kind = type(literal).__name__
    value = getattr(literal, "value", literal)
    if kind == "TimestampLiteral" and zone:
        kind = "TimestamptzLiteral"
    if kind == "UUIDLiteral" and isinstance(value, (bytes, bytearray)):
        value = str(uuid.UUID(bytes=bytes(value)))
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
        f"row_filter: a literal of type {type(value).__name__} ({value!r}) cannot be written in "
        "the filter syntax; filter on another column, or give the filter as a string"
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
    """A row filter as the filter string the Rust core parses, meaning what PyIceberg's scan
    makes of it (the seed read the source with ``source.scan(row_filter=...)``).

    ``None`` for no filter. A string is parsed by PyIceberg's own parser (one it cannot parse
    passes as it is: the Rust grammar takes more). PyIceberg filters rows with pyarrow, whose
    logic is SQL's three-valued one (``NOT`` of NULL is NULL) except in one place: ``isin`` is
    false, not NULL, for a NULL value, so ``NotIn`` and ``Not(In)`` keep the rows whose column
    is NULL. ``In`` is therefore written ``(c IS NOT NULL AND c IN (...))``, which is false for
    NULL in SQL too. ``schema`` (the source's, when known) tells a top-level column named
    ``a.b`` from a nested field and which timestamps are timestamptz.
    """
    if expression is None:
        return None
    if isinstance(expression, str):
        from pyiceberg.expressions import parser

        text: str = expression
        try:
            expression = parser.parse(text)
        except Exception:
            return text
    from pyiceberg import expressions as e

    if schema is not None:
        # Bound as PyIceberg's scan binds it: a literal out of the column's range, IsNaN on a
        # column that is not floating point and a one-value In fold as PyIceberg folds them.
        # A filter PyIceberg cannot bind here (a column of an older schema, a filter too deep
        # for its recursive binder) passes unbound; the Rust side binds it.
        from pyiceberg.expressions.visitors import bind

        try:
            expression = bind(schema, expression, case_sensitive=True)
        except Exception:
            pass
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
            out.append("NOT " + out.pop())
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
        elif isinstance(item, (e.UnboundPredicate, e.BoundPredicate)):
            out.append("(" + _predicate(item, e, top_level, schema) + ")")
        else:
            raise TypeError(
                f"row_filter: {type(item).__name__} is not a filter iceberg-ops can pass on; use "
                "PyIceberg's unbound expressions or a filter string"
            )
    return out[0]


def _field_type(schema: Any, name: str) -> Any:
    if schema is None:
        return None
    try:
        return schema.find_field(name).field_type
    except Exception:
        return None


def _predicate(p: Any, e: Any, top_level: frozenset[str], schema: Any) -> str:
    """One predicate, unbound or bound by PyIceberg (then its column is named by field id)."""
    if isinstance(p, e.BoundPredicate):
        field_id = p.term.ref().field.field_id
        name = schema.find_column_name(field_id)
        path = _field_path(schema, field_id)
        column = _quoted(path) if path is not None else _column(name, top_level)
    else:
        name = p.term.name
        column = _column(name, top_level)
    kind = type(p).__name__.removeprefix("Bound")
    zone = type(_field_type(schema, name)).__name__ == "TimestamptzType"
    unary = {
        "IsNull": "IS NULL",
        "NotNull": "IS NOT NULL",
        "IsNaN": "IS NaN",
        "NotNaN": "IS NOT NaN",
    }
    if kind in unary:
        return f"{column} {unary[kind]}"
    if kind in ("In", "NotIn"):
        # pyarrow's isin: false for NULL (see filter_text), so NotIn keeps NULL rows.
        values = ", ".join(sorted(_literal(v, zone) for v in p.literals))
        in_values = f"({column} IS NOT NULL AND {column} IN ({values}))"
        return f"NOT {in_values}" if kind == "NotIn" else in_values
    if kind in ("StartsWith", "NotStartsWith"):
        # The filter grammar's LIKE: a trailing % is the prefix match, \% a literal percent.
        prefix = str(p.literal.value)
        if prefix.endswith("\\"):
            raise ValueError(
                f"row_filter: the prefix {prefix!r} ends in a backslash, which the filter syntax "
                "reads as escaping the final %; filter with a string instead"
            )
        prefix = prefix.replace("%", "\\%")
        pattern = "'" + prefix.replace("'", "''") + "%'"
        return f"{column} {'NOT LIKE' if kind == 'NotStartsWith' else 'LIKE'} {pattern}"
    binary = {
        "EqualTo": "=",
        "NotEqualTo": "!=",
        "LessThan": "<",
        "LessThanOrEqual": "<=",
        "GreaterThan": ">",
        "GreaterThanOrEqual": ">=",
    }
    if kind in binary:
        return f"{column} {binary[kind]} {_literal(p.literal, zone)}"
    raise TypeError(f"row_filter: {type(p).__name__} is not a predicate iceberg-ops can pass on")
