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

use crate::spill::{Record, Spilled, get_str, need_str, need_u64, put_str, put_u64};

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

impl Record for SourceFile {
    fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, &self.path);
        put_str(out, &self.relative);
        put_u64(out, self.below as u64);
        put_u64(out, u64::from(self.named));
        put_u64(out, self.size);
    }

    fn decode(r: &mut impl std::io::Read) -> std::io::Result<Option<Self>> {
        // A record starts with its path's length: no byte there is the end.
        let Some(path) = get_str(r)? else {
            return Ok(None);
        };
        Ok(Some(Self {
            path,
            relative: need_str(r)?,
            below: usize::try_from(need_u64(r)?).unwrap_or(usize::MAX),
            named: need_u64(r)? != 0,
            size: need_u64(r)?,
        }))
    }
}

/// What expanding the names found.
#[derive(Debug, Default)]
pub struct Expanded {
    /// The files, in the order of the names: each folder's in the order of their listed
    /// paths, then those it reached through symbolic links to files (see `walk`); each
    /// prefix's in S3's key order. Past a few thousand, in a temporary file ([`Spilled`]).
    pub files: Spilled<SourceFile>,
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
            if root.is_dir() {
                let prefix = format!("{}/", root.to_string_lossy().trim_end_matches('/'));
                let files = &mut out.files;
                let hidden = &mut out.hidden;
                // A hidden entry counts when the glob could have named it: `_SUCCESS` beside
                // the `k=*/` folders of `k=*/*.parquet` is no file it skipped.
                let mut hidden_found = |listed: &Path, is_dir: bool| {
                    let listed = slashed(listed);
                    if let Some(rel) = listed.strip_prefix(prefix.as_str())
                        && (segments_match(&pattern, rel)
                            || is_dir && could_match_below(&pattern, rel))
                    {
                        *hidden += 1;
                    }
                };
                walk(&root, underscored, &mut hidden_found, &mut |f| {
                    let matched = f
                        .relative
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rel| segments_match(&pattern, rel));
                    if matched { files.push(f) } else { Ok(()) }
                })?;
            }
            continue;
        }
        // The canonical path: one file named two ways (`a/../a`, `//`, a symbolic link) is
        // one path, so the duplicate checks see it.
        let local = std::fs::canonicalize(&local)
            .map_err(|e| Error::InvalidInput(format!("cannot import '{name}': {e}")))?;
        let meta = std::fs::metadata(&local)
            .map_err(|e| Error::InvalidInput(format!("cannot import '{name}': {e}")))?;
        if meta.is_dir() {
            let files = &mut out.files;
            let hidden = &mut out.hidden;
            walk(&local, underscored, &mut |_, _| *hidden += 1, &mut |f| {
                files.push(f)
            })?;
        } else {
            let relative = slashed(&local);
            out.files.push(SourceFile {
                path: uri(&local),
                below: relative.rfind('/').map_or(0, |i| i + 1),
                named: true,
                relative,
                size: meta.len(),
            })?;
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
        let files = &mut out.files;
        let hidden = &mut out.hidden;
        walk(&local, underscored, &mut |_, _| *hidden += 1, &mut |f| {
            files.push(f)
        })?;
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

/// Whether `relative` (`/`-separated) is matched by `pattern`'s segments, or lies below a
/// folder they match (a glob naming folders names their files, as Hadoop's `globStatus` and a
/// Spark read of a glob do): `*` and `?` within a segment, `**` for any number of segments.
fn segments_match(pattern: &[String], relative: &str) -> bool {
    let ok = prefix_matches(pattern, relative);
    // The whole path, or a folder above the file (at least one segment).
    ok.iter().skip(1).any(|row| row[pattern.len()])
}

/// Whether the glob could name something at or below the folder `relative`: the pattern
/// matches it or a folder above it, or a leading part of the pattern matches it whole.
fn could_match_below(pattern: &[String], relative: &str) -> bool {
    let ok = prefix_matches(pattern, relative);
    ok.iter().skip(1).any(|row| row[pattern.len()])
        || ok.last().is_some_and(|row| row.contains(&true))
}

/// `ok[j][i]`: `pattern[..i]` matches the first `j` segments of `relative` (dynamic
/// programming, no recursion).
fn prefix_matches(pattern: &[String], relative: &str) -> Vec<Vec<bool>> {
    let name: Vec<&str> = relative.split('/').filter(|s| !s.is_empty()).collect();
    let (p, n) = (pattern.len(), name.len());
    let mut ok = vec![vec![false; p + 1]; n + 1];
    ok[0][0] = true;
    for i in 1..=p {
        for j in 0..=n {
            ok[j][i] = if pattern[i - 1] == "**" {
                ok[j][i - 1] || (j > 0 && ok[j - 1][i])
            } else {
                j > 0 && matches(&pattern[i - 1], name[j - 1]) && ok[j - 1][i - 1]
            };
        }
    }
    ok
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
            })?;
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
    // A general purpose S3 bucket lists the keys of a prefix in their UTF-8 binary order, so
    // the files come sorted by path without being held (a directory bucket of S3 Express
    // does not sort: its files come in its order; the duplicate and resume checks go by path,
    // not position).
    let mut found = 0usize;
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
        // Outside the glob before hidden: a hidden key counts only where the glob names it.
        if pattern
            .as_ref()
            .is_some_and(|p| !segments_match(p, relative))
        {
            continue;
        }
        if parts
            .iter()
            .enumerate()
            .any(|(i, p)| hidden(p, i < last, underscored))
        {
            out.hidden += 1;
            continue;
        }
        out.files.push(SourceFile {
            path: url(key),
            relative: key.to_string(),
            below: prefix.len(),
            named: false,
            size: entry.metadata().content_length(),
        })?;
        found += 1;
    }
    if found == 0 && pattern.is_none() && !key.is_empty() && !may_be_empty {
        return Err(Error::InvalidInput(format!(
            "cannot import '{name}': no such object, and no object below it"
        )));
    }
    Ok(())
}

/// `name` in one spelling, to tell whether two runs name the same sources: a local path
/// absolute and canonical where it exists (`./d/`, `d`, `file:///abs/d` alike), an S3 URI's
/// scheme as `s3://`, no trailing `/`; a Glue table or a glob as given otherwise.
pub fn canonical_name(name: &str) -> String {
    let trimmed = name.trim_end_matches('/');
    if let Some((scheme, rest)) = trimmed.split_once("://")
        && ops_core::object_store::S3_SCHEMES.contains(&scheme)
    {
        return format!("s3://{rest}");
    }
    if crate::glue::parse_name(name).is_some() {
        return name.to_string();
    }
    match local_path(trimmed) {
        Ok(path) => std::fs::canonicalize(&path)
            .unwrap_or(path)
            .to_string_lossy()
            .to_string(),
        Err(_) => trimmed.to_string(),
    }
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

/// Every regular file below `root` (canonical), hidden entries skipped, handed to `emit`
/// without holding the list: the tree is walked depth first, each folder's entries in order
/// with a folder's name taken as `name/`, so files come in the order of a sort of their listed
/// paths (`a/b-c` and `a/b.c` before `a/b/x`, as `-` and `.` sort before `/`). A folder of more
/// than [`RUN`] entries is sorted in runs kept in temporary files and merged. Each file is
/// listed by the path it was found at (its partition folders: a symbolic link named
/// `region=eu` is that partition's) and named by its canonical path (what the table records,
/// and what the duplicate checks compare); a folder reached twice (a link to a folder already
/// walked, or to one above it) is walked once. Files reached through symbolic links to files
/// are handed over after the rest, in the order the walk met the links, each once, and not at
/// all when the walk took the file as one of its own folder's.
fn walk(
    root: &Path,
    underscored: &HashSet<String>,
    hidden_found: &mut dyn FnMut(&Path, bool),
    emit: &mut dyn FnMut(SourceFile) -> Result<()>,
) -> Result<()> {
    let below_root = slashed(root).trim_end_matches('/').len() + 1;
    let file = |listed: &Path, path: &Path, size: u64| {
        let relative = slashed(listed);
        SourceFile {
            path: uri(path),
            below: below_root.min(relative.len()),
            named: false,
            relative,
            size,
        }
    };
    // Folders entered (canonical).
    let mut seen: HashSet<PathBuf> = HashSet::new();
    // Files reached through links, once each (by their canonical paths' hashes).
    let mut linked: Spilled<LinkedFile> = Spilled::new();
    let mut targets: HashSet<u128> = HashSet::new();
    let mut stack: Vec<Level> = Vec::new();
    if let Some(level) = open_folder(root, root, &mut seen, underscored, hidden_found)? {
        stack.push(level);
    }
    while let Some(top) = stack.last_mut() {
        let Some(entry) = top.entries.next_entry()? else {
            stack.pop();
            continue;
        };
        let name = entry.key.trim_end_matches('/');
        let listed = top.listed.join(name);
        let real = top.dir.join(name);
        match entry.kind {
            Kind::Folder => {
                if let Some(level) =
                    open_folder(&listed, &real, &mut seen, underscored, hidden_found)?
                {
                    stack.push(level);
                }
            }
            Kind::File(size) => emit(file(&listed, &real, size))?,
            Kind::Linked(size) => {
                let target = std::fs::canonicalize(&real).map_err(|e| link_error(&real, e))?;
                if targets.insert(ops_core::ops::streamed::path_hash(&slashed(&target))) {
                    linked.push(LinkedFile {
                        listed: slashed(&listed),
                        target: slashed(&target),
                        size,
                    })?;
                }
            }
        }
    }
    for l in linked {
        let l = l?;
        let target = PathBuf::from(&l.target);
        // A file of a folder the walk entered was handed over as that folder's file, unless
        // its own name is hidden.
        let taken = target.parent().is_some_and(|p| seen.contains(p))
            && !target
                .file_name()
                .is_some_and(|n| hidden(&n.to_string_lossy(), false, underscored));
        if !taken {
            emit(file(Path::new(&l.listed), &target, l.size))?;
        }
    }
    Ok(())
}

/// Entries of one folder sorted in memory; past this, in sorted runs merged from temporary
/// files.
#[cfg(not(test))]
const RUN: usize = 65_536;
#[cfg(test)]
const RUN: usize = 1000;

/// A folder being walked: the path it was listed at, its canonical path, and its entries
/// still to visit.
struct Level {
    listed: PathBuf,
    dir: PathBuf,
    entries: Entries,
}

/// The entries of `dir` (listed at `listed`), in order of their keys, hidden ones handed to
/// `hidden_found` (with their listed path, and whether they are folders) and left out; `None`
/// when the folder was entered already.
fn open_folder(
    listed: &Path,
    dir: &Path,
    seen: &mut HashSet<PathBuf>,
    underscored: &HashSet<String>,
    hidden_found: &mut dyn FnMut(&Path, bool),
) -> Result<Option<Level>> {
    let io_err = |path: &Path, e: std::io::Error| {
        Error::InvalidInput(format!("cannot list {}: {e}", path.display()))
    };
    let dir = std::fs::canonicalize(dir).map_err(|e| link_error(dir, e))?;
    if !seen.insert(dir.clone()) {
        return Ok(None);
    }
    let mut sorter = Sorter::default();
    for entry in std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
        let entry = entry.map_err(|e| io_err(&dir, e))?;
        let link = entry.file_type().is_ok_and(|t| t.is_symlink());
        let path = entry.path();
        let meta = std::fs::metadata(&path).map_err(|e| {
            if link {
                link_error(&path, e)
            } else {
                io_err(&path, e)
            }
        })?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            return Err(Error::InvalidInput(format!(
                "cannot import {}: its name is not UTF-8, and a table's paths are UTF-8 \
                 strings; rename it",
                path.display()
            )));
        };
        if meta.is_dir() {
            refuse_table_format(&name, &dir.to_string_lossy())?;
        }
        if hidden(&name, meta.is_dir(), underscored) {
            hidden_found(&listed.join(&name), meta.is_dir());
            continue;
        }
        if meta.is_dir() {
            sorter.push(Entry {
                key: format!("{name}/"),
                kind: Kind::Folder,
            })?;
        } else if meta.is_file() {
            sorter.push(Entry {
                key: name,
                kind: if link {
                    Kind::Linked(meta.len())
                } else {
                    Kind::File(meta.len())
                },
            })?;
        }
    }
    Ok(Some(Level {
        listed: listed.to_path_buf(),
        dir,
        entries: sorter.finish()?,
    }))
}

/// The error of a symbolic link that leads nowhere (its target gone, or links in a loop).
fn link_error(path: &Path, e: std::io::Error) -> Error {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        Error::InvalidInput(format!(
            "cannot import {}: it is a symbolic link that leads to no file or folder ({e}); \
             remove it, or point it at what it stood for",
            path.display()
        ))
    } else {
        Error::InvalidInput(format!("cannot list {}: {e}", path.display()))
    }
}

/// An entry of a folder being walked.
#[derive(Debug, Clone)]
struct Entry {
    /// Its name, with a `/` after a folder's: the sort key.
    key: String,
    kind: Kind,
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Folder,
    /// A regular file, with its size.
    File(u64),
    /// A symbolic link to a regular file, with the file's size.
    Linked(u64),
}

impl Record for Entry {
    fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, &self.key);
        let (tag, size) = match self.kind {
            Kind::Folder => (0, 0),
            Kind::File(size) => (1, size),
            Kind::Linked(size) => (2, size),
        };
        put_u64(out, tag);
        put_u64(out, size);
    }

    fn decode(r: &mut impl std::io::Read) -> std::io::Result<Option<Self>> {
        let Some(key) = get_str(r)? else {
            return Ok(None);
        };
        let tag = need_u64(r)?;
        let size = need_u64(r)?;
        let kind = match tag {
            0 => Kind::Folder,
            1 => Kind::File(size),
            _ => Kind::Linked(size),
        };
        Ok(Some(Self { key, kind }))
    }
}

/// A file reached through a symbolic link: where it was listed, and its canonical path.
#[derive(Debug, Clone)]
struct LinkedFile {
    listed: String,
    target: String,
    size: u64,
}

impl Record for LinkedFile {
    fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, &self.listed);
        put_str(out, &self.target);
        put_u64(out, self.size);
    }

    fn decode(r: &mut impl std::io::Read) -> std::io::Result<Option<Self>> {
        let Some(listed) = get_str(r)? else {
            return Ok(None);
        };
        Ok(Some(Self {
            listed,
            target: need_str(r)?,
            size: need_u64(r)?,
        }))
    }
}

/// A folder's entries sorted by key: in memory up to [`RUN`], else in sorted runs.
#[derive(Default)]
struct Sorter {
    current: Vec<Entry>,
    runs: Vec<Spilled<Entry>>,
}

impl Sorter {
    fn push(&mut self, entry: Entry) -> Result<()> {
        self.current.push(entry);
        if self.current.len() >= RUN {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        let mut run = std::mem::take(&mut self.current);
        run.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        let mut spilled = Spilled::new();
        for entry in run {
            spilled.push(entry)?;
        }
        self.runs.push(spilled);
        Ok(())
    }

    fn finish(mut self) -> Result<Entries> {
        if self.runs.is_empty() {
            // Reversed, to pop in order.
            self.current.sort_unstable_by(|a, b| b.key.cmp(&a.key));
            return Ok(Entries::Memory(self.current));
        }
        if !self.current.is_empty() {
            self.spill()?;
        }
        let mut runs: Vec<crate::spill::Iter<Entry>> =
            self.runs.into_iter().map(IntoIterator::into_iter).collect();
        let mut heads = Vec::with_capacity(runs.len());
        for run in &mut runs {
            heads.push(run.next().transpose()?);
        }
        Ok(Entries::Merged { runs, heads })
    }
}

/// A folder's entries in key order.
enum Entries {
    /// Sorted in reverse.
    Memory(Vec<Entry>),
    /// Sorted runs, each with its next entry.
    Merged {
        runs: Vec<crate::spill::Iter<Entry>>,
        heads: Vec<Option<Entry>>,
    },
}

impl Entries {
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        match self {
            Entries::Memory(entries) => Ok(entries.pop()),
            Entries::Merged { runs, heads } => {
                let mut least: Option<usize> = None;
                for (i, head) in heads.iter().enumerate() {
                    let Some(head) = head else { continue };
                    if least
                        .and_then(|l| heads[l].as_ref())
                        .is_none_or(|l| head.key < l.key)
                    {
                        least = Some(i);
                    }
                }
                let Some(i) = least else {
                    return Ok(None);
                };
                let next = match runs.get_mut(i) {
                    Some(run) => run.next().transpose()?,
                    None => None,
                };
                Ok(std::mem::replace(&mut heads[i], next))
            }
        }
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
        // A snapshot learns its partition columns from the folders: any `_col=` folder counts.
        let any: HashSet<String> = [ANY_PARTITION_COLUMN.to_string()].into();
        assert!(!hidden("_p=1", true, &any));
        assert!(hidden("_temporary", true, &any));
        assert!(hidden("_p=1", false, &any));
    }

    #[test]
    fn a_glob_could_match_below_the_folders_its_leading_segments_match() {
        let p = |s: &str| s.split('/').map(str::to_string).collect::<Vec<_>>();
        assert!(could_match_below(&p("k=*/*.parquet"), "k=1"));
        assert!(!could_match_below(&p("k=*/*.parquet"), "_temporary"));
        assert!(!could_match_below(&p("k=*/*.parquet"), "k=1/_temporary"));
        assert!(could_match_below(&p("**/*.parquet"), "_temporary/0"));
        assert!(could_match_below(&p("k=*"), "k=1/x"));
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
        // A pattern matching folders takes the files below them.
        assert!(segments_match(&p("k=*"), "k=1/a.parquet"));
        assert!(segments_match(&p("k=?"), "k=1/x/a.parquet"));
        assert!(segments_match(&p("*"), "k=1/a.parquet"));
        assert!(!segments_match(&p("k=1?"), "k=1/a.parquet"));
        assert!(!segments_match(&p("k=*/*.parquet"), "k=1/x.csv"));
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
        let files = tree.files.to_vec()?;
        let rel: Vec<&str> = files.iter().map(|f| f.relative.as_str()).collect();
        assert!(rel[0].ends_with("/t/k=1/a.parquet") && rel[1].ends_with("/t/k=2/b.parquet"));
        assert_eq!(rel.len(), 2);
        assert_eq!(tree.hidden, 3);
        assert!(files[0].path.starts_with("file:///"));

        let one = expand(
            &[dir.join("t/k=2/b.parquet").display().to_string()],
            &none,
            &props,
        )
        .await?;
        assert!(
            one.files.to_vec()?[0]
                .relative
                .ends_with("/t/k=2/b.parquet"),
            "{one:?}"
        );

        let globbed = expand(
            &[format!("{}/t/k=*/*.parquet", dir.display())],
            &none,
            &props,
        )
        .await?;
        // The glob names none of the hidden entries (`k=1/_SUCCESS` is no parquet file,
        // `_temporary/` and `.hidden/` are no `k=` folders): none is reported skipped.
        assert_eq!(globbed.hidden, 0);
        let globbed = globbed.files.to_vec()?;
        let rel: Vec<&str> = globbed.iter().map(|f| f.relative.as_str()).collect();
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
        let twice = twice.files.to_vec()?;
        assert_eq!(twice[0].path, twice[1].path);
        let deep = expand(&[format!("{}/t/**", dir.display())], &none, &props).await?;
        assert_eq!(deep.files.len(), 2);
        // `**` could name anything below the hidden folders and names `_SUCCESS`.
        assert_eq!(deep.hidden, 3);
        let parquet = expand(&[format!("{}/t/*/*.parquet", dir.display())], &none, &props).await?;
        // `_temporary/` and `.hidden/` could hold files it names; `k=1/_SUCCESS` it does not.
        assert_eq!(parquet.hidden, 2);

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

    /// The walk hands files over in the order of a sort of their whole paths without
    /// sorting them all (`a/b-c` and `a/b.c` before `a/b/x`, though folder `b` sorts before
    /// `b-c` by name), a folder of more entries than a run in merged runs, past the in-memory
    /// part of the list; a file reached through a link is taken once, after the others, and
    /// not at all when the walk takes it as its folder's.
    #[tokio::test]
    async fn the_walk_yields_path_order_and_each_file_once() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ops-import-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut names: Vec<String> = [
            "t/a/b/x.parquet",
            "t/a/b-c",
            "t/a/b.c",
            "t/a/b0/y.parquet",
            "t/a/b/z/w.parquet",
            "t/hidden/_q.parquet",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for i in 0..crate::spill::IN_MEMORY + 10 {
            names.push(format!("t/many/f{i:05}.parquet"));
        }
        for f in &names {
            touch(&dir, f)?;
        }
        #[cfg(unix)]
        {
            // A link to a file of the tree (taken once, as its folder's), to a hidden file
            // (taken through the link) and a second link to that one (once).
            std::os::unix::fs::symlink(dir.join("t/a/b/x.parquet"), dir.join("t/a/l1"))
                .map_err(|e| Error::InvalidInput(e.to_string()))?;
            std::os::unix::fs::symlink(dir.join("t/hidden/_q.parquet"), dir.join("t/a/l2"))
                .map_err(|e| Error::InvalidInput(e.to_string()))?;
            std::os::unix::fs::symlink(dir.join("t/hidden/_q.parquet"), dir.join("t/l3"))
                .map_err(|e| Error::InvalidInput(e.to_string()))?;
        }
        let none = HashSet::new();
        let tree = expand(
            &[dir.join("t").display().to_string()],
            &none,
            &HashMap::new(),
        )
        .await?;
        let root =
            std::fs::canonicalize(dir.join("t")).map_err(|e| Error::InvalidInput(e.to_string()))?;
        let got: Vec<String> = tree
            .files
            .iter()
            .map(|f| f.map(|f| f.relative))
            .collect::<Result<_>>()?;
        let mut want: Vec<String> = names
            .iter()
            .filter(|n| !n.contains("/_"))
            .map(|n| format!("{}/{}", root.display(), n.trim_start_matches("t/")))
            .collect();
        want.sort();
        // The hidden file, once, listed where its first link was met, named by its path.
        #[cfg(unix)]
        {
            want.push(format!("{}/a/l2", root.display()));
            let last = tree.files.iter().last().transpose()?;
            assert_eq!(
                last.map(|f| f.path),
                Some(format!("file://{}/hidden/_q.parquet", root.display()))
            );
        }
        assert_eq!(got, want);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    /// A folder reached through a symbolic link is its listed path's partition (its files
    /// named by their real paths); a link leading nowhere is refused naming it; a glob naming
    /// folders takes their files.
    #[cfg(unix)]
    #[tokio::test]
    async fn links_keep_their_listed_folders_and_globs_name_folders() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ops-import-links-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let err = |e: std::io::Error| Error::InvalidInput(e.to_string());
        touch(&dir, "elsewhere/data/x.parquet")?;
        touch(&dir, "t/region=a/y.parquet")?;
        std::fs::create_dir_all(dir.join("t")).map_err(err)?;
        std::os::unix::fs::symlink(dir.join("elsewhere/data"), dir.join("t/region=b"))
            .map_err(err)?;
        let none = HashSet::new();
        let props = HashMap::new();
        let root = std::fs::canonicalize(dir.join("t")).map_err(err)?;
        let real = std::fs::canonicalize(dir.join("elsewhere/data/x.parquet")).map_err(err)?;
        let tree = expand(&[root.display().to_string()], &none, &props).await?;
        let files = tree.files.to_vec()?;
        let below: Vec<&str> = files.iter().map(|f| &f.relative[f.below..]).collect();
        assert_eq!(below, ["region=a/y.parquet", "region=b/x.parquet"]);
        assert_eq!(files[1].path, uri(&real));

        let globbed = expand(&[format!("{}/region=*", root.display())], &none, &props).await?;
        assert_eq!(globbed.files.len(), 2);

        std::os::unix::fs::symlink(dir.join("nothing"), dir.join("t/region=a/gone.parquet"))
            .map_err(err)?;
        let e = expand(&[root.display().to_string()], &none, &props)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("gone.parquet") && e.contains("symbolic link that leads to no file"),
            "{e}"
        );
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
