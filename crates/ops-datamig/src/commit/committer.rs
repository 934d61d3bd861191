//! The single committer: commits batches in batch order, one catalog commit per batch, tagged
//! with the job and batch, and checkpoints each one.
//!
//! Workers may finish out of order; the committer takes their batches in index order, so the
//! destination's history reads batch 0, 1, 2, … whoever wrote the files, and a checkpoint's
//! "last committed batch" means every earlier batch is in too.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use iceberg::TableIdent;
use iceberg::spec::{DataFile, ManifestContentType, ManifestStatus, Struct, Transform};
use iceberg::table::Table;
use ops_checkpoint::CheckpointStore;
use ops_core::CatalogHandle;
use ops_core::file_path::FilePath;
use ops_core::ops::PreparedManifest;
use ops_core::ops::append::{AppendBuilder, AppendSeries, SeriesAppend};
use ops_core::ops::overwrite::OverwriteBuilder;
use ops_core::write::WrittenFiles;

use super::history::{
    MIGRATION_BATCH_PROPERTY, MIGRATION_JOB_PROPERTY, MIGRATION_READ_PROPERTY,
    MIGRATION_SOURCE_SNAPSHOT_PROPERTY, live_files,
};
use crate::execute::worker::{BatchWork, Payload};
use crate::plan::last_keys::LastBatches;
use crate::plan::read::PlannedRead;
use crate::{MigrationError, MigrationResult, OnDuplicateKeys, Progress, Result, WriteMode};

/// Commits batches in order (see the module docs).
pub(crate) struct Committer {
    handle: CatalogHandle,
    ident: TableIdent,
    dest_name: String,
    mode: WriteMode,
    job_id: String,
    /// What the job reads (`history::read_identity`) and the source snapshot, tagged on each
    /// batch's snapshot.
    read_identity: Option<(String, Option<i64>)>,
    /// overwrite_partition: files that were live before the job and are still live, by
    /// partition of the default spec; the first commit touching a partition removes them.
    preexisting: HashMap<Struct, Vec<String>>,
    /// overwrite_partition: files live before the job and still live that were written under
    /// an older partition spec, with that spec's id. Their rows' partitions of the current
    /// spec are known only row by row: a batch replacing a partition one of them may hold
    /// rewrites it, keeping the rows outside the replaced partitions (in current-spec files
    /// that join `preexisting`).
    older: Vec<(DataFile, i32)>,
    /// overwrite_partition: the current spec's partitions this run replaced.
    replaced: HashSet<Struct>,
    /// overwrite_partition: the destination snapshot the job started from.
    dest_snapshot_before: Option<i64>,
    /// overwrite_partition: data files other writers added since the job started, by (spec,
    /// partition), and the snapshots already looked at.
    foreign: HashMap<(i32, Struct), Vec<String>>,
    foreign_seen: HashSet<i64>,
    upsert_keys: Vec<String>,
    on_duplicate_keys: OnDuplicateKeys,
    /// upsert with `on_duplicate_keys last`: each key's last batch (set before the first batch).
    last_batches: Option<Arc<LastBatches>>,
    /// An upsert's index of the destination's keys by file, kept across its chunks.
    dest_keys: super::dest_keys::DestKeys,
    /// The destination as of this job's last commit.
    pub dest: Table,
    /// Whether the job's running marker is set before its first write (an upsert's: the
    /// migrator leaves it to the committer, so a run that changes nothing writes no metadata).
    mark_lazily: bool,
    /// Whether this committer set the running marker.
    marked: bool,
    pub store: Option<CheckpointStore>,
    /// Batches an earlier, crashed run committed without checkpointing, with their snapshots.
    landed: BTreeMap<u64, Vec<i64>>,
    progress: Option<Progress>,
    total: Option<u64>,
    rows_done: u64,
    /// Batches committed or recorded so far, including those of earlier runs.
    pub batches_done: u64,
    /// The index after the last batch handled.
    next: u64,
    rows_inserted: u64,
    rows_updated: u64,
    new_snapshots: Vec<i64>,
    rows_moved: u64,
    bytes_moved: u64,
    batches_committed: u64,
    batches_skipped: u64,
    batches_landed: u64,
}

/// What the committer needs to start.
pub(crate) struct CommitterSetup {
    pub handle: CatalogHandle,
    pub ident: TableIdent,
    pub dest_name: String,
    pub mode: WriteMode,
    pub job_id: String,
    /// What the job reads (`history::read_identity`) and the source snapshot (`None`: not
    /// tagged).
    pub read_identity: Option<(String, Option<i64>)>,
    pub upsert_keys: Vec<String>,
    pub on_duplicate_keys: OnDuplicateKeys,
    pub dest: Table,
    pub dest_snapshot_before: Option<i64>,
    pub store: Option<CheckpointStore>,
    pub landed: BTreeMap<u64, Vec<i64>>,
    pub progress: Option<Progress>,
    pub total: Option<u64>,
    /// Batches committed and checkpointed before this run, in tasks not read again.
    pub resumed_batches: u64,
    /// Their rows, when known.
    pub resumed_rows: u64,
    /// The first batch index this run handles.
    pub resume_from: u64,
    /// Set the job's running marker just before the first write (upserts, whose rows reach
    /// the committer unwritten); the caller marked the table already otherwise.
    pub mark_lazily: bool,
}

impl Committer {
    pub async fn new(s: CommitterSetup) -> Result<Self> {
        let mut preexisting: HashMap<Struct, Vec<String>> = HashMap::new();
        let mut older = Vec::new();
        if s.mode == WriteMode::OverwritePartition {
            refuse_resume_after_respec(&s)?;
            if let Some(id) = s.dest_snapshot_before
                && s.dest.metadata().snapshot_by_id(id).is_none()
            {
                return Err(MigrationError::InvalidInput(format!(
                    "destination {} no longer has snapshot {id}, its state before this \
                     overwrite_partition job (expired?); without it the job cannot tell which \
                     files to replace — roll back what the job committed and run it afresh",
                    s.dest_name
                )));
            }
            let before: HashSet<String> = live_files(&s.dest, s.dest_snapshot_before)
                .await?
                .into_iter()
                .map(|(f, _)| f.file_path().to_string())
                .collect();
            let default_spec = s.dest.metadata().default_partition_spec_id();
            for (file, spec_id) in
                live_files(&s.dest, s.dest.metadata().current_snapshot_id()).await?
            {
                if !before.contains(file.file_path()) {
                    continue;
                }
                if spec_id != default_spec {
                    older.push((file, spec_id));
                    continue;
                }
                preexisting
                    .entry(ops_core::ops::canonical_partition(file.partition()))
                    .or_default()
                    .push(file.file_path().to_string());
            }
        }
        Ok(Self {
            handle: s.handle,
            ident: s.ident,
            dest_name: s.dest_name,
            mode: s.mode,
            job_id: s.job_id,
            read_identity: s.read_identity,
            preexisting,
            older,
            replaced: HashSet::new(),
            dest_snapshot_before: s.dest_snapshot_before,
            foreign: HashMap::new(),
            foreign_seen: HashSet::new(),
            upsert_keys: s.upsert_keys,
            on_duplicate_keys: s.on_duplicate_keys,
            last_batches: None,
            dest_keys: Default::default(),
            dest: s.dest,
            mark_lazily: s.mark_lazily,
            marked: false,
            store: s.store,
            landed: s.landed,
            progress: s.progress,
            total: s.total,
            rows_done: s.resumed_rows,
            batches_done: s.resumed_batches,
            next: s.resume_from,
            rows_inserted: 0,
            rows_updated: 0,
            new_snapshots: Vec::new(),
            rows_moved: 0,
            bytes_moved: 0,
            batches_committed: 0,
            batches_skipped: s.resumed_batches,
            batches_landed: 0,
        })
    }

    /// Commits, records or counts one batch. Batches must come in increasing index order.
    pub async fn handle(&mut self, work: BatchWork) -> Result<()> {
        let BatchWork {
            index,
            rows,
            bytes,
            payload,
            manifest,
        } = work;
        if !matches!(payload, Payload::Skipped) && index < self.next {
            return Err(MigrationError::InvalidInput(format!(
                "batch {index} arrived after batch {}; batches commit in increasing order (a \
                 task output holds a batch twice or out of order)",
                self.next - 1
            )));
        }
        // Files this run wrote are deleted if their commit is refused; referenced ones never.
        let owned = matches!(payload, Payload::Written(_));
        // Only a written batch of an append comes with one; anything else would leave it behind.
        let manifest = match (manifest, &payload, self.mode) {
            (Some(m), Payload::Written(_), WriteMode::Append) => Some(m),
            (Some(m), _, _) => {
                m.discard(&self.dest).await;
                None
            }
            (None, _, _) => None,
        };
        match payload {
            Payload::Skipped => {
                self.rows_done += rows;
                self.batches_skipped += 1;
                self.batches_done += 1;
                return Ok(());
            }
            Payload::Landed => {
                let snapshots = self.landed.get(&index).cloned().unwrap_or_default();
                tracing::info!(
                    batch = index,
                    ?snapshots,
                    "batch already landed before a crash; recording it"
                );
                if let Some(s) = &mut self.store {
                    s.mark_committed(index, &snapshots)?;
                }
                // Recorded, not skipped: the job wrote it, this run only learnt that it landed
                // (its rows were moved by the run that crashed, so they stay out of rows_moved).
                self.batches_committed += 1;
                self.batches_landed += 1;
                self.batches_done += 1;
                self.rows_done += rows;
            }
            Payload::Written(w) | Payload::Referenced(w) => {
                let files = owned.then(|| w.clone());
                let prepared = manifest.clone();
                let snapshots = match self.commit_files(index, w, manifest).await {
                    Ok(s) => s,
                    Err(e) => {
                        // A refused commit did not land: its files are garbage. When the outcome
                        // is unknown they may be in the table, so they stay.
                        let definite = matches!(
                            e,
                            MigrationError::Core(
                                ops_core::Error::CommitConflict { .. }
                                    | ops_core::Error::InvalidInput(_)
                            )
                        );
                        match files {
                            Some(files) if definite => {
                                if let Some(m) = &prepared {
                                    m.discard(&self.dest).await;
                                }
                                crate::execute::worker::discard(
                                    &self.dest,
                                    Payload::Written(files),
                                )
                                .await;
                            }
                            Some(files) => {
                                let paths: Vec<&str> =
                                    files.files.iter().map(|f| f.file_path()).collect();
                                tracing::warn!(
                                    batch = index,
                                    ?paths,
                                    "commit outcome unknown; its data files are kept"
                                );
                            }
                            None => {}
                        }
                        return Err(e);
                    }
                };
                self.committed(index, rows, bytes, snapshots)?;
            }
            Payload::Rows(batches) => {
                let snapshots = self.upsert(index, &batches).await?;
                self.committed(index, rows, bytes, snapshots)?;
            }
        }
        self.next = index + 1;
        if let Some(p) = &self.progress {
            p(self.rows_done, self.total);
        }
        Ok(())
    }

    /// Commits, records or counts batches that were all waiting at once, in index order.
    /// Consecutive written batches of an append commit together ([`AppendSeries`]): one
    /// snapshot each, as [`Self::handle`] makes, but one metadata file and one catalog swap for
    /// all of them, so a committer that fell behind its workers catches up instead of paying
    /// each batch's `fsync`s in turn. On failure returns the first batch of the failed commit
    /// with the error.
    pub async fn handle_group(
        &mut self,
        works: Vec<BatchWork>,
    ) -> std::result::Result<(), (u64, MigrationError)> {
        let mut run: Vec<BatchWork> = Vec::new();
        let mut works = works.into_iter();
        while let Some(work) = works.next() {
            // Only batches whose worker wrote their manifest: their commit is the metadata
            // alone, which is what waits behind the writing. A file-copy batch has no rows to
            // write, so grouping it would only turn many small commits into one late one.
            let joins = self.mode == WriteMode::Append
                && work.manifest.is_some()
                && matches!(&work.payload, Payload::Written(w) if !w.files.is_empty());
            if joins {
                run.push(work);
                continue;
            }
            let index = work.index;
            let outcome = match self.commit_run(std::mem::take(&mut run)).await {
                Ok(()) => self.handle(work).await.map_err(|e| (index, e)),
                Err(e) => {
                    self.discard_run(vec![work]).await;
                    Err(e)
                }
            };
            if outcome.is_err() {
                // Never to be committed: the batches after the failed one.
                self.discard_run(works.collect()).await;
                return outcome;
            }
        }
        self.commit_run(run).await
    }

    /// Commits written batches of an append as one series (one alone as [`Self::handle`]).
    async fn commit_run(
        &mut self,
        mut run: Vec<BatchWork>,
    ) -> std::result::Result<(), (u64, MigrationError)> {
        if run.len() <= 1 {
            if let Some(work) = run.pop() {
                let index = work.index;
                self.handle(work).await.map_err(|e| (index, e))?;
            }
            return Ok(());
        }
        let first = run[0].index;
        let mut expected = self.next;
        let mut disorder = None;
        for w in &run {
            if w.index < expected {
                disorder = Some(MigrationError::InvalidInput(format!(
                    "batch {} arrived after batch {}; batches commit in increasing order (a \
                     task output holds a batch twice or out of order)",
                    w.index,
                    expected.saturating_sub(1)
                )));
                break;
            }
            expected = w.index + 1;
        }
        if let Some(e) = disorder {
            self.discard_run(run).await;
            return Err((first, e));
        }
        let mut series = AppendSeries::new(&self.handle, self.dest.clone());
        for w in &run {
            let Payload::Written(written) = &w.payload else {
                continue;
            };
            series = series.append(SeriesAppend {
                written: if w.manifest.is_some() {
                    WrittenFiles::default()
                } else {
                    written.clone()
                },
                prepared: w.manifest.clone(),
                properties: self.properties(w.index),
            });
        }
        let (table, metrics) = match series.await {
            Ok(r) => r,
            Err(e) => {
                let e = MigrationError::from(e);
                // As in `handle`: a refused commit's files are garbage; an unknown outcome's
                // may be in the table.
                let definite = matches!(
                    e,
                    MigrationError::Core(
                        ops_core::Error::CommitConflict { .. } | ops_core::Error::InvalidInput(_)
                    )
                );
                if definite {
                    self.discard_run(run).await;
                } else {
                    let paths: Vec<&str> = run
                        .iter()
                        .filter_map(|w| match &w.payload {
                            Payload::Written(f) => Some(f),
                            _ => None,
                        })
                        .flat_map(|f| f.files.iter().map(|f| f.file_path()))
                        .collect();
                    tracing::warn!(
                        first_batch = first,
                        ?paths,
                        "commit outcome unknown; its data files are kept"
                    );
                }
                return Err((first, e));
            }
        };
        self.dest = table;
        tracing::debug!(
            first_batch = first,
            batches = run.len(),
            "committed batches together"
        );
        // Every batch of the series is in the table: count them all, then checkpoint them
        // with one write (one per batch would give back part of the saved `fsync`s).
        let mut marks = Vec::with_capacity(run.len());
        for (w, m) in run.into_iter().zip(metrics) {
            let snapshots: Vec<i64> = m.map(|m| m.snapshot_id).into_iter().collect();
            self.count_committed(w.rows, w.bytes, &snapshots);
            marks.push((w.index, snapshots));
            self.next = w.index + 1;
        }
        crate::failpoint::after_commit(marks.iter().map(|(i, _)| *i));
        if let Some(s) = &mut self.store {
            s.mark_committed_many(&marks)
                .map_err(|e| (first, MigrationError::from(e)))?;
        }
        if let Some(p) = &self.progress {
            p(self.rows_done, self.total);
        }
        Ok(())
    }

    /// Deletes the files and prepared manifests of written batches that will not be committed.
    async fn discard_run(&self, run: Vec<BatchWork>) {
        for w in run {
            w.discard(&self.dest).await;
        }
    }

    /// Upserts only the rows of each batch whose key it holds last (`on_duplicate_keys last`).
    pub fn set_last_batches(&mut self, last: Arc<LastBatches>) {
        self.last_batches = Some(last);
    }

    /// Whether this committer set the job's running marker (see
    /// [`CommitterSetup::mark_lazily`]).
    pub fn marked(&self) -> bool {
        self.marked
    }

    /// The index after the last batch handled: where a failure is reported.
    pub fn next_batch(&self) -> u64 {
        self.next
    }

    fn committed(&mut self, index: u64, rows: u64, bytes: u64, snapshots: Vec<i64>) -> Result<()> {
        crate::failpoint::after_commit([index]);
        if let Some(s) = &mut self.store {
            s.mark_committed(index, &snapshots)?;
        }
        self.count_committed(rows, bytes, &snapshots);
        Ok(())
    }

    fn count_committed(&mut self, rows: u64, bytes: u64, snapshots: &[i64]) {
        self.new_snapshots.extend(snapshots);
        self.rows_moved += rows;
        self.bytes_moved += bytes;
        self.batches_committed += 1;
        self.batches_done += 1;
        self.rows_done += rows;
    }

    /// Adds what was committed to `result`.
    pub fn finish(self, result: &mut MigrationResult) {
        result.new_snapshots.extend(self.new_snapshots);
        result.rows_moved += self.rows_moved;
        result.bytes_moved += self.bytes_moved;
        result.batches_committed += self.batches_committed;
        result.batches_skipped = self.batches_skipped;
        result.batches_landed += self.batches_landed;
        if self.mode == WriteMode::Upsert {
            result.rows_inserted = Some(self.rows_inserted);
            result.rows_updated = Some(self.rows_updated);
        }
    }

    fn properties(&self, index: u64) -> HashMap<String, String> {
        let mut props = HashMap::from([
            (MIGRATION_JOB_PROPERTY.to_string(), self.job_id.clone()),
            (MIGRATION_BATCH_PROPERTY.to_string(), index.to_string()),
        ]);
        if let Some((identity, snapshot)) = &self.read_identity {
            props.insert(MIGRATION_READ_PROPERTY.to_string(), identity.clone());
            if let Some(snapshot) = snapshot {
                props.insert(
                    MIGRATION_SOURCE_SNAPSHOT_PROPERTY.to_string(),
                    snapshot.to_string(),
                );
            }
        }
        props
    }

    async fn commit_files(
        &mut self,
        index: u64,
        written: WrittenFiles,
        manifest: Option<PreparedManifest>,
    ) -> Result<Vec<i64>> {
        let (table, metrics) = match self.mode {
            WriteMode::Append => {
                // From the table the previous commit returned: no reload and re-parse of the
                // metadata per batch (a stale base is refused by the catalog and redone).
                let append = AppendBuilder::new(&self.handle, self.ident.clone())
                    .with_base(self.dest.clone())
                    .with_properties(self.properties(index));
                // The worker wrote the files' manifest: the commit writes the manifest list and
                // the metadata only.
                match manifest {
                    Some(m) => append.add_prepared(m).await?,
                    None => append.add_written(written).await?,
                }
            }
            WriteMode::OverwritePartition => {
                self.refuse_foreign_files(&written).await?;
                let mut victims = Vec::new();
                let mut new_keys = HashSet::new();
                for f in &written.files {
                    let key = ops_core::ops::canonical_partition(f.partition());
                    if let Some(paths) = self.preexisting.remove(&key) {
                        victims.extend(paths);
                    }
                    if !self.replaced.contains(&key) {
                        new_keys.insert(key);
                    }
                }
                let replaced_before = self.replaced.clone();
                self.replaced.extend(new_keys.iter().cloned());
                let respec = match self.respec_older(&new_keys).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.replaced = replaced_before;
                        return Err(e);
                    }
                };
                victims.extend(
                    respec
                        .removed
                        .iter()
                        .map(|(f, _)| f.file_path().to_string()),
                );
                let mut properties = self.properties(index);
                if !respec.removed.is_empty() {
                    properties.insert(
                        RESPEC_PROPERTY.to_string(),
                        respec.removed.len().to_string(),
                    );
                }
                let kept = respec.kept.clone();
                // Validated from this job's last view of the destination (and, by
                // `refuse_foreign_files`, from the job's start up to that view): another
                // writer's files in a partition this batch replaces or writes make it a
                // conflict rather than rows silently replaced or kept beside the replacement.
                let committed = OverwriteBuilder::new(&self.handle, self.ident.clone())
                    .remove_files(victims)
                    .add_written(written)
                    .add_files(respec.kept)
                    .validate_from_snapshot(self.dest.metadata().current_snapshot_id())
                    .with_properties(properties)
                    .await;
                match committed {
                    Ok(c) => {
                        for f in kept {
                            self.preexisting
                                .entry(ops_core::ops::canonical_partition(f.partition()))
                                .or_default()
                                .push(f.file_path().to_string());
                        }
                        c
                    }
                    Err(e) => {
                        // Not committed: the older files stay to be decided again.
                        self.replaced = replaced_before;
                        self.older.extend(respec.removed);
                        discard_files(&self.dest, &kept).await;
                        return Err(e.into());
                    }
                }
            }
            WriteMode::Upsert => {
                return Err(MigrationError::InvalidInput(format!(
                    "batch {index} of an upsert into {} arrived as written files; upserts are \
                     computed by the committer from rows",
                    self.dest_name
                )));
            }
        };
        self.dest = table;
        Ok(vec![metrics.snapshot_id])
    }

    /// The older-spec files that may hold rows of `new_keys` (partitions of the current spec
    /// this batch replaces first), rewritten: each is read (its deletes applied) and written
    /// again under the current spec, and the files of partitions replaced so far are dropped.
    /// Returns the files to remove (taken out of `older`) and the files to add.
    async fn respec_older(&mut self, new_keys: &HashSet<Struct>) -> Result<Respec> {
        let mut out = Respec::default();
        if new_keys.is_empty() || self.older.is_empty() {
            return Ok(out);
        }
        let md = self.dest.metadata();
        let current = md.default_partition_spec().clone();
        let mut remaining = Vec::new();
        for (file, spec_id) in std::mem::take(&mut self.older) {
            let may_hold = match md.partition_spec_by_id(spec_id) {
                Some(spec) => new_keys
                    .iter()
                    .any(|key| may_hold(&file, spec, &current, key)),
                None => true,
            };
            if may_hold {
                out.removed.push((file, spec_id));
            } else {
                remaining.push((file, spec_id));
            }
        }
        self.older = remaining;
        if out.removed.is_empty() {
            return Ok(out);
        }
        let paths: HashSet<FilePath> = out
            .removed
            .iter()
            .map(|(f, _)| FilePath::new(f.file_path()))
            .collect();
        let result = async {
            let read = PlannedRead::plan(&self.dest, md.current_snapshot_id(), None).await?;
            let files = read
                .files
                .iter()
                .filter(|t| paths.contains(&t.path))
                .cloned()
                .collect();
            let stream = read
                .with_files(files)
                .stream(&self.dest, 65_536)?
                .map_err(|e| ops_core::Error::InvalidInput(e.to_string()));
            let written = ops_core::write::write_data_files(&self.dest, stream).await?;
            Ok::<_, MigrationError>(written)
        }
        .await;
        let written = match result {
            Ok(w) => w,
            Err(e) => {
                self.older.extend(std::mem::take(&mut out.removed));
                return Err(e);
            }
        };
        let mut dropped = Vec::new();
        for f in written {
            if self
                .replaced
                .contains(&ops_core::ops::canonical_partition(f.partition()))
            {
                dropped.push(f);
            } else {
                out.kept.push(f);
            }
        }
        discard_files(&self.dest, &dropped).await;
        tracing::info!(
            dest = %self.dest_name,
            rewritten = out.removed.len(),
            kept_files = out.kept.len(),
            "older-spec files rewritten under the current spec, rows of replaced partitions left out"
        );
        Ok(out)
    }

    /// overwrite_partition, as Java's `ReplacePartitions` with `validateFromSnapshot(start)` and
    /// `validateNoConflictingData()`: a data file another writer added, since the job started,
    /// to a partition this batch writes is a conflict. The job commits batch by batch, so the
    /// snapshots between its start and its last view of the destination that are not its own
    /// are read here (each once); the overwrite itself validates from that view on.
    async fn refuse_foreign_files(&mut self, written: &WrittenFiles) -> Result<()> {
        let md = self.dest.metadata();
        let mut next = md.current_snapshot_id();
        let mut fresh = Vec::new();
        while let Some(id) = next {
            if Some(id) == self.dest_snapshot_before || !self.foreign_seen.insert(id) {
                break;
            }
            let Some(snapshot) = md.snapshot_by_id(id) else {
                break;
            };
            next = snapshot.parent_snapshot_id();
            let ours = snapshot
                .summary()
                .additional_properties
                .get(MIGRATION_JOB_PROPERTY)
                .is_some_and(|j| j == &self.job_id);
            if !ours {
                fresh.push(snapshot.clone());
            }
        }
        for snapshot in fresh {
            let list = self.dest.manifest_list_reader(&snapshot).load().await?;
            for mf in list.entries() {
                if mf.content != ManifestContentType::Data
                    || mf.added_snapshot_id != snapshot.snapshot_id()
                {
                    continue;
                }
                let manifest = mf.load_manifest(self.dest.file_io()).await?;
                for entry in manifest.entries() {
                    if entry.status() == ManifestStatus::Added
                        && entry.snapshot_id() == Some(snapshot.snapshot_id())
                    {
                        self.foreign
                            .entry((
                                mf.partition_spec_id,
                                ops_core::ops::canonical_partition(entry.data_file().partition()),
                            ))
                            .or_default()
                            .push(entry.data_file().file_path().to_string());
                    }
                }
            }
        }
        for f in &written.files {
            let key = (
                written.spec_id,
                ops_core::ops::canonical_partition(f.partition()),
            );
            if let Some(path) = self.foreign.get(&key).and_then(|p| p.first()) {
                return Err(MigrationError::Core(ops_core::Error::CommitConflict {
                    table: self.dest_name.clone(),
                    detail: format!(
                        "another writer added {path} to partition {:?} after this \
                         overwrite_partition job started (from snapshot {}); replacing the \
                         partition now would drop or keep those rows without anyone deciding — \
                         roll back the job's commits and run it again",
                        key.1,
                        self.dest_snapshot_before
                            .map_or("none".to_string(), |s| s.to_string())
                    ),
                }));
            }
        }
        Ok(())
    }

    /// Upserts one batch (one commit, or none when nothing changed).
    async fn upsert(
        &mut self,
        index: u64,
        batches: &[arrow_array::RecordBatch],
    ) -> Result<Vec<i64>> {
        let props = self.properties(index);
        // The running marker, set just before the chunk's first write (none when nothing
        // changes): it keeps maintenance off the table while the job's snapshots land.
        let mark = self.mark_lazily && !self.marked;
        let mut marked = false;
        let (handle, ident, job_id) = (&self.handle, &self.ident, &self.job_id);
        let before_write = async || {
            if mark {
                ops_core::ops::markers::mark_running_marker(handle, ident, job_id).await?;
                marked = true;
            }
            Ok(())
        };
        // Boxed: the chunk's future nests the marker commit's, and unboxed the migrator's
        // future grew past the compiler's layout depth limit. Typed `Send` here, where a
        // future that is not says so at its source instead of at a caller's `tokio::spawn`.
        let chunk: std::pin::Pin<
            Box<dyn Future<Output = Result<super::upsert::UpsertOutcome>> + Send + '_>,
        > = Box::pin(super::upsert::upsert_chunk(
            &self.handle,
            &self.ident,
            &self.dest,
            &self.upsert_keys,
            super::upsert::Duplicates {
                rule: self.on_duplicate_keys,
                last: self.last_batches.as_deref().map(|l| (index, l)),
            },
            batches,
            &mut self.dest_keys,
            props,
            before_write,
        ));
        let outcome = chunk.await;
        self.marked |= marked;
        let outcome = outcome?;
        tracing::debug!(
            batch = index,
            inserted = outcome.inserted,
            updated = outcome.updated,
            dest_files_read = outcome.files_read,
            "upsert batch done"
        );
        self.rows_inserted += outcome.inserted;
        self.rows_updated += outcome.updated;
        if let Some(t) = outcome.table {
            self.dest = t;
        }
        Ok(outcome.snapshot.into_iter().collect())
    }
}

/// Summary key on a batch snapshot that also rewrote files of older partition specs (their
/// count): the kept rows' files it added are not the batch's output.
const RESPEC_PROPERTY: &str = "iceberg-ops.migration-respec-files";

/// Older-spec files a batch rewrites.
#[derive(Default)]
struct Respec {
    /// Removed, with their spec ids.
    removed: Vec<(DataFile, i32)>,
    /// Their rows outside the replaced partitions, under the current spec.
    kept: Vec<DataFile>,
}

/// Whether `file`, written under `spec`, may hold rows of the current spec's partition `key`:
/// false only when a column both specs partition by identity has another value in the file's
/// partition than in `key` (a bucket, truncate or time transform of the older spec implies
/// nothing certain about the current one's, so the file is then read).
fn may_hold(
    file: &DataFile,
    spec: &iceberg::spec::PartitionSpec,
    current: &iceberg::spec::PartitionSpec,
    key: &Struct,
) -> bool {
    let values = file.partition();
    for (ci, cf) in current.fields().iter().enumerate() {
        if cf.transform != Transform::Identity {
            continue;
        }
        let Some(oi) = spec
            .fields()
            .iter()
            .position(|f| f.source_id == cf.source_id && f.transform == Transform::Identity)
        else {
            continue;
        };
        let (Some(old), Some(new)) = (values.fields().get(oi), key.fields().get(ci)) else {
            continue;
        };
        // Both canonical (as keys are): a NULL equals only a NULL.
        let old = ops_core::ops::canonical_partition(&Struct::from_iter([old.clone()]));
        let new = Struct::from_iter([new.clone()]);
        if old != new {
            return false;
        }
    }
    true
}

/// Deletes data files this run wrote that will never be committed.
async fn discard_files(dest: &Table, files: &[DataFile]) {
    for f in files {
        if let Err(e) = dest.file_io().delete(f.file_path()).await {
            tracing::warn!(path = f.file_path(), error = %e, "cannot delete an uncommitted data file");
        }
    }
}

/// A resumed overwrite_partition whose earlier run rewrote older-spec files cannot tell the
/// files it kept (rows of partitions not replaced yet) from the batches' own output: refused.
fn refuse_resume_after_respec(s: &CommitterSetup) -> Result<()> {
    let md = s.dest.metadata();
    let respec = md.snapshots().any(|snap| {
        let props = &snap.summary().additional_properties;
        props.get(MIGRATION_JOB_PROPERTY) == Some(&s.job_id) && props.contains_key(RESPEC_PROPERTY)
    });
    if respec {
        return Err(MigrationError::InvalidInput(format!(
            "this overwrite_partition job already rewrote files of {}'s older partition specs, \
             so a resume cannot tell the rows it kept from the rows it wrote; roll the \
             destination back to snapshot {} and run the job afresh",
            s.dest_name,
            s.dest_snapshot_before
                .map_or("none (the table was empty)".to_string(), |id| id
                    .to_string())
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch};

    use super::*;

    type TestResult = std::result::Result<(), Box<dyn std::error::Error>>;

    async fn committer(
        dir: &std::path::Path,
    ) -> std::result::Result<Committer, Box<dyn std::error::Error>> {
        let (handle, dest) = crate::testing::id_table(dir, "t").await?;
        Ok(Committer::new(CommitterSetup {
            handle,
            ident: dest.identifier().clone(),
            dest_name: "ns.t".into(),
            mode: WriteMode::Append,
            job_id: "job".into(),
            read_identity: None,
            upsert_keys: Vec::new(),
            on_duplicate_keys: OnDuplicateKeys::default(),
            dest,
            dest_snapshot_before: None,
            store: None,
            landed: BTreeMap::new(),
            progress: None,
            total: None,
            resumed_batches: 0,
            resumed_rows: 0,
            resume_from: 0,
            mark_lazily: false,
        })
        .await?)
    }

    async fn batch(
        dest: &Table,
        index: u64,
        prepare: bool,
    ) -> std::result::Result<BatchWork, Box<dyn std::error::Error>> {
        let ids: Vec<i64> = (0..=index as i64).collect();
        let rows = ids.len() as u64;
        let batch = RecordBatch::try_new(
            ops_core::write::table_arrow_schema(dest)?,
            vec![Arc::new(Int64Array::from(ids))],
        )?;
        let written =
            ops_core::write::write_files(dest, futures::stream::iter([Ok(batch)])).await?;
        let manifest = if prepare {
            PreparedManifest::write(dest, &written).await?
        } else {
            None
        };
        Ok(BatchWork {
            index,
            rows,
            bytes: 0,
            payload: Payload::Written(written),
            manifest,
        })
    }

    /// Batches waiting together commit as one series: a snapshot per batch, tagged with its
    /// index, each the child of the one before, and one metadata file (one pointer swap) for
    /// all of them — one by one, each batch wrote its own.
    #[tokio::test(flavor = "multi_thread")]
    async fn waiting_batches_commit_together_one_snapshot_each() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut c = committer(dir.path()).await?;
        let first = batch(&c.dest, 0, true).await?;
        c.handle(first).await?;
        let log_before = c.dest.metadata().metadata_log().len();
        let mut works = Vec::new();
        for index in 1..4 {
            works.push(batch(&c.dest, index, true).await?);
        }
        c.handle_group(works).await.map_err(|(_, e)| e)?;
        assert_eq!(c.next_batch(), 4);
        let md = c.dest.metadata();
        assert_eq!(md.metadata_log().len(), log_before + 1);
        let mut snapshot = md.current_snapshot().cloned();
        let mut seen = Vec::new();
        while let Some(s) = snapshot {
            let props = &s.summary().additional_properties;
            assert_eq!(props.get(MIGRATION_JOB_PROPERTY), Some(&"job".to_string()));
            seen.push(
                props
                    .get(MIGRATION_BATCH_PROPERTY)
                    .cloned()
                    .unwrap_or_default(),
            );
            snapshot = s
                .parent_snapshot_id()
                .and_then(|p| md.snapshot_by_id(p).cloned());
        }
        assert_eq!(seen, ["3", "2", "1", "0"]);
        let mut result = MigrationResult::default();
        c.finish(&mut result);
        assert_eq!(result.rows_moved, 1 + 2 + 3 + 4);
        assert_eq!(result.batches_committed, 4);
        assert_eq!(result.new_snapshots.len(), 4);
        Ok(())
    }

    /// A batch without a prepared manifest (a file copy's) commits on its own, between the
    /// series of prepared ones around it: its commit is not the metadata alone.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_batch_without_a_prepared_manifest_commits_alone() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut c = committer(dir.path()).await?;
        let log_before = c.dest.metadata().metadata_log().len();
        let mut works = Vec::new();
        for index in 0..5 {
            works.push(batch(&c.dest, index, index != 2).await?);
        }
        c.handle_group(works).await.map_err(|(_, e)| e)?;
        assert_eq!(c.next_batch(), 5);
        // [0, 1] together, 2 alone, [3, 4] together: three commits, each one metadata file
        // (one by one there would be five).
        let md = c.dest.metadata();
        assert_eq!(md.metadata_log().len(), log_before + 3);
        assert_eq!(md.snapshots().count(), 5);
        Ok(())
    }

    /// A group that fails part-way has committed the batches before the failure, and the
    /// committer counts them: the local executor reads `batches_done` after the group to say
    /// how many batches are in the table (a re-run without a checkpoint would add them again).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_group_failing_part_way_counts_what_it_committed() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut c = committer(dir.path()).await?;
        let works = vec![
            batch(&c.dest, 0, true).await?,
            batch(&c.dest, 1, true).await?,
            // Batch 1 again, without a manifest: refused after [0, 1] landed as a series.
            batch(&c.dest, 1, false).await?,
        ];
        let (index, _) = c.handle_group(works).await.err().ok_or("refused")?;
        assert_eq!(index, 1);
        assert_eq!(c.batches_done, 2);
        assert_eq!(c.dest.metadata().snapshots().count(), 2);
        Ok(())
    }

    /// Batches out of order are refused, and their files and prepared manifests deleted.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_group_out_of_order_is_refused_and_discarded() -> TestResult {
        let dir = tempfile::tempdir()?;
        let mut c = committer(dir.path()).await?;
        let works = vec![
            batch(&c.dest, 1, true).await?,
            batch(&c.dest, 0, true).await?,
        ];
        let paths: Vec<String> = works
            .iter()
            .flat_map(|w| {
                let Payload::Written(f) = &w.payload else {
                    return Vec::new();
                };
                let mut p: Vec<String> =
                    f.files.iter().map(|f| f.file_path().to_string()).collect();
                p.extend(w.manifest.iter().map(|m| m.path().to_string()));
                p
            })
            .collect();
        assert_eq!(paths.len(), 4);
        let (index, _) = c.handle_group(works).await.err().ok_or("refused")?;
        assert_eq!(index, 1);
        for p in paths {
            assert!(!c.dest.file_io().exists(&p).await?, "{p} left behind");
        }
        assert!(c.dest.metadata().current_snapshot().is_none());
        Ok(())
    }
}
