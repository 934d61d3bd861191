//! Whether the files a writer wrote are still as it left them, checked before a commit
//! references them: a commit long after the write (a sorted compaction, a migration's task
//! outputs committed by another process) may find them deleted — by an orphan cleanup run with
//! a short threshold, a lifecycle rule — and would then make the table unreadable.

use futures::StreamExt;
use iceberg::io::FileIO;
use iceberg::spec::DataFile;

/// How many files are looked at at once.
const CONCURRENCY: usize = 8;

/// A written file that is not as its writer left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Altered {
    /// It is gone (or cannot be looked at: the error says why).
    Gone {
        /// The file.
        path: String,
        /// Why it could not be looked at, when it was not simply missing.
        error: Option<String>,
    },
    /// It holds another number of bytes than were written.
    Resized {
        /// The file.
        path: String,
        /// Bytes found.
        found: u64,
        /// Bytes written.
        written: u64,
    },
}

impl Altered {
    /// The file.
    pub fn path(&self) -> &str {
        match self {
            Altered::Gone { path, .. } | Altered::Resized { path, .. } => path,
        }
    }

    /// What happened to the file `writer` (e.g. "its task") wrote, for an error message.
    pub fn describe(&self, writer: &str) -> String {
        match self {
            Altered::Resized {
                path,
                found,
                written,
            } => format!("{path} holds {found} bytes, not the {written} {writer} wrote"),
            Altered::Gone { path, error: None } => {
                format!("{path} is gone (deleted since {writer} wrote it)")
            }
            Altered::Gone {
                path,
                error: Some(e),
            } => format!("{path} is gone or cannot be read ({e})"),
        }
    }
}

/// The first of `files` (in their order) that is gone or holds another size than written;
/// `None` when every one is there as written.
pub async fn first_altered(io: &FileIO, files: &[DataFile]) -> Option<Altered> {
    let wanted: Vec<(String, u64)> = files
        .iter()
        .map(|f| (f.file_path().to_string(), f.file_size_in_bytes()))
        .collect();
    let mut checks = futures::stream::iter(wanted.into_iter().map(|(path, written)| {
        let io = io.clone();
        async move { altered(&io, path, written).await }
    }))
    .buffered(CONCURRENCY);
    while let Some(checked) = checks.next().await {
        if checked.is_some() {
            return checked;
        }
    }
    None
}

/// What happened to `path`, written with `written` bytes; `None`: nothing.
async fn altered(io: &FileIO, path: String, written: u64) -> Option<Altered> {
    let input = match io.new_input(&path) {
        Ok(input) => input,
        Err(e) => {
            return Some(Altered::Gone {
                path,
                error: Some(e.to_string()),
            });
        }
    };
    match input.metadata().await {
        Ok(m) if m.size == written => None,
        Ok(m) => Some(Altered::Resized {
            path,
            found: m.size,
            written,
        }),
        Err(e) => {
            let error = match input.exists().await {
                Ok(false) => None,
                _ => Some(e.to_string()),
            };
            Some(Altered::Gone { path, error })
        }
    }
}
