//! Remove given data files and add new ones in one `overwrite` snapshot.
//!
//! 1. Load the table; note its current snapshot and the partitions this overwrite touches (those
//!    of the files it removes and of the files it adds).
//! 2. Produce a snapshot that marks the removed files DELETED and adds the new ones; a file to
//!    remove that is not live is an error.
//! 3. Commit. On a concurrent commit, retry on the new base only if no snapshot since step 1
//!    added files to a touched partition and every file to remove is still live; otherwise fail
//!    with a conflict, so the other writer's rows are never silently replaced.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Mutex;

use iceberg::TableIdent;
use iceberg::spec::{DataFile, Operation};
use iceberg::table::Table;

use super::snapshot::{
    PartitionKey, SnapshotMetrics, SnapshotProducer, commit_snapshot, live_data_files,
    validate_no_new_files_in,
};
use crate::{CatalogHandle, Error, Result};

/// Overwrites data files (see the module docs).
#[must_use = "an OverwriteBuilder does nothing until awaited"]
pub struct OverwriteBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    remove: Vec<String>,
    add: Vec<DataFile>,
    properties: HashMap<String, String>,
}

impl OverwriteBuilder {
    /// An overwrite of `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            remove: Vec::new(),
            add: Vec::new(),
            properties: HashMap::new(),
        }
    }

    /// Data files to remove, by path (as listed in the table's manifests).
    pub fn remove_files(mut self, paths: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.remove.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Data files to add.
    pub fn add_files(mut self, files: impl IntoIterator<Item = DataFile>) -> Self {
        self.add.extend(files);
        self
    }

    /// Extra snapshot summary properties.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        if self.remove.is_empty() && self.add.is_empty() {
            let table = self.handle.catalog().load_table(&self.ident).await?;
            return Ok((table, SnapshotMetrics::default()));
        }
        let unique: HashSet<&String> = self.remove.iter().collect();
        if unique.len() != self.remove.len() {
            return Err(Error::InvalidInput(
                "a file to remove is listed twice".to_string(),
            ));
        }
        // (snapshot the caller's view was based on, partitions touched), fixed at the first attempt.
        let first: Mutex<Option<(Option<i64>, HashSet<PartitionKey>)>> = Mutex::new(None);
        commit_snapshot(&self.handle, &self.ident, |base| {
            let remove = self.remove.clone();
            let add = self.add.clone();
            let properties = self.properties.clone();
            let first = &first;
            async move {
                let recorded = first.lock().unwrap_or_else(|p| p.into_inner()).clone();
                match recorded {
                    None => {
                        let wanted: HashSet<&String> = remove.iter().collect();
                        let live = live_data_files(&base).await?;
                        let default_spec = base.metadata().default_partition_spec_id();
                        let mut touched: HashSet<PartitionKey> = live
                            .iter()
                            .filter(|f| wanted.contains(&f.file.file_path().to_string()))
                            .map(|f| (f.spec_id, f.file.partition().clone()))
                            .collect();
                        touched.extend(add.iter().map(|f| (default_spec, f.partition().clone())));
                        *first.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some((base.metadata().current_snapshot_id(), touched));
                    }
                    Some((since, touched)) => {
                        validate_no_new_files_in(&base, since, &touched).await?;
                    }
                }
                let produced = SnapshotProducer::new(&base, Operation::Overwrite)
                    .remove_paths(remove)
                    .add_files(add)
                    .properties(properties)
                    .produce()
                    .await?;
                Ok(Some(produced))
            }
        })
        .await
    }
}

impl IntoFuture for OverwriteBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
