//! Partition values in data file paths, as Java's `LocationProviders` place them: every writer
//! (a rewriting and a copying migration, compaction, a copy-on-write delete, an upsert) puts
//! each file at `<data>/<partitionToPath>/<file>` — or under murmur3 entropy folders with
//! `write.object-storage.enabled` — with names and values URL-encoded as Java does, never
//! outside the table. The expected paths are computed in Python from Java's rules,
//! independently of the code under test; PyIceberg reads every table.

use std::collections::BTreeMap;

use iceberg::TableIdent;
use iceberg::spec::Transform;
use ops_core::ops::delete::DeleteBuilder;
use ops_core::ops::evolve_spec::EvolveSpecBuilder;
use ops_datamig::{CopyMode, DataMigrator, WriteMode};
use ops_maintenance::compact::CompactBuilder;
use serde_json::{Value, json};

use crate::common::*;

/// The partition values a user's rows can hold that a path must not take raw.
const VALUES: &str = r##"["a/b", "sp ace", "#?&", "50%", "ü", "a%2Fb", "..", "", None,
    "../../../../outside", "*~+=", "x/../../y", "."]"##;

/// Python run by the oracle before each check: Java's `URLEncoder` and the object-storage
/// entropy, written from Java's source (not from ours), and each table's file paths.
const JAVA_RULES: &str = r#"
import base64, mmh3, os
SAFE = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")
def url_encode(s):
    out = []
    for b in s.encode("utf-8"):
        if b in SAFE: out.append(chr(b))
        elif b == 0x20: out.append("+")
        else: out.append("%%%02X" % b)
    return "".join(out)
def human(v, transform="identity"):
    # Java's toHumanString (TransformUtil): years and months from 1970 as %04d and %04d-%02d,
    # binary and fixed values as standard Base64.
    if v is None:
        return "null"
    if transform == "year":
        return "%04d" % (1970 + v)
    if transform == "month":
        y, m = divmod(v, 12)
        return "%04d-%02d" % (1970 + y, m + 1)
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    return str(v)
def partition_path(spec, schema, record):
    parts = []
    for i, f in enumerate(spec.fields):
        parts.append(url_encode(f.name) + "=" + url_encode(human(record[i], str(f.transform))))
    return "/".join(parts)
def entropy(relative):
    # Guava's murmur3_32_fixed().hashString(UTF-8).asInt() | Integer.MIN_VALUE, last 20 bits.
    h = (mmh3.hash(relative.encode("utf-8"), 0, signed=False) | 0x80000000)
    bits = format(h, "032b")[-20:]
    return "/".join([bits[0:4], bits[4:8], bits[8:12], bits[12:20]])
def check_paths(t, object_store=False):
    data = t.properties.get("write.data.path", t.location().rstrip("/") + "/data").rstrip("/")
    bad = []
    n = 0
    for task in t.scan().plan_files():
        f = task.file
        spec = t.specs()[f.spec_id]
        name = f.file_path.rsplit("/", 1)[1]
        rel = partition_path(spec, t.schema(), f.partition) + "/" + name
        want = data + "/" + (entropy(rel) + "/" + rel if object_store else rel)
        n += 1
        if f.file_path != want:
            bad.append({"got": f.file_path, "want": want})
    return {"files": n, "bad": bad}
"#;

fn oracle(py: &BTreeMap<String, String>, code: &str) -> anyhow::Result<Value> {
    ops_tests::oracle::pyiceberg("lake", py, &format!("{JAVA_RULES}\n{code}"))
}

fn ident(name: &str) -> anyhow::Result<TableIdent> {
    Ok(TableIdent::from_strs(name.split('.'))?)
}

/// The rows of `table` as PyIceberg reads them, sorted by id.
fn py_rows(py: &BTreeMap<String, String>, table: &str) -> anyhow::Result<Value> {
    oracle(
        py,
        &format!(
            "emit(sorted(catalog.load_table('{table}').scan().to_arrow().to_pylist(), \
             key=lambda r: r['id']))"
        ),
    )
}

fn check_paths(
    py: &BTreeMap<String, String>,
    table: &str,
    object_store: bool,
) -> anyhow::Result<()> {
    let out = oracle(
        py,
        &format!(
            "emit(check_paths(catalog.load_table('{table}'), {}))",
            if object_store { "True" } else { "False" }
        ),
    )?;
    anyhow::ensure!(
        out["files"].as_u64().unwrap_or(0) > 0 && out["bad"] == json!([]),
        "{table}: paths not as Java places them: {out:#}"
    );
    Ok(())
}

/// Every file under the warehouse lies inside the location of one of `tables`.
fn nothing_outside(
    py: &BTreeMap<String, String>,
    warehouse: &std::path::Path,
    tables: &[&str],
) -> anyhow::Result<()> {
    let names = serde_json::to_string(tables)?;
    let locations = oracle(
        py,
        &format!("emit([catalog.load_table(n).location() for n in {names}])"),
    )?;
    let inside: Vec<std::path::PathBuf> = locations
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|l| std::path::PathBuf::from(l.trim_start_matches("file://")))
        .collect();
    anyhow::ensure!(inside.len() == tables.len(), "{locations}");
    let mut stack = vec![warehouse.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                anyhow::ensure!(
                    inside.iter().any(|t| path.starts_with(t)),
                    "{} lies outside every table ({inside:?})",
                    path.display()
                );
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_writer_places_partition_values_as_java_does() -> anyhow::Result<()> {
    let sql = SqlCatalog::sqlite()?;
    let py = &sql.props;
    let warehouse = sql.dir.path().join("wh");
    // The source as PyIceberg writes it: identity(p) and identity(q) on strings and bucket(id),
    // under names Avro cannot carry as they are; a destination with the object-storage layout.
    oracle(
        py,
        &format!(
            r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform, BucketTransform
schema = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "p", StringType(), required=False),
                NestedField(3, "v", LongType(), required=False),
                NestedField(4, "q", StringType(), required=False))
# Field names Avro cannot carry as they are: Java and PyIceberg spell some of them differently
# in manifests (`x😀`: `x_xD83D_xDE00` / `x_x1F600`; `m²`: `m_xB2` / unchanged), so a reader
# must match partition fields by id.
spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "कीमत"),
                     PartitionField(4, 1001, IdentityTransform(), "x😀 m²"),
                     PartitionField(1, 1002, BucketTransform(2), "b k/ü"))
catalog.create_namespace("src")
catalog.create_namespace("dst")
t = catalog.create_table("src.t", schema=schema, partition_spec=spec)
values = {VALUES}
n = len(values)
# Two appends: two files in every partition, so compaction has something to do.
for start in (0, n):
    t.append(pa.table({{"id": pa.array(range(start, start + n), pa.int64()),
                        "p": pa.array(values, pa.string()),
                        "v": pa.array([10 * i for i in range(start, start + n)], pa.int64()),
                        "q": pa.array(["x/y z"] * n, pa.string())}}))
catalog.create_table("dst.o", schema=schema, partition_spec=spec,
                     properties={{"write.object-storage.enabled": "true"}})
emit(n)
"#
        ),
    )?;
    let handle = open("lake", py).await?;
    let source_rows = py_rows(py, "src.t")?;
    let n = source_rows.as_array().map_or(0, Vec::len) as i64;

    // Rewritten rows (the migration's workers; in two runs, so that every partition has two
    // files for compaction) and copied files (the copy route).
    let half = n / 2;
    for (dest, mode, filter) in [
        ("dst.t", CopyMode::Rewrite, format!("id < {half}")),
        ("dst.t", CopyMode::Rewrite, format!("id >= {half}")),
        ("dst.c", CopyMode::Files, "true".to_string()),
    ] {
        DataMigrator::new(&handle, ident("src.t")?, &handle, ident(dest)?)
            .create_dest(true)
            .copy_mode(mode)
            .row_filter(filter.as_str())
            .run()
            .await?;
        check_paths(py, dest, false)?;
    }
    assert_eq!(py_rows(py, "dst.t")?, source_rows);
    assert_eq!(py_rows(py, "dst.c")?, source_rows);
    // The partition tuples read back (by us and by PyIceberg) are the rows' own: a field whose
    // name Avro sanitizes (`b k/ü`) must not come back NULL.
    for table in ["src.t", "dst.t", "dst.c"] {
        let nulls = oracle(
            py,
            &format!(
                "emit(sum(1 for task in catalog.load_table('{table}').scan().plan_files() \
                 if task.file.partition[1] is None or task.file.partition[2] is None))"
            ),
        )?;
        assert_eq!(nulls, json!(0), "{table}: bucket partition values lost");
    }
    // The object-storage layout.
    for filter in [format!("id < {half}"), format!("id >= {half}")] {
        DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.o")?)
            .copy_mode(CopyMode::Rewrite)
            .row_filter(filter.as_str())
            .run()
            .await?;
    }
    assert_eq!(py_rows(py, "dst.o")?, source_rows);
    check_paths(py, "dst.o", true)?;

    // Compaction, a copy-on-write delete and an upsert rewrite files of those partitions.
    let (_, compacted) = CompactBuilder::new(&handle, ident("dst.t")?)
        .min_input_files(1)
        .await?;
    assert!(compacted.output_files() > 0, "{compacted:?}");
    check_paths(py, "dst.t", false)?;
    DeleteBuilder::new(&handle, ident("dst.t")?)
        .with_filter_text("v = 0")
        .await?;
    check_paths(py, "dst.t", false)?;
    DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
        .write_mode(WriteMode::Upsert)
        .upsert_keys(["id"])
        .run()
        .await?;
    check_paths(py, "dst.t", false)?;
    assert_eq!(py_rows(py, "dst.t")?, source_rows, "after delete + upsert");
    let (_, compacted) = CompactBuilder::new(&handle, ident("dst.o")?)
        .min_input_files(1)
        .await?;
    assert!(compacted.output_files() > 0, "{compacted:?}");
    check_paths(py, "dst.o", true)?;
    assert_eq!(py_rows(py, "dst.o")?, source_rows);
    assert!(n > 20);

    nothing_outside(py, &warehouse, &["src.t", "dst.t", "dst.c", "dst.o"])?;
    Ok(())
}

/// On S3 the object key written must equal the manifest's path byte for byte: `%`, `+` and
/// spaces (in the data location) must not be re-encoded or decoded on the way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_keys_equal_the_manifest_paths() -> anyhow::Result<()> {
    init_tracing();
    let (moto, py) = glue_on_moto();
    let py = &py;
    oracle(
        py,
        &format!(
            r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, StringType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform
schema = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "p", StringType(), required=False),
                NestedField(3, "v", LongType(), required=False))
spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
catalog.create_namespace("src")
catalog.create_namespace("dst")
t = catalog.create_table("src.t", schema=schema, partition_spec=spec)
values = {VALUES}
t.append(pa.table({{"id": pa.array(range(len(values)), pa.int64()),
                    "p": pa.array(values, pa.string()),
                    "v": pa.array([10 * i for i in range(len(values))], pa.int64())}}))
d = catalog.create_table("dst.t", schema=schema, partition_spec=spec)
with d.transaction() as tx:
    tx.set_properties({{"write.data.path": d.location().rstrip("/") + "/da ta+x%41"}})
emit(1)
"#
        ),
    )?;
    let handle = open("lake", py).await?;
    let source_rows = py_rows(py, "src.t")?;
    DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    assert_eq!(py_rows(py, "dst.t")?, source_rows);
    check_paths(py, "dst.t", false)?;
    let paths = oracle(
        py,
        "emit(sorted(task.file.file_path for task in \
         catalog.load_table('dst.t').scan().plan_files()))",
    )?;
    let mut keys: Vec<String> = moto
        .list_objects("lake", "")
        .into_iter()
        .filter(|k| k.contains("/da ta+x%41/"))
        .map(|k| format!("s3://lake/{k}"))
        .collect();
    keys.sort();
    assert_eq!(json!(keys), paths, "object keys vs manifest paths");
    Ok(())
}

/// A table partitioned by `identity` of a `uuid` column: its manifests carry each value as Java
/// writes it (`fixed[16]` named `uuid_fixed`, annotated `uuid`; a second uuid field refers to
/// that name), so that every writer commits (apache-avro 0.21 had no form for the value: the
/// first commit failed) and every reader — ours, which places a copied or compacted file by the
/// value it decodes, and PyIceberg — reads the values back; each file lies in the folder
/// `u=<UUID.toString()>`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_uuid_partition_is_written_and_read_as_java_does() -> anyhow::Result<()> {
    let sql = SqlCatalog::sqlite()?;
    let py = &sql.props;
    let warehouse = sql.dir.path().join("wh");
    oracle(
        py,
        r#"
import uuid
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, UUIDType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import IdentityTransform, VoidTransform
schema = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "u", UUIDType(), required=False))
catalog.create_namespace("src")
catalog.create_namespace("dst")
# PyIceberg 0.12 cannot write a uuid partition (pyarrow cannot group its extension type):
# the source is unpartitioned, the destinations are partitioned by identity(u).
t = catalog.create_table("src.t", schema=schema)
# Halves that differ (swapped halves or bytes would show), the extremes, NULL.
values = [uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1), None,
          uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), uuid.UUID(int=1 << 127)]
for start in (0, 10):
    t.append(pa.table({"id": pa.array([start + i for i in range(len(values))], pa.int64()),
                       "u": pa.array([v.bytes if v else None for v in values], pa.uuid())}))
spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "u"))
for name in ("dst.t", "dst.c"):
    catalog.create_table(name, schema=schema, partition_spec=spec)
# Two uuid partition fields (a v1 table keeps a removed one as void): the second names the
# Avro type the first defines.
catalog.create_table("dst.two", schema=schema, partition_spec=PartitionSpec(
    PartitionField(2, 1000, VoidTransform(), "u_old"),
    PartitionField(2, 1001, IdentityTransform(), "u")))
catalog.create_table("dst.flat", schema=schema)
emit(1)
"#,
    )?;
    let handle = open("lake", py).await?;
    // Each row as [id, UUID.toString()], sorted, as PyIceberg reads `table`.
    let read = |table: &str| {
        oracle(
            py,
            &format!(
                "import uuid\n\
                 def text(v):\n    return None if v is None else str(v if isinstance(v, uuid.UUID) \
                 else uuid.UUID(bytes=v))\n\
                 emit(sorted([[r['id'], text(r['u'])] for r in \
                 catalog.load_table('{table}').scan().to_arrow().to_pylist()], key=str))"
            ),
        )
    };
    // The partition values PyIceberg decodes from `table`'s manifests, and the Avro types of
    // the partition record's fields as its manifests' headers name them.
    let manifests = |table: &str, decode: bool| {
        oracle(
            py,
            &format!(
                r#"
import json
t = catalog.load_table("{table}")
values = sorted({{str(task.file.partition[0]) for task in t.scan().plan_files()}}) if {decode} else []
def header_schema(b):
    assert b[:4] == b"Obj\x01"
    pos = 4
    def varint():
        nonlocal pos
        shift = n = 0
        while True:
            c = b[pos]; pos += 1
            n |= (c & 0x7F) << shift; shift += 7
            if c < 0x80:
                return (n >> 1) ^ -(n & 1)
    meta = {{}}
    while True:
        count = varint()
        if count == 0:
            break
        if count < 0:
            count = -count; varint()
        for _ in range(count):
            k = varint(); key = b[pos:pos + k]; pos += k
            v = varint(); meta[key] = b[pos:pos + v]; pos += v
    return json.loads(meta[b"avro.schema"])
types = set()
for m in t.current_snapshot().manifests(t.io):
    with t.io.new_input(m.manifest_path).open() as f:
        schema = header_schema(f.read())
    stack = [schema]
    while stack:
        s = stack.pop()
        if isinstance(s, dict):
            if s.get("name") == "partition":
                types.add(json.dumps([f["type"] for f in s["type"]["fields"]], sort_keys=True))
            stack.extend(s.values())
        elif isinstance(s, list):
            stack.extend(s)
emit({{"values": values, "types": sorted(types)}})
"#,
                decode = if decode { "True" } else { "False" },
            ),
        )
    };
    let uuid_type =
        r#"["null", {"logicalType": "uuid", "name": "uuid_fixed", "size": 16, "type": "fixed"}]"#;
    let values = json!([
        "00000000-0000-0000-0000-000000000000",
        "00112233-4455-6677-8899-aabbccddeeff",
        "80000000-0000-0000-0000-000000000000",
        "None",
        "ffffffff-ffff-ffff-ffff-ffffffffffff"
    ]);
    let one_field = json!({"values": values, "types": [format!("[{uuid_type}]")]});
    let source_rows = read("src.t")?;
    assert_eq!(source_rows.as_array().map(Vec::len), Some(10));
    // Two runs: two files in each partition, for compaction.
    for filter in ["id < 10", "id >= 10"] {
        DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
            .copy_mode(CopyMode::Rewrite)
            .row_filter(filter)
            .run()
            .await?;
    }
    assert_eq!(read("dst.t")?, source_rows);
    check_paths(py, "dst.t", false)?;
    assert_eq!(manifests("dst.t", true)?, one_field);
    // Our reader: the copy route carries each file over by the manifest entry it decoded,
    // partition value included.
    DataMigrator::new(&handle, ident("dst.t")?, &handle, ident("dst.c")?)
        .copy_mode(CopyMode::Files)
        .run()
        .await?;
    assert_eq!(read("dst.c")?, source_rows);
    check_paths(py, "dst.c", false)?;
    assert_eq!(manifests("dst.c", true)?, one_field);
    // The manifest list's partition summaries bound the values as Java's `Conversions` writes
    // a uuid (16 bytes, big-endian), for pruning. (PyIceberg 0.12 cannot evaluate a filter on
    // a uuid column — pyarrow has no kernel comparing its extension type — so our own pruning
    // is checked below, by a filtered copy.)
    let summaries = oracle(
        py,
        "t = catalog.load_table('dst.t')\n\
         emit(sorted({(s.contains_null, s.contains_nan, s.lower_bound.hex(), s.upper_bound.hex()) \
         for m in t.current_snapshot().manifests(t.io) for s in m.partitions}))",
    )?;
    assert_eq!(
        summaries,
        json!([[
            true,
            false,
            "00000000000000000000000000000000",
            "ffffffffffffffffffffffffffffffff"
        ]])
    );
    DataMigrator::new(&handle, ident("dst.t")?, &handle, ident("dst.f")?)
        .create_dest(true)
        .row_filter("u = 'ffffffff-ffff-ffff-ffff-ffffffffffff' or u is null")
        .run()
        .await?;
    assert_eq!(
        read("dst.f")?,
        json!([
            [1, "ffffffff-ffff-ffff-ffff-ffffffffffff"],
            [11, "ffffffff-ffff-ffff-ffff-ffffffffffff"],
            [12, null],
            [2, null]
        ])
    );
    // Compaction groups files by the values it decodes, and a delete by a uuid literal
    // rewrites files of those partitions.
    let (_, compacted) = CompactBuilder::new(&handle, ident("dst.t")?)
        .min_input_files(1)
        .await?;
    assert!(compacted.output_files() > 0, "{compacted:?}");
    check_paths(py, "dst.t", false)?;
    assert_eq!(read("dst.t")?, source_rows);
    assert_eq!(manifests("dst.t", true)?, one_field);
    DeleteBuilder::new(&handle, ident("dst.t")?)
        .with_filter_text("u = '00112233-4455-6677-8899-aabbccddeeff'")
        .await?;
    let want: Vec<Value> = source_rows
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r[1] != json!("00112233-4455-6677-8899-aabbccddeeff"))
        .cloned()
        .collect();
    assert_eq!(want.len(), 8);
    assert_eq!(read("dst.t")?, json!(want));
    check_paths(py, "dst.t", false)?;

    // Two uuid fields. PyIceberg 0.12 cannot parse an Avro name reference (Java's form), so
    // it reads neither these manifests nor Java's: we read the table back into an
    // unpartitioned one, which it can.
    DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.two")?)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    assert_eq!(
        manifests("dst.two", false)?,
        json!({"values": [], "types": [format!(r#"[{uuid_type}, ["null", "uuid_fixed"]]"#)]})
    );
    DataMigrator::new(&handle, ident("dst.two")?, &handle, ident("dst.flat")?)
        .copy_mode(CopyMode::Rewrite)
        .run()
        .await?;
    assert_eq!(read("dst.flat")?, source_rows);
    nothing_outside(
        py,
        &warehouse,
        &["src.t", "dst.t", "dst.c", "dst.f", "dst.two", "dst.flat"],
    )?;
    Ok(())
}

/// `truncate[W]` of a `binary` column keeps each value's first W bytes in the file's partition
/// tuple and its folder, Base64 as Java prints it (iceberg 0.10.1 refused every write: it reads
/// the column as `LargeBinary`, which its truncate did not take); a compaction regroups by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_binary_partition_is_placed_as_java_places_it() -> anyhow::Result<()> {
    let sql = SqlCatalog::sqlite()?;
    let py = &sql.props;
    let warehouse = sql.dir.path().join("wh");
    oracle(
        py,
        r#"
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, BinaryType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import TruncateTransform
schema = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "b", BinaryType(), required=False))
catalog.create_namespace("src")
catalog.create_namespace("dst")
# PyIceberg 0.12 cannot write truncate of a binary column: the source is unpartitioned.
t = catalog.create_table("src.t", schema=schema)
values = [None, b"", b"\x00", b"\xff\xff\xff", b"ab", b"abc", b"abd", b"a/b", b"..", b"%2F", b"z"]
t.append(pa.table({"id": pa.array(range(len(values)), pa.int64()),
                   "b": pa.array(values, pa.binary())}))
catalog.create_table("dst.t", schema=schema,
                     partition_spec=PartitionSpec(PartitionField(2, 1000, TruncateTransform(2), "b_2")))
emit(1)
"#,
    )?;
    let handle = open("lake", py).await?;
    let read = |table: &str| {
        oracle(
            py,
            &format!(
                "emit(sorted([[r['id'], None if r['b'] is None else r['b'].hex()] for r in \
                 catalog.load_table('{table}').scan().to_arrow().to_pylist()]))"
            ),
        )
    };
    let source_rows = read("src.t")?;
    for filter in ["id < 5", "id >= 5"] {
        DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
            .copy_mode(CopyMode::Rewrite)
            .row_filter(filter)
            .run()
            .await?;
    }
    assert_eq!(read("dst.t")?, source_rows);
    check_paths(py, "dst.t", false)?;
    let tuples = oracle(
        py,
        "emit(sorted({'null' if task.file.partition[0] is None else task.file.partition[0].hex() \
         for task in catalog.load_table('dst.t').scan().plan_files()}))",
    )?;
    assert_eq!(
        tuples,
        json!([
            "", "00", "2532", "2e2e", "612f", "6162", "7a", "ffff", "null"
        ])
    );
    // `ab`, `abc` and `abd` share the tuple `ab`, written by both runs: one compaction group.
    let (_, compacted) = CompactBuilder::new(&handle, ident("dst.t")?)
        .min_input_files(2)
        .await?;
    assert!(compacted.output_files() > 0, "{compacted:?}");
    assert_eq!(read("dst.t")?, source_rows);
    check_paths(py, "dst.t", false)?;
    nothing_outside(py, &warehouse, &["src.t", "dst.t"])?;
    Ok(())
}

/// A spec with two time transforms of one column (`year(d)` and `month(d)`: PyIceberg creates
/// it; Java's builder would call it redundant, but Java's metadata parser and
/// `TableMetadata.newTableMetadata` bind it) is written, compacted, deleted from and copied
/// with its spec — iceberg 0.10.1 refused every commit to it and every read of its manifests
/// ("Cannot add redundant partition").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_with_year_and_month_of_one_column_is_bound_as_java_binds_it() -> anyhow::Result<()>
{
    let sql = SqlCatalog::sqlite()?;
    let py = &sql.props;
    let warehouse = sql.dir.path().join("wh");
    oracle(
        py,
        r#"
import datetime as dt
from pyiceberg.schema import Schema
from pyiceberg.types import NestedField, LongType, DateType
from pyiceberg.partitioning import PartitionSpec, PartitionField
from pyiceberg.transforms import YearTransform, MonthTransform
schema = Schema(NestedField(1, "id", LongType(), required=False),
                NestedField(2, "d", DateType(), required=False))
catalog.create_namespace("src")
catalog.create_namespace("dst")
t = catalog.create_table("src.t", schema=schema)
days = [None, dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2026, 2, 28), dt.date(2026, 3, 1),
        dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.date(2026, 2, 1)]
t.append(pa.table({"id": pa.array(range(len(days)), pa.int64()), "d": pa.array(days, pa.date32())}))
catalog.create_table("dst.t", schema=schema, partition_spec=PartitionSpec(
    PartitionField(2, 1000, YearTransform(), "d_year"),
    PartitionField(2, 1001, MonthTransform(), "d_month")))
emit(1)
"#,
    )?;
    let handle = open("lake", py).await?;
    let read = |table: &str| {
        oracle(
            py,
            &format!(
                "emit(sorted([[r['id'], str(r['d'])] for r in \
                 catalog.load_table('{table}').scan().to_arrow().to_pylist()]))"
            ),
        )
    };
    let source_rows = read("src.t")?;
    for filter in ["id < 4", "id >= 4"] {
        DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
            .copy_mode(CopyMode::Rewrite)
            .row_filter(filter)
            .run()
            .await?;
    }
    assert_eq!(read("dst.t")?, source_rows);
    check_paths(py, "dst.t", false)?;
    // `2026-02-28` and `2026-02-01` share `d_year=2026/d_month=2026-02`, one from each run.
    let (_, compacted) = CompactBuilder::new(&handle, ident("dst.t")?)
        .min_input_files(2)
        .await?;
    assert!(compacted.output_files() > 0, "{compacted:?}");
    DeleteBuilder::new(&handle, ident("dst.t")?)
        .with_filter_text("id = 3")
        .await?;
    let want: Vec<Value> = source_rows
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r[0] != json!(3))
        .cloned()
        .collect();
    assert_eq!(read("dst.t")?, json!(want));
    check_paths(py, "dst.t", false)?;
    // Its spec evolves as Java's `UpdatePartitionSpec` evolves it: a field added beside the
    // two (only added fields are checked against each other), and a row written under it.
    EvolveSpecBuilder::new(&handle, ident("dst.t")?)
        .add_field("id", Transform::Bucket(2), None)
        .await?;
    DataMigrator::new(&handle, ident("src.t")?, &handle, ident("dst.t")?)
        .copy_mode(CopyMode::Rewrite)
        .row_filter("id = 3")
        .run()
        .await?;
    assert_eq!(read("dst.t")?, source_rows);
    check_paths(py, "dst.t", false)?;
    // Copied with its spec into tables it creates: by the files, and rewritten.
    for (dest, mode) in [("dst.c", CopyMode::Files), ("dst.r", CopyMode::Rewrite)] {
        DataMigrator::new(&handle, ident("dst.t")?, &handle, ident(dest)?)
            .create_dest(true)
            .copy_mode(mode)
            .run()
            .await?;
        assert_eq!(read(dest)?, source_rows, "{dest}");
        check_paths(py, dest, false)?;
        let spec = oracle(
            py,
            &format!(
                "emit([[str(f.transform), f.name] for f in catalog.load_table('{dest}').spec().fields])"
            ),
        )?;
        assert_eq!(
            spec,
            json!([
                ["year", "d_year"],
                ["month", "d_month"],
                ["bucket[2]", "id_bucket_2"]
            ]),
            "{dest}"
        );
    }
    nothing_outside(py, &warehouse, &["src.t", "dst.t", "dst.c", "dst.r"])?;
    Ok(())
}
