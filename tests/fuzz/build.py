"""PyIceberg writes a case's table: the schema, spec and properties of gen.py's description, then
its history, one PyIceberg operation per op.

An op PyIceberg refuses is skipped and noted (a shrunk case may have lost what it relied on;
a generated one may ask for what PyIceberg does not do), never fatal: the table PyIceberg left
is the case. Values are conformed to the table's schema at the time of each write (by column
name), so a row written after a dropped rename or widening still fits.
"""

import datetime as dt
import decimal
import math
import os
import random
import uuid
from collections import defaultdict

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import (AlwaysFalse, AlwaysTrue, And, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                   IsNaN, IsNull, LessThan, LessThanOrEqual, Not, NotEqualTo, NotIn, NotNaN,
                                   NotNull, NotStartsWith, Or, Reference, StartsWith)
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestContent, ManifestEntry,
                                ManifestEntryStatus, ManifestWriterV2)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.transforms import VoidTransform, parse_transform
from pyiceberg.typedef import Record
from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FixedType, FloatType,
                             IntegerType, ListType, LongType, MapType, NestedField, StringType, StructType,
                             TimestampType, TimestamptzType, TimeType, UUIDType)

import gen
import pyiceberg_fixes  # noqa: F401  (PyIceberg's NULL list<struct> read as [], corrected first)

# ---------------------------------------------------------------- types


def ice_prim(t):
    k = gen.prim_kind(t)
    if k == "decimal":
        return DecimalType(*gen.decimal_ps(t))
    if k == "fixed":
        return FixedType(gen.fixed_len(t))
    return {"boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
            "double": DoubleType(), "date": DateType(), "time": TimeType(), "timestamp": TimestampType(),
            "timestamptz": TimestamptzType(), "string": StringType(), "uuid": UUIDType(),
            "binary": BinaryType()}[k]


class Ids:
    def __init__(self, start=1):
        self.n = start - 1

    def __call__(self):
        self.n += 1
        return self.n


def ice_type(t, ids):
    if gen.is_struct(t):
        return StructType(*[ice_field(f, ids) for f in t["struct"]])
    if gen.is_list(t):
        eid = ids()
        return ListType(element_id=eid, element_type=ice_type(t["list"], ids), element_required=t["element_required"])
    if gen.is_map(t):
        kid, vid = ids(), ids()
        return MapType(key_id=kid, key_type=ice_type(t["map"][0], ids), value_id=vid,
                       value_type=ice_type(t["map"][1], ids), value_required=t["value_required"])
    return ice_prim(t)


def ice_field(f, ids):
    fid = ids()
    return NestedField(fid, f["name"], ice_type(f["type"], ids), required=f["required"])


def ice_schema(fields):
    ids = Ids()
    return Schema(*[ice_field(f, ids) for f in fields])


def field_by_path(schema, path):
    """The NestedField at `path` (names; list/map hops as element/value), by walking, so names
    holding dots are never split."""
    fields = schema.fields
    field = None
    i = 0
    while i < len(path):
        field = next((f for f in fields if f.name == path[i]), None)
        if field is None:
            return None
        i += 1
        t = field.field_type
        while i < len(path) and (isinstance(t, ListType) or isinstance(t, MapType)):
            if isinstance(t, ListType) and path[i] == "element":
                field = t.element_field
            elif isinstance(t, MapType) and path[i] == "value":
                field = t.value_field
            elif isinstance(t, MapType) and path[i] == "key":
                field = t.key_field
            else:
                return None
            t = field.field_type
            i += 1
        if i < len(path):
            if not isinstance(t, StructType):
                return None
            fields = t.fields
    return field


def path_of_id(schema, fid):
    """The name path of field `fid` (list/map hops as element/key/value)."""
    def walk(fields, prefix):
        for f in fields:
            p = prefix + (f.name,)
            if f.field_id == fid:
                return p
            r = walk_type(f.field_type, p)
            if r:
                return r
        return None

    def walk_type(t, p):
        if isinstance(t, StructType):
            return walk(t.fields, p)
        if isinstance(t, ListType):
            if t.element_id == fid:
                return p + ("element",)
            return walk_type(t.element_type, p + ("element",))
        if isinstance(t, MapType):
            if t.key_id == fid:
                return p + ("key",)
            if t.value_id == fid:
                return p + ("value",)
            return walk_type(t.value_type, p + ("value",))
        return None

    return walk(schema.fields, ())


# ---------------------------------------------------------------- conforming values


def default_of(t):
    if isinstance(t, BooleanType):
        return False
    if isinstance(t, (IntegerType, LongType)):
        return 0
    if isinstance(t, (FloatType, DoubleType)):
        return 0.0
    if isinstance(t, DecimalType):
        return decimal.Decimal(0).scaleb(-t.scale)
    if isinstance(t, DateType):
        return dt.date(2000, 1, 1)
    if isinstance(t, TimeType):
        return dt.time(0, 0)
    if isinstance(t, TimestampType):
        return dt.datetime(2000, 1, 1)
    if isinstance(t, TimestamptzType):
        return dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
    if isinstance(t, StringType):
        return ""
    if isinstance(t, UUIDType):
        return uuid.UUID(int=0)
    if isinstance(t, FixedType):
        return bytes(len(t))
    if isinstance(t, BinaryType):
        return b""
    if isinstance(t, StructType):
        return {f.name: conform(None, f.field_type, f.required) for f in t.fields}
    if isinstance(t, (ListType, MapType)):
        return []
    raise TypeError(t)


def conform(v, t, required):
    """`v` as a value of Iceberg type `t`, or NULL/the type's default where it does not fit."""
    out = _conform(v, t)
    if out is None and required:
        return default_of(t)
    return out


def _conform(v, t):
    if v is None:
        return None
    if isinstance(t, StructType):
        if not isinstance(v, dict):
            return None
        return {f.name: conform(v.get(f.name), f.field_type, f.required) for f in t.fields}
    if isinstance(t, ListType):
        if not isinstance(v, list) or (v and isinstance(v[0], tuple)):
            return None
        return [conform(x, t.element_type, t.element_required) for x in v]
    if isinstance(t, MapType):
        if not isinstance(v, list) or (v and not isinstance(v[0], tuple)):
            return None
        out, seen = [], set()
        for k, x in v:
            k = _conform(k, t.key_type)
            if k is None or repr(k) in seen:
                continue
            seen.add(repr(k))
            out.append((k, conform(x, t.value_type, t.value_required)))
        return out
    if isinstance(t, BooleanType):
        return v if isinstance(v, bool) else None
    if isinstance(t, IntegerType):
        return v if isinstance(v, int) and not isinstance(v, bool) and -(2 ** 31) <= v < 2 ** 31 else None
    if isinstance(t, LongType):
        return v if isinstance(v, int) and not isinstance(v, bool) and -(2 ** 63) <= v < 2 ** 63 else None
    if isinstance(t, FloatType):
        return gen.f32(v) if isinstance(v, float) else None
    if isinstance(t, DoubleType):
        return v if isinstance(v, float) else None
    if isinstance(t, DecimalType):
        if not isinstance(v, decimal.Decimal):
            return None
        try:
            q = v.quantize(decimal.Decimal(1).scaleb(-t.scale))
        except decimal.InvalidOperation:
            return None
        return q if len(q.as_tuple().digits) <= t.precision and q == v else None
    if isinstance(t, DateType):
        return v if isinstance(v, dt.date) and not isinstance(v, dt.datetime) else None
    if isinstance(t, TimeType):
        return v if isinstance(v, dt.time) else None
    if isinstance(t, TimestampType):
        return v if isinstance(v, dt.datetime) and v.tzinfo is None else None
    if isinstance(t, TimestamptzType):
        return v if isinstance(v, dt.datetime) and v.tzinfo is not None else None
    if isinstance(t, StringType):
        return v if isinstance(v, str) else None
    if isinstance(t, UUIDType):
        return v if isinstance(v, uuid.UUID) else None
    if isinstance(t, FixedType):
        return v if isinstance(v, bytes) and len(v) == len(t) else None
    if isinstance(t, BinaryType):
        return v if isinstance(v, bytes) else None
    return None


def conform_rows(schema, rows):
    return [{f.name: conform(r.get(f.name), f.field_type, f.required) for f in schema.fields} for r in rows]


def arrow_rows(table, rows):
    """Decoded rows (gen.dec_row) as an Arrow table in `table`'s current schema."""
    schema = table.schema()
    return pa.Table.from_pylist(conform_rows(schema, rows), schema=schema.as_arrow())


# ---------------------------------------------------------------- filters for PyIceberg


def py_filter(ast):
    """gen.py's filter AST as a PyIceberg expression (references by dotted name; literals as
    PyIceberg converts them: dates and times as ISO strings)."""
    op = ast[0]
    if op == "true":
        return AlwaysTrue()
    if op == "false":
        return AlwaysFalse()
    if op == "and":
        return And(py_filter(ast[1]), py_filter(ast[2]))
    if op == "or":
        return Or(py_filter(ast[1]), py_filter(ast[2]))
    if op == "not":
        return Not(py_filter(ast[1]))
    ref = Reference(".".join(ast[1]))
    if op == "null":
        return NotNull(ref) if ast[2] else IsNull(ref)
    if op == "nan":
        return NotNaN(ref) if ast[2] else IsNaN(ref)
    if op == "starts":
        return NotStartsWith(ref, ast[2]) if ast[3] else StartsWith(ref, ast[2])
    if op == "in":
        lits = [py_literal(gen.dec(x)) for x in ast[2]]
        return NotIn(ref, lits) if ast[3] else In(ref, lits)
    lit = py_literal(gen.dec(ast[3]))
    return {"=": EqualTo, "!=": NotEqualTo, "<": LessThan, "<=": LessThanOrEqual, ">": GreaterThan,
            ">=": GreaterThanOrEqual}[ast[2]](ref, lit)


def py_literal(v):
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, uuid.UUID):
        return str(v)
    return v


# ---------------------------------------------------------------- the table


def local(path):
    """A file:// location as a local path (no percent-decoding: the name is the object's)."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    return path


def create(catalog, ident, case):
    schema = ice_schema(case["schema"])
    fields = []
    names = {".".join(p) for p in _all_names(schema)}
    used = set()
    for i, s in enumerate(case["spec"]):
        f = field_by_path(schema, s["source"])
        if f is None:
            continue
        tr = parse_transform(s["transform"])
        src = ".".join(s["source"])
        name = s.get("name") or _default_name(src, s["transform"])
        if name in used or (name in names and s["transform"] != "identity"):
            continue
        used.add(name)
        fields.append(PartitionField(source_id=f.field_id, field_id=1000 + len(fields), transform=tr, name=name))
    spec = PartitionSpec(*fields)
    props = {"format-version": str(case["version"])}
    props.update(case.get("props", {}))
    return catalog.create_table(ident, schema=schema, partition_spec=spec, properties=props)


def _all_names(schema):
    out = []

    def walk(fields, prefix):
        for f in fields:
            p = prefix + (f.name,)
            out.append(p)
            if isinstance(f.field_type, StructType):
                walk(f.field_type.fields, p)
    walk(schema.fields, ())
    return out


def _default_name(src, transform):
    base = transform.split("[")[0]
    arg = transform[len(base) + 1:-1] if "[" in transform else ""
    return {"identity": src, "bucket": f"{src}_bucket_{arg}", "truncate": f"{src}_trunc_{arg}",
            "year": f"{src}_year", "month": f"{src}_month", "day": f"{src}_day", "hour": f"{src}_hour",
            "void": f"{src}_null"}[base]


def apply_op(catalog, table, op):
    """Applies one history op; returns the reloaded table."""
    kind = op["op"]
    if kind == "append":
        rows = [gen.dec_row(r) for r in op["rows"]]
        table.append(arrow_rows(table, rows), branch=op.get("branch", "main"))
    elif kind == "delete":
        table.delete(py_filter(op["filter"]))
    elif kind == "overwrite":
        rows = [gen.dec_row(r) for r in op["rows"]]
        table.overwrite(arrow_rows(table, rows), overwrite_filter=py_filter(op["filter"]))
    elif kind == "add_column":
        parent = tuple(op["path"][:-1])
        if parent and field_by_path(table.schema(), parent) is None:
            raise ValueError(f"no parent {parent}")
        with table.update_schema() as u:
            u.add_column(tuple(op["path"]), ice_type(op["type"], Ids(1)), required=False)
    elif kind == "rename":
        with table.update_schema() as u:
            u.rename_column(tuple(op["path"]), op["new"])
    elif kind == "drop":
        with table.update_schema() as u:
            u.delete_column(tuple(op["path"]))
    elif kind == "widen":
        with table.update_schema() as u:
            u.update_column(tuple(op["path"]), field_type=ice_prim(op["to"]))
    elif kind == "optional":
        with table.update_schema() as u:
            u.update_column(tuple(op["path"]), required=False)
    elif kind == "move_first":
        with table.update_schema() as u:
            u.move_first(tuple(op["path"]))
    elif kind == "move_after":
        with table.update_schema() as u:
            u.move_after(tuple(op["path"]), tuple(op["after"]))
    elif kind == "spec_add":
        f = field_by_path(table.schema(), op["source"])
        if f is None:
            raise ValueError(f"no column {op['source']}")
        with table.update_spec() as u:
            u.add_field(".".join(op["source"]), parse_transform(op["transform"]), op.get("name"))
    elif kind == "spec_remove":
        name = op.get("name")
        spec = table.spec()
        f = field_by_path(table.schema(), op["source"])
        if name is None or not any(pf.name == name for pf in spec.fields):
            cands = [pf for pf in spec.fields if f is not None and pf.source_id == f.field_id
                     and str(pf.transform) == op["transform"]]
            if not cands:
                raise ValueError(f"no partition field for {op}")
            name = cands[0].name
        with table.update_spec() as u:
            u.remove_field(name)
    elif kind == "props":
        if "data_path" in op:
            loc = table.metadata.location
            path = f"{loc}/{op['sub']}" if op["data_path"] == "inside" else f"{loc}{op['sub']}"
            table.transaction().set_properties({"write.data.path": path}).commit_transaction()
        if op.get("set"):
            table.transaction().set_properties(op["set"]).commit_transaction()
        if op.get("remove"):
            present = [k for k in op["remove"] if k in table.properties]
            if present:
                table.transaction().remove_properties(*present).commit_transaction()
    elif kind == "tag":
        sid = table.metadata.current_snapshot_id
        if sid is None:
            raise ValueError("no snapshot to tag")
        table.manage_snapshots().create_tag(sid, op["name"]).commit()
    elif kind == "branch":
        sid = table.metadata.current_snapshot_id
        if sid is None:
            raise ValueError("no snapshot to branch from")
        table.manage_snapshots().create_branch(sid, op["name"]).commit()
    elif kind == "import":
        import_file(table, op)
    elif kind == "pos_delete":
        position_delete(table, op)
    elif kind == "eq_delete":
        equality_delete(table, op)
    else:
        raise ValueError(f"unknown op {kind}")
    return catalog.load_table(table.name())


_imports = [0]


def strip_ids(t):
    """An Arrow type without PARQUET:field_id metadata anywhere (a file another engine wrote)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, strip_ids(f.type), f.nullable) for f in t])
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(pa.field("element", strip_ids(t.value_type), t.value_field.nullable))
    if pa.types.is_map(t):
        return pa.map_(strip_ids(t.key_type), pa.field("value", strip_ids(t.item_type), t.item_field.nullable))
    return t


def import_file(table, op):
    """A Parquet file without field ids and without (some of) its identity partition columns,
    registered by a fast append with its partition tuple, as Spark's add_files/migrate register
    Hive files: PyIceberg reads the missing columns from the partition (identity constants)."""
    from pyiceberg.io.pyarrow import (compute_statistics_plan, data_file_statistics_from_parquet_metadata,
                                      parquet_path_to_id_mapping)
    from pyiceberg.partitioning import _to_partition_representation

    schema = table.schema()
    spec = table.spec()
    rows = conform_rows(schema, [gen.dec_row(r) for r in op["rows"]])
    drop = set(op.get("drop", []))
    values = []
    for pf in spec.fields:
        if isinstance(pf.transform, VoidTransform):
            values.append(None)
            continue
        if str(pf.transform) != "identity":
            raise ValueError("imports need an identity-only spec")
        path = path_of_id(schema, pf.source_id)
        if path is None or len(path) != 1:
            raise ValueError("imports need top-level identity sources")
        src = schema.find_field(pf.source_id)
        v = rows[0][path[0]]
        if any(not _same(r[path[0]], v) for r in rows):
            raise ValueError("rows of an import share their partition")
        values.append(_to_partition_representation(src.field_type, v))
        if not src.required and path[0] in drop:
            pass
    keep = [f for f in schema.fields if not (f.name in drop and any(
        pf.source_id == f.field_id and str(pf.transform) == "identity" for pf in spec.fields))]
    arrow_schema = pa.schema([pa.field(f.name, strip_ids(schema.as_arrow().field(f.name).type), not f.required)
                              for f in keep])
    data = pa.Table.from_pylist([{f.name: r[f.name] for f in keep} for r in rows], schema=arrow_schema)
    _imports[0] += 1
    loc = table.metadata.location
    path = f"{loc}/data/imported-{os.getpid()}-{_imports[0]}.parquet"
    os.makedirs(os.path.dirname(local(path)), exist_ok=True)
    pq.write_table(data, local(path))
    if table.metadata.name_mapping() is None:
        table.transaction().set_properties(
            {"schema.name-mapping.default": schema.name_mapping.model_dump_json()}).commit_transaction()
    md = pq.read_metadata(local(path))
    stats = data_file_statistics_from_parquet_metadata(
        parquet_metadata=md, stats_columns=compute_statistics_plan(schema, table.metadata.properties),
        parquet_column_mapping=parquet_path_to_id_mapping(schema))
    df = DataFile.from_args(content=DataFileContent.DATA, file_path=path, file_format=FileFormat.PARQUET,
                            partition=Record(*values), file_size_in_bytes=os.path.getsize(local(path)),
                            sort_order_id=None, spec_id=table.metadata.default_spec_id, equality_ids=None,
                            key_metadata=None, **stats.to_serialized_dict())
    with table.transaction() as tx:
        with tx.update_snapshot().fast_append() as fa:
            fa.append_data_file(df)


# Position delete files' reserved columns (the spec's `file_path` and `pos`).
DELETE_FILE_PATH_ID = 2147483546
DELETE_POS_ID = 2147483545


def position_delete(table, op):
    """Position delete files over some rows of some live data files of a branch, committed in a
    snapshot of their own as Spark's merge-on-read DELETE commits them (a RowDelta): one file
    per partition of the files it names (their spec and partition tuple), rows sorted by path
    and position, with Java's full `file_path`/`pos` bounds unless the op says none (some
    writers leave them out). The op's seed decides which files and rows, from the branch's
    live files in manifest order (their names hold uuids, so not by name)."""
    rng = random.Random(op["seed"])
    branch, snapshot = _branch_snapshot(table, rng, op)
    live = [(spec_id, f) for spec_id, f, _ in _live_data_files(table, snapshot)]
    if not live:
        raise ValueError(f"no live data file on {branch}")
    groups = {}
    for spec_id, f in rng.sample(live, min(len(live), op["files"])):
        n = f.record_count
        positions = sorted(rng.sample(range(n), max(1, round(n * op["share"]))))
        key = (spec_id, tuple(f.partition))
        groups.setdefault(key, (spec_id, f.partition, []))[2].extend((f.file_path, p) for p in positions)
    arrow_schema = pa.schema([
        pa.field("file_path", pa.string(), False, {b"PARQUET:field_id": str(DELETE_FILE_PATH_ID).encode()}),
        pa.field("pos", pa.int64(), False, {b"PARQUET:field_id": str(DELETE_POS_ID).encode()}),
    ])
    files = []
    for spec_id, partition, rows in groups.values():
        rows.sort()
        _imports[0] += 1
        name = f"pos-deletes-{os.getpid()}-{_imports[0]}.parquet"
        path = table.location_provider().new_data_location(name)
        os.makedirs(os.path.dirname(local(path)), exist_ok=True)
        data = pa.Table.from_pylist([{"file_path": fp, "pos": p} for fp, p in rows], schema=arrow_schema)
        pq.write_table(data, local(path))
        lower = upper = None
        if op.get("bounds"):
            lower = {DELETE_FILE_PATH_ID: rows[0][0].encode(), DELETE_POS_ID: min(p for _, p in rows).to_bytes(8, "little")}
            upper = {DELETE_FILE_PATH_ID: rows[-1][0].encode(), DELETE_POS_ID: max(p for _, p in rows).to_bytes(8, "little")}
        files.append((spec_id, DataFile.from_args(
            content=DataFileContent.POSITION_DELETES, file_path=path, file_format=FileFormat.PARQUET,
            partition=partition, record_count=len(rows), file_size_in_bytes=os.path.getsize(local(path)),
            value_counts={DELETE_FILE_PATH_ID: len(rows), DELETE_POS_ID: len(rows)},
            null_value_counts={DELETE_FILE_PATH_ID: 0, DELETE_POS_ID: 0},
            lower_bounds=lower, upper_bounds=upper, spec_id=spec_id, equality_ids=None,
            sort_order_id=None, key_metadata=None)))
    with table.transaction() as tx:
        _RowDelta(files, tx, table.io, branch).commit()


# Types an equality delete names here: Java takes any primitive, but a float's NaN and -0.0
# have no agreed equality across engines, and pyarrow cannot hash the uuid extension type.
EQUALITY_TYPES = (BooleanType, IntegerType, LongType, DecimalType, DateType, TimeType, TimestampType,
                  TimestamptzType, StringType, BinaryType, FixedType)


def _branch_snapshot(table, rng, op):
    """The branch an op on existing files writes to (`main`, or with `op["branch"]` one of
    the others drawn by `rng`) and its head snapshot."""
    branch = "main"
    if op.get("branch"):
        branches = sorted(n for n, r in table.metadata.refs.items()
                          if n != "main" and r.snapshot_ref_type == "branch")
        if branches:
            branch = rng.choice(branches)
    snapshot = table.metadata.snapshot_by_name(branch)
    if snapshot is None:
        raise ValueError(f"no snapshot on {branch} to delete rows from")
    return branch, snapshot


def _live_data_files(table, snapshot):
    """(spec id, data file, data sequence number) of the snapshot's live data files with rows,
    in manifest order."""
    live = []
    for m in snapshot.manifests(table.io):
        if m.content == ManifestContent.DATA:
            live += [(m.partition_spec_id, e.data_file, e.sequence_number)
                     for e in m.fetch_manifest_entry(table.io, discard_deleted=True)
                     if e.data_file.record_count > 0]
    return live


def equality_delete(table, op):
    """An equality delete file (or one per partition) over 1-2 top-level columns of the current
    schema, committed as Flink's upserts commit them (a RowDelta): the key values of some rows
    of 1-2 live data files of a branch, plus a NULL key when the columns are optional (NULL
    equals NULL in an equality delete). Scoped to the partition of the files the values came
    from, or with `op["global"]`, where the table has an unpartitioned spec, written under it:
    it then applies to every older data file, whatever its partition."""
    from pyiceberg.io.pyarrow import ArrowScan, schema_to_pyarrow
    from pyiceberg.table import FileScanTask

    rng = random.Random(op["seed"])
    branch, snapshot = _branch_snapshot(table, rng, op)
    schema = table.schema()
    cands = [f for f in schema.fields if isinstance(f.field_type, EQUALITY_TYPES)]
    if not cands:
        raise ValueError("no top-level column an equality delete can name")
    cols = rng.sample(cands, min(len(cands), op["columns"]))
    live = _live_data_files(table, snapshot)
    if not live:
        raise ValueError(f"no live data file on {branch}")
    key_schema = Schema(*cols)
    arrow_schema = schema_to_pyarrow(key_schema)
    unpartitioned = [s for s in table.metadata.partition_specs
                     if all(isinstance(f.transform, VoidTransform) for f in s.fields)]
    groups = {}
    for spec_id, f, _ in rng.sample(live, min(len(live), 2)):
        rows = ArrowScan(table.metadata, table.io, schema, AlwaysTrue()).to_table(
            [FileScanTask(f)]).select([c.name for c in cols]).to_pylist()
        picked = rng.sample(rows, min(len(rows), op["keys"]))
        if op.get("global") and unpartitioned:
            # A NULL per (void) field of the unpartitioned spec.
            spec = unpartitioned[0]
            key = (spec.spec_id, ())
            groups.setdefault(key, (spec.spec_id, Record(*[None] * len(spec.fields)), []))[2].extend(picked)
        else:
            key = (spec_id, tuple(f.partition))
            groups.setdefault(key, (spec_id, f.partition, []))[2].extend(picked)
    if op.get("null") and not any(c.required for c in cols):
        next(iter(groups.values()))[2].append({c.name: None for c in cols})
    files = []
    for spec_id, partition, rows in groups.values():
        _imports[0] += 1
        path = table.location_provider().new_data_location(f"eq-deletes-{os.getpid()}-{_imports[0]}.parquet")
        os.makedirs(os.path.dirname(local(path)), exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=arrow_schema), local(path))
        files.append((spec_id, DataFile.from_args(
            content=DataFileContent.EQUALITY_DELETES, file_path=path, file_format=FileFormat.PARQUET,
            partition=partition, record_count=len(rows), file_size_in_bytes=os.path.getsize(local(path)),
            value_counts={c.field_id: len(rows) for c in cols}, spec_id=spec_id,
            equality_ids=[c.field_id for c in cols], sort_order_id=None, key_metadata=None)))
    with table.transaction() as tx:
        _RowDelta(files, tx, table.io, branch).commit()


class _DeleteManifestWriter(ManifestWriterV2):
    """A v2 manifest of delete files (PyIceberg writes data manifests only)."""

    def content(self):
        return ManifestContent.DELETES

    @property
    def _meta(self):
        return {**super()._meta, "content": "deletes"}


class _RowDelta(_FastAppendFiles):
    """Java's `RowDelta` with deletes only: the delete files in delete manifests (one per spec),
    every manifest of the parent kept."""

    def __init__(self, delete_files, tx, io, branch):
        super().__init__(operation=Operation.DELETE, transaction=tx, io=io, branch=branch)
        self._deletes = delete_files  # (spec id, delete file)
        self._added_data_files = [f for _, f in delete_files]  # the summary counts them as deletes

    def _summary(self, snapshot_properties=None):
        # PyIceberg's summary files every added file under the current spec, which fails for a
        # delete file of an older one: each is counted under its own spec here.
        from pyiceberg.table.snapshots import SnapshotSummaryCollector, Summary, update_snapshot_summaries

        md = self._transaction.table_metadata
        specs = md.specs()
        ssc = SnapshotSummaryCollector()
        for spec_id, f in self._deletes:
            ssc.add_file(data_file=f, partition_spec=specs[spec_id], schema=md.schema())
        previous = md.snapshot_by_id(self._parent_snapshot_id) if self._parent_snapshot_id is not None else None
        return update_snapshot_summaries(
            summary=Summary(operation=self._operation, **ssc.build(), **(snapshot_properties or {})),
            previous_summary=previous.summary if previous is not None else None)

    def _manifests(self):
        by_spec = defaultdict(list)
        for spec_id, f in self._deletes:
            by_spec[spec_id].append(f)
        out = []
        for spec_id, files in by_spec.items():
            writer = _DeleteManifestWriter(spec=self.spec(spec_id), schema=self.schema(),
                                           output_file=self.new_manifest_output(),
                                           snapshot_id=self._snapshot_id, avro_compression=self._compression)
            with writer:
                for f in files:
                    writer.add_entry(ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED, snapshot_id=self._snapshot_id,
                        sequence_number=None, file_sequence_number=None, data_file=f))
            out.append(writer.to_manifest_file())
        return out + self._existing_manifests()


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def build(catalog, ident, case, notes):
    """Creates `ident` and applies the case's history; returns the table. Refused ops are noted."""
    table = create(catalog, ident, case)
    for i, op in enumerate(case["ops"]):
        try:
            table = apply_op(catalog, table, op)
        except Exception as e:  # noqa: BLE001 - PyIceberg refusing an op skips it
            notes.append(f"op {i} ({op['op']}) skipped: {type(e).__name__}: {str(e)[:200]}")
            table = catalog.load_table(ident)
    return table
