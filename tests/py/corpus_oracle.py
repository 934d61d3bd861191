"""PyIceberg's side of tests/it/corpus.rs: the corpus fixtures, the twin operations and the
exact comparison of two tables.

Snippets run by oracle.py import this module (oracle.py's folder is on sys.path). Every
expected result comes from PyIceberg itself: its scan (with its own row filter for a filtered
copy), its `Table.delete`, `Table.upsert`, `dynamic_partition_overwrite` or `overwrite` on a
twin that shares the source's metadata. Nothing here reads a table through iceberg-ops.

Values are compared exactly and column by column: NaN equals NaN, -0.0 differs from 0.0,
decimals keep their scale, bytes, timestamps and UUIDs compare exactly, lists, maps (as sets
of entries) and structs deeply; rows are matched as multisets.
"""

import datetime as dt
import decimal
import math
import struct
import sys
import uuid
from collections import Counter

import pyarrow as pa
from pyiceberg.expressions import And, EqualTo

# PyIceberg's upsert builds its key filter as Or(...) one level per key and binds it
# recursively; a few hundred composite keys pass the default limit of 1000 frames.
sys.setrecursionlimit(100_000)

NEW_ID_OFFSET = 10_000_000


# ---------------------------------------------------------------- exact values


def canon(v, t):
    """A hashable, exact, type-tagged form of `v` (a value of Arrow type `t`)."""
    if v is None:
        return ("null",)
    if pa.types.is_struct(t):
        return ("struct",) + tuple((f.name, canon(v.get(f.name), f.type)) for f in t)
    if pa.types.is_map(t):
        return ("map",) + tuple(sorted((canon(k, t.key_type), canon(x, t.item_type)) for k, x in v))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return ("list",) + tuple(canon(x, t.value_type) for x in v)
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, float):
        # NaN equals NaN; every other float by its bits, so -0.0 != 0.0.
        return ("nan",) if math.isnan(v) else ("float", struct.pack(">d", v).hex())
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, decimal.Decimal):
        return ("decimal", str(v))
    if isinstance(v, (bytes, bytearray)):
        return ("bytes", bytes(v).hex())
    if isinstance(v, (dt.datetime, dt.date, dt.time)):
        return (type(v).__name__, v.isoformat())
    if isinstance(v, str):
        return ("str", v)
    return (type(v).__name__, str(v))


def show(v, limit=160):
    text = repr(v)
    return text if len(text) <= limit else text[:limit] + "..."


def _columns(table):
    return {f.name: f.type for f in table.schema}


def _rows(table, cols):
    types = _columns(table)
    return [tuple(canon(r.get(c), types[c]) for c in cols) for r in table.to_pylist()]


def compare_arrow(expected, actual, key, limit=5):
    """Problems (strings) between two Arrow tables, empty when they hold the same rows."""
    problems = []
    ecols, acols = _columns(expected), _columns(actual)
    missing = [c for c in ecols if c not in acols]
    extra = [c for c in acols if c not in ecols]
    if missing or extra:
        problems.append(f"columns: missing {missing}, unexpected {extra}")
    # Arrow types are not compared: PyIceberg reads string/large_string, list/large_list as
    # each file's writer stored them. The Iceberg types are (compare_schemas).
    cols = [c for c in ecols if c in acols]
    erows, arows = _rows(expected, cols), _rows(actual, cols)
    if len(erows) != len(arows):
        problems.append(f"rows: {len(erows)} expected, {len(arows)} read")
    ce, ca = Counter(erows), Counter(arows)
    only_e, only_a = ce - ca, ca - ce
    if not only_e and not only_a:
        return problems
    # Pair the differing rows by key to say which columns differ.
    kidx = [cols.index(k) for k in key if k in cols]

    def by_key(counter):
        out = {}
        for row, n in counter.items():
            out.setdefault(tuple(row[i] for i in kidx), []).extend([row] * n)
        return out

    ke, ka = by_key(only_e), by_key(only_a)
    per_column, examples = Counter(), {}
    for k in ke.keys() & ka.keys():
        if len(ke[k]) != 1 or len(ka[k]) != 1:
            continue
        for i, c in enumerate(cols):
            if ke[k][0][i] != ka[k][0][i]:
                per_column[c] += 1
                examples.setdefault(c, (k, ke[k][0][i], ka[k][0][i]))
    for c, n in per_column.most_common():
        k, e, a = examples[c]
        problems.append(f"column {c} differs in {n} rows, e.g. key {show(_plain(k))}: "
                        f"expected {show(_plain(e))}, read {show(_plain(a))}")
    paired = ke.keys() & ka.keys()
    lost = [r for k, rs in ke.items() if k not in paired for r in rs]
    added = [r for k, rs in ka.items() if k not in paired for r in rs]
    dup_e = [r for k, rs in ke.items() if k in paired and (len(rs) != 1 or len(ka[k]) != 1) for r in rs]
    dup_a = [r for k, rs in ka.items() if k in paired and (len(rs) != 1 or len(ke[k]) != 1) for r in rs]
    lost += dup_e
    added += dup_a
    if lost:
        problems.append(f"{len(lost)} expected rows not read, e.g. "
                        + "; ".join(show(dict(zip(cols, map(_plain, r))), 400) for r in lost[:limit]))
    if added:
        problems.append(f"{len(added)} rows read that were not expected, e.g. "
                        + "; ".join(show(dict(zip(cols, map(_plain, r))), 400) for r in added[:limit]))
    return problems


def _plain(c):
    """A canon() form back to something short to print."""
    if isinstance(c, tuple) and c and isinstance(c[0], str):
        tag = c[0]
        if tag == "null":
            return None
        if tag == "nan":
            return "NaN"
        if tag == "float":
            return struct.unpack(">d", bytes.fromhex(c[1]))[0]
        if tag in ("list", "map"):
            return [_plain(x) for x in c[1:]]
        if tag == "struct":
            return {k: _plain(x) for k, x in c[1:]}
        if len(c) == 2 and not isinstance(c[1], tuple):
            return c[1]
    if isinstance(c, tuple):
        return tuple(_plain(x) for x in c)
    return c


def compare_schemas(expected, actual):
    """Problems between two Iceberg schemas by column name (type and required); ids aside."""
    problems = []
    e = {f.name: f for f in expected.fields}
    a = {f.name: f for f in actual.fields}
    if list(e) != list(a):
        problems.append(f"schema columns: {list(e)} expected, {list(a)} read")
    for name in e.keys() & a.keys():
        if str(e[name].field_type) != str(a[name].field_type) or e[name].required != a[name].required:
            problems.append(f"schema column {name}: {e[name].field_type} required={e[name].required} expected, "
                            f"{a[name].field_type} required={a[name].required} read")
    return problems


def field_ids(schema):
    """name -> field id, nested fields by their dotted path."""
    return {schema.find_column_name(i): i for i in schema._lazy_id_to_name}


def verdict(expected_table, expected, actual_table, actual, key, schema=True):
    """{"equal", "expected_rows", "actual_rows", "problems", "notes"} for two PyIceberg reads."""
    problems = compare_schemas(expected_table.schema(), actual_table.schema()) if schema else []
    problems += compare_arrow(expected, actual, key)
    notes = []
    if schema:
        ei, ai = field_ids(expected_table.schema()), field_ids(actual_table.schema())
        moved = sorted(n for n in ei if n in ai and ei[n] != ai[n])
        if moved:
            notes.append(f"field ids differ for {len(moved)} columns, e.g. "
                         + ", ".join(f"{n}: {ei[n]} -> {ai[n]}" for n in moved[:5]))
    return {"equal": not problems, "expected_rows": expected.num_rows, "actual_rows": actual.num_rows,
            "problems": problems, "notes": notes}


# ---------------------------------------------------------------- the fixture


def _default(t):
    """A non-null value of Arrow type `t`."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "new"
    if pa.types.is_boolean(t):
        return True
    if pa.types.is_integer(t):
        return 7
    if pa.types.is_floating(t):
        return 0.25
    if pa.types.is_decimal(t):
        return decimal.Decimal(1).quantize(decimal.Decimal(1).scaleb(-t.scale))
    if pa.types.is_date(t):
        return dt.date(2000, 1, 1)
    if pa.types.is_timestamp(t):
        return dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc if t.tz else None)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return []
    if pa.types.is_map(t):
        return []
    if pa.types.is_struct(t):
        return {f.name: None for f in t}
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return b"\x01"
    if pa.types.is_fixed_size_binary(t):
        return bytes(t.byte_width)
    if getattr(t, "extension_name", None) == "arrow.uuid":
        return uuid.UUID(int=7)
    raise ValueError(f"no default value for {t}")


def mutate(v, t):
    """A different value of Arrow type `t`."""
    if v is None:
        return _default(t)
    if pa.types.is_struct(t):
        first = t[0]
        return dict(v, **{first.name: mutate(v.get(first.name), first.type)})
    if pa.types.is_map(t):
        new = _default(t.key_type)
        if any(k == new for k, _ in v):
            return [(k, x) for k, x in v if k != new]
        return list(v) + [(new, _default(t.item_type))]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return v[:-1] if v else [_default(t.value_type)]
    if isinstance(v, bool):
        return not v
    if isinstance(v, float):
        return 0.25 if math.isnan(v) or math.isinf(v) else v / 2 + 1
    if isinstance(v, (int, decimal.Decimal)):
        return v - 1 if v > 0 else v + 1
    if isinstance(v, str):
        return v + "~"
    if isinstance(v, uuid.UUID):
        return uuid.UUID(int=(v.int + 1) % (1 << 128))
    if isinstance(v, bytes):
        return v + b"~" if not pa.types.is_fixed_size_binary(t) else bytes([255 - v[0]]) + v[1:]
    if isinstance(v, dt.datetime):
        return v + dt.timedelta(seconds=1)
    if isinstance(v, dt.date):
        return v + dt.timedelta(days=1)
    raise ValueError(f"cannot mutate {v!r} of {t}")


def _key(row, key, types):
    return tuple(canon(row[k], types[k]) for k in key)


def _sorted_rows(data, key):
    types = _columns(data)
    rows = data.to_pylist()
    rows.sort(key=lambda r: (_key(r, key, types), _rows_key(r, types)))
    return rows, types


def _rows_key(r, types):
    return repr(tuple(canon(r.get(c), t) for c, t in types.items()))


def _create_like(catalog, ident, source, rows):
    """A new unpartitioned table with `source`'s schema (PyIceberg assigns fresh ids)."""
    table = catalog.create_table(ident, schema=source.schema())
    if rows:
        table.append(pa.Table.from_pylist(rows, schema=table.schema().as_arrow()))
    return table


def prepare(catalog, specs):
    """Clones (`mine.T`, `twin.T`), the upsert source `changes.T` and the partition-overwrite
    source `incoming.T` for each table spec."""
    for ns in ("mine", "twin", "changes", "incoming", "dst"):
        catalog.create_namespace_if_not_exists(ns)
    out = {}
    for spec in specs:
        name = spec["table"]
        src = catalog.load_table(f"corpus.{name}")
        catalog.register_table(f"mine.{name}", src.metadata_location)
        catalog.register_table(f"twin.{name}", src.metadata_location)
        data = src.scan().to_arrow()
        key = spec["key"]
        rows, types = _sorted_rows(data, key)
        # Keys held by one row only: PyIceberg's upsert aborts on a key repeated inside one
        # scan batch of the target and writes a row per matching batch otherwise.
        counts = Counter(_key(r, key, types) for r in rows)
        single = [r for r in rows if counts[_key(r, key, types)] == 1]
        changed = [dict(r) for r in single[0::15]]
        for r in changed:
            for c in spec["mutate"]:
                r[c] = mutate(r[c], types[c])
        unchanged = single[1::15]
        new = [dict(r, id=r["id"] + NEW_ID_OFFSET) for r in single[2::30]]
        _create_like(catalog, f"changes.{name}", src, changed + unchanged + new)
        info = {"changes": len(changed) + len(unchanged) + len(new), "changed": len(changed),
                "unchanged": len(unchanged), "new": len(new)}
        if spec.get("overwrite"):
            ow = spec["overwrite"]
            part, _ = _sorted_rows(src.scan(row_filter=ow["filter"]).to_arrow(), key)
            incoming = []
            for i, r in enumerate(part):
                if ow.get("drop", True) and i % 10 == 3:
                    continue  # dropped: the overwrite removes it
                r = dict(r)
                if i % 2 == 0:
                    for c in ow["mutate"]:
                        # A key column moves out of the way of every other row's key.
                        r[c] = r[c] + 2 * NEW_ID_OFFSET if c in key else mutate(r[c], types[c])
                incoming.append(r)
            incoming += [dict(r, id=r["id"] + NEW_ID_OFFSET) for r in part[1::10]]
            _create_like(catalog, f"incoming.{name}", src, incoming)
            info["incoming"] = len(incoming)
            info["partition_rows"] = len(part)
        out[name] = info
    return out


# ---------------------------------------------------------------- the twins


def read(catalog, ident, row_filter=None, notes=None):
    """PyIceberg's scan of `ident`, with its filter. Where PyIceberg 0.12's planner crashes on
    the filter (its residual evaluator compares a NULL partition value with `<`), its row
    evaluator (`expression_to_pyarrow`) is applied to its full scan instead."""
    t = catalog.load_table(ident)
    if row_filter is None:
        return t, t.scan().to_arrow()
    try:
        return t, t.scan(row_filter=row_filter).to_arrow()
    except TypeError as e:
        from pyiceberg.expressions import parser
        from pyiceberg.expressions.visitors import bind
        from pyiceberg.io.pyarrow import expression_to_pyarrow

        if notes is not None:
            notes.append(f"PyIceberg's filtered scan failed ({e}); expected = its row evaluator over its scan")
        everything = t.scan().to_arrow()
        return t, everything.filter(expression_to_pyarrow(bind(t.schema(), parser.parse(row_filter), True)))


def copy_verdict(catalog, source, dest, row_filter, key):
    notes = []
    st, expected = read(catalog, source, row_filter, notes)
    dt_, actual = read(catalog, dest)
    v = verdict(st, expected, dt_, actual, key)
    v["notes"] += notes
    return v


def twins_verdict(catalog, twin, mine, key):
    tt, expected = read(catalog, twin)
    mt, actual = read(catalog, mine)
    return verdict(tt, expected, mt, actual, key)


def _input_for(table, ident_data):
    """Rows of another table as Arrow in `table`'s own schema (field ids and all)."""
    return pa.Table.from_pylist(ident_data.to_pylist(), schema=table.schema().as_arrow())


def _minus(everything, matching):
    """`everything` less the rows of `matching`, as multisets."""
    types = _columns(everything)
    cols = list(types)
    gone = Counter(_rows(matching, cols))
    keep = []
    for r in everything.to_pylist():
        c = tuple(canon(r.get(k), types[k]) for k in cols)
        if gone[c] > 0:
            gone[c] -= 1
        else:
            keep.append(r)
    return pa.Table.from_pylist(keep, schema=everything.schema)


def twin_delete(catalog, twin, row_filter, key):
    """`Table.delete` on the twin, checked against PyIceberg's own scans: the rows left must be
    its scan less its filtered scan (the rows where the filter is TRUE). Where the two disagree
    or the delete cannot run, the scans decide, and a note says so. PyIceberg 0.12's delete
    keeps a row whose filtered float column is NaN even when another disjunct is TRUE
    (`d >= 500.0 OR f IS NAN` keeps d = NaN, f = NaN), and its strict metrics evaluator finds
    no nested field (`address.city IN (...)` raises); its filtered scan may need the fallback
    of `read`."""
    mine = twin.replace("twin.", "mine.")
    notes = []
    t, everything = read(catalog, twin)
    _, matching = read(catalog, twin, row_filter, notes)
    by_scan = _minus(everything, matching)
    try:
        t.delete(row_filter)
        tt, by_delete = read(catalog, twin)
        disagree = compare_arrow(by_scan, by_delete, key)
        if disagree:
            notes.append("PyIceberg's Table.delete disagrees with its filtered scan, which decides: "
                         + " / ".join(disagree))
            expected = by_scan
        else:
            expected = by_delete
    except Exception as e:  # noqa: BLE001 - any failure of PyIceberg's own delete
        notes.append(f"PyIceberg's Table.delete failed ({type(e).__name__}: {e}); its filtered scan decides")
        tt, expected = t, by_scan
    mt, actual = read(catalog, mine)
    v = verdict(tt, expected, mt, actual, key)
    v["notes"] += notes
    return v


def twin_upsert(catalog, name, key):
    t = catalog.load_table(f"twin.{name}")
    _, changes = read(catalog, f"changes.{name}")
    result = t.upsert(_input_for(t, changes), join_cols=key)
    v = twins_verdict(catalog, f"twin.{name}", f"mine.{name}", key)
    v["pyiceberg"] = {"rows_updated": result.rows_updated, "rows_inserted": result.rows_inserted}
    return v


def twin_overwrite(catalog, name, partition_filter, dynamic, key):
    t = catalog.load_table(f"twin.{name}")
    _, incoming = read(catalog, f"incoming.{name}")
    data = _input_for(t, incoming)
    if dynamic:
        t.dynamic_partition_overwrite(data)
    else:
        # The incoming rows are exactly the rows `partition_filter` selects (some changed
        # outside the partition columns, some dropped, some new in the same partitions), so
        # the partitions they hit are exactly the ones the filter selects.
        t.overwrite(data, overwrite_filter=partition_filter)
    return twins_verdict(catalog, f"twin.{name}", f"mine.{name}", key)


def _negative_zero(v):
    return isinstance(v, float) and v == 0.0 and math.copysign(1.0, v) < 0


def verify_fixtures(catalog, dest, key, column):
    """Clones of `dest` with one row removed (`dest_minus`), one row duplicated (`dest_plus`)
    and one value changed (`dest_changed`: a top-level -0.0 made 0.0 where the copy holds one,
    else `column` of one row altered), each by PyIceberg."""
    t = catalog.load_table(dest)
    data = t.scan().to_arrow()
    rows, types = _sorted_rows(data, key)
    counts = Counter(_key(r, key, types) for r in rows)
    single = [r for r in rows if counts[_key(r, key, types)] == 1]
    if not single:
        raise ValueError(f"{dest}: no row with a key of its own to remove")
    pick = single[len(single) // 2]
    match = And(*[EqualTo(k, pick[k]) for k in key]) if len(key) > 1 else EqualTo(key[0], pick[key[0]])
    minus = catalog.register_table(dest + "_minus", t.metadata_location)
    before = minus.scan().to_arrow().num_rows
    minus.delete(match)
    after = catalog.load_table(dest + "_minus").scan().to_arrow().num_rows
    if before - after != 1:
        raise ValueError(f"{dest}_minus: removing {pick} took {before - after} rows")
    plus = catalog.register_table(dest + "_plus", t.metadata_location)
    plus.append(t.scan(row_filter=match).to_arrow())

    zeros = [(r, c) for r in single for c in types if _negative_zero(r[c])]
    if zeros:
        row, col = zeros[0]
        value = 0.0
    else:
        row, col = pick, column
        value = mutate(row[col], types[col])
    where = And(*[EqualTo(k, row[k]) for k in key]) if len(key) > 1 else EqualTo(key[0], row[key[0]])
    changed = catalog.register_table(dest + "_changed", t.metadata_location)
    changed.delete(where)
    changed.append(pa.Table.from_pylist([dict(row, **{col: value})], schema=changed.schema().as_arrow()))
    after = catalog.load_table(dest + "_changed").scan().to_arrow().num_rows
    if after != data.num_rows:
        raise ValueError(f"{dest}_changed: {after} rows, not {data.num_rows}")
    return {"removed": {k: str(pick[k]) for k in key}, "rows": data.num_rows,
            "changed": {"row": {k: str(row[k]) for k in key}, "column": col,
                        "from": show(row[col]), "to": show(value)}}
