//! A list that leaves memory for a temporary file once it grows: the files an import names and
//! the report of those it adds, which at a million files would otherwise hold every path
//! (about a third of a KiB a file) for the whole run.
//!
//! The first [`IN_MEMORY`] records stay in a vector; past that, every record goes to a
//! temporary file in a small length-prefixed encoding. The file is unlinked as it is made
//! (`tempfile::tempfile`), so nothing is left behind however the process ends — a signal, a
//! closed pipe's exit — and each [`Spilled::iter`] reads it back in order by positional reads
//! of its own, so reads and later pushes never move each other. Where `TMPDIR` is a tmpfs, the
//! spilled part is in memory after all (the page cache): point `TMPDIR` at a disk for a
//! million files.

use std::fmt;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::sync::{Arc, Mutex};

use ops_core::{Error, Result};

/// Records kept in memory before the list spills.
pub const IN_MEMORY: usize = 4096;

/// The longest string a record may hold (a path is at most a few KiB): a longer length read
/// back means the file is not what was written.
const LONGEST_STRING: u64 = 1 << 20;

/// A record of a [`Spilled`] list: how it is written to and read back from its file.
pub trait Record: Sized {
    /// Appends the record's encoding to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// The next record of `r`; `None` at the end.
    fn decode(r: &mut impl Read) -> std::io::Result<Option<Self>>;
}

/// An append-only list of records (see the module docs).
pub struct Spilled<T> {
    memory: Vec<T>,
    file: Option<Mutex<Spill>>,
    len: usize,
}

/// The spilled part: the file, its writer's buffer, and a record's scratch encoding.
struct Spill {
    writer: BufWriter<SharedFile>,
    file: Arc<File>,
    scratch: Vec<u8>,
}

/// The file a [`Spill`] writes through: appends at its end, whatever any reader does.
struct SharedFile(Arc<File>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        (&*self.0).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        (&*self.0).flush()
    }
}

impl<T> Default for Spilled<T> {
    fn default() -> Self {
        Self {
            memory: Vec::new(),
            file: None,
            len: 0,
        }
    }
}

impl<T: Record + Clone> Spilled<T> {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records pushed.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no record was pushed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `record`.
    pub fn push(&mut self, record: T) -> Result<()> {
        if self.file.is_none() && self.memory.len() < IN_MEMORY {
            self.memory.push(record);
            self.len += 1;
            return Ok(());
        }
        let spill = match &mut self.file {
            Some(f) => f,
            None => {
                // Only the writer moves the file's offset (readers read at offsets of their
                // own), so every write lands at the end.
                let file = Arc::new(tempfile::tempfile().map_err(spill_error)?);
                self.file.insert(Mutex::new(Spill {
                    writer: BufWriter::with_capacity(1 << 16, SharedFile(file.clone())),
                    file,
                    scratch: Vec::with_capacity(256),
                }))
            }
        };
        let spill = spill.get_mut().map_err(|_| poisoned())?;
        spill.scratch.clear();
        record.encode(&mut spill.scratch);
        spill
            .writer
            .write_all(&spill.scratch)
            .map_err(spill_error)?;
        self.len += 1;
        Ok(())
    }

    /// Appends every record of `other` (taking its file whole when this list is empty).
    pub fn append(&mut self, other: Spilled<T>) -> Result<()> {
        if self.is_empty() {
            *self = other;
            return Ok(());
        }
        for record in other {
            self.push(record?)?;
        }
        Ok(())
    }

    /// The records in the order pushed. A read error of the temporary file ends the
    /// iteration with that error.
    pub fn iter(&self) -> Iter<T> {
        let reader = self.file.as_ref().map(reader_of);
        Iter {
            memory: self.memory.clone().into_iter(),
            reader,
        }
    }

    /// Every record, in memory (for small lists and tests).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        self.iter().collect()
    }
}

impl<T: Record + Clone> IntoIterator for Spilled<T> {
    type Item = Result<T>;
    type IntoIter = Iter<T>;

    /// The records in the order pushed, the list consumed (the file's space is freed when the
    /// iteration is dropped).
    fn into_iter(self) -> Iter<T> {
        let reader = self.file.as_ref().map(reader_of);
        Iter {
            memory: self.memory.into_iter(),
            reader,
        }
    }
}

/// A reader of the spilled part from its start: the writer flushed, then positional reads
/// from offset 0 (an offset of the reader's own).
fn reader_of(spill: &Mutex<Spill>) -> Result<BufReader<Positional>> {
    let mut spill = spill.lock().map_err(|_| poisoned())?;
    spill.writer.flush().map_err(spill_error)?;
    Ok(BufReader::with_capacity(
        1 << 16,
        Positional {
            file: spill.file.clone(),
            offset: 0,
        },
    ))
}

/// Reads a file from an offset of its own.
pub struct Positional {
    file: Arc<File>,
    offset: u64,
}

impl Read for Positional {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::read_at(&*self.file, buf, self.offset)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_read(&*self.file, buf, self.offset)?;
        self.offset += n as u64;
        Ok(n)
    }
}

/// The records of a [`Spilled`] list, in order.
pub struct Iter<T> {
    memory: std::vec::IntoIter<T>,
    reader: Option<Result<BufReader<Positional>>>,
}

impl<T: Record> Iterator for Iter<T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(record) = self.memory.next() {
            return Some(Ok(record));
        }
        match self.reader.take()? {
            Err(e) => Some(Err(e)),
            Ok(mut r) => match T::decode(&mut r) {
                Ok(Some(record)) => {
                    self.reader = Some(Ok(r));
                    Some(Ok(record))
                }
                Ok(None) => None,
                Err(e) => Some(Err(Error::InvalidInput(format!(
                    "the temporary file listing the files does not read back as written ({e})"
                )))),
            },
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Spilled<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_none() {
            f.debug_list().entries(&self.memory).finish()
        } else {
            write!(
                f,
                "[{} records, {} of them in a temporary file]",
                self.len,
                self.len - self.memory.len()
            )
        }
    }
}

fn spill_error(e: std::io::Error) -> Error {
    Error::InvalidInput(format!(
        "cannot keep the list of files in a temporary file ({e}): set TMPDIR to a folder with \
         free space"
    ))
}

fn poisoned() -> Error {
    Error::InvalidInput("the list of files was left inconsistent by a failed thread".into())
}

/// Writes `s` as its length (LEB128) and bytes.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// Writes `v` as LEB128.
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Reads a LEB128 number; `None` at a clean end of `r` (no byte read).
pub fn get_u64(r: &mut impl Read) -> std::io::Result<Option<u64>> {
    let mut v = 0u64;
    let mut shift = 0u32;
    let mut byte = [0u8; 1];
    loop {
        let n = loop {
            match r.read(&mut byte) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        if n == 0 {
            return if shift == 0 {
                Ok(None)
            } else {
                Err(std::io::ErrorKind::UnexpectedEof.into())
            };
        }
        if shift >= 64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "a number longer than 64 bits",
            ));
        }
        v |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(Some(v));
        }
        shift += 7;
    }
}

/// Reads a number that must be there.
pub fn need_u64(r: &mut impl Read) -> std::io::Result<u64> {
    get_u64(r)?.ok_or_else(|| std::io::ErrorKind::UnexpectedEof.into())
}

/// Reads a string written by [`put_str`].
pub fn need_str(r: &mut impl Read) -> std::io::Result<String> {
    let len = need_u64(r)?;
    str_of_len(r, len)
}

/// Reads a string written by [`put_str`] that starts a record; `None` at a clean end of `r`.
pub fn get_str(r: &mut impl Read) -> std::io::Result<Option<String>> {
    match get_u64(r)? {
        Some(len) => str_of_len(r, len).map(Some),
        None => Ok(None),
    }
}

/// Reads the `len` bytes of a string whose length was read already.
fn str_of_len(r: &mut impl Read, len: u64) -> std::io::Result<String> {
    if len > LONGEST_STRING {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a string of {len} bytes"),
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    r.take(len).read_to_end(&mut bytes)?;
    if bytes.len() as u64 != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    String::from_utf8(bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct R(String, u64);

    impl Record for R {
        fn encode(&self, out: &mut Vec<u8>) {
            put_str(out, &self.0);
            put_u64(out, self.1);
        }
        fn decode(r: &mut impl Read) -> std::io::Result<Option<Self>> {
            let Some(s) = get_str(r)? else {
                return Ok(None);
            };
            Ok(Some(R(s, need_u64(r)?)))
        }
    }

    /// Past the in-memory part, records come back from the file in order, as often as asked,
    /// with pushes between the reads.
    #[test]
    fn records_come_back_in_order_across_the_spill() -> Result<()> {
        let mut list = Spilled::new();
        let n = IN_MEMORY * 2 + 17;
        for i in 0..n {
            list.push(R(format!("file://x/é/{i}"), (i as u64) << 40))?;
        }
        assert_eq!(list.len(), n);
        let first = list.to_vec()?;
        assert_eq!(first.len(), n);
        assert!(
            first
                .iter()
                .enumerate()
                .all(|(i, r)| r.1 == (i as u64) << 40 && r.0 == format!("file://x/é/{i}"))
        );
        list.push(R("last".into(), u64::MAX))?;
        let again = list.to_vec()?;
        assert_eq!(again.len(), n + 1);
        assert_eq!(again.last(), Some(&R("last".into(), u64::MAX)));
        assert_eq!(list.into_iter().count(), n + 1);
        Ok(())
    }

    #[test]
    fn a_short_list_stays_in_memory() -> Result<()> {
        let mut list = Spilled::new();
        list.push(R("a".into(), 1))?;
        assert!(list.file.is_none());
        assert_eq!(list.to_vec()?, vec![R("a".into(), 1)]);
        assert_eq!(format!("{list:?}"), r#"[R("a", 1)]"#);
        Ok(())
    }

    #[test]
    fn a_cut_file_is_an_error() {
        let mut bytes = Vec::new();
        put_u64(&mut bytes, 300);
        bytes.extend_from_slice(b"short");
        assert!(R::decode(&mut bytes.as_slice()).is_err());
        assert!(R::decode(&mut [].as_slice()).is_ok_and(|r| r.is_none()));
    }
}
