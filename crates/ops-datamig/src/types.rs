//! The migrator's settings vocabulary and its results, with the seed's names.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use iceberg::TableIdent;
use iceberg::expr::Predicate;
use iceberg::table::Table;
use ops_core::CatalogHandle;
use ops_core::file_path::FilePath;
use ops_reconcile::ReconciliationPlan;
use serde::{Deserialize, Serialize};

use crate::{MigrationError, Result};

/// How each chunk is written to the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteMode {
    /// One append per chunk.
    #[default]
    Append,
    /// One copy-on-write overwrite per chunk keyed by the upsert keys.
    Upsert,
    /// The first commit of the job that touches a partition replaces it; later commits add to it.
    OverwritePartition,
}

impl WriteMode {
    /// The seed's spelling: `append`, `upsert`, `overwrite_partition`.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteMode::Append => "append",
            WriteMode::Upsert => "upsert",
            WriteMode::OverwritePartition => "overwrite_partition",
        }
    }
}

impl fmt::Display for WriteMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WriteMode {
    type Err = MigrationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "append" => Ok(WriteMode::Append),
            "upsert" => Ok(WriteMode::Upsert),
            "overwrite_partition" | "overwrite-partition" => Ok(WriteMode::OverwritePartition),
            other => Err(MigrationError::InvalidInput(format!(
                "unknown write mode '{other}'; use append, upsert or overwrite_partition"
            ))),
        }
    }
}

/// What an upsert does with a key the source holds more than once, in one chunk or across
/// chunks (`--on-duplicate-keys`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnDuplicateKeys {
    /// Refuse the job before anything is written, naming the key and the two chunks holding
    /// it (the source's key pre-pass), so the outcome never depends on `batch_rows`.
    #[default]
    Error,
    /// Keep, for each key, the row that comes last in the source's order — highest data
    /// sequence number, then the file's position in the planned file order, then the row's
    /// position in the file — the order a resume replays. For sources fed by change capture.
    Last,
}

impl OnDuplicateKeys {
    /// The CLI spelling: `error`, `last`.
    pub fn as_str(self) -> &'static str {
        match self {
            OnDuplicateKeys::Error => "error",
            OnDuplicateKeys::Last => "last",
        }
    }
}

impl fmt::Display for OnDuplicateKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OnDuplicateKeys {
    type Err = MigrationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "error" => Ok(OnDuplicateKeys::Error),
            "last" => Ok(OnDuplicateKeys::Last),
            other => Err(MigrationError::InvalidInput(format!(
                "unknown on_duplicate_keys '{other}'; use error or last"
            ))),
        }
    }
}

/// Whether source data files may be copied byte for byte instead of decoded and re-encoded
/// (`--copy-mode`); see [`route_files`](crate::route_files).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyMode {
    /// Copy every file the fast path can take, rewrite the others.
    #[default]
    Auto,
    /// Decode and re-encode every row (the pre-copy behaviour).
    Rewrite,
    /// Copy files; refuse when the table-level conditions fail (files that a delete or an
    /// undecidable filter touches are still rewritten).
    Files,
    /// As `Files`, but the destination references the source's files in place: the two tables
    /// then share data files, and expiring or cleaning either can break the other.
    Reference,
}

impl CopyMode {
    /// The CLI spelling: `auto`, `rewrite`, `files`, `reference`.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyMode::Auto => "auto",
            CopyMode::Rewrite => "rewrite",
            CopyMode::Files => "files",
            CopyMode::Reference => "reference",
        }
    }
}

impl fmt::Display for CopyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CopyMode {
    type Err = MigrationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(CopyMode::Auto),
            "rewrite" => Ok(CopyMode::Rewrite),
            "files" => Ok(CopyMode::Files),
            "reference" => Ok(CopyMode::Reference),
            other => Err(MigrationError::InvalidInput(format!(
                "unknown copy mode '{other}'; use auto, rewrite, files or reference"
            ))),
        }
    }
}

/// How the migrator treats the destination partition spec. Only `Preserve` exists: the
/// destination's own spec lays the data out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionStrategy {
    /// The destination's partition spec dictates the layout.
    #[default]
    Preserve,
}

/// A row filter on the source: an expression string (`region = 'eu' and qty > 5`, column
/// names as in the source's current schema) or an iceberg predicate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowFilter {
    /// Parsed with `ops_core::filter` against the source schema during pre-flight.
    Expression(String),
    /// Bound to the schema of the source snapshot being read.
    Predicate(Predicate),
}

impl RowFilter {
    /// The filter as recorded in the checkpoint's job identity.
    pub fn describe(&self) -> String {
        match self {
            RowFilter::Expression(s) => s.clone(),
            RowFilter::Predicate(p) => p.to_string(),
        }
    }
}

impl From<&str> for RowFilter {
    fn from(s: &str) -> Self {
        RowFilter::Expression(s.to_string())
    }
}
impl From<String> for RowFilter {
    fn from(s: String) -> Self {
        RowFilter::Expression(s)
    }
}
impl From<Predicate> for RowFilter {
    fn from(p: Predicate) -> Self {
        RowFilter::Predicate(p)
    }
}

/// How one source data file reaches the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileRoute {
    /// Read, projected through the plan and written as new files.
    Rewrite,
    /// Bytes copied to a new file under the destination's data location.
    Copy,
    /// Committed to the destination at its source path (the tables share the file).
    Reference,
    /// Not moved: the row filter excludes every row of the file's partition.
    Skip,
}

impl FileRoute {
    /// `rewrite`, `copy`, `reference` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileRoute::Rewrite => "rewrite",
            FileRoute::Copy => "copy",
            FileRoute::Reference => "reference",
            FileRoute::Skip => "skip",
        }
    }
}

impl fmt::Display for FileRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The route of one source data file and why: what a result and a dry run report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedFile {
    /// The source data file (shared with the planned read: a path is held once however many
    /// parts of a plan name it, its directory once for all its files).
    pub path: FilePath,
    /// Where it goes.
    pub route: FileRoute,
    /// Why, in words. Shared: the files of one table mostly share a handful of reasons, and a
    /// million files each with its own copy of the same sentence held a hundred MB.
    pub reason: Arc<str>,
    /// Rows in the file (from its manifest entry; before deletes and the filter).
    pub record_count: u64,
    /// Bytes of the file.
    pub file_size_in_bytes: u64,
}

/// Outcome of [`DataMigrator::run`](crate::DataMigrator::run).
#[derive(Debug, Clone, Default, Serialize)]
pub struct MigrationResult {
    /// The copy mode the run was given.
    pub copy_mode: CopyMode,
    /// Source data files copied byte for byte (`--copy-mode auto|files`).
    pub files_copied: u64,
    /// Source data files the destination now references in place (`--copy-mode reference`).
    pub files_referenced: u64,
    /// Source data files decoded, projected and re-encoded.
    pub files_rewritten: u64,
    /// Every live source data file with the path it took (or would take, in a dry run) and
    /// why.
    pub files: Vec<RoutedFile>,
    /// Rows written by this run (batches skipped on resume excluded); 0 for a dry run. For
    /// upserts, incoming rows, not distinct keys.
    pub rows_moved: u64,
    /// Arrow (in-memory) bytes of every chunk handed to the writer, the seed's
    /// `sum(chunk.nbytes)`: pyarrow's `nbytes`, the buffer ranges a chunk's rows reference
    /// (list and map entries included), not the buffers a sliced chunk shares with its
    /// neighbours; not the Parquet size.
    pub bytes_moved: u64,
    /// Every destination snapshot this run created, in commit order.
    pub new_snapshots: Vec<i64>,
    /// Columns this run added to the destination (auto-add), in source order, then the columns
    /// it widened (a type coercion to a legal promotion), in plan order.
    pub schema_changes: Vec<String>,
    /// Wall-clock seconds across pre-flight, streaming and post-flight.
    pub duration_seconds: f64,
    /// The checkpoint file, when one was used.
    pub checkpoint_path: Option<PathBuf>,
    /// True for a dry run.
    pub dry_run: bool,
    /// What the run warned of as it started (also logged with `tracing`): another job's
    /// marker on the destination, or a completed job that wrote the rows this append adds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Rows scanned (after the filter) by a dry run; `None` for real runs.
    pub estimated_rows: Option<u64>,
    /// Arrow bytes of the projected rows of a dry run; `None` for real runs.
    pub estimated_bytes: Option<u64>,
    /// The plan the migrator used.
    #[serde(serialize_with = "plan_summary")]
    pub plan: Option<ReconciliationPlan>,
    /// The destination's snapshot before the job wrote anything: the rollback target. For a
    /// resumed run, the one recorded when the job started; `None` when the destination had no
    /// snapshot, or for a dry run.
    pub dest_snapshot_before: Option<i64>,
    /// Rows an upsert inserted; `None` unless upserting.
    pub rows_inserted: Option<u64>,
    /// Rows an upsert rewrote because a non-key value changed; `None` unless upserting.
    pub rows_updated: Option<u64>,
    /// Batches this run committed (or recorded, when found already landed).
    pub batches_committed: u64,
    /// Batches skipped because the checkpoint already had them (a batch found landed in the
    /// destination's history is recorded and counted in `batches_committed`).
    pub batches_skipped: u64,
    /// Of `batches_committed`, those an earlier run committed without checkpointing them (it
    /// was killed in between): found landed by their snapshot tags, recorded, not written again.
    pub batches_landed: u64,
    /// The job id stamped into every snapshot summary (`iceberg-ops.migration-job`).
    pub job_id: Option<String>,
    /// The source snapshot read: the one the job is pinned to, which a resumed run reads again.
    pub source_snapshot_id: Option<i64>,
    /// That snapshot against the source's current one when the run ended (`None` for a dry
    /// run, or when the source could not be loaded again): rows committed to the source after
    /// the job pinned its snapshot — before a resume, say — are not in the destination, and
    /// this job does not copy them. In JSON, as for a job found complete:
    /// `source_current_snapshot_id` and `source_changed`.
    #[serde(flatten, serialize_with = "source_now")]
    pub source_snapshots: Option<CompletedSource>,
    /// With [`crate::DataMigrator::compact`]: the compaction of the files the job wrote.
    pub compaction: Option<JobCompaction>,
    /// With [`crate::DataMigrator::expire_job_snapshots`]: the expiry of the job's snapshots.
    pub expiry: Option<JobExpiry>,
}

/// The expiry of a completed job's own snapshots.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobExpiry {
    /// The snapshots expired, ascending (the table's current one is never among them).
    pub expired_snapshots: Vec<i64>,
    /// Data files deleted (those only the expired snapshots referenced, e.g. the small files
    /// a compaction replaced).
    pub deleted_data_files: usize,
    /// Manifests and manifest lists deleted.
    pub deleted_manifests: usize,
    /// The destination has `gc.enabled=false` (a reference copy): the metadata changed, no file
    /// was deleted.
    pub kept_files: bool,
    /// The snapshots expired but their files were not deleted, and why.
    pub cleanup_skipped: Option<String>,
}

/// The source snapshot a job is pinned to, and the source's current snapshot when a run ended
/// or a re-run found the job complete: rows committed to the source after the pinned snapshot
/// are not in the destination, and the job (resumed or complete) does not copy them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompletedSource {
    /// The source, as messages name it.
    pub table: String,
    /// The snapshot the job was pinned to; `None` when the source had none (it was empty).
    pub read_snapshot_id: Option<i64>,
    /// The source's current snapshot now; `None` when it has none.
    pub current_snapshot_id: Option<i64>,
    /// The job's write mode: what a new job would do with the rows this one copied.
    pub write_mode: WriteMode,
}

impl CompletedSource {
    /// Whether the source moved on since the snapshot the job read.
    pub fn changed(&self) -> bool {
        self.read_snapshot_id != self.current_snapshot_id
    }
}

impl fmt::Display for CompletedSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let read = match self.read_snapshot_id {
            Some(id) => format!("snapshot {id}"),
            None => "no snapshot (it was empty)".to_string(),
        };
        if !self.changed() {
            return write!(
                f,
                "It read {} at {read}, which is still the source's current snapshot",
                self.table
            );
        }
        let current = self
            .current_snapshot_id
            .map_or("none".to_string(), |id| id.to_string());
        // A new job reads the current snapshot whole: in append mode that is every row again,
        // which the operator must hear before starting one for the new rows.
        let new_job = match self.write_mode {
            WriteMode::Append => {
                "a new job (a new --checkpoint path) reads the current snapshot whole and, \
                 appending, copies every row again, not only the new ones: select the new rows \
                 with --row-filter"
            }
            WriteMode::Upsert => {
                "a new job (a new --checkpoint path) upserts the source's current rows by key"
            }
            WriteMode::OverwritePartition => {
                "a new job (a new --checkpoint path) replaces the partitions the source's \
                 current rows fall in"
            }
        };
        write!(
            f,
            "It read {} at {read}, but the source's current snapshot is now {current}: \
             changes committed to the source since are not in the destination, and this job \
             does not copy them; {new_job}",
            self.table
        )
    }
}

/// The compaction a job ran on the files it wrote, once its last batch landed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct JobCompaction {
    /// The `replace` snapshot (summary `iceberg-ops.compacted-job` = the job id); `None` when
    /// nothing needed compacting.
    pub snapshot_id: Option<i64>,
    /// The job's files rewritten.
    pub input_files: usize,
    /// The files written in their place.
    pub output_files: usize,
}

/// The source's current snapshot and whether it moved on, as fields of the result's JSON (the
/// names `migrate-data` uses for a job found complete); nothing without them.
fn source_now<S: serde::Serializer>(
    source: &Option<CompletedSource>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct SourceNow {
        source_current_snapshot_id: Option<i64>,
        source_changed: bool,
    }
    source
        .as_ref()
        .map(|c| SourceNow {
            source_current_snapshot_id: c.current_snapshot_id,
            source_changed: c.changed(),
        })
        .serialize(s)
}

fn plan_summary<S: serde::Serializer>(
    plan: &Option<ReconciliationPlan>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match plan {
        None => s.serialize_none(),
        Some(p) => {
            let columns: Vec<serde_json::Value> = p
                .projections
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "dest": c.dest_name,
                        "source": c.source_name,
                        "type": c.dest_arrow_type.to_string(),
                        "fill_with_null": c.fill_with_null,
                    })
                })
                .collect();
            let auto: Vec<serde_json::Value> = p
                .auto_add_columns
                .iter()
                .map(|(n, t)| serde_json::json!({"name": n, "type": t.to_string()}))
                .collect();
            serde_json::json!({
                "projections": columns,
                "auto_add_columns": auto,
                "warnings": p.warnings,
            })
            .serialize(s)
        }
    }
}

/// Which check [`DataMigrator::verify`](crate::DataMigrator::verify) runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyMethod {
    /// Source rows (filtered, pinned) against destination rows, from manifest record counts.
    #[default]
    RowCount,
    /// An order-independent digest of every row, per destination partition.
    PartitionHash,
    /// The `sample_size` rows with the smallest row hashes on each side.
    Sample,
}

impl VerifyMethod {
    /// The seed's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            VerifyMethod::RowCount => "row_count",
            VerifyMethod::PartitionHash => "partition_hash",
            VerifyMethod::Sample => "sample",
        }
    }
}

impl fmt::Display for VerifyMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for VerifyMethod {
    type Err = MigrationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "row_count" | "row-count" => Ok(VerifyMethod::RowCount),
            "partition_hash" | "partition-hash" => Ok(VerifyMethod::PartitionHash),
            "sample" => Ok(VerifyMethod::Sample),
            other => Err(MigrationError::InvalidInput(format!(
                "unknown verify method '{other}'; use row_count, partition_hash or sample"
            ))),
        }
    }
}

/// Outcome of [`DataMigrator::verify`](crate::DataMigrator::verify).
///
/// Caveat: the source (filtered and pinned per the migrator's settings) is compared with the
/// destination's current state, unfiltered. Meaningful for an append into an empty
/// destination; rows the destination held before, or upserts, must be accounted for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VerificationResult {
    /// The method used.
    pub method: VerifyMethod,
    /// True when both sides agreed under the method.
    pub matches: bool,
    /// Source rows seen (after filter and snapshot pin); for row_count and sample (and
    /// partition_hash, where it is known too).
    pub source_count: Option<u64>,
    /// Destination rows seen.
    pub dest_count: Option<u64>,
    /// For sample: rows actually compared.
    pub sample_size: Option<u64>,
    /// For partition_hash: partitions whose digests differ or exist on one side only.
    pub mismatched_partitions: Vec<String>,
    /// Why it does not match; empty when it does.
    pub details: Vec<String>,
}

/// `progress(rows_done, rows_total_or_none)`, called after each committed batch.
pub type Progress = Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// A table in a catalog.
#[derive(Clone)]
pub(crate) struct TableRef {
    pub handle: CatalogHandle,
    pub ident: TableIdent,
}

impl TableRef {
    pub(crate) fn describe(&self) -> String {
        format!("{} (catalog '{}')", self.ident, self.handle.name())
    }

    /// The table as a CLI command names it: `NS.T --catalog C`, for advice an operator runs.
    pub(crate) fn cli_args(&self) -> String {
        format!("{} --catalog {}", self.ident, self.handle.name())
    }

    /// The snapshot a job of this source is pinned to (`pinned`) against the source's current
    /// one, loaded now: rows committed since are not in the destination. `None`, with a warning
    /// logged, when the source cannot be loaded (dropped since): what the job copied is not
    /// less copied for that.
    pub(crate) async fn pinned_against_current(
        &self,
        pinned: Option<i64>,
        write_mode: WriteMode,
    ) -> Option<CompletedSource> {
        match self.load().await {
            Ok(t) => {
                let now = CompletedSource {
                    table: self.describe(),
                    read_snapshot_id: pinned,
                    current_snapshot_id: t.metadata().current_snapshot_id(),
                    write_mode,
                };
                if now.changed() {
                    tracing::warn!(source = %now.table, pinned = ?pinned,
                        current = ?now.current_snapshot_id,
                        "the source moved on since the snapshot the job is pinned to");
                }
                Some(now)
            }
            Err(e) => {
                tracing::warn!(error = %e, source = %self.describe(),
                    "the job's source could not be loaded to compare its snapshots");
                None
            }
        }
    }

    pub(crate) async fn load(&self) -> Result<Table> {
        self.handle
            .catalog()
            .load_table(&self.ident)
            .await
            .map_err(|e| {
                // "cannot load" is what a missing table gets (the CLI adds the flag naming
                // the catalog it was looked up in); a table found but not loadable is "cannot
                // read", its cause saying why. Glue's client reports a missing table as an
                // SDK error of kind Unexpected, named only in its text.
                let missing = matches!(
                    e.kind(),
                    iceberg::ErrorKind::TableNotFound | iceberg::ErrorKind::NamespaceNotFound
                ) || e.to_string().contains("EntityNotFoundException");
                let verb = if missing { "load" } else { "read" };
                MigrationError::InvalidInput(format!(
                    "cannot {verb} table {}: {e}",
                    self.describe()
                ))
            })
    }
}
