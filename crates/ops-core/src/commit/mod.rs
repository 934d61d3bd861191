//! The one place that does what iceberg 0.10.1 keeps private: commit a table change.
//!
//! iceberg's `TableCommit` cannot be built outside the crate, so operations describe their change
//! with the same vocabulary — [`TableRequirement`]s that must hold on the base and
//! [`TableUpdate`]s to apply — and [`commit`] makes it atomic per catalog kind:
//!
//! - **REST**: POST the requirements and updates to the table endpoint; the server applies them
//!   and answers 409 on a stale requirement.
//! - **SQL, Glue, S3 Tables**: apply the updates to the base metadata
//!   (`TableMetadata::into_builder` + `TableUpdate::apply`), write the next metadata file, then
//!   swap the pointer only if it still names the base: a compare-and-swap `UPDATE` on
//!   `iceberg_tables` (exactly one row, as iceberg-catalog-sql and PyIceberg do), Glue
//!   `UpdateTable` guarded by the table's `VersionId`, or S3 Tables
//!   `UpdateTableMetadataLocation` with its `versionToken`.
//!
//! A stale base is [`Error::CommitConflict`]. [`commit_with_retry`] reloads the table, lets the
//! operation re-validate and rebuild its change on the new base, and tries again with the backoff
//! of the table's `commit.retry.*` properties — so another writer's commit is never lost: it is
//! either rebased onto or reported.
//!
//! When official iceberg-rust actions can express an operation, this module is what they replace.

mod aws;
mod first_metadata;
mod glue;
mod metadata_json;
mod rest;
mod s3tables;
mod sql;

pub use aws::aws_message;
pub(crate) use aws::config_loader as aws_config_loader;
pub use aws::sdk_config as aws_sdk_config;

use std::collections::HashMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use iceberg::spec::TableProperties;
use iceberg::table::Table;
use iceberg::{MetadataLocation, TableIdent, TableRequirement, TableUpdate};

pub use first_metadata::keep_field_ids;

use crate::catalog::{CatalogHandle, CatalogKind, CatalogSettings};
use crate::{Error, Result};

/// A change to one table: requirements on its base and updates to apply, as one commit.
#[derive(Debug, Clone, Default)]
pub struct TableChange {
    /// Must hold on the base metadata, or the commit is a conflict.
    pub requirements: Vec<TableRequirement>,
    /// Applied in order.
    pub updates: Vec<TableUpdate>,
    /// Files this change wrote that only its snapshot references (manifests, a manifest list,
    /// rewritten data files): deleted when the commit is refused, so a lost attempt leaves no
    /// orphans. Files the caller wrote and hands in stay the caller's.
    pub written: Vec<String>,
}

/// The per-catalog clients a commit needs, created on first use and shared by a handle's clones.
#[derive(Debug, Default)]
pub struct Committer {
    sql: tokio::sync::OnceCell<sql::SqlPointer>,
    glue: tokio::sync::OnceCell<glue::GluePointer>,
    s3tables: tokio::sync::OnceCell<s3tables::S3TablesPointer>,
}

/// The client that swaps a table's metadata pointer, for the catalogs where ops-core writes the
/// metadata file itself.
enum Pointer<'a> {
    Sql(&'a sql::SqlPointer),
    Glue(&'a glue::GluePointer),
    S3Tables(&'a s3tables::S3TablesPointer),
}

/// Outcome of one pointer swap.
enum Swap {
    Done,
    Conflict(String),
}

/// Commits `change` on top of `base`, atomically; returns the table at the new metadata.
///
/// Fails with [`Error::CommitConflict`] when `base` is no longer the table's current metadata
/// or a requirement does not hold.
pub async fn commit(handle: &CatalogHandle, base: &Table, change: TableChange) -> Result<Table> {
    let written = change.written.clone();
    let result = commit_inner(handle, base, change).await;
    if let Err(Error::CommitConflict { .. } | Error::InvalidInput(_)) = &result {
        // Refused outright: nothing references what the attempt wrote.
        delete_quietly(base.file_io(), &written).await;
    }
    result
}

/// Deletes `paths`, logging (not failing on) a file that cannot be removed.
pub async fn delete_quietly(file_io: &iceberg::io::FileIO, paths: &[String]) {
    for path in paths {
        if let Err(e) = file_io.delete(path).await {
            tracing::warn!(%path, error = %e, "could not remove a file that no commit references");
        }
    }
}

/// Refuses Iceberg v3 tables: their metadata (row lineage, `initial-default` /
/// `write-default`, deletion vectors) is not preserved by ops-core's writers.
pub fn refuse_v3(table: &Table) -> Result<()> {
    if table.metadata().format_version() == iceberg::spec::FormatVersion::V3 {
        return Err(Error::InvalidInput(format!(
            "{} is an Iceberg v3 table; iceberg-ops changes only v1 and v2 tables (v3 \
             row lineage and column defaults would not be preserved)",
            base_name(table)
        )));
    }
    Ok(())
}

fn base_name(table: &Table) -> String {
    table.identifier().to_string()
}

async fn commit_inner(handle: &CatalogHandle, base: &Table, change: TableChange) -> Result<Table> {
    let ident = base.identifier().clone();
    refuse_v3(base)?;
    for requirement in &change.requirements {
        if let Err(e) = requirement.check(Some(base.metadata())) {
            return Err(Error::CommitConflict {
                table: ident.to_string(),
                detail: e.message().to_string(),
            });
        }
    }
    let settings = handle.settings();
    let committer = handle.committer();
    // Resolve (and connect) the pointer before writing anything, so an unsupported catalog or
    // an unreachable service leaves no orphaned metadata file behind.
    let pointer = match settings.kind() {
        CatalogKind::Rest => {
            let client = handle.rest_client().ok_or_else(|| Error::Catalog {
                catalog: settings.name().to_string(),
                message: "this REST catalog handle has no client to commit through".into(),
            })?;
            return rest::commit(client, handle, base, change).await;
        }
        _ if !commits_supported(settings) => return Err(unsupported(settings)),
        CatalogKind::Memory => return Err(unsupported(settings)),
        CatalogKind::Sql => Pointer::Sql(
            committer
                .sql
                .get_or_try_init(|| sql::SqlPointer::connect(settings))
                .await?,
        ),
        CatalogKind::Glue => Pointer::Glue(
            committer
                .glue
                .get_or_try_init(|| glue::GluePointer::connect(settings))
                .await?,
        ),
        CatalogKind::S3Tables => Pointer::S3Tables(
            committer
                .s3tables
                .get_or_try_init(|| s3tables::S3TablesPointer::connect(settings))
                .await?,
        ),
    };

    let base_location = base.metadata_location_result()?.to_string();
    let mut builder = base
        .metadata()
        .clone()
        .into_builder(Some(base_location.clone()));
    for update in change.updates {
        builder = update.apply(builder)?;
    }
    let built = builder.build()?;
    let metadata = built.metadata;
    let new_location = write_metadata(base, &base_location, &metadata, &built.changes).await?;

    let swap = match pointer {
        Pointer::Sql(p) => {
            p.swap(settings.name(), &ident, &base_location, &new_location)
                .await
        }
        Pointer::Glue(p) => p.swap(&ident, &base_location, &new_location).await,
        Pointer::S3Tables(p) => p.swap(&ident, &base_location, &new_location).await,
    };
    match swap {
        Ok(Swap::Done) => {
            tracing::debug!(table = %ident, location = %new_location, "committed");
            let committed = Table::builder()
                .identifier(ident.clone())
                .metadata(metadata.clone())
                .metadata_location(new_location.clone())
                .file_io(base.file_io().clone())
                .runtime(iceberg::Runtime::try_current()?)
                .build()?;
            if matches!(pointer, Pointer::Sql(_)) {
                remember_committed(settings, committed.clone());
            }
            if delete_after_commit(&metadata) {
                // Java's write.metadata.delete-after-commit.enabled: metadata files that fell
                // out of the log (write.metadata.previous-versions-max) are removed.
                let expired: Vec<String> = built
                    .expired_metadata_logs
                    .iter()
                    .map(|l| l.metadata_file.clone())
                    .collect();
                delete_quietly(base.file_io(), &expired).await;
            }
            Ok(committed)
        }
        Ok(Swap::Conflict(detail)) => {
            // An SDK retry of an update whose response was lost reports a conflict although the
            // first try landed (Java's checkCommitStatus): look before deleting anything.
            // Landed means: the table points at our file, or did and another writer has
            // committed on top since (our file is in its metadata log). If the table cannot be
            // read, nobody knows, and the file must stay: deleting it could leave the pointer
            // on a missing file.
            let current = match handle.catalog().load_table(&ident).await {
                Ok(current) => current,
                Err(e) => {
                    return Err(Error::CommitStateUnknown {
                        table: ident.to_string(),
                        detail: format!(
                            "the catalog reported a conflict ({detail}) and the table could not \
                             be reloaded to check whether the commit landed: {e}"
                        ),
                    });
                }
            };
            let landed = current.metadata_location() == Some(new_location.as_str())
                || current
                    .metadata()
                    .metadata_log()
                    .iter()
                    .any(|l| l.metadata_file == new_location);
            if landed {
                tracing::info!(table = %ident, "a conflict was reported but the commit landed");
                return Ok(current);
            }
            // Nobody points at the file we wrote: remove it so failed attempts leave no litter.
            let _ = base.file_io().delete(&new_location).await;
            Err(Error::CommitConflict {
                table: ident.to_string(),
                detail,
            })
        }
        // The outcome is unknown: keep the file, a retry or an operator may need it.
        Err(e) => Err(e),
    }
}

/// Writes `metadata` as the version after `base_location`'s, beside it or under
/// `write.metadata.path` (Java's property); returns its location.
async fn write_metadata(
    base: &Table,
    base_location: &str,
    metadata: &iceberg::spec::TableMetadata,
    changes: &[TableUpdate],
) -> Result<String> {
    let custom = metadata
        .properties()
        .get("write.metadata.path")
        .map(|d| d.trim().trim_end_matches('/').to_string())
        .filter(|d| !d.is_empty());
    let (dir, file) = base_location
        .rsplit_once('/')
        .unwrap_or(("", base_location));
    let version: i32 = file
        .split_once('-')
        .and_then(|(v, _)| v.parse().ok())
        .unwrap_or(0);
    let dir = custom.unwrap_or_else(|| dir.to_string());
    // A refused commit must be `InvalidInput` so its manifests are cleaned up.
    let codec = metadata.metadata_compression_codec().map_err(|e| {
        Error::InvalidInput(format!(
            "{}: write.metadata.compression-codec is not usable ({e}); set it to none or gzip",
            base.identifier()
        ))
    })?;
    if dir.ends_with("/metadata") && codec != iceberg::compression::CompressionCodec::None {
        // iceberg's own writer compresses (write.metadata.compression-codec).
        let location = MetadataLocation::from_str(&format!(
            "{dir}/{:0>5}-{}.metadata.json",
            version + 1,
            uuid::Uuid::new_v4()
        ))?
        .with_new_metadata(metadata);
        metadata.write_to(base.file_io(), &location).await?;
        return Ok(location.to_string());
    }
    if codec != iceberg::compression::CompressionCodec::None {
        return Err(Error::InvalidInput(format!(
            "{}: write.metadata.compression-codec is only supported when the metadata \
             directory ends in /metadata (write.metadata.path is '{dir}')",
            base.identifier()
        )));
    }
    let location = format!(
        "{dir}/{:0>5}-{}.metadata.json",
        version + 1,
        uuid::Uuid::new_v4()
    );
    let (bytes, refs) = metadata_json::to_json(base_location, metadata, changes)?;
    base.file_io()
        .new_output(&location)?
        .write(bytes.into())
        .await?;
    if let Some(refs) = refs {
        metadata_json::remember(&location, refs);
    }
    Ok(location)
}

fn delete_after_commit(metadata: &iceberg::spec::TableMetadata) -> bool {
    metadata
        .properties()
        .get("write.metadata.delete-after-commit.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The table as this process last committed it, by SQL catalog (uri and name) and identifier.
static COMMITTED: LazyLock<Mutex<HashMap<(String, TableIdent), Table>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// How many tables' last commits are kept.
const COMMITTED_KEPT: usize = 256;

fn committed_key(settings: &CatalogSettings, ident: &TableIdent) -> (String, TableIdent) {
    let uri = settings.iceberg_property("uri").unwrap_or_default();
    (format!("{uri}\u{0}{}", settings.name()), ident.clone())
}

fn remember_committed(settings: &CatalogSettings, table: Table) {
    let mut kept = COMMITTED.lock().unwrap_or_else(|p| p.into_inner());
    if kept.len() >= COMMITTED_KEPT {
        kept.clear();
    }
    kept.insert(committed_key(settings, table.identifier()), table);
}

/// The table's current version. On a SQL catalog whose pointer still names the file this
/// process committed last, that commit's metadata is reused instead of reading and parsing the
/// file again (Java's `refresh` skips an unchanged location too): at a thousand snapshots the
/// parse alone cost as much as a whole commit at ten.
pub async fn load_current(handle: &CatalogHandle, ident: &TableIdent) -> Result<Table> {
    let settings = handle.settings();
    if settings.kind() == CatalogKind::Sql && commits_supported(settings) {
        let kept = COMMITTED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&committed_key(settings, ident))
            .cloned();
        if let Some(table) = kept {
            let pointer = handle
                .committer()
                .sql
                .get_or_try_init(|| sql::SqlPointer::connect(settings))
                .await?;
            let current = pointer.current(settings.name(), ident).await?;
            if current.is_some() && current.as_deref() == table.metadata_location() {
                return Ok(table);
            }
        }
    }
    Ok(handle.catalog().load_table(ident).await?)
}

/// Whether ops-core can commit to this catalog: not to a memory catalog, nor to a SQL catalog
/// on an in-memory SQLite database (private to the catalog's own connection, so the
/// compare-and-swap connection would see an empty database).
fn commits_supported(settings: &CatalogSettings) -> bool {
    match settings.kind() {
        CatalogKind::Memory => false,
        CatalogKind::Sql => settings.iceberg_property("uri") != Some("sqlite::memory:"),
        _ => true,
    }
}

fn unsupported(settings: &CatalogSettings) -> Error {
    if settings.kind() == CatalogKind::Sql {
        return Error::InvalidInput(format!(
            "catalog '{}' is an in-memory SQLite database, which only the catalog's own \
             connection can see, so iceberg-ops cannot commit to it; use a file instead, e.g. \
             uri: sqlite:///path/to/catalog.db (or the embedded 'sqlite' catalog)",
            settings.name()
        ));
    }

    Error::InvalidInput(format!(
        "catalog '{}' is a memory catalog, which cannot take ops-core commits (iceberg keeps \
         its commit API private); use the embedded 'sqlite' catalog instead",
        settings.name()
    ))
}

/// Retry policy from the table's `commit.retry.*` properties.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (`commit.retry.num-retries`, default 4).
    pub num_retries: usize,
    /// First backoff (`commit.retry.min-wait-ms`, default 100).
    pub min_wait: Duration,
    /// Backoff cap (`commit.retry.max-wait-ms`, default 60 000).
    pub max_wait: Duration,
    /// Give up after this long (`commit.retry.total-timeout-ms`, default 1 800 000).
    pub total_timeout: Duration,
}

impl RetryPolicy {
    /// The policy `table`'s properties ask for.
    pub fn of(table: &Table) -> Result<Self> {
        let p = TableProperties::try_from(table.metadata().properties())?;
        Ok(Self {
            num_retries: p.commit_num_retries,
            min_wait: Duration::from_millis(p.commit_min_retry_wait_ms),
            max_wait: Duration::from_millis(p.commit_max_retry_wait_ms),
            total_timeout: Duration::from_millis(p.commit_total_retry_timeout_ms),
        })
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let exp = self
            .min_wait
            .saturating_mul(2u32.saturating_pow(attempt.min(20)));
        let capped = exp.min(self.max_wait);
        // Up to 25% jitter so racing writers do not retry in lockstep.
        let jitter = capped.mul_f64(f64::from(uuid::Uuid::new_v4().as_u128() as u8) / 1020.0);
        capped + jitter
    }
}

/// Loads `ident`, asks `build` for a change on that base, and commits it; on a conflict,
/// reloads and asks again (so `build` re-validates against the other writer's result), with
/// the table's `commit.retry.*` backoff. `build` returning `None` means nothing to commit.
pub async fn commit_with_retry<F, Fut>(
    handle: &CatalogHandle,
    ident: &TableIdent,
    build: F,
) -> Result<Table>
where
    F: FnMut(Table) -> Fut,
    Fut: Future<Output = Result<Option<TableChange>>>,
{
    commit_with_retry_from(handle, ident, None, build).await
}

/// [`commit_with_retry`], whose first attempt builds on `known` — a version of the table the
/// caller already holds, e.g. the one its previous commit returned — instead of loading it
/// again: loading parses the whole metadata JSON, whose size grows with every snapshot kept.
/// If `known` is stale the pointer swap (or the REST server) refuses the attempt, and the table
/// is loaded and the change rebuilt at once, without counting a retry or backing off, as Java's
/// `TableOperations` refresh after a stale commit.
pub async fn commit_with_retry_from<F, Fut>(
    handle: &CatalogHandle,
    ident: &TableIdent,
    known: Option<Table>,
    mut build: F,
) -> Result<Table>
where
    F: FnMut(Table) -> Fut,
    Fut: Future<Output = Result<Option<TableChange>>>,
{
    // Refuse before `build` runs: planning a snapshot already writes manifests.
    if !commits_supported(handle.settings()) {
        return Err(unsupported(handle.settings()));
    }
    if let Some(t) = &known
        && t.identifier() != ident
    {
        return Err(Error::InvalidInput(format!(
            "the table handed in as the base is {}, not {ident}",
            t.identifier()
        )));
    }
    let started = Instant::now();
    let mut attempt: u32 = 0;
    let mut known = known;
    loop {
        let from_known = known.is_some();
        let base = match known.take() {
            Some(t) => t,
            None => load_current(handle, ident).await?,
        };
        refuse_v3(&base)?;
        let policy = RetryPolicy::of(&base)?;
        let Some(change) = build(base.clone()).await? else {
            if from_known {
                // "Nothing to do" was decided on a possibly stale version: decide on the
                // current one.
                continue;
            }
            return Ok(base);
        };
        match commit(handle, &base, change).await {
            Err(Error::CommitConflict { table, detail }) if from_known => {
                tracing::debug!(%table, %detail, "the known version was stale; reloading");
            }
            Err(Error::CommitConflict { table, detail })
                if (attempt as usize) < policy.num_retries
                    && started.elapsed() < policy.total_timeout =>
            {
                let wait = policy.backoff(attempt);
                tracing::info!(%table, %detail, attempt, ?wait, "commit conflict; retrying on the new base");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            // Out of retries against other writers: say so, and what sets how many there are.
            Err(Error::CommitConflict { table, detail }) => {
                return Err(Error::CommitConflict {
                    table,
                    detail: format!(
                        "{detail} (gave up after {} attempt(s) in {:.1}s, a retry rebasing on \
                         the writer that committed first; the table's commit.retry.num-retries \
                         ({}) and commit.retry.total-timeout-ms ({}) set how long a commit \
                         keeps trying: raise them, or run when fewer writers commit)",
                        attempt + 1,
                        started.elapsed().as_secs_f64(),
                        policy.num_retries,
                        policy.total_timeout.as_millis()
                    ),
                });
            }
            other => return other,
        }
    }
}

/// [`commit_with_retry`] for changes planned from the table's metadata alone (schema, spec, sort
/// order, refs, properties): `plan` sees each base's metadata and returns the change, or `None`
/// when there is nothing to do.
pub async fn commit_metadata_change<F>(
    handle: &CatalogHandle,
    ident: &TableIdent,
    mut plan: F,
) -> Result<Table>
where
    F: FnMut(&iceberg::spec::TableMetadata) -> Result<Option<TableChange>>,
{
    commit_with_retry(handle, ident, |base| {
        std::future::ready(plan(base.metadata()))
    })
    .await
}
