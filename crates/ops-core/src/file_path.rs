//! Data-file paths held compactly: the directory shared, the file name apart.
//!
//! A plan of a million small files holds a million paths, and the paths are most of it: a
//! 100-byte path as an `Arc<str>` takes a 128-byte allocation (jemalloc's size class) and a
//! 16-byte pointer wherever it is listed. The files of a table sit in few directories (one per
//! partition, or per thousand files), so [`FilePaths`] keeps each directory once and a
//! [`FilePath`] is an 8-byte pointer to a 48-byte block (the directory's pointer, the name's)
//! and the name: 80 bytes for a 20-byte name, 112 for a 58-byte one as Spark writes, 8 per
//! further listing. (One block holding the name too would need `unsafe`, which the workspace
//! forbids.)
//!
//! A path is split after its last `/` (the whole path is the name when it has none), so two
//! equal paths always split alike: equality, hashing and order are the whole path's, and
//! [`FilePath::hash_str`] hashes a plain `&str` as the path of it would be hashed.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

/// A data file's path: its directory (shared with the other files of that directory) and its
/// name. Cheap to clone; compares, hashes and orders as the whole path.
#[derive(Clone)]
pub struct FilePath(Arc<Parts>);

struct Parts {
    /// Up to and with the last `/` (empty when there is none).
    dir: Arc<str>,
    name: Box<str>,
}

/// Where `path` splits: after its last `/`.
fn split(path: &str) -> (&str, &str) {
    let at = path.rfind('/').map_or(0, |i| i + 1);
    path.split_at(at)
}

impl FilePath {
    /// The path, its directory not shared (see [`FilePaths`] for many paths).
    pub fn new(path: &str) -> Self {
        let (dir, name) = split(path);
        Self::of(Arc::from(dir), name)
    }

    fn of(dir: Arc<str>, name: &str) -> Self {
        Self(Arc::new(Parts {
            dir,
            name: Box::from(name),
        }))
    }

    /// True when `a` and `b` are one path held once (clones of one another).
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// True when `a` and `b` share their directory's copy.
    pub fn shares_dir(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0.dir, &b.0.dir)
    }

    /// The directory, with its trailing `/` (empty for a bare name).
    pub fn dir(&self) -> &str {
        &self.0.dir
    }

    /// The file name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The length of the whole path in bytes.
    pub fn len(&self) -> usize {
        self.0.dir.len() + self.0.name.len()
    }

    /// True for the empty path.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when this is the path `path`.
    pub fn is(&self, path: &str) -> bool {
        let (dir, name) = (self.dir(), self.name());
        path.len() == dir.len() + name.len() && path.starts_with(dir) && path.ends_with(name)
    }

    /// How this path orders against the path `path` (as the two strings do).
    pub fn cmp_str(&self, path: &str) -> Ordering {
        cmp_joined(
            [self.dir().as_bytes(), self.name().as_bytes()],
            [path.as_bytes(), &[]],
        )
    }

    /// The whole path into `buf` (cleared first): a loop over many paths reuses one string.
    pub fn write_into<'b>(&self, buf: &'b mut String) -> &'b str {
        buf.clear();
        buf.push_str(self.dir());
        buf.push_str(self.name());
        buf
    }

    /// The whole path as a new string.
    pub fn to_path_string(&self) -> String {
        let mut s = String::with_capacity(self.len());
        s.push_str(self.dir());
        s.push_str(self.name());
        s
    }

    /// The hash `hasher` gives this path: [`FilePath::hash_str`] of its string, equal. (Not
    /// `hasher.hash_one(path)`, which hashes through [`Hash`]: use the two together only.)
    pub fn hash_with(&self, hasher: &impl BuildHasher) -> u64 {
        hash_parts(hasher, self.dir(), self.name())
    }

    /// The hash `hasher` gives the path `path`, as [`FilePath::hash_with`] would.
    pub fn hash_str(hasher: &impl BuildHasher, path: &str) -> u64 {
        let (dir, name) = split(path);
        hash_parts(hasher, dir, name)
    }
}

fn hash_parts(hasher: &impl BuildHasher, dir: &str, name: &str) -> u64 {
    let mut h = hasher.build_hasher();
    h.write(dir.as_bytes());
    h.write_u8(0xff);
    h.write(name.as_bytes());
    h.finish()
}

impl PartialEq for FilePath {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.name() == other.name()
                && (Arc::ptr_eq(&self.0.dir, &other.0.dir) || self.dir() == other.dir()))
    }
}

impl Eq for FilePath {}

impl PartialEq<str> for FilePath {
    fn eq(&self, other: &str) -> bool {
        self.is(other)
    }
}

impl PartialEq<&str> for FilePath {
    fn eq(&self, other: &&str) -> bool {
        self.is(other)
    }
}

impl Hash for FilePath {
    // Equal paths split alike, so hashing the parts is consistent with `Eq`.
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.dir().hash(state);
        self.name().hash(state);
    }
}

impl Ord for FilePath {
    /// The whole paths' byte order (a plan's files are numbered in it, so it must not change
    /// with how they are held).
    fn cmp(&self, other: &Self) -> Ordering {
        if Arc::ptr_eq(&self.0.dir, &other.0.dir) {
            return self.name().cmp(other.name());
        }
        cmp_joined(
            [self.dir().as_bytes(), self.name().as_bytes()],
            [other.dir().as_bytes(), other.name().as_bytes()],
        )
    }
}

impl PartialOrd for FilePath {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Compares `a[0] + a[1]` with `b[0] + b[1]` without joining them.
fn cmp_joined(a: [&[u8]; 2], b: [&[u8]; 2]) -> Ordering {
    let (mut a, mut b) = (a.iter().copied(), b.iter().copied());
    let (mut x, mut y): (&[u8], &[u8]) = (&[], &[]);
    loop {
        while x.is_empty() {
            match a.next() {
                Some(next) => x = next,
                None => break,
            }
        }
        while y.is_empty() {
            match b.next() {
                Some(next) => y = next,
                None => break,
            }
        }
        match (x.is_empty(), y.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            (false, false) => {}
        }
        let n = x.len().min(y.len());
        match x[..n].cmp(&y[..n]) {
            Ordering::Equal => {}
            unequal => return unequal,
        }
        x = &x[n..];
        y = &y[n..];
    }
}

impl fmt::Display for FilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_some() || f.precision().is_some() {
            return f.pad(&self.to_path_string());
        }
        f.write_str(self.dir())?;
        f.write_str(self.name())
    }
}

impl fmt::Debug for FilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_path_string(), f)
    }
}

impl From<&str> for FilePath {
    fn from(path: &str) -> Self {
        Self::new(path)
    }
}

impl From<String> for FilePath {
    fn from(path: String) -> Self {
        Self::new(&path)
    }
}

impl From<&String> for FilePath {
    fn from(path: &String) -> Self {
        Self::new(path)
    }
}

impl From<&FilePath> for FilePath {
    fn from(path: &FilePath) -> Self {
        path.clone()
    }
}

impl From<FilePath> for String {
    fn from(path: FilePath) -> Self {
        path.to_path_string()
    }
}

impl serde::Serialize for FilePath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for FilePath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let path = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(Self::new(&path))
    }
}

/// Makes [`FilePath`]s that share their directories: one per planner, dropped with its plan.
#[derive(Debug, Default)]
pub struct FilePaths {
    dirs: HashSet<Arc<str>>,
}

impl FilePaths {
    /// A new set of directories.
    pub fn new() -> Self {
        Self::default()
    }

    /// The path `path`, its directory shared with the paths made before.
    pub fn path(&mut self, path: &str) -> FilePath {
        let (dir, name) = split(path);
        FilePath::of(self.dir(dir), name)
    }

    /// `path` with its directory shared with the paths made before (`path` itself when it
    /// already shares it): for paths made one by one, as a plan read back from JSON.
    pub fn share(&mut self, path: &FilePath) -> FilePath {
        let dir = self.dir(path.dir());
        if Arc::ptr_eq(&dir, &path.0.dir) {
            return path.clone();
        }
        FilePath::of(dir, path.name())
    }

    fn dir(&mut self, dir: &str) -> Arc<str> {
        match self.dirs.get(dir) {
            Some(dir) => dir.clone(),
            None => {
                let dir: Arc<str> = Arc::from(dir);
                self.dirs.insert(dir.clone());
                dir
            }
        }
    }
}

/// [`FilePath`]s with a value each, found by path or by the path's string (as a manifest entry
/// holds it) without making a `FilePath` of it.
pub struct FilePathMap<V> {
    entries: hashbrown::HashTable<(FilePath, V)>,
    hasher: hashbrown::DefaultHashBuilder,
}

impl<V> Default for FilePathMap<V> {
    fn default() -> Self {
        Self {
            entries: hashbrown::HashTable::new(),
            hasher: hashbrown::DefaultHashBuilder::default(),
        }
    }
}

impl<V> FilePathMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The value of `path`, `default()` put in first when it has none.
    pub fn entry_or_insert_with(&mut self, path: FilePath, default: impl FnOnce() -> V) -> &mut V {
        let hash = path.hash_with(&self.hasher);
        let hasher = &self.hasher;
        let entry = self
            .entries
            .entry(hash, |(p, _)| *p == path, |(p, _)| p.hash_with(hasher));
        &mut entry.or_insert_with(|| (path, default())).into_mut().1
    }

    /// The value of `path`.
    pub fn get(&self, path: &FilePath) -> Option<&V> {
        let hash = path.hash_with(&self.hasher);
        self.entries.find(hash, |(p, _)| p == path).map(|(_, v)| v)
    }

    /// The value of the path `path`.
    pub fn get_str(&self, path: &str) -> Option<&V> {
        let hash = FilePath::hash_str(&self.hasher, path);
        self.entries.find(hash, |(p, _)| p.is(path)).map(|(_, v)| v)
    }

    /// The value of the path `path`, to change.
    pub fn get_str_mut(&mut self, path: &str) -> Option<&mut V> {
        let hash = FilePath::hash_str(&self.hasher, path);
        self.entries
            .find_mut(hash, |(p, _)| p.is(path))
            .map(|(_, v)| v)
    }

    /// How many paths are held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A set of [`FilePath`]s, found by path or by the path's string.
#[derive(Default)]
pub struct FilePathSet(FilePathMap<()>);

impl FilePathSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `path` (once).
    pub fn insert(&mut self, path: FilePath) {
        self.0.entry_or_insert_with(path, || ());
    }

    /// Whether `path` is held.
    pub fn contains(&self, path: &FilePath) -> bool {
        self.0.get(path).is_some()
    }

    /// Whether the path `path` is held.
    pub fn contains_str(&self, path: &str) -> bool {
        self.0.get_str(path).is_some()
    }

    /// How many paths are held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<FilePath> for FilePathSet {
    fn from_iter<I: IntoIterator<Item = FilePath>>(iter: I) -> Self {
        let mut set = Self::new();
        for path in iter {
            set.insert(path);
        }
        set
    }
}

/// A path as a caller has it: a [`FilePath`] already (kept as it is), or a string, made a
/// `FilePath` whose directory is shared through the receiver's [`FilePaths`].
pub trait IntoFilePath {
    /// This path, its directory from `paths` when it is a new `FilePath`.
    fn into_file_path(self, paths: &mut FilePaths) -> FilePath;
}

impl IntoFilePath for FilePath {
    fn into_file_path(self, _: &mut FilePaths) -> FilePath {
        self
    }
}

impl IntoFilePath for &FilePath {
    fn into_file_path(self, _: &mut FilePaths) -> FilePath {
        self.clone()
    }
}

impl IntoFilePath for &str {
    fn into_file_path(self, paths: &mut FilePaths) -> FilePath {
        paths.path(self)
    }
}

impl IntoFilePath for String {
    fn into_file_path(self, paths: &mut FilePaths) -> FilePath {
        paths.path(&self)
    }
}

impl IntoFilePath for &String {
    fn into_file_path(self, paths: &mut FilePaths) -> FilePath {
        paths.path(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_its_whole_string() {
        let mut paths = FilePaths::new();
        for s in [
            "s3://b/t/data/x=1/f.parquet",
            "f.parquet",
            "/",
            "a/",
            "",
            "a//b",
        ] {
            let p = paths.path(s);
            assert_eq!(p.to_path_string(), s);
            assert_eq!(p.to_string(), s);
            assert_eq!(format!("{p:?}"), format!("{s:?}"));
            assert!(p.is(s));
            assert_eq!(p, FilePath::new(s));
            assert_eq!(p.len(), s.len());
            let h = hashbrown::DefaultHashBuilder::default();
            assert_eq!(p.hash_with(&h), FilePath::hash_str(&h, s));
            assert_eq!(
                serde_json::to_string(&p).unwrap(),
                serde_json::to_string(s).unwrap()
            );
            let back: FilePath = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
            assert_eq!(back, p);
        }
        let p = FilePath::new("a/b.parquet");
        assert!(!p.is("a/b.parquetx"));
        assert!(!p.is("ab.parquet"));
        assert!(!p.is("a/c.parquet"));
    }

    #[test]
    fn a_set_finds_its_paths_by_string() {
        let mut paths = FilePaths::new();
        let mut set: FilePathSet = ["d/a", "d/b", "e/a"]
            .map(|p| paths.path(p))
            .into_iter()
            .collect();
        set.insert(FilePath::new("d/a"));
        assert_eq!(set.len(), 3);
        assert!(set.contains_str("d/a") && set.contains_str("e/a") && set.contains_str("d/b"));
        assert!(set.contains(&FilePath::new("d/b")) && !set.contains(&FilePath::new("d/c")));
        assert!(!set.contains_str("d/") && !set.contains_str("a") && !set.contains_str("d/ab"));
        let mut counts = FilePathMap::new();
        for p in ["d/a", "d/a", "e/a"] {
            *counts.entry_or_insert_with(FilePath::new(p), || 0) += 1;
        }
        *counts.get_str_mut("e/a").unwrap() += 5;
        assert_eq!(
            ["d/a", "e/a", "d/b"].map(|p| counts.get_str(p).copied()),
            [Some(2), Some(6), None]
        );
        assert_eq!(counts.get(&FilePath::new("d/a")), Some(&2));
    }

    #[test]
    fn strings_made_paths_share_their_receiver_s_directories() {
        let mut paths = FilePaths::new();
        let a = "s3://b/d/x".into_file_path(&mut paths);
        let b = String::from("s3://b/d/y").into_file_path(&mut paths);
        let c = a.clone().into_file_path(&mut paths);
        assert!(FilePath::shares_dir(&a, &b) && FilePath::ptr_eq(&a, &c));
        let apart = FilePath::new("s3://b/d/z");
        let shared = paths.share(&apart);
        assert!(FilePath::shares_dir(&shared, &a) && shared == apart);
        assert!(FilePath::ptr_eq(&paths.share(&shared), &shared));
        assert_eq!(format!("[{a:>12}]"), "[  s3://b/d/x]");
        assert_eq!(format!("[{a:.4}]"), "[s3:/]");
    }

    #[test]
    fn files_of_a_directory_share_it() {
        let mut paths = FilePaths::new();
        let a = paths.path("s3://b/t/data/f1.parquet");
        let b = paths.path("s3://b/t/data/f2.parquet");
        assert!(FilePath::shares_dir(&a, &b) && !FilePath::ptr_eq(&a, &b));
        assert_eq!(paths.dirs.len(), 1);
    }

    /// Order is the whole strings' byte order, not (directory, name): `a/b/c` sorts before
    /// `a/bc` although its directory `a/b/` sorts after `a/`.
    #[test]
    fn paths_order_as_their_strings() {
        let strings = [
            "a/b/c", "a/bc", "a/b", "a/", "a", "", "a/b/", "b", "a/b/c/d", "a0", "a/c", "ab/c",
            "a/b/cd", "a/bb",
        ];
        let mut shared = FilePaths::new();
        for x in strings {
            for y in strings {
                let (px, py) = (FilePath::new(x), FilePath::new(y));
                assert_eq!(px.cmp(&py), x.cmp(y), "{x:?} against {y:?}");
                assert_eq!(px == py, x == y, "{x:?} == {y:?}");
                let (sx, sy) = (shared.path(x), shared.path(y));
                assert_eq!(sx.cmp(&sy), x.cmp(y), "{x:?} against {y:?}, shared");
                assert_eq!(px.cmp_str(y), x.cmp(y), "{x:?} against the string {y:?}");
            }
        }
    }
}
