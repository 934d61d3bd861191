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

use std::collections::{BTreeSet, HashMap};
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
use ops_core::ops::overwrite::OverwriteBuilder;
use serde::Serialize;

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
    /// Checksum of the migration file when the row was written.
    pub checksum: Option<String>,
}

/// The history table's schema: the seed's six columns, then `checksum`.
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
#[derive(Debug, Clone)]
pub struct MigrationHistory {
    handle: CatalogHandle,
    meta: NamespaceIdent,
    ident: TableIdent,
    /// The snapshot up to which this handle knows the table: `None` = never read,
    /// `Some(None)` = read while absent or empty.
    known: Arc<Mutex<Option<Option<i64>>>>,
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
            known: Arc::new(Mutex::new(None)),
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

    /// The current row of every version in `namespace`, ordered by version; empty when the
    /// table does not exist. Remembers the snapshot read, which later writes validate from.
    pub async fn get_all(&self, namespace: &str) -> Result<Vec<HistoryRow>> {
        let Some(table) = self.load().await? else {
            self.set_known(None);
            return Ok(Vec::new());
        };
        let snapshot = table.metadata().current_snapshot_id();
        let filter = Reference::new("namespace").equal_to(Datum::string(namespace));
        let mut stream = ops_core::scan::scan_filtered(&table, snapshot, Some(filter)).await?;
        let mut rows = Vec::new();
        while let Some(batch) = stream.try_next().await? {
            self.rows_of(&batch, namespace, &mut rows)?;
        }
        rows.sort_by(|a, b| a.version.cmp(&b.version));
        self.set_known(snapshot);
        Ok(rows)
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
        let checksums = col("checksum")?.unwrap_or(none);
        for i in 0..batch.num_rows() {
            // The scan filter prunes by statistics; rows of other namespaces may remain.
            if namespaces[i].as_deref() != Some(namespace) {
                continue;
            }
            let status_text = statuses[i].clone().unwrap_or_default();
            let status = Status::parse(&status_text)
                .ok_or_else(|| bad(format!("unknown status '{status_text}'")))?;
            out.push(HistoryRow {
                version: versions[i].clone().unwrap_or_default(),
                namespace: namespace.to_string(),
                description: descriptions[i].clone(),
                applied_at: applied[i].clone().unwrap_or_default(),
                status,
                error: errors[i].clone(),
                checksum: checksums[i].clone(),
            });
        }
        Ok(())
    }

    /// Records `version` of `namespace` as applied.
    pub async fn record_applied(
        &self,
        version: &str,
        namespace: &str,
        description: &str,
        checksum: Option<&str>,
    ) -> Result<()> {
        self.record(
            version,
            namespace,
            description,
            Status::Applied,
            None,
            checksum,
        )
        .await
    }

    /// Records `version` of `namespace` as rolled back.
    pub async fn record_rolled_back(
        &self,
        version: &str,
        namespace: &str,
        description: &str,
        checksum: Option<&str>,
    ) -> Result<()> {
        self.record(
            version,
            namespace,
            description,
            Status::RolledBack,
            None,
            checksum,
        )
        .await
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
        let error: String = error.chars().take(MAX_ERROR_CHARS).collect();
        self.record(
            version,
            namespace,
            description,
            Status::Failed,
            Some(&error),
            checksum,
        )
        .await
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

    async fn record(
        &self,
        version: &str,
        namespace: &str,
        description: &str,
        status: Status,
        error: Option<&str>,
        checksum: Option<&str>,
    ) -> Result<()> {
        let table = self.ensure_table().await?;
        let head = table.metadata().current_snapshot_id();
        // Never read: this write depends on nothing older than what it just loaded.
        let since = self.known().unwrap_or(head);
        let applied_at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, false);
        let batch = self.row_batch(
            &table,
            &[
                ("version", Some(version)),
                ("namespace", Some(namespace)),
                ("description", Some(description)),
                ("applied_at", Some(applied_at.as_str())),
                ("status", Some(status.as_str())),
                ("error", error),
                ("checksum", checksum),
            ],
        )?;
        let written =
            ops_core::write::write_files(&table, futures::stream::iter([Ok(batch)])).await?;
        let key = key_filter(version, namespace);
        let properties = HashMap::from([
            (
                ops_core::ops::OPERATION_PROPERTY.to_string(),
                "migration-history".to_string(),
            ),
            (
                "iceberg-ops.history-key".to_string(),
                format!("{namespace}/{version}={status}"),
            ),
        ]);
        let result = OverwriteBuilder::new(&self.handle, self.ident.clone())
            .overwrite_filter(key.clone())
            .conflict_detection_filter(key)
            .validate_from_snapshot(since)
            .add_written(written)
            .with_properties(properties)
            .await;
        let (new_table, _) = match result {
            Ok(r) => r,
            Err(ops_core::Error::CommitConflict { detail, .. }) => {
                return Err(ConcurrentMigrationError(format!(
                    "another process changed migration {version} of namespace '{namespace}' in \
                     {} since this run read it ({detail}); its {status} status was not recorded. \
                     Run one migration job per namespace at a time",
                    self.ident
                ))
                .into());
            }
            Err(e) => return Err(e.into()),
        };
        // Nothing foreign landed between what we knew and our snapshot: we know the new head.
        let parent = new_table
            .metadata()
            .current_snapshot()
            .and_then(|s| s.parent_snapshot_id());
        if parent == since {
            self.set_known(new_table.metadata().current_snapshot_id());
        }
        tracing::info!(version, namespace, %status, "recorded migration history");
        Ok(())
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
