#!/usr/bin/env python3
"""Shapes the shared corpus (../shared/corpus/make_corpus.py) lacks, written by PyIceberg 0.12
into the same catalog and namespace, for tests/it/corpus.rs.

    python corpus_extra.py --warehouse DIR [--rows N]

| table | what it holds |
|---|---|
| reused_names | a column dropped and another added under its name with another type; a column renamed to the name of a dropped one, and partitioned by it |
| v1_evolved | format version 1 (no sequence numbers, v1 manifests): a partition field added, a column added, files under each spec, NaN |
| paged | many small row groups and pages, dictionary and plain pages in one file (`write.parquet.*` limits), twelve files |
| odd_names | column names with spaces, upper case, non-ASCII letters and a dot, a filter on a quoted name |
| identity_types | identity partitions on date, decimal, boolean, binary, fixed and timestamp (before the epoch), NULL partition values |
| maps | map<string,string>, map<int,double> (NaN and -0.0 values), map<string,struct>, no lists; NULL and empty maps, NULL values |
| widened_partition | identity partitions on an int and a float column, both widened (int->long, float->double) after the first files: older manifests hold int/float partition values, newer ones long/double, for the same partitions; NULL partition values |
"""
import argparse
import datetime as dt
import decimal
import os
import uuid

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import BucketTransform, IdentityTransform, TruncateTransform
from pyiceberg.types import (BinaryType, BooleanType, DateType, DecimalType, DoubleType, FixedType,
                             FloatType, IntegerType, ListType, LongType, MapType, NestedField, StringType,
                             StructType, TimestampType, TimeType, UUIDType)


def arrow(table, rows):
    return pa.Table.from_pylist(rows, schema=table.schema().as_arrow())


def reused_names(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "legacy", StringType()),
               NestedField(3, "b", IntegerType()), NestedField(4, "v", StringType()))
    spec = PartitionSpec(PartitionField(4, 1000, IdentityTransform(), "v"))
    t = cat.create_table("corpus.reused_names", schema=s, partition_spec=spec)
    half = n // 2
    t.append(arrow(t, [{"id": i, "legacy": f"old{i}", "b": i % 50, "v": ["x", "y", None][i % 3]} for i in range(half)]))
    with t.update_schema() as up:
        up.delete_column("legacy")
        up.delete_column("b")
    with t.update_schema() as up:
        # `b` is now the partition column (field 4); `legacy` a long (field 5): files written
        # before hold other values, of other types, under both names.
        up.rename_column("v", "b")
        up.add_column("legacy", LongType())
    t = cat.load_table("corpus.reused_names")
    t.append(arrow(t, [{"id": i, "b": ["x", "z", None][i % 3], "legacy": None if i % 4 == 0 else i * 3}
                       for i in range(half, n)]))


def v1_evolved(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType()),
               NestedField(3, "name", StringType()), NestedField(4, "amount", DoubleType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"),
                         PartitionField(1, 1001, BucketTransform(4), "id_bucket"))
    t = cat.create_table("corpus.v1_evolved", schema=s, partition_spec=spec, properties={"format-version": "1"})
    third = n // 3
    t.append(arrow(t, [{"id": i, "region": ["eu", "us", None][i % 3], "name": f"n{i}", "amount": i / 4}
                       for i in range(third)]))
    with t.update_spec() as up:
        # (Removing a field would leave a `void` transform, which PyIceberg 0.12 cannot write
        # a v1 manifest for.)
        up.add_field("name", TruncateTransform(2), "name_trunc")
    with t.update_schema() as up:
        up.add_column("added", DateType())
    t = cat.load_table("corpus.v1_evolved")
    t.append(arrow(t, [{"id": i, "region": ["eu", "apac"][i % 2], "name": None if i % 5 == 0 else f"m{i}",
                        "amount": -i / 4, "added": dt.date(2024, 1, 1) + dt.timedelta(days=i % 400)}
                       for i in range(third, 2 * third)]))
    t.append(arrow(t, [{"id": i, "region": "us", "name": f"late{i}", "amount": float("nan") if i % 40 == 0 else i,
                        "added": None} for i in range(2 * third, n)]))


def paged(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "cat", StringType()),
               NestedField(3, "text", StringType()), NestedField(4, "x", DoubleType()),
               NestedField(5, "amount", DecimalType(18, 4)), NestedField(6, "ts", TimestampType()),
               NestedField(7, "ok", BooleanType()))
    props = {"write.parquet.row-group-limit": "97", "write.parquet.page-row-limit": "13",
             "write.parquet.page-size-bytes": "512", "write.parquet.dict-size-bytes": "256"}
    t = cat.create_table("corpus.paged", schema=s, properties=props)
    step = max(n // 12, 1)
    for lo in range(0, n, step):
        t.append(arrow(t, [{
            "id": i, "cat": f"c{i % 7}",  # dictionary-friendly
            "text": None if i % 11 == 0 else f"row {i} " + "z" * (i % 37),  # overflows the dictionary
            "x": None if i % 13 == 0 else i * 0.5, "amount": decimal.Decimal(i * 7919 % 100000) / 10000,
            "ts": dt.datetime(2025, 1, 1) + dt.timedelta(seconds=i * 61), "ok": None if i % 17 == 0 else i % 3 == 0,
        } for i in range(lo, min(lo + step, n))]))


def odd_names(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "Order Total", DoubleType()),
               NestedField(3, "CustomerName", StringType()), NestedField(4, "größe", IntegerType()),
               NestedField(5, "dotted.name", StringType()), NestedField(6, "lower", StringType()))
    spec = PartitionSpec(PartitionField(3, 1000, TruncateTransform(1), "CustomerName_trunc"))
    t = cat.create_table("corpus.odd_names", schema=s, partition_spec=spec)
    t.append(arrow(t, [{"id": i, "Order Total": None if i % 9 == 0 else i * 1.25,
                        "CustomerName": ["Ada", "bob", "Çelik", None][i % 4], "größe": i % 40,
                        "dotted.name": f"d{i}", "lower": "x" if i % 2 else "X"} for i in range(n // 2)]))
    t.append(arrow(t, [{"id": i, "Order Total": -i * 1.25, "CustomerName": ["Ada", "Zoë"][i % 2],
                        "größe": None, "dotted.name": None, "lower": "y"} for i in range(n // 2, n)]))


def identity_types(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "day", DateType()),
               NestedField(3, "dec", DecimalType(6, 2)), NestedField(4, "flag", BooleanType()),
               NestedField(5, "uid", UUIDType()), NestedField(6, "bin", BinaryType()), NestedField(7, "fx", FixedType(3)),
               NestedField(8, "ts", TimestampType()), NestedField(9, "v", StringType()))
    # (PyIceberg 0.12 cannot write an identity partition on a uuid: pyarrow groups no extension type.)
    spec = PartitionSpec(*[PartitionField(i, 1000 + i, IdentityTransform(), name)
                           for i, name in [(2, "day"), (3, "dec"), (4, "flag"), (6, "bin"), (7, "fx"), (8, "ts")]])
    t = cat.create_table("corpus.identity_types", schema=s, partition_spec=spec)
    t.append(arrow(t, [{
        "id": i, "day": None if i % 7 == 0 else dt.date(2024, 2, 28) + dt.timedelta(days=i % 3),
        "dec": None if i % 5 == 0 else decimal.Decimal(i % 4) - decimal.Decimal("1.50"),
        "flag": None if i % 11 == 0 else i % 2 == 0, "uid": None if i % 13 == 0 else uuid.UUID(int=i),
        "bin": None if i % 6 == 0 else bytes([i % 2, 0xFF]), "fx": None if i % 9 == 0 else bytes([i % 2, 0, 0x7F]),
        "ts": dt.datetime(1969, 12, 31, 23, 59, 59, 999999) if i % 2 else dt.datetime(2030, 1, 1), "v": f"v{i}",
    } for i in range(max(n // 10, 50))]))


def maps(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType()),
               NestedField(3, "props", MapType(10, StringType(), 11, StringType(), value_required=False)),
               NestedField(4, "scores", MapType(12, IntegerType(), 13, DoubleType(), value_required=False)),
               NestedField(5, "nested", MapType(14, StringType(), 15, StructType(
                   NestedField(16, "a", IntegerType()), NestedField(17, "b", StringType())), value_required=False)))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    t = cat.create_table("corpus.maps", schema=s, partition_spec=spec)

    def row(i):
        return {"id": i, "region": ["eu", "us", None][i % 3],
                "props": None if i % 5 == 0 else {} if i % 5 == 1 else {"k": f"v{i}", "empty": "", "null": None},
                "scores": None if i % 7 == 0 else {i % 10: i / 2, -1: float("nan") if i % 2 else -0.0},
                "nested": None if i % 4 == 0 else {"x": {"a": i, "b": None}, "y": None}}
    t.append(arrow(t, [row(i) for i in range(n // 2)]))
    t.append(arrow(t, [row(i) for i in range(n // 2, n)]))


def widened_partition(cat, n):
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "qty", IntegerType()),
               NestedField(3, "score", FloatType()), NestedField(4, "note", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "qty"),
                         PartitionField(3, 1001, IdentityTransform(), "score"))
    t = cat.create_table("corpus.widened_partition", schema=s, partition_spec=spec)

    def row(i):
        return {"id": i, "qty": None if i % 9 == 0 else i % 3 - 1,
                "score": None if i % 7 == 0 else [0.5, -1.25][i % 2], "note": f"n{i}"}
    quarter = n // 4
    for k in range(2):
        t.append(arrow(t, [row(i) for i in range(k * quarter, (k + 1) * quarter)]))
    with t.update_schema() as up:
        up.update_column("qty", LongType())
        up.update_column("score", DoubleType())
    t = cat.load_table("corpus.widened_partition")
    for k in range(2, 4):
        t.append(arrow(t, [row(i) for i in range(k * quarter, n if k == 3 else (k + 1) * quarter)]))


def escaped_paths(cat, n):
    # Partition values a data file's path must escape as Java's partitionToPath does (a `/`, a
    # `#` that starts a URI fragment, `%`, `+`, `..` that would leave the table, non-ASCII), and
    # NULL beside the string "null", which Java's paths print alike: every writer must keep them
    # apart in the manifests and inside the table.
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "p", StringType()),
               NestedField(3, "q", StringType()), NestedField(4, "v", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"),
                         PartitionField(3, 1001, IdentityTransform(), "q"))
    t = cat.create_table("corpus.escaped_paths", schema=s, partition_spec=spec)
    ps = ["a/b", "sp ace", "#?&", "50%", "ü", "a%2Fb", "..", "", None, "null", "../../../../outside", "*~+="]
    qs = ["x/y z", "."]
    t.append(arrow(t, [{"id": i, "p": ps[i % len(ps)], "q": qs[i // len(ps) % len(qs)], "v": f"v{i}"}
                       for i in range(max(n // 10, 50))]))


def nested_evolved(cat, n):
    # Files written before the table's nested fields changed (issue 31; the table fuzzer's N3,
    # M1 and N6): every reader must match nested fields by id, fill the ones a file lacks with
    # NULL, and read a Hive file's nested columns through the name mapping.
    import pyarrow.parquet as pq
    s = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType()),
               NestedField(3, "s", StructType(NestedField(4, "a", StringType()), NestedField(5, "z", StringType()))),
               NestedField(6, "l", ListType(7, StructType(NestedField(8, "p", IntegerType())), element_required=False)),
               NestedField(9, "m", MapType(10, StringType(), 11, StructType(NestedField(12, "x", IntegerType())),
                                           value_required=False)))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "region"))
    t = cat.create_table("corpus.nested_evolved", schema=s, partition_spec=spec)
    third = max(n // 3, 30)

    def row(i, region):
        return {"id": i, "region": region,
                "s": None if i % 7 == 0 else {"a": f"a{i}", "z": None if i % 5 == 0 else f"z{i}"},
                "l": None if i % 5 == 0 else [{"p": i}, None] if i % 2 else [],
                "m": None if i % 6 == 0 else {f"k{i % 4}": {"x": i}, "n": None}}
    t.append(arrow(t, [row(i, ["eu", "us", None][i % 3]) for i in range(third)]))
    # A Hive file (no field ids) of region 'eu', registered as add_files registers it; written
    # through the table's FileIO, so the table can live on S3 too (corpus_anywhere.py).
    hive = t.location() + "/data/region=eu/hive-00000.parquet"
    hive_schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string()),
        pa.field("s", pa.struct([("a", pa.string()), ("z", pa.string())])),
        pa.field("l", pa.list_(pa.field("element", pa.struct([("p", pa.int32())])))),
        pa.field("m", pa.map_(pa.string(), pa.struct([("x", pa.int32())])))])
    with t.io.new_output(hive).create(overwrite=True) as out:
        pq.write_table(pa.Table.from_pylist([row(i, "eu") for i in range(third, 2 * third)], schema=hive_schema), out)
    t.add_files(file_paths=[hive])
    t = cat.load_table("corpus.nested_evolved")
    with t.update_schema() as up:
        up.add_column(("s", "c"), ListType(1, TimeType(), element_required=False))
        up.add_column(("l", "element", "q"), StringType())
        up.add_column(("m", "value", "y"), DoubleType())
        up.add_column("f", FixedType(3))
    with t.update_schema() as up:
        # Both strings: read by position, their values would swap without an error.
        up.move_first("s.z")
    t = cat.load_table("corpus.nested_evolved")

    def new_row(i):
        r = row(i, ["eu", "us", None][i % 3])
        if r["s"] is not None:
            r["s"]["c"] = None if i % 4 == 0 else [dt.time(i % 24, i % 60, 1), None]
        if r["l"]:
            r["l"] = [dict(e, q=f"q{i}") if e else e for e in r["l"]]
        if r["m"]:
            r["m"] = {k: dict(v, y=i / 4) if v else v for k, v in r["m"].items()}
        r["f"] = None if i % 3 == 0 else bytes([i % 256, 1, 2])
        return r
    t.append(arrow(t, [new_row(i) for i in range(2 * third, n if n > 3 * third else 3 * third)]))


TABLES = ["reused_names", "v1_evolved", "paged", "odd_names", "identity_types", "maps", "widened_partition",
          "escaped_paths", "nested_evolved"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--warehouse", required=True)
    p.add_argument("--rows", type=int, default=20_000)
    a = p.parse_args()
    wh = os.path.abspath(a.warehouse)
    cat = SqlCatalog("corpus", uri=f"sqlite:///{wh}/catalog.db", warehouse=f"file://{wh}/warehouse")
    cat.create_namespace_if_not_exists("corpus")
    for name in TABLES:
        if cat.table_exists(f"corpus.{name}"):
            cat.drop_table(f"corpus.{name}")
        globals()[name](cat, a.rows)
        tbl = cat.load_table(f"corpus.{name}")
        print(f"corpus.{name}: {tbl.scan().to_arrow().num_rows} rows, {len(tbl.metadata.snapshots)} snapshots, "
              f"{len(tbl.metadata.schemas)} schemas, {len(tbl.metadata.partition_specs)} specs")


if __name__ == "__main__":
    main()
