//! `migrate`: a Glue Hive table replaced, under its own name and at its own location, by an
//! Iceberg table over the same files — Java's `MigrateTableSparkAction` without Spark, on the
//! Glue Data Catalog (which AWS's guide says Spark's `migrate` does not support).
//!
//! Glue cannot rename a table, so the steps differ from Java's rename-then-create:
//!
//! 1. **Backup.** The table's definition and its partitions are copied to
//!    `<name>_backup_` (Java's suffix; `--backup-name`), marked as the backup of this table.
//! 2. **Stage.** The Iceberg table is built off to the side, in a private SQLite catalog that
//!    lives only for the run: schema from the Glue columns, identity partitions over the
//!    partition keys ([`crate::snapshot`]'s Glue inference), location the Hive table's, the
//!    backup's files added ([`crate::add_files`]). Its metadata is written under
//!    `<location>/metadata`, as Java's.
//! 3. **Swap.** One `UpdateTable` of the original, guarded by the `VersionId` read in step 1,
//!    turns it into the Iceberg table: `table_type=ICEBERG`, `metadata_location` the staged
//!    table's, no partition keys. A reader sees the Hive table or the whole Iceberg table, never
//!    an empty one. The table's properties say `migrated=true` and, while the backup shares the
//!    files, `gc.enabled=false`, so our expiry and orphan cleanup never delete them.
//! 4. **Finish.** The original's old Hive partition entries are removed; with `--drop-backup`
//!    the backup too, and `gc.enabled` is set back to `true` (the files are the Iceberg
//!    table's alone).
//!
//! A failure before the swap deletes the backup and what the stage wrote: the Hive table is
//! as it was. A run stopped anywhere (killed) leaves the Hive table or the Iceberg table —
//! never neither — and running it again finishes: before the swap it starts over (replacing a
//! backup it made), after it only finishes step 4. Refused, naming why: tables that are not
//! Glue Hive tables of Parquet files, bucketed tables (as Java), a backup name taken by a
//! table that is not this table's backup.

use std::collections::{HashMap, HashSet};
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use aws_sdk_glue::types::{
    Column, PartitionInput, PartitionValueList, StorageDescriptor, Table as GlueRaw, TableInput,
};
use iceberg::spec::{Transform, UnboundPartitionSpec};
use iceberg::table::Table;
use iceberg::{NamespaceIdent, TableCreation, TableIdent};
use ops_core::commit::aws_message;
use ops_core::ops::markers::GC_ENABLED;
use ops_core::ops::properties::PropertiesBuilder;
use ops_core::{CatalogHandle, Error, Result};

use crate::add_files::{AddFilesBuilder, AddFilesMetrics};
use crate::glue::{GlueClient, GlueTable, is_iceberg};

/// The Glue parameter marking a backup: the `database.table` it is the backup of.
pub const BACKUP_OF: &str = "iceberg-ops.backup-of";
/// The Glue parameter naming the run that made a backup (`host:pid:started-ms`): a second run
/// of the same migration refuses while the first may still be running, and a run only ever
/// deletes a backup it made itself.
pub const BACKUP_RUN: &str = "iceberg-ops.backup-run";
/// How long a backup made by a run on another host is taken as a running migration's.
const RUN_LEASE_MS: i64 = 60 * 60 * 1000;
/// The Iceberg table property Java's migrate sets.
pub const MIGRATED: &str = "migrated";
/// Java's backup suffix (`MigrateTableSparkAction.BACKUP_SUFFIX`), lower-cased as Glue
/// stores names.
pub const BACKUP_SUFFIX: &str = "_backup_";

/// The failpoints of a migration (debug builds only, [`ops_core::failpoint`]).
pub mod points {
    /// The backup holds the table and its partitions; nothing staged yet.
    pub const AFTER_BACKUP: &str = "import-migrate:after-backup";
    /// The Iceberg table is staged (its metadata written); the original is still Hive.
    pub const BEFORE_SWAP: &str = "import-migrate:before-swap";
    /// The original is the Iceberg table; its old partition entries and the backup are left.
    pub const AFTER_SWAP: &str = "import-migrate:after-swap";
}

/// What a migration did.
#[derive(Debug, Default)]
pub struct MigrateMetrics {
    /// The table, `database.table`.
    pub table: String,
    /// Its backup, `database.name`.
    pub backup: String,
    /// Whether the backup was dropped (`--drop-backup`).
    pub backup_dropped: bool,
    /// Whether the backup is there after the run (kept; not dropped by an earlier run).
    pub backup_kept: bool,
    /// The table was migrated by an earlier run: only its finish was done (if anything).
    pub already_migrated: bool,
    /// The Iceberg table's metadata file after the swap.
    pub metadata_location: Option<String>,
    /// Its columns, `name: type`.
    pub columns: Vec<String>,
    /// Its partition columns (identity).
    pub partition_columns: Vec<String>,
    /// The files added.
    pub add: AddFilesMetrics,
    /// Old Hive partition entries removed from the original.
    pub partitions_removed: usize,
    /// Old Hive partition entries Glue did not remove (harmless; the next run tries again).
    pub partitions_left: usize,
    /// Partition entries added to the Hive table between the migration's last listing and its
    /// swap (their values): their files are not in the Iceberg table (add them with
    /// `import add-files`).
    pub partitions_not_migrated: Vec<Vec<String>>,
}

/// Migrates a Glue Hive table in place (see the module docs).
#[must_use = "a MigrateBuilder does nothing until awaited"]
pub struct MigrateBuilder {
    handle: CatalogHandle,
    database: String,
    table: String,
    backup_name: Option<String>,
    drop_backup: bool,
    concurrency: usize,
    /// This run, as its backup records it ([`BACKUP_RUN`]).
    run: String,
}

impl MigrateBuilder {
    /// Migrating `database.table` of `handle`, a Glue catalog.
    pub fn new(
        handle: &CatalogHandle,
        database: impl Into<String>,
        table: impl Into<String>,
    ) -> Self {
        Self {
            handle: handle.clone(),
            database: database.into(),
            table: table.into(),
            backup_name: None,
            drop_backup: false,
            concurrency: 8,
            run: ops_core::run_mark::this_run(),
        }
    }

    /// The backup's name (default `<table>_backup_`).
    pub fn backup_name(mut self, name: impl Into<String>) -> Self {
        self.backup_name = Some(name.into());
        self
    }

    /// Drops the backup once the table is migrated.
    pub fn drop_backup(mut self, drop: bool) -> Self {
        self.drop_backup = drop;
        self
    }

    /// Footers read at once (default 8).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    async fn execute(self) -> Result<(Table, MigrateMetrics)> {
        let glue = GlueClient::of(&self.handle).await.map_err(|e| {
            Error::InvalidInput(format!(
                "import migrate replaces a table in a Glue catalog: give one with --catalog \
                 ({e})"
            ))
        })?;
        let (db, name) = (self.database.as_str(), self.table.as_str());
        let backup = self
            .backup_name
            .clone()
            .unwrap_or_else(|| format!("{name}{BACKUP_SUFFIX}"))
            .to_lowercase();
        if backup.is_empty()
            || backup.len() > 255
            || !backup
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(Error::InvalidInput(format!(
                "--backup-name '{backup}' is no Glue table name: give letters, digits, `_` or \
                 `-` (at most 255), without a database (the backup is made in {db})"
            )));
        }
        if backup.eq_ignore_ascii_case(name) {
            return Err(Error::InvalidInput(format!(
                "the backup of {db}.{name} cannot have its name; give another --backup-name"
            )));
        }
        let ident = TableIdent::from_strs([db, name])?;
        let mut metrics = MigrateMetrics {
            table: format!("{db}.{name}"),
            backup: format!("{db}.{backup}"),
            ..Default::default()
        };
        let Some(source) = glue.get_table(db, name).await? else {
            return Err(Error::InvalidInput(format!(
                "glue:{db}.{name}: no such table in Glue catalog '{}'",
                self.handle.name()
            )));
        };
        if is_iceberg(&source) {
            // An earlier run swapped it (or it was never Hive).
            let table = ops_core::commit::load_current(&self.handle, &ident).await?;
            if table
                .metadata()
                .properties()
                .get(MIGRATED)
                .map(String::as_str)
                != Some("true")
            {
                return Err(Error::InvalidInput(format!(
                    "{db}.{name} is an Iceberg table already (not one a migration made)"
                )));
            }
            metrics.already_migrated = true;
            metrics.metadata_location = table.metadata_location().map(str::to_string);
            describe(&table, &mut metrics);
            let table = self.finish(&glue, &backup, table, &mut metrics).await?;
            return Ok((table, metrics));
        }
        if let Some(of) = backup_of(&source) {
            return Err(Error::InvalidInput(format!(
                "{db}.{name} is the backup of {of} that its migration keeps, not a table to \
                 migrate (drop it with import migrate --source glue:{of} --drop-backup)"
            )));
        }
        let partitions = glue.get_partitions(db, name).await?;
        let hive = GlueTable::of(&metrics.table, &source, partitions.clone())?;
        let Some(version) = source.version_id().map(str::to_string) else {
            return Err(Error::InvalidInput(format!(
                "Glue returned no VersionId for {db}.{name}, so its replacement cannot be \
                 guarded against a concurrent change; refusing to migrate"
            )));
        };
        make_backup(&glue, db, name, &backup, &source, &partitions, &self.run).await?;
        ops_core::failpoint::hit(points::AFTER_BACKUP);
        let staged = match self.stage(&glue, &hive, &backup, &mut metrics).await {
            Ok(staged) => staged,
            Err(e) => {
                self.restore(&glue, &backup, None).await;
                return Err(e);
            }
        };
        ops_core::failpoint::hit(points::BEFORE_SWAP);
        // Glue's VersionId moves with UpdateTable, not with partition calls: a partition a
        // Hive job or a crawler added (or dropped) meanwhile would not stop the swap, and its
        // files would be in neither table. Checked here, just before.
        let now = glue.get_partitions(db, name).await?;
        if partition_keys(&now) != partition_keys(&partitions) {
            self.restore(&glue, &backup, Some(&staged.table)).await;
            return Err(Error::CommitConflict {
                table: metrics.table.clone(),
                detail: "its partitions changed while it was being migrated (a Hive job or a \
                         crawler added or dropped one); nothing was changed, run the migration \
                         again"
                    .into(),
            });
        }
        let location = staged.table.metadata_location().map(str::to_string);
        let swapped = match &location {
            Some(l) => swap(&glue, db, name, &source, &version, l, &staged.table).await,
            None => Err(Error::InvalidInput(
                "the staged table has no metadata file".into(),
            )),
        };
        if let Err(e) = swapped {
            // An error does not say the swap did not land: an answer lost after Glue applied
            // it (and the SDK's retry then refused for the VersionId the first attempt
            // changed) looks the same. Only the table tells; nothing is removed while it
            // might point at the staged metadata.
            match swap_outcome(&glue, db, name, location.as_deref(), &e).await {
                Some(true) => {
                    tracing::info!(table = %ident, error = %e,
                        "the swap landed although its answer was an error");
                }
                Some(false) => {
                    self.restore(&glue, &backup, Some(&staged.table)).await;
                    return Err(e);
                }
                None => {
                    return Err(Error::CommitStateUnknown {
                        table: metrics.table.clone(),
                        detail: format!(
                            "the swap to Iceberg failed ({e}) and whether it landed is unknown; \
                             nothing was removed. Run the migration again: it finishes the \
                             migration, or starts it over"
                        ),
                    });
                }
            }
        }
        ops_core::failpoint::hit(points::AFTER_SWAP);
        tracing::info!(table = %ident, backup = %metrics.backup, "Hive table swapped for Iceberg");
        metrics.metadata_location = location;
        let table = ops_core::commit::load_current(&self.handle, &ident).await?;
        let table = self.finish(&glue, &backup, table, &mut metrics).await?;
        Ok((table, metrics))
    }

    /// Step 2: the Iceberg table built in a private catalog over the backup's files.
    async fn stage(
        &self,
        glue: &GlueClient,
        hive: &GlueTable,
        backup: &str,
        metrics: &mut MigrateMetrics,
    ) -> Result<Staged> {
        let dir = tempfile::tempdir().map_err(|e| {
            Error::InvalidInput(format!(
                "cannot make a staging folder for the migration: {e}"
            ))
        })?;
        // Listed before the stage writes its metadata under the table's location.
        let found = hive
            .files(&HashSet::new(), self.handle.file_io().config().props())
            .await?;
        let staging =
            crate::staged::private_catalog(&self.handle, dir.path(), "migrate-staging").await?;
        let namespace = NamespaceIdent::new(hive.database.clone());
        staging
            .catalog()
            .create_namespace(&namespace, HashMap::new())
            .await?;
        let arrow = arrow_schema::Schema::new(hive.fields()?);
        let schema = iceberg::arrow::arrow_schema_to_schema_auto_assign_ids(&arrow)?;
        let mut spec = UnboundPartitionSpec::builder();
        for (k, _) in &hive.partition_keys {
            let Some(field) = crate::columns::column_named(&schema, k) else {
                continue;
            };
            spec = spec.add_partition_field(field.id, field.name.clone(), Transform::Identity)?;
        }
        let properties = HashMap::from([
            (GC_ENABLED.to_string(), "false".to_string()),
            (MIGRATED.to_string(), "true".to_string()),
        ]);
        let created = staging
            .catalog()
            .create_table(
                &namespace,
                TableCreation::builder()
                    .name(hive.name.clone())
                    .location(hive.location.trim_end_matches('/').to_string())
                    .schema(schema)
                    .partition_spec(spec.build())
                    .properties(properties)
                    .build(),
            )
            .await?;
        let ident = created.identifier().clone();
        let table = if found.files.is_empty() {
            created
        } else {
            let added = AddFilesBuilder::new(&staging, ident.clone())
                .from([format!(
                    "{}{}.{backup}",
                    crate::glue::GLUE_PREFIX,
                    hive.database
                )])
                .glue(glue.clone())
                .concurrency(self.concurrency)
                .await;
            match added {
                Ok((table, add)) => {
                    metrics.add = add;
                    table
                }
                Err(e) => {
                    if let Ok(t) = ops_core::commit::load_current(&staging, &ident).await {
                        discard_metadata(&t).await;
                    }
                    return Err(e);
                }
            }
        };
        describe(&table, metrics);
        Ok(Staged { table, _dir: dir })
    }

    /// Undoes steps 1 and 2 after a failure before the swap: the backup and what the stage
    /// wrote are deleted (the original was not changed).
    async fn restore(&self, glue: &GlueClient, backup: &str, staged: Option<&Table>) {
        if let Some(t) = staged {
            discard_metadata(t).await;
        }
        // Only a backup this run made: another run's is not ours to delete.
        let ours = match glue.get_table(&self.database, backup).await {
            Ok(Some(b)) => {
                b.parameters()
                    .and_then(|p| p.get(BACKUP_RUN))
                    .map(String::as_str)
                    == Some(self.run.as_str())
            }
            _ => false,
        };
        if ours && let Err(e) = delete_table(glue, &self.database, backup).await {
            tracing::warn!(backup, error = %e, "could not delete the backup of a failed migration");
        }
    }

    /// Step 4: the original's old partition entries removed; the backup dropped when asked,
    /// and `gc.enabled` back to `true` then.
    async fn finish(
        &self,
        glue: &GlueClient,
        backup: &str,
        table: Table,
        metrics: &mut MigrateMetrics,
    ) -> Result<Table> {
        let (db, name) = (self.database.as_str(), self.table.as_str());
        // Only the entries the backup holds copies of: one added since is no entry of ours.
        let backed_up: HashSet<Vec<String>> = match glue.get_table(db, backup).await? {
            Some(_) => partition_keys(&glue.get_partitions(db, backup).await?)
                .into_iter()
                .map(|(values, _)| values)
                .collect(),
            None => HashSet::new(),
        };
        let (old, not_ours): (Vec<Vec<String>>, Vec<Vec<String>>) = glue
            .get_partitions(db, name)
            .await?
            .iter()
            .map(|p| p.values().to_vec())
            .partition(|v| backed_up.contains(v));
        if !not_ours.is_empty() {
            // Added between the last listing and the swap: their files are in neither table.
            tracing::warn!(table = %metrics.table, partitions = ?not_ours,
                "partition entries added during the migration; their files are not in the \
                 Iceberg table: add them with import add-files");
            metrics.partitions_not_migrated = not_ours;
        }
        for chunk in old.chunks(25) {
            match delete_partitions(glue, db, name, chunk).await {
                Ok(()) => metrics.partitions_removed += chunk.len(),
                // The table is migrated; a leftover entry only clutters Glue (readers of the
                // Iceberg table ignore it), and the next run removes it.
                Err(e) => {
                    tracing::warn!(table = %metrics.table, error = %e,
                        "old Hive partition entries left in Glue; run the migration again");
                    metrics.partitions_left += chunk.len();
                }
            }
        }
        if !self.drop_backup {
            metrics.backup_kept = glue.get_table(db, backup).await?.is_some();
            return Ok(table);
        }
        match glue.get_table(db, backup).await? {
            Some(b) => {
                if backup_of(&b).as_deref() != Some(&metrics.table) {
                    return Err(Error::InvalidInput(format!(
                        "{db}.{backup} is not the backup of {}; it was left alone",
                        metrics.table
                    )));
                }
                delete_table(glue, db, backup).await?;
            }
            // Dropped by an earlier run, which then set gc.enabled: nothing left to do.
            None if table
                .metadata()
                .properties()
                .get(GC_ENABLED)
                .map(String::as_str)
                == Some("true") =>
            {
                return Ok(table);
            }
            None => {
                return Err(Error::InvalidInput(format!(
                    "{db}.{backup} does not exist, so no backup of {} was dropped (gc.enabled \
                     stays false): give the backup's name with --backup-name",
                    metrics.table
                )));
            }
        }
        metrics.backup_dropped = true;
        // The files are the Iceberg table's alone now: expiry and orphan cleanup may delete.
        PropertiesBuilder::new(&self.handle, table.identifier().clone())
            .set(GC_ENABLED, "true")
            .await
    }
}

/// The staged table and the folder its private catalog lives in (removed when dropped).
struct Staged {
    table: Table,
    _dir: tempfile::TempDir,
}

fn describe(table: &Table, metrics: &mut MigrateMetrics) {
    let md = table.metadata();
    metrics.columns = ops_core::display::columns_text(md.current_schema());
    metrics.partition_columns = md
        .default_partition_spec()
        .fields()
        .iter()
        .map(|f| f.name.clone())
        .collect();
}

/// Partitions as (values, location): what a migration compares before its swap.
fn partition_keys(
    partitions: &[aws_sdk_glue::types::Partition],
) -> std::collections::BTreeSet<(Vec<String>, String)> {
    partitions
        .iter()
        .map(|p| {
            let location = p
                .storage_descriptor()
                .and_then(StorageDescriptor::location)
                .unwrap_or("")
                .to_string();
            (p.values().to_vec(), location)
        })
        .collect()
}

/// Removes the partition entries `values` of `db.name` (25 at most, Glue's limit).
async fn delete_partitions(
    glue: &GlueClient,
    db: &str,
    name: &str,
    values: &[Vec<String>],
) -> Result<()> {
    let lists: Vec<PartitionValueList> = values
        .iter()
        .map(|v| {
            PartitionValueList::builder()
                .set_values(Some(v.clone()))
                .build()
        })
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| Error::InvalidInput(format!("partition values: {e}")))?;
    let out = glue
        .client()
        .batch_delete_partition()
        .set_catalog_id(glue.catalog_id().map(str::to_string))
        .database_name(db)
        .table_name(name)
        .set_partitions_to_delete(Some(lists))
        .send()
        .await
        .map_err(|e| (glue.failed(format!("BatchDeletePartition {db}.{name}")))(aws_message(&e)))?;
    match out.errors().first() {
        Some(err) => Err(Error::InvalidInput(format!(
            "removing partition entry {:?} of {db}.{name} failed: {:?}",
            err.partition_values(),
            err.error_detail()
        ))),
        None => Ok(()),
    }
}

/// Whether a swap answered with `error` landed: `Some(true)` when the table points at
/// `ours`, `Some(false)` when it is still the Hive table, `None` when that cannot be told. A
/// refusal by `VersionId` is read once (a lost first attempt would show as landed); any other
/// error a few times, a second apart, as Java's `checkCommitStatus` re-reads: a request that
/// timed out may still be applied.
async fn swap_outcome(
    glue: &GlueClient,
    db: &str,
    name: &str,
    ours: Option<&str>,
    error: &Error,
) -> Option<bool> {
    let reads = if matches!(error, Error::CommitConflict { .. }) {
        1
    } else {
        3
    };
    let mut outcome = None;
    for attempt in 0..reads {
        if attempt > 0 {
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
        outcome = match glue.get_table(db, name).await {
            Ok(Some(now)) if is_iceberg(&now) => {
                if metadata_location_of(&now).as_deref() == ours {
                    return Some(true);
                }
                // Another writer's Iceberg table under this name: not ours to judge.
                return None;
            }
            Ok(Some(_)) => Some(false),
            _ => None,
        };
    }
    outcome
}

/// The metadata file a Glue Iceberg table points at.
fn metadata_location_of(t: &GlueRaw) -> Option<String> {
    t.parameters()
        .and_then(|p| p.get("metadata_location"))
        .cloned()
}

/// The `database.table` a Glue table is the backup of, if it is one.
fn backup_of(t: &GlueRaw) -> Option<String> {
    t.parameters().and_then(|p| p.get(BACKUP_OF)).cloned()
}

/// Step 1: `source`'s definition and `partitions` copied to `backup` (a backup of this table
/// left by a stopped run is replaced: the Hive table, not yet swapped, is the truth).
async fn make_backup(
    glue: &GlueClient,
    db: &str,
    name: &str,
    backup: &str,
    source: &GlueRaw,
    partitions: &[aws_sdk_glue::types::Partition],
    run: &str,
) -> Result<()> {
    let of = format!("{db}.{name}");
    if let Some(existing) = glue.get_table(db, backup).await? {
        if backup_of(&existing).as_deref() != Some(&of) {
            return Err(Error::InvalidInput(format!(
                "{db}.{backup} exists and is not a backup of {of}; give another --backup-name"
            )));
        }
        let made_by = existing
            .parameters()
            .and_then(|p| p.get(BACKUP_RUN))
            .cloned()
            .unwrap_or_default();
        if ops_core::run_mark::may_be_alive(&made_by, RUN_LEASE_MS) {
            return Err(Error::InvalidInput(format!(
                "another migration of {of} may be running: it made the backup {db}.{backup} \
                 ({made_by}). Wait for it; if it was stopped, run again once it is gone (a run \
                 on this host is seen gone at once, one on another host after an hour)"
            )));
        }
        // Left by a stopped run: the Hive table, not swapped, is the truth.
        delete_table(glue, db, backup).await?;
    }
    let mut parameters = source.parameters().cloned().unwrap_or_default();
    parameters.insert(BACKUP_OF.to_string(), of.clone());
    parameters.insert(BACKUP_RUN.to_string(), run.to_string());
    let input = TableInput::builder()
        .name(backup)
        .set_description(source.description().map(str::to_string))
        .set_owner(source.owner().map(str::to_string))
        .retention(source.retention())
        .set_storage_descriptor(source.storage_descriptor().cloned())
        .set_partition_keys(Some(source.partition_keys().to_vec()))
        .set_table_type(source.table_type().map(str::to_string))
        .set_parameters(Some(parameters))
        .build()
        .map_err(|e| Error::InvalidInput(format!("the backup's definition: {e}")))?;
    glue.client()
        .create_table()
        .set_catalog_id(glue.catalog_id().map(str::to_string))
        .database_name(db)
        .table_input(input)
        .send()
        .await
        .map_err(|e| (glue.failed(format!("CreateTable {db}.{backup}")))(aws_message(&e)))?;
    for chunk in partitions.chunks(100) {
        let inputs: Vec<PartitionInput> = chunk
            .iter()
            .map(|p| {
                PartitionInput::builder()
                    .set_values(Some(p.values().to_vec()))
                    .set_storage_descriptor(p.storage_descriptor().cloned())
                    .set_parameters(p.parameters().cloned())
                    .set_last_access_time(p.last_access_time().cloned())
                    .build()
            })
            .collect();
        let out = glue
            .client()
            .batch_create_partition()
            .set_catalog_id(glue.catalog_id().map(str::to_string))
            .database_name(db)
            .table_name(backup)
            .set_partition_input_list(Some(inputs))
            .send()
            .await
            .map_err(|e| {
                (glue.failed(format!("BatchCreatePartition {db}.{backup}")))(aws_message(&e))
            });
        let failed = match out {
            Ok(out) => out.errors().first().map(|e| {
                Error::InvalidInput(format!(
                    "copying partition {:?} of {of} to its backup failed: {:?}",
                    e.partition_values(),
                    e.error_detail()
                ))
            }),
            Err(e) => Some(e),
        };
        if let Some(e) = failed {
            let _ = delete_table(glue, db, backup).await;
            return Err(e);
        }
    }
    tracing::info!(table = %of, backup, partitions = partitions.len(), "backup made");
    Ok(())
}

/// Step 3: the original turned into the Iceberg table at `metadata_location`, guarded by
/// `version` (Glue refuses the update if the table changed since it was read).
async fn swap(
    glue: &GlueClient,
    db: &str,
    name: &str,
    source: &GlueRaw,
    version: &str,
    metadata_location: &str,
    staged: &Table,
) -> Result<()> {
    // The table's own Glue parameters stay (as Java's GlueTableOperations keeps them), less
    // Spark's datasource ones: Spark would read a table saying `provider=parquet` as Parquet.
    let mut parameters: HashMap<String, String> = source
        .parameters()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| {
            !(k.starts_with("spark.sql.sources.") || k == "spark.sql.partitionProvider")
        })
        .collect();
    parameters.insert("table_type".into(), "ICEBERG".into());
    parameters.insert("metadata_location".into(), metadata_location.to_string());
    let sd = source.storage_descriptor();
    // Iceberg tables in Glue list every column (partition columns too) with the field id, as
    // iceberg-rust's and Java's Glue catalogs write them, and no partition keys.
    let schema = staged.metadata().current_schema().clone();
    let columns: Vec<Column> = sd
        .map(StorageDescriptor::columns)
        .unwrap_or_default()
        .iter()
        .chain(source.partition_keys())
        .map(|c| {
            let mut c = c.clone();
            if let Some(f) = crate::columns::column_named(&schema, &c.name) {
                let mut params = c.parameters.take().unwrap_or_default();
                params.insert("iceberg.field.id".into(), f.id.to_string());
                params.insert("iceberg.field.optional".into(), (!f.required).to_string());
                params.insert("iceberg.field.current".into(), "true".into());
                c.parameters = Some(params);
            }
            c
        })
        .collect();
    let storage = StorageDescriptor::builder()
        .location(staged.metadata().location())
        .set_columns(Some(columns))
        .build();
    let input = TableInput::builder()
        .name(name)
        .set_description(source.description().map(str::to_string))
        .set_owner(source.owner().map(str::to_string))
        .table_type("EXTERNAL_TABLE")
        .storage_descriptor(storage)
        .set_partition_keys(Some(Vec::new()))
        .set_parameters(Some(parameters))
        .build()
        .map_err(|e| Error::InvalidInput(format!("the Iceberg table's definition: {e}")))?;
    match glue
        .client()
        .update_table()
        .set_catalog_id(glue.catalog_id().map(str::to_string))
        .database_name(db)
        .table_input(input)
        .version_id(version)
        .send()
        .await
    {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_concurrent_modification_exception()) =>
        {
            Err(Error::CommitConflict {
                table: format!("{db}.{name}"),
                detail: format!(
                    "the Hive table changed while it was being migrated (Glue VersionId {version} \
                     is no longer current); nothing was changed, run the migration again"
                ),
            })
        }
        Err(e) => Err((glue.failed(format!("UpdateTable {db}.{name}")))(
            aws_message(&e),
        )),
    }
}

async fn delete_table(glue: &GlueClient, db: &str, name: &str) -> Result<()> {
    glue.client()
        .delete_table()
        .set_catalog_id(glue.catalog_id().map(str::to_string))
        .database_name(db)
        .name(name)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| (glue.failed(format!("DeleteTable {db}.{name}")))(aws_message(&e)))
}

/// Deletes the metadata a staged table wrote (its metadata files, manifest lists and
/// manifests; never a data file): for a stage no swap took.
async fn discard_metadata(table: &Table) {
    let md = table.metadata();
    let mut paths: Vec<String> = md
        .metadata_log()
        .iter()
        .map(|l| l.metadata_file.clone())
        .chain(table.metadata_location().map(str::to_string))
        .collect();
    let cache = ops_core::ops::ManifestCache::new(table);
    for snapshot in md.snapshots() {
        paths.push(snapshot.manifest_list().to_string());
        if let Ok(list) = cache.manifest_list(snapshot).await {
            paths.extend(list.iter().map(|m| m.manifest_path.clone()));
        }
    }
    ops_core::commit::delete_quietly(table.file_io(), &paths).await;
}

impl IntoFuture for MigrateBuilder {
    type Output = Result<(Table, MigrateMetrics)>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
