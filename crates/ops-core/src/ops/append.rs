//! Append data files in one snapshot, with caller-supplied summary properties.
//!
//! 1. Load the table.
//! 2. Produce a snapshot that keeps every existing manifest and adds one of the new files.
//! 3. Commit; on a concurrent commit, rebuild on the new base and retry (an append never
//!    overlaps another writer's change).

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::TableIdent;
use iceberg::spec::{DataFile, Operation};
use iceberg::table::Table;

use super::snapshot::{SnapshotMetrics, SnapshotProducer, commit_snapshot};
use crate::{CatalogHandle, Result};

/// Appends data files (see the module docs).
#[must_use = "an AppendBuilder does nothing until awaited"]
pub struct AppendBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    files: Vec<DataFile>,
    properties: HashMap<String, String>,
}

impl AppendBuilder {
    /// An append to `ident` of `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            files: Vec::new(),
            properties: HashMap::new(),
        }
    }

    /// Data files to add (written with [`crate::write::write_data_files`]).
    pub fn with_files(mut self, files: impl IntoIterator<Item = DataFile>) -> Self {
        self.files.extend(files);
        self
    }

    /// Extra snapshot summary properties, e.g. `iceberg-ops.migration-job`.
    pub fn with_properties(mut self, properties: HashMap<String, String>) -> Self {
        self.properties.extend(properties);
        self
    }

    async fn execute(self) -> Result<(Table, SnapshotMetrics)> {
        commit_snapshot(&self.handle, &self.ident, |base| {
            let files = self.files.clone();
            let properties = self.properties.clone();
            async move {
                if files.is_empty() {
                    return Ok(None);
                }
                let produced = SnapshotProducer::new(&base, Operation::Append)
                    .add_files(files)
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
