//! The next metadata file's JSON, written from borrowed metadata.
//!
//! iceberg 0.10.1 serialises `TableMetadata` by cloning it and converting every snapshot into
//! an owned serde struct first; at a thousand snapshots that clone and the drop after it were
//! half of a commit's CPU, and they grow with the table's history. Here the same v2 document is
//! written straight from references. Only the snapshot refs cannot be read that way (iceberg
//! keeps them private), so they are followed: the refs of each metadata file this process wrote
//! are remembered by location, and the next commit's refs are those plus its own
//! `SetSnapshotRef` / `RemoveSnapshotRef` changes. A base this process did not write (the first
//! commit after a load), a v1 table, or a change that drops refs some other way (removing
//! snapshots) takes iceberg's serialiser, whose output the refs are then read back from. (The
//! published iceberg 0.10.1 wrote v1 metadata without `refs`, dropping every tag and branch of
//! a v1 table; vendor/iceberg writes them, as Java and PyIceberg do.)
//!
//! A snapshot never changes once committed, so each one's JSON is kept (by table UUID and
//! snapshot id, reused only for the same or an equal snapshot) and the next file copies it
//! instead of serialising a thousand snapshots again.
//!
//! Following refs rests on one invariant: a `Table` whose metadata location is L holds exactly
//! the metadata of the file at L. Commits return such tables, `load_current` reuses only those,
//! catalogs load them, and metadata files are never rewritten in place (their names carry a
//! UUID), so the refs remembered for L are the refs of L.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, LazyLock, Mutex};

use iceberg::TableUpdate;
use iceberg::spec::{FormatVersion, Snapshot, SnapshotRef, SnapshotReference, TableMetadata};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::{Error, Result};

type Refs = HashMap<String, SnapshotReference>;

/// How many metadata files' refs are remembered (a few bytes each; one per commit).
const REMEMBERED: usize = 1024;

static REFS: LazyLock<Mutex<RefCache>> = LazyLock::new(|| Mutex::new(RefCache::default()));

/// How many bytes of snapshot JSON are kept (a snapshot is about 0.6 KB, more with
/// per-partition summaries); past it the cache starts over.
const SNAPSHOT_BYTES_KEPT: usize = 64 * 1024 * 1024;

type SnapshotJson = Arc<Box<RawValue>>;

#[derive(Default)]
struct SnapshotCache {
    /// The snapshot each JSON was written from, to check a hit against.
    by_id: HashMap<(uuid::Uuid, i64), (SnapshotRef, SnapshotJson)>,
    bytes: usize,
}

static SNAPSHOTS: LazyLock<Mutex<SnapshotCache>> =
    LazyLock::new(|| Mutex::new(SnapshotCache::default()));

#[derive(Default)]
struct RefCache {
    order: VecDeque<String>,
    by_location: HashMap<String, Refs>,
}

/// The JSON of `metadata` (built from the metadata at `base_location` by `changes`) and the
/// refs to [`remember`] under the location it is written to.
pub(crate) fn to_json(
    base_location: &str,
    metadata: &TableMetadata,
    changes: &[TableUpdate],
) -> Result<(Vec<u8>, Option<Refs>)> {
    if metadata.format_version() != FormatVersion::V2 {
        return Ok((json(metadata)?, None));
    }
    let refs = followed_refs(base_location, metadata, changes);
    let Some(refs) = refs else {
        let bytes = json(metadata)?;
        let refs = serde_json::from_slice::<RefsOnly>(&bytes)
            .map(|r| r.refs)
            .map_err(|e| Error::InvalidInput(format!("reading back table metadata: {e}")))?;
        return Ok((bytes, Some(refs)));
    };
    let bytes = json(&V2::of(metadata, &refs))?;
    Ok((bytes, Some(refs)))
}

/// Remembers the refs of the metadata file written at `location`.
pub(crate) fn remember(location: &str, refs: Refs) {
    let mut cache = REFS.lock().unwrap_or_else(|p| p.into_inner());
    if cache
        .by_location
        .insert(location.to_string(), refs)
        .is_none()
    {
        cache.order.push_back(location.to_string());
    }
    while cache.order.len() > REMEMBERED {
        if let Some(old) = cache.order.pop_front() {
            cache.by_location.remove(&old);
        }
    }
}

fn json(document: &impl Serialize) -> Result<Vec<u8>> {
    serde_json::to_vec(document)
        .map_err(|e| Error::InvalidInput(format!("serialising table metadata: {e}")))
}

/// The base's refs with `changes` applied, when the base's are known and nothing else could
/// have changed them; checked against the snapshots `metadata` resolves each ref to.
fn followed_refs(
    base_location: &str,
    metadata: &TableMetadata,
    changes: &[TableUpdate],
) -> Option<Refs> {
    let mut refs = {
        let cache = REFS.lock().unwrap_or_else(|p| p.into_inner());
        cache.by_location.get(base_location)?.clone()
    };
    for change in changes {
        match change {
            TableUpdate::SetSnapshotRef {
                ref_name,
                reference,
            } => {
                refs.insert(ref_name.clone(), reference.clone());
            }
            TableUpdate::RemoveSnapshotRef { ref_name } => {
                refs.remove(ref_name);
            }
            // The builder drops the refs of removed snapshots without recording it.
            TableUpdate::RemoveSnapshots { .. } => {
                refs.retain(|_, r| metadata.snapshot_by_id(r.snapshot_id).is_some());
            }
            _ => {}
        }
    }
    let consistent = refs.iter().all(|(name, r)| {
        metadata
            .snapshot_for_ref(name)
            .is_some_and(|s| s.snapshot_id() == r.snapshot_id)
    }) && metadata.current_snapshot_id()
        == refs.get("main").map(|r| r.snapshot_id);
    consistent.then_some(refs)
}

/// Every ref of `metadata`, by name. iceberg 0.10.1 keeps the map private; its serialised form
/// is public (this serialises the whole metadata: use it off the per-commit path of v2 tables).
pub(crate) fn refs_of(metadata: &TableMetadata) -> Result<Refs> {
    serde_json::from_slice::<RefsOnly>(&json(metadata)?)
        .map(|r| r.refs)
        .map_err(|e| Error::InvalidInput(format!("reading back table metadata: {e}")))
}

#[derive(Deserialize)]
struct RefsOnly {
    #[serde(default)]
    refs: Refs,
}

/// The v2 metadata document, field for field as iceberg 0.10.1's `TableMetadataV2` writes it.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct V2<'a> {
    format_version: u8,
    table_uuid: uuid::Uuid,
    location: &'a str,
    last_sequence_number: i64,
    last_updated_ms: i64,
    last_column_id: i32,
    schemas: Vec<&'a iceberg::spec::Schema>,
    current_schema_id: i32,
    partition_specs: Vec<&'a iceberg::spec::PartitionSpec>,
    default_spec_id: i32,
    last_partition_id: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<&'a HashMap<String, String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    current_snapshot_id: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot_log: Option<&'a [iceberg::spec::SnapshotLog]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata_log: Option<&'a [iceberg::spec::MetadataLog]>,
    sort_orders: Vec<&'a iceberg::spec::SortOrder>,
    default_sort_order_id: i64,
    refs: &'a Refs,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    statistics: Vec<&'a iceberg::spec::StatisticsFile>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    partition_statistics: Vec<&'a iceberg::spec::PartitionStatisticsFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshots: Option<Snapshots<'a>>,
}

impl<'a> V2<'a> {
    fn of(md: &'a TableMetadata, refs: &'a Refs) -> Self {
        let mut schemas: Vec<_> = md.schemas_iter().map(|s| s.as_ref()).collect();
        schemas.sort_by_key(|s| s.schema_id());
        let mut specs: Vec<_> = md.partition_specs_iter().map(|s| s.as_ref()).collect();
        specs.sort_by_key(|s| s.spec_id());
        let mut orders: Vec<_> = md.sort_orders_iter().map(|s| s.as_ref()).collect();
        orders.sort_by_key(|s| s.order_id);
        let mut statistics: Vec<_> = md.statistics_iter().collect();
        statistics.sort_by_key(|s| s.snapshot_id);
        let mut partition_statistics: Vec<_> = md.partition_statistics_iter().collect();
        partition_statistics.sort_by_key(|s| s.snapshot_id);
        let mut snapshots: Vec<_> = md.snapshots().collect();
        snapshots.sort_by_key(|s| (s.sequence_number(), s.timestamp_ms(), s.snapshot_id()));
        V2 {
            format_version: 2,
            table_uuid: md.uuid(),
            location: md.location(),
            last_sequence_number: md.last_sequence_number(),
            last_updated_ms: md.last_updated_ms(),
            last_column_id: md.last_column_id(),
            schemas,
            current_schema_id: md.current_schema_id(),
            partition_specs: specs,
            default_spec_id: md.default_partition_spec_id(),
            last_partition_id: md.last_partition_id(),
            properties: (!md.properties().is_empty()).then(|| md.properties()),
            current_snapshot_id: md.current_snapshot_id(),
            snapshot_log: (!md.history().is_empty()).then(|| md.history()),
            metadata_log: (!md.metadata_log().is_empty()).then(|| md.metadata_log()),
            sort_orders: orders,
            default_sort_order_id: md.default_sort_order_id(),
            refs,
            statistics,
            partition_statistics,
            snapshots: (!snapshots.is_empty()).then(|| Snapshots {
                table: md.uuid(),
                snapshots,
            }),
        }
    }
}

struct Snapshots<'a> {
    table: uuid::Uuid,
    snapshots: Vec<&'a SnapshotRef>,
}

impl Snapshots<'_> {
    /// Each snapshot's JSON, from the cache or serialised (and cached) now. A cached JSON is
    /// reused only for the very snapshot it was written from (the same `Arc`, as a table's
    /// versions share them, or an equal one): a snapshot id alone could belong to a copy of
    /// the table with rewritten paths, or to a refused attempt.
    fn json(&self) -> serde_json::Result<Vec<SnapshotJson>> {
        let mut out: Vec<Option<SnapshotJson>> = {
            let cache = SNAPSHOTS.lock().unwrap_or_else(|p| p.into_inner());
            self.snapshots
                .iter()
                .map(|s| {
                    cache
                        .by_id
                        .get(&(self.table, s.snapshot_id()))
                        .filter(|(cached, _)| Arc::ptr_eq(cached, s) || cached == *s)
                        .map(|(_, json)| json.clone())
                })
                .collect()
        };
        // Serialised outside the lock: a first commit may write thousands.
        let mut fresh = Vec::new();
        for (slot, s) in out.iter_mut().zip(&self.snapshots) {
            if slot.is_none() {
                let json = Arc::new(serde_json::value::to_raw_value(&SnapshotV2::of(
                    s.as_ref(),
                ))?);
                fresh.push(((*s).clone(), json.clone()));
                *slot = Some(json);
            }
        }
        if !fresh.is_empty() {
            let mut cache = SNAPSHOTS.lock().unwrap_or_else(|p| p.into_inner());
            let added: usize = fresh.iter().map(|(_, j)| j.get().len()).sum();
            if cache.bytes + added > SNAPSHOT_BYTES_KEPT {
                *cache = SnapshotCache::default();
            }
            for (s, json) in fresh {
                let len = json.get().len();
                if let Some((_, old)) = cache.by_id.insert((self.table, s.snapshot_id()), (s, json))
                {
                    cache.bytes = cache.bytes.saturating_sub(old.get().len());
                }
                cache.bytes += len;
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

impl Serialize for Snapshots<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let json = self.json().map_err(serde::ser::Error::custom)?;
        let mut seq = serializer.serialize_seq(Some(json.len()))?;
        for s in &json {
            seq.serialize_element(s.as_ref().as_ref())?;
        }
        seq.end()
    }
}

/// A v2 snapshot, field for field as iceberg 0.10.1's `SnapshotV2` writes it.
#[derive(Serialize)]
#[serde(rename_all = "kebab-case")]
struct SnapshotV2<'a> {
    snapshot_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent_snapshot_id: Option<i64>,
    sequence_number: i64,
    timestamp_ms: i64,
    manifest_list: &'a str,
    summary: &'a iceberg::spec::Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    schema_id: Option<i32>,
}

impl<'a> SnapshotV2<'a> {
    fn of(s: &'a Snapshot) -> Self {
        SnapshotV2 {
            snapshot_id: s.snapshot_id(),
            parent_snapshot_id: s.parent_snapshot_id(),
            sequence_number: s.sequence_number(),
            timestamp_ms: s.timestamp_ms(),
            manifest_list: s.manifest_list(),
            summary: s.summary(),
            schema_id: s.schema_id(),
        }
    }
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{
        BlobMetadata, NestedField, Operation, PartitionStatisticsFile, PrimitiveType, Schema,
        SnapshotRetention, SortOrder, StatisticsFile, Summary, TableMetadataBuilder, Transform,
        Type, UnboundPartitionSpec,
    };
    use serde_json::Value;

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn now_ms() -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    }

    fn snapshot(id: i64, parent: Option<i64>, seq: i64) -> Snapshot {
        Snapshot::builder()
            .with_snapshot_id(id)
            .with_parent_snapshot_id(parent)
            .with_sequence_number(seq)
            .with_timestamp_ms(now_ms() - 30_000 + seq)
            .with_manifest_list(format!("s3://b/t/metadata/snap-{id}.avro"))
            .with_summary(Summary {
                operation: Operation::Append,
                additional_properties: HashMap::from([
                    ("added-records".to_string(), seq.to_string()),
                    ("iceberg-ops.migration-job".to_string(), "j\"1".to_string()),
                ]),
            })
            .with_schema_id(0)
            .build()
    }

    /// A v2 table with everything a metadata file can carry: two schemas, two specs, a sort
    /// order, properties, snapshots on `main`, a retained branch and a tag, statistics and
    /// partition statistics, and a metadata log.
    fn rich() -> std::result::Result<(TableMetadata, String), Box<dyn std::error::Error>> {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "region", Transform::Identity)?
            .build();
        let md = TableMetadataBuilder::new(
            schema.clone(),
            spec,
            SortOrder::unsorted_order(),
            "s3://b/t".to_string(),
            FormatVersion::V2,
            HashMap::from([("owner".to_string(), "ops".to_string())]),
        )?
        .build()?
        .metadata;
        let first = "s3://b/t/metadata/00000-a.metadata.json".to_string();
        let wider = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::optional(3, "note", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let md = TableMetadataBuilder::new_from_metadata(md, Some(first))
            .add_current_schema(wider)?
            .add_default_partition_spec(
                UnboundPartitionSpec::builder()
                    .add_partition_field(1, "id_bucket", Transform::Bucket(4))?
                    .build(),
            )?
            .set_branch_snapshot(snapshot(11, None, 1), "main")?
            .set_branch_snapshot(snapshot(12, Some(11), 2), "main")?
            .set_ref(
                "audit",
                SnapshotReference::new(
                    11,
                    SnapshotRetention::Branch {
                        min_snapshots_to_keep: Some(3),
                        max_snapshot_age_ms: Some(86_400_000),
                        max_ref_age_ms: None,
                    },
                ),
            )?
            .set_ref(
                "v1",
                SnapshotReference::new(
                    12,
                    SnapshotRetention::Tag {
                        max_ref_age_ms: Some(1_000),
                    },
                ),
            )?
            .set_statistics(StatisticsFile {
                snapshot_id: 12,
                statistics_path: "s3://b/t/metadata/stats.puffin".to_string(),
                file_size_in_bytes: 100,
                file_footer_size_in_bytes: 10,
                key_metadata: None,
                blob_metadata: vec![BlobMetadata {
                    r#type: "apache-datasketches-theta-v1".to_string(),
                    snapshot_id: 12,
                    sequence_number: 2,
                    fields: vec![1],
                    properties: HashMap::new(),
                }],
            })
            .set_partition_statistics(PartitionStatisticsFile {
                snapshot_id: 12,
                statistics_path: "s3://b/t/metadata/part.parquet".to_string(),
                file_size_in_bytes: 50,
            })
            .build()?
            .metadata;
        Ok((md, "s3://b/t/metadata/00001-b.metadata.json".to_string()))
    }

    /// Arrays in iceberg's output follow its hash maps' order; compare them sorted.
    fn normalised(mut v: Value) -> Value {
        if let Value::Object(map) = &mut v {
            for (key, id) in [
                ("schemas", "schema-id"),
                ("partition-specs", "spec-id"),
                ("sort-orders", "order-id"),
                ("snapshots", "snapshot-id"),
                ("statistics", "snapshot-id"),
                ("partition-statistics", "snapshot-id"),
            ] {
                if let Some(Value::Array(items)) = map.get_mut(key) {
                    items.sort_by_key(|i| i.get(id).and_then(Value::as_i64));
                }
            }
        }
        v
    }

    /// The document written from references is the one iceberg writes, and iceberg reads it
    /// back as the same metadata.
    #[test]
    fn writes_what_iceberg_writes() -> TestResult {
        let (md, _) = rich()?;
        let theirs: Value = serde_json::from_slice(&serde_json::to_vec(&md)?)?;
        let refs = serde_json::from_value::<RefsOnly>(theirs.clone())?.refs;
        assert_eq!(refs.len(), 3);
        let ours = serde_json::to_vec(&V2::of(&md, &refs))?;
        assert_eq!(
            normalised(serde_json::from_slice(&ours)?),
            normalised(theirs)
        );
        assert_eq!(serde_json::from_slice::<TableMetadata>(&ours)?, md);
        Ok(())
    }

    /// A cached snapshot's JSON is only reused for the same snapshot: a table copied with
    /// rewritten paths keeps its UUID and snapshot ids, and a refused attempt may have written
    /// the same id with another summary.
    #[test]
    fn cached_snapshots_are_only_reused_for_the_same_snapshot() -> TestResult {
        let (md, _) = rich()?;
        let refs = |md: &TableMetadata| -> std::result::Result<Refs, Box<dyn std::error::Error>> {
            Ok(serde_json::from_slice::<RefsOnly>(&serde_json::to_vec(md)?)?.refs)
        };
        let first = serde_json::to_vec(&V2::of(&md, &refs(&md)?))?;
        assert_eq!(serde_json::from_slice::<TableMetadata>(&first)?, md);
        let original = snapshot(11, None, 1);
        let rebuilt = |list: &str, summary: Summary| {
            Snapshot::builder()
                .with_snapshot_id(original.snapshot_id())
                .with_sequence_number(original.sequence_number())
                .with_timestamp_ms(original.timestamp_ms())
                .with_manifest_list(list.to_string())
                .with_summary(summary)
                .with_schema_id(0)
                .build()
        };
        let mut other_summary = original.summary().clone();
        other_summary
            .additional_properties
            .insert("added-records".to_string(), "999".to_string());
        for changed in [
            rebuilt(
                "gs://elsewhere/t/metadata/snap-11.avro",
                original.summary().clone(),
            ),
            rebuilt(original.manifest_list(), other_summary),
        ] {
            let copy = TableMetadataBuilder::new_from_metadata(md.clone(), None)
                .remove_snapshots(&[11, 12])
                .set_branch_snapshot(changed, "main")?
                .build()?
                .metadata;
            assert_eq!(copy.uuid(), md.uuid());
            let written = serde_json::to_vec(&V2::of(&copy, &refs(&copy)?))?;
            assert_eq!(serde_json::from_slice::<TableMetadata>(&written)?, copy);
        }
        Ok(())
    }

    /// A table without snapshots, properties or logs: `refs` is written empty, the rest left
    /// out, exactly as iceberg does.
    #[test]
    fn an_empty_table_is_written_as_iceberg_writes_it() -> TestResult {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()?;
        let md = TableMetadataBuilder::new(
            schema,
            UnboundPartitionSpec::builder().build(),
            SortOrder::unsorted_order(),
            "s3://b/e".to_string(),
            FormatVersion::V2,
            HashMap::new(),
        )?
        .build()?
        .metadata;
        let theirs: Value = serde_json::from_slice(&serde_json::to_vec(&md)?)?;
        let refs = serde_json::from_value::<RefsOnly>(theirs.clone())?.refs;
        assert!(refs.is_empty());
        let ours: Value = serde_json::to_value(V2::of(&md, &refs))?;
        assert_eq!(ours.get("refs"), Some(&serde_json::json!({})));
        assert_eq!(normalised(ours.clone()), normalised(theirs));
        assert_eq!(serde_json::from_value::<TableMetadata>(ours)?, md);
        Ok(())
    }

    /// A v1 table's tags and branches are written and read back (Java and PyIceberg keep
    /// `refs` in v1 metadata; the published iceberg 0.10.1 dropped them); v1 metadata without
    /// `refs` still reads its current snapshot as `main`.
    #[test]
    fn a_v1_table_keeps_its_refs() -> TestResult {
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
            ])
            .build()?;
        let md = TableMetadataBuilder::new(
            schema,
            UnboundPartitionSpec::builder().build(),
            SortOrder::unsorted_order(),
            "s3://b/v1".to_string(),
            FormatVersion::V1,
            HashMap::new(),
        )?
        .build()?
        .metadata;
        let md = TableMetadataBuilder::new_from_metadata(md, None)
            .set_branch_snapshot(snapshot(21, None, 0), "main")?
            .set_branch_snapshot(snapshot(22, Some(21), 0), "main")?
            .set_ref(
                "audit",
                SnapshotReference::new(
                    21,
                    SnapshotRetention::Tag {
                        max_ref_age_ms: None,
                    },
                ),
            )?
            .set_ref(
                "b1",
                SnapshotReference::new(21, SnapshotRetention::branch(None, None, None)),
            )?
            .build()?
            .metadata;
        let (bytes, _) = to_json("s3://b/v1/metadata/00001-x.metadata.json", &md, &[])?;
        let doc: Value = serde_json::from_slice(&bytes)?;
        assert_eq!(doc["format-version"], 1);
        let written = serde_json::from_value::<RefsOnly>(doc.clone())?.refs;
        let mut names: Vec<_> = written.keys().cloned().collect();
        names.sort();
        assert_eq!(names, vec!["audit", "b1", "main"], "{doc}");
        let back = serde_json::from_slice::<TableMetadata>(&bytes)?;
        assert_eq!(refs_of(&back)?, refs_of(&md)?);
        assert_eq!(
            back.snapshot_for_ref("audit").map(|s| s.snapshot_id()),
            Some(21)
        );
        assert_eq!(
            back.snapshot_for_ref("b1").map(|s| s.snapshot_id()),
            Some(21)
        );
        assert_eq!(back.current_snapshot_id(), Some(22));

        // Metadata from before refs existed: main is the current snapshot.
        let mut old = doc;
        old.as_object_mut().ok_or("an object")?.remove("refs");
        let back = serde_json::from_value::<TableMetadata>(old)?;
        let refs = refs_of(&back)?;
        assert_eq!(refs.keys().collect::<Vec<_>>(), vec!["main"]);
        assert_eq!(refs["main"].snapshot_id, 22);
        Ok(())
    }

    /// Refs are followed from the base this process wrote through the commit's own changes
    /// (a new snapshot on `main`, a removed tag, a retention change, a removed `main`, expired
    /// snapshots); a base it did not write falls back to iceberg's writer.
    #[test]
    fn follows_refs_through_changes() -> TestResult {
        let (md, location) = rich()?;
        let unknown = "s3://b/t/metadata/never-written.metadata.json";
        let (bytes, refs) = to_json(unknown, &md, &[])?;
        assert_eq!(serde_json::from_slice::<TableMetadata>(&bytes)?, md);
        let refs = refs.ok_or("refs read back")?;
        remember(&location, refs);

        let built = TableMetadataBuilder::new_from_metadata(md.clone(), Some(location.clone()))
            .set_branch_snapshot(snapshot(13, Some(12), 3), "main")?
            .remove_ref("v1")
            .build()?;
        let followed =
            followed_refs(&location, &built.metadata, &built.changes).ok_or("not followed")?;
        let theirs: Value = serde_json::from_slice(&serde_json::to_vec(&built.metadata)?)?;
        assert_eq!(followed, serde_json::from_value::<RefsOnly>(theirs)?.refs);
        assert_eq!(followed.get("main").map(|r| r.snapshot_id), Some(13));
        assert!(!followed.contains_key("v1"));
        let (bytes, _) = to_json(&location, &built.metadata, &built.changes)?;
        assert_eq!(
            serde_json::from_slice::<TableMetadata>(&bytes)?,
            built.metadata
        );

        // Only the retention of a branch changes; then `main` goes.
        let retained = TableMetadataBuilder::new_from_metadata(md.clone(), Some(location.clone()))
            .set_ref(
                "audit",
                SnapshotReference::new(
                    11,
                    SnapshotRetention::Branch {
                        min_snapshots_to_keep: Some(9),
                        max_snapshot_age_ms: None,
                        max_ref_age_ms: Some(5),
                    },
                ),
            )?
            .remove_ref("main")
            .build()?;
        let followed = followed_refs(&location, &retained.metadata, &retained.changes)
            .ok_or("retention change not followed")?;
        let theirs: Value = serde_json::from_slice(&serde_json::to_vec(&retained.metadata)?)?;
        assert_eq!(followed, serde_json::from_value::<RefsOnly>(theirs)?.refs);
        assert!(!followed.contains_key("main"));
        let (bytes, _) = to_json(&location, &retained.metadata, &retained.changes)?;
        assert_eq!(
            serde_json::from_slice::<TableMetadata>(&bytes)?,
            retained.metadata
        );

        // Expiring snapshot 11 drops the `audit` branch that pointed at it.
        let expired = TableMetadataBuilder::new_from_metadata(md, Some(location.clone()))
            .remove_snapshots(&[11])
            .build()?;
        let followed = followed_refs(&location, &expired.metadata, &expired.changes)
            .ok_or("expiry not followed")?;
        assert!(!followed.contains_key("audit"));
        let theirs: Value = serde_json::from_slice(&serde_json::to_vec(&expired.metadata)?)?;
        assert_eq!(followed, serde_json::from_value::<RefsOnly>(theirs)?.refs);
        let (bytes, _) = to_json(&location, &expired.metadata, &expired.changes)?;
        assert_eq!(
            serde_json::from_slice::<TableMetadata>(&bytes)?,
            expired.metadata
        );
        Ok(())
    }
}
