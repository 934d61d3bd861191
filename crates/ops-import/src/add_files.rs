//! `add_files`: register existing Parquet files in a table, in place, in one `append` commit —
//! Java's `add_files` procedure without Spark, on any catalog.
//!
//! The files are expanded ([`crate::source`]) and checked for duplicates first (a file the
//! table already lists, or named twice, is refused unless
//! [`AddFilesBuilder::allow_duplicate_files`]: a reader would read its rows twice), in time
//! linear in the files: one pass over the table's manifests against a set of the new paths.
//! Then each file's footer is read (a few at a time), its columns matched and checked, its
//! metrics and partition taken ([`crate::columns`], [`crate::metrics`], [`crate::partition`]),
//! and the lot committed. A table without a name mapping gets one (created from its schema,
//! with the files' own spellings as aliases) in a commit before the append, when a file
//! without field ids needs it: every reader then finds their columns.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::path::{Path, PathBuf};
use std::pin::Pin;

use futures::TryStreamExt;
use iceberg::TableIdent;
use iceberg::spec::{
    DEFAULT_SCHEMA_NAME_MAPPING, DataContentType, DataFile, DataFileBuilder, DataFileFormat,
    ManifestContentType,
};
use iceberg::table::Table;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::properties::PropertiesBuilder;
use ops_core::ops::streamed::{ManifestStream, path_hash};
use ops_core::ops::{ManifestCache, each_live_data_file};
use ops_core::{CatalogHandle, Error, Result};

use crate::columns::{Mapping, has_field_ids, match_columns, refuse_nulls_in_required};
use crate::glue::GlueClient;
use crate::hive_path::segments;
use crate::metrics::{MetricsConfig, column_stats, file_metrics};
use crate::partition::partition_of;
use crate::source::{Expanded, SourceFile, expand};
use crate::spill::{Record, Spilled, get_str, need_str, need_u64, put_str, put_u64};

/// One file added (or, on a dry run, to be added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddedFile {
    /// As the table records it.
    pub path: String,
    /// Its partition, `name=value/…` (empty for an unpartitioned table).
    pub partition: String,
    /// Rows.
    pub record_count: u64,
    /// Bytes.
    pub size: u64,
}

impl Record for AddedFile {
    fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, &self.path);
        put_str(out, &self.partition);
        put_u64(out, self.record_count);
        put_u64(out, self.size);
    }

    fn decode(r: &mut impl std::io::Read) -> std::io::Result<Option<Self>> {
        let Some(path) = get_str(r)? else {
            return Ok(None);
        };
        Ok(Some(Self {
            path,
            partition: need_str(r)?,
            record_count: need_u64(r)?,
            size: need_u64(r)?,
        }))
    }
}

/// What an `add_files` did (or would do).
#[derive(Debug, Default)]
pub struct AddFilesMetrics {
    /// The files, in the order they were named (each folder's sorted by path); past a few
    /// thousand, kept in a temporary file ([`Spilled`]).
    pub files: Spilled<AddedFile>,
    /// Their rows.
    pub records: u64,
    /// Hidden entries skipped below the folders named.
    pub hidden: usize,
    /// Files left out by the partition filter.
    pub filtered_out: usize,
    /// The (last) `append` snapshot (`None`: nothing to add, or a dry run).
    pub snapshot_id: Option<i64>,
    /// Every `append` snapshot, one per batch ([`AddFilesBuilder::batch_files`]).
    pub snapshot_ids: Vec<i64>,
    /// Files a resumed job found in the table already (committed by its earlier run), or,
    /// with [`AddFilesBuilder::new_only`], files the table lists already.
    pub already_added: usize,
    /// With [`AddFilesBuilder::new_only`] (or a resumed job): files skipped because a snapshot
    /// the table keeps listed them and a later commit removed them (a compaction that rewrote
    /// them, a delete): their rows are in the table in another form, or were deleted on
    /// purpose.
    pub removed_before: usize,
    /// The first of those, by path.
    pub removed_before_example: Option<String>,
    /// With [`AddFilesBuilder::new_only`]: files the table lists under the folders named that
    /// are gone from them (the table still reads them: its reads fail until they are removed).
    pub disappeared: Vec<String>,
    /// Of those, removed from the table ([`AddFilesBuilder::remove_missing`]).
    pub removed_missing: usize,
    /// Whether the table's name mapping was created (or, on a dry run, would be).
    pub name_mapping_created: bool,
    /// Whether names were added to it (files spelling columns in another case).
    pub name_mapping_extended: bool,
    /// Nothing was written.
    pub dry_run: bool,
}

/// Adds existing Parquet files to a table (see the module docs).
#[must_use = "an AddFilesBuilder does nothing until awaited"]
pub struct AddFilesBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    from: Vec<String>,
    partition_filter: Vec<(String, String)>,
    allow_duplicate_files: bool,
    dry_run: bool,
    concurrency: usize,
    batch_files: Option<usize>,
    checkpoint: Option<PathBuf>,
    new_only: bool,
    remove_missing: bool,
    glue: Option<GlueClient>,
}

impl AddFilesBuilder {
    /// Adding to `ident` of `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            from: Vec::new(),
            partition_filter: Vec::new(),
            allow_duplicate_files: false,
            dry_run: false,
            concurrency: 8,
            batch_files: None,
            checkpoint: None,
            new_only: false,
            remove_missing: false,
            glue: None,
        }
    }

    /// With [`Self::new_only`]: removes from the table the files it lists under the folders
    /// named that are gone from them (one `overwrite` commit before the append; their rows
    /// leave the table) — a table listing a file that is gone fails every read of it.
    pub fn remove_missing(mut self, remove: bool) -> Self {
        self.remove_missing = remove;
        self
    }

    /// The Glue catalog `glue:DATABASE.TABLE` names are read through (default: the table's
    /// own catalog, when it is a Glue catalog).
    pub fn glue(mut self, glue: GlueClient) -> Self {
        self.glue = Some(glue);
        self
    }

    /// Adds only the files the table does not list yet (a folder that a snapshot or an
    /// earlier add took, and that has grown since), skipping the others instead of refusing
    /// them; reports the files the table lists under the folders named that are gone.
    pub fn new_only(mut self, new_only: bool) -> Self {
        self.new_only = new_only;
        self
    }

    /// Commits every `n` files (one `append` each) instead of all at once: a long import
    /// lands as it goes, and holds only one batch's entries.
    pub fn batch_files(mut self, n: usize) -> Self {
        self.batch_files = Some(n.max(1));
        self
    }

    /// A file recording the job (its table and names) and its committed batches. Run again
    /// with the same file after a failure, the job resumes: files its earlier run committed
    /// are skipped instead of refused as duplicates. Removed when the job completes.
    pub fn checkpoint(mut self, path: impl Into<PathBuf>) -> Self {
        self.checkpoint = Some(path.into());
        self
    }

    /// Files, folders or globs to add (see [`crate::source`]), or Glue tables
    /// (`glue:DATABASE.TABLE`, [`crate::glue`]: their partitions' files, with their values).
    pub fn from<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.from.extend(names.into_iter().map(Into::into));
        self
    }

    /// Only files under a `key=value` folder (values compared unescaped); given several times,
    /// all must hold. `null` (or `__HIVE_DEFAULT_PARTITION__`) is the NULL folder; `"null"`,
    /// quoted, a folder of the text `null`.
    pub fn partition_filter(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.partition_filter.push((key.into(), value.into()));
        self
    }

    /// Adds files the table already lists, or that are named twice (their rows are then read
    /// twice).
    pub fn allow_duplicate_files(mut self, allow: bool) -> Self {
        self.allow_duplicate_files = allow;
        self
    }

    /// Plans and reports, writing nothing.
    pub fn dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// Footers read at once (default 8).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    async fn execute(self) -> Result<(Table, AddFilesMetrics)> {
        if self.from.is_empty() {
            return Err(Error::InvalidInput(
                "add-files needs at least one file, folder or glob (--from)".into(),
            ));
        }
        let mut table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
        ops_core::commit::refuse_v3(&table)?;
        let md = table.metadata();
        let schema = md.current_schema().clone();
        let spec = md.default_partition_spec().clone();
        let properties = md.properties().clone();
        let underscored: HashSet<String> = spec
            .fields()
            .iter()
            .flat_map(|f| {
                let source = schema.name_by_field_id(f.source_id).map(str::to_string);
                [Some(f.name.clone()), source]
            })
            .flatten()
            .filter(|n| n.starts_with('_'))
            .collect();
        let mut metrics = AddFilesMetrics {
            dry_run: self.dry_run,
            ..Default::default()
        };
        let expanded = expand_sources(
            &self.handle,
            &self.from,
            &underscored,
            table.file_io().config().props(),
            self.glue.as_ref(),
        )
        .await?;
        metrics.hidden = expanded.hidden;
        // The table's own metadata is no data file, though it may lie below a folder named
        // (a table made over its source's location, as `migrate` makes one).
        let own_metadata = format!(
            "{}/",
            comparable(
                &md.properties()
                    .get("write.metadata.path")
                    .filter(|p| !p.trim().is_empty())
                    .map_or_else(
                        || format!("{}/metadata", md.location().trim_end_matches('/')),
                        |p| p.trim_end_matches('/').to_string()
                    )
            )
        );
        let mut selection = Selection {
            own_metadata,
            partition_filter: self.partition_filter.clone(),
            skip: HashSet::new(),
        };
        // One pass over the files named (they may be a million: read back from a temporary
        // file, never held): what the filters select, and what the duplicate checks need —
        // 128-bit hashes of the selected paths, not the paths.
        let checks = !self.allow_duplicate_files;
        let mut selected = 0usize;
        let mut hashes: HashSet<u128> = HashSet::new();
        let mut twice: Option<String> = None;
        let mut roots: HashSet<String> = HashSet::new();
        let mut filter_keys_seen: HashSet<String> = HashSet::new();
        // A few of the values the filtered keys' folders hold, for the message when the filter
        // selects nothing.
        let mut filter_values_seen: std::collections::BTreeSet<String> = Default::default();
        let mut filter_values_more = false;
        for f in expanded.files.iter() {
            let f = f?;
            if selection.own_metadata(&f) {
                continue;
            }
            let folders = segments(&f.relative);
            for (k, _) in &self.partition_filter {
                for (fk, fv) in folders.iter().filter(|(fk, _)| fk.eq_ignore_ascii_case(k)) {
                    filter_keys_seen.insert(k.clone());
                    let shown = match fv {
                        Some(v) if v == "null" => format!("{fk}=\"null\""),
                        Some(v) => format!("{fk}={v}"),
                        None => format!("{fk}=null"),
                    };
                    if filter_values_seen.len() < 8 {
                        filter_values_seen.insert(shown);
                    } else if !filter_values_seen.contains(&shown) {
                        filter_values_more = true;
                    }
                }
            }
            if !selection.filtered_in(&folders) {
                metrics.filtered_out += 1;
                continue;
            }
            selected += 1;
            if checks && !hashes.insert(path_hash(&f.path)) && twice.is_none() {
                twice = Some(f.path.clone());
            }
            if checks
                && self.new_only
                && !f.named
                && let Some(root) = root_of(&f)
                && !roots.contains(root)
            {
                roots.insert(root.to_string());
            }
        }
        if let Some((k, _)) = self
            .partition_filter
            .iter()
            .find(|(k, _)| !filter_keys_seen.contains(k))
        {
            return Err(Error::InvalidInput(format!(
                "--partition-filter {k}=…: no file named has a `{k}=` folder in its path"
            )));
        }
        if selected == 0 {
            return Err(Error::InvalidInput(format!(
                "no Parquet file to add under {}{}",
                self.from.join(", "),
                if metrics.filtered_out > 0 {
                    let encoded = self
                        .partition_filter
                        .iter()
                        .find(|(_, v)| crate::hive_path::unescape(v) != *v);
                    format!(
                        " ({} left out by the partition filter; the folders hold {}{}{})",
                        metrics.filtered_out,
                        filter_values_seen
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join(", "),
                        if filter_values_more { ", ..." } else { "" },
                        match encoded {
                            Some((k, v)) => format!(
                                "; values compare decoded, as the folders read: {k}={}, not \
                                 {k}={v}",
                                crate::hive_path::unescape(v)
                            ),
                            None => String::new(),
                        }
                    )
                } else {
                    String::new()
                }
            )));
        }
        // A dry run with the checkpoint of a job that failed part-way shows what resuming it
        // would add (the checkpoint is only read).
        let resume = match &self.checkpoint {
            Some(path) => Checkpoint::resumes(path, &self.ident, &self.from)?,
            None => false,
        };
        if checks {
            if let Some(twice) = twice {
                return Err(Error::InvalidInput(format!(
                    "{twice} is named twice; its rows would be read twice (pass \
                     --allow-duplicate-files to add it anyway)"
                )));
            }
            let present = already_in(&table, &hashes).await?;
            let mut removed_earlier = removed_since(&table, &hashes, &present).await?;
            // A second pass over the listing, only when the table lists or listed any of the
            // files: the first selected file it lists, and one whose size changed since it was
            // added; and of those it removed, the ones unchanged since their last removal (one
            // rewritten in place is new contents — a Hive `INSERT OVERWRITE` reuses names).
            let mut first_present: Option<String> = None;
            let mut changed: Option<(SourceFile, u64)> = None;
            let mut removed = HashMap::with_capacity(removed_earlier.len());
            if !present.is_empty() || !removed_earlier.is_empty() {
                for f in expanded.files.iter() {
                    let f = f?;
                    if !selection.selects(&f) {
                        continue;
                    }
                    let hash = path_hash(&f.path);
                    // The two are disjoint: a file the table lists is not among the removed.
                    if let Some((path, size)) = removed_earlier.remove(&hash) {
                        if size == f.size {
                            removed.insert(hash, (path, size));
                        }
                        continue;
                    }
                    let Some(then) = present.get(&hash).copied() else {
                        continue;
                    };
                    first_present.get_or_insert_with(|| f.path.clone());
                    // Either ends the run (refused), so the removed files need no more judging.
                    if then != f.size {
                        changed = Some((f, then));
                        break;
                    }
                    if !(resume || self.new_only) {
                        break;
                    }
                }
            }
            drop(removed_earlier);
            if self.new_only {
                metrics.disappeared = disappeared(&table, &hashes, &roots, &selection).await?;
                if self.remove_missing && !self.dry_run && !metrics.disappeared.is_empty() {
                    let read_at = table.metadata().current_snapshot_id();
                    table = self
                        .remove_missing_files(&metrics.disappeared, read_at)
                        .await?;
                    metrics.removed_missing = metrics.disappeared.len();
                }
            }
            drop(hashes);
            if resume || self.new_only {
                // A file rewritten in place since it was added: the table describes its old
                // contents (statistics, size), and a reader would prune or fail by them.
                if let Some((f, then)) = changed {
                    return Err(Error::InvalidInput(format!(
                        "{} has changed since it was added to {} ({} bytes now, {then} \
                         then): the table describes its old contents. Remove its partition from \
                         the table (table delete --where on the partition), then add that \
                         partition's folder again with --allow-duplicate-files (--new-only would \
                         skip its unchanged files, which the delete removed too)",
                        f.path, self.ident, f.size,
                    )));
                }
                // Committed by the run this one resumes, or already in the table; or in it
                // before and removed since (not a new arrival: its rows are there in another
                // form, or were deleted on purpose).
                metrics.already_added = present.len();
                metrics.removed_before = removed.len();
                metrics.removed_before_example = removed.values().map(|(p, _)| p).min().cloned();
                if metrics.removed_before > 0 {
                    tracing::warn!(
                        table = %self.ident,
                        files = metrics.removed_before,
                        example = ?metrics.removed_before_example,
                        "skipped files the table held before and a later commit removed"
                    );
                }
                if selected <= present.len() + removed.len() {
                    // Every file is in the table already: nothing to commit.
                    return Ok((table, metrics));
                }
                selection.skip = present.into_keys().chain(removed.into_keys()).collect();
            } else if let Some(path) = first_present {
                return Err(Error::InvalidInput(format!(
                    "{path} is already in {}; adding it again would read its rows twice. To \
                     add only the files not in the table yet, pass --new-only (or, to resume a \
                     batched job, its --checkpoint); --allow-duplicate-files adds it anyway",
                    self.ident
                )));
            } else if let Some(path) = removed.values().map(|(p, _)| p).min() {
                return Err(Error::InvalidInput(format!(
                    "{path} was in {} before, unchanged since: a commit in its history removed \
                     it (a compaction that rewrote it, or a delete). Its rows are in the table in \
                     another form, or were deleted on purpose: adding it again would read them \
                     twice or bring them back. --new-only skips such files; \
                     --allow-duplicate-files adds it anyway",
                    self.ident
                )));
            }
        }

        if let Some(path) = self
            .checkpoint
            .as_ref()
            .filter(|_| !self.dry_run && !resume)
        {
            // Written before the first commit: a run that dies after it, before recording
            // it, still resumes.
            Checkpoint::write(path, &self.ident, &self.from, &[])?;
        }
        let config = MetricsConfig::of(&schema, &properties)?;
        let mut mapping = Mapping::of(&schema, &properties)?;
        let io = table.file_io().clone();
        let files = expanded
            .files
            .into_iter()
            .filter(move |f| f.as_ref().map_or(true, |f| selection.selects(f)));
        let mut footers = std::pin::pin!(crate::footer::read_many(&io, files, self.concurrency));
        let mut stream: Option<ManifestStream> = None;
        let mut mapping_used = false;
        let mut mapping_committed = !mapping.created;
        // The snapshot the files were checked against: as the job read the table, then as
        // each batch left it.
        let mut checked_at = table.metadata().current_snapshot_id();
        let mut table = table;
        let batch = if self.dry_run { None } else { self.batch_files };
        loop {
            // The files go into manifests as they are described (only one manifest's entries
            // in memory); on a failure, what was written for the batch is removed.
            let step = match footers.try_next().await {
                Ok(None) => break,
                Ok(Some((f, meta))) => {
                    self.describe(f, meta, &io, &spec, &schema, &config, &mut mapping)
                        .await
                }
                Err(e) => Err(e),
            };
            let step = match step {
                Ok((file, report, without_ids)) => {
                    mapping_used |= without_ids;
                    metrics.records += report.record_count;
                    let pushed = metrics.files.push(report);
                    match (&mut stream, self.dry_run) {
                        _ if pushed.is_err() => pushed,
                        (_, true) => Ok(()),
                        (Some(s), false) => s.add(file).await,
                        (None, false) => match ManifestStream::new(&table, spec.spec_id()) {
                            Ok(s) => {
                                let s = if self.allow_duplicate_files {
                                    s
                                } else {
                                    s.track_paths()
                                };
                                stream.insert(s).add(file).await
                            }
                            Err(e) => Err(e),
                        },
                    }
                }
                Err(e) => Err(e),
            };
            if let Err(e) = step {
                if let Some(s) = stream.take() {
                    s.abort().await;
                }
                return Err(self.after_batches(e, &metrics));
            }
            metrics.name_mapping_created |= mapping_used && mapping.created;
            metrics.name_mapping_extended |= mapping.changed;
            if let Some(s) = stream.take_if(|s| batch.is_some_and(|n| s.len() >= n as u64)) {
                table = self
                    .commit_batch(
                        table,
                        Batch {
                            stream: s,
                            checked_at,
                            new_mapping: mapping_used && !mapping_committed,
                        },
                        &mut mapping,
                        &mut metrics,
                    )
                    .await?;
                checked_at = metrics.snapshot_id;
                mapping_committed |= mapping_used;
            }
        }
        if self.dry_run {
            return Ok((table, metrics));
        }
        if let Some(s) = stream {
            table = self
                .commit_batch(
                    table,
                    Batch {
                        stream: s,
                        checked_at,
                        new_mapping: mapping_used && !mapping_committed,
                    },
                    &mut mapping,
                    &mut metrics,
                )
                .await?;
        }
        if let Some(path) = &self.checkpoint {
            // Done: a later run with this file is a new job.
            let _ = std::fs::remove_file(path);
        }
        tracing::info!(table = %self.ident, files = metrics.files.len(),
            commits = metrics.snapshot_ids.len(), "files added");
        Ok((table, metrics))
    }
}

impl AddFilesBuilder {
    /// `e`, saying what earlier batches committed and how to go on, when any did: a batched
    /// job that fails part-way has added those files already.
    fn after_batches(&self, e: Error, metrics: &AddFilesMetrics) -> Error {
        let Some(last) = metrics.snapshot_ids.last() else {
            return e;
        };
        let how = if self.checkpoint.is_some() {
            "run the same command again (same --checkpoint) to resume"
        } else {
            "run it again with --new-only to add the rest"
        };
        Error::InvalidInput(format!(
            "{e}\n{} batch(es) were committed before this (last snapshot {last}); their files are \
             in the table: {how}",
            metrics.snapshot_ids.len()
        ))
    }

    /// Removes the entries of files that are gone (see [`Self::remove_missing`]).
    async fn remove_missing_files(&self, gone: &[String], read_at: Option<i64>) -> Result<Table> {
        let props = HashMap::from([(
            ops_core::ops::OPERATION_PROPERTY.to_string(),
            "add-files-remove-missing".to_string(),
        )]);
        let (table, _) =
            ops_core::ops::overwrite::OverwriteBuilder::new(&self.handle, self.ident.clone())
                .remove_files(gone.iter().cloned())
                // The files were found gone against this snapshot: a writer committing since
                // is validated against, as any overwrite's.
                .validate_from_snapshot(read_at)
                .with_properties(props)
                .await?;
        tracing::info!(table = %self.ident, files = gone.len(), "missing files removed");
        Ok(table)
    }

    /// One file's data-file entry and report line, from its footer: columns matched (and
    /// whether that took the name mapping: no field ids), statistics checked, partition taken.
    #[allow(clippy::too_many_arguments)]
    async fn describe(
        &self,
        f: SourceFile,
        meta: parquet::file::metadata::ParquetMetaData,
        io: &iceberg::io::FileIO,
        spec: &iceberg::spec::PartitionSpec,
        schema: &iceberg::spec::Schema,
        config: &MetricsConfig,
        mapping: &mut Mapping,
    ) -> Result<(DataFile, AddedFile, bool)> {
        let meta = std::sync::Arc::new(meta);
        crate::readers::refuse_unreadable(&f.path, &meta)?;
        let descr = meta.file_metadata().schema_descr();
        let without_ids = !has_field_ids(descr);
        let (matched, present) = match_columns(&f.path, descr, schema, mapping)?;
        let stats = column_stats(&meta, &matched);
        refuse_nulls_in_required(&f.path, descr, schema, &matched, &stats)?;
        let partition = partition_of(&f.path, &f.relative, spec, schema, &stats, &present)?;
        crate::partition::verify(io, &f.path, meta.clone(), &matched, &partition.unverified)
            .await?;
        let m = file_metrics(&stats, config);
        let record_count = u64::try_from(meta.file_metadata().num_rows()).unwrap_or(0);
        let mut b = DataFileBuilder::default();
        b.content(DataContentType::Data)
            .file_path(f.path.clone())
            .file_format(DataFileFormat::Parquet)
            .partition(partition.tuple)
            .partition_spec_id(spec.spec_id())
            .record_count(record_count)
            .file_size_in_bytes(f.size)
            .column_sizes(m.column_sizes)
            .value_counts(m.value_counts)
            .null_value_counts(m.null_value_counts)
            .lower_bounds(m.lower_bounds)
            .upper_bounds(m.upper_bounds)
            // None, as Java's `TableMigrationUtil`: a row group's `file_offset` is
            // optional and some writers got it wrong; a reader then splits by size.
            .split_offsets(None);
        let file = b.build().map_err(|e| {
            Error::InvalidInput(format!("cannot describe {} as a data file: {e}", f.path))
        })?;
        let report = AddedFile {
            path: f.path,
            partition: partition.display,
            record_count,
            size: f.size,
        };
        Ok((file, report, without_ids))
    }

    /// Commits `files` as one `append` (the name mapping first when `new_mapping` or names
    /// were added to it: a reader of the append must find their columns), and records the
    /// batch in the checkpoint.
    async fn commit_batch(
        &self,
        table: Table,
        batch: Batch,
        mapping: &mut Mapping,
        metrics: &mut AddFilesMetrics,
    ) -> Result<Table> {
        let Batch {
            stream,
            checked_at,
            new_mapping,
        } = batch;
        let Some(streamed) = stream.finish().await? else {
            return Ok(table);
        };
        let mut table = table;
        if new_mapping || mapping.changed {
            let json = match mapping.to_json() {
                Ok(json) => json,
                Err(e) => {
                    streamed.discard().await;
                    return Err(e);
                }
            };
            match PropertiesBuilder::new(&self.handle, self.ident.clone())
                .set(DEFAULT_SCHEMA_NAME_MAPPING, json)
                .await
            {
                Ok(t) => table = t,
                Err(e) => {
                    streamed.discard().await;
                    return Err(e);
                }
            }
            mapping.changed = false;
        }
        let mut props = HashMap::new();
        props.insert(
            ops_core::ops::OPERATION_PROPERTY.to_string(),
            "add-files".to_string(),
        );
        let count = streamed.added_files();
        // The files were checked against `checked_at` (the table as the job read it, or as
        // its last batch left it): another writer adding them since makes this a conflict.
        let mut append = AppendBuilder::new(&self.handle, self.ident.clone())
            .with_base(table)
            .add_streamed(streamed)
            .with_properties(props);
        if !self.allow_duplicate_files {
            append = append.refuse_readded_since(checked_at);
        }
        let (table, snapshot) = append.await?;
        metrics.snapshot_ids.push(snapshot.snapshot_id);
        metrics.snapshot_id = Some(snapshot.snapshot_id);
        tracing::info!(table = %self.ident, files = count, snapshot = snapshot.snapshot_id,
            "batch of files added");
        if let Some(path) = &self.checkpoint {
            Checkpoint::write(path, &self.ident, &self.from, &metrics.snapshot_ids)?;
        }
        Ok(table)
    }
}

/// One batch's commit: its files' manifests (written as they came), the snapshot they were
/// checked against for duplicates, and whether the name mapping is to be written first
/// (created).
struct Batch {
    stream: ManifestStream,
    checked_at: Option<i64>,
    new_mapping: bool,
}

/// [`expand`] of every name, a `glue:DATABASE.TABLE` read through `glue` (or `handle`, a Glue
/// catalog), in the order named.
pub(crate) async fn expand_sources(
    handle: &CatalogHandle,
    names: &[String],
    underscored: &HashSet<String>,
    io_props: &HashMap<String, String>,
    glue: Option<&GlueClient>,
) -> Result<Expanded> {
    let mut out = Expanded::default();
    let mut own: Option<GlueClient> = None;
    for name in names {
        let found = match crate::glue::parse_name(name) {
            None => expand(std::slice::from_ref(name), underscored, io_props).await?,
            Some(parsed) => {
                let (database, table) = parsed?;
                let client = match glue {
                    Some(c) => c,
                    None => {
                        if own.is_none() {
                            own = Some(GlueClient::of(handle).await.map_err(|e| {
                                Error::InvalidInput(format!(
                                    "{name} names a Glue table, read through a Glue catalog: \
                                     give one with --source-catalog ({e})"
                                ))
                            })?);
                        }
                        own.as_ref().ok_or_else(|| {
                            Error::InvalidInput(format!("no Glue catalog to read {name}"))
                        })?
                    }
                };
                client
                    .read(&database, &table)
                    .await?
                    .files(underscored, io_props)
                    .await?
            }
        };
        out.hidden += found.hidden;
        out.files.append(found.files)?;
    }
    Ok(out)
}

/// `path` in one spelling for prefix comparisons: `s3a://` and `s3n://` as `s3://`, a local
/// file as its plain path (`file:///x`, `file:/x` and `/x` alike).
fn comparable(path: &str) -> String {
    for scheme in ["s3a://", "s3n://"] {
        if let Some(rest) = path.strip_prefix(scheme) {
            return format!("s3://{rest}");
        }
    }
    if let Some(rest) = path.strip_prefix("file://") {
        return rest.strip_prefix("localhost").unwrap_or(rest).to_string();
    }
    if let Some(rest) = path.strip_prefix("file:") {
        return rest.to_string();
    }
    path.to_string()
}

/// Which of the files named an add takes: not the table's own metadata, within the partition
/// filter, and not one the table lists already when the job skips those (`skip`: their path
/// hashes).
struct Selection {
    own_metadata: String,
    partition_filter: Vec<(String, String)>,
    skip: HashSet<u128>,
}

impl Selection {
    fn own_metadata(&self, f: &SourceFile) -> bool {
        comparable(&f.path).starts_with(&self.own_metadata)
    }

    /// Whether the `key=value` folders of a file meet every partition filter.
    fn filtered_in(&self, folders: &[(String, Option<String>)]) -> bool {
        self.partition_filter.iter().all(|(k, v)| {
            folders.iter().any(|(fk, fv)| {
                fk.eq_ignore_ascii_case(k) && filter_value_matches(v, fv.as_deref())
            })
        })
    }

    /// Whether `path`'s `key=value` folders meet the partition filter (without parsing them
    /// when there is none).
    fn in_partitions(&self, path: &str) -> bool {
        self.partition_filter.is_empty() || self.filtered_in(&segments(path))
    }

    fn selects(&self, f: &SourceFile) -> bool {
        !self.own_metadata(f)
            && self.in_partitions(&f.relative)
            && (self.skip.is_empty() || !self.skip.contains(&path_hash(&f.path)))
    }
}

/// Whether a partition filter's value `filter` selects a folder of value `folder` (`None`:
/// NULL): `null` or `__HIVE_DEFAULT_PARTITION__` selects the NULL folder and only it, as the
/// dry run's listing names it; a value in double quotes is the folder's text itself (`"null"`
/// selects a folder of the text `null`, which pyarrow writes for the string); any other value
/// is compared with the folder's unescaped text.
fn filter_value_matches(filter: &str, folder: Option<&str>) -> bool {
    let quoted = filter
        .strip_prefix('"')
        .and_then(|f| f.strip_suffix('"'))
        .filter(|_| filter.len() >= 2);
    let means_null = filter == "null" || filter == crate::hive_path::HIVE_DEFAULT_PARTITION;
    match (folder, quoted) {
        (None, None) => means_null,
        (None, Some(_)) => false,
        (Some(text), Some(q)) => text == q,
        (Some(text), None) => !means_null && text == filter,
    }
}

/// The folder or prefix a file was found below (as its path spells it), for one not named
/// itself; `None` for a file whose path is not its listed path (reached through a symbolic
/// link: it lies elsewhere).
fn root_of(f: &SourceFile) -> Option<&str> {
    let below = f.relative.get(f.below..)?;
    let root = f.path.strip_suffix(below)?;
    (!root.is_empty()).then_some(root)
}

/// The paths among `new` (hashes of the files to add) that the table's current snapshot
/// already lists, with the size it records: one pass over its manifests (memory of the
/// matches, not of the table).
async fn already_in(table: &Table, new: &HashSet<u128>) -> Result<HashMap<u128, u64>> {
    let mut present = HashMap::new();
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(present);
    };
    let cache = ManifestCache::new(table);
    each_live_data_file(snapshot, &cache, |live| {
        let hash = path_hash(live.file.file_path());
        if new.contains(&hash) {
            present.insert(hash, live.file.file_size_in_bytes());
        }
        Ok(())
    })
    .await?;
    Ok(present)
}

/// The paths among `new` that a commit in the current snapshot's history removed — a
/// compaction that rewrote them, a delete — and that it does not list again (`present`), with
/// the size the table recorded at their last removal: their originals stay in their folder until that history is
/// expired. A removal by `add-files --remove-missing` (the file was gone) does not count, nor
/// does a commit off that history (a rolled-back snapshot, a branch's, a staged one). Only the
/// manifests a removing commit wrote itself are read, entry by entry (their `DELETED`
/// entries); an append is passed over without reading anything.
async fn removed_since(
    table: &Table,
    new: &HashSet<u128>,
    present: &HashMap<u128, u64>,
) -> Result<HashMap<u128, (String, u64)>> {
    let mut removed = HashMap::new();
    let md = table.metadata();
    if new.len() == present.len() {
        return Ok(removed);
    }
    // The removing commits' own manifests, newest commit first.
    let mut removals: Vec<Vec<iceberg::spec::ManifestFile>> = Vec::new();
    let mut at = md.current_snapshot().cloned();
    let mut walked = HashSet::new();
    while let Some(snapshot) = at {
        // A parent chain that loops would walk forever.
        if !walked.insert(snapshot.snapshot_id()) {
            break;
        }
        let summary = snapshot.summary();
        let by_remove_missing = summary
            .additional_properties
            .get(ops_core::ops::OPERATION_PROPERTY)
            .is_some_and(|op| op == "add-files-remove-missing");
        // An append removes nothing; a v1 snapshot without a summary reads as an append with
        // no properties, and is read to be sure.
        let append = summary.operation == iceberg::spec::Operation::Append
            && !summary.additional_properties.is_empty();
        if !append && !by_remove_missing {
            // A cache of its own: the lists are not kept past this snapshot.
            let cache = ManifestCache::new(table);
            let own: Vec<_> = cache
                .manifest_list(&snapshot)
                .await?
                .iter()
                .filter(|mf| {
                    mf.content == ManifestContentType::Data
                        && mf.added_snapshot_id == snapshot.snapshot_id()
                        && mf.deleted_files_count != Some(0)
                })
                .cloned()
                .collect();
            if !own.is_empty() {
                removals.push(own);
            }
        }
        // A parent expired since (`expire-snapshots --snapshot-id` may take one from the
        // middle) ends the walk: the removals before it are not known.
        at = snapshot
            .parent_snapshot_id()
            .and_then(|id| md.snapshot_by_id(id))
            .cloned();
    }
    // Newest commit first, so a path removed twice (added again between, with other contents)
    // keeps the size of its last removal.
    for manifests in removals {
        let mut entries = std::pin::pin!(ops_core::manifests::entries_of_all(
            table.file_io(),
            manifests
        ));
        while let Some(entry) = entries.try_next().await? {
            if entry.status() != iceberg::spec::ManifestStatus::Deleted {
                continue;
            }
            let file = entry.data_file();
            let hash = path_hash(file.file_path());
            if new.contains(&hash) && !present.contains_key(&hash) {
                removed
                    .entry(hash)
                    .or_insert_with(|| (file.file_path().to_string(), file.file_size_in_bytes()));
            }
        }
    }
    Ok(removed)
}

/// The files the table lists under `roots` (the folders or prefixes the files were found
/// below, not those named one by one) that the listing (`listed`: path hashes) no longer
/// found.
async fn disappeared(
    table: &Table,
    listed: &HashSet<u128>,
    roots: &HashSet<String>,
    selection: &Selection,
) -> Result<Vec<String>> {
    let mut unlisted = Vec::new();
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(unlisted);
    };
    let cache = ManifestCache::new(table);
    each_live_data_file(snapshot, &cache, |live| {
        let path = live.file.file_path();
        // Under a folder named and within the partition filter (a file of a partition the
        // run leaves out is not this run's to judge), but not listed.
        if roots.iter().any(|r| path.starts_with(r.as_str()))
            && selection.in_partitions(path)
            && !listed.contains(&path_hash(path))
        {
            unlisted.push(path.to_string());
        }
        Ok(())
    })
    .await?;
    unlisted.sort();
    unlisted.dedup();
    // Not listed may only mean not selected (a glob, a partition filter): gone is gone.
    let io = table.file_io();
    let mut gone = Vec::new();
    for path in unlisted {
        if !io.exists(&path).await.unwrap_or(true) {
            gone.push(path);
        }
    }
    Ok(gone)
}

/// The checkpoint of a batched job: its table and names (a resumed run must be the same job)
/// and the snapshots its batches committed.
struct Checkpoint;

impl Checkpoint {
    /// Whether `path` holds this job's checkpoint (resume); `false` when there is none. One of
    /// another job is refused, naming both.
    fn resumes(path: &Path, ident: &TableIdent, from: &[String]) -> Result<bool> {
        let raw = match std::fs::read_to_string(path) {
            Ok(raw) => raw,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => {
                return Err(Error::InvalidInput(format!(
                    "cannot read the checkpoint {}: {e}",
                    path.display()
                )));
            }
        };
        let v: serde_json::Value = serde_json::from_str(&raw).map_err(|e| {
            Error::InvalidInput(format!(
                "the checkpoint {} is not an add-files checkpoint ({e}); remove it to start \
                 a new job",
                path.display()
            ))
        })?;
        // The same names however they are spelled (`d`, `./d/`, `file:///abs/d`).
        let names = |list: Vec<String>| -> Vec<String> {
            list.iter()
                .map(|n| crate::source::canonical_name(n))
                .collect()
        };
        let recorded: Vec<String> = v["from"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let same = v["table"].as_str() == Some(&ident.to_string())
            && names(recorded) == names(from.to_vec());
        if !same {
            return Err(Error::InvalidInput(format!(
                "the checkpoint {} is of another job (table {}, from {}); give another \
                 --checkpoint, or remove it to start over",
                path.display(),
                v["table"],
                v["from"]
            )));
        }
        Ok(true)
    }

    /// Records the committed batches, atomically (a temporary file renamed over it).
    fn write(path: &Path, ident: &TableIdent, from: &[String], snapshots: &[i64]) -> Result<()> {
        let v = serde_json::json!({
            "job": "add-files",
            "table": ident.to_string(),
            "from": from,
            "snapshot_ids": snapshots,
        });
        let tmp = path.with_extension("tmp");
        let io = |e: std::io::Error| {
            Error::InvalidInput(format!(
                "cannot write the checkpoint {}: {e}",
                path.display()
            ))
        };
        std::fs::write(&tmp, v.to_string()).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

impl IntoFuture for AddFilesBuilder {
    type Output = Result<(Table, AddFilesMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
mod tests {
    use super::{comparable, filter_value_matches};

    /// `null` is the NULL folder only; `"null"` the folder of the text (a new-user trial found
    /// `p=null` selected both, and nothing selected the text alone).
    #[test]
    fn a_null_filter_is_the_null_folder_and_a_quoted_one_the_text() {
        assert!(filter_value_matches("null", None));
        assert!(filter_value_matches("__HIVE_DEFAULT_PARTITION__", None));
        assert!(!filter_value_matches("null", Some("null")));
        assert!(filter_value_matches("\"null\"", Some("null")));
        assert!(!filter_value_matches("\"null\"", None));
        assert!(filter_value_matches("eu", Some("eu")));
        assert!(!filter_value_matches("eu", None));
        assert!(filter_value_matches("\"eu\"", Some("eu")));
        assert!(filter_value_matches("\"", Some("\"")));
        assert!(filter_value_matches("", Some("")));
    }

    /// The table's own metadata folder is recognised however a source path spells it.
    #[test]
    fn paths_compare_across_spellings() {
        assert_eq!(
            comparable("s3a://b/t/metadata/x"),
            comparable("s3://b/t/metadata/x")
        );
        assert_eq!(comparable("s3n://b/t"), "s3://b/t");
        assert_eq!(comparable("file:///wh/t/metadata"), "/wh/t/metadata");
        assert_eq!(comparable("file:/wh/t/metadata"), "/wh/t/metadata");
        assert_eq!(comparable("file://localhost/wh/t"), "/wh/t");
        assert_eq!(comparable("/wh/t"), "/wh/t");
    }
}
