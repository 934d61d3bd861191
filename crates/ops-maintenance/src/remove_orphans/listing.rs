//! Step 3 of orphan cleanup: the files under a table location, with their modification times.
//!
//! A local location is walked directory by directory; an object store location (S3 and the
//! schemes Java takes for it, `s3a`/`s3n`) is listed by key prefix through OpenDAL with the
//! table's own FileIO properties (endpoint, region, credentials, path-style access), as Java's
//! `SupportsPrefixOperations.listPrefix`. Both apply Java's hidden-path filter and leave out a
//! nested table's directory.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use futures::TryStreamExt;

use super::location::{Location, normalize};
use ops_core::{Error, Result};

/// One file under the table location.
#[derive(Debug, Clone)]
pub(super) struct ListedFile {
    /// The path part, normalised as [`Location::path`], to match referenced paths.
    pub(super) path: String,
    /// The file's full name, as deleted and reported.
    pub(super) url: String,
    pub(super) modified: SystemTime,
}

/// Files a listing hands over at a time (a walk of a million files holds no more than this).
const CHUNK: usize = 1024;

/// What a listing left out.
#[derive(Debug, Default)]
pub(super) struct LeftOut {
    /// The directories holding another table, as full names.
    pub(super) other_tables: Vec<String>,
    /// Hidden entries ([`hidden`]): a directory counts once, with all below it; an object
    /// key once each.
    pub(super) hidden: usize,
    /// The first few of them, as full names.
    pub(super) hidden_examples: Vec<String>,
}

/// Hidden entries named in a listing's result (the rest only counted).
const HIDDEN_EXAMPLES: usize = 3;

impl LeftOut {
    fn add_hidden(&mut self, name: impl FnOnce() -> String) {
        self.hidden += 1;
        if self.hidden_examples.len() < HIDDEN_EXAMPLES {
            self.hidden_examples.push(name());
        }
    }
}

/// Lists every file under `location` (see the module docs), handing each to `each` as it is
/// listed, and returns what it left out. `io_props` are the table's FileIO properties;
/// `underscored` the partition field names starting with `_` ([`hidden`]).
pub(super) async fn list(
    location: &Location,
    io_props: &HashMap<String, String>,
    underscored: HashSet<String>,
    mut each: impl FnMut(ListedFile) -> Result<()>,
) -> Result<LeftOut> {
    if location.is_local() {
        let left = list_local(Path::new(&location.path), underscored, |file, modified| {
            let path = file.to_string_lossy().to_string();
            each(ListedFile {
                url: location.local_url(&path),
                path,
                modified,
            })
        })
        .await?;
        let url = |paths: Vec<String>| paths.iter().map(|p| location.local_url(p)).collect();
        return Ok(LeftOut {
            other_tables: url(left.other_tables),
            hidden: left.hidden,
            hidden_examples: url(left.hidden_examples),
        });
    }
    if matches!(location.scheme.as_str(), "s3" | "s3a" | "s3n") {
        return list_s3(location, io_props, &underscored, each).await;
    }
    Err(Error::InvalidInput(format!(
        "listing {} is not supported: iceberg-ops lists local and S3 (s3://, s3a://, s3n://) \
         table locations. No file was deleted",
        location.original
    )))
}

/// Whether an entry named `name` under the table location is hidden, as Java's
/// `PartitionAwareHiddenPathFilter` decides: a name starting with `_` or `.` (Hadoop's
/// `_SUCCESS` and `_temporary`, `.crc` checksums, editors' and sync tools' files) is neither
/// listed nor deleted — except a directory `<field>=<value>` of a partition field whose name
/// itself starts with `_` (`underscored`).
pub(super) fn hidden(name: &str, is_dir: bool, underscored: &HashSet<String>) -> bool {
    if !(name.starts_with('_') || name.starts_with('.')) {
        return false;
    }
    let partition_dir = is_dir
        && name
            .split_once('=')
            .is_some_and(|(field, _)| underscored.contains(field));
    !partition_dir
}

/// Every regular file under `root` with its modification time, handed to `each` as the walk
/// finds them (the walk runs on a blocking thread, a chunk of files ahead); returns what it
/// left out, as local paths: the directories below `root` that hold another table (a table
/// whose location is nested in this one's, e.g. `db/t` and `db/t/child`: its files are not
/// this table's orphans), and the hidden entries ([`hidden`]: not listed, nor anything below
/// a hidden directory).
/// Walked without recursion.
async fn list_local(
    root: &Path,
    underscored: HashSet<String>,
    mut each: impl FnMut(PathBuf, SystemTime) -> Result<()>,
) -> Result<LeftOut> {
    let root = root.to_path_buf();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<(PathBuf, SystemTime)>>(2);
    let walk = tokio::task::spawn_blocking(move || {
        let io_err = |path: &Path, e: std::io::Error| {
            Error::InvalidInput(format!("cannot list {}: {e}", path.display()))
        };
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut left = LeftOut::default();
        if !root.exists() {
            return Ok::<_, Error>(left);
        }
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            if dir != root && holds_table(&dir).map_err(|e| io_err(&dir, e))? {
                left.other_tables.push(dir.to_string_lossy().to_string());
                continue;
            }
            for entry in std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
                let entry = entry.map_err(|e| io_err(&dir, e))?;
                let kind = entry.file_type().map_err(|e| io_err(&entry.path(), e))?;
                if hidden(
                    &entry.file_name().to_string_lossy(),
                    kind.is_dir(),
                    &underscored,
                ) {
                    tracing::debug!(path = %entry.path().display(), "hidden: not listed");
                    left.add_hidden(|| entry.path().to_string_lossy().to_string());
                    continue;
                }
                if kind.is_dir() {
                    stack.push(entry.path());
                } else if kind.is_file() {
                    let modified = entry
                        .metadata()
                        .and_then(|m| m.modified())
                        .map_err(|e| io_err(&entry.path(), e))?;
                    chunk.push((entry.path(), modified));
                    if chunk.len() >= CHUNK && tx.blocking_send(std::mem::take(&mut chunk)).is_err()
                    {
                        // The consumer stopped (its own error): nothing more to list.
                        return Ok(left);
                    }
                }
                // Symbolic links are neither followed nor deleted: they may point outside.
            }
        }
        if !chunk.is_empty() {
            let _ = tx.blocking_send(chunk);
        }
        left.other_tables.sort();
        Ok(left)
    });
    let mut failed = None;
    while let Some(chunk) = rx.recv().await {
        for (path, modified) in chunk {
            if let Err(e) = each(path, modified) {
                failed = Some(e);
                break;
            }
        }
        if failed.is_some() {
            break;
        }
    }
    drop(rx);
    let listed = walk
        .await
        .map_err(|e| Error::InvalidInput(format!("listing the table location failed: {e}")))??;
    match failed {
        Some(e) => Err(e),
        None => Ok(listed),
    }
}

/// Whether `dir` is a table's location: it has a `metadata` directory holding a
/// `*.metadata.json` file.
fn holds_table(dir: &Path) -> std::io::Result<bool> {
    let metadata = dir.join("metadata");
    if !metadata.is_dir() {
        return Ok(false);
    }
    for entry in std::fs::read_dir(&metadata)? {
        if entry?
            .file_name()
            .to_string_lossy()
            .ends_with(".metadata.json")
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Lists the objects under an S3 location, a page of keys at a time, in two passes: the
/// first finds the directories holding another table (their metadata files sort after their
/// data files, so a key cannot be judged when it is listed), the second hands each visible
/// file to `each`. Neither holds the keys. (A nested table created between the passes is not
/// left out: its files are as young as the table, inside any threshold but a forced one.)
async fn list_s3(
    location: &Location,
    io_props: &HashMap<String, String>,
    underscored: &HashSet<String>,
    mut each: impl FnMut(ListedFile) -> Result<()>,
) -> Result<LeftOut> {
    let failed = |e: opendal::Error| {
        Error::InvalidInput(format!(
            "cannot list {} ({e}); check the catalog's s3.* properties (endpoint, region, \
             credentials). No file was deleted",
            location.original
        ))
    };
    // OpenDAL normalises every path it is given (whitespace trimmed, `//` collapsed): under a
    // location spelled otherwise it would list, and delete in, another prefix than the table's.
    let raw_path = location
        .original
        .split_once("://")
        .map_or("", |(_, rest)| rest.split_once('/').map_or("", |(_, p)| p));
    let raw_path = raw_path.strip_suffix('/').unwrap_or(raw_path);
    if !raw_path.is_empty() && opendal::raw::normalize_path(raw_path) != raw_path {
        return Err(Error::InvalidInput(format!(
            "the table location {} has an empty path segment (`//`) or leading or trailing \
             whitespace, which the S3 client would drop, listing another prefix than the \
             table's. No file was deleted",
            location.original
        )));
    }
    let op = ops_core::object_store::s3_operator(io_props, &location.authority).map_err(failed)?;
    // The trailing slash keeps a sibling sharing the name as a prefix (`t` and `t_backup`) out.
    let root = location.path.trim_start_matches('/');
    let prefix = if root.is_empty() {
        String::new()
    } else {
        format!("{root}/")
    };
    let list_path = if prefix.is_empty() { "/" } else { &prefix };

    let list = async || {
        op.lister_with(list_path)
            .recursive(true)
            .await
            .map_err(failed)
    };

    let mut table_dirs = TableDirs::default();
    let mut lister = list().await?;
    while let Some(entry) = lister.try_next().await.map_err(failed)? {
        let key = entry.path();
        if entry.metadata().mode().is_file() && opendal::raw::normalize_path(key) == key {
            table_dirs.see(key, &prefix, underscored);
        }
    }
    let other_tables = table_dirs.outermost();
    let mut out = LeftOut::default();

    let mut lister = list().await?;
    while let Some(entry) = lister.try_next().await.map_err(failed)? {
        let meta = entry.metadata();
        // Directory markers (keys ending in `/`) are not files.
        if !meta.mode().is_file() {
            continue;
        }
        let key = entry.path();
        // A key OpenDAL would normalise (a `//`, whitespace at either end) cannot be deleted
        // as it is: the delete would reach the normalised key — possibly a live file —
        // instead. Such keys are neither listed nor deleted.
        if opendal::raw::normalize_path(key) != key {
            tracing::warn!(
                key = %key,
                "left alone: the S3 client cannot address this key as it is spelled"
            );
            continue;
        }
        match visible_key(key, &prefix, underscored, &other_tables) {
            Visible::Yes => {}
            Visible::Hidden => {
                out.add_hidden(|| location.object_url(key));
                continue;
            }
            Visible::OtherTable => continue,
        }
        let modified = match meta.last_modified() {
            Some(t) => SystemTime::from(t),
            // ListObjects always gives LastModified; another store might not.
            None => op
                .stat(key)
                .await
                .map_err(failed)?
                .last_modified()
                .map(SystemTime::from)
                .ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "{}: the store reports no modification time, so its age is unknown. \
                         No file was deleted",
                        location.object_url(key)
                    ))
                })?,
        };
        each(ListedFile {
            path: normalize(&format!("/{key}")),
            url: location.object_url(key),
            modified,
        })?;
    }
    out.other_tables = other_tables
        .iter()
        .map(|d| location.object_url(d))
        .collect();
    Ok(out)
}

/// The directories under a prefix that hold a table's metadata (`<dir>/metadata/*.metadata.json`,
/// not hidden), collected from keys as they are listed.
#[derive(Debug, Default)]
struct TableDirs(BTreeSet<String>);

impl TableDirs {
    fn see(&mut self, key: &str, prefix: &str, underscored: &HashSet<String>) {
        let Some(rel) = key.strip_prefix(prefix) else {
            return;
        };
        let segments: Vec<&str> = rel.split('/').collect();
        let last = segments.len() - 1;
        if last >= 2
            && segments[last - 1] == "metadata"
            && segments[last].ends_with(".metadata.json")
            && !is_hidden_key(&segments, underscored)
        {
            self.0
                .insert(format!("{prefix}{}", segments[..last - 1].join("/")));
        }
    }

    /// Only the outermost: a table nested in a nested table is inside the first one's directory.
    fn outermost(self) -> Vec<String> {
        let mut outermost: Vec<String> = Vec::new();
        for dir in self.0 {
            if !outermost.iter().any(|o| dir.starts_with(&format!("{o}/"))) {
                outermost.push(dir);
            }
        }
        outermost
    }
}

/// Whether a key's segments below the prefix include a hidden one ([`hidden`]).
fn is_hidden_key(segments: &[&str], underscored: &HashSet<String>) -> bool {
    let last = segments.len() - 1;
    segments
        .iter()
        .enumerate()
        .any(|(i, s)| hidden(s, i < last, underscored))
}

/// Whether a key is listed ([`visible_key`]).
#[derive(Debug, PartialEq, Eq)]
enum Visible {
    Yes,
    /// A hidden segment below the prefix.
    Hidden,
    /// Outside the prefix, or inside a directory holding another table.
    OtherTable,
}

/// Whether `key` is listed: under `prefix`, no hidden segment below it, and not inside a
/// directory holding another table.
fn visible_key(
    key: &str,
    prefix: &str,
    underscored: &HashSet<String>,
    other_tables: &[String],
) -> Visible {
    let Some(rel) = key.strip_prefix(prefix) else {
        return Visible::OtherTable;
    };
    let segments: Vec<&str> = rel.split('/').collect();
    if is_hidden_key(&segments, underscored) {
        tracing::debug!(key = %key, "hidden: not listed");
        return Visible::Hidden;
    }
    if other_tables
        .iter()
        .any(|d| key.starts_with(&format!("{d}/")))
    {
        return Visible::OtherTable;
    }
    Visible::Yes
}

/// [`TableDirs`] and [`visible_key`] over a list of keys: the visible ones, and the directories
/// holding another table (outermost only), as keys.
#[cfg(test)]
fn filter_keys(
    keys: Vec<(String, SystemTime)>,
    prefix: &str,
    underscored: &HashSet<String>,
) -> (Vec<(String, SystemTime)>, Vec<String>) {
    let mut dirs = TableDirs::default();
    for (key, _) in &keys {
        dirs.see(key, prefix, underscored);
    }
    let other = dirs.outermost();
    let visible = keys
        .into_iter()
        .filter(|(key, _)| visible_key(key, prefix, underscored, &other) == Visible::Yes)
        .collect();
    (visible, other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_names_are_javas_except_underscored_partition_directories() {
        let underscored: HashSet<String> = ["_region".to_string()].into();
        for (name, dir, want) in [
            ("_SUCCESS", false, true),
            (".part-0.parquet.crc", false, true),
            ("_temporary", true, true),
            (".hidden", true, true),
            ("_region=eu", true, false),
            // Only as a directory, and only of the table's own underscored fields.
            ("_region=eu", false, true),
            ("_other=eu", true, true),
            ("region=eu", true, false),
            ("00000-0-a.parquet", false, false),
        ] {
            assert_eq!(hidden(name, dir, &underscored), want, "{name} dir={dir}");
        }
    }

    #[tokio::test]
    async fn a_table_nested_in_the_location_is_not_listed() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::InvalidInput(e.to_string()))?;
        let root = dir.path().join("t");
        let io = |e: std::io::Error| Error::InvalidInput(e.to_string());
        std::fs::create_dir_all(root.join("metadata")).map_err(io)?;
        std::fs::create_dir_all(root.join("data/region=us")).map_err(io)?;
        std::fs::create_dir_all(root.join("child/metadata")).map_err(io)?;
        std::fs::create_dir_all(root.join("child/data")).map_err(io)?;
        std::fs::create_dir_all(root.join("notatable/metadata")).map_err(io)?;
        for f in [
            "metadata/00000-a.metadata.json",
            "data/region=us/a.parquet",
            "child/metadata/00000-b.metadata.json",
            "child/data/b.parquet",
            "notatable/metadata/x.avro",
        ] {
            std::fs::write(root.join(f), b"x").map_err(io)?;
        }
        let mut names: Vec<String> = Vec::new();
        let left = list_local(&root, HashSet::new(), |p, _| {
            names.push(
                p.strip_prefix(&root)
                    .map_or(String::new(), |p| p.display().to_string()),
            );
            Ok(())
        })
        .await?;
        names.sort();
        assert_eq!(
            names,
            [
                "data/region=us/a.parquet",
                "metadata/00000-a.metadata.json",
                "notatable/metadata/x.avro"
            ]
        );
        assert_eq!(
            left.other_tables,
            vec![root.join("child").to_string_lossy().to_string()]
        );
        assert_eq!(left.hidden, 0);
        Ok(())
    }

    /// A directory of more files than a listing hands over at once: each listed once.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_large_directory_is_listed_whole_in_chunks() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::InvalidInput(e.to_string()))?;
        let io = |e: std::io::Error| Error::InvalidInput(e.to_string());
        let n = CHUNK * 2 + 17;
        for i in 0..n {
            std::fs::write(dir.path().join(format!("{i:05}.parquet")), b"x").map_err(io)?;
        }
        let mut names = Vec::new();
        list_local(dir.path(), HashSet::new(), |p, _| {
            names.push(p);
            Ok(())
        })
        .await?;
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        // An error from the consumer stops the listing and is returned.
        let mut seen = 0;
        let err = list_local(dir.path(), HashSet::new(), |_, _| {
            seen += 1;
            Err(Error::InvalidInput("stop".into()))
        })
        .await;
        assert!(err.is_err() && seen == 1);
        Ok(())
    }

    #[test]
    fn object_keys_keep_javas_hidden_rule_and_leave_nested_tables_and_siblings_out() {
        let underscored: HashSet<String> = ["_region".to_string()].into();
        let now = SystemTime::now();
        let keys: Vec<(String, SystemTime)> = [
            "w/t/metadata/00000-a.metadata.json",
            "w/t/data/region=us/a.parquet",
            "w/t/data/_region=eu/b.parquet",
            "w/t/data/_SUCCESS",
            "w/t/data/_temporary/0/part-0.parquet",
            "w/t/data/.a.parquet.crc",
            "w/t/child/metadata/00000-b.metadata.json",
            "w/t/child/data/b.parquet",
            "w/t/child/grand/metadata/00000-c.metadata.json",
            "w/t/notatable/metadata/x.avro",
            "w/t/_hidden/metadata/00000-d.metadata.json",
            "w/t_backup/data/x.parquet",
        ]
        .iter()
        .map(|k| (k.to_string(), now))
        .collect();
        let (files, tables) = filter_keys(keys, "w/t/", &underscored);
        let names: Vec<&str> = files.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            [
                "w/t/metadata/00000-a.metadata.json",
                "w/t/data/region=us/a.parquet",
                "w/t/data/_region=eu/b.parquet",
                "w/t/notatable/metadata/x.avro",
            ]
        );
        assert_eq!(tables, ["w/t/child"]);
    }

    #[tokio::test]
    async fn an_s3_location_the_client_would_respell_is_refused() {
        for location in ["s3://bucket/w//t", "s3://bucket/w/t ", "s3://bucket/ w/t/"] {
            let loc = Location::parse(location).unwrap_or_else(|e| panic!("{e}"));
            let err = list(&loc, &HashMap::new(), HashSet::new(), |_| Ok(()))
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(
                err.contains("empty path segment") && err.contains("No file was deleted"),
                "{location}: {err}"
            );
        }
    }

    #[tokio::test]
    async fn another_scheme_is_refused_naming_it() {
        let loc = Location::parse("gs://bucket/w/t").unwrap_or_else(|e| panic!("{e}"));
        let err = list(&loc, &HashMap::new(), HashSet::new(), |_| Ok(()))
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("gs://bucket/w/t") && err.contains("No file was deleted"),
            "{err}"
        );
    }
}
