//! What `maintain` keeps outside the tables: when orphan cleanup last ran on each (it leaves no
//! trace in the metadata), and a lease per table so two runs never maintain one table at once.
//!
//! - The state file is JSON (`{"orphans": {"<catalog>/<ns.table>": <ms>}}`), rewritten through a
//!   temporary file and a rename under a lock file (`<state>.lock`), so runs on many tables, or
//!   two runs, never lose each other's entries.
//! - A lease is a file `<state>.leases/<hash>.lease` created exclusively and holding the run's
//!   mark ([`ops_core::run_mark`]) and the table. A lease left by a process that is gone (this
//!   host) or older than [`LEASE_MS`] (another host sharing the state directory) is taken over.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ops_core::run_mark;
use ops_core::{Error, Result};
use serde::{Deserialize, Serialize};

/// How long another host's lease holds: a maintenance run of one table ends well within it.
pub const LEASE_MS: i64 = 12 * 60 * 60 * 1000;

/// How long a state lock may be held before it is taken for a crashed run's.
const LOCK_STALE_MS: i64 = 60_000;

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    #[serde(default)]
    orphans: BTreeMap<String, i64>,
}

/// The state file of one run.
#[derive(Debug)]
pub struct State {
    path: PathBuf,
    /// Serialises this process's read-modify-writes (the lock file serialises processes).
    local: tokio::sync::Mutex<()>,
}

/// The leases this process holds (a lease of this pid not among them is a previous process's
/// whose pid was reused).
fn held() -> &'static Mutex<HashSet<PathBuf>> {
    static HELD: std::sync::OnceLock<Mutex<HashSet<PathBuf>>> = std::sync::OnceLock::new();
    HELD.get_or_init(|| Mutex::new(HashSet::new()))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::InvalidInput(format!(
        "cannot {what} {}: {e}. Pass --state with a file in a writable directory",
        path.display()
    ))
}

impl State {
    /// The state at `path` (created on first write; its directory too).
    pub fn at(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io_error("create the directory", dir, e))?;
        }
        let state = Self {
            path,
            local: tokio::sync::Mutex::new(()),
        };
        // A state file that cannot be read is an error now, not after a table was maintained.
        state.read()?;
        Ok(state)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> Result<StateFile> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) if text.trim().is_empty() => Ok(StateFile::default()),
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                Error::InvalidInput(format!(
                    "the maintain state file {} is not what maintain writes ({e}); move it \
                     away (the next orphan cleanup of every table is then due) or pass another \
                     --state",
                    self.path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StateFile::default()),
            Err(e) => Err(io_error("read", &self.path, e)),
        }
    }

    /// When orphan cleanup last ran on `key` (ms since the epoch).
    pub fn orphans_last_run(&self, key: &str) -> Result<Option<i64>> {
        Ok(self.read()?.orphans.get(key).copied())
    }

    /// Records an orphan cleanup of `key` at `at_ms`.
    pub async fn record_orphans(&self, key: &str, at_ms: i64) -> Result<()> {
        let _local = self.local.lock().await;
        let _lock = FileLock::acquire(&self.path.with_extension("lock")).await?;
        let mut state = self.read()?;
        state.orphans.insert(key.to_string(), at_ms);
        let text = serde_json::to_string_pretty(&state)
            .map_err(|e| Error::InvalidInput(format!("cannot write the maintain state: {e}")))?;
        let tmp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|e| io_error("write", &tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io_error("replace", &self.path, e))
    }

    /// The lease file of `key` (`<catalog>/<ns.table>`): a run holds it while it maintains
    /// the table; remove it by hand only when no run is going.
    pub fn lease_path(&self, key: &str) -> PathBuf {
        PathBuf::from(format!("{}.leases", self.path.display()))
            .join(format!("{:016x}.lease", fnv1a(key)))
    }

    /// Takes the lease of `key`, or says who holds it.
    pub fn lease(&self, key: &str) -> Result<std::result::Result<Lease, String>> {
        let path = self.lease_path(key);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_error("create the directory", dir, e))?;
        }
        let mark = run_mark::this_run();
        for _ in 0..3 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    f.write_all(format!("{mark}\n{key}\n").as_bytes())
                        .map_err(|e| io_error("write", &path, e))?;
                    held()
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(path.clone());
                    return Ok(Ok(Lease { path, mark }));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    let holder = text.lines().next().unwrap_or("").to_string();
                    if holder_alive(&path, &holder) {
                        let since = run_mark::parse(&holder)
                            .and_then(|(_, _, ms)| chrono::DateTime::from_timestamp_millis(ms))
                            .map_or_else(String::new, |t| format!(" since {}", t.to_rfc3339()));
                        let who = run_mark::parse(&holder)
                            .map_or(holder.clone(), |(h, pid, _)| format!("pid {pid} on {h}"));
                        return Ok(Err(format!(
                            "another maintain run ({who}{since}) holds this table's lease \
                             ({}); it is left to that run",
                            path.display()
                        )));
                    }
                    tracing::info!(lease = %path.display(), holder = %holder, "taking over a stale lease");
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => return Err(io_error("create", &path, e)),
            }
        }
        Ok(Err(format!(
            "the lease {} kept reappearing: another run is taking it",
            path.display()
        )))
    }
}

/// Whether a lease's holder may still be running.
fn holder_alive(path: &Path, holder: &str) -> bool {
    match run_mark::parse(holder) {
        // This very process: alive if it holds the lease now.
        Some((host, pid, _)) if host == run_mark::this_host() && pid == std::process::id() => {
            held()
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(path)
        }
        Some(_) => run_mark::may_be_alive(holder, LEASE_MS),
        // Half-written by a run that died at once.
        None => false,
    }
}

/// A held lease, released when dropped.
#[derive(Debug)]
pub struct Lease {
    path: PathBuf,
    mark: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        held()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.path);
        // Only our own lease: a run that took it over as stale owns it now.
        let ours = std::fs::read_to_string(&self.path)
            .is_ok_and(|t| t.lines().next() == Some(self.mark.as_str()));
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A lock file held while the state file is rewritten.
struct FileLock(PathBuf);

impl FileLock {
    async fn acquire(path: &Path) -> Result<Self> {
        let deadline = run_mark::now_ms() + 2 * LOCK_STALE_MS;
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(_) => return Ok(Self(path.to_path_buf())),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .map_or(0, |d| d.as_millis() as i64);
                    if age > LOCK_STALE_MS {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    if run_mark::now_ms() > deadline {
                        return Err(Error::InvalidInput(format!(
                            "the maintain state lock {} is held by another run; remove it if \
                             no maintain run is going",
                            path.display()
                        )));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                Err(e) => return Err(io_error("create", path, e)),
            }
        }
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
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

    #[test]
    fn a_lease_is_exclusive_until_dropped_and_a_dead_holders_is_taken_over() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let state = State::at(dir.path().join("state.json")).unwrap_or_else(|e| panic!("{e}"));
        let first = state.lease("c/a.t").unwrap_or_else(|e| panic!("{e}"));
        let first = first.unwrap_or_else(|e| panic!("{e}"));
        let second = state.lease("c/a.t").unwrap_or_else(|e| panic!("{e}"));
        let why = second.err().unwrap_or_default();
        assert!(why.contains("holds this table's lease"), "{why}");
        assert!(
            state
                .lease("c/a.other")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_ok()
        );
        drop(first);
        assert!(
            state
                .lease("c/a.t")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_ok()
        );
        // A lease of a process that is gone (pid 0 never names a user process).
        let path = state.lease_path("c/b.t");
        std::fs::write(&path, format!("{}:0:1\nc/b.t\n", run_mark::this_host()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            state
                .lease("c/b.t")
                .unwrap_or_else(|e| panic!("{e}"))
                .is_ok()
        );
    }

    #[tokio::test]
    async fn orphan_runs_are_recorded_and_a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sub/state.json");
        let state = State::at(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state.orphans_last_run("c/a.t").ok().flatten(), None);
        state
            .record_orphans("c/a.t", 42)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        state
            .record_orphans("c/a.u", 43)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(state.orphans_last_run("c/a.t").ok().flatten(), Some(42));
        assert_eq!(state.orphans_last_run("c/a.u").ok().flatten(), Some(43));
        std::fs::write(&path, "not json").unwrap_or_else(|e| panic!("{e}"));
        let e = State::at(&path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("not what maintain writes"), "{e}");
    }
}
