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
use std::pin::Pin;

use futures::{StreamExt, TryStreamExt};
use iceberg::TableIdent;
use iceberg::spec::{
    DEFAULT_SCHEMA_NAME_MAPPING, DataContentType, DataFile, DataFileBuilder, DataFileFormat,
};
use iceberg::table::Table;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::properties::PropertiesBuilder;
use ops_core::ops::{ManifestCache, each_live_data_file};
use ops_core::{CatalogHandle, Error, Result};

use crate::columns::{Mapping, has_field_ids, match_columns};
use crate::hive_path::segments;
use crate::metrics::{MetricsConfig, column_stats, file_metrics};
use crate::partition::partition_of;
use crate::source::{SourceFile, expand};

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

/// What an `add_files` did (or would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddFilesMetrics {
    /// The files, in the order they were named (each folder's sorted by path).
    pub files: Vec<AddedFile>,
    /// Hidden entries skipped below the folders named.
    pub hidden: usize,
    /// Files left out by the partition filter.
    pub filtered_out: usize,
    /// The `append` snapshot (`None`: nothing to add, or a dry run).
    pub snapshot_id: Option<i64>,
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
        }
    }

    /// Files, folders or globs to add (see [`crate::source`]).
    pub fn from<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.from.extend(names.into_iter().map(Into::into));
        self
    }

    /// Only files under a `key=value` folder (values compared unescaped); given several times,
    /// all must hold.
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
        let table = ops_core::commit::load_current(&self.handle, &self.ident).await?;
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
        let expanded = expand(&self.from, &underscored, table.file_io().config().props()).await?;
        metrics.hidden = expanded.hidden;
        let mut files: Vec<SourceFile> = Vec::with_capacity(expanded.files.len());
        for f in expanded.files {
            let folders = segments(&f.relative);
            let keep = self.partition_filter.iter().all(|(k, v)| {
                folders
                    .iter()
                    .any(|(fk, fv)| fk == k && fv.as_deref().unwrap_or("null") == v)
            });
            if keep {
                files.push(f);
            } else {
                metrics.filtered_out += 1;
            }
        }
        if files.is_empty() {
            return Err(Error::InvalidInput(format!(
                "no Parquet file to add under {}{}",
                self.from.join(", "),
                if metrics.filtered_out > 0 {
                    format!(
                        " ({} left out by the partition filter)",
                        metrics.filtered_out
                    )
                } else {
                    String::new()
                }
            )));
        }
        if !self.allow_duplicate_files {
            refuse_duplicates(&table, &files).await?;
        }

        let config = MetricsConfig::of(&schema, &properties)?;
        let mut mapping = Mapping::of(&schema, &properties)?;
        let io = table.file_io().clone();
        let mut footers = futures::stream::iter(files.into_iter().map(|f| {
            let io = io.clone();
            async move {
                let meta = crate::footer::read(&io, &f.path, f.size).await?;
                Ok::<_, Error>((f, meta))
            }
        }))
        .buffered(self.concurrency);
        let mut added: Vec<DataFile> = Vec::new();
        let mut mapping_used = false;
        while let Some((f, meta)) = footers.try_next().await? {
            let columns = meta.file_metadata().schema_descr().columns().to_vec();
            let has_ids = has_field_ids(&columns);
            mapping_used |= !has_ids;
            let matched = match_columns(&f.path, &columns, &schema, &mut mapping, has_ids)?;
            let stats = column_stats(&meta, &matched);
            let partition = partition_of(&f.path, &f.relative, &spec, &schema, &stats)?;
            let m = file_metrics(&stats, &config);
            let record_count = u64::try_from(meta.file_metadata().num_rows()).unwrap_or(0);
            let mut offsets: Vec<i64> = meta
                .row_groups()
                .iter()
                .filter_map(|rg| rg.file_offset())
                .collect();
            offsets.sort_unstable();
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
                .split_offsets(Some(offsets));
            let file = b.build().map_err(|e| {
                Error::InvalidInput(format!("cannot describe {} as a data file: {e}", f.path))
            })?;
            metrics.files.push(AddedFile {
                path: f.path,
                partition: partition.display,
                record_count,
                size: f.size,
            });
            added.push(file);
        }
        metrics.name_mapping_created = mapping_used && mapping.created;
        metrics.name_mapping_extended = mapping.changed;
        if self.dry_run {
            return Ok((table, metrics));
        }
        let mut table = table;
        if metrics.name_mapping_created || metrics.name_mapping_extended {
            // Before the files: a reader of the append must find their columns.
            table = PropertiesBuilder::new(&self.handle, self.ident.clone())
                .set(DEFAULT_SCHEMA_NAME_MAPPING, mapping.to_json()?)
                .await?;
        }
        let mut props = HashMap::new();
        props.insert(
            ops_core::ops::OPERATION_PROPERTY.to_string(),
            "add-files".to_string(),
        );
        let (table, snapshot) = AppendBuilder::new(&self.handle, self.ident.clone())
            .with_base(table)
            .add_written(ops_core::write::WrittenFiles {
                spec_id: spec.spec_id(),
                files: added,
            })
            .with_properties(props)
            .await?;
        metrics.snapshot_id = Some(snapshot.snapshot_id);
        tracing::info!(table = %self.ident, files = metrics.files.len(),
            snapshot = snapshot.snapshot_id, "files added");
        Ok((table, metrics))
    }
}

/// Refuses a file named twice, or one the table's current snapshot already lists, naming it:
/// its rows would be read twice. One pass over the manifests against the new paths.
async fn refuse_duplicates(table: &Table, files: &[SourceFile]) -> Result<()> {
    let mut new: HashSet<&str> = HashSet::with_capacity(files.len());
    for f in files {
        if !new.insert(f.path.as_str()) {
            return Err(Error::InvalidInput(format!(
                "{} is named twice; its rows would be read twice (pass \
                 --allow-duplicate-files to add it anyway)",
                f.path
            )));
        }
    }
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(());
    };
    let cache = ManifestCache::new(table);
    let mut already: Option<String> = None;
    each_live_data_file(snapshot, &cache, |live| {
        if already.is_none() && new.contains(live.file.file_path()) {
            already = Some(live.file.file_path().to_string());
        }
        Ok(())
    })
    .await?;
    match already {
        Some(path) => Err(Error::InvalidInput(format!(
            "{path} is already in {}; adding it again would read its rows twice (pass \
             --allow-duplicate-files to add it anyway)",
            table.identifier()
        ))),
        None => Ok(()),
    }
}

impl IntoFuture for AddFilesBuilder {
    type Output = Result<(Table, AddFilesMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
