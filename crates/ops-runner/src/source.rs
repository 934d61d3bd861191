//! Resolving migrations: the files of a migrations directory plus registered code migrations,
//! one ordered list keyed by normalised version.
//!
//! Layouts: when the directory has a subdirectory named like the runner's namespace, that
//! subdirectory holds the namespace's files; otherwise the directory itself does (flat).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::file::FileMigration;
use crate::{Migration, Result, RunnerError, normalize_version};

/// A resolved migration: its normalised version and the migration.
#[derive(Clone)]
pub struct Resolved {
    /// `NNNN`.
    pub version: String,
    /// The migration.
    pub migration: Arc<dyn Migration>,
}

impl std::fmt::Debug for Resolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolved")
            .field("version", &self.version)
            .field("source", &self.migration.source())
            .finish()
    }
}

/// The directory holding `namespace`'s files: `dir/<namespace>` if it is a directory, else `dir`.
pub fn migrations_dir_for(dir: &Path, namespace: &str) -> PathBuf {
    let scoped = dir.join(namespace);
    if !namespace.is_empty() && scoped.is_dir() {
        scoped
    } else {
        dir.to_path_buf()
    }
}

/// The `.toml` migration files directly in `dir`, sorted by name.
pub fn migration_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Err(RunnerError::DirectoryNotFound(dir.to_path_buf()));
    }
    let io = |source| RunnerError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "toml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Every migration for `namespace`, ascending by version: files from `dir` (when given) and the
/// code migrations. Duplicate versions are an error.
pub fn resolve(
    dir: Option<&Path>,
    namespace: &str,
    code: &[Arc<dyn Migration>],
) -> Result<Vec<Resolved>> {
    let mut all: BTreeMap<String, Arc<dyn Migration>> = BTreeMap::new();
    let mut add = |migration: Arc<dyn Migration>| -> Result<()> {
        let version = normalize_version(migration.version()).map_err(|_| RunnerError::Load {
            file: PathBuf::from(migration.source()),
            message: format!(
                "version '{}' is not 1-4 decimal digits",
                migration.version()
            ),
        })?;
        if let Some(existing) = all.get(&version) {
            return Err(RunnerError::DuplicateVersion {
                version,
                first: existing.source(),
                second: migration.source(),
            });
        }
        all.insert(version, migration);
        Ok(())
    };
    if let Some(dir) = dir {
        let dir = migrations_dir_for(dir, namespace);
        for path in migration_files(&dir)? {
            add(Arc::new(FileMigration::load(&path)?))?;
        }
    }
    for m in code {
        add(m.clone())?;
    }
    Ok(all
        .into_iter()
        .map(|(version, migration)| Resolved { version, migration })
        .collect())
}

/// The Python iceberg-ops' migrations beside ours: `NNNN_<description>.py` files in the
/// directory holding `namespace`'s files, by version. iceberg-ops cannot run them; it knows them
/// so that their history rows (written by the Python tool, without a checksum) are not reported
/// as missing, and so that it never runs past one that is pending.
pub fn python_migrations(dir: Option<&Path>, namespace: &str) -> Result<BTreeMap<String, PathBuf>> {
    let Some(dir) = dir else {
        return Ok(BTreeMap::new());
    };
    let dir = migrations_dir_for(dir, namespace);
    if !dir.is_dir() {
        return Err(RunnerError::DirectoryNotFound(dir));
    }
    let io = |source| RunnerError::Io {
        path: dir.clone(),
        source,
    };
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(stem) = name.strip_suffix(".py") else {
            continue;
        };
        if let Some((prefix, rest)) = stem.split_once('_')
            && prefix.len() == 4
            && prefix.bytes().all(|b| b.is_ascii_digit())
            && !rest.is_empty()
            && path.is_file()
        {
            out.insert(prefix.to_string(), path);
        }
    }
    Ok(out)
}

/// The version after the highest `NNNN_*.toml` in `dir` (`0001` when there is none).
pub fn next_version(dir: &Path) -> Result<String> {
    let highest = if dir.is_dir() {
        migration_files(dir)?
            .iter()
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .filter_map(|n| {
                crate::file::parse_file_name(&n).and_then(|(v, _)| v.parse::<u32>().ok())
            })
            .max()
            .unwrap_or(0)
    } else {
        0
    };
    if highest >= 9999 {
        return Err(RunnerError::InvalidArgument(format!(
            "{} already has version 9999; versions are at most 4 digits",
            dir.display()
        )));
    }
    normalize_version(highest + 1)
}
