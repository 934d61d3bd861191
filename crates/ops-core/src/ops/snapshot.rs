//! Builds one new snapshot: which data files stay, which go, which arrive.
//!
//! 1. Carry every manifest of the parent snapshot that holds none of the removed files as is.
//! 2. Rewrite each data manifest that does: live entries stay as EXISTING (keeping their
//!    snapshot id and sequence numbers), removed ones become DELETED.
//! 3. Write one manifest of ADDED files (sequence number inherited from the manifest list).
//! 4. Write the manifest list; compute the summary (added/deleted counts from the files, totals
//!    from the manifests' live counts and the parent's totals — iceberg keeps its own totals
//!    code private).
//! 5. Return requirements (same table, `main` still at the parent) and updates (add the
//!    snapshot, move `main`).

use std::collections::{HashMap, HashSet};

use iceberg::spec::{
    DataContentType, DataFile, FormatVersion, MAIN_BRANCH, ManifestContentType, ManifestFile,
    ManifestListWriter, ManifestWriter, ManifestWriterBuilder, Operation, PartitionSpecRef,
    Snapshot, SnapshotReference, SnapshotRetention, SnapshotSummaryCollector, Struct, Summary,
};
use iceberg::table::Table;
use iceberg::{TableRequirement, TableUpdate};
use uuid::Uuid;

use crate::commit::TableChange;
use crate::{Error, Result};

/// A data file's identity for partition-level validation: (spec id, partition tuple).
pub(crate) type PartitionKey = (i32, Struct);

/// A live data file of a snapshot, with the manifest facts needed to rewrite or match it.
#[derive(Debug, Clone)]
pub(crate) struct LiveFile {
    pub file: DataFile,
    pub spec_id: i32,
}

/// What a produced snapshot did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotMetrics {
    /// The new snapshot.
    pub snapshot_id: i64,
    /// Data files added.
    pub added_files: u64,
    /// Data files removed.
    pub removed_files: u64,
    /// Rows in added files.
    pub added_records: u64,
    /// Rows in removed files.
    pub removed_records: u64,
}

pub(crate) struct SnapshotProducer<'a> {
    table: &'a Table,
    operation: Operation,
    added: Vec<DataFile>,
    removed: HashSet<String>,
    properties: HashMap<String, String>,
}

impl<'a> SnapshotProducer<'a> {
    pub(crate) fn new(table: &'a Table, operation: Operation) -> Self {
        Self {
            table,
            operation,
            added: Vec::new(),
            removed: HashSet::new(),
            properties: HashMap::new(),
        }
    }

    pub(crate) fn add_files(mut self, files: impl IntoIterator<Item = DataFile>) -> Self {
        self.added.extend(files);
        self
    }

    pub(crate) fn remove_paths(mut self, paths: impl IntoIterator<Item = String>) -> Self {
        self.removed.extend(paths);
        self
    }

    pub(crate) fn properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    pub(crate) async fn produce(self) -> Result<(TableChange, SnapshotMetrics)> {
        let table = self.table;
        let md = table.metadata();
        let version = md.format_version();
        if version == FormatVersion::V3 {
            return Err(Error::InvalidInput(format!(
                "{} is an Iceberg v3 table; ops-core writes v1 and v2 tables",
                table.identifier()
            )));
        }
        for f in &self.added {
            if f.content_type() != DataContentType::Data {
                return Err(Error::InvalidInput(
                    "only data files can be added by this operation".into(),
                ));
            }
        }
        let parent = md.current_snapshot().cloned();
        let snapshot_id = new_snapshot_id(table);
        let sequence_number = if version == FormatVersion::V1 {
            0
        } else {
            md.next_sequence_number()
        };
        let commit_uuid = Uuid::now_v7();
        let metadata_dir = format!("{}/metadata", md.location().trim_end_matches('/'));
        let schema = md.current_schema().clone();
        let mut collector = SnapshotSummaryCollector::default();
        let mut manifests: Vec<ManifestFile> = Vec::new();
        let mut counter = 0usize;
        let mut next_path = || {
            counter += 1;
            format!("{metadata_dir}/{commit_uuid}-m{counter}.avro")
        };
        let mut removed_found: HashSet<String> = HashSet::new();
        let mut removed_records = 0u64;

        if let Some(parent) = &parent {
            let list = table.manifest_list_reader(parent).load().await?;
            for mf in list.entries() {
                if mf.content != ManifestContentType::Data || self.removed.is_empty() {
                    manifests.push(mf.clone());
                    continue;
                }
                let manifest = mf.load_manifest(table.file_io()).await?;
                let hit = manifest
                    .entries()
                    .iter()
                    .any(|e| e.is_alive() && self.removed.contains(e.data_file().file_path()));
                if !hit {
                    manifests.push(mf.clone());
                    continue;
                }
                let spec = spec_by_id(table, mf.partition_spec_id)?;
                let mut writer = manifest_writer(table, &next_path(), snapshot_id, &spec)?;
                for entry in manifest.entries() {
                    if !entry.is_alive() {
                        continue;
                    }
                    let file = entry.data_file().clone();
                    let seq = entry.sequence_number().unwrap_or(0);
                    let file_seq = entry.file_sequence_number.or(Some(seq));
                    if self.removed.contains(file.file_path()) {
                        removed_found.insert(file.file_path().to_string());
                        removed_records += file.record_count();
                        collector.remove_file(&file, schema.clone(), spec.clone());
                        writer.add_delete_file(file, seq, file_seq)?;
                    } else {
                        let sid = entry.snapshot_id().unwrap_or(mf.added_snapshot_id);
                        writer.add_existing_file(file, sid, seq, file_seq)?;
                    }
                }
                // Kept even when it holds only DELETED entries: it records this snapshot's
                // removals; the next snapshot drops it, as it holds nothing live.
                manifests.push(writer.write_manifest_file().await?);
            }
        }
        if removed_found.len() != self.removed.len() {
            let missing: Vec<&String> = self
                .removed
                .iter()
                .filter(|p| !removed_found.contains(*p))
                .take(3)
                .collect();
            return Err(Error::CommitConflict {
                table: table.identifier().to_string(),
                detail: format!(
                    "{} file(s) to remove are no longer live in the current snapshot \
                     (e.g. {missing:?}): a concurrent commit removed them",
                    self.removed.len() - removed_found.len()
                ),
            });
        }
        // Manifests carried from older snapshots that hold nothing live are dropped.
        manifests.retain(|m| {
            m.added_snapshot_id == snapshot_id || m.has_added_files() || m.has_existing_files()
        });

        let added_files = self.added.len() as u64;
        let added_records: u64 = self.added.iter().map(DataFile::record_count).sum();
        if !self.added.is_empty() {
            let spec = md.default_partition_spec().clone();
            let mut writer = manifest_writer(table, &next_path(), snapshot_id, &spec)?;
            for file in self.added {
                collector.add_file(&file, schema.clone(), spec.clone());
                // A negative sequence number leaves it unset: inherited from the manifest list.
                writer.add_file(file, -1)?;
            }
            manifests.insert(0, writer.write_manifest_file().await?);
        }

        let list_path = format!("{metadata_dir}/snap-{snapshot_id}-0-{commit_uuid}.avro");
        let output = table.file_io().new_output(&list_path)?;
        let parent_id = parent.as_ref().map(|s| s.snapshot_id());
        let mut list = match version {
            FormatVersion::V1 => {
                ManifestListWriter::v1(output.writer().await?, snapshot_id, parent_id)
            }
            _ => ManifestListWriter::v2(
                output.writer().await?,
                snapshot_id,
                parent_id,
                sequence_number,
            ),
        };
        list.add_manifests(manifests.iter().cloned())?;
        list.close().await?;

        let mut summary = self.properties;
        summary.extend(collector.build());
        totals(
            parent.as_ref().map(|s| s.summary()),
            &manifests,
            &mut summary,
        );
        let snapshot = Snapshot::builder()
            .with_snapshot_id(snapshot_id)
            .with_parent_snapshot_id(parent_id)
            .with_sequence_number(sequence_number)
            .with_timestamp_ms(now_ms(md.last_updated_ms()))
            .with_manifest_list(list_path)
            .with_summary(Summary {
                operation: self.operation,
                additional_properties: summary,
            })
            .with_schema_id(md.current_schema_id())
            .build();
        let change = TableChange {
            requirements: vec![
                TableRequirement::UuidMatch { uuid: md.uuid() },
                TableRequirement::RefSnapshotIdMatch {
                    r#ref: MAIN_BRANCH.to_string(),
                    snapshot_id: parent_id,
                },
            ],
            updates: vec![
                TableUpdate::AddSnapshot { snapshot },
                TableUpdate::SetSnapshotRef {
                    ref_name: MAIN_BRANCH.to_string(),
                    reference: SnapshotReference::new(
                        snapshot_id,
                        SnapshotRetention::branch(None, None, None),
                    ),
                },
            ],
        };
        let metrics = SnapshotMetrics {
            snapshot_id,
            added_files,
            removed_files: removed_found.len() as u64,
            added_records,
            removed_records,
        };
        Ok((change, metrics))
    }
}

fn manifest_writer(
    table: &Table,
    path: &str,
    snapshot_id: i64,
    spec: &PartitionSpecRef,
) -> Result<ManifestWriter> {
    let md = table.metadata();
    let builder = ManifestWriterBuilder::new(
        table.file_io().new_output(path)?,
        Some(snapshot_id),
        md.current_schema().clone(),
        spec.as_ref().clone(),
    );
    Ok(match md.format_version() {
        FormatVersion::V1 => builder.build_v1(),
        _ => builder.build_v2_data(),
    })
}

pub(crate) fn spec_by_id(table: &Table, spec_id: i32) -> Result<PartitionSpecRef> {
    table
        .metadata()
        .partition_spec_by_id(spec_id)
        .cloned()
        .ok_or_else(|| {
            Error::InvalidInput(format!(
                "{} references partition spec {spec_id}, which its metadata lacks",
                table.identifier()
            ))
        })
}

/// Every live data file of the current snapshot.
pub(crate) async fn live_data_files(table: &Table) -> Result<Vec<LiveFile>> {
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(Vec::new());
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut out = Vec::new();
    for mf in list.entries() {
        if mf.content != ManifestContentType::Data {
            continue;
        }
        let manifest = mf.load_manifest(table.file_io()).await?;
        for entry in manifest.entries() {
            if entry.is_alive() {
                out.push(LiveFile {
                    file: entry.data_file().clone(),
                    spec_id: mf.partition_spec_id,
                });
            }
        }
    }
    Ok(out)
}

/// Files added by `snapshot_id` (entries whose status is ADDED in that snapshot).
pub(crate) async fn files_added_by(table: &Table, snapshot_id: i64) -> Result<Vec<LiveFile>> {
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Ok(Vec::new());
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let mut out = Vec::new();
    for mf in list.entries() {
        if mf.content != ManifestContentType::Data || mf.added_snapshot_id != snapshot_id {
            continue;
        }
        let manifest = mf.load_manifest(table.file_io()).await?;
        for entry in manifest.entries() {
            if entry.status() == iceberg::spec::ManifestStatus::Added {
                out.push(LiveFile {
                    file: entry.data_file().clone(),
                    spec_id: mf.partition_spec_id,
                });
            }
        }
    }
    Ok(out)
}

fn new_snapshot_id(table: &Table) -> i64 {
    loop {
        let (a, b) = Uuid::new_v4().as_u64_pair();
        let id = ((a ^ b) & (i64::MAX as u64)) as i64;
        if id != 0 && table.metadata().snapshot_by_id(id).is_none() {
            return id;
        }
    }
}

/// Wall-clock milliseconds, never before the table's last update (clocks can step back).
fn now_ms(last_updated_ms: i64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(last_updated_ms);
    now.max(last_updated_ms + 1)
}

fn get(m: &HashMap<String, String>, k: &str) -> Option<i64> {
    m.get(k).and_then(|v| v.parse().ok())
}

/// total-* figures. Data-file and record totals come from the new manifest list's live counts
/// (exact whatever the parent recorded); the others are the parent's plus this snapshot's delta,
/// and are omitted when the parent has none to build on.
fn totals(
    parent: Option<&Summary>,
    manifests: &[ManifestFile],
    summary: &mut HashMap<String, String>,
) {
    let live = |content: ManifestContentType| -> (u64, u64) {
        manifests
            .iter()
            .filter(|m| m.content == content)
            .fold((0, 0), |(f, r), m| {
                (
                    f + u64::from(m.added_files_count.unwrap_or(0))
                        + u64::from(m.existing_files_count.unwrap_or(0)),
                    r + m.added_rows_count.unwrap_or(0) + m.existing_rows_count.unwrap_or(0),
                )
            })
    };
    let (data_files, records) = live(ManifestContentType::Data);
    let (delete_files, _) = live(ManifestContentType::Deletes);
    summary.insert("total-data-files".into(), data_files.to_string());
    summary.insert("total-records".into(), records.to_string());
    summary.insert("total-delete-files".into(), delete_files.to_string());
    let parent_props = parent.map(|s| &s.additional_properties);
    for (total, added, removed) in [
        ("total-files-size", "added-files-size", "removed-files-size"),
        (
            "total-position-deletes",
            "added-position-deletes",
            "removed-position-deletes",
        ),
        (
            "total-equality-deletes",
            "added-equality-deletes",
            "removed-equality-deletes",
        ),
    ] {
        let base = match parent_props {
            None => Some(0),
            Some(p) => get(p, total),
        };
        if let Some(base) = base {
            let v = base + get(summary, added).unwrap_or(0) - get(summary, removed).unwrap_or(0);
            summary.insert(total.into(), v.max(0).to_string());
        }
    }
}

/// Runs `plan` on the current table and commits its snapshot, re-planning on a conflict (see
/// [`crate::commit::commit_with_retry`]); `None` from `plan` means nothing to commit.
pub(crate) async fn commit_snapshot<F, Fut>(
    handle: &crate::CatalogHandle,
    ident: &iceberg::TableIdent,
    mut plan: F,
) -> Result<(Table, SnapshotMetrics)>
where
    F: FnMut(Table) -> Fut,
    Fut: std::future::Future<Output = Result<Option<(TableChange, SnapshotMetrics)>>>,
{
    let metrics = std::sync::Mutex::new(SnapshotMetrics::default());
    let table = crate::commit::commit_with_retry(handle, ident, |base| {
        let planned = plan(base);
        let metrics = &metrics;
        async move {
            let Some((change, m)) = planned.await? else {
                return Ok(None);
            };
            *metrics.lock().unwrap_or_else(|p| p.into_inner()) = m;
            Ok(Some(change))
        }
    })
    .await?;
    Ok((
        table,
        metrics.into_inner().unwrap_or_else(|p| p.into_inner()),
    ))
}

/// Fails with a conflict if a snapshot committed after `since` (up to `table`'s current one)
/// added files to any of `partitions`; `since = None` means the table was empty.
pub(crate) async fn validate_no_new_files_in(
    table: &Table,
    since: Option<i64>,
    partitions: &HashSet<PartitionKey>,
) -> Result<()> {
    let md = table.metadata();
    let mut cursor = md.current_snapshot_id();
    while cursor != since {
        let Some(id) = cursor else {
            return Err(Error::CommitConflict {
                table: table.identifier().to_string(),
                detail: format!(
                    "main no longer descends from snapshot {since:?} (it was rolled back or \
                     replaced)"
                ),
            });
        };
        let added = files_added_by(table, id).await?;
        if let Some(hit) = added
            .iter()
            .find(|f| partitions.contains(&(f.spec_id, f.file.partition().clone())))
        {
            return Err(Error::CommitConflict {
                table: table.identifier().to_string(),
                detail: format!(
                    "snapshot {id} added {} to partition {:?}, which this operation replaces",
                    hit.file.file_path(),
                    hit.file.partition()
                ),
            });
        }
        cursor = md.snapshot_by_id(id).and_then(|s| s.parent_snapshot_id());
    }
    Ok(())
}
