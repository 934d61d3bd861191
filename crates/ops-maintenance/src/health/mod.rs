//! Table health: what a table's metadata says about its need for care, and the command for each
//! need — Amoro's evaluator, Glue's optimizer and S3 Tables' triggers in one report.
//!
//! 1. Resolve the table's thresholds ([`crate::policy`]).
//! 2. Stream the current snapshot's data manifests, then its delete manifests, keeping only a
//!    running total per partition (`collect`): file-size classes against the target (fragments
//!    up to target/8, undersized below 75% of it, the rest), delete files and records, and the
//!    two smallest small files (a partition whose two smallest cannot share a file would not be
//!    compacted however many it has). Memory grows with the partitions, not the files.
//! 3. Snapshots and refs an expiry would remove now (iceberg's selection on the table's own
//!    `history.expire.*`, no manifest read), the manifest list's counts, the metadata file's
//!    size and log, the markers of unfinished migrations.
//! 4. Score each partition as Amoro does (`score`) and name each problem with the command that
//!    fixes it. `maintain` acts on the same [`Due`].

mod collect;
pub(crate) mod score;

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::TableIdent;
use iceberg::spec::ManifestContentType;
use iceberg::table::Table;
use ops_core::ops::ManifestCache;
use ops_core::ops::markers;
use ops_core::{CatalogHandle, CatalogKind, Result};
use serde::Serialize;

use crate::policy::{Policy, Thresholds};
pub use score::Score;

/// Files of one size class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SizeClass {
    /// How many.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
}

/// The live data files of the current snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DataFiles {
    /// Every live data file.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Their records (before deletes).
    pub records: u64,
    /// At most target/8 (Amoro's fragments).
    pub fragments: SizeClass,
    /// Above target/8 and below 75% of the target.
    pub undersized: SizeClass,
    /// At least 75% of the target.
    pub well_sized: SizeClass,
    /// Files of an older partition spec (a spec change left them; compaction leaves them
    /// unless asked to rewrite them into the current spec).
    pub other_spec: SizeClass,
    /// The mean size.
    pub mean_bytes: u64,
}

/// Delete files of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DeleteClass {
    /// How many.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Their records (deleted rows, or equality keys).
    pub records: u64,
    /// Records per data record.
    pub ratio: f64,
}

/// The live delete files of the current snapshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Deletes {
    /// Position deletes.
    pub position: DeleteClass,
    /// Equality deletes.
    pub equality: DeleteClass,
    /// Delete files no live data file of their partition can take any more (by sequence
    /// number): readers skip them, but they stay in every plan until removed.
    pub dangling_files: u64,
}

/// Files of one range of sizes, for the histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SizeBucket {
    /// The smallest size in the range.
    pub min_bytes: u64,
    /// The largest.
    pub max_bytes: u64,
    /// Live data files in it.
    pub files: u64,
}

/// One partition's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PartitionHealth {
    /// The partition spec.
    pub spec_id: i32,
    /// `field=value/...` (empty for an unpartitioned table).
    pub partition: String,
    /// Live data files.
    pub data_files: u64,
    /// Their bytes.
    pub data_bytes: u64,
    /// Their records.
    pub data_records: u64,
    /// Fragments among them.
    pub fragments: u64,
    /// Undersized files among them.
    pub undersized: u64,
    /// Position delete files.
    pub position_delete_files: u64,
    /// Their records.
    pub position_delete_records: u64,
    /// Equality delete files.
    pub equality_delete_files: u64,
    /// Their records.
    pub equality_delete_records: u64,
    /// Amoro's score of the partition.
    pub score: Score,
    /// At least `min-input-files` files below 75% of the target, the two smallest fitting in
    /// one target-size file (the current spec only).
    pub small_files_due: bool,
    /// The records of the delete files that still apply pass a share of its rows (the
    /// current spec only).
    pub deletes_due: bool,
    /// Compaction would rewrite it now: either of the above.
    pub compaction_due: bool,
}

/// The largest partition against the median.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Skew {
    /// The partition with the most data bytes.
    pub largest: String,
    /// Its bytes.
    pub largest_bytes: u64,
    /// The median partition's bytes.
    pub median_bytes: u64,
    /// `largest_bytes / median_bytes`.
    pub ratio: f64,
}

/// The table's snapshots.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Snapshots {
    /// How many the metadata holds.
    pub count: u64,
    /// When the oldest was committed (ms since the epoch).
    pub oldest_ms: Option<i64>,
    /// Its age in hours.
    pub oldest_age_hours: Option<f64>,
    /// Branches and tags (main included).
    pub refs: u64,
    /// Snapshots an expiry would remove now.
    pub expirable: Vec<i64>,
    /// Refs an expiry would drop now (past their `max-ref-age-ms`).
    pub expirable_refs: Vec<String>,
    /// The rule they were chosen by.
    pub rule: String,
}

/// The current snapshot's manifests.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Manifests {
    /// Data manifests.
    pub data: u64,
    /// Delete manifests.
    pub delete: u64,
    /// Live entries (added and existing files) in all of them.
    pub entries: u64,
    /// Entries per manifest.
    pub mean_entries: f64,
    /// Their bytes.
    pub bytes: u64,
}

/// The metadata file and its log.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MetadataFile {
    /// Where the current metadata file is.
    pub location: Option<String>,
    /// Its bytes.
    pub bytes: Option<u64>,
    /// Earlier metadata files the log lists.
    pub log_length: u64,
    /// `write.metadata.previous-versions-max` (100).
    pub previous_versions_max: u64,
    /// `write.metadata.delete-after-commit.enabled` (false): whether old metadata files are
    /// deleted once they leave the log.
    pub delete_after_commit: bool,
}

/// What keeps maintenance off the table, or some of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Markers {
    /// Unfinished migration jobs writing to it: (job, started).
    pub running_migrations: Vec<(String, String)>,
    /// `gc.enabled`: false keeps every file (an import's source files, a kept backup).
    pub gc_enabled: bool,
    /// An S3 Tables table: the service maintains it.
    pub s3_tables: bool,
    /// `iceberg-ops.maintain.enabled`.
    pub maintain_enabled: bool,
    /// An Iceberg v3 table: iceberg-ops does not rewrite it (row lineage, column defaults).
    pub v3: bool,
}

/// The maintenance due now, by the thresholds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Due {
    /// Partitions compaction would rewrite: at least `min-input-files` small files of which
    /// the two smallest fit in one target-size file, or delete records past a ratio.
    pub compact_partitions: u64,
    /// Files of older partition specs to rewrite into the current one
    /// (`iceberg-ops.maintain.rewrite-old-spec-files=true`).
    pub rewrite_old_spec_files: bool,
    /// Snapshots (or refs) to expire.
    pub expire: bool,
    /// Dangling delete files to remove.
    pub dangling_deletes: bool,
}

/// One thing the table needs, and the command that gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// `small-files`, `deletes`, `old-spec-files`, `snapshots`, `dangling-deletes`,
    /// `unfinished-migration`.
    pub kind: String,
    /// What was found.
    pub detail: String,
    /// The command that fixes it.
    pub fix: String,
}

/// A table's health (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TableHealth {
    /// `NS.T`.
    pub table: String,
    /// The format version.
    pub format_version: u8,
    /// The thresholds judged by.
    pub thresholds: ThresholdsReport,
    /// Amoro's score, the mean of the partitions'.
    pub score: Score,
    /// Live data files.
    pub data: DataFiles,
    /// Live delete files.
    pub deletes: Deletes,
    /// Data file sizes, by powers of two (only the ranges from the first file to the last).
    pub size_histogram: Vec<SizeBucket>,
    /// Partitions holding data or delete files.
    pub partition_count: u64,
    /// Of those, the partitions holding data files.
    pub data_partition_count: u64,
    /// Every partition, the lowest score first (then by name).
    pub partitions: Vec<PartitionHealth>,
    /// The largest partition against the median (two partitions or more).
    pub skew: Option<Skew>,
    /// Snapshots.
    pub snapshots: Snapshots,
    /// Manifests.
    pub manifests: Manifests,
    /// The metadata file.
    pub metadata: MetadataFile,
    /// Markers.
    pub markers: Markers,
    /// What is due.
    pub due: Due,
    /// What the table needs, each with its command.
    pub problems: Vec<Problem>,
}

/// The thresholds as reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ThresholdsReport {
    /// The target file size.
    pub target_file_size: u64,
    /// Fragments are at most this.
    pub fragment_size: u64,
    /// Undersized files are below this.
    pub min_file_size: u64,
    /// See [`Thresholds::min_input_files`].
    pub min_input_files: usize,
    /// See [`Thresholds::equality_delete_ratio`].
    pub equality_delete_ratio: f64,
    /// See [`Thresholds::position_delete_ratio`].
    pub position_delete_ratio: f64,
    /// See [`Thresholds::score_file_count`].
    pub score_file_count: usize,
    /// Where each came from.
    pub sources: std::collections::BTreeMap<String, String>,
}

impl From<&Thresholds> for ThresholdsReport {
    fn from(t: &Thresholds) -> Self {
        Self {
            target_file_size: t.target_file_size,
            fragment_size: t.fragment_size,
            min_file_size: t.min_file_size,
            min_input_files: t.min_input_files,
            equality_delete_ratio: t.equality_delete_ratio,
            position_delete_ratio: t.position_delete_ratio,
            score_file_count: t.score_file_count,
            sources: t.sources.clone(),
        }
    }
}

/// Reports one table's health (see the module docs).
#[must_use = "a HealthBuilder does nothing until awaited"]
pub struct HealthBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    policy: Policy,
    command_args: String,
}

impl HealthBuilder {
    /// The health of `ident`.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            policy: Policy::default(),
            command_args: String::new(),
        }
    }

    /// Judges by this policy where the table has no property of its own.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// What the fix commands pass after the table name to reach it as this run did, e.g.
    /// `--config FILE --catalog NAME` (empty: the default catalog).
    pub fn command_args(mut self, args: impl Into<String>) -> Self {
        self.command_args = args.into();
        self
    }

    async fn execute(self) -> Result<TableHealth> {
        let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
        health_of(&self.handle, &table, &self.policy, &self.command_args).await
    }
}

impl IntoFuture for HealthBuilder {
    type Output = Result<TableHealth>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// The health of `table` as loaded (see the module docs); `command_args` go into the fix
/// commands after the table name (see [`HealthBuilder::command_args`]).
pub async fn health_of(
    handle: &CatalogHandle,
    table: &Table,
    policy: &Policy,
    command_args: &str,
) -> Result<TableHealth> {
    let md = table.metadata();
    let ident = table.identifier().clone();
    let namespace: Vec<String> = ident.namespace().iter().cloned().collect();
    let thresholds = Thresholds::of(md, &namespace, policy)?;
    let mut report = TableHealth {
        table: ident.to_string(),
        format_version: md.format_version() as u8,
        thresholds: ThresholdsReport::from(&thresholds),
        // A table without a snapshot holds nothing to judge.
        score: Score::FULL,
        ..TableHealth::default()
    };

    let cache = ManifestCache::new(table);
    if let Some(snapshot) = md.current_snapshot() {
        let list = cache.manifest_list(snapshot).await?;
        for mf in list.iter() {
            match mf.content {
                ManifestContentType::Data => report.manifests.data += 1,
                ManifestContentType::Deletes => report.manifests.delete += 1,
            }
            report.manifests.bytes += mf.manifest_length.max(0) as u64;
        }
        collect::files(table, snapshot, &cache, &thresholds, &mut report).await?;
        // The live entries, as counted while streaming: a v1 manifest list may leave its
        // per-manifest counts out.
        let r = &mut report;
        r.manifests.entries = r.data.files + r.deletes.position.files + r.deletes.equality.files;
        let count = r.manifests.data + r.manifests.delete;
        if count > 0 {
            r.manifests.mean_entries =
                ((r.manifests.entries as f64 / count as f64) * 10.0).round() / 10.0;
        }
    }

    snapshots(handle, table, &thresholds, &mut report).await?;
    report.metadata = metadata_file(table).await;
    report.markers = Markers {
        running_migrations: markers::running_migrations(md)
            .into_iter()
            .map(|(j, s)| (j.to_string(), s.to_string()))
            .collect(),
        gc_enabled: markers::gc_enabled(md),
        s3_tables: handle.settings().kind() == CatalogKind::S3Tables,
        maintain_enabled: thresholds.enabled,
        v3: md.format_version() == iceberg::spec::FormatVersion::V3,
    };
    report.due.rewrite_old_spec_files =
        thresholds.rewrite_old_spec_files && report.data.other_spec.files > 0;
    report.due.expire =
        !report.snapshots.expirable.is_empty() || !report.snapshots.expirable_refs.is_empty();
    report.due.dangling_deletes = report.deletes.dangling_files > 0;
    report.problems = problems(&report, &thresholds, &ident, command_args);
    Ok(report)
}

async fn snapshots(
    handle: &CatalogHandle,
    table: &Table,
    thresholds: &Thresholds,
    report: &mut TableHealth,
) -> Result<()> {
    let md = table.metadata();
    let now = chrono::Utc::now().timestamp_millis();
    let oldest = md.snapshots().map(|s| s.timestamp_ms()).min();
    let due = crate::expire_snapshots::due(
        handle,
        table,
        thresholds
            .snapshot_max_age_ms
            .map(|age| now.saturating_sub(age)),
        thresholds.min_snapshots_to_keep,
    )
    .await?;
    report.snapshots = Snapshots {
        count: md.snapshots().count() as u64,
        oldest_ms: oldest,
        oldest_age_hours: oldest
            .map(|ts| (((now - ts) as f64 / 3_600_000.0) * 10.0).round() / 10.0),
        refs: crate::expire_snapshots::ref_heads(md).len() as u64,
        expirable: due.expired,
        expirable_refs: due.removed_refs,
        rule: format!(
            "older than {} ({}), keeping at least {} per branch ({})",
            chrono::DateTime::from_timestamp_millis(due.rule.older_than_ms)
                .map_or_else(|| due.rule.older_than_ms.to_string(), |t| t.to_rfc3339()),
            // The policy's values are passed to the selection as explicit options: name them.
            match (
                thresholds.snapshot_max_age_ms,
                thresholds.sources.get("max_snapshot_age")
            ) {
                (Some(age), Some(from)) =>
                    format!("now minus {from} max-snapshot-age {}", age_text(age)),
                _ => due.rule.older_than_from.clone(),
            },
            due.rule.retain_last,
            match (
                thresholds.min_snapshots_to_keep,
                thresholds.sources.get("min_snapshots_to_keep"),
            ) {
                (Some(n), Some(from)) => format!("{from} min-snapshots-to-keep {n}"),
                _ => due.rule.retain_last_from.clone(),
            },
        ),
    };
    Ok(())
}

/// `3d`, `5h`, `12m`, `40s`: the largest unit that divides the age.
pub(crate) fn age_text(ms: i64) -> String {
    let s = ms / 1000;
    if s >= 86_400 && s % 86_400 == 0 {
        format!("{}d", s / 86_400)
    } else if s >= 3600 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s >= 60 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else if ms % 1000 == 0 {
        format!("{s}s")
    } else {
        format!("{ms}ms")
    }
}

async fn metadata_file(table: &Table) -> MetadataFile {
    let md = table.metadata();
    let props = md.properties();
    let location = table.metadata_location().map(str::to_string);
    let bytes = match &location {
        Some(loc) => match table.file_io().new_input(loc) {
            Ok(input) => input.metadata().await.ok().map(|m| m.size),
            Err(_) => None,
        },
        None => None,
    };
    MetadataFile {
        location,
        bytes,
        log_length: md.metadata_log().len() as u64,
        previous_versions_max: props
            .get("write.metadata.previous-versions-max")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(100),
        delete_after_commit: props
            .get("write.metadata.delete-after-commit.enabled")
            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
    }
}

/// `iceberg-ops table ACTION NS.T ARGS EXTRA`.
fn command(action: &str, ident: &TableIdent, args: &str, extra: &[String]) -> String {
    let mut cmd = format!("iceberg-ops table {action} {ident}");
    for part in std::iter::once(args).chain(extra.iter().map(String::as_str)) {
        if !part.is_empty() {
            cmd.push(' ');
            cmd.push_str(part);
        }
    }
    cmd
}

/// What `table compact` needs to judge as `maintain` does: the thresholds it would not find
/// on its own (it reads `write.target-file-size-bytes` and defaults to 5 inputs).
fn compact_args(t: &Thresholds) -> Vec<String> {
    let mut out = Vec::new();
    if t.sources
        .get("target_file_size")
        .is_some_and(|s| s.starts_with("policy"))
    {
        out.push(format!("--target-file-size {}", t.target_file_size));
    }
    if t.min_input_files != crate::compact::DEFAULT_MIN_INPUT_FILES {
        out.push(format!("--min-input-files {}", t.min_input_files));
    }
    out
}

fn problems(r: &TableHealth, t: &Thresholds, ident: &TableIdent, args: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut push = |kind: &str, detail: String, fix: String| {
        out.push(Problem {
            kind: kind.to_string(),
            detail,
            fix,
        })
    };
    if r.markers.s3_tables {
        // The service compacts, expires and cleans up: nothing here is for the user to run.
        return out;
    }
    for (job, since) in &r.markers.running_migrations {
        push(
            "unfinished-migration",
            format!(
                "migration job '{job}' (started {since}) has not finished: maintenance leaves \
                 the table alone until it does"
            ),
            format!(
                "resume the job (the same `migrate-data` command with its --checkpoint), or if \
                 it is abandoned: {}",
                command("abandon-migration", ident, args, &[format!("--job {job}")])
            ),
        );
    }
    let small = r.partitions.iter().filter(|p| p.small_files_due).count();
    if small > 0 {
        push(
            "small-files",
            format!(
                "{small} partition(s) hold at least {} files under 75% of the {} target that \
                 can be combined ({} fragments and {} undersized files in the table)",
                t.min_input_files,
                human_bytes(t.target_file_size),
                r.data.fragments.files,
                r.data.undersized.files
            ),
            command("compact", ident, args, &compact_args(t)),
        );
    }
    let deletes = r.partitions.iter().filter(|p| p.deletes_due).count();
    if deletes > 0 {
        push(
            "deletes",
            format!(
                "{deletes} partition(s) have delete records past the thresholds \
                 (equality {:.0}%, position {:.0}% of their rows; the table: {} position and {} \
                 equality delete records against {} rows)",
                t.equality_delete_ratio * 100.0,
                t.position_delete_ratio * 100.0,
                r.deletes.position.records,
                r.deletes.equality.records,
                r.data.records
            ),
            command("compact", ident, args, &compact_args(t)),
        );
    }
    if r.data.other_spec.files > 0 {
        push(
            "old-spec-files",
            format!(
                "{} data file(s) ({}) are of an older partition spec: filters on the current \
                 partition fields cannot prune them{}",
                r.data.other_spec.files,
                human_bytes(r.data.other_spec.bytes),
                if t.rewrite_old_spec_files {
                    ""
                } else {
                    " (maintain rewrites them only with \
                     iceberg-ops.maintain.rewrite-old-spec-files=true)"
                }
            ),
            command(
                "compact",
                ident,
                args,
                &[compact_args(t), vec!["--to-current-spec".to_string()]].concat(),
            ),
        );
    }
    if r.due.expire {
        let mut extra = Vec::new();
        if let Some(age) = t.snapshot_max_age_ms {
            extra.push(format!("--older-than {}", age_text(age)));
        }
        if let Some(n) = t.min_snapshots_to_keep {
            extra.push(format!("--retain-last {n}"));
        }
        if !r.markers.gc_enabled {
            extra.push("--keep-files".to_string());
        }
        push(
            "snapshots",
            format!(
                "{} of {} snapshot(s){} are past retention: {}",
                r.snapshots.expirable.len(),
                r.snapshots.count,
                if r.snapshots.expirable_refs.is_empty() {
                    String::new()
                } else {
                    format!(" and ref(s) {}", r.snapshots.expirable_refs.join(", "))
                },
                r.snapshots.rule
            ),
            command("expire-snapshots", ident, args, &extra),
        );
    }
    if r.due.dangling_deletes {
        push(
            "dangling-deletes",
            format!(
                "{} delete file(s) can no longer apply to any live data file",
                r.deletes.dangling_files
            ),
            command("remove-dangling-deletes", ident, args, &[]),
        );
    }
    out
}

/// `1.5 MiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
