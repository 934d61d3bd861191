//! Dynamic partition overwrite: the new files replace every row in the partitions they cover.
//!
//! 1. The partitions to replace are those of the new files under the table's default spec
//!    (any transform: identity, bucket, truncate, year/month/day/hour).
//! 2. Live files of the default spec in those partitions are removed. A file written under an
//!    older spec is removed when its partition decides the current one — every current partition
//!    field also exists in the old spec with the same source and transform — and lies in a
//!    replaced partition; a file whose old partition cannot decide it (the spec gained a field
//!    since) is refused, naming the file, rather than guessed at.
//! 3. One `overwrite` snapshot, with `replace-partitions=true` in its summary. On a concurrent
//!    commit it retries only if no new file landed in a replaced partition.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Mutex;

use iceberg::TableIdent;
use iceberg::spec::{DataFile, Literal, Operation, PartitionSpec, Struct};
use iceberg::table::Table;

use super::snapshot::{
    LiveFile, PartitionKey, SnapshotMetrics, SnapshotProducer, commit_snapshot, live_data_files,
    spec_by_id, validate_no_new_files_in,
};
use crate::{CatalogHandle, Error, Result};

/// Replaces partitions (see the module docs).
#[must_use = "a ReplacePartitionsBuilder does nothing until awaited"]
pub struct ReplacePartitionsBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    add: Vec<DataFile>,
    properties: HashMap<String, String>,
}

impl ReplacePartitionsBuilder {
    /// A partition replacement on `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            add: Vec::new(),
            properties: HashMap::new(),
        }
    }

    /// The new data files (written under the table's default spec).
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
        let since: Mutex<Option<Option<i64>>> = Mutex::new(None);
        commit_snapshot(&self.handle, &self.ident, |base| {
            let add = self.add.clone();
            let mut properties = self.properties.clone();
            let since = &since;
            async move {
                if add.is_empty() {
                    return Ok(None);
                }
                let spec_id = base.metadata().default_partition_spec_id();
                let touched: HashSet<PartitionKey> = add
                    .iter()
                    .map(|f| (spec_id, f.partition().clone()))
                    .collect();
                let recorded = *since.lock().unwrap_or_else(|p| p.into_inner());
                match recorded {
                    None => {
                        *since.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(base.metadata().current_snapshot_id());
                    }
                    Some(s) => validate_no_new_files_in(&base, s, &touched).await?,
                }
                let victims = files_in_partitions(&base, &touched).await?;
                properties.insert("replace-partitions".into(), "true".into());
                let produced = SnapshotProducer::new(&base, Operation::Overwrite)
                    .remove_paths(victims)
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

/// Paths of the live files whose rows all lie in `touched` partitions of the default spec.
async fn files_in_partitions(
    table: &Table,
    touched: &HashSet<PartitionKey>,
) -> Result<Vec<String>> {
    let current = table.metadata().default_partition_spec().clone();
    let mut out = Vec::new();
    for LiveFile { file, spec_id } in live_data_files(table).await? {
        if spec_id == current.spec_id() {
            if touched.contains(&(spec_id, file.partition().clone())) {
                out.push(file.file_path().to_string());
            }
            continue;
        }
        let old = spec_by_id(table, spec_id)?;
        match project_partition(&old, file.partition(), &current) {
            Some(p) => {
                if touched.contains(&(current.spec_id(), p)) {
                    out.push(file.file_path().to_string());
                }
            }
            None => {
                return Err(Error::InvalidInput(format!(
                    "{} holds {} under partition spec {spec_id}, which cannot tell which of its \
                     rows belong to the partitions being replaced (the spec gained a field \
                     since); rewrite that data under the current spec first, or use overwrite",
                    table.identifier(),
                    file.file_path()
                )));
            }
        }
    }
    Ok(out)
}

/// The partition under `current` of every row in a file whose partition under `old` is `value`,
/// when `old` determines it.
fn project_partition(
    old: &PartitionSpec,
    value: &Struct,
    current: &PartitionSpec,
) -> Option<Struct> {
    let values: Vec<Option<Literal>> = value.iter().map(|v| v.cloned()).collect();
    let mut out = Vec::with_capacity(current.fields().len());
    for field in current.fields() {
        let i = old
            .fields()
            .iter()
            .position(|f| f.source_id == field.source_id && f.transform == field.transform)?;
        out.push(values.get(i)?.clone());
    }
    Some(Struct::from_iter(out))
}

impl IntoFuture for ReplacePartitionsBuilder {
    type Output = Result<(Table, SnapshotMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
