//! Step 1 of an import: the files named by the user, expanded.
//!
//! A name is a file, a folder (its tree, walked without recursion) or a glob (`*` and `?`
//! within a segment, `**` for any number of folders), as a plain path, relative to the working
//! directory, a `file://` URI, or an S3 object or prefix (`s3://`, `s3a://`, `s3n://`), listed
//! through OpenDAL with the table's FileIO properties ([`ops_core::object_store`]). Below a
//! folder, hidden entries are skipped by Hadoop's convention, as Java's hidden-path filters
//! (`PartitionAwareHiddenPathFilter`, which orphan cleanup uses too) decide: a name starting
//! with `_` or `.` (`_SUCCESS`, `_temporary/`, `.crc` checksums), except a `_col=value` folder
//! of a partition column whose own name starts with `_`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use ops_core::{Error, Result};

/// One file to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// As the table will record it: a `file://` URI of the absolute path.
    pub path: String,
    /// Its path without scheme or bucket (`/`-separated), whose `key=value` folders give its
    /// partition — the folder named and those above it too (`--from …/region=eu` is
    /// `region=eu`); of two folders of one key, the deeper wins.
    pub relative: String,
    /// Where in `relative` the part below the name it was found by starts (after the folder
    /// or prefix named; the file name itself for a file named): a snapshot takes its
    /// partition columns from there only.
    pub below: usize,
    /// Whether the file was named itself (not found below a folder, prefix or glob).
    pub named: bool,
    /// Bytes.
    pub size: u64,
}

/// What expanding the names found.
#[derive(Debug, Default)]
pub struct Expanded {
    /// The files, in the order of the names, each name's files sorted by path.
    pub files: Vec<SourceFile>,
    /// Hidden entries skipped (files, and folders with everything below them).
    pub hidden: usize,
}

/// Expands `names` (see the module docs). `underscored`: the partition column names that
/// start with `_`, whose `name=value` folders are not hidden; `io_props`: the table's FileIO
/// properties, for object store sources.
pub async fn expand(
    names: &[String],
    underscored: &HashSet<String>,
    io_props: &HashMap<String, String>,
) -> Result<Expanded> {
    let mut out = Expanded::default();
    for name in names {
        if let Some((scheme, rest)) = name.split_once("://")
            && ops_core::object_store::S3_SCHEMES.contains(&scheme)
        {
            s3(name, scheme, rest, underscored, io_props, &mut out, false).await?;
            continue;
        }
        let local = local_path(name)?;
        let text = local.to_string_lossy().to_string();
        if text.contains(['*', '?']) {
            let (root, pattern) = split_glob(&text);
            let Ok(root) = std::fs::canonicalize(&root) else {
                continue;
            };
            let mut below = Expanded::default();
            if root.is_dir() {
                walk(&root, underscored, &mut below)?;
            }
            out.hidden += below.hidden;
            let prefix = format!("{}/", root.to_string_lossy().trim_end_matches('/'));
            out.files.extend(below.files.into_iter().filter(|f| {
                f.relative
                    .strip_prefix(prefix.as_str())
                    .is_some_and(|rel| segments_match(&pattern, rel))
            }));
            continue;
        }
        // The canonical path: one file named two ways (`a/../a`, `//`, a symbolic link) is
        // one path, so the duplicate checks see it.
        let local = std::fs::canonicalize(&local)
            .map_err(|e| Error::InvalidInput(format!("cannot import '{name}': {e}")))?;
        let meta = std::fs::metadata(&local)
            .map_err(|e| Error::InvalidInput(format!("cannot import '{name}': {e}")))?;
        if meta.is_dir() {
            walk(&local, underscored, &mut out)?;
        } else {
            let relative = slashed(&local);
            out.files.push(SourceFile {
                path: uri(&local),
                below: relative.rfind('/').map_or(0, |i| i + 1),
                named: true,
                relative,
                size: meta.len(),
            });
        }
    }
    Ok(out)
}

/// The files below a folder or prefix that a catalog names as a table's or partition's
/// location (`s3://…`, `file:…`, a path): like [`expand`]'s, but a location with nothing in
/// it (an empty partition, never written) has no files instead of being an error.
pub async fn expand_location(
    location: &str,
    underscored: &HashSet<String>,
    io_props: &HashMap<String, String>,
) -> Result<Expanded> {
    let mut out = Expanded::default();
    if let Some((scheme, rest)) = location.split_once("://")
        && ops_core::object_store::S3_SCHEMES.contains(&scheme)
    {
        s3(
            location,
            scheme,
            rest,
            underscored,
            io_props,
            &mut out,
            true,
        )
        .await?;
        return Ok(out);
    }
    let local = local_path(location)?;
    let Ok(local) = std::fs::canonicalize(&local) else {
        return Ok(out);
    };
    if local.is_dir() {
        walk(&local, underscored, &mut out)?;
    }
    Ok(out)
}

/// A glob split at its first segment with a wildcard: the folder before it (`/`-joined, with
/// its leading `/` when it had one) and the pattern's segments from there on.
fn split_glob(text: &str) -> (String, Vec<String>) {
    let lead = if text.starts_with('/') { "/" } else { "" };
    let segments: Vec<&str> = text.split('/').filter(|s| !s.is_empty()).collect();
    let fixed = segments
        .iter()
        .take_while(|s| !s.contains(['*', '?']))
        .count();
    (
        format!("{lead}{}", segments[..fixed].join("/")),
        segments[fixed..].iter().map(|s| s.to_string()).collect(),
    )
}

/// Whether `relative` (`/`-separated) matches `pattern`'s segments: `*` and `?` within a
/// segment, `**` for any number of segments (dynamic programming, no recursion).
fn segments_match(pattern: &[String], relative: &str) -> bool {
    let name: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
    let (p, n) = (pattern.len(), name.len());
    // ok[i][j]: pattern[i..] matches name[j..].
    let mut ok = vec![vec![false; n + 1]; p + 1];
    ok[p][n] = true;
    for i in (0..p).rev() {
        for j in (0..=n).rev() {
            ok[i][j] = if pattern[i] == "**" {
                ok[i + 1][j] || (j < n && ok[i][j + 1])
            } else {
                j < n && matches(&pattern[i], name[j]) && ok[i + 1][j + 1]
            };
        }
    }
    ok[0][0]
}

/// The objects an `s3://bucket/key` name stands for: the object itself, every object below
/// it as a folder, or those a glob in it matches; hidden keys skipped as below a local folder.
async fn s3(
    name: &str,
    scheme: &str,
    rest: &str,
    underscored: &HashSet<String>,
    io_props: &HashMap<String, String>,
    out: &mut Expanded,
    may_be_empty: bool,
) -> Result<()> {
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let failed = |e: opendal::Error| {
        Error::InvalidInput(format!(
            "cannot list {name} ({e}): the files are listed and read with the FileIO of the \
             table they go into, so that table's catalog needs s3.* properties (s3.endpoint, \
             s3.region, s3.access-key-id, s3.secret-access-key) that reach them"
        ))
    };
    let op = ops_core::object_store::s3_operator(io_props, bucket).map_err(failed)?;
    let url = |k: &str| format!("{scheme}://{bucket}/{k}");
    let (prefix, pattern) = if key.contains(['*', '?']) {
        let (root, pattern) = split_glob(key);
        let root = root.trim_matches('/').to_string();
        (
            if root.is_empty() {
                root
            } else {
                format!("{root}/")
            },
            Some(pattern),
        )
    } else {
        let key = key.trim_end_matches('/');
        if !key.is_empty()
            && let Ok(meta) = op.stat(key).await
            && meta.mode().is_file()
        {
            out.files.push(SourceFile {
                path: url(key),
                relative: key.to_string(),
                below: key.rfind('/').map_or(0, |i| i + 1),
                named: true,
                size: meta.content_length(),
            });
            return Ok(());
        }
        (
            if key.is_empty() {
                String::new()
            } else {
                format!("{key}/")
            },
            None,
        )
    };
    let list_path = if prefix.is_empty() {
        "/"
    } else {
        prefix.as_str()
    };
    let mut lister = op
        .lister_with(list_path)
        .recursive(true)
        .await
        .map_err(failed)?;
    let mut found = Vec::new();
    while let Some(entry) = lister.try_next().await.map_err(failed)? {
        if !entry.metadata().mode().is_file() {
            continue;
        }
        let key = entry.path();
        let Some(relative) = key.strip_prefix(prefix.as_str()) else {
            continue;
        };
        let parts: Vec<&str> = relative.split('/').collect();
        let last = parts.len().saturating_sub(1);
        for (i, p) in parts.iter().enumerate().take(last) {
            let at = format!("{scheme}://{bucket}/{prefix}{}", parts[..i].join("/"));
            refuse_table_format(p, at.trim_end_matches('/'))?;
        }
        if parts
            .iter()
            .enumerate()
            .any(|(i, p)| hidden(p, i < last, underscored))
        {
            out.hidden += 1;
            continue;
        }
        if pattern
            .as_ref()
            .is_some_and(|p| !segments_match(p, relative))
        {
            continue;
        }
        found.push(SourceFile {
            path: url(key),
            relative: key.to_string(),
            below: prefix.len(),
            named: false,
            size: entry.metadata().content_length(),
        });
    }
    if found.is_empty() && pattern.is_none() && !key.is_empty() && !may_be_empty {
        return Err(Error::InvalidInput(format!(
            "cannot import '{name}': no such object, and no object below it"
        )));
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    out.files.extend(found);
    Ok(())
}

/// The absolute local path `name` names: a `file:` URI's path, or a path (relative ones
/// against the working directory). Other schemes are refused, naming what is supported.
fn local_path(name: &str) -> Result<PathBuf> {
    let path = if let Some(rest) = name.strip_prefix("file://") {
        let rest = rest.strip_prefix("localhost").unwrap_or(rest);
        if !rest.starts_with('/') {
            return Err(Error::InvalidInput(format!(
                "'{name}' names a file on another host; give file:///absolute/path or a path"
            )));
        }
        PathBuf::from(rest)
    } else if let Some(rest) = name.strip_prefix("file:") {
        PathBuf::from(rest)
    } else if let Some((scheme, _)) = name.split_once("://") {
        return Err(Error::InvalidInput(format!(
            "'{name}': importing from {scheme}:// is not supported; iceberg-ops imports local \
             files (a path or file:///…) and S3 objects (s3://, s3a://, s3n://)"
        )));
    } else {
        PathBuf::from(name)
    };
    if path.is_absolute() {
        Ok(path)
    } else {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::InvalidInput(format!("cannot resolve '{name}': {e}")))?;
        Ok(cwd.join(path))
    }
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Refuses a folder `name` (in `at`) that marks a Delta or Hudi table: their Parquet files hold
/// every version of the rows their log keeps (removed files stay until vacuumed), so adding the
/// files would read old and deleted rows. Both folders are hidden by name, so without this they
/// were skipped and the data files taken.
fn refuse_table_format(name: &str, at: &str) -> Result<()> {
    let format = match name {
        "_delta_log" => "Delta",
        ".hoodie" => "Hudi",
        _ => return Ok(()),
    };
    Err(Error::InvalidInput(format!(
        "{at} is a {format} table ({at}/{name}): its Parquet files hold more than its current \
         rows. Read it with a {format} reader and copy the rows"
    )))
}

/// Whether an entry named `name` below an imported folder is hidden (see the module docs).
pub fn hidden(name: &str, is_dir: bool, underscored: &HashSet<String>) -> bool {
    if !(name.starts_with('_') || name.starts_with('.')) {
        return false;
    }
    let partition_dir = is_dir
        && name.split_once('=').is_some_and(|(column, _)| {
            underscored.contains(column) || underscored.contains(ANY_PARTITION_COLUMN)
        });
    !partition_dir
}

/// In the `underscored` set of [`expand`]: every `_col=value` folder is a partition folder (a
/// snapshot, which learns the partition columns from the folders, cannot name them first).
pub const ANY_PARTITION_COLUMN: &str = "*";

/// Every regular file below `root` (canonical), hidden entries skipped, sorted by path. Each
/// file is named by its canonical path; a folder reached twice (a symbolic link to a folder
/// already walked, or to one above it) is walked once.
fn walk(root: &Path, underscored: &HashSet<String>, out: &mut Expanded) -> Result<()> {
    let io_err = |path: &Path, e: std::io::Error| {
        Error::InvalidInput(format!("cannot list {}: {e}", path.display()))
    };
    let mut found = Vec::new();
    let below_root = slashed(root).trim_end_matches('/').len() + 1;
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let dir = std::fs::canonicalize(&dir).map_err(|e| io_err(&dir, e))?;
        if !seen.insert(dir.clone()) {
            continue;
        }
        for entry in std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            // `dir` is canonical, so is `dir/name` unless the entry is a link itself.
            let link = entry.file_type().is_ok_and(|t| t.is_symlink());
            let path = entry.path();
            let meta = std::fs::metadata(&path).map_err(|e| io_err(&path, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if meta.is_dir() {
                refuse_table_format(&name, &dir.to_string_lossy())?;
            }
            if hidden(&name, meta.is_dir(), underscored) {
                out.hidden += 1;
                continue;
            }
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let path = if link {
                    std::fs::canonicalize(&path).map_err(|e| io_err(&path, e))?
                } else {
                    path
                };
                let relative = slashed(&path);
                found.push(SourceFile {
                    path: uri(&path),
                    below: below_root.min(relative.len()),
                    named: false,
                    relative,
                    size: meta.len(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found.dedup_by(|a, b| a.path == b.path);
    out.files.extend(found);
    Ok(())
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one character.
fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative wildcard matching with backtracking to the last `*`.
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    while i < p.len() && p[i] == '*' {
        i += 1;
    }
    i == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards_match_within_a_segment() {
        assert!(matches("*.parquet", "part-0.parquet"));
        assert!(matches("part-?.parquet", "part-1.parquet"));
        assert!(!matches("part-?.parquet", "part-10.parquet"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "a-b-b-c"));
        assert!(!matches("a*b", "a-c"));
    }

    #[test]
    fn hidden_names_and_underscored_partition_folders() {
        let under: HashSet<String> = ["_part".to_string()].into();
        assert!(hidden("_SUCCESS", false, &under));
        assert!(hidden("_temporary", true, &under));
        assert!(hidden(".part-0.parquet.crc", false, &under));
        assert!(!hidden("_part=1", true, &under));
        assert!(hidden("_part=1", false, &under));
        assert!(hidden("_other=1", true, &under));
        assert!(!hidden("dt=2024-01-01", true, &under));
        // A snapshot learns its partition columns from the folders: any `_col=` folder counts.
        let any: HashSet<String> = [ANY_PARTITION_COLUMN.to_string()].into();
        assert!(!hidden("_p=1", true, &any));
        assert!(hidden("_temporary", true, &any));
        assert!(hidden("_p=1", false, &any));
    }

    #[test]
    fn glob_segments_match_with_double_stars() {
        let p = |s: &str| s.split('/').map(str::to_string).collect::<Vec<_>>();
        assert!(segments_match(&p("k=*/*.parquet"), "k=1/a.parquet"));
        assert!(!segments_match(&p("k=*/*.parquet"), "k=1/x/a.parquet"));
        assert!(segments_match(&p("**/*.parquet"), "a.parquet"));
        assert!(segments_match(&p("**/*.parquet"), "k=1/x/a.parquet"));
        assert!(segments_match(&p("**"), "k=1/x/a.parquet"));
        assert!(!segments_match(&p("k=2/**"), "k=1/a.parquet"));
        assert_eq!(
            split_glob("/d/t/k=*/*.parquet"),
            ("/d/t".to_string(), p("k=*/*.parquet"))
        );
    }

    #[tokio::test]
    async fn a_tree_a_file_and_a_glob() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ops-import-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for f in [
            "t/k=1/a.parquet",
            "t/k=1/_SUCCESS",
            "t/k=2/b.parquet",
            "t/_temporary/0/c.parquet",
            "t/.hidden/d.parquet",
        ] {
            touch(&dir, f)?;
        }
        let none = HashSet::new();
        let props = HashMap::new();
        let tree = expand(&[dir.join("t").display().to_string()], &none, &props).await?;
        let rel: Vec<&str> = tree.files.iter().map(|f| f.relative.as_str()).collect();
        assert!(rel[0].ends_with("/t/k=1/a.parquet") && rel[1].ends_with("/t/k=2/b.parquet"));
        assert_eq!(rel.len(), 2);
        assert_eq!(tree.hidden, 3);
        assert!(tree.files[0].path.starts_with("file:///"));

        let one = expand(
            &[dir.join("t/k=2/b.parquet").display().to_string()],
            &none,
            &props,
        )
        .await?;
        assert!(
            one.files[0].relative.ends_with("/t/k=2/b.parquet"),
            "{one:?}"
        );

        let globbed = expand(
            &[format!("{}/t/k=*/*.parquet", dir.display())],
            &none,
            &props,
        )
        .await?;
        let rel: Vec<&str> = globbed.files.iter().map(|f| f.relative.as_str()).collect();
        assert!(rel[0].ends_with("/t/k=1/a.parquet") && rel[1].ends_with("/t/k=2/b.parquet"));
        assert_eq!(rel.len(), 2);
        // One file named two ways is one path.
        let twice = expand(
            &[
                dir.join("t/k=1/../k=1/a.parquet").display().to_string(),
                format!("{}//t/k=1/a.parquet", dir.display()),
            ],
            &none,
            &props,
        )
        .await?;
        assert_eq!(twice.files[0].path, twice.files[1].path);
        let deep = expand(&[format!("{}/t/**", dir.display())], &none, &props).await?;
        assert_eq!(deep.files.len(), 2);

        let missing = expand(&[dir.join("nope").display().to_string()], &none, &props).await;
        assert!(missing.is_err());
        let gs = expand(&["gs://b/k".to_string()], &none, &props)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(gs.contains("gs://") && gs.contains("not supported"), "{gs}");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    /// A one-byte file at `dir/rel`, its folders made.
    fn touch(dir: &Path, rel: &str) -> Result<()> {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap_or(dir))
            .map_err(|e| Error::InvalidInput(e.to_string()))?;
        std::fs::write(&p, b"x").map_err(|e| Error::InvalidInput(e.to_string()))
    }

    /// A Delta or Hudi table's folder is refused, not imported with its log hidden: its files
    /// hold every version of its rows.
    #[tokio::test]
    async fn delta_and_hudi_tables_are_refused() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ops-import-formats-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (table, marker) in [
            ("d", "_delta_log/00000.json"),
            ("h", ".hoodie/hoodie.properties"),
        ] {
            for f in [
                format!("{table}/part-0.parquet"),
                format!("{table}/{marker}"),
            ] {
                touch(&dir, &f)?;
            }
        }
        let none = HashSet::new();
        let props = HashMap::new();
        for (table, format) in [("d", "Delta"), ("h", "Hudi")] {
            let e = expand(&[dir.join(table).display().to_string()], &none, &props)
                .await
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(&format!("is a {format} table")), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
