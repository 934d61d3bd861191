//! What `maintain` keeps outside the tables: when orphan cleanup last ran on each (it leaves no
//! trace in the metadata), and a lease per table so two runs never maintain one table at once.
//!
//! - The state file is JSON (`{"orphans": {"<key>": <ms>}}`, keys from
//!   [`super::state_key`]), rewritten through a temporary file and a rename while the run holds
//!   an exclusive lock on the state file's name with `.lock` for its extension
//!   (`maintain-state.lock`), so runs on many tables, or two runs, never lose each
//!   other's entries.
//! - A lease is an exclusive OS file lock (`flock`) on `<state>.leases/<hash>.lease`, held for
//!   the table's whole run. The kernel releases it when the process ends, however it ends, so a
//!   dead run's lease is never mistaken for a live one, nor a live one for dead. The file holds
//!   the holder's mark ([`ops_core::run_mark`]) for the message of a run that finds it taken; it
//!   is never deleted (a run that deleted it could race one opening it). Locks are local to a
//!   machine's kernel: runs on several machines need a state directory on a file system that
//!   passes `flock` on (NFSv4 does), or a state file each and tables of their own.
//!
//! Files are read and written on tokio's blocking pool: a state directory may be on a network
//! file system.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ops_core::run_mark;
use ops_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// How long a run waits for the state lock (held only while the file is rewritten).
const STATE_LOCK_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    #[serde(default)]
    orphans: BTreeMap<String, i64>,
}

/// The state file of one run.
#[derive(Debug)]
pub struct State {
    path: PathBuf,
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::InvalidInput(format!(
        "cannot {what} {}: {e}. Pass --state with a file in a writable directory",
        path.display()
    ))
}

/// Runs `f` on the blocking pool.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::InvalidInput(format!("the maintain state could not be used: {e}")))?
}

impl State {
    /// The state at `path`. Nothing is created until a run writes (a dry run writes nothing);
    /// a file that is there must be one maintain wrote.
    pub fn at(path: impl Into<PathBuf>) -> Result<Self> {
        let state = Self { path: path.into() };
        read(&state.path)?;
        Ok(state)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// When orphan cleanup last ran on `key` (ms since the epoch).
    pub async fn orphans_last_run(&self, key: &str) -> Result<Option<i64>> {
        let (path, key) = (self.path.clone(), key.to_string());
        blocking(move || Ok(read(&path)?.orphans.get(&key).copied())).await
    }

    /// Records an orphan cleanup of `key` at `at_ms`.
    pub async fn record_orphans(&self, key: &str, at_ms: i64) -> Result<()> {
        let (path, key) = (self.path.clone(), key.to_string());
        blocking(move || {
            create_parent(&path)?;
            let lock_path = path.with_extension("lock");
            let lock = open_lock_file(&lock_path)?;
            let deadline = std::time::Instant::now() + STATE_LOCK_WAIT;
            loop {
                match lock.try_lock() {
                    Ok(()) => break,
                    Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    Err(TryLockError::WouldBlock) => {
                        return Err(Error::InvalidInput(format!(
                            "the maintain state {} stayed locked by another run for {}s",
                            path.display(),
                            STATE_LOCK_WAIT.as_secs()
                        )));
                    }
                    Err(TryLockError::Error(e)) => return Err(io_error("lock", &lock_path, e)),
                }
            }
            let mut state = read(&path)?;
            state.orphans.insert(key, at_ms);
            let text = serde_json::to_string_pretty(&state).map_err(|e| {
                Error::InvalidInput(format!("cannot write the maintain state: {e}"))
            })?;
            let tmp = path.with_extension(format!("tmp{}", std::process::id()));
            std::fs::write(&tmp, text).map_err(|e| io_error("write", &tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| io_error("replace", &path, e))
            // The lock goes with `lock`.
        })
        .await
    }

    /// The lease file of `key`: a run holds a lock on it while it maintains the table.
    pub fn lease_path(&self, key: &str) -> PathBuf {
        PathBuf::from(format!("{}.leases", self.path.display()))
            .join(format!("{:016x}.lease", fnv1a(key)))
    }

    /// Takes the lease of `key`, or says who holds it.
    pub async fn lease(&self, key: &str) -> Result<std::result::Result<Lease, String>> {
        let path = self.lease_path(key);
        blocking(move || {
            create_parent(&path)?;
            let mut file = open_lock_file(&path)?;
            match file.try_lock() {
                Ok(()) => {
                    // For the message of a run that finds it taken.
                    let mark = run_mark::this_run();
                    let written = file
                        .set_len(0)
                        .and_then(|()| file.rewind())
                        .and_then(|()| file.write_all(format!("{mark}\n").as_bytes()));
                    if let Err(e) = written {
                        tracing::warn!(lease = %path.display(), error = %e, "the lease holder could not be recorded");
                    }
                    Ok(Ok(Lease { _file: file }))
                }
                Err(TryLockError::WouldBlock) => {
                    let mut text = String::new();
                    let _ = file.read_to_string(&mut text);
                    let holder = text.lines().next().unwrap_or("").trim();
                    let who = match run_mark::parse(holder) {
                        Some((host, pid, ms)) => format!(
                            "pid {pid} on {host}{}",
                            chrono::DateTime::from_timestamp_millis(ms)
                                .map_or_else(String::new, |t| format!(", since {}", t.to_rfc3339()))
                        ),
                        None => "a run that has not said who it is yet".to_string(),
                    };
                    Ok(Err(format!(
                        "another maintain run ({who}) holds this table's lease ({}); it is left \
                         to that run",
                        path.display()
                    )))
                }
                Err(TryLockError::Error(e)) => Err(io_error("lock", &path, e)),
            }
        })
        .await
    }
}

fn read(path: &Path) -> Result<StateFile> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(StateFile::default()),
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            Error::InvalidInput(format!(
                "the maintain state file {} is not what maintain writes ({e}); move it away \
                 (the next orphan cleanup of every table is then due) or pass another --state",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StateFile::default()),
        Err(e) => Err(io_error("read", path, e)),
    }
}

fn create_parent(path: &Path) -> Result<()> {
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| io_error("create the directory", dir, e))
        }
        None => Ok(()),
    }
}

/// Opens (creating, never truncating) a file to lock.
fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| io_error("open", path, e))
}

/// A held lease: the lock is released when it is dropped (or the process ends).
#[derive(Debug)]
pub struct Lease {
    _file: File,
}

/// A stable 64-bit hash (std's is seeded per process).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lease_is_exclusive_until_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let state = State::at(dir.path().join("state.json")).unwrap_or_else(|e| panic!("{e}"));
        let first = state.lease("c/a.t").await.unwrap_or_else(|e| panic!("{e}"));
        let first = first.unwrap_or_else(|e| panic!("{e}"));
        // A second holder, even in this process (a lock per open file), is refused and told
        // who holds it.
        let second = state.lease("c/a.t").await.unwrap_or_else(|e| panic!("{e}"));
        let why = second.err().unwrap_or_default();
        assert!(
            why.contains("holds this table's lease")
                && why.contains(&format!("pid {}", std::process::id())),
            "{why}"
        );
        assert!(
            state
                .lease("c/a.other")
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .is_ok()
        );
        drop(first);
        assert!(
            state
                .lease("c/a.t")
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .is_ok()
        );
        // A lease file a dead run left (its mark, no lock) is simply taken.
        std::fs::write(state.lease_path("c/b.t"), "host:1:1\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(
            state
                .lease("c/b.t")
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .is_ok()
        );
    }

    #[tokio::test]
    async fn orphan_runs_are_recorded_and_a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sub/state.json");
        let state = State::at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            !dir.path().join("sub").exists(),
            "nothing is created before a write"
        );
        assert_eq!(state.orphans_last_run("c/a.t").await.ok().flatten(), None);
        state
            .record_orphans("c/a.t", 42)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        state
            .record_orphans("c/a.u", 43)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            state.orphans_last_run("c/a.t").await.ok().flatten(),
            Some(42)
        );
        assert_eq!(
            state.orphans_last_run("c/a.u").await.ok().flatten(),
            Some(43)
        );
        std::fs::write(&path, "not json").unwrap_or_else(|e| panic!("{e}"));
        let e = State::at(&path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("not what maintain writes"), "{e}");
    }
}
