//! Turns a catalog definition into a connected iceberg catalog.
//!
//! 1. find the definition (config file, environment, or the embedded `sqlite` default);
//! 2. decide its kind (`type`, else inferred from `uri` as PyIceberg does);
//! 3. check required keys and translate PyIceberg key names into the ones each iceberg-rust
//!    catalog builder reads — all before any connection, so a bad config fails fast;
//! 4. build the catalog with the OpenDAL storage factory (iceberg 0.10.1 has no storage of its own).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use iceberg::{Catalog, CatalogBuilder};

use super::config::{CatalogConfig, CatalogDefinition, Origin};
use super::redact::Redacted;
use super::{CatalogKind, ConfigError};
use crate::storage::LocalWritesStorageFactory;
use crate::{Error, Result};

/// Name of the catalog that needs no configuration.
pub const EMBEDDED_DEFAULT: &str = "sqlite";
/// Directory (under the working directory) that holds the embedded default catalog.
pub const EMBEDDED_DIR: &str = ".iceberg-ops";

/// A validated catalog definition: everything needed to connect, and later to commit.
#[derive(Clone)]
pub struct CatalogSettings {
    name: String,
    kind: CatalogKind,
    origin: Origin,
    properties: BTreeMap<String, String>,
    iceberg_properties: BTreeMap<String, String>,
}

impl CatalogSettings {
    /// Catalog name (lower-cased).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Catalog kind.
    pub fn kind(&self) -> CatalogKind {
        self.kind
    }
    /// Where the definition came from.
    pub fn origin(&self) -> &Origin {
        &self.origin
    }
    /// A property under its PyIceberg name, as configured (defaults filled in).
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(String::as_str)
    }
    /// A property under the name the iceberg-rust catalog builder reads (e.g. the SQL `uri`
    /// in sqlx form, Glue's `region_name`).
    pub fn iceberg_property(&self, key: &str) -> Option<&str> {
        self.iceberg_properties.get(key).map(String::as_str)
    }
    /// Every property under its PyIceberg name, as configured (defaults filled in): what
    /// PyIceberg's `load_catalog` takes to open the same catalog.
    pub fn properties(&self) -> &BTreeMap<String, String> {
        &self.properties
    }
    /// Every property passed to the iceberg-rust builder.
    pub fn iceberg_properties(&self) -> &BTreeMap<String, String> {
        &self.iceberg_properties
    }
}

impl fmt::Debug for CatalogSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogSettings")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("origin", &self.origin)
            .field("properties", &Redacted(&self.properties))
            .finish_non_exhaustive()
    }
}

/// A connected catalog plus the settings later layers need to commit to it.
#[derive(Clone)]
pub struct CatalogHandle {
    catalog: Arc<dyn Catalog>,
    settings: CatalogSettings,
    committer: Arc<crate::commit::Committer>,
    /// A REST catalog's client, which commits go through too (same trust and credentials).
    rest: Option<Arc<super::rest::RestClient>>,
}

impl CatalogHandle {
    /// The iceberg catalog.
    pub fn catalog(&self) -> &Arc<dyn Catalog> {
        &self.catalog
    }
    /// Its validated settings.
    pub fn settings(&self) -> &CatalogSettings {
        &self.settings
    }
    /// Its kind.
    pub fn kind(&self) -> CatalogKind {
        self.settings.kind
    }
    /// Its name.
    pub fn name(&self) -> &str {
        &self.settings.name
    }
    /// A FileIO from the catalog's own properties (`s3.*` and the rest), for files no table
    /// holds yet: the sources of an import that creates its table. A table's own FileIO
    /// (vended credentials included) is its `Table::file_io`.
    pub fn file_io(&self) -> iceberg::io::FileIO {
        iceberg::io::FileIOBuilder::new(Arc::new(LocalWritesStorageFactory::new()))
            .with_props(self.settings.iceberg_properties.clone())
            .build()
    }
    /// The clients ops-core commits through (created on first use, shared by clones).
    pub(crate) fn committer(&self) -> &crate::commit::Committer {
        &self.committer
    }
    /// The REST client reads went through (REST catalogs only).
    pub(crate) fn rest_client(&self) -> Option<&Arc<super::rest::RestClient>> {
        self.rest.as_ref()
    }
}

impl fmt::Debug for CatalogHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogHandle")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Builds catalogs by name from PyIceberg-compatible configuration.
///
/// ```no_run
/// # async fn demo() -> ops_core::Result<()> {
/// // No configuration needed: `sqlite` is the embedded default under ./.iceberg-ops/.
/// let handle = ops_core::CatalogFactory::build("sqlite").await?;
/// let namespaces = handle.catalog().list_namespaces(None).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CatalogFactory {
    config: CatalogConfig,
    base_dir: PathBuf,
}

impl CatalogFactory {
    /// Opens catalog `name` using the process's PyIceberg configuration.
    pub async fn build(name: &str) -> Result<CatalogHandle> {
        Self::from_process(None)?.open(name).await
    }

    /// A factory over the process's configuration, or over `explicit_file` (the CLI's `--config`).
    pub fn from_process(explicit_file: Option<&Path>) -> Result<Self> {
        Ok(Self::new(CatalogConfig::load(explicit_file)?))
    }

    /// A factory over the given definitions; relative paths resolve against the working directory.
    pub fn new(config: CatalogConfig) -> Self {
        let base_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self { config, base_dir }
    }

    /// Resolve relative paths (and the embedded default) against `dir` instead of the working
    /// directory.
    pub fn with_base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = dir.into();
        self
    }

    /// The definitions this factory knows.
    pub fn config(&self) -> &CatalogConfig {
        &self.config
    }

    /// Validates the definition of `name` without connecting to anything.
    pub fn resolve(&self, name: &str) -> Result<CatalogSettings, ConfigError> {
        let lowered = name.trim().to_lowercase();
        if lowered.is_empty() {
            return Err(ConfigError::CatalogNotFound {
                name: name.to_string(),
                searched: self.config.searched(),
                env_name: String::new(),
            });
        }
        let mut definition = match self.config.get(&lowered) {
            Some(d) => d.clone(),
            None if lowered == EMBEDDED_DEFAULT => self.embedded_default(),
            None => {
                return Err(ConfigError::CatalogNotFound {
                    name: lowered.clone(),
                    searched: self.config.searched(),
                    env_name: lowered.to_uppercase().replace('-', "_"),
                });
            }
        };
        // Definitions are found case-insensitively (PyIceberg lowercases its config keys), but
        // the catalog keeps the name it was opened by, as PyIceberg's `load_catalog(name)`
        // does: a SQL catalog's rows are keyed by that exact name.
        definition.name = name.trim().to_string();
        settings_for(definition, &self.base_dir)
    }

    /// Opens catalog `name`, creating the embedded default's files on first use.
    pub async fn open(&self, name: &str) -> Result<CatalogHandle> {
        let settings = self.resolve(name)?;
        open_settings(settings).await
    }

    fn embedded_default(&self) -> CatalogDefinition {
        let dir = self.base_dir.join(EMBEDDED_DIR);
        CatalogDefinition {
            name: EMBEDDED_DEFAULT.to_string(),
            properties: BTreeMap::from([
                ("type".to_string(), "sql".to_string()),
                (
                    "uri".to_string(),
                    format!("sqlite:///{}", dir.join("catalog.db").display()),
                ),
                (
                    "warehouse".to_string(),
                    format!("file://{}", dir.join("warehouse").display()),
                ),
            ]),
            origin: Origin::EmbeddedDefault,
        }
    }
}

/// Connects to the catalog described by already-validated settings.
pub async fn open_settings(settings: CatalogSettings) -> Result<CatalogHandle> {
    prepare_embedded(&settings)?;
    let props: HashMap<String, String> = settings
        .iceberg_properties
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let storage = Arc::new(LocalWritesStorageFactory::new());
    let name = settings.name.clone();
    let open_err = |source: iceberg::Error| Error::CatalogOpen {
        catalog: settings.name.clone(),
        kind: settings.kind.to_string(),
        source: Box::new(source),
    };
    tracing::debug!(catalog = %name, kind = %settings.kind, "opening catalog");
    if settings.kind == CatalogKind::Sql
        && let Some(uri) = props.get("uri").filter(|u| u.starts_with("postgres://"))
        && let Err(reason) = postgres_reachable(uri).await
    {
        return Err(open_err(iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            reason,
        )));
    }
    let mut rest_client = None;
    let catalog = match settings.kind {
        CatalogKind::Sql => {
            load(
                iceberg_catalog_sql::SqlCatalogBuilder::default(),
                storage,
                name,
                props,
            )
            .await
        }
        CatalogKind::Rest => {
            let client = connect_rest(&settings).await?;
            rest_client = Some(client.clone());
            Ok(Arc::new(super::rest::RestCatalog::new(client, storage)) as Arc<dyn Catalog>)
        }
        CatalogKind::Glue => {
            load(
                iceberg_catalog_glue::GlueCatalogBuilder::default(),
                storage,
                name,
                props,
            )
            .await
        }
        CatalogKind::S3Tables => {
            // The SDK client the commits use too: the same AWS_CA_BUNDLE trust, which the
            // catalog crate's own client would not have.
            let config =
                crate::commit::aws_sdk_config(&settings, settings.iceberg_property("endpoint_url"))
                    .await?;
            let builder = iceberg_catalog_s3tables::S3TablesCatalogBuilder::default()
                .with_client(aws_sdk_s3tables::Client::new(&config));
            load(builder, storage, name, props).await
        }
        CatalogKind::Memory => {
            load(
                iceberg::memory::MemoryCatalogBuilder::default(),
                storage,
                name,
                props,
            )
            .await
        }
    }
    .map_err(open_err)?;
    Ok(CatalogHandle {
        catalog,
        settings,
        committer: Arc::default(),
        rest: rest_client,
    })
}

/// How long [`postgres_reachable`] waits for a server that neither answers nor refuses.
const POSTGRES_CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// One direct connection to the server a `sql` catalog's URI names. sqlx's pool (which
/// iceberg-catalog-sql opens) retries a refused connection until its 30 s acquire timeout and
/// then reports only "pool timed out"; this turns an unreachable server into a prompt error that
/// says where it looked. Every other failure (password, database, TLS) is left to the catalog's
/// own connection, whose errors already say what is wrong.
async fn postgres_reachable(uri: &str) -> std::result::Result<(), String> {
    use sqlx::{ConnectOptions, Connection};
    let Ok(options) = sqlx::postgres::PgConnectOptions::from_str(uri) else {
        return Ok(());
    };
    // Host and port only: the URI may carry a password.
    let address = format!("{}:{}", options.get_host(), options.get_port());
    let unreachable = |why: String| {
        format!(
            "cannot reach PostgreSQL at {address}: {why}; check the host and port in `uri` and \
             that the server is running"
        )
    };
    match tokio::time::timeout(POSTGRES_CONNECT_TIMEOUT, options.connect()).await {
        Ok(Ok(connection)) => {
            let _ = connection.close().await;
            Ok(())
        }
        Ok(Err(sqlx::Error::Io(e))) => Err(unreachable(e.to_string())),
        Ok(Err(_)) => Ok(()),
        Err(_) => Err(unreachable(format!(
            "no answer within {}s",
            POSTGRES_CONNECT_TIMEOUT.as_secs()
        ))),
    }
}

/// The HTTP client (TLS files read now, so a bad one is a configuration error naming its key)
/// and the `/v1/config` handshake.
async fn connect_rest(settings: &CatalogSettings) -> Result<Arc<super::rest::RestClient>> {
    let opts = super::rest::RestOptions::from_settings(settings);
    let http =
        crate::http::client(&opts.tls, opts.timeouts).map_err(|e| ConfigError::InvalidValue {
            catalog: settings.name.clone(),
            key: e.key().to_string(),
            origin: settings.origin.to_string(),
            reason: e.to_string(),
        })?;
    let client = super::rest::RestClient::connect(opts, http)
        .await
        .map_err(|source| Error::CatalogOpen {
            catalog: settings.name.clone(),
            kind: settings.kind.to_string(),
            source: Box::new(source),
        })?;
    Ok(Arc::new(client))
}

async fn load<B>(
    builder: B,
    storage: Arc<LocalWritesStorageFactory>,
    name: String,
    props: HashMap<String, String>,
) -> iceberg::Result<Arc<dyn Catalog>>
where
    B: CatalogBuilder,
    B::C: 'static,
{
    Ok(Arc::new(
        builder
            .with_storage_factory(storage)
            .load(name, props)
            .await?,
    ))
}

/// Creates the embedded default catalog's directories (its SQLite file's and its warehouse),
/// which nobody else makes; other catalogs are left alone.
pub fn prepare_embedded(settings: &CatalogSettings) -> Result<()> {
    if settings.origin != Origin::EmbeddedDefault {
        return Ok(());
    }
    let dirs = [
        settings
            .property("uri")
            .and_then(|u| u.strip_prefix("sqlite:///"))
            .map(|p| Path::new(p).parent().map(Path::to_path_buf)),
        settings
            .property("warehouse")
            .and_then(|w| w.strip_prefix("file://"))
            .map(|p| Some(PathBuf::from(p))),
    ];
    for dir in dirs.into_iter().flatten().flatten() {
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io { path: dir, source })?;
    }
    Ok(())
}

/// Validates a definition and translates it for its iceberg-rust builder.
pub fn settings_for(
    definition: CatalogDefinition,
    base_dir: &Path,
) -> Result<CatalogSettings, ConfigError> {
    let CatalogDefinition {
        name,
        properties,
        origin,
    } = definition;
    let ctx = Ctx {
        catalog: &name,
        origin: &origin,
        props: &properties,
    };
    let kind = match properties.get("type") {
        Some(t) => CatalogKind::from_str(t).map_err(|_| ConfigError::UnknownKind {
            catalog: name.clone(),
            kind: t.clone(),
            origin: origin.to_string(),
        })?,
        None => infer_kind(&ctx)?,
    };
    let iceberg_properties = match kind {
        CatalogKind::Sql => translate_sql(&ctx, base_dir)?,
        CatalogKind::Rest => translate_rest(&ctx)?,
        CatalogKind::Glue => translate_glue(&ctx, base_dir)?,
        CatalogKind::S3Tables => translate_s3tables(&ctx)?,
        CatalogKind::Memory => translate_memory(&ctx, base_dir)?,
    };
    Ok(CatalogSettings {
        name,
        kind,
        origin,
        properties,
        iceberg_properties,
    })
}

struct Ctx<'a> {
    catalog: &'a str,
    origin: &'a Origin,
    props: &'a BTreeMap<String, String>,
}

impl Ctx<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.props
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.trim().is_empty())
    }

    /// First of `keys` that is set.
    fn first(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.get(k))
    }

    fn require(&self, key: &str, hint: &str) -> Result<&str, ConfigError> {
        self.get(key).ok_or_else(|| self.missing(key, hint))
    }

    fn missing(&self, key: &str, hint: &str) -> ConfigError {
        ConfigError::MissingKey {
            catalog: self.catalog.to_string(),
            key: key.to_string(),
            origin: self.origin.to_string(),
            hint: hint.to_string(),
        }
    }

    fn invalid(&self, key: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError::InvalidValue {
            catalog: self.catalog.to_string(),
            key: key.to_string(),
            origin: self.origin.to_string(),
            reason: reason.into(),
        }
    }

    /// Every property not in `consumed`, passed through unchanged (s3.*, header.*, ...).
    fn passthrough(&self, consumed: &[&str]) -> BTreeMap<String, String> {
        self.props
            .iter()
            .filter(|(k, _)| k.as_str() != "type" && !consumed.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

fn infer_kind(ctx: &Ctx<'_>) -> Result<CatalogKind, ConfigError> {
    let uri = ctx.get("uri").ok_or_else(|| {
        ctx.missing(
            "type",
            "set `type` to one of sql, rest, glue, s3tables, memory (or set `uri` so the type \
             can be inferred as PyIceberg does)",
        )
    })?;
    if uri.starts_with("http") {
        Ok(CatalogKind::Rest)
    } else if uri.starts_with("sqlite") || uri.starts_with("postgres") {
        Ok(CatalogKind::Sql)
    } else {
        Err(ctx.invalid(
            "uri",
            format!(
                "cannot infer the catalog type from '{}'; set `type` explicitly",
                super::redact::redact_uri_password(uri)
            ),
        ))
    }
}

fn translate_sql(ctx: &Ctx<'_>, base_dir: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let uri = ctx.require(
        "uri",
        "a SQLAlchemy URI such as sqlite:////abs/path/catalog.db or \
         postgresql://user:pass@host/db",
    )?;
    let (sqlx_uri, bind_style) = sqlx_uri(ctx, uri, base_dir)?;
    let warehouse = ctx.require(
        "warehouse",
        "the location for new tables, e.g. file:///data/warehouse or s3://bucket/path",
    )?;
    let mut out = ctx.passthrough(&["uri", "warehouse"]);
    for (key, check) in [
        ("pool.max-connections", is_u32 as fn(&str) -> bool),
        ("pool.idle-timeout", is_u64),
        ("pool.test-before-acquire", is_bool),
    ] {
        // iceberg-catalog-sql panics on an unparsable value; refuse it here instead.
        if let Some(v) = ctx.get(key)
            && !check(v)
        {
            return Err(ctx.invalid(key, format!("'{v}' is not a valid value")));
        }
    }
    if sqlx_uri == "sqlite::memory:" {
        // Each pooled connection to :memory: is a separate database: keep one.
        out.insert("pool.max-connections".into(), "1".into());
    }
    out.insert("uri".into(), sqlx_uri);
    out.insert(
        "warehouse".into(),
        location_uri(ctx, "warehouse", warehouse, base_dir)?,
    );
    out.insert("sql_bind_style".into(), bind_style.into());
    Ok(out)
}

fn is_u32(v: &str) -> bool {
    v.parse::<u32>().is_ok_and(|n| n > 0)
}
fn is_u64(v: &str) -> bool {
    v.parse::<u64>().is_ok()
}
fn is_bool(v: &str) -> bool {
    v.parse::<bool>().is_ok()
}

/// SQLAlchemy URI (what PyIceberg takes) → sqlx URI (what iceberg-catalog-sql takes).
fn sqlx_uri(
    ctx: &Ctx<'_>,
    uri: &str,
    base_dir: &Path,
) -> Result<(String, &'static str), ConfigError> {
    let (scheme, rest) = match uri.split_once(':') {
        Some((s, r)) => (s.split('+').next().unwrap_or(s), r),
        None => (uri, ""),
    };
    match scheme {
        "sqlite" => {
            let path = match rest.strip_prefix("//") {
                // sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy reads them.
                Some(p) => p.strip_prefix('/').unwrap_or(p),
                // sqlx's own form, sqlite:path.
                None => rest,
            };
            let path = path.split('?').next().unwrap_or(path);
            if path.is_empty() || path == ":memory:" {
                return Ok(("sqlite::memory:".into(), "QMark"));
            }
            let path = absolute(base_dir, path);
            // The embedded default's directory is created when it is opened.
            let created_on_open = *ctx.origin == Origin::EmbeddedDefault;
            match path.parent() {
                Some(parent)
                    if !created_on_open && !parent.as_os_str().is_empty() && !parent.is_dir() =>
                {
                    return Err(ctx.invalid(
                        "uri",
                        format!(
                            "the directory {} of the SQLite database does not exist; create it \
                             first",
                            parent.display()
                        ),
                    ));
                }
                _ => {}
            }
            Ok((format!("sqlite://{}?mode=rwc", path.display()), "QMark"))
        }
        "postgresql" | "postgres" => {
            let rest = rest.strip_prefix("//").ok_or_else(|| {
                ctx.invalid(
                    "uri",
                    "expected postgresql://user:password@host:port/database",
                )
            })?;
            Ok((format!("postgres://{rest}"), "DollarNumeric"))
        }
        other => Err(ctx.invalid(
            "uri",
            format!("'{other}' databases are not supported; use a sqlite or postgresql URI"),
        )),
    }
}

fn absolute(base_dir: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base_dir.join(p)
    }
}

/// A plain path becomes an absolute `file://` URI; URIs pass through.
fn location_uri(
    ctx: &Ctx<'_>,
    key: &str,
    value: &str,
    base_dir: &Path,
) -> Result<String, ConfigError> {
    if value.contains("://") {
        let scheme = value.split("://").next().unwrap_or_default();
        return match scheme {
            "file" | "s3" | "s3a" | "s3n" | "memory" => Ok(value.trim_end_matches('/').to_string()),
            other => Err(ctx.invalid(
                key,
                format!("storage scheme '{other}' is not supported; use file://, s3:// or a path"),
            )),
        };
    }
    Ok(format!(
        "file://{}",
        absolute(base_dir, value)
            .display()
            .to_string()
            .trim_end_matches('/')
    ))
}

fn translate_rest(ctx: &Ctx<'_>) -> Result<BTreeMap<String, String>, ConfigError> {
    let uri = ctx.require("uri", "the REST catalog's base URL, e.g. http://host:8181")?;
    if !(uri.starts_with("http://") || uri.starts_with("https://")) {
        return Err(ctx.invalid(
            "uri",
            "a REST catalog URI must start with http:// or https://",
        ));
    }
    super::rest::validate(ctx.props, &|key, reason| ctx.invalid(key, reason))?;
    let mut out = ctx.passthrough(&["uri"]);
    out.insert("uri".into(), uri.trim_end_matches('/').to_string());
    Ok(out)
}

const AWS_KEYS: [(&str, &str); 5] = [
    ("region", "region_name"),
    ("access-key-id", "aws_access_key_id"),
    ("secret-access-key", "aws_secret_access_key"),
    ("session-token", "aws_session_token"),
    ("profile-name", "profile_name"),
];

/// `<service>.<key>` or `client.<key>` → the AWS SDK property iceberg-rust reads.
fn aws_properties(ctx: &Ctx<'_>, service: &str, out: &mut BTreeMap<String, String>) {
    for (key, target) in AWS_KEYS {
        if let Some(v) = ctx.first(&[&format!("{service}.{key}"), &format!("client.{key}")]) {
            out.insert(target.into(), v.into());
        }
    }
}

fn translate_glue(ctx: &Ctx<'_>, base_dir: &Path) -> Result<BTreeMap<String, String>, ConfigError> {
    let warehouse = ctx.require(
        "warehouse",
        "the location for new tables, e.g. s3://bucket/warehouse",
    )?;
    let mut out = ctx.passthrough(&["warehouse", "glue.endpoint", "glue.id"]);
    aws_properties(ctx, "glue", &mut out);
    if let Some(endpoint) = ctx.get("glue.endpoint") {
        out.insert("uri".into(), endpoint.into());
    }
    if let Some(id) = ctx.get("glue.id") {
        out.insert("catalog_id".into(), id.into());
    }
    out.insert(
        "warehouse".into(),
        location_uri(ctx, "warehouse", warehouse, base_dir)?,
    );
    Ok(out)
}

fn translate_s3tables(ctx: &Ctx<'_>) -> Result<BTreeMap<String, String>, ConfigError> {
    let (arn_key, arn) = match ctx.get("s3tables.table-bucket-arn") {
        Some(a) => ("s3tables.table-bucket-arn", a),
        None => (
            "warehouse",
            ctx.get("warehouse").ok_or_else(|| {
                ctx.missing(
                    "s3tables.table-bucket-arn",
                    "the table bucket ARN, arn:aws:s3tables:<region>:<account>:bucket/<name> \
                     (`warehouse` is accepted too, as with S3 Tables' REST endpoint)",
                )
            })?,
        ),
    };
    if !arn.starts_with("arn:") || !arn.contains(":bucket/") {
        return Err(ctx.invalid(
            arn_key,
            format!("'{arn}' is not a table bucket ARN (arn:aws:s3tables:<region>:<account>:bucket/<name>)"),
        ));
    }
    let mut out = ctx.passthrough(&[
        "warehouse",
        "s3tables.table-bucket-arn",
        "s3tables.endpoint",
    ]);
    aws_properties(ctx, "s3tables", &mut out);
    out.insert("table_bucket_arn".into(), arn.into());
    if let Some(endpoint) = ctx.get("s3tables.endpoint") {
        out.insert("endpoint_url".into(), endpoint.into());
    }
    // The S3 Tables catalog hands none of its AWS settings to its FileIO; the identity and
    // region are the same for the data files, so default them (never the endpoint: S3 Tables'
    // and S3's differ on AWS).
    for (from, to) in [
        ("region_name", "s3.region"),
        ("aws_access_key_id", "s3.access-key-id"),
        ("aws_secret_access_key", "s3.secret-access-key"),
        ("aws_session_token", "s3.session-token"),
    ] {
        if let Some(v) = out.get(from).cloned() {
            out.entry(to.to_string()).or_insert(v);
        }
    }
    Ok(out)
}

fn translate_memory(
    ctx: &Ctx<'_>,
    base_dir: &Path,
) -> Result<BTreeMap<String, String>, ConfigError> {
    // PyIceberg's in-memory catalog default.
    let warehouse = ctx
        .get("warehouse")
        .unwrap_or("file:///tmp/iceberg/warehouse");
    let mut out = ctx.passthrough(&["warehouse"]);
    out.insert(
        "warehouse".into(),
        location_uri(ctx, "warehouse", warehouse, base_dir)?,
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factory(defs: Vec<CatalogDefinition>, base: &Path) -> CatalogFactory {
        let mut cfg = CatalogConfig::empty();
        for d in defs {
            cfg.insert(d);
        }
        CatalogFactory::new(cfg).with_base_dir(base)
    }

    #[test]
    fn embedded_default_needs_no_config() -> Result<(), Box<dyn std::error::Error>> {
        let f = factory(vec![], Path::new("/work/x"));
        let s = f.resolve("sqlite")?;
        assert_eq!(s.kind(), CatalogKind::Sql);
        assert_eq!(
            s.iceberg_property("uri"),
            Some("sqlite:///work/x/.iceberg-ops/catalog.db?mode=rwc")
        );
        assert_eq!(
            s.iceberg_property("warehouse"),
            Some("file:///work/x/.iceberg-ops/warehouse")
        );
        assert_eq!(*s.origin(), Origin::EmbeddedDefault);
        Ok(())
    }

    #[test]
    fn catalog_keeps_the_name_it_was_opened_by() -> Result<(), Box<dyn std::error::Error>> {
        let f = factory(
            vec![CatalogDefinition::inline(
                "Prod",
                [
                    ("type", "sql"),
                    ("uri", "sqlite:////tmp/p.db"),
                    ("warehouse", "file:///tmp/w"),
                ],
            )],
            Path::new("/tmp"),
        );
        // Found case-insensitively; named as the caller named it (PyIceberg's load_catalog).
        assert_eq!(f.resolve("Prod")?.name(), "Prod");
        assert_eq!(f.resolve("prod")?.name(), "prod");
        Ok(())
    }

    #[test]
    fn unknown_catalog_names_where_it_looked() {
        let f = factory(vec![], Path::new("/tmp"));
        let err = f
            .resolve("prod")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("'prod'"), "{err}");
        assert!(err.contains("PYICEBERG_CATALOG__PROD__"), "{err}");
    }

    #[test]
    fn unknown_kind_is_rejected() {
        let f = factory(
            vec![CatalogDefinition::inline(
                "h",
                [("type", "hive"), ("uri", "thrift://x")],
            )],
            Path::new("/tmp"),
        );
        let err = f.resolve("h").err();
        assert!(
            matches!(err, Some(ConfigError::UnknownKind { ref kind, .. }) if kind == "hive"),
            "{err:?}"
        );
    }

    #[test]
    fn missing_key_names_catalog_and_key() {
        let f = factory(
            vec![CatalogDefinition::inline("g", [("type", "glue")])],
            Path::new("/tmp"),
        );
        match f.resolve("g") {
            Err(ConfigError::MissingKey { catalog, key, .. }) => {
                assert_eq!((catalog.as_str(), key.as_str()), ("g", "warehouse"));
            }
            other => panic!("expected MissingKey, got {other:?}"),
        }
    }

    #[test]
    fn kind_is_inferred_from_uri() -> Result<(), Box<dyn std::error::Error>> {
        let f = factory(
            vec![
                CatalogDefinition::inline("r", [("uri", "http://localhost:8181/")]),
                CatalogDefinition::inline(
                    "p",
                    [
                        ("uri", "postgresql+psycopg2://u:pw@db:5432/cat"),
                        ("warehouse", "s3://b/w"),
                    ],
                ),
            ],
            Path::new("/tmp"),
        );
        let r = f.resolve("r")?;
        assert_eq!(r.kind(), CatalogKind::Rest);
        assert_eq!(r.iceberg_property("uri"), Some("http://localhost:8181"));
        let p = f.resolve("p")?;
        assert_eq!(
            p.iceberg_property("uri"),
            Some("postgres://u:pw@db:5432/cat")
        );
        assert_eq!(p.iceberg_property("sql_bind_style"), Some("DollarNumeric"));
        Ok(())
    }

    #[test]
    fn sqlalchemy_sqlite_paths_follow_sqlalchemy() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        let f = factory(
            vec![
                CatalogDefinition::inline(
                    "rel",
                    [("uri", "sqlite:///cat.db"), ("warehouse", "wh")],
                ),
                CatalogDefinition::inline(
                    "abs",
                    [
                        ("uri", "sqlite:////tmp/cat.db"),
                        ("warehouse", "file:///tmp/wh/"),
                    ],
                ),
            ],
            dir.path(),
        );
        let rel = f.resolve("rel")?;
        assert_eq!(
            rel.iceberg_property("uri").map(str::to_string),
            Some(format!("sqlite://{}/cat.db?mode=rwc", dir.path().display()))
        );
        assert_eq!(
            rel.iceberg_property("warehouse").map(str::to_string),
            Some(format!("file://{}/wh", dir.path().display()))
        );
        let abs = f.resolve("abs")?;
        assert_eq!(
            abs.iceberg_property("uri"),
            Some("sqlite:///tmp/cat.db?mode=rwc")
        );
        assert_eq!(abs.iceberg_property("warehouse"), Some("file:///tmp/wh"));
        Ok(())
    }

    #[test]
    fn bad_pool_value_is_a_config_error_not_a_panic() {
        let f = factory(
            vec![CatalogDefinition::inline(
                "s",
                [
                    ("uri", "sqlite:////tmp/x.db"),
                    ("warehouse", "/tmp/w"),
                    ("pool.max-connections", "many"),
                ],
            )],
            Path::new("/tmp"),
        );
        assert!(matches!(
            f.resolve("s"),
            Err(ConfigError::InvalidValue { ref key, .. }) if key == "pool.max-connections"
        ));
    }

    #[test]
    fn glue_and_s3tables_keys_are_translated() -> Result<(), Box<dyn std::error::Error>> {
        let f = factory(
            vec![
                CatalogDefinition::inline(
                    "g",
                    [
                        ("type", "glue"),
                        ("warehouse", "s3://wh/"),
                        ("glue.endpoint", "http://127.0.0.1:5000"),
                        ("client.region", "us-east-1"),
                        ("glue.access-key-id", "AK"),
                        ("client.secret-access-key", "SK"),
                        ("s3.path-style-access", "true"),
                    ],
                ),
                CatalogDefinition::inline(
                    "t",
                    [
                        ("type", "s3tables"),
                        (
                            "warehouse",
                            "arn:aws:s3tables:us-east-1:123456789012:bucket/b",
                        ),
                        ("s3tables.endpoint", "http://127.0.0.1:5000"),
                        ("s3tables.region", "us-east-1"),
                        ("client.access-key-id", "AK"),
                        ("client.secret-access-key", "SK"),
                    ],
                ),
            ],
            Path::new("/tmp"),
        );
        let g = f.resolve("g")?;
        assert_eq!(g.iceberg_property("uri"), Some("http://127.0.0.1:5000"));
        assert_eq!(g.iceberg_property("region_name"), Some("us-east-1"));
        assert_eq!(g.iceberg_property("aws_access_key_id"), Some("AK"));
        assert_eq!(g.iceberg_property("aws_secret_access_key"), Some("SK"));
        assert_eq!(g.iceberg_property("s3.path-style-access"), Some("true"));
        assert_eq!(g.iceberg_property("warehouse"), Some("s3://wh"));
        let t = f.resolve("t")?;
        assert_eq!(
            t.iceberg_property("table_bucket_arn"),
            Some("arn:aws:s3tables:us-east-1:123456789012:bucket/b")
        );
        assert_eq!(
            t.iceberg_property("endpoint_url"),
            Some("http://127.0.0.1:5000")
        );
        assert_eq!(t.iceberg_property("s3.access-key-id"), Some("AK"));
        assert_eq!(t.iceberg_property("s3.region"), Some("us-east-1"));
        assert_eq!(t.iceberg_property("s3.endpoint"), None);
        Ok(())
    }

    #[test]
    fn secrets_never_reach_errors_or_debug() {
        let f = factory(
            vec![CatalogDefinition::inline(
                "t",
                [
                    ("type", "s3tables"),
                    ("warehouse", "not-an-arn"),
                    ("client.secret-access-key", "TOPSECRET"),
                ],
            )],
            Path::new("/tmp"),
        );
        let err = f
            .resolve("t")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("warehouse") && !err.contains("TOPSECRET"),
            "{err}"
        );
        let dbg = format!("{:?}", f.config().get("t"));
        assert!(!dbg.contains("TOPSECRET"), "{dbg}");
        let f = factory(
            vec![CatalogDefinition::inline(
                "p",
                [
                    ("uri", "mysql://u:hunter2@h/db"),
                    ("type", "sql"),
                    ("warehouse", "/w"),
                ],
            )],
            Path::new("/tmp"),
        );
        let err = f
            .resolve("p")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(!err.contains("hunter2") && err.contains("mysql"), "{err}");
    }
}
