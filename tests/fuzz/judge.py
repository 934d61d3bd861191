"""What the fuzzer judges with: PyIceberg's reads, exact row comparison (tests/py/corpus_oracle's
canonical values: NaN equals NaN, -0.0 differs from 0.0, maps as sets), SQL three-valued filter
evaluation, the partition tuple of a row (PyIceberg's transforms) and the files a table's
metadata references.
"""

import datetime as dt
import decimal
import math
import os
import struct
import sys
import uuid
from collections import Counter

import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "py"))

import corpus_oracle  # noqa: E402  (tests/py: canon, compare_arrow, compare_schemas)

import build  # noqa: E402
import gen  # noqa: E402


class NoOracle(Exception):
    """PyIceberg cannot judge this (it refuses the table or the operation, or cannot read it)."""


# ---------------------------------------------------------------- reading


def read(table, snapshot_id=None, row_filter=None):
    """PyIceberg's scan as an Arrow table. An empty scan whose schema holds a uuid column
    (PyIceberg 0.12 cannot build an empty uuid array) is an empty table of the column names."""
    kw = {}
    if snapshot_id is not None:
        kw["snapshot_id"] = snapshot_id
    if row_filter is not None:
        kw["row_filter"] = row_filter
    scan = table.scan(**kw)
    if _has_equality_deletes(table, scan.snapshot()):
        return _read_with_equality_deletes(table, scan)
    try:
        return scan.to_arrow()
    except pa.ArrowNotImplementedError as e:
        if "extension" in str(e) and not list(scan.plan_files()):
            schema = table.schemas()[table.snapshot_by_id(snapshot_id).schema_id] if snapshot_id else table.schema()
            return pa.table({f.name: pa.array([], pa.null()) for f in schema.fields})
        raise


def _has_equality_deletes(table, snapshot):
    if snapshot is None:
        return False
    from pyiceberg.manifest import DataFileContent, ManifestContent
    return any(e.data_file.content == DataFileContent.EQUALITY_DELETES
               for m in snapshot.manifests(table.io) if m.content == ManifestContent.DELETES
               for e in m.fetch_manifest_entry(table.io, discard_deleted=True))


def _unpartitioned(spec):
    return all(isinstance(f.transform, build.VoidTransform) for f in spec.fields)


def _read_with_equality_deletes(table, scan):
    """The scan's rows with its equality deletes applied, which PyIceberg 0.12 refuses to read:
    each data file read by PyIceberg (projection, name mapping, position deletes, row filter),
    then every equality delete file that applies to it removes the rows whose key equals one of
    its rows, as Java's `DeleteFileIndex` and `Deletes` decide: the delete's data sequence
    number above the file's, and the delete's spec unpartitioned (every field void) or the
    file's spec and partition; keys compared by field id, NULL equal to NULL."""
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.manifest import DataFileContent
    from pyiceberg.table import FileScanTask
    from pyiceberg.table.delete_file_index import DeleteFileIndex
    from pyiceberg.types import NestedField
    import pyarrow.parquet as pq

    projected = scan.projection()
    specs = table.metadata.specs()
    data, equality, positions = [], [], DeleteFileIndex()
    for m in scan.snapshot().manifests(table.io):
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True):
            c = e.data_file.content
            if c == DataFileContent.DATA:
                data.append((m.partition_spec_id, e))
            elif c == DataFileContent.POSITION_DELETES:
                positions.add_delete_file(e, partition_key=e.data_file.partition)
            else:
                equality.append((m.partition_spec_id, e))
    # A column an equality delete names is read from the data files by its field id even when
    # the read schema lacks it (dropped since): added at the end of the projection, optional,
    # as the newest schema holding it defines it, and left out of the result. Java up to 1.10
    # fails there instead ("Cannot find required field for ID"); apache/iceberg#15268 reads the
    # field from the schema history, as here, and so does iceberg-ops (its compaction leaves
    # such files out).
    width = len(projected.fields)
    fields = list(projected.fields)
    for fid in sorted({i for _, q in equality for i in q.data_file.equality_ids}):
        if all(f.field_id != fid for f in fields):
            older = [sc.find_field(fid) for sc in sorted(table.metadata.schemas, key=lambda sc: -sc.schema_id)
                     if fid in sc.field_ids]
            if not older:
                raise NoOracle(f"an equality delete names field {fid}, which no schema holds")
            fields.append(NestedField(older[0].field_id, older[0].name, older[0].field_type, required=False,
                                      doc=older[0].doc))
    position = {f.field_id: i for i, f in enumerate(fields)}
    keys = {}  # an equality delete file's columns by field id

    def columns_of(entry):
        f = entry.data_file
        if f.file_path not in keys:
            raw = pq.read_table(build.local(f.file_path))
            keys[f.file_path] = {int(fl.metadata[b"PARQUET:field_id"]): raw.column(i)
                                 for i, fl in enumerate(raw.schema)
                                 if fl.metadata and b"PARQUET:field_id" in fl.metadata}
        return keys[f.file_path]

    from pyiceberg.schema import Schema
    reader = ArrowScan(table.metadata, table.io, Schema(*fields, schema_id=projected.schema_id), scan.row_filter,
                       scan.case_sensitive)
    out = []
    for spec_id, d in data:
        seq = d.sequence_number or 0
        task = FileScanTask(d.data_file, delete_files=positions.for_data_file(
            seq, d.data_file, partition_key=d.data_file.partition))
        rows = reader.to_table([task])
        for del_spec, q in equality:
            applies = (q.sequence_number or 0) > seq and (
                _unpartitioned(specs[del_spec])
                or (del_spec == spec_id and tuple(q.data_file.partition) == tuple(d.data_file.partition)))
            if not applies or rows.num_rows == 0:
                continue
            ids = q.data_file.equality_ids
            cols = columns_of(q)
            data_cols = [rows.column(position[fid]) for fid in ids]
            types = [c.type for c in data_cols]
            deleted = {tuple(corpus_oracle.canon(cols[fid].cast(t)[i].as_py(), t) for fid, t in zip(ids, types))
                       for i in range(q.data_file.record_count)}
            keep = [tuple(corpus_oracle.canon(c[i].as_py(), t) for c, t in zip(data_cols, types)) not in deleted
                    for i in range(rows.num_rows)]
            rows = rows.filter(pa.array(keep, pa.bool_()))
        out.append(rows.select(list(range(width))))
    if not out:
        return reader.to_table([]).select(list(range(width)))
    return pa.concat_tables(out, promote_options="permissive")


def rows_of(arrow):
    """The rows as a Counter of canonical tuples (columns in the table's order)."""
    types = {f.name: f.type for f in arrow.schema}
    cols = list(types)
    return Counter(tuple(corpus_oracle.canon(r.get(c), types[c]) for c in cols) for r in arrow.to_pylist())


_NEG_ZERO = ("float", struct.pack(">d", -0.0).hex())
_ZERO = ("float", struct.pack(">d", 0.0).hex())


def _unsign_zero(c):
    if c == _NEG_ZERO:
        return _ZERO
    if isinstance(c, tuple):
        return tuple(_unsign_zero(x) for x in c)
    return c


def same_rows_but_zero_sign(expected, actual):
    """True when the two tables hold the same rows once -0.0 and 0.0 are taken as one value."""
    e = Counter(_unsign_zero(r) for r in rows_of(expected).elements())
    a = Counter(_unsign_zero(r) for r in rows_of(actual).elements())
    return e == a


def same_rows(expected, actual, key=()):
    """Problems between two Arrow tables (empty when they hold the same rows)."""
    return corpus_oracle.compare_arrow(expected, actual, list(key))


def schema_problems(expected_schema, actual_schema):
    return corpus_oracle.compare_schemas(expected_schema, actual_schema)


# ---------------------------------------------------------------- filters


def _get(row, path):
    v = row
    for name in path:
        if not isinstance(v, dict):
            return None
        v = v.get(name)
    return v


def _lit_for(v, t):
    """A decoded literal typed as the column of Iceberg type `t` types it."""
    from pyiceberg.types import FloatType, UUIDType
    if isinstance(t, FloatType) and isinstance(v, float):
        return gen.f32(v)
    if isinstance(t, UUIDType):
        return _uuid(v)
    return v


def _uuid(v):
    if isinstance(v, uuid.UUID):
        return v
    if isinstance(v, (bytes, bytearray)):
        return uuid.UUID(bytes=bytes(v))
    if isinstance(v, str):
        return uuid.UUID(v)
    return v


def _norm(v, t):
    from pyiceberg.types import UUIDType
    if isinstance(t, UUIDType):
        return _uuid(v)
    return v


def _cmp(a, op, b):
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return op == "!="
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


def sql_eval(ast, row, schema, pyarrow_isin=False):
    """SQL's three-valued value of a filter on a row (True, False or None for unknown), as
    docs/datamig.md specifies row filters: a comparison with NULL is unknown, NOT of unknown is
    unknown, NaN compares as IEEE 754 says (false, except !=), -0.0 equals 0.0, IS NaN of NULL
    is unknown; IS [NOT] NULL of a required field as the references bind it (below).
    `pyarrow_isin`: IN of a NULL is false, not unknown (so NOT IN keeps it), as pyarrow's `isin`
    decides and the Python package follows it (docs/python.md)."""
    op = ast[0]
    if op == "true":
        return True
    if op == "false":
        return False
    if op == "not":
        v = sql_eval(ast[1], row, schema, pyarrow_isin)
        return None if v is None else not v
    if op == "and":
        a, b = sql_eval(ast[1], row, schema, pyarrow_isin), sql_eval(ast[2], row, schema, pyarrow_isin)
        if a is False or b is False:
            return False
        return None if a is None or b is None else True
    if op == "or":
        a, b = sql_eval(ast[1], row, schema, pyarrow_isin), sql_eval(ast[2], row, schema, pyarrow_isin)
        if a is True or b is True:
            return True
        return None if a is None or b is None else False
    path = tuple(ast[1])
    f = build.field_by_path(schema, path)
    t = f.field_type
    v = _norm(_get(row, path), t)
    if op == "null":
        if f.required:
            # As Java's binder (UnboundPredicate.bindUnaryOperation) and PyIceberg's decide it:
            # a required field is never NULL, so IS NULL is false and IS NOT NULL true, even
            # where an optional struct around it is NULL (SQL would say the opposite there).
            return bool(ast[2])
        return (v is not None) if ast[2] else (v is None)
    if v is None:
        # PyIceberg folds an IN of one value into = (NOT IN into !=) as it binds it: then
        # NULL is unknown again. A required field NULL under a NULL struct stays unknown too:
        # the package guards its IN with the field's IS NOT NULL, which a required field's
        # binding takes for true (docs/python.md names this departure from PyIceberg).
        if op == "in" and pyarrow_isin and len(_distinct(ast[2], t)) > 1 and not f.required:
            return bool(ast[3])
        return None
    if op == "nan":
        isnan = isinstance(v, float) and math.isnan(v)
        return (not isnan) if ast[2] else isnan
    if op == "starts":
        r = v.startswith(ast[2])
        return (not r) if ast[3] else r
    if op == "in":
        lits = [_lit_for(gen.dec(x), t) for x in ast[2]]
        r = any(_cmp(v, "=", x) for x in lits)
        return (not r) if ast[3] else r
    return _cmp(v, ast[2], _lit_for(gen.dec(ast[3]), t))


def _distinct(lits, t):
    """The distinct values of encoded literals once typed as column type `t` (two doubles of one
    float32 value are one), as a Python set holds them: PyIceberg folds an `In` of one value
    when it binds it to the column."""
    out = set()
    for x in lits:
        v = _lit_for(gen.dec(x), t)
        try:
            out.add(v)
        except TypeError:
            out.add(repr(v))
    return out


def filter_arrow(arrow, ast, schema, pyarrow_isin=False):
    """The rows of `arrow` (a read in `schema`) where the filter is TRUE, and the others."""
    keep, rest = [], []
    for i, r in enumerate(arrow.to_pylist()):
        (keep if sql_eval(ast, r, schema, pyarrow_isin) is True else rest).append(i)
    return arrow.take(pa.array(keep, pa.int64())), arrow.take(pa.array(rest, pa.int64()))


def quote_name(n):
    return '"' + n.replace('"', '""') + '"'


def sql_literal(v, t):
    from pyiceberg.types import BooleanType, DecimalType, DoubleType, FloatType, IntegerType, LongType
    if isinstance(t, BooleanType):
        return "true" if v else "false"
    if isinstance(t, (IntegerType, LongType)):
        return str(v)
    if isinstance(t, (FloatType, DoubleType)):
        # The exact decimal expansion: no exponent for the parser to read differently.
        return format(decimal.Decimal(v), "f")
    if isinstance(t, DecimalType):
        return format(v, "f")
    if isinstance(v, (dt.date, dt.time, dt.datetime)):
        return "'" + v.isoformat() + "'"
    return "'" + str(v).replace("'", "''") + "'"


def sql_text(ast, schema):
    """The filter as iceberg-ops' text filters spell it (docs/datamig.md, ops_core::filter)."""
    op = ast[0]
    if op in ("true", "false"):
        return op
    if op == "not":
        return f"NOT ({sql_text(ast[1], schema)})"
    if op in ("and", "or"):
        return f"({sql_text(ast[1], schema)}) {op.upper()} ({sql_text(ast[2], schema)})"
    path = tuple(ast[1])
    col = ".".join(quote_name(n) for n in path)
    t = build.field_by_path(schema, path).field_type
    if op == "null":
        return f"{col} IS {'NOT ' if ast[2] else ''}NULL"
    if op == "nan":
        return f"{col} IS {'NOT ' if ast[2] else ''}NAN"
    if op == "starts":
        return f"{col} {'NOT ' if ast[3] else ''}LIKE '" + ast[2].replace("'", "''") + "%'"
    if op == "in":
        lits = ", ".join(sql_literal(gen.dec(x), t) for x in ast[2])
        return f"{col} {'NOT ' if ast[3] else ''}IN ({lits})"
    return f"{col} {ast[2]} {sql_literal(gen.dec(ast[3]), t)}"


# ---------------------------------------------------------------- partitions


def partition_tuple(row, schema, spec):
    """The row's partition under `spec`, canonical (PyIceberg's transforms)."""
    from pyiceberg.partitioning import _to_partition_representation
    out = []
    for pf in spec.fields:
        path = build.path_of_id(schema, pf.source_id)
        src = schema.find_field(pf.source_id).field_type
        v = _get(row, path) if path else None
        if v is None:
            out.append(None)
            continue
        if isinstance(v, (bytes, bytearray)) and src.__class__.__name__ == "UUIDType":
            v = uuid.UUID(bytes=bytes(v))
        rep = _to_partition_representation(src, v)
        r = pf.transform.transform(src)(rep)
        out.append(("nan",) if isinstance(r, float) and math.isnan(r) else
                    ("f", repr(r)) if isinstance(r, float) else r)
    return tuple(out)


# ---------------------------------------------------------------- files


def local(path):
    return build.local(path)


def referenced_files(table):
    """Every file the table's metadata references: manifest lists, manifests, data and delete
    files of every snapshot (any entry status), statistics files. As local paths."""
    io = table.io
    out = {}
    for snap in table.metadata.snapshots:
        out[snap.manifest_list] = "manifest-list"
        for m in snap.manifests(io):
            out[m.manifest_path] = "manifest"
            for e in m.fetch_manifest_entry(io, discard_deleted=False):
                out[e.data_file.file_path] = "data" if e.data_file.content == 0 else "delete"
    for s in getattr(table.metadata, "statistics", []) or []:
        out[s.statistics_path] = "statistics"
    return out


def live_data_files(table, snapshot_id=None):
    """Paths of the live data/delete files of a snapshot (default: current)."""
    snap = table.snapshot_by_id(snapshot_id) if snapshot_id else table.current_snapshot()
    if snap is None:
        return set()
    out = set()
    for m in snap.manifests(table.io):
        for e in m.fetch_manifest_entry(table.io, discard_deleted=True):
            out.add(e.data_file.file_path)
    return out


def live_files(table):
    """The files the table's snapshots need: each snapshot's manifest list, its manifests and
    the files its manifests list as live (added or existing, not deleted entries)."""
    io = table.io
    out = {}
    for snap in table.metadata.snapshots:
        out[snap.manifest_list] = "manifest-list"
        for m in snap.manifests(io):
            out[m.manifest_path] = "manifest"
            for e in m.fetch_manifest_entry(io, discard_deleted=True):
                out[e.data_file.file_path] = "data" if e.data_file.content == 0 else "delete"
    return out


def all_data_files(table):
    return {p for p, kind in referenced_files(table).items() if kind in ("data", "delete")}


def data_locations(table):
    """Where the table's writers may put data files: write.data.path (or the older
    write.folder-storage.path / write.object-storage.path) when set, else <location>/data;
    anything under the table location is accepted too."""
    props = table.properties
    out = [table.metadata.location.rstrip("/")]
    for k in ("write.data.path", "write.folder-storage.path", "write.object-storage.path"):
        if props.get(k):
            out.append(props[k].rstrip("/"))
    return out


def outside_problems(table, new_files):
    """Files among `new_files` (referenced paths) that are not inside the table's data location:
    after normalising `.`/`..` segments (as a file system resolves them), every path must lie
    under one of `data_locations`, and must exist there."""
    problems = []
    roots = [os.path.normpath(local(r)) for r in data_locations(table)]
    for p in sorted(new_files):
        lp = local(p)
        norm = os.path.normpath(lp)
        if not any(norm == r or norm.startswith(r + "/") for r in roots):
            problems.append(f"file outside the table's data location {roots}: {p}")
        elif norm != lp.rstrip("/"):
            problems.append(f"file path with ./.. or // segments: {p}")
        elif not os.path.exists(lp):
            problems.append(f"referenced file missing on disk: {p}")
    return problems


def refs_of(table):
    return {name: (r.snapshot_id, str(r.snapshot_ref_type)) for name, r in table.metadata.refs.items()}
