use std::fs::{File, OpenOptions, TryLockError};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use crate::{CheckpointError, CheckpointState, JobIdentity};

/// JSON-file-backed checkpoint for resumable data migrations.
///
/// The constructor does not touch disk. [`start`](Self::start) initialises a fresh checkpoint;
/// any accessor on an existing file lazy-loads it. Accessors take `&mut self` because of that
/// lazy load.
#[derive(Debug)]
pub struct CheckpointStore {
    path: PathBuf,
    /// `None` until loaded; `Some(None)` when loaded and no file exists.
    state: Option<Option<CheckpointState>>,
    lock: Option<File>,
    /// Test hook: fail the next write just after its rename, as a failed directory fsync would.
    #[cfg(test)]
    fail_after_rename: bool,
}

impl CheckpointStore {
    /// A store for the checkpoint at `path`; its directory is created on first write.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            state: None,
            lock: None,
            #[cfg(test)]
            fail_after_rename: false,
        }
    }

    /// The checkpoint at `path` as it is on disk now (`None`: no file), read without taking the
    /// lock and without creating anything: for a reader beside a running migration (a monitor,
    /// a progress callback). The file is only ever replaced whole (renamed over), so a read
    /// sees one complete state.
    pub fn peek(path: &Path) -> Result<Option<CheckpointState>, CheckpointError> {
        match std::fs::read(path) {
            Ok(bytes) => CheckpointState::parse(path, &bytes).map(Some),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(source) => Err(CheckpointError::Unreadable {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Where the checkpoint lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True if the checkpoint file is on disk now.
    pub fn exists(&self) -> bool {
        self.path.is_file()
    }

    /// Initialises a fresh checkpoint, overwriting any previous file.
    pub fn start(
        &mut self,
        source_snapshot_id: Option<i64>,
        job: Option<JobIdentity>,
    ) -> Result<(), CheckpointError> {
        self.acquire_lock()?;
        let state = CheckpointState::fresh(source_snapshot_id, job);
        self.persist(&state)
    }

    /// Deletes the checkpoint and forgets it. Idempotent.
    ///
    /// This forgets which batches are already in the destination: roll the destination back to
    /// the snapshot before the job first, or a re-run appends those rows again.
    pub fn reset(&mut self) -> Result<(), CheckpointError> {
        self.acquire_lock()?;
        for path in [self.tmp_path(), self.path.clone()] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(source) => return Err(CheckpointError::Write { path, source }),
            }
        }
        self.sync_dir()?;
        self.state = Some(None);
        Ok(())
    }

    /// Records that batch `batch` created `dest_snapshot_ids` (possibly none) and persists.
    ///
    /// Creates the checkpoint when none exists. `batch` must be strictly greater than
    /// [`last_committed`](Self::last_committed), except that repeating the last call exactly
    /// (same batch, same snapshots) is a retry: it writes the file again without recording the
    /// snapshots twice. That is what to do after an error from this method, which may come after
    /// the new file was already renamed into place (a failed directory fsync): the store then
    /// holds what the file holds, and the retry makes it durable.
    pub fn mark_committed(
        &mut self,
        batch: u64,
        dest_snapshot_ids: &[i64],
    ) -> Result<(), CheckpointError> {
        let mut state = self
            .load()?
            .cloned()
            .unwrap_or_else(|| CheckpointState::fresh(None, None));
        if state.last_committed_batch == Some(batch)
            && state.dest_snapshot_ids.ends_with(dest_snapshot_ids)
        {
            return self.persist(&state);
        }
        if let Some(last) = state.last_committed_batch
            && batch <= last
        {
            return Err(CheckpointError::OutOfOrder {
                path: self.path.clone(),
                batch,
                last,
            });
        }
        state.last_committed_batch = Some(batch);
        state.dest_snapshot_ids.extend_from_slice(dest_snapshot_ids);
        self.persist(&state)
    }

    /// [`mark_committed`](Self::mark_committed) for several batches, in increasing order, with
    /// one write of the file: for batches that landed in one commit (one catalog swap), whose
    /// checkpoint would otherwise cost a file rewrite and two `fsync`s each. Repeating the last
    /// call exactly is a retry, as for `mark_committed`.
    pub fn mark_committed_many(
        &mut self,
        batches: &[(u64, Vec<i64>)],
    ) -> Result<(), CheckpointError> {
        let Some((last_batch, _)) = batches.last() else {
            return Ok(());
        };
        let mut state = self
            .load()?
            .cloned()
            .unwrap_or_else(|| CheckpointState::fresh(None, None));
        let all: Vec<i64> = batches
            .iter()
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        if state.last_committed_batch == Some(*last_batch)
            && state.dest_snapshot_ids.ends_with(&all)
        {
            return self.persist(&state);
        }
        for (batch, ids) in batches {
            if let Some(last) = state.last_committed_batch
                && *batch <= last
            {
                return Err(CheckpointError::OutOfOrder {
                    path: self.path.clone(),
                    batch: *batch,
                    last,
                });
            }
            state.last_committed_batch = Some(*batch);
            state.dest_snapshot_ids.extend_from_slice(ids);
        }
        self.persist(&state)
    }

    /// Marks the migration complete; the file stays for auditing until [`reset`](Self::reset).
    pub fn mark_completed(&mut self) -> Result<(), CheckpointError> {
        let mut state = self
            .load()?
            .cloned()
            .unwrap_or_else(|| CheckpointState::fresh(None, None));
        state.completed = true;
        self.persist(&state)
    }

    /// True if `batch` was already committed.
    pub fn is_committed(&mut self, batch: u64) -> Result<bool, CheckpointError> {
        Ok(self.last_committed()?.is_some_and(|last| batch <= last))
    }

    /// The last committed batch, if any.
    pub fn last_committed(&mut self) -> Result<Option<u64>, CheckpointError> {
        Ok(self.load()?.and_then(|s| s.last_committed_batch))
    }

    /// The source snapshot recorded by the most recent start.
    pub fn source_snapshot_id(&mut self) -> Result<Option<i64>, CheckpointError> {
        Ok(self.load()?.and_then(|s| s.source_snapshot_id))
    }

    /// The job identity recorded by the most recent start (a copy).
    pub fn job(&mut self) -> Result<Option<JobIdentity>, CheckpointError> {
        Ok(self.load()?.and_then(|s| s.job.clone()))
    }

    /// ISO 8601 UTC time of the most recent start.
    pub fn started_at(&mut self) -> Result<Option<String>, CheckpointError> {
        Ok(self.load()?.and_then(|s| s.started_at.clone()))
    }

    /// True once [`mark_completed`](Self::mark_completed) was called.
    pub fn completed(&mut self) -> Result<bool, CheckpointError> {
        Ok(self.load()?.is_some_and(|s| s.completed))
    }

    /// Every destination snapshot the committed batches created, in commit order.
    pub fn dest_snapshot_ids(&mut self) -> Result<Vec<i64>, CheckpointError> {
        Ok(self
            .load()?
            .map(|s| s.dest_snapshot_ids.clone())
            .unwrap_or_default())
    }

    /// The whole state as last loaded or written (`None` when there is no checkpoint).
    pub fn state(&mut self) -> Result<Option<CheckpointState>, CheckpointError> {
        Ok(self.load()?.cloned())
    }

    fn load(&mut self) -> Result<Option<&CheckpointState>, CheckpointError> {
        if self.state.is_none() {
            self.acquire_lock()?;
            self.state = Some(Self::peek(&self.path)?);
        }
        Ok(self.state.as_ref().and_then(Option::as_ref))
    }

    fn tmp_path(&self) -> PathBuf {
        sibling(&self.path, ".tmp")
    }

    fn lock_path(&self) -> PathBuf {
        sibling(&self.path, ".lock")
    }

    /// Takes the advisory lock once; held until the store is dropped. The lock file is never
    /// deleted: unlinking it could let two runs lock different inodes of the "same" file.
    fn acquire_lock(&mut self) -> Result<(), CheckpointError> {
        if self.lock.is_some() {
            return Ok(());
        }
        self.create_dir()?;
        let lock_path = self.lock_path();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|source| CheckpointError::Write {
                path: lock_path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => {
                self.lock = Some(file);
                Ok(())
            }
            Err(TryLockError::WouldBlock) => Err(CheckpointError::Locked {
                path: self.path.clone(),
                lock_path,
            }),
            Err(TryLockError::Error(source)) => Err(CheckpointError::Write {
                path: lock_path,
                source,
            }),
        }
    }

    fn create_dir(&self) -> Result<(), CheckpointError> {
        match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => {
                std::fs::create_dir_all(dir).map_err(|source| CheckpointError::Write {
                    path: dir.to_path_buf(),
                    source,
                })
            }
            _ => Ok(()),
        }
    }

    /// tmp file → write → flush → fsync → rename over the live file → fsync the directory.
    ///
    /// Once the rename succeeds the file holds `state`, so the store does too, even when the
    /// directory fsync then fails: a store that kept the old state after its file moved on
    /// would write that old state back (losing a completion) or let a resumed run disagree with
    /// this one about which batches are recorded.
    fn persist(&mut self, state: &CheckpointState) -> Result<(), CheckpointError> {
        self.acquire_lock()?;
        let tmp = self.tmp_path();
        let write_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CheckpointError::Write { path, source }
        };
        let mut file = File::create(&tmp).map_err(write_err(&tmp))?;
        file.write_all(&state.to_bytes()).map_err(write_err(&tmp))?;
        file.flush().map_err(write_err(&tmp))?;
        file.sync_all().map_err(write_err(&tmp))?;
        drop(file);
        std::fs::rename(&tmp, &self.path).map_err(write_err(&self.path))?;
        self.state = Some(Some(state.clone()));
        #[cfg(test)]
        if std::mem::take(&mut self.fail_after_rename) {
            return Err(CheckpointError::Write {
                path: self.path.clone(),
                source: std::io::Error::other("injected failure after rename"),
            });
        }
        self.sync_dir()?;
        tracing::debug!(path = %self.path.display(), last = ?state.last_committed_batch,
            completed = state.completed, "checkpoint written");
        Ok(())
    }

    fn sync_dir(&self) -> Result<(), CheckpointError> {
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Directories can be opened read-only and fsync-ed on POSIX; this makes the rename
        // itself durable.
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| CheckpointError::Write { path: dir, source })
    }
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn job() -> JobIdentity {
        let mut m = JobIdentity::new();
        m.insert("batch_rows".into(), 50000.into());
        m.insert("write_mode".into(), "append".into());
        m
    }

    #[test]
    fn peek_reads_beside_the_lock_holder_and_creates_nothing() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("sub/c.json");
        assert!(CheckpointStore::peek(&path)?.is_none());
        assert!(!dir.path().join("sub").exists());
        let mut writer = CheckpointStore::new(&path);
        writer.start(Some(7), None)?;
        writer.mark_committed(0, &[11])?;
        // The writer holds the lock; a second store could not even read.
        assert!(matches!(
            CheckpointStore::new(&path).last_committed(),
            Err(CheckpointError::Locked { .. })
        ));
        let seen = CheckpointStore::peek(&path)?.ok_or("no state")?;
        assert_eq!(seen.last_committed_batch, Some(0));
        assert_eq!(seen.dest_snapshot_ids, vec![11]);
        Ok(())
    }

    #[test]
    fn constructor_does_not_touch_disk() -> TestResult {
        let dir = tempfile::tempdir()?;
        let store = CheckpointStore::new(dir.path().join("sub/c.json"));
        assert!(!store.exists());
        assert!(!dir.path().join("sub").exists());
        Ok(())
    }

    #[test]
    fn start_writes_the_seed_format_field_for_field() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("nested/dir/c.json");
        let mut store = CheckpointStore::new(&path);
        store.start(Some(12345), Some(job()))?;
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path)?)?;
        let obj = v.as_object().ok_or("not an object")?;
        let mut keys: Vec<_> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "completed",
                "dest_snapshot_ids",
                "job",
                "last_committed_batch",
                "source_snapshot_id",
                "started_at",
                "version"
            ]
        );
        assert_eq!(v["version"], 1);
        assert_eq!(v["source_snapshot_id"], 12345);
        assert!(v["last_committed_batch"].is_null());
        assert_eq!(v["dest_snapshot_ids"], serde_json::json!([]));
        assert_eq!(v["completed"], false);
        assert_eq!(v["job"]["write_mode"], "append");
        let started = v["started_at"].as_str().ok_or("no started_at")?;
        assert!(started.ends_with('Z') && chrono::DateTime::parse_from_rfc3339(started).is_ok());
        Ok(())
    }

    #[test]
    fn mark_committed_accumulates_and_persists() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        {
            let mut store = CheckpointStore::new(&path);
            store.start(Some(7), None)?;
            assert!(!store.is_committed(0)?);
            store.mark_committed(0, &[100])?;
            store.mark_committed(1, &[101, 102])?;
            store.mark_committed(3, &[])?;
            assert!(store.is_committed(2)?);
            assert!(!store.is_committed(4)?);
        }
        let mut again = CheckpointStore::new(&path);
        assert_eq!(again.last_committed()?, Some(3));
        assert_eq!(again.dest_snapshot_ids()?, vec![100, 101, 102]);
        assert_eq!(again.source_snapshot_id()?, Some(7));
        assert!(!again.completed()?);
        assert_eq!(again.job()?, None);
        Ok(())
    }

    #[test]
    fn out_of_order_commit_is_refused_and_changes_nothing() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut store = CheckpointStore::new(&path);
        store.mark_committed(5, &[1])?;
        let before = std::fs::read(&path)?;
        for bad in [5, 4, 0] {
            let err = store.mark_committed(bad, &[2]).err();
            assert!(
                matches!(err, Some(CheckpointError::OutOfOrder { batch, last: 5, .. }) if batch == bad)
            );
        }
        assert_eq!(std::fs::read(&path)?, before);
        assert_eq!(store.dest_snapshot_ids()?, vec![1]);
        Ok(())
    }

    /// Batches of one commit are recorded with one write, as one-by-one calls would record
    /// them; a repeat is a retry, a batch out of order refuses the whole call.
    #[test]
    fn several_batches_are_recorded_with_one_write() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut store = CheckpointStore::new(&path);
        store.mark_committed(0, &[10])?;
        let group = vec![(1, vec![11]), (2, vec![]), (3, vec![13])];
        store.mark_committed_many(&group)?;
        assert_eq!(store.last_committed()?, Some(3));
        assert_eq!(store.dest_snapshot_ids()?, vec![10, 11, 13]);
        store.mark_committed_many(&group)?;
        assert_eq!(store.dest_snapshot_ids()?, vec![10, 11, 13]);
        let before = std::fs::read(&path)?;
        let err = store
            .mark_committed_many(&[(4, vec![14]), (4, vec![15])])
            .err();
        assert!(matches!(
            err,
            Some(CheckpointError::OutOfOrder {
                batch: 4,
                last: 4,
                ..
            })
        ));
        assert_eq!(std::fs::read(&path)?, before);
        drop(store);
        let mut again = CheckpointStore::new(&path);
        assert_eq!(again.last_committed()?, Some(3));
        assert_eq!(again.dest_snapshot_ids()?, vec![10, 11, 13]);
        Ok(())
    }

    #[test]
    fn mark_committed_without_start_lazily_creates() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut store = CheckpointStore::new(dir.path().join("c.json"));
        store.mark_committed(0, &[9])?;
        assert!(store.exists());
        assert_eq!(store.source_snapshot_id()?, None);
        assert!(store.started_at()?.is_some());
        Ok(())
    }

    #[test]
    fn completed_and_reset() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut store = CheckpointStore::new(&path);
        store.start(None, Some(job()))?;
        store.mark_committed(0, &[1])?;
        store.mark_completed()?;
        assert!(store.completed()?);
        assert!(store.exists(), "a completed checkpoint stays for auditing");
        store.reset()?;
        assert!(!store.exists());
        assert_eq!(store.last_committed()?, None);
        assert_eq!(store.job()?, None);
        store.reset()?; // idempotent
        store.mark_committed(0, &[2])?;
        assert_eq!(store.dest_snapshot_ids()?, vec![2]);
        Ok(())
    }

    #[test]
    fn job_is_a_copy() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut store = CheckpointStore::new(dir.path().join("c.json"));
        store.start(None, Some(job()))?;
        let mut j = store.job()?.ok_or("no job")?;
        j.insert("write_mode".into(), "upsert".into());
        assert_eq!(store.job()?.ok_or("no job")?["write_mode"], "append");
        Ok(())
    }

    #[test]
    fn start_overwrites_and_refreshes_started_at() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut store = CheckpointStore::new(&path);
        store.mark_committed(3, &[1])?;
        store.start(Some(2), None)?;
        assert_eq!(store.last_committed()?, None);
        assert_eq!(store.dest_snapshot_ids()?, Vec::<i64>::new());
        Ok(())
    }

    #[test]
    fn reload_does_not_update_started_at() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        std::fs::write(
            &path,
            r#"{"version":1,"source_snapshot_id":null,"last_committed_batch":null,
               "dest_snapshot_ids":[],"completed":false,"started_at":"2020-01-01T00:00:00Z"}"#,
        )?;
        let mut store = CheckpointStore::new(&path);
        store.mark_committed(0, &[5])?;
        assert_eq!(store.started_at()?.as_deref(), Some("2020-01-01T00:00:00Z"));
        assert_eq!(store.job()?, None, "an absent job loads as None");
        Ok(())
    }

    #[test]
    fn unsupported_version_is_named() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        std::fs::write(&path, r#"{"version": 2, "whatever": true}"#)?;
        let err = CheckpointStore::new(&path).last_committed().err();
        match err {
            Some(CheckpointError::UnsupportedVersion { found, .. }) => assert_eq!(found, "2"),
            other => return Err(format!("expected UnsupportedVersion, got {other:?}").into()),
        }
        Ok(())
    }

    #[test]
    fn corrupt_file_names_path_and_remedy() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        for content in [
            "",
            "{",
            "[]",
            "null",
            r#"{"version":1}"#,
            r#"{"version":1,"source_snapshot_id":"x","last_committed_batch":null,"dest_snapshot_ids":[],"completed":false,"started_at":null}"#,
            r#"{"version":1,"source_snapshot_id":null,"last_committed_batch":-1,"dest_snapshot_ids":[],"completed":false,"started_at":null}"#,
            r#"{"version":1,"source_snapshot_id":null,"last_committed_batch":null,"dest_snapshot_ids":[1],"completed":false,"started_at":null}"#,
            r#"{"version":1,"source_snapshot_id":null,"last_committed_batch":null,"dest_snapshot_ids":[],"completed":false,"started_at":"yesterday"}"#,
            r#"{"version":1,"source_snapshot_id":null,"last_committed_batch":null,"dest_snapshot_ids":[],"completed":false,"started_at":null,"extra":1}"#,
        ] {
            std::fs::write(&path, content)?;
            let err = CheckpointStore::new(&path).last_committed().err();
            let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
            assert!(
                matches!(err, Some(CheckpointError::Corrupt { .. })),
                "{content:?} → {err:?}"
            );
            assert!(
                msg.contains(&path.display().to_string()) && msg.contains("delete it"),
                "{msg}"
            );
        }
        Ok(())
    }

    /// An `import add-files` checkpoint is named as such, not called corrupt: deleting it, as
    /// that advice says, would lose the add-files job's progress.
    #[test]
    fn another_jobs_checkpoint_is_named_not_called_corrupt() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        std::fs::write(
            &path,
            r#"{"from":["x"],"job":"add-files","snapshot_ids":[1],"table":"ns.t"}"#,
        )?;
        let err = CheckpointStore::new(&path).last_committed().err();
        let msg = err.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(
            matches!(err, Some(CheckpointError::OtherJob { ref job, .. }) if job == "add-files"),
            "{err:?}"
        );
        assert!(
            msg.contains("`iceberg-ops import add-files` job") && !msg.contains("delete it"),
            "{msg}"
        );
        Ok(())
    }

    #[test]
    fn unreadable_file_is_an_error() -> TestResult {
        let dir = tempfile::tempdir()?;
        // A directory where the file should be cannot be read as a file.
        let path = dir.path().join("c.json");
        std::fs::create_dir(&path)?;
        let err = CheckpointStore::new(&path).last_committed().err();
        assert!(
            matches!(err, Some(CheckpointError::Unreadable { .. })),
            "{err:?}"
        );
        Ok(())
    }

    #[test]
    fn second_store_on_same_file_fails_fast() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut first = CheckpointStore::new(&path);
        first.start(Some(1), None)?;
        let mut second = CheckpointStore::new(&path);
        assert!(matches!(
            second.mark_committed(0, &[1]),
            Err(CheckpointError::Locked { .. })
        ));
        assert!(matches!(
            second.last_committed(),
            Err(CheckpointError::Locked { .. })
        ));
        drop(first);
        assert_eq!(second.last_committed()?, None);
        Ok(())
    }

    fn on_disk(path: &Path) -> Result<CheckpointState, Box<dyn std::error::Error>> {
        Ok(CheckpointState::parse(path, &std::fs::read(path)?)?)
    }

    #[test]
    fn failure_after_rename_keeps_memory_and_disk_agreeing() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut store = CheckpointStore::new(&path);
        store.start(Some(7), None)?;
        store.mark_committed(0, &[1])?;

        store.fail_after_rename = true;
        assert!(store.mark_committed(1, &[10, 11]).is_err());
        // The file moved on; so must the store.
        assert_eq!(store.state()?, Some(on_disk(&path)?));
        assert_eq!(store.last_committed()?, Some(1));

        // Retrying the same call records the snapshots once.
        store.mark_committed(1, &[10, 11])?;
        assert_eq!(store.dest_snapshot_ids()?, vec![1, 10, 11]);
        assert_eq!(on_disk(&path)?.dest_snapshot_ids, vec![1, 10, 11]);

        // A later write builds on what the file holds instead of an older state.
        store.fail_after_rename = true;
        assert!(store.mark_committed(2, &[20]).is_err());
        store.mark_completed()?;
        let disk = on_disk(&path)?;
        assert_eq!(disk.last_committed_batch, Some(2));
        assert_eq!(disk.dest_snapshot_ids, vec![1, 10, 11, 20]);
        assert!(disk.completed);
        drop(store);
        let mut again = CheckpointStore::new(&path);
        assert_eq!(again.state()?, Some(disk));
        Ok(())
    }

    #[test]
    fn retry_after_failure_before_rename_changes_nothing_twice() -> TestResult {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("c.json");
        let mut store = CheckpointStore::new(&path);
        store.mark_committed(0, &[1])?;
        // A directory where the tmp file goes makes the write fail before the rename.
        std::fs::create_dir(sibling(&path, ".tmp"))?;
        assert!(store.mark_committed(1, &[2]).is_err());
        assert_eq!(store.state()?, Some(on_disk(&path)?));
        assert_eq!(store.last_committed()?, Some(0));
        std::fs::remove_dir(sibling(&path, ".tmp"))?;
        store.mark_committed(1, &[2])?;
        assert_eq!(on_disk(&path)?.dest_snapshot_ids, vec![1, 2]);
        Ok(())
    }

    fn valid_bytes() -> Vec<u8> {
        let mut s = CheckpointState::fresh(Some(42), Some(job()));
        s.last_committed_batch = Some(3);
        s.dest_snapshot_ids = vec![10, 11, 12];
        s.to_bytes()
    }

    proptest! {
        #[test]
        fn any_truncation_is_a_checkpoint_error(cut in 0usize..10_000) {
            let full = valid_bytes();
            let trimmed_len = full.iter().rposition(|b| !b.is_ascii_whitespace()).map_or(0, |i| i + 1);
            let cut = cut % trimmed_len;
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let path = dir.path().join("c.json");
            std::fs::write(&path, &full[..cut]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let res = CheckpointStore::new(&path).last_committed();
            prop_assert!(matches!(res, Err(CheckpointError::Corrupt { .. })), "{:?}", res);
        }

        #[test]
        fn mangled_file_is_an_error_or_a_valid_checkpoint(
            edits in proptest::collection::vec((0usize..10_000, any::<u8>()), 1..8)
        ) {
            let mut bytes = valid_bytes();
            let original = bytes.clone();
            for (pos, byte) in edits {
                let i = pos % bytes.len();
                bytes[i] = byte;
            }
            let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
            let path = dir.path().join("c.json");
            std::fs::write(&path, &bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
            match CheckpointStore::new(&path).state() {
                // Edits that keep it well-formed (a digit for a digit, say) must still parse to
                // a state that round-trips.
                Ok(Some(state)) => {
                    let reparsed = CheckpointState::parse(&path, &state.to_bytes());
                    prop_assert!(reparsed.is_ok());
                }
                Ok(None) => prop_assert!(false, "file exists but loaded as absent"),
                Err(CheckpointError::Corrupt { .. } | CheckpointError::UnsupportedVersion { .. }) => {
                    prop_assert_ne!(bytes, original);
                }
                Err(other) => prop_assert!(false, "unexpected error {other:?}"),
            }
        }
    }
}
