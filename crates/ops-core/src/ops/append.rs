//! Append data files in one snapshot, with caller-supplied summary properties.
//!
//! 1. Load the table (or start from the version the caller hands in, [`AppendBuilder::with_base`]).
//! 2. Produce a snapshot that keeps every existing manifest and adds the new files under the
//!    spec they were written with (merging small manifests per `commit.manifest-merge.*`).
//! 3. Commit; on a concurrent commit, rebuild on the new base and retry (an append never
//!    overlaps another writer's change).

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::TableIdent;
use iceberg::spec::{DataFile, Operation};
use iceberg::table::Table;

use super::snapshot::{
    ManifestCache, PreparedManifest, SnapshotMetrics, SnapshotProducer, commit_snapshot_from,
};
use crate::{CatalogHandle, Result};

/// Appends data files (see the module docs).
#[must_use = "an AppendBuilder does nothing until awaited"]
pub struct AppendBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    /// Files with the spec they were written under (`None`: the default spec when this
    /// builder first loads the table).
    files: Vec<(Option<i32>, DataFile)>,
    properties: HashMap<String, String>,
    known: Option<Table>,
    prepared: Option<PreparedManifest>,
    /// Prepared manifests whose files are added the ordinary way: deleted once committed.
    leftover: Vec<PreparedManifest>,
    /// [`Self::refuse_readded_since`].
    unique_since: Option<Option<i64>>,
    /// [`Self::add_streamed`].
    streamed: Option<super::streamed::StreamedManifests>,
}

impl AppendBuilder {
    /// An append to `ident` of `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            files: Vec::new(),
            properties: HashMap::new(),
            known: None,
            prepared: None,
            leftover: Vec::new(),
            unique_since: None,
            streamed: None,
        }
    }

    /// Refuses the commit ([`crate::Error::CommitConflict`]) when a snapshot committed after
    /// `snapshot_id` (the one the caller checked its files against; `None`: the table was
    /// empty) added a data file at one of this append's paths: the rows would be read twice.
    /// For files that exist before the append (an import), which another writer may be
    /// adding at the same time.
    pub fn refuse_readded_since(mut self, snapshot_id: Option<i64>) -> Self {
        self.unique_since = Some(snapshot_id);
        self
    }

    /// Data files to add (written with [`crate::write::write_data_files`] under the table's
    /// default spec as this builder first loads it); prefer [`Self::add_written`].
    pub fn with_files(mut self, files: impl IntoIterator<Item = DataFile>) -> Self {
        self.files.extend(files.into_iter().map(|f| (None, f)));
        self
    }

    /// Data files to add, with the spec they were written under
    /// ([`crate::write::write_files`]).
    pub fn add_written(mut self, written: crate::write::WrittenFiles) -> Self {
        let spec = written.spec_id;
        self.files
            .extend(written.files.into_iter().map(|f| (Some(spec), f)));
        self
    }

    /// Data files whose manifest was written ahead ([`PreparedManifest::write`]): the commit
    /// then writes only the manifest list and the metadata. The snapshot takes the prepared
    /// manifest's snapshot id; if the table changed so that it no longer fits (another schema,
    /// spec or format version), its files are added like [`Self::add_written`]'s and the
    /// prepared manifest is deleted once the commit lands. One per append: a second one's
    /// files are added the ordinary way.
    pub fn add_prepared(mut self, prepared: PreparedManifest) -> Self {
        if self.prepared.is_none() {
            self.prepared = Some(prepared);
        } else {
            let spec = prepared.spec_id();
            self.files
                .extend(prepared.files().iter().map(|f| (Some(spec), f.clone())));
            self.leftover.push(prepared);
        }
        self
    }

    /// Data files whose manifests were written as they arrived
    /// ([`super::streamed::ManifestStream`]), for an append of more files than memory should
    /// hold: the commit writes only the manifest list and the metadata. If the table changed
    /// so that they no longer fit, their files are read back and added like
    /// [`Self::add_written`]'s, and the streamed manifests are deleted once the commit lands.
    /// [`Self::refuse_readded_since`] needs their paths tracked
    /// ([`super::streamed::ManifestStream::track_paths`]); it refuses the append otherwise.
    pub fn add_streamed(mut self, streamed: super::streamed::StreamedManifests) -> Self {
        self.streamed = Some(streamed);
        self
    }

    /// Extra snapshot summary properties, e.g. `iceberg-ops.migration-job`.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    /// Builds the first attempt on `table` (a version of this table the caller holds, such as
    /// the one a previous commit returned) instead of loading it from the catalog, which parses
    /// the whole metadata JSON. A stale version only costs a reload: the commit is refused and
    /// redone on the current table.
    pub fn with_base(mut self, table: Table) -> Self {
        self.known = Some(table);
        self
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        let default_spec: std::sync::Mutex<Option<i32>> = std::sync::Mutex::new(None);
        let prepared = &self.prepared;
        let streamed = &self.streamed;
        let landed: std::sync::Mutex<Option<SnapshotMetrics>> = std::sync::Mutex::new(None);
        let landed_ref = &landed;
        let committed =
            commit_snapshot_from(&self.handle, &self.ident, self.known.clone(), |base| {
                let spec = *default_spec
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(base.metadata().default_partition_spec_id());
                let files: Vec<(i32, DataFile)> = self
                    .files
                    .iter()
                    .map(|(s, f)| (s.unwrap_or(spec), f.clone()))
                    .collect();
                let properties = self.properties.clone();
                let unique_since = self.unique_since;
                async move {
                    if files.is_empty() && prepared.is_none() && streamed.is_none() {
                        return Ok(None);
                    }
                    if let Some(s) = streamed
                        && s.landed_in(&base).await?
                    {
                        let landed = SnapshotMetrics {
                            snapshot_id: s.snapshot_id(),
                            added_files: s.added_files(),
                            removed_files: 0,
                            added_records: s.added_records(),
                            removed_records: 0,
                        };
                        *landed_ref.lock().unwrap_or_else(|p| p.into_inner()) = Some(landed);
                        return Ok(None);
                    }
                    // An earlier attempt landed although it was reported as failed: done.
                    if let Some(p) = prepared
                        && let Some(m) = p.landed_in(&base).await?
                    {
                        *landed_ref.lock().unwrap_or_else(|p| p.into_inner()) = Some(m);
                        return Ok(None);
                    }
                    let cache = ManifestCache::new(&base);
                    if let Some(since) = unique_since {
                        refuse_readded(&base, &cache, since, &files, streamed.as_ref()).await?;
                    }
                    let mut producer = SnapshotProducer::new(&base, &cache, Operation::Append)
                        .add_files_by_spec(files)
                        .properties(properties);
                    if let Some(p) = prepared {
                        producer = producer.add_prepared(p);
                    }
                    if let Some(s) = streamed {
                        producer = producer.add_streamed(s);
                    }
                    Ok(Some(producer.produce().await?))
                }
            })
            .await;
        let committed = match committed {
            Ok(c) => c,
            Err(e) => {
                // Refused outright (as `commit::commit` judges it): nothing references the
                // streamed manifests. Any other failure may have landed: they are kept (orphan
                // cleanup removes them if not).
                if matches!(
                    e,
                    crate::Error::CommitConflict { .. } | crate::Error::InvalidInput(_)
                ) && let Some(s) = &self.streamed
                {
                    s.discard().await;
                }
                return Err(e);
            }
        };
        let committed = match landed.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(m) => (committed.0, m),
            None => committed,
        };
        // A prepared manifest the snapshot did not take is referenced by nothing — unless a
        // snapshot was made with it after all.
        let (table, metrics) = &committed;
        for p in self.prepared.iter().chain(&self.leftover) {
            if p.snapshot_id() != metrics.snapshot_id {
                p.discard_unless_committed(table).await;
            }
        }
        if let Some(s) = &self.streamed
            && s.snapshot_id() != metrics.snapshot_id
        {
            s.discard_unless_committed(table).await;
        }
        Ok(committed)
    }
}

/// The paths an append adds: named, or hashed by a [`super::streamed::ManifestStream`].
struct PathSet<'a> {
    named: std::collections::HashSet<&'a str>,
    streamed: Option<&'a super::streamed::StreamedManifests>,
}

impl PathSet<'_> {
    fn contains(&self, path: &str) -> bool {
        self.named.contains(path) || self.streamed.is_some_and(|s| s.may_hold(path))
    }
}

/// Refuses `files` when a snapshot of `base` after `since` added a data file at one of their
/// paths (every live file is checked when `since` is no longer an ancestor: rolled back).
async fn refuse_readded(
    base: &Table,
    cache: &ManifestCache,
    since: Option<i64>,
    files: &[(i32, DataFile)],
    streamed: Option<&super::streamed::StreamedManifests>,
) -> Result<()> {
    let named: std::collections::HashSet<&str> = files.iter().map(|(_, f)| f.file_path()).collect();
    if let Some(s) = streamed
        && !s.tracks_paths()
    {
        return Err(crate::Error::InvalidInput(
            "an append of streamed manifests refuses re-added files only when the stream \
             tracked its paths (ManifestStream::track_paths)"
                .into(),
        ));
    }
    let paths = PathSet { named, streamed };
    let conflict = |detail: String| crate::Error::CommitConflict {
        table: base.identifier().to_string(),
        detail,
    };
    let md = base.metadata();
    let mut between = Vec::new();
    let mut cursor = md.current_snapshot_id();
    while cursor != since {
        let Some(id) = cursor else {
            // `since` is no ancestor any more: every live file counts.
            let mut found = None;
            if let Some(snapshot) = md.current_snapshot() {
                super::snapshot::each_live_data_file(snapshot, cache, |live| {
                    if found.is_none() && paths.contains(live.file.file_path()) {
                        found = Some(live.file.file_path().to_string());
                    }
                    Ok(())
                })
                .await?;
            }
            return match found {
                Some(path) => Err(conflict(format!(
                    "{path} is in the table already; adding it again would read its rows twice"
                ))),
                None => Ok(()),
            };
        };
        between.push(id);
        cursor = md.snapshot_by_id(id).and_then(|s| s.parent_snapshot_id());
    }
    for id in between {
        let changes = super::snapshot::changes_of(base, cache, id).await?;
        if let Some(f) = changes
            .added
            .iter()
            .find(|f| paths.contains(f.file.file_path()))
        {
            return Err(conflict(format!(
                "snapshot {id}, committed meanwhile, added {}, which this append adds too; its \
                 rows would be read twice",
                f.file.file_path()
            )));
        }
    }
    Ok(())
}

impl IntoFuture for AppendBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

/// One append of an [`AppendSeries`]: its files (or their prepared manifest) and its snapshot's
/// summary properties.
#[derive(Debug, Clone, Default)]
pub struct SeriesAppend {
    /// Files written under `written.spec_id` (ignored when `prepared` is given).
    pub written: crate::write::WrittenFiles,
    /// The files' manifest, written ahead ([`PreparedManifest::write`]).
    pub prepared: Option<PreparedManifest>,
    /// Extra summary properties of this append's snapshot.
    pub properties: HashMap<String, String>,
}

/// Several appends committed at once, each its own snapshot, in order, the later ones children
/// of the earlier: one metadata file and one pointer swap for all of them, as a Java
/// `Transaction` holding several `AppendFiles` commits them. Either every snapshot lands or
/// none does. A committer that has several appends waiting thereby pays the metadata write and
/// the catalog's compare-and-swap (each with its `fsync`s) once, not once per append.
///
/// Builds on `base` (a version the caller holds); a stale base is refused and the whole series
/// rebuilt on the current table, as [`AppendBuilder::with_base`].
#[must_use = "an AppendSeries does nothing until awaited"]
pub struct AppendSeries {
    handle: CatalogHandle,
    ident: TableIdent,
    base: Table,
    appends: Vec<SeriesAppend>,
}

impl AppendSeries {
    /// A series of appends to `base`'s table of `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, base: Table) -> Self {
        Self {
            handle: handle.clone(),
            ident: base.identifier().clone(),
            base,
            appends: Vec::new(),
        }
    }

    /// The next append (an empty one makes no snapshot).
    pub fn append(mut self, append: SeriesAppend) -> Self {
        self.appends.push(append);
        self
    }

    /// Commits the series; returns the table after it and each append's snapshot, in order
    /// (`None` for an append without files).
    async fn execute(self) -> Result<(Table, Vec<Option<SnapshotMetrics>>)> {
        let out: std::sync::Mutex<Vec<Option<SnapshotMetrics>>> = std::sync::Mutex::new(Vec::new());
        let appends = &self.appends;
        let out_ref = &out;
        let table = crate::commit::commit_with_retry_from(
            &self.handle,
            &self.ident,
            Some(self.base.clone()),
            |base| async move {
                // One swap made every snapshot of an earlier attempt or none: if the first
                // prepared one is in the table, the attempt landed although it was reported
                // as failed.
                if let Some(first) = appends.iter().find_map(|a| a.prepared.as_ref())
                    && first.landed_in(&base).await?.is_some()
                {
                    let mut metrics = Vec::with_capacity(appends.len());
                    for append in appends {
                        let landed = match &append.prepared {
                            Some(p) => p.landed_in(&base).await?,
                            None if append.written.files.is_empty() => {
                                metrics.push(None);
                                continue;
                            }
                            None => None,
                        };
                        let Some(m) = landed else {
                            return Err(crate::Error::CommitStateUnknown {
                                table: base.identifier().to_string(),
                                detail: format!(
                                    "snapshot {} of this series is in the table but not all \
                                     of the series' appends can be found there",
                                    first.snapshot_id()
                                ),
                            });
                        };
                        metrics.push(Some(m));
                    }
                    *out_ref.lock().unwrap_or_else(|p| p.into_inner()) = metrics;
                    return Ok(None);
                }
                let mut metrics = Vec::with_capacity(appends.len());
                let mut change = crate::commit::TableChange::default();
                let mut current = base.clone();
                for append in appends {
                    if append.written.files.is_empty() && append.prepared.is_none() {
                        metrics.push(None);
                        continue;
                    }
                    let cache = ManifestCache::new(&current);
                    let mut producer = SnapshotProducer::new(&current, &cache, Operation::Append)
                        .properties(append.properties.clone());
                    producer = match &append.prepared {
                        Some(p) => producer.add_prepared(p),
                        None => producer.add_files(
                            append.written.spec_id,
                            append.written.files.iter().cloned(),
                        ),
                    };
                    let produced = match producer.produce().await {
                        Ok(p) => p,
                        Err(e) => {
                            // Nothing references what the earlier appends of this attempt wrote.
                            crate::commit::delete_quietly(base.file_io(), &change.written).await;
                            return Err(e);
                        }
                    };
                    let next = match then(&current, &produced.change.updates) {
                        Ok(t) => t,
                        Err(e) => {
                            change.written.extend(produced.change.written);
                            crate::commit::delete_quietly(base.file_io(), &change.written).await;
                            return Err(e);
                        }
                    };
                    current = next;
                    if change.requirements.is_empty() {
                        change.requirements = produced.change.requirements;
                    }
                    change.updates.extend(produced.change.updates);
                    change.written.extend(produced.change.written);
                    metrics.push(Some(produced.metrics));
                }
                *out_ref.lock().unwrap_or_else(|p| p.into_inner()) = metrics;
                if change.updates.is_empty() {
                    return Ok(None);
                }
                Ok(Some(change))
            },
        )
        .await?;
        let metrics = out.into_inner().unwrap_or_else(|p| p.into_inner());
        // Prepared manifests a snapshot did not take (the table had changed under them).
        for (append, m) in self.appends.iter().zip(&metrics) {
            if let Some(p) = &append.prepared
                && m.as_ref().map(|m| m.snapshot_id) != Some(p.snapshot_id())
            {
                p.discard_unless_committed(&table).await;
            }
        }
        Ok((table, metrics))
    }
}

/// `table` with `updates` applied in memory (not committed): the base the next append of a
/// series is produced on.
fn then(table: &Table, updates: &[iceberg::TableUpdate]) -> Result<Table> {
    let mut builder = table.metadata().clone().into_builder(None);
    for update in updates {
        builder = update.clone().apply(builder)?;
    }
    let metadata = builder.build()?.metadata;
    let mut next = Table::builder()
        .identifier(table.identifier().clone())
        .metadata(metadata)
        .file_io(table.file_io().clone())
        .runtime(iceberg::Runtime::try_current()?);
    if let Some(location) = table.metadata_location() {
        next = next.metadata_location(location.to_string());
    }
    Ok(next.build()?)
}

impl IntoFuture for AppendSeries {
    type Output = Result<(Table, Vec<Option<SnapshotMetrics>>)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use futures::TryStreamExt;
    use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
    use iceberg::{NamespaceIdent, TableCreation};

    use super::*;
    use crate::catalog::{CatalogConfig, CatalogDefinition};
    use crate::ops::evolve_schema::EvolveSchemaBuilder;

    /// `ns.t (id long, region string)` in a fresh SQLite catalog under `dir` (also the fixture
    /// of other ops' tests).
    pub(crate) async fn table(dir: &std::path::Path) -> anyhow::Result<(CatalogHandle, Table)> {
        let props: BTreeMap<String, String> = [
            ("type".to_string(), "sql".to_string()),
            (
                "uri".into(),
                format!("sqlite:///{}/catalog.db", dir.display()),
            ),
            ("warehouse".into(), format!("file://{}/wh", dir.display())),
        ]
        .into();
        let mut config = CatalogConfig::empty();
        config.insert(CatalogDefinition::inline("t", props));
        let handle = crate::CatalogFactory::new(config).open("t").await?;
        let ns = NamespaceIdent::new("ns".into());
        handle
            .catalog()
            .create_namespace(&ns, HashMap::new())
            .await?;
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
            ])
            .build()?;
        let table = handle
            .catalog()
            .create_table(
                &ns,
                TableCreation::builder()
                    .name("t".into())
                    .schema(schema)
                    .build(),
            )
            .await?;
        Ok((handle, table))
    }

    /// Rows `ids` of [`table`], all in region `eu`.
    pub(crate) fn batch(table: &Table, ids: Vec<i64>) -> anyhow::Result<RecordBatch> {
        let n = ids.len();
        Ok(RecordBatch::try_new(
            crate::write::table_arrow_schema(table)?,
            vec![
                std::sync::Arc::new(Int64Array::from(ids)),
                std::sync::Arc::new(StringArray::from(vec![Some("eu"); n])),
            ],
        )?)
    }

    async fn write(table: &Table, ids: Vec<i64>) -> anyhow::Result<crate::write::WrittenFiles> {
        let batch = batch(table, ids)?;
        Ok(crate::write::write_files(table, futures::stream::iter([Ok(batch)])).await?)
    }

    async fn rows(table: &Table) -> anyhow::Result<usize> {
        let batches: Vec<RecordBatch> = table
            .scan()
            .build()?
            .to_arrow()
            .await?
            .try_collect()
            .await?;
        Ok(batches.iter().map(RecordBatch::num_rows).sum())
    }

    /// A manifest written ahead is the snapshot's manifest, under the snapshot id it was written
    /// for, and reads as the commit's own would: entries of that snapshot and its sequence
    /// number, totals in the summary.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_prepared_manifest_is_the_snapshots_manifest() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = table(dir.path()).await?;
        let (table, _) = AppendBuilder::new(&handle, table.identifier().clone())
            .add_written(write(&table, vec![1, 2]).await?)
            .await?;
        let written = write(&table, vec![3, 4, 5]).await?;
        let prepared = PreparedManifest::write(&table, &written)
            .await?
            .ok_or_else(|| anyhow::anyhow!("files were written"))?;
        let (table, metrics) = AppendBuilder::new(&handle, table.identifier().clone())
            .with_base(table)
            .add_prepared(prepared.clone())
            .await?;
        assert_eq!(metrics.snapshot_id, prepared.snapshot_id());
        assert_eq!(metrics.added_records, 3);
        let snapshot = table
            .metadata()
            .current_snapshot()
            .ok_or_else(|| anyhow::anyhow!("a snapshot"))?;
        assert_eq!(snapshot.snapshot_id(), prepared.snapshot_id());
        assert_eq!(
            snapshot
                .summary()
                .additional_properties
                .get("total-records"),
            Some(&"5".to_string())
        );
        let list = ManifestCache::new(&table).manifest_list(snapshot).await?;
        let mf = list
            .iter()
            .find(|m| m.manifest_path == prepared.path())
            .ok_or_else(|| anyhow::anyhow!("the prepared manifest is listed"))?;
        assert_eq!(mf.added_snapshot_id, snapshot.snapshot_id());
        assert_eq!(mf.sequence_number, snapshot.sequence_number());
        let manifest = mf.load_manifest(table.file_io()).await?;
        assert_eq!(manifest.entries().len(), written.files.len());
        for e in manifest.entries() {
            assert_eq!(e.snapshot_id(), Some(snapshot.snapshot_id()));
            assert_eq!(e.sequence_number(), Some(snapshot.sequence_number()));
        }
        assert_eq!(rows(&table).await?, 5);
        Ok(())
    }

    /// A prepared manifest written before the schema changed is not used: its files are added
    /// under a new manifest of the current schema, and the stale manifest is deleted.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_prepared_manifest_that_no_longer_fits_is_replaced() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = table(dir.path()).await?;
        let written = write(&table, vec![1, 2]).await?;
        let prepared = PreparedManifest::write(&table, &written)
            .await?
            .ok_or_else(|| anyhow::anyhow!("files were written"))?;
        EvolveSchemaBuilder::new(&handle, table.identifier().clone())
            .add_column("note", Type::Primitive(PrimitiveType::String))
            .await?;
        let (table, metrics) = AppendBuilder::new(&handle, table.identifier().clone())
            .add_prepared(prepared.clone())
            .await?;
        assert_ne!(metrics.snapshot_id, prepared.snapshot_id());
        assert_eq!(metrics.added_records, 2);
        assert!(!table.file_io().exists(prepared.path()).await?);
        let snapshot = table
            .metadata()
            .current_snapshot()
            .ok_or_else(|| anyhow::anyhow!("a snapshot"))?;
        let list = ManifestCache::new(&table).manifest_list(snapshot).await?;
        assert!(list.iter().all(|m| m.manifest_path != prepared.path()));
        assert_eq!(rows(&table).await?, 2);
        Ok(())
    }

    /// An append that landed although its caller was told it failed (a lost answer, Glue's or
    /// S3 Tables' SDK retry then reporting a conflict) and is tried again on a base that does
    /// not show it yet: the retry finds its snapshot in the reloaded table and is done. It adds
    /// the files no second time and keeps the manifest the landed snapshot lists.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_retried_append_that_had_landed_is_not_added_again() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, base) = table(dir.path()).await?;
        let written = write(&base, vec![1, 2, 3]).await?;
        let prepared = PreparedManifest::write(&base, &written)
            .await?
            .ok_or_else(|| anyhow::anyhow!("files were written"))?;
        let (landed, _) = AppendBuilder::new(&handle, base.identifier().clone())
            .with_base(base.clone())
            .add_prepared(prepared.clone())
            .await?;
        // The retry starts from the base the first attempt started from.
        let (table, metrics) = AppendBuilder::new(&handle, base.identifier().clone())
            .with_base(base.clone())
            .add_prepared(prepared.clone())
            .await?;
        assert_eq!(metrics.snapshot_id, prepared.snapshot_id());
        assert_eq!(metrics.added_records, 3);
        assert_eq!(table.metadata().snapshots().count(), 1);
        assert_eq!(table.metadata_location(), landed.metadata_location());
        assert!(table.file_io().exists(prepared.path()).await?);
        assert_eq!(rows(&table).await?, 3);
        Ok(())
    }

    /// The same for a series: its snapshots are all in the table, so a retry from the old
    /// base is done, with each append's snapshot as its outcome.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_retried_series_that_had_landed_is_not_added_again() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, base) = table(dir.path()).await?;
        let mut appends = Vec::new();
        for ids in [vec![1, 2], vec![3]] {
            let written = write(&base, ids).await?;
            let prepared = PreparedManifest::write(&base, &written).await?;
            appends.push(SeriesAppend {
                written,
                prepared,
                properties: HashMap::new(),
            });
        }
        let series = |appends: &[SeriesAppend]| {
            appends
                .iter()
                .cloned()
                .fold(AppendSeries::new(&handle, base.clone()), |s, a| s.append(a))
        };
        let (_, first) = series(&appends).await?;
        let (table, again) = series(&appends).await?;
        let ids = |m: &[Option<SnapshotMetrics>]| -> Vec<Option<i64>> {
            m.iter()
                .map(|m| m.as_ref().map(|m| m.snapshot_id))
                .collect()
        };
        assert_eq!(ids(&again), ids(&first));
        assert_eq!(table.metadata().snapshots().count(), 2);
        for a in &appends {
            if let Some(p) = &a.prepared {
                assert!(table.file_io().exists(p.path()).await?);
            }
        }
        assert_eq!(rows(&table).await?, 3);
        Ok(())
    }

    /// A series commits each append as its own snapshot, in order, children of each other,
    /// with one metadata file for all of them.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_series_commits_one_snapshot_per_append_in_one_metadata_file() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = table(dir.path()).await?;
        let (table, first) = AppendBuilder::new(&handle, table.identifier().clone())
            .add_written(write(&table, vec![1]).await?)
            .await?;
        let log_before = table.metadata().metadata_log().len();
        let mut series = AppendSeries::new(&handle, table.clone());
        let mut prepared_ids = Vec::new();
        for (i, ids) in [vec![2, 3], vec![4], vec![5, 6, 7]].into_iter().enumerate() {
            let written = write(&table, ids).await?;
            let prepared = if i == 1 {
                None
            } else {
                PreparedManifest::write(&table, &written).await?
            };
            prepared_ids.push(prepared.as_ref().map(PreparedManifest::snapshot_id));
            series = series.append(SeriesAppend {
                written,
                prepared,
                properties: HashMap::from([("batch".to_string(), i.to_string())]),
            });
        }
        // An append without files makes no snapshot.
        series = series.append(SeriesAppend::default());
        let (table, metrics) = series.await?;
        assert_eq!(metrics.len(), 4);
        assert!(metrics[3].is_none());
        let ids: Vec<i64> = metrics[..3]
            .iter()
            .map(|m| m.as_ref().map(|m| m.snapshot_id))
            .collect::<Option<_>>()
            .ok_or_else(|| anyhow::anyhow!("three snapshots"))?;
        for (id, prepared) in ids.iter().zip(&prepared_ids) {
            if let Some(p) = prepared {
                assert_eq!(id, p);
            }
        }
        // One new metadata file: the log gained the one entry of the base.
        assert_eq!(table.metadata().metadata_log().len(), log_before + 1);
        assert_eq!(table.metadata().current_snapshot_id(), Some(ids[2]));
        let mut parent = Some(first.snapshot_id);
        let mut records = 1;
        for (i, id) in ids.iter().enumerate() {
            let snapshot = table
                .metadata()
                .snapshot_by_id(*id)
                .ok_or_else(|| anyhow::anyhow!("snapshot {id}"))?;
            assert_eq!(snapshot.parent_snapshot_id(), parent);
            let props = &snapshot.summary().additional_properties;
            assert_eq!(props.get("batch"), Some(&i.to_string()));
            records += [2, 1, 3][i];
            assert_eq!(props.get("total-records"), Some(&records.to_string()));
            parent = Some(*id);
        }
        assert_eq!(rows(&table).await?, 7);
        // The catalog points at it.
        let loaded = handle.catalog().load_table(table.identifier()).await?;
        assert_eq!(loaded.metadata().current_snapshot_id(), Some(ids[2]));
        Ok(())
    }
}
