//! The storage behind every FileIO ops-core builds: iceberg's OpenDAL storage, except that a
//! local file (`file:/...`) is written with one blocking call instead of one per operation.
//!
//! OpenDAL's local backend runs each step of a write — making the directory, opening the file,
//! every write, the flush, the `fsync`, the closing `stat` — as its own task on tokio's
//! blocking pool: six or more thread hand-offs per file. A migration at the seed's default
//! batch (50,000 rows) writes hundreds of small data files and, per commit, a manifest, a
//! manifest list and a metadata file; on two cores those hand-offs were the largest cost
//! that grows with the number of files (`perf`: a fifth of the extra CPU of batch 50,000 over
//! batch 500,000, docs/performance.md). Here a local file's bytes are held until it is closed
//! (up to [`HELD_BYTES`]; a larger file is written through as it grows) and the directory,
//! the file, its bytes and its `fsync` are one blocking task.
//!
//! Everything else — reads, listings, deletes, object stores — is OpenDAL's. The path is the
//! one OpenDAL writes: `file:/` stripped, the rest trimmed and its empty segments dropped,
//! under `/`; the file is created or truncated and `fsync`ed on close, as OpenDAL does, but
//! when its first bytes are written rather than when its writer is opened: a file whose writer
//! is dropped before that is never created (nor an existing one truncated).

use std::fmt;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
    StorageFactory,
};
use iceberg_storage_opendal::OpenDalResolvingStorageFactory;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A local file's bytes held before they are written (a file this small is written, with its
/// directory and `fsync`, in one blocking call). Arrow's Parquet writer hands over a whole row
/// group at a time and holds it in memory until then, so a file of one row group costs no
/// more memory than before; a larger one is written through whenever this much is held, and
/// every writer writes through while all of them together hold [`HELD_BYTES_TOTAL`].
pub const HELD_BYTES: usize = 4 << 20;

/// The storage factory of every catalog ops-core opens: [`LocalWritesStorage`] over `inner`
/// (OpenDAL's resolving factory unless a catalog needs its own, e.g. renewing vended S3
/// credentials).
#[derive(Debug, Clone)]
pub struct LocalWritesStorageFactory {
    inner: Arc<dyn StorageFactory>,
}

impl LocalWritesStorageFactory {
    /// Over OpenDAL's resolving factory (every scheme iceberg's OpenDAL storage knows).
    pub fn new() -> Self {
        Self::over(Arc::new(OpenDalResolvingStorageFactory::new()))
    }

    /// Over another factory: its storage serves everything but local writes. `file:/` paths
    /// and bare `/` paths are written to the local disk whatever `inner` is, so `inner` must
    /// read them from the local disk too (OpenDAL's storages do).
    pub fn over(inner: Arc<dyn StorageFactory>) -> Self {
        Self { inner }
    }
}

impl Default for LocalWritesStorageFactory {
    fn default() -> Self {
        Self::new()
    }
}

#[typetag::serde]
impl StorageFactory for LocalWritesStorageFactory {
    fn build(&self, config: &StorageConfig) -> iceberg::Result<Arc<dyn Storage>> {
        Ok(Arc::new(LocalWritesStorage {
            inner: self.inner.build(config)?,
        }))
    }
}

/// `inner` for everything but writes of local files, which are made here (see the module).
#[derive(Debug, Clone)]
pub struct LocalWritesStorage {
    inner: Arc<dyn Storage>,
}

#[async_trait]
#[typetag::serde]
impl Storage for LocalWritesStorage {
    async fn exists(&self, path: &str) -> iceberg::Result<bool> {
        self.inner.exists(&uri(path)).await
    }

    async fn metadata(&self, path: &str) -> iceberg::Result<FileMetadata> {
        self.inner.metadata(&uri(path)).await
    }

    async fn read(&self, path: &str) -> iceberg::Result<Bytes> {
        self.inner.read(&uri(path)).await
    }

    async fn reader(&self, path: &str) -> iceberg::Result<Box<dyn FileRead>> {
        self.inner.reader(&uri(path)).await
    }

    async fn write(&self, path: &str, bs: Bytes) -> iceberg::Result<()> {
        match local_path(path) {
            Some(local) => {
                let mut w = LocalFileWrite::new(path, local);
                w.write(bs).await?;
                w.close().await
            }
            None => self.inner.write(&uri(path), bs).await,
        }
    }

    async fn writer(&self, path: &str) -> iceberg::Result<Box<dyn FileWrite>> {
        match local_path(path) {
            Some(local) => Ok(Box::new(LocalFileWrite::new(path, local))),
            None => self.inner.writer(&uri(path)).await,
        }
    }

    async fn delete(&self, path: &str) -> iceberg::Result<()> {
        self.inner.delete(&uri(path)).await
    }

    async fn delete_prefix(&self, path: &str) -> iceberg::Result<()> {
        self.inner.delete_prefix(&uri(path)).await
    }

    async fn delete_stream(&self, paths: BoxStream<'static, String>) -> iceberg::Result<()> {
        use futures::StreamExt as _;
        let paths = paths.map(|p| uri(&p).into_owned()).boxed();
        self.inner.delete_stream(paths).await
    }

    fn new_input(&self, path: &str) -> iceberg::Result<InputFile> {
        // Unchanged, a bare path refused included: iceberg's FileIO asks exactly this to
        // learn that it must hand the storage `file:` URIs.
        self.inner.new_input(path)
    }

    fn new_output(&self, path: &str) -> iceberg::Result<OutputFile> {
        // A path `inner` refuses is refused here too, as before.
        self.inner.new_output(&uri(path))?;
        // The output file must write through this storage; its other calls (exists, delete)
        // reach `inner` from here. iceberg's FileIO gives it back the bare path a caller
        // named (see `uri`).
        Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
    }
}

/// `path` as the resolving storage takes it. iceberg's FileIO hands a storage `file:/x` for a
/// bare `/x` but keeps `/x` in the output file it returns, whose later calls come back here:
/// OpenDAL's per-scheme storage took the bare path, the resolving one needs its scheme.
fn uri(path: &str) -> std::borrow::Cow<'_, str> {
    // `//host/x` is no bare path (iceberg's FileIO leaves it alone, and OpenDAL refuses it).
    if path.starts_with('/') && !path.starts_with("//") {
        std::borrow::Cow::Owned(format!("file:{path}"))
    } else {
        std::borrow::Cow::Borrowed(path)
    }
}

/// The local path OpenDAL's file-system storage (rooted at `/`) writes `path` to, for a path
/// it reads as local (`file:/...`, or a bare `/...` as above); `None` for every other path,
/// which OpenDAL handles as before (an upper-case `FILE:` included: OpenDAL's own mapping of
/// it is left alone).
fn local_path(path: &str) -> Option<PathBuf> {
    let rest = match path.strip_prefix("file:/") {
        Some(rest) => rest,
        None if path.starts_with("//") => return None,
        None => path.strip_prefix('/')?,
    };
    // OpenDAL's `normalize_path`: trimmed, empty segments dropped, relative to the root `/`.
    let mut local = String::with_capacity(rest.len() + 1);
    for segment in rest.trim().split('/').filter(|s| !s.is_empty()) {
        local.push('/');
        local.push_str(segment);
    }
    // A path naming the root or a directory is not a file this storage writes.
    if local.is_empty() || rest.trim_end().ends_with('/') {
        return None;
    }
    Some(PathBuf::from(local))
}

/// Bytes all local writers of the process hold at once: past this, a writer writes through
/// (opening its file) instead of holding more. A partitioned write keeps one writer per
/// partition open, each of which may hold up to [`HELD_BYTES`].
const HELD_BYTES_TOTAL: usize = 64 << 20;

/// What every [`LocalFileWrite`] holds together (see [`HELD_BYTES_TOTAL`]).
static HELD_TOTAL: AtomicUsize = AtomicUsize::new(0);

/// A local file being written: its bytes held until [`HELD_BYTES`] (or the process's
/// [`HELD_BYTES_TOTAL`]) or its close, then written with its directory, creation and `fsync`
/// in one blocking task. Once a write has failed, every later call fails too: the file may
/// miss bytes the caller already handed over.
struct LocalFileWrite {
    /// The path as the caller named it (for errors).
    location: String,
    local: PathBuf,
    /// Open once the held bytes were first written through.
    file: Option<std::fs::File>,
    held: Vec<Bytes>,
    /// The bytes in `held`, counted in [`HELD_TOTAL`] too.
    held_len: usize,
    state: WriteState,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteState {
    Writing,
    Closed,
    Failed,
}

impl LocalFileWrite {
    fn new(location: &str, local: PathBuf) -> Self {
        Self {
            location: location.to_string(),
            local,
            file: None,
            held: Vec::new(),
            held_len: 0,
            state: WriteState::Writing,
        }
    }

    /// Refuses a call on a closed or failed writer.
    fn check(&self, what: &str) -> iceberg::Result<()> {
        let why = match self.state {
            WriteState::Writing => return Ok(()),
            WriteState::Closed => "it is closed already",
            WriteState::Failed => "an earlier write to it failed, so it may lack bytes",
        };
        Err(iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            format!("{what} the file {}: {why}", self.location),
        ))
    }

    /// Forgets what is held (and its share of [`HELD_TOTAL`]), handing it over.
    fn take_held(&mut self) -> Vec<Bytes> {
        HELD_TOTAL.fetch_sub(self.held_len, Ordering::Relaxed);
        self.held_len = 0;
        std::mem::take(&mut self.held)
    }

    /// Writes what is held (creating the file first if it is not open yet), and `fsync`s
    /// the file when `last`: one blocking task.
    async fn write_held(&mut self, last: bool) -> iceberg::Result<()> {
        let file = self.file.take();
        let held = self.take_held();
        let local = self.local.clone();
        let written = tokio::task::spawn_blocking(move || -> std::io::Result<std::fs::File> {
            let mut file = match file {
                Some(f) => f,
                None => create(&local)?,
            };
            for chunk in &held {
                file.write_all(chunk)?;
            }
            if last {
                file.sync_all()?;
            }
            Ok(file)
        })
        .await;
        let failed = |why: String| {
            iceberg::Error::new(
                iceberg::ErrorKind::Unexpected,
                format!("writing the file {}: {why}", self.location),
            )
        };
        let result = match written {
            Ok(Ok(file)) => {
                if !last {
                    self.file = Some(file);
                }
                return Ok(());
            }
            Ok(Err(e)) => Err(failed(e.to_string()).with_source(e)),
            Err(e) => Err(failed(format!("the writing thread failed: {e}")).with_source(e)),
        };
        self.state = WriteState::Failed;
        result
    }
}

impl Drop for LocalFileWrite {
    fn drop(&mut self) {
        // A writer dropped unclosed (an error elsewhere, a cancelled job) writes nothing.
        self.take_held();
    }
}

/// Creates (or truncates) `local`, its directories first, as OpenDAL's local writer does.
fn create(local: &std::path::Path) -> std::io::Result<std::fs::File> {
    if let Some(dir) = local.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::File::create(local)
}

#[async_trait]
impl FileWrite for LocalFileWrite {
    async fn write(&mut self, bs: Bytes) -> iceberg::Result<()> {
        self.check("writing")?;
        let len = bs.len();
        let total = HELD_TOTAL
            .fetch_add(len, Ordering::Relaxed)
            .saturating_add(len);
        self.held_len = self.held_len.saturating_add(len);
        self.held.push(bs);
        if self.held_len >= HELD_BYTES || total > HELD_BYTES_TOTAL {
            self.write_held(false).await?;
        }
        Ok(())
    }

    async fn close(&mut self) -> iceberg::Result<()> {
        self.check("closing")?;
        self.state = WriteState::Closed;
        self.write_held(true).await
    }
}

// A FileIO's storage is serialized as the storage or factory it wraps, under `inner` (this
// layer has no settings of its own), tagged by typetag: `&dyn _` out, `Box<dyn _>` back.
#[derive(Serialize, Deserialize)]
struct Wrapped<T> {
    inner: T,
}

impl Serialize for LocalWritesStorageFactory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wrapped {
            inner: self.inner.as_ref(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LocalWritesStorageFactory {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wrapped::<Box<dyn StorageFactory>>::deserialize(d)?;
        Ok(Self::over(Arc::from(wire.inner)))
    }
}

impl Serialize for LocalWritesStorage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wrapped {
            inner: self.inner.as_ref(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for LocalWritesStorage {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Wrapped::<Box<dyn Storage>>::deserialize(d)?;
        Ok(Self {
            inner: Arc::from(wire.inner),
        })
    }
}

impl fmt::Debug for LocalFileWrite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalFileWrite")
            .field("location", &self.location)
            .field("held_len", &self.held_len)
            .field("state", &self.state)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    fn file_io() -> iceberg::io::FileIO {
        iceberg::io::FileIOBuilder::new(Arc::new(LocalWritesStorageFactory::new())).build()
    }

    /// Paths are mapped as OpenDAL maps them; anything it would not read as a local file is
    /// left to it.
    #[test]
    fn local_paths_are_the_ones_opendal_writes() {
        let p = |s: &str| local_path(s).map(|p| p.display().to_string());
        assert_eq!(
            p("file:///tmp/t/a.parquet").as_deref(),
            Some("/tmp/t/a.parquet")
        );
        assert_eq!(
            p("file:/tmp/t/a.parquet").as_deref(),
            Some("/tmp/t/a.parquet")
        );
        assert_eq!(
            p("file://tmp//t/a.parquet").as_deref(),
            Some("/tmp/t/a.parquet")
        );
        assert_eq!(
            p("file:///tmp/t/a b%20.parquet ").as_deref(),
            Some("/tmp/t/a b%20.parquet")
        );
        assert_eq!(p("/tmp/plain").as_deref(), Some("/tmp/plain"));
        for other in [
            "s3://b/k",
            "memory:/x",
            "tmp/rel",
            "//host/x",
            "FILE:///tmp/x",
            "file:///",
            "file:///tmp/",
        ] {
            assert_eq!(p(other), None, "{other}");
        }
    }

    /// A small file reaches the disk whole on close (directories made), a large one is
    /// written through as it grows, `write` replaces a file, and what was written reads back
    /// through OpenDAL's reader.
    #[tokio::test]
    async fn local_files_are_written_whole_and_read_back() -> TestResult {
        let dir = tempfile::tempdir()?;
        let io = file_io();
        let small = format!("file://{}/a/b/small.bin", dir.path().display());
        let out = io.new_output(&small)?;
        let mut w = out.writer().await?;
        w.write(Bytes::from_static(b"hello ")).await?;
        w.write(Bytes::from_static(b"world")).await?;
        // Held until closed: nothing on disk yet.
        assert!(!dir.path().join("a/b/small.bin").exists());
        w.close().await?;
        assert_eq!(
            io.new_input(&small)?.read().await?,
            Bytes::from_static(b"hello world")
        );
        assert!(w.write(Bytes::from_static(b"!")).await.is_err());
        assert!(w.close().await.is_err());

        let large = format!("file://{}/large.bin", dir.path().display());
        let mut w = io.new_output(&large)?.writer().await?;
        let chunk = Bytes::from(vec![7u8; HELD_BYTES / 2 + 1]);
        w.write(chunk.clone()).await?;
        w.write(chunk.clone()).await?;
        // Over the held limit: written through, the file exists before its close.
        let on_disk = std::fs::metadata(dir.path().join("large.bin"))?.len();
        assert_eq!(on_disk, 2 * chunk.len() as u64);
        w.write(Bytes::from_static(b"end")).await?;
        w.close().await?;
        let read = io.new_input(&large)?.read().await?;
        assert_eq!(read.len(), 2 * chunk.len() + 3);
        assert!(read.ends_with(b"end"));

        io.new_output(&small)?
            .write(Bytes::from_static(b"new"))
            .await?;
        assert_eq!(
            io.new_input(&small)?.read().await?,
            Bytes::from_static(b"new")
        );
        io.delete(&small).await?;
        assert!(!io.exists(&small).await?);

        // A bare path: the FileIO keeps it in the output file, whose other calls come back
        // to the storage with it.
        let bare = format!("{}/bare/b.bin", dir.path().display());
        let out = io.new_output(&bare)?;
        assert!(!out.exists().await?);
        out.write(Bytes::from_static(b"bare")).await?;
        assert!(out.exists().await?);
        assert_eq!(
            io.new_input(&bare)?.read().await?,
            Bytes::from_static(b"bare")
        );
        out.delete().await?;
        assert!(!dir.path().join("bare/b.bin").exists());
        Ok(())
    }

    /// A file that cannot be made is an error naming it, and nothing is left behind by a
    /// writer dropped before its bytes were written.
    #[tokio::test]
    async fn a_failed_write_names_the_file() -> TestResult {
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("blocker"), b"a file, not a directory")?;
        let io = file_io();
        let bad = format!("file://{}/blocker/x.parquet", dir.path().display());
        let err = io
            .new_output(&bad)?
            .write(Bytes::from_static(b"x"))
            .await
            .err()
            .ok_or("writing under a file succeeded")?;
        assert!(err.to_string().contains(&bad), "{err}");

        // A failed write-through poisons the writer: its close must not report a file that
        // lacks the bytes already handed over.
        let mut w = io.new_output(&bad)?.writer().await?;
        let first = w.write(Bytes::from(vec![1u8; HELD_BYTES])).await;
        assert!(first.is_err());
        let close = w
            .close()
            .await
            .err()
            .ok_or("closing a failed writer succeeded")?;
        assert!(close.to_string().contains("an earlier write"), "{close}");

        let dropped = format!("file://{}/dropped.bin", dir.path().display());
        let mut w = io.new_output(&dropped)?.writer().await?;
        w.write(Bytes::from_static(b"never closed")).await?;
        drop(w);
        assert!(!dir.path().join("dropped.bin").exists());
        Ok(())
    }

    /// The FileIO's storage survives a serde round trip (typetag), local writes included.
    #[tokio::test]
    async fn the_factory_round_trips_through_serde() -> TestResult {
        let factory: Arc<dyn StorageFactory> = Arc::new(LocalWritesStorageFactory::new());
        // Through a `Value` too, which keeps one value per key: one "type" per object.
        let json = serde_json::to_value(factory.as_ref())?;
        assert_eq!(json["type"], "LocalWritesStorageFactory", "{json}");
        assert_eq!(
            json["inner"]["type"], "OpenDalResolvingStorageFactory",
            "{json}"
        );
        let back: Box<dyn StorageFactory> = serde_json::from_value(json)?;
        let dir = tempfile::tempdir()?;
        let io = iceberg::io::FileIOBuilder::new(Arc::from(back)).build();
        let path = format!("file://{}/r.bin", dir.path().display());
        io.new_output(&path)?
            .write(Bytes::from_static(b"r"))
            .await?;
        assert_eq!(std::fs::read(dir.path().join("r.bin"))?, b"r");
        Ok(())
    }
}
