//! Step 1 of an import: the files named by the user, expanded.
//!
//! A name is a file, a folder (its tree, walked without recursion) or a glob (`*` and `?`
//! within a segment, `**` for any number of folders), as a plain path, relative to the working
//! directory, or a `file://` URI. Below a folder, hidden entries are skipped as Java's
//! `TableMigrationUtil` skips them (its `PartitionAwareHiddenPathFilter`): a name starting with
//! `_` or `.` (`_SUCCESS`, `_temporary/`, `.crc` checksums), except a `_col=value` folder of a
//! partition column whose own name starts with `_`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use ops_core::{Error, Result};

/// One file to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// As the table will record it: a `file://` URI of the absolute path.
    pub path: String,
    /// Its path below the folder it was found in (`/`-separated), whose `key=value` folders
    /// give its partition; its file name alone when it was named itself.
    pub relative: String,
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
/// start with `_`, whose `name=value` folders are not hidden.
pub fn expand(names: &[String], underscored: &HashSet<String>) -> Result<Expanded> {
    let mut out = Expanded::default();
    for name in names {
        let local = local_path(name)?;
        let text = local.to_string_lossy().to_string();
        if text.contains(['*', '?']) {
            glob(&text, underscored, &mut out)?;
            continue;
        }
        let meta = std::fs::metadata(&local)
            .map_err(|e| Error::InvalidInput(format!("cannot import '{name}': {e}")))?;
        if meta.is_dir() {
            walk(&local, underscored, &mut out)?;
        } else {
            let file = local
                .file_name()
                .map(|f| f.to_string_lossy().to_string())
                .unwrap_or_default();
            out.files.push(SourceFile {
                path: uri(&local),
                relative: file,
                size: meta.len(),
            });
        }
    }
    Ok(out)
}

/// The absolute local path `name` names: a `file:` URI's path, or a path (relative ones
/// against the working directory). Other schemes are refused, naming what is supported.
fn local_path(name: &str) -> Result<PathBuf> {
    let path = if let Some(rest) = name.strip_prefix("file://") {
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
            "'{name}': importing from {scheme}:// is not supported yet; iceberg-ops imports \
             local files (a path or file:///…)"
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

/// Whether an entry named `name` below an imported folder is hidden (see the module docs).
pub fn hidden(name: &str, is_dir: bool, underscored: &HashSet<String>) -> bool {
    if !(name.starts_with('_') || name.starts_with('.')) {
        return false;
    }
    let partition_dir = is_dir
        && name
            .split_once('=')
            .is_some_and(|(column, _)| underscored.contains(column));
    !partition_dir
}

/// Every regular file below `root`, hidden entries skipped, sorted by path.
fn walk(root: &Path, underscored: &HashSet<String>, out: &mut Expanded) -> Result<()> {
    let io_err = |path: &Path, e: std::io::Error| {
        Error::InvalidInput(format!("cannot list {}: {e}", path.display()))
    };
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let path = entry.path();
            let meta = std::fs::metadata(&path).map_err(|e| io_err(&path, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if hidden(&name, meta.is_dir(), underscored) {
                out.hidden += 1;
                continue;
            }
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let relative = path
                    .strip_prefix(root)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_else(|_| name.clone());
                found.push(SourceFile {
                    path: uri(&path),
                    relative,
                    size: meta.len(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    out.files.extend(found);
    Ok(())
}

/// The files a glob matches. Its segments up to the first with a wildcard are the folder the
/// files are found below (their partition folders are taken from there on); hidden entries
/// are skipped unless a segment names them literally.
fn glob(pattern: &str, underscored: &HashSet<String>, out: &mut Expanded) -> Result<()> {
    let segments: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let fixed = segments
        .iter()
        .take_while(|s| !s.contains(['*', '?']))
        .count();
    let root = PathBuf::from(format!("/{}", segments[..fixed].join("/")));
    let rest: Vec<&str> = segments[fixed..].to_vec();
    let mut found = Vec::new();
    // (folder, index of the next pattern segment)
    let mut stack: Vec<(PathBuf, usize)> = vec![(root.clone(), 0)];
    let mut seen: HashSet<(PathBuf, usize)> = HashSet::new();
    while let Some((dir, at)) = stack.pop() {
        if !seen.insert((dir.clone(), at)) {
            continue;
        }
        let Some(&seg) = rest.get(at) else { continue };
        let last = at + 1 == rest.len();
        if seg == "**" {
            // Zero folders: the next segment here; one or more: every subfolder again.
            if last {
                // `dir/**`: the whole tree.
                walk_into(&dir, &root, underscored, out, &mut found)?;
                continue;
            }
            stack.push((dir.clone(), at + 1));
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue;
            };
            let name = entry.file_name().to_string_lossy().to_string();
            if hidden(&name, meta.is_dir(), underscored) && !seg.starts_with(['_', '.']) {
                continue;
            }
            if seg == "**" {
                if meta.is_dir() {
                    stack.push((path, at));
                }
                continue;
            }
            if !matches(seg, &name) {
                continue;
            }
            if last {
                if meta.is_file() {
                    found.push(source_below(&path, &root, meta.len()));
                }
            } else if meta.is_dir() {
                stack.push((path, at + 1));
            }
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found.dedup_by(|a, b| a.path == b.path);
    out.files.extend(found);
    Ok(())
}

fn walk_into(
    dir: &Path,
    root: &Path,
    underscored: &HashSet<String>,
    out: &mut Expanded,
    found: &mut Vec<SourceFile>,
) -> Result<()> {
    let mut below = Expanded::default();
    walk(dir, underscored, &mut below)?;
    out.hidden += below.hidden;
    for f in below.files {
        let path = PathBuf::from(f.path.trim_start_matches("file://"));
        found.push(source_below(&path, root, f.size));
    }
    Ok(())
}

fn source_below(path: &Path, root: &Path, size: u64) -> SourceFile {
    let relative = path
        .strip_prefix(root)
        .map(|r| r.to_string_lossy().replace('\\', "/"))
        .unwrap_or_else(|_| path.to_string_lossy().to_string());
    SourceFile {
        path: uri(path),
        relative,
        size,
    }
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
    }

    #[test]
    fn a_tree_a_file_and_a_glob() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ops-import-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for f in [
            "t/k=1/a.parquet",
            "t/k=1/_SUCCESS",
            "t/k=2/b.parquet",
            "t/_temporary/0/c.parquet",
            "t/.hidden/d.parquet",
        ] {
            let p = dir.join(f);
            std::fs::create_dir_all(p.parent().unwrap_or(&dir))
                .map_err(|e| Error::InvalidInput(e.to_string()))?;
            std::fs::write(&p, b"x").map_err(|e| Error::InvalidInput(e.to_string()))?;
        }
        let none = HashSet::new();
        let tree = expand(&[dir.join("t").display().to_string()], &none)?;
        let rel: Vec<&str> = tree.files.iter().map(|f| f.relative.as_str()).collect();
        assert_eq!(rel, ["k=1/a.parquet", "k=2/b.parquet"]);
        assert_eq!(tree.hidden, 3);
        assert!(tree.files[0].path.starts_with("file:///"));

        let one = expand(&[dir.join("t/k=2/b.parquet").display().to_string()], &none)?;
        assert_eq!(one.files[0].relative, "b.parquet");

        let globbed = expand(&[format!("{}/t/k=*/*.parquet", dir.display())], &none)?;
        let rel: Vec<&str> = globbed.files.iter().map(|f| f.relative.as_str()).collect();
        assert_eq!(rel, ["k=1/a.parquet", "k=2/b.parquet"]);
        let deep = expand(&[format!("{}/t/**", dir.display())], &none)?;
        assert_eq!(deep.files.len(), 2);

        let missing = expand(&[dir.join("nope").display().to_string()], &none);
        assert!(missing.is_err());
        let s3 = expand(&["s3://b/k".to_string()], &none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            s3.contains("s3://") && s3.contains("not supported yet"),
            "{s3}"
        );
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }
}
