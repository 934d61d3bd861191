//! `MigrationHistory`: migration records as a real Iceberg table,
//! `<meta_namespace>.migration_history`, in the user's own catalog.
//!
//! One row per `(version, namespace)` holds that version's latest status; earlier states stay
//! readable by time travel on the table's snapshots. The namespace and table are created on
//! first write (with `commit.retry.num-retries = 20`); reading an absent table returns nothing
//! and creates nothing.
//!
//! A write replaces the key's row in one `overwrite` snapshot (PyIceberg's `overwrite(df,
//! overwrite_filter)`): the rows matching `version = V AND namespace = N` are deleted and the
//! new row added, validated from the snapshot this handle last read. If another process changed
//! the same key since, the write is [`ConcurrentMigrationError`] and nothing lands. The table
//! is partitioned by `(namespace, version)`, so a write racing only other keys (runners for
//! other namespaces) is rebased and retried by ops-core up to `commit.retry.num-retries`.
//!
//! The runner reads history with [`MigrationHistory::read`] and passes the snapshot it read to
//! every write ([`MigrationHistory::write`]), so two runners (or two clones of one) never share
//! what they read. The stateful `get_all` / `record_*` methods remember the last read per handle,
//! for callers that use the store directly.
//!
//! Beyond the seed's six columns the table has `checksum` and `details` (JSON: operations that
//! landed before a failure, earlier property values for derived downgrades, the baseline mark),
//! both optional and added by schema evolution the first time a row needs them, so tables
//! created by the Python iceberg-ops and rows written without them stay readable.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};

use arrow_array::{Array, ArrayRef, LargeStringArray, RecordBatch, StringArray};
use arrow_schema::DataType;
use futures::TryStreamExt;
use iceberg::expr::{Predicate, Reference};
use iceberg::spec::{
    Datum, NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec,
};
use iceberg::table::Table;
use iceberg::{ErrorKind, NamespaceIdent, TableCreation, TableIdent};
use ops_core::CatalogHandle;
use ops_core::ops::evolve_schema::EvolveSchemaBuilder;
use ops_core::ops::overwrite::OverwriteBuilder;
use serde::{Deserialize, Serialize};

use crate::{ConcurrentMigrationError, Result, RunnerError};

/// The default meta namespace.
pub const DEFAULT_META_NAMESPACE: &str = "_iceberg_ops";
/// The history table's name inside the meta namespace.
pub const HISTORY_TABLE: &str = "migration_history";
/// Longest error text kept in a `failed` row.
pub const MAX_ERROR_CHARS: usize = 2000;

/// A version's recorded status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Upgraded (or stamped).
    Applied,
    /// Downgraded.
    RolledBack,
    /// An upgrade attempt failed.
    Failed,
}

impl Status {
    /// The stored text: `applied`, `rolled_back`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::RolledBack => "rolled_back",
            Status::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "applied" => Some(Status::Applied),
            "rolled_back" => Some(Status::RolledBack),
            "failed" => Some(Status::Failed),
            _ => None,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a row records beyond the seed's columns, stored as JSON in the optional `details`
/// column. Unknown keys are ignored, so newer writers do not break older readers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Details {
    /// For a `failed` row of a declarative migration: how many of its upgrade operations
    /// committed before the failure (`migrate` resumes after them, `rollback` undoes them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operations_landed: Option<usize>,
    /// SHA-256 of those operations, to notice when the file's landed part changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landed_checksum: Option<String>,
    /// The values the keys of each property operation had before it ran (`None`: absent), by
    /// the operation's index in the upgrade: what a derived downgrade restores.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub earlier_properties: BTreeMap<usize, BTreeMap<String, Option<String>>>,
    /// The row is the namespace's baseline (`migrate baseline`): versions up to it are ignored.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub baseline: bool,
}

impl Details {
    /// Whether there is nothing to store.
    pub fn is_empty(&self) -> bool {
        self == &Details::default()
    }
}

/// One history row: the latest status of a `(version, namespace)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryRow {
    /// Zero-padded version.
    pub version: String,
    /// The managed namespace.
    pub namespace: String,
    /// Migration summary.
    pub description: Option<String>,
    /// ISO-8601 UTC time of the status change.
    pub applied_at: String,
    /// The status.
    pub status: Status,
    /// `<Type>: <message>` when failed.
    pub error: Option<String>,
    /// Checksum of the migration file when the row was written (`None`: not recorded, e.g. by
    /// the Python iceberg-ops or for a code migration).
    pub checksum: Option<String>,
    /// What the runner recorded beyond the seed's columns.
    #[serde(skip_serializing_if = "Details::is_empty")]
    pub details: Details,
}

impl HistoryRow {
    /// Whether this row is the namespace's baseline.
    pub fn is_baseline(&self) -> bool {
        self.details.baseline
    }

    /// How many upgrade operations of a failed declarative migration landed (0 when none or
    /// unknown).
    pub fn operations_landed(&self) -> usize {
        if self.status == Status::Failed {
            self.details.operations_landed.unwrap_or(0)
        } else {
            0
        }
    }
}

/// One read of a namespace's history: its rows and the snapshot they were read at, which the
/// writes that depend on them validate from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HistoryRead {
    /// One row per version, ascending.
    pub rows: Vec<HistoryRow>,
    /// The history table's snapshot read (`None`: absent or empty).
    pub snapshot: Option<i64>,
}

impl HistoryRead {
    /// The row of `version`.
    pub fn row(&self, version: &str) -> Option<&HistoryRow> {
        self.rows.iter().find(|r| r.version == version)
    }

    /// Each version's status.
    pub fn states(&self) -> BTreeMap<String, Status> {
        self.rows
            .iter()
            .map(|r| (r.version.clone(), r.status))
            .collect()
    }

    /// The baseline row, if the namespace has one.
    pub fn baseline(&self) -> Option<&HistoryRow> {
        self.rows.iter().find(|r| r.is_baseline())
    }
}

/// A row to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Zero-padded version.
    pub version: String,
    /// Migration summary.
    pub description: String,
    /// The status.
    pub status: Status,
    /// `<Type>: <message>` when failed (truncated to [`MAX_ERROR_CHARS`]).
    pub error: Option<String>,
    /// The migration's checksum.
    pub checksum: Option<String>,
    /// Details (written only when not empty).
    pub details: Details,
    /// Keep this time instead of now (`repair` realigning a row keeps when it was applied).
    pub applied_at: Option<String>,
}

impl Entry {
    /// A row with `status`, no error, checksum or details, stamped now.
    pub fn new(version: &str, description: &str, status: Status) -> Self {
        Self {
            version: version.to_string(),
            description: description.to_string(),
            status,
            error: None,
            checksum: None,
            details: Details::default(),
            applied_at: None,
        }
    }
}

/// The optional column holding [`Details`] as JSON, added on first use.
pub const DETAILS_COLUMN: &str = "details";

/// The history table's schema: the seed's six columns, then `checksum` (`details` is added by
/// schema evolution the first time a row needs it).
pub fn history_schema() -> Result<Schema> {
    let s = |id, name: &str, required| {
        Arc::new(NestedField::new(
            id,
            name,
            Type::Primitive(PrimitiveType::String),
            required,
        ))
    };
    Ok(Schema::builder()
        .with_fields(vec![
            s(1, "version", true),
            s(2, "namespace", true),
            s(3, "description", false),
            s(4, "applied_at", true),
            s(5, "status", true),
            s(6, "error", false),
            s(7, "checksum", false),
        ])
        .build()?)
}

/// Iceberg-backed migration state store (see the module docs).
#[derive(Debug)]
pub struct MigrationHistory {
    handle: CatalogHandle,
    meta: NamespaceIdent,
    ident: TableIdent,
    /// The snapshot up to which this handle knows the table (for `get_all` / `record_*`):
    /// `None` = never read, `Some(None)` = read while absent or empty.
    known: Mutex<Option<Option<i64>>>,
}

impl Clone for MigrationHistory {
    /// A clone starts from what this handle knows now and then keeps its own reads: two clones
    /// used by two runners must not validate one's writes against the other's reads.
    fn clone(&self) -> Self {
        Self {
            handle: self.handle.clone(),
            meta: self.meta.clone(),
            ident: self.ident.clone(),
            known: Mutex::new(self.known()),
        }
    }
}

fn key_filter(version: &str, namespace: &str) -> Predicate {
    Reference::new("version")
        .equal_to(Datum::string(version))
        .and(Reference::new("namespace").equal_to(Datum::string(namespace)))
}

fn is_kind(e: &iceberg::Error, kind: ErrorKind) -> bool {
    e.kind() == kind
}

impl MigrationHistory {
    /// The history in `meta_namespace` (default [`DEFAULT_META_NAMESPACE`]) of `handle`'s
    /// catalog.
    pub fn new(handle: &CatalogHandle, meta_namespace: &str) -> Self {
        let meta = NamespaceIdent::new(meta_namespace.to_string());
        Self {
            handle: handle.clone(),
            ident: TableIdent::new(meta.clone(), HISTORY_TABLE.to_string()),
            meta,
            known: Mutex::new(None),
        }
    }

    /// `<meta_namespace>.migration_history`.
    pub fn table_ident(&self) -> &TableIdent {
        &self.ident
    }

    fn known(&self) -> Option<Option<i64>> {
        *self.known.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_known(&self, v: Option<i64>) {
        *self.known.lock().unwrap_or_else(|p| p.into_inner()) = Some(v);
    }

    /// The table, or `None` when it does not exist (nothing is created).
    pub async fn load(&self) -> Result<Option<Table>> {
        let catalog = self.handle.catalog();
        if !catalog.namespace_exists(&self.meta).await?
            || !catalog.table_exists(&self.ident).await?
        {
            return Ok(None);
        }
        match catalog.load_table(&self.ident).await {
            Ok(t) => Ok(Some(t)),
            Err(e) if is_kind(&e, ErrorKind::TableNotFound) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Every row of `namespace` and the snapshot read; empty when the table does not exist.
    /// Changes nothing, remembers nothing.
    pub async fn read(&self, namespace: &str) -> Result<HistoryRead> {
        let Some(table) = self.load().await? else {
            return Ok(HistoryRead::default());
        };
        let snapshot = table.metadata().current_snapshot_id();
        let filter = Reference::new("namespace").equal_to(Datum::string(namespace));
        let mut stream = ops_core::scan::scan_filtered(&table, snapshot, Some(filter)).await?;
        let mut rows = Vec::new();
        while let Some(batch) = stream.try_next().await? {
            self.rows_of(&batch, namespace, &mut rows)?;
        }
        rows.sort_by(|a, b| a.version.cmp(&b.version));
        Ok(HistoryRead { rows, snapshot })
    }

    /// The current row of every version in `namespace`, ordered by version; empty when the
    /// table does not exist. Remembers the snapshot read, which this handle's `record_*` writes
    /// validate from.
    pub async fn get_all(&self, namespace: &str) -> Result<Vec<HistoryRow>> {
        let read = self.read(namespace).await?;
        self.set_known(read.snapshot);
        Ok(read.rows)
    }

    /// The versions of `namespace` whose current status is `applied`.
    pub async fn get_applied_versions(&self, namespace: &str) -> Result<BTreeSet<String>> {
        Ok(self
            .get_all(namespace)
            .await?
            .into_iter()
            .filter(|r| r.status == Status::Applied)
            .map(|r| r.version)
            .collect())
    }

    fn rows_of(
        &self,
        batch: &RecordBatch,
        namespace: &str,
        out: &mut Vec<HistoryRow>,
    ) -> Result<()> {
        let bad = |message: String| RunnerError::History {
            table: self.ident.to_string(),
            message,
        };
        let col = |name: &str| -> Result<Option<Vec<Option<String>>>> {
            let Some(c) = batch.column_by_name(name) else {
                return Ok(None);
            };
            strings(c).map(Some).ok_or_else(|| {
                bad(format!(
                    "column '{name}' is {}, not a string",
                    c.data_type()
                ))
            })
        };
        let need = |name: &str| -> Result<Vec<Option<String>>> {
            col(name)?.ok_or_else(|| bad(format!("the table has no column '{name}'")))
        };
        let (versions, namespaces, applied, statuses) = (
            need("version")?,
            need("namespace")?,
            need("applied_at")?,
            need("status")?,
        );
        let none = vec![None; batch.num_rows()];
        let descriptions = col("description")?.unwrap_or_else(|| none.clone());
        let errors = col("error")?.unwrap_or_else(|| none.clone());
        let checksums = col("checksum")?.unwrap_or_else(|| none.clone());
        let details = col(DETAILS_COLUMN)?.unwrap_or(none);
        for i in 0..batch.num_rows() {
            // The scan filter prunes by statistics; rows of other namespaces may remain.
            if namespaces[i].as_deref() != Some(namespace) {
                continue;
            }
            let status_text = statuses[i].clone().unwrap_or_default();
            let status = Status::parse(&status_text)
                .ok_or_else(|| bad(format!("unknown status '{status_text}'")))?;
            let version = versions[i].clone().unwrap_or_default();
            let details = match details[i].as_deref() {
                None | Some("") => Details::default(),
                Some(text) => serde_json::from_str(text).map_err(|e| {
                    bad(format!(
                        "the {DETAILS_COLUMN} of version {version} is not valid JSON ({e}): {text}"
                    ))
                })?,
            };
            out.push(HistoryRow {
                version,
                namespace: namespace.to_string(),
                description: descriptions[i].clone(),
                applied_at: applied[i].clone().unwrap_or_default(),
                status,
                error: errors[i].clone(),
                checksum: checksums[i].clone(),
                details,
            });
        }
        Ok(())
    }

    /// Records `version` of `namespace` as applied (validated from this handle's last read).
    pub async fn record_applied(
        &self,
        version: &str,
        namespace: &str,
        description: &str,
        checksum: Option<&str>,
    ) -> Result<()> {
        let mut e = Entry::new(version, description, Status::Applied);
        e.checksum = checksum.map(str::to_string);
        self.record_known(namespace, &e).await
    }

    /// Records `version` of `namespace` as rolled back (validated from this handle's last read).
    pub async fn record_rolled_back(
        &self,
        version: &str,
        namespace: &str,
        description: &str,
        checksum: Option<&str>,
    ) -> Result<()> {
        let mut e = Entry::new(version, description, Status::RolledBack);
        e.checksum = checksum.map(str::to_string);
        self.record_known(namespace, &e).await
    }

    /// Records a failed attempt; `error` is truncated to [`MAX_ERROR_CHARS`] characters.
    pub async fn record_failed(
        &self,
        version: &str,
        namespace: &str,
        description: &str,
        error: &str,
        checksum: Option<&str>,
    ) -> Result<()> {
        let mut e = Entry::new(version, description, Status::Failed);
        e.error = Some(error.to_string());
        e.checksum = checksum.map(str::to_string);
        self.record_known(namespace, &e).await
    }

    async fn record_known(&self, namespace: &str, entry: &Entry) -> Result<()> {
        let since = match self.known() {
            Some(since) => since,
            // Never read: this write depends on nothing older than the table's head.
            None => match self.load().await? {
                Some(t) => t.metadata().current_snapshot_id(),
                None => None,
            },
        };
        let written = self.write(namespace, entry, since).await?;
        // Nothing foreign landed between what we knew and our snapshot: we know the new head.
        if let Some((parent, head)) = written
            && parent == since
        {
            self.set_known(head);
        }
        Ok(())
    }

    /// Creates the meta namespace and the table if absent (either may appear concurrently).
    async fn ensure_table(&self) -> Result<Table> {
        let catalog = self.handle.catalog();
        if !catalog.namespace_exists(&self.meta).await? {
            match catalog.create_namespace(&self.meta, HashMap::new()).await {
                Ok(_) => tracing::info!(namespace = %self.meta.to_url_string(), "created"),
                Err(e) if is_kind(&e, ErrorKind::NamespaceAlreadyExists) => {}
                Err(e) => {
                    // Some catalogs report the race differently: trust a second look.
                    if !catalog.namespace_exists(&self.meta).await? {
                        return Err(e.into());
                    }
                }
            }
        }
        if let Some(t) = self.load().await? {
            return Ok(t);
        }
        let spec = UnboundPartitionSpec::builder()
            .add_partition_field(2, "namespace", Transform::Identity)?
            .add_partition_field(1, "version", Transform::Identity)?
            .build();
        let creation = TableCreation::builder()
            .name(HISTORY_TABLE.to_string())
            .schema(history_schema()?)
            .partition_spec(spec)
            .properties([("commit.retry.num-retries".to_string(), "20".to_string())])
            .build();
        match catalog.create_table(&self.meta, creation).await {
            Ok(t) => {
                tracing::info!(table = %self.ident, "created the migration history table");
                Ok(t)
            }
            Err(e) => match self.load().await? {
                Some(t) => Ok(t),
                None => Err(e.into()),
            },
        }
    }

    /// Adds the optional `checksum` / `details` columns a row needs and the table lacks (a
    /// table created by the Python iceberg-ops or by an older iceberg-ops), by schema evolution;
    /// rows written before read them as null.
    async fn ensure_columns(&self, table: Table, needed: &[&str]) -> Result<Table> {
        let schema = table.metadata().current_schema();
        let missing: Vec<&str> = needed
            .iter()
            .copied()
            .filter(|c| schema.field_by_name(c).is_none())
            .collect();
        if missing.is_empty() {
            return Ok(table);
        }
        let mut evolve = EvolveSchemaBuilder::new(&self.handle, self.ident.clone());
        for c in &missing {
            evolve = evolve.add_column(*c, Type::Primitive(PrimitiveType::String));
        }
        if let Err(e) = evolve.await {
            // Another writer may have added them first: trust a second look.
            let reloaded = self.load().await?;
            let ok = reloaded.as_ref().is_some_and(|t| {
                let s = t.metadata().current_schema();
                missing.iter().all(|c| s.field_by_name(c).is_some())
            });
            if !ok {
                return Err(e.into());
            }
        } else {
            tracing::info!(table = %self.ident, columns = ?missing, "added history columns");
        }
        self.load().await?.ok_or_else(|| RunnerError::History {
            table: self.ident.to_string(),
            message: "the table disappeared while columns were added to it".into(),
        })
    }

    /// Replaces the row of `(entry.version, namespace)` with `entry`, validated against every
    /// history commit after `since` (the snapshot the caller's decision was read at): if another
    /// process changed this key since, [`ConcurrentMigrationError`] and nothing lands. Returns
    /// the new snapshot's parent and id.
    pub async fn write(
        &self,
        namespace: &str,
        entry: &Entry,
        since: Option<i64>,
    ) -> Result<Option<(Option<i64>, Option<i64>)>> {
        let table = self.ensure_table().await?;
        let details = (!entry.details.is_empty())
            .then(|| serde_json::to_string(&entry.details))
            .transpose()
            .map_err(|e| RunnerError::History {
                table: self.ident.to_string(),
                message: format!("cannot encode details: {e}"),
            })?;
        let mut needed = Vec::new();
        if entry.checksum.is_some() {
            needed.push("checksum");
        }
        if details.is_some() {
            needed.push(DETAILS_COLUMN);
        }
        let table = self.ensure_columns(table, &needed).await?;
        let applied_at = entry.applied_at.clone().unwrap_or_else(|| {
            chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false)
        });
        let error: Option<String> = entry
            .error
            .as_ref()
            .map(|e| e.chars().take(MAX_ERROR_CHARS).collect());
        let batch = self.row_batch(
            &table,
            &[
                ("version", Some(entry.version.as_str())),
                ("namespace", Some(namespace)),
                ("description", Some(entry.description.as_str())),
                ("applied_at", Some(applied_at.as_str())),
                ("status", Some(entry.status.as_str())),
                ("error", error.as_deref()),
                ("checksum", entry.checksum.as_deref()),
                (DETAILS_COLUMN, details.as_deref()),
            ],
        )?;
        let written =
            ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
        self.commit(
            namespace,
            &entry.version,
            entry.status.as_str(),
            since,
            Some(written),
        )
        .await
    }

    /// Deletes the row of `(version, namespace)` (`repair` clearing a failed attempt), validated
    /// as [`Self::write`].
    pub async fn remove(&self, namespace: &str, version: &str, since: Option<i64>) -> Result<()> {
        if self.load().await?.is_none() {
            return Ok(());
        }
        self.commit(namespace, version, "removed", since, None)
            .await
            .map(|_| ())
    }

    async fn commit(
        &self,
        namespace: &str,
        version: &str,
        what: &str,
        since: Option<i64>,
        written: Option<ops_core::write::WrittenFiles>,
    ) -> Result<Option<(Option<i64>, Option<i64>)>> {
        let key = key_filter(version, namespace);
        let properties = HashMap::from([
            (
                ops_core::ops::OPERATION_PROPERTY.to_string(),
                "migration-history".to_string(),
            ),
            (
                "iceberg-ops.history-key".to_string(),
                format!("{namespace}/{version}={what}"),
            ),
        ]);
        let mut builder = OverwriteBuilder::new(&self.handle, self.ident.clone())
            .overwrite_filter(key.clone())
            .conflict_detection_filter(key)
            .validate_from_snapshot(since)
            .with_properties(properties);
        if let Some(written) = written {
            builder = builder.add_written(written);
        }
        let (new_table, _) = match builder.await {
            Ok(r) => r,
            Err(ops_core::Error::CommitConflict { detail, .. }) => {
                return Err(ConcurrentMigrationError(format!(
                    "another process changed migration {version} of namespace '{namespace}' in \
                     {} since this run read it ({detail}); its {what} status was not recorded. \
                     Run one migration job per namespace at a time",
                    self.ident
                ))
                .into());
            }
            Err(e) => return Err(e.into()),
        };
        tracing::info!(
            version,
            namespace,
            status = what,
            "recorded migration history"
        );
        let md = new_table.metadata();
        Ok(Some((
            md.current_snapshot().and_then(|s| s.parent_snapshot_id()),
            md.current_snapshot_id(),
        )))
    }

    fn row_batch(&self, table: &Table, values: &[(&str, Option<&str>)]) -> Result<RecordBatch> {
        let schema = ops_core::write::table_arrow_schema(table)?;
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
        for f in schema.fields() {
            let v = values
                .iter()
                .find(|(n, _)| n == f.name())
                .and_then(|(_, v)| *v);
            if v.is_none() && !f.is_nullable() {
                return Err(RunnerError::History {
                    table: self.ident.to_string(),
                    message: format!("required column '{}' has no value", f.name()),
                });
            }
            let column: ArrayRef = match f.data_type() {
                DataType::LargeUtf8 => Arc::new(LargeStringArray::from(vec![v])),
                DataType::Utf8 => Arc::new(StringArray::from(vec![v])),
                other => {
                    return Err(RunnerError::History {
                        table: self.ident.to_string(),
                        message: format!("column '{}' is {other}, not a string", f.name()),
                    });
                }
            };
            columns.push(column);
        }
        Ok(RecordBatch::try_new(schema, columns).map_err(ops_core::Error::from)?)
    }
}

fn strings(c: &ArrayRef) -> Option<Vec<Option<String>>> {
    if let Some(a) = c.as_any().downcast_ref::<StringArray>() {
        return Some(
            (0..a.len())
                .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
                .collect(),
        );
    }
    let a = c.as_any().downcast_ref::<LargeStringArray>()?;
    Some(
        (0..a.len())
            .map(|i| (!a.is_null(i)).then(|| a.value(i).to_string()))
            .collect(),
    )
}
