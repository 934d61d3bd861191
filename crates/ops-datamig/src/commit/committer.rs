//! The single committer: commits batches in batch order, one catalog commit per batch, tagged
//! with the job and batch, and checkpoints each one.
//!
//! Workers may finish out of order; the committer takes their batches in index order, so the
//! destination's history reads batch 0, 1, 2, … whoever wrote the files, and a checkpoint's
//! "last committed batch" means every earlier batch is in too.

use std::collections::{BTreeMap, HashMap, HashSet};

use iceberg::TableIdent;
use iceberg::spec::Struct;
use iceberg::table::Table;
use ops_checkpoint::CheckpointStore;
use ops_core::CatalogHandle;
use ops_core::ops::append::AppendBuilder;
use ops_core::ops::overwrite::OverwriteBuilder;
use ops_core::write::WrittenFiles;

use super::history::{MIGRATION_BATCH_PROPERTY, MIGRATION_JOB_PROPERTY, live_files};
use crate::execute::worker::{BatchWork, Payload};
use crate::{MigrationError, MigrationResult, OnDuplicateKeys, Progress, Result, WriteMode};

/// Commits batches in order (see the module docs).
pub(crate) struct Committer {
    handle: CatalogHandle,
    ident: TableIdent,
    dest_name: String,
    mode: WriteMode,
    job_id: String,
    /// overwrite_partition: files that were live before the job and are still live, by
    /// partition of the default spec; the first commit touching a partition removes them.
    preexisting: HashMap<Struct, Vec<String>>,
    upsert_keys: Vec<String>,
    on_duplicate_keys: OnDuplicateKeys,
    /// The destination as of this job's last commit.
    pub dest: Table,
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
}

/// What the committer needs to start.
pub(crate) struct CommitterSetup {
    pub handle: CatalogHandle,
    pub ident: TableIdent,
    pub dest_name: String,
    pub mode: WriteMode,
    pub job_id: String,
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
}

impl Committer {
    pub async fn new(s: CommitterSetup) -> Result<Self> {
        let mut preexisting: HashMap<Struct, Vec<String>> = HashMap::new();
        if s.mode == WriteMode::OverwritePartition {
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
                    return Err(MigrationError::InvalidInput(format!(
                        "destination {} holds {} under partition spec {spec_id}, not the current \
                         spec {default_spec}; overwrite_partition cannot tell which partition \
                         of the current spec its rows belong to — rewrite that data first, or \
                         use append",
                        s.dest_name,
                        file.file_path()
                    )));
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
            preexisting,
            upsert_keys: s.upsert_keys,
            on_duplicate_keys: s.on_duplicate_keys,
            dest: s.dest,
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
        })
    }

    /// Commits, records or counts one batch. Batches must come in increasing index order.
    pub async fn handle(&mut self, work: BatchWork) -> Result<()> {
        let BatchWork {
            index,
            rows,
            bytes,
            payload,
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
                self.batches_skipped += 1;
                self.batches_done += 1;
                self.rows_done += rows;
            }
            Payload::Written(w) | Payload::Referenced(w) => {
                let files = owned.then(|| w.clone());
                let snapshots = match self.commit_files(index, w).await {
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

    /// The index after the last batch handled: where a failure is reported.
    pub fn next_batch(&self) -> u64 {
        self.next
    }

    fn committed(&mut self, index: u64, rows: u64, bytes: u64, snapshots: Vec<i64>) -> Result<()> {
        if let Some(s) = &mut self.store {
            s.mark_committed(index, &snapshots)?;
        }
        self.new_snapshots.extend(&snapshots);
        self.rows_moved += rows;
        self.bytes_moved += bytes;
        self.batches_committed += 1;
        self.batches_done += 1;
        self.rows_done += rows;
        Ok(())
    }

    /// Adds what was committed to `result`.
    pub fn finish(self, result: &mut MigrationResult) {
        result.new_snapshots.extend(self.new_snapshots);
        result.rows_moved += self.rows_moved;
        result.bytes_moved += self.bytes_moved;
        result.batches_committed += self.batches_committed;
        result.batches_skipped = self.batches_skipped;
        if self.mode == WriteMode::Upsert {
            result.rows_inserted = Some(self.rows_inserted);
            result.rows_updated = Some(self.rows_updated);
        }
    }

    fn properties(&self, index: u64) -> HashMap<String, String> {
        HashMap::from([
            (MIGRATION_JOB_PROPERTY.to_string(), self.job_id.clone()),
            (MIGRATION_BATCH_PROPERTY.to_string(), index.to_string()),
        ])
    }

    async fn commit_files(&mut self, index: u64, written: WrittenFiles) -> Result<Vec<i64>> {
        let (table, metrics) = match self.mode {
            WriteMode::Append => {
                // From the table the previous commit returned: no reload and re-parse of the
                // metadata per batch (a stale base is refused by the catalog and redone).
                AppendBuilder::new(&self.handle, self.ident.clone())
                    .with_base(self.dest.clone())
                    .add_written(written)
                    .with_properties(self.properties(index))
                    .await?
            }
            WriteMode::OverwritePartition => {
                let mut victims = Vec::new();
                for f in &written.files {
                    let key = ops_core::ops::canonical_partition(f.partition());
                    if let Some(paths) = self.preexisting.remove(&key) {
                        victims.extend(paths);
                    }
                }
                // Validated from this job's last view of the destination: another writer's
                // files in a partition this batch replaces or writes make it a conflict rather
                // than rows silently replaced or kept beside the replacement.
                OverwriteBuilder::new(&self.handle, self.ident.clone())
                    .remove_files(victims)
                    .add_written(written)
                    .validate_from_snapshot(self.dest.metadata().current_snapshot_id())
                    .with_properties(self.properties(index))
                    .await?
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

    /// Upserts one batch (one commit, or none when nothing changed).
    async fn upsert(
        &mut self,
        index: u64,
        batches: &[arrow_array::RecordBatch],
    ) -> Result<Vec<i64>> {
        let props = self.properties(index);
        let outcome = super::upsert::upsert_chunk(
            &self.handle,
            &self.ident,
            &self.dest,
            &self.upsert_keys,
            self.on_duplicate_keys,
            batches,
            props,
        )
        .await?;
        self.rows_inserted += outcome.inserted;
        self.rows_updated += outcome.updated;
        if let Some(t) = outcome.table {
            self.dest = t;
        }
        Ok(outcome.snapshot.into_iter().collect())
    }
}
