//! Step 3 of an import: a file's Parquet footer, from the file's tail only.

use futures::{Stream, StreamExt};
use iceberg::io::{FileIO, FileRead};
use parquet::file::metadata::{FooterTail, ParquetMetaData, ParquetMetaDataReader};

use ops_core::{Error, Result};

use crate::source::SourceFile;

/// Local files whose footers one blocking task reads in turn: a task per file costs more in
/// thread hand-overs (wake-ups of the blocking pool) than the reads of small files themselves.
const LOCAL_GROUP: usize = 64;

/// The footers of `files`, in their order, `concurrency` reads (or groups of local reads) at a
/// time. The files are taken from the iterator as the reads go, never all at once; an error
/// it yields ends the stream with that error.
pub fn read_many<I>(
    io: &FileIO,
    files: I,
    concurrency: usize,
) -> impl Stream<Item = Result<(SourceFile, ParquetMetaData)>> + Send + 'static
where
    I: Iterator<Item = Result<SourceFile>> + Send + 'static,
{
    // Consecutive local files go in groups, every other file alone.
    let groups = Groups {
        files: files.peekable(),
    };
    let io = io.clone();
    futures::stream::iter(groups)
        .map(move |group| {
            let io = io.clone();
            async move {
                let group = match group {
                    Ok(group) => group,
                    Err(e) => return vec![Err(e)],
                };
                if group.len() == 1 || !group.iter().all(|f| f.path.starts_with("file://")) {
                    let mut out = Vec::with_capacity(group.len());
                    for f in group {
                        let meta = read(&io, &f.path, f.size).await;
                        out.push(meta.map(|m| (f, m)));
                    }
                    return out;
                }
                match tokio::task::spawn_blocking(move || {
                    group
                        .into_iter()
                        .map(|f| {
                            let local = f.path.strip_prefix("file://").unwrap_or(&f.path);
                            let meta = read_local_tail(local, f.size)
                                .map_err(|e| {
                                    Error::InvalidInput(format!("cannot read {}: {e}", f.path))
                                })
                                .and_then(|tail| decode_tail(&f.path, f.size, tail));
                            meta.map(|m| (f, m))
                        })
                        .collect::<Vec<_>>()
                })
                .await
                {
                    Ok(out) => out,
                    Err(e) => vec![Err(Error::InvalidInput(format!(
                        "reading footers failed: {e}"
                    )))],
                }
            }
        })
        .buffered(concurrency.max(1))
        .flat_map(futures::stream::iter)
}

/// Consecutive local files of an iterator in groups of up to [`LOCAL_GROUP`], every other file
/// alone.
struct Groups<I: Iterator> {
    files: std::iter::Peekable<I>,
}

impl<I: Iterator<Item = Result<SourceFile>>> Iterator for Groups<I> {
    type Item = Result<Vec<SourceFile>>;

    fn next(&mut self) -> Option<Self::Item> {
        let first = match self.files.next()? {
            Ok(f) => f,
            Err(e) => return Some(Err(e)),
        };
        let local = first.path.starts_with("file://");
        let mut group = vec![first];
        while local && group.len() < LOCAL_GROUP {
            match self.files.peek() {
                Some(Ok(f)) if f.path.starts_with("file://") => {}
                _ => break,
            }
            match self.files.next() {
                Some(Ok(f)) => group.push(f),
                _ => break,
            }
        }
        Some(Ok(group))
    }
}

/// How much of the tail the first read asks for: most footers fit, so one read per file is the
/// rule and a second one the exception.
const TAIL_GUESS: u64 = 64 * 1024;

/// The footer of the Parquet file at `path` (`size` bytes), read through `io` with at most two
/// ranged reads of its tail. A file that is no Parquet is refused, naming it.
pub async fn read(io: &FileIO, path: &str, size: u64) -> Result<ParquetMetaData> {
    if size < 12 {
        return Err(not_parquet(
            path,
            "shorter than a Parquet header and footer",
        ));
    }
    if let Some(local) = path.strip_prefix("file://") {
        // A local file in one blocking task (open, seek, read): through the FileIO each of
        // those is a hand-over to the blocking pool of its own, which cost more than the
        // reads themselves at a hundred thousand small files.
        let local = local.to_string();
        let tail = tokio::task::spawn_blocking(move || read_local_tail(&local, size))
            .await
            .map_err(|e| Error::InvalidInput(format!("cannot read {path}: {e}")))?
            .map_err(|e| Error::InvalidInput(format!("cannot read {path}: {e}")))?;
        return decode(path, size, tail, None).await;
    }
    let reader = io.new_input(path)?.reader().await?;
    let tail = reader.read(size - size.min(TAIL_GUESS)..size).await?;
    decode(path, size, tail, Some(reader.as_ref())).await
}

fn not_parquet(path: &str, why: &str) -> Error {
    Error::InvalidInput(format!("{path} is not a Parquet file: {why}"))
}

/// The last `min(size, TAIL_GUESS)` bytes of a local file, or its whole footer when that is
/// longer.
fn read_local_tail(path: &str, size: u64) -> std::io::Result<bytes::Bytes> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let mut tail_len = size.min(TAIL_GUESS);
    loop {
        f.seek(SeekFrom::Start(size - tail_len))?;
        let mut buf = vec![0u8; usize::try_from(tail_len).unwrap_or(0)];
        f.read_exact(&mut buf)?;
        let n = buf.len();
        if n >= 8 {
            let mut len = [0u8; 4];
            len.copy_from_slice(&buf[n - 8..n - 4]);
            let need = u64::from(u32::from_le_bytes(len)) + 8;
            if need > tail_len && need <= size {
                tail_len = need;
                continue;
            }
        }
        return Ok(bytes::Bytes::from(buf));
    }
}

/// The footer in `tail`, a local file's last bytes (all of its footer: [`read_local_tail`]).
fn decode_tail(path: &str, size: u64, tail: bytes::Bytes) -> Result<ParquetMetaData> {
    if size < 12 {
        return Err(not_parquet(
            path,
            "shorter than a Parquet header and footer",
        ));
    }
    let len = metadata_len(path, size, &tail)?;
    let n = tail.len();
    if len + 8 > n as u64 {
        return Err(not_parquet(path, "its footer was cut short"));
    }
    ParquetMetaDataReader::decode_metadata(&tail.slice(n - 8 - len as usize..n - 8))
        .map_err(|e| not_parquet(path, &e.to_string()))
}

/// The length of the footer's metadata, from the last 8 bytes of `tail` (checked against the
/// file's size).
fn metadata_len(path: &str, size: u64, tail: &bytes::Bytes) -> Result<u64> {
    let n = tail.len();
    if n < 8 {
        return Err(not_parquet(path, "short read"));
    }
    let mut last8 = [0u8; 8];
    last8.copy_from_slice(&tail[n - 8..]);
    let footer = FooterTail::try_from(last8).map_err(|e| not_parquet(path, &e.to_string()))?;
    let len = footer.metadata_length() as u64;
    if len + 8 > size {
        return Err(not_parquet(
            path,
            "its footer claims more bytes than the file holds",
        ));
    }
    Ok(len)
}

/// The footer in `tail` (the file's last bytes), reading what the tail lacks through `reader`.
async fn decode(
    path: &str,
    size: u64,
    tail: bytes::Bytes,
    reader: Option<&dyn FileRead>,
) -> Result<ParquetMetaData> {
    let n = tail.len();
    let len = metadata_len(path, size, &tail)?;
    let metadata = if len + 8 <= n as u64 {
        tail.slice(n - 8 - len as usize..n - 8)
    } else {
        match reader {
            Some(reader) => reader.read(size - 8 - len..size - 8).await?,
            None => return Err(not_parquet(path, "its footer was cut short")),
        }
    };
    ParquetMetaDataReader::decode_metadata(&metadata).map_err(|e| not_parquet(path, &e.to_string()))
}
