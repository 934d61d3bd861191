//! A folder of Parquet files or a Glue Hive table as an Iceberg table to read from: the source
//! of a copy (`migrate-data --source-path URI`, `--source glue:DATABASE.TABLE`), so the
//! migrator — renames, coercions, a new partition spec, checkpointed resume, `verify` — reads
//! it as it reads any Iceberg table.
//!
//! The source is snapshotted ([`crate::snapshot`]) into a private SQLite catalog kept in a
//! folder of the caller's (the CLI keeps it beside its embedded catalog, keyed by the source):
//! the table `source.files`, `gc.enabled=false`, its files left where they are. Opened again,
//! the same folder's table is reused — a resumed job reads the same table — after adding the
//! files that arrived since (`add_files --new-only`); files gone since are refused, naming them
//! (the copy would fail reading them). Its row counts come from the footers, so `verify
//! --method row_count` compares the destination with the files, and `partition_hash` reads
//! them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use iceberg::TableIdent;
use iceberg::table::Table;
use ops_core::catalog::{CatalogConfig, CatalogDefinition};
use ops_core::{CatalogFactory, CatalogHandle, Error, Result};

use crate::add_files::AddFilesBuilder;
use crate::glue::GlueClient;
use crate::snapshot::SnapshotBuilder;

/// The staged table's property naming what it was made from (JSON list of the names).
pub const SOURCE_PROPERTY: &str = "iceberg-ops.import.source";
/// The private catalog's name.
pub const CATALOG: &str = "import-source";

/// The source as an Iceberg table (see the module docs).
#[derive(Clone)]
pub struct StagedSource {
    /// The private catalog holding it.
    pub handle: CatalogHandle,
    /// `source.files`.
    pub ident: TableIdent,
    /// The table, with the files found this time.
    pub table: Table,
    /// Whether this open created it (else it was reused).
    pub created: bool,
    /// Files added this time (all of them when created).
    pub added: usize,
}

/// A SQLite catalog `name` of this process's own in `dir` (its database and warehouse), whose
/// FileIO reads object stores with `io_from`'s `s3.*` and `client.*` properties: where a source
/// is staged, or a migration's table is built before it is swapped in.
pub(crate) async fn private_catalog(
    io_from: &CatalogHandle,
    dir: &Path,
    name: &str,
) -> Result<CatalogHandle> {
    let mut props: BTreeMap<String, String> = io_from
        .settings()
        .properties()
        .iter()
        .filter(|(k, _)| k.starts_with("s3.") || k.starts_with("client."))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    props.insert("type".into(), "sql".into());
    props.insert(
        "uri".into(),
        format!("sqlite:///{}/catalog.db?mode=rwc", dir.display()),
    );
    props.insert(
        "warehouse".into(),
        format!("file://{}/warehouse", dir.display()),
    );
    let mut config = CatalogConfig::empty();
    config.insert(CatalogDefinition::inline(name, props));
    CatalogFactory::new(config).open(name).await
}

/// Stages a source (see the module docs).
#[must_use = "a StageBuilder does nothing until awaited"]
pub struct StageBuilder {
    io_from: CatalogHandle,
    names: Vec<String>,
    glue: Option<GlueClient>,
    dir: PathBuf,
}

impl StageBuilder {
    /// Staging `names` (folders, files, globs, or one `glue:DATABASE.TABLE`) in a private
    /// catalog under `dir`, reading object stores with `io_from`'s `s3.*` and `client.*`
    /// properties (and its Glue, when it is a Glue catalog).
    pub fn new(io_from: &CatalogHandle, names: Vec<String>, dir: impl AsRef<Path>) -> Self {
        Self {
            io_from: io_from.clone(),
            names,
            glue: None,
            dir: dir.as_ref().to_path_buf(),
        }
    }

    /// The Glue catalog a `glue:` name is read through.
    pub fn glue(mut self, glue: GlueClient) -> Self {
        self.glue = Some(glue);
        self
    }

    /// Stages the source, or reuses and refreshes its table.
    pub async fn open(self) -> Result<StagedSource> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            Error::InvalidInput(format!(
                "cannot make the staging folder {}: {e}",
                self.dir.display()
            ))
        })?;
        let handle = private_catalog(&self.io_from, &self.dir, CATALOG).await?;
        let ident = TableIdent::from_strs(["source", "files"])?;
        let recorded = serde_json::to_string(&self.names)
            .map_err(|e| Error::InvalidInput(format!("the source's names: {e}")))?;
        if !handle.catalog().table_exists(&ident).await? {
            let mut snapshot = SnapshotBuilder::new(&handle, ident.clone())
                .from(self.names.clone())
                .with_properties(HashMap::from([(SOURCE_PROPERTY.to_string(), recorded)]));
            if let Some(glue) = self.glue.clone().or(self.own_glue().await) {
                snapshot = snapshot.glue(glue);
            }
            let (table, m) = snapshot.await?;
            let table = match table {
                Some(t) => t,
                None => ops_core::commit::load_current(&handle, &ident).await?,
            };
            return Ok(StagedSource {
                handle,
                ident,
                table,
                created: true,
                added: m.add.files.len(),
            });
        }
        let table = ops_core::commit::load_current(&handle, &ident).await?;
        if self.no_longer_listed(&handle, &table).await? {
            // A partition dropped or moved (its files stay where they were): the source no
            // longer holds rows the staged table would still read. Staged anew.
            tracing::info!(dir = %self.dir.display(), "the source changed; staging it anew");
            handle.catalog().drop_table(&ident).await?;
            return Box::pin(self.open()).await;
        }
        let made_from = table.metadata().properties().get(SOURCE_PROPERTY).cloned();
        if made_from.as_deref() != Some(recorded.as_str()) {
            return Err(Error::InvalidInput(format!(
                "the staged source in {} was made from {}, not {recorded}; remove that folder \
                 to stage this source",
                self.dir.display(),
                made_from.as_deref().unwrap_or("another source")
            )));
        }
        let mut add = AddFilesBuilder::new(&handle, ident.clone())
            .from(self.names.clone())
            .new_only(true);
        if let Some(glue) = self.glue.clone().or(self.own_glue().await) {
            add = add.glue(glue);
        }
        let (table, m) = add.await?;
        if let Some(gone) = m.disappeared.first() {
            return Err(Error::InvalidInput(format!(
                "{} file(s) of the source are gone since it was staged (e.g. {gone}); a copy \
                 would fail reading them. Remove {} to stage the source anew",
                m.disappeared.len(),
                self.dir.display()
            )));
        }
        Ok(StagedSource {
            handle,
            ident,
            table,
            created: false,
            added: m.files.len(),
        })
    }

    /// Whether the staged table lists a file the source does not any more (a Glue partition
    /// dropped or moved, a file no longer matched): files gone from disk are reported by the
    /// add instead.
    async fn no_longer_listed(&self, handle: &CatalogHandle, table: &Table) -> Result<bool> {
        let Some(snapshot) = table.metadata().current_snapshot() else {
            return Ok(false);
        };
        let glue = match &self.glue {
            Some(g) => Some(g.clone()),
            None => self.own_glue().await,
        };
        let any =
            std::collections::HashSet::from([crate::source::ANY_PARTITION_COLUMN.to_string()]);
        let listed = crate::add_files::expand_sources(
            handle,
            &self.names,
            &any,
            table.file_io().config().props(),
            glue.as_ref(),
        )
        .await?;
        // 128-bit hashes of the paths, not the paths.
        let mut hashes = std::collections::HashSet::new();
        for f in listed.files.into_iter() {
            hashes.insert(ops_core::ops::streamed::path_hash(&f?.path));
        }
        let cache = ops_core::ops::ManifestCache::new(table);
        // A file the listing no longer finds but that still exists is no longer the source's
        // (one gone from disk is the add's to report).
        let io = table.file_io();
        let mut unlisted = Vec::new();
        ops_core::ops::each_live_data_file(snapshot, &cache, |live| {
            if !hashes.contains(&ops_core::ops::streamed::path_hash(live.file.file_path())) {
                unlisted.push(live.file.file_path().to_string());
            }
            Ok(())
        })
        .await?;
        for path in unlisted {
            if io.exists(&path).await.unwrap_or(true) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The Glue of `io_from` when it is a Glue catalog and a name needs one.
    async fn own_glue(&self) -> Option<GlueClient> {
        if !self
            .names
            .iter()
            .any(|n| n.starts_with(crate::glue::GLUE_PREFIX))
        {
            return None;
        }
        GlueClient::of(&self.io_from).await.ok()
    }
}
