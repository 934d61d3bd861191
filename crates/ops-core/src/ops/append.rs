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

use super::snapshot::{ManifestCache, SnapshotMetrics, SnapshotProducer, commit_snapshot_from};
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
        }
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
            async move {
                if files.is_empty() {
                    return Ok(None);
                }
                let cache = ManifestCache::new(&base);
                let produced = SnapshotProducer::new(&base, &cache, Operation::Append)
                    .add_files_by_spec(files)
                    .properties(properties)
                    .produce()
                    .await?;
                Ok(Some(produced))
            }
        })
        .await
    }
}

impl IntoFuture for AppendBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
