//! Catalog definitions, read the way PyIceberg reads them.
//!
//! An operator's existing PyIceberg set-up must work unchanged, so the search order, the key
//! normalisation and the environment-variable syntax follow `pyiceberg.utils.config`:
//!
//! 1. an explicit file (the CLI's `--config`), else the first `.pyiceberg.yaml` found in
//!    `$PYICEBERG_HOME`, the home directory, then the working directory;
//! 2. environment variables `PYICEBERG_CATALOG__<NAME>__<KEY>` are merged over the file. Within
//!    `<KEY>`, `__` becomes `.` and `_` becomes `-`, so `PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID`
//!    sets `s3.access-key-id` of catalog `prod`;
//! 3. catalog names and keys are case-insensitive (lower-cased on load), except the name part
//!    of `header.<Name>`, which is kept as written (it is shown by `catalog list`; HTTP header
//!    names are case-insensitive anyway);
//! 4. nested mappings flatten to dotted keys, as PyIceberg writes `ssl:` → `cabundle:`,
//!    `client:` → `cert:`/`key:` (`ssl.cabundle`, `ssl.client.cert`, `ssl.client.key`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_yaml_ng as yaml;

use super::ConfigError;

/// The file name PyIceberg looks for.
pub const PYICEBERG_YAML: &str = ".pyiceberg.yaml";

/// Where a catalog definition came from; shown in every error about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A `.pyiceberg.yaml` (or `--config`) file.
    File(PathBuf),
    /// `PYICEBERG_CATALOG__<NAME>__*` environment variables only.
    Environment,
    /// A file, with some keys overridden by environment variables.
    FileAndEnvironment(PathBuf),
    /// The built-in `sqlite` catalog under `./.iceberg-ops/`.
    EmbeddedDefault,
    /// Built in code (tests, embedding applications).
    Inline,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File(p) => write!(f, "{}", p.display()),
            Origin::Environment => f.write_str("PYICEBERG_CATALOG__* environment variables"),
            Origin::FileAndEnvironment(p) => {
                write!(
                    f,
                    "{} and PYICEBERG_CATALOG__* environment variables",
                    p.display()
                )
            }
            Origin::EmbeddedDefault => f.write_str("the embedded default"),
            Origin::Inline => f.write_str("inline properties"),
        }
    }
}

/// One catalog as configured: its name, raw PyIceberg-style properties and origin.
#[derive(Clone, PartialEq, Eq)]
pub struct CatalogDefinition {
    /// Lower-cased catalog name.
    pub name: String,
    /// Properties with PyIceberg's key names (`type`, `uri`, `s3.endpoint`, ...).
    pub properties: BTreeMap<String, String>,
    /// Where the definition was read from.
    pub origin: Origin,
}

impl CatalogDefinition {
    /// A definition built in code.
    pub fn inline<K, V>(name: &str, properties: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<String>,
    {
        Self {
            name: name.to_lowercase(),
            properties: properties
                .into_iter()
                .map(|(k, v)| (normalise_key(&k.into()), v.into()))
                .collect(),
            origin: Origin::Inline,
        }
    }
}

impl fmt::Debug for CatalogDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogDefinition")
            .field("name", &self.name)
            .field("properties", &super::redact::Redacted(&self.properties))
            .field("origin", &self.origin)
            .finish()
    }
}

/// Where [`CatalogConfig::load_from`] looks; [`ConfigSources::from_process`] reads the real ones.
#[derive(Debug, Clone, Default)]
pub struct ConfigSources {
    /// An explicit file; when set, the search directories are not consulted.
    pub explicit_file: Option<PathBuf>,
    /// `$PYICEBERG_HOME`.
    pub pyiceberg_home: Option<PathBuf>,
    /// The user's home directory.
    pub home: Option<PathBuf>,
    /// The working directory.
    pub cwd: Option<PathBuf>,
    /// Environment variables (all of them; only `PYICEBERG_CATALOG__*` are used).
    pub env: Vec<(String, String)>,
}

impl ConfigSources {
    /// The process's environment, home and working directory, plus an optional explicit file.
    pub fn from_process(explicit_file: Option<&Path>) -> Self {
        Self {
            explicit_file: explicit_file.map(Path::to_path_buf),
            pyiceberg_home: std::env::var_os("PYICEBERG_HOME").map(PathBuf::from),
            home: std::env::var_os("HOME").map(PathBuf::from),
            cwd: std::env::current_dir().ok(),
            env: std::env::vars().collect(),
        }
    }
}

/// All catalog definitions visible to this process.
#[derive(Debug, Clone, Default)]
pub struct CatalogConfig {
    catalogs: BTreeMap<String, CatalogDefinition>,
    searched: Vec<String>,
    /// PyIceberg's `default-catalog` (the file's key, or `PYICEBERG_DEFAULT_CATALOG`).
    default_catalog: Option<String>,
}

impl CatalogConfig {
    /// No definitions at all (only the embedded default resolves).
    pub fn empty() -> Self {
        Self::default()
    }

    /// Reads the process's PyIceberg configuration, or `explicit_file` instead of the search.
    pub fn load(explicit_file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_from(&ConfigSources::from_process(explicit_file))
    }

    /// Reads configuration from the given sources (see the module docs for the order).
    pub fn load_from(sources: &ConfigSources) -> Result<Self, ConfigError> {
        let mut config = Self::default();
        if let Some(path) = &sources.explicit_file {
            config.searched.push(path.display().to_string());
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            config.merge_yaml(&text, path)?;
        } else {
            let dirs = [&sources.pyiceberg_home, &sources.home, &sources.cwd];
            for dir in dirs.into_iter().flatten() {
                let path = dir.join(PYICEBERG_YAML);
                config.searched.push(path.display().to_string());
                if path.is_file() {
                    let text =
                        std::fs::read_to_string(&path).map_err(|e| ConfigError::Unreadable {
                            path: path.clone(),
                            reason: e.to_string(),
                        })?;
                    config.merge_yaml(&text, &path)?;
                    // PyIceberg stops at the first file it finds.
                    break;
                }
            }
        }
        config
            .searched
            .push("PYICEBERG_CATALOG__* environment variables".into());
        config.merge_env(sources.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let Some((_, name)) = sources
            .env
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("PYICEBERG_DEFAULT_CATALOG"))
        {
            config.default_catalog = Some(name.trim().to_string());
        }
        Ok(config)
    }

    /// The catalog PyIceberg's `load_catalog()` opens when given no name: the configuration's
    /// `default-catalog` (or `PYICEBERG_DEFAULT_CATALOG`), else a catalog named `default` when
    /// one is defined. `None` when neither is set: then the CLI uses the embedded default.
    pub fn default_catalog(&self) -> Option<&str> {
        match &self.default_catalog {
            Some(name) if !name.is_empty() => Some(name),
            _ => self.catalogs.get("default").map(|d| d.name.as_str()),
        }
    }

    /// Adds or replaces one definition.
    pub fn insert(&mut self, definition: CatalogDefinition) {
        self.catalogs.insert(definition.name.clone(), definition);
    }

    /// The definition of `name` (case-insensitive), if any.
    pub fn get(&self, name: &str) -> Option<&CatalogDefinition> {
        self.catalogs.get(&name.to_lowercase())
    }

    /// Names of every defined catalog.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.catalogs.keys().map(String::as_str)
    }

    /// Human-readable list of the places that were searched, for error messages.
    pub fn searched(&self) -> String {
        if self.searched.is_empty() {
            "no configuration sources".to_string()
        } else {
            self.searched.join(", ")
        }
    }

    fn merge_yaml(&mut self, text: &str, path: &Path) -> Result<(), ConfigError> {
        let unreadable = |reason: String| ConfigError::Unreadable {
            path: path.to_path_buf(),
            reason,
        };
        let doc: yaml::Value = yaml::from_str(text).map_err(|e| unreadable(e.to_string()))?;
        let root = match doc {
            yaml::Value::Null => return Ok(()),
            yaml::Value::Mapping(m) => m,
            _ => return Err(unreadable("the top level must be a mapping".into())),
        };
        if let Some(name) = lookup_ci(&root, "default-catalog").and_then(scalar_to_string) {
            self.default_catalog = Some(name.trim().to_string());
        }
        let Some(catalogs) = lookup_ci(&root, "catalog") else {
            return Ok(());
        };
        let catalogs = match catalogs {
            yaml::Value::Null => return Ok(()),
            yaml::Value::Mapping(m) => m,
            _ => {
                return Err(unreadable(
                    "`catalog` must map catalog names to properties".into(),
                ));
            }
        };
        for (name, props) in catalogs {
            let name = scalar_to_string(name)
                .ok_or_else(|| unreadable("a catalog name must be a string".into()))?
                .to_lowercase();
            let mut properties = BTreeMap::new();
            match props {
                yaml::Value::Null => {}
                yaml::Value::Mapping(m) => flatten(&name, "", m, &mut properties)
                    .map_err(|reason| unreadable(format!("catalog '{name}', {reason}")))?,
                _ => {
                    return Err(unreadable(format!(
                        "catalog '{name}' must be a mapping of properties"
                    )));
                }
            }
            self.catalogs.insert(
                name.clone(),
                CatalogDefinition {
                    name,
                    properties,
                    origin: Origin::File(path.to_path_buf()),
                },
            );
        }
        Ok(())
    }

    fn merge_env<'a>(&mut self, vars: impl Iterator<Item = (&'a str, &'a str)>) {
        for (var, value) in vars {
            let Some((name, key)) = parse_env_var(var) else {
                continue;
            };
            let def = self
                .catalogs
                .entry(name.clone())
                .or_insert_with(|| CatalogDefinition {
                    name,
                    properties: BTreeMap::new(),
                    origin: Origin::Environment,
                });
            if let Origin::File(p) = &def.origin {
                def.origin = Origin::FileAndEnvironment(p.clone());
            }
            // `header.X-Api-Key` from the file and `header.x-api-key` from the environment are
            // the same header: the environment's replaces it.
            def.properties.retain(|k, _| !k.eq_ignore_ascii_case(&key));
            def.properties.insert(key, value.to_string());
        }
    }
}

/// `PYICEBERG_CATALOG__<NAME>__<KEY>` → (name, key), normalised as PyIceberg does.
fn parse_env_var(var: &str) -> Option<(String, String)> {
    let lower = var.to_lowercase();
    let rest = lower.strip_prefix("pyiceberg_")?;
    // PyIceberg splits at most twice on "__": ["catalog", name, key-with-dots].
    let mut parts = rest.splitn(3, "__");
    if parts.next()? != "catalog" {
        return None;
    }
    let name = parts.next()?.replace('_', "-");
    let key = parts.next()?.replace("__", ".").replace('_', "-");
    if name.is_empty() || key.is_empty() {
        return None;
    }
    Some((name, key))
}

/// Lower-cases a key, but keeps the case of a header's name (`header.X-Api-Key`).
pub(crate) fn normalise_key(key: &str) -> String {
    match key.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("header.") => format!("header.{}", &key[7..]),
        _ => key.to_lowercase(),
    }
}

/// Flattens a catalog's (possibly nested) mapping into dotted keys. Depth is bounded by the
/// YAML the user wrote, and walked with an explicit stack, not recursion.
fn flatten(
    catalog: &str,
    prefix: &str,
    map: &yaml::Mapping,
    out: &mut BTreeMap<String, String>,
) -> Result<(), String> {
    let mut stack: Vec<(String, &yaml::Mapping)> = vec![(prefix.to_string(), map)];
    while let Some((prefix, map)) = stack.pop() {
        for (k, v) in map {
            let part = scalar_to_string(k).ok_or_else(|| "keys must be strings".to_string())?;
            let key = normalise_key(&format!("{prefix}{part}"));
            match v {
                yaml::Value::Mapping(inner) => stack.push((format!("{key}."), inner)),
                yaml::Value::Null => {}
                other => {
                    let value = scalar_to_string(other).ok_or_else(|| {
                        format!(
                            "key '{key}': the value must be a string, number, boolean or a \
                             mapping of those (catalog '{catalog}')"
                        )
                    })?;
                    out.insert(key, value);
                }
            }
        }
    }
    Ok(())
}

fn lookup_ci<'a>(map: &'a yaml::Mapping, key: &str) -> Option<&'a yaml::Value> {
    map.iter()
        .find(|(k, _)| k.as_str().is_some_and(|s| s.eq_ignore_ascii_case(key)))
        .map(|(_, v)| v)
}

fn scalar_to_string(v: &yaml::Value) -> Option<String> {
    match v {
        yaml::Value::String(s) => Some(s.clone()),
        yaml::Value::Bool(b) => Some(b.to_string()),
        yaml::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(dir: &Path, env: &[(&str, &str)]) -> ConfigSources {
        ConfigSources {
            explicit_file: None,
            pyiceberg_home: None,
            home: None,
            cwd: Some(dir.to_path_buf()),
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn env_var_keys_are_normalised_like_pyiceberg() {
        assert_eq!(
            parse_env_var("PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID"),
            Some(("prod".into(), "s3.access-key-id".into()))
        );
        assert_eq!(
            parse_env_var("PYICEBERG_CATALOG__MY_CAT__URI"),
            Some(("my-cat".into(), "uri".into()))
        );
        assert_eq!(parse_env_var("PYICEBERG_HOME"), None);
        assert_eq!(parse_env_var("PYICEBERG_CATALOG__ONLYNAME"), None);
        assert_eq!(parse_env_var("HOME"), None);
    }

    /// The catalog `load_catalog()` opens without a name, as PyIceberg finds it: the file's
    /// `default-catalog`, `PYICEBERG_DEFAULT_CATALOG` over it, else a catalog named `default`.
    #[test]
    fn the_default_catalog_is_found_as_pyiceberg_finds_it() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let yaml = dir.path().join(PYICEBERG_YAML);
        let default_of = |env: &[(&str, &str)]| -> Result<Option<String>, ConfigError> {
            Ok(CatalogConfig::load_from(&sources(dir.path(), env))?
                .default_catalog()
                .map(str::to_string))
        };
        std::fs::write(&yaml, "catalog:\n  lake:\n    type: sql\n")?;
        assert_eq!(default_of(&[])?, None);
        std::fs::write(
            &yaml,
            "default-catalog: lake\ncatalog:\n  lake:\n    type: sql\n  default:\n    type: sql\n",
        )?;
        assert_eq!(default_of(&[])?.as_deref(), Some("lake"));
        assert_eq!(
            default_of(&[("PYICEBERG_DEFAULT_CATALOG", "other")])?.as_deref(),
            Some("other")
        );
        std::fs::write(&yaml, "catalog:\n  Default:\n    type: sql\n")?;
        assert_eq!(default_of(&[])?.as_deref(), Some("default"));
        Ok(())
    }

    #[test]
    fn file_is_read_and_env_overrides_it() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join(PYICEBERG_YAML),
            "catalog:\n  Prod:\n    type: rest\n    URI: http://a\n    s3.path-style-access: true\n",
        )?;
        let cfg = CatalogConfig::load_from(&sources(
            dir.path(),
            &[("PYICEBERG_CATALOG__PROD__URI", "http://b")],
        ))?;
        let prod = cfg.get("PROD").ok_or("prod missing")?;
        assert_eq!(prod.properties["uri"], "http://b");
        assert_eq!(prod.properties["type"], "rest");
        assert_eq!(prod.properties["s3.path-style-access"], "true");
        assert!(matches!(prod.origin, Origin::FileAndEnvironment(_)));
        Ok(())
    }

    #[test]
    fn first_file_in_search_order_wins() -> Result<(), Box<dyn std::error::Error>> {
        let home = tempfile::tempdir()?;
        let cwd = tempfile::tempdir()?;
        std::fs::write(
            home.path().join(PYICEBERG_YAML),
            "catalog:\n  a:\n    uri: http://home\n",
        )?;
        std::fs::write(
            cwd.path().join(PYICEBERG_YAML),
            "catalog:\n  a:\n    uri: http://cwd\n",
        )?;
        let mut src = sources(cwd.path(), &[]);
        src.home = Some(home.path().to_path_buf());
        let cfg = CatalogConfig::load_from(&src)?;
        assert_eq!(
            cfg.get("a").ok_or("a missing")?.properties["uri"],
            "http://home"
        );
        Ok(())
    }

    #[test]
    fn malformed_yaml_names_the_file() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join(PYICEBERG_YAML), "catalog:\n  a: [1, 2\n")?;
        let err = CatalogConfig::load_from(&sources(dir.path(), &[]))
            .err()
            .ok_or("expected an error")?;
        assert!(err.to_string().contains(PYICEBERG_YAML), "{err}");
        Ok(())
    }

    #[test]
    fn nested_ssl_keys_flatten_as_pyiceberg_writes_them() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join(PYICEBERG_YAML),
            "catalog:\n  prod:\n    uri: https://h\n    ssl:\n      cabundle: /etc/ca.pem\n      \
             client:\n        cert: /c.pem\n        key: /c.key\n  lab:\n    uri: https://l\n    \
             ssl:\n      cabundle: false\n    header.X-Api-Key: k1\n    header:\n      \
             X-Tenant: acme\n",
        )?;
        let cfg = CatalogConfig::load_from(&sources(dir.path(), &[]))?;
        let prod = &cfg.get("prod").ok_or("prod missing")?.properties;
        assert_eq!(prod["ssl.cabundle"], "/etc/ca.pem");
        assert_eq!(prod["ssl.client.cert"], "/c.pem");
        assert_eq!(prod["ssl.client.key"], "/c.key");
        let lab = &cfg.get("lab").ok_or("lab missing")?.properties;
        assert_eq!(lab["ssl.cabundle"], "false");
        assert_eq!(lab["header.X-Api-Key"], "k1");
        assert_eq!(lab["header.X-Tenant"], "acme");
        Ok(())
    }

    #[test]
    fn environment_header_replaces_the_file_header_of_any_case()
    -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join(PYICEBERG_YAML),
            "catalog:\n  a:\n    uri: http://a\n    header.X-Api-Key: from-file\n",
        )?;
        let cfg = CatalogConfig::load_from(&sources(
            dir.path(),
            &[("PYICEBERG_CATALOG__A__HEADER__X_API_KEY", "from-env")],
        ))?;
        let a = &cfg.get("a").ok_or("a missing")?.properties;
        let headers: Vec<_> = a.iter().filter(|(k, _)| k.starts_with("header.")).collect();
        assert_eq!(headers.len(), 1, "{headers:?}");
        assert_eq!(a["header.x-api-key"], "from-env");
        Ok(())
    }

    #[test]
    fn sequence_values_are_rejected_with_the_key() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::tempdir()?;
        std::fs::write(
            dir.path().join(PYICEBERG_YAML),
            "catalog:\n  a:\n    ssl:\n      cabundle: [1, 2]\n",
        )?;
        let err = CatalogConfig::load_from(&sources(dir.path(), &[]))
            .err()
            .ok_or("expected an error")?;
        assert!(err.to_string().contains("'ssl.cabundle'"), "{err}");
        Ok(())
    }

    #[test]
    fn missing_explicit_file_is_an_error() {
        let src = ConfigSources {
            explicit_file: Some(PathBuf::from("/nonexistent/iceberg-ops.yaml")),
            ..Default::default()
        };
        let err = CatalogConfig::load_from(&src).err();
        assert!(
            matches!(err, Some(ConfigError::Unreadable { ref path, .. }) if path.ends_with("iceberg-ops.yaml"))
        );
    }
}
