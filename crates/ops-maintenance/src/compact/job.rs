//! A compaction's groups as tasks another process runs (`table compact --cluster`).
//!
//! The client plans as a local compaction does ([`super::CompactBuilder::prepare`]) and writes
//! the plan down as a [`CompactionJob`]: the table, the snapshot planned on, the options that
//! shape the rewrite, and each group's input files. A task ([`CompactionJob::execute_task`])
//! opens the table itself, plans again on that same snapshot restricted to its group's files
//! (the deletes that apply to them, their scan tasks: nothing of the table travels but paths),
//! checks it found exactly the files the client planned, and rewrites them under the folder
//! its engine gives the attempt. It commits nothing: it returns the files as a
//! [`CompactionOutput`], and the client commits each group as it lands
//! ([`super::PreparedCompaction::commit_group`]), validated as a local compaction is.

use std::collections::HashMap;
use std::sync::Arc;

use iceberg::TableIdent;
use iceberg::arrow::ArrowReaderBuilder;
use iceberg::spec::{
    DataFile, MAIN_BRANCH, SnapshotReference, SnapshotRetention, TableMetadataBuilder,
};
use iceberg::table::Table;
use serde::{Deserialize, Serialize};

use ops_core::equality_deletes::EqualityDeletes;
use ops_core::ops::ManifestCache;
use ops_core::{CatalogHandle, Error, Result};

use super::{CompactBuilder, CompactMetrics, rewrite_group};
use crate::sort::SortSpec;

/// Version of the job and output JSON; a reader refuses other versions.
pub const JOB_FORMAT: u32 = 1;

/// A compaction planned by one process for others to rewrite (see module docs).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompactionJob {
    /// [`JOB_FORMAT`].
    pub format: u32,
    /// Names the job's folders and outputs.
    pub job_id: String,
    /// The catalog's name, as the executors' configuration names it.
    pub catalog: String,
    /// `NAMESPACE.TABLE`.
    pub table: String,
    /// The table's UUID: a task refuses another table of the same name.
    pub table_uuid: String,
    /// The snapshot the groups were planned on; tasks read it.
    pub start_snapshot_id: i64,
    /// Bytes an output file rolls at.
    pub target_file_size: u64,
    /// Files of older specs were planned too ([`CompactBuilder::to_current_spec`]).
    pub to_current_spec: bool,
    /// How each group's rows are sorted, if they are.
    pub sort: Option<SortSpec>,
    /// Bytes of rows a sorting task holds before it spills.
    pub sort_memory: usize,
    /// The groups, by task id.
    pub groups: Vec<CompactionTask>,
}

/// One group: the files a task rewrites together (all of one partition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactionTask {
    /// The partition, as reports name it.
    pub partition: String,
    /// Its input files (a path listed twice is read twice, as the plan reads it).
    pub files: Vec<String>,
}

/// What a task wrote, not yet committed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompactionOutput {
    /// [`JOB_FORMAT`].
    pub format: u32,
    /// The job's id: an output of another job is refused.
    pub job_id: String,
    /// The task (group) rewritten.
    pub task: usize,
    /// The partition spec the files are laid out by.
    pub spec_id: i32,
    /// The data files, each in Iceberg's JSON form of a `DataFile`.
    pub files: Vec<String>,
    /// Why the group could not be rewritten, when a retry would not help (it wrote no file
    /// then): the group fails, the job's other groups go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CompactionOutput {
    /// The output of a task that failed for good: `error` says why.
    pub fn failed(job_id: &str, task: usize, error: String) -> Self {
        CompactionOutput {
            format: JOB_FORMAT,
            job_id: job_id.to_string(),
            task,
            spec_id: 0,
            files: Vec::new(),
            error: Some(error),
        }
    }

    /// Parses an output, refusing another format version.
    pub fn from_json(text: &str) -> Result<Self> {
        let out: CompactionOutput = serde_json::from_str(text)
            .map_err(|e| Error::InvalidInput(format!("a compaction task output: {e}")))?;
        if out.format != JOB_FORMAT {
            return Err(Error::InvalidInput(format!(
                "a compaction task output of format {}, but this process reads format \
                 {JOB_FORMAT}: run the same iceberg-ops version on the client and every executor",
                out.format
            )));
        }
        Ok(out)
    }

    /// The paths of the files written (no table needed), for cleaning up.
    pub fn file_paths(&self) -> Vec<String> {
        self.files
            .iter()
            .filter_map(|json| {
                serde_json::from_str::<serde_json::Value>(json)
                    .ok()
                    .and_then(|v| v.get("file_path")?.as_str().map(str::to_owned))
            })
            .collect()
    }

    /// The data files, read against `table`'s spec and current schema.
    pub fn data_files(&self, table: &Table) -> Result<Vec<DataFile>> {
        let md = table.metadata();
        let spec = md.partition_spec_by_id(self.spec_id).ok_or_else(|| {
            Error::InvalidInput(format!(
                "task {} of compaction job {} wrote files of partition spec {}, which {} does \
                 not have",
                self.task,
                self.job_id,
                self.spec_id,
                table.identifier()
            ))
        })?;
        let schema = md.current_schema();
        let partition_type = spec.partition_type(schema)?;
        self.files
            .iter()
            .map(|json| {
                iceberg::spec::deserialize_data_file_from_json(
                    json,
                    self.spec_id,
                    &partition_type,
                    schema,
                )
                .map_err(|e| {
                    Error::InvalidInput(format!(
                        "task {} of compaction job {} holds a data file that does not parse: {e}",
                        self.task, self.job_id
                    ))
                })
            })
            .collect()
    }
}

impl CompactionJob {
    /// Parses a job, refusing another format version.
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let job: CompactionJob = serde_json::from_slice(bytes)
            .map_err(|e| Error::InvalidInput(format!("a compaction job: {e}")))?;
        if job.format != JOB_FORMAT {
            return Err(Error::InvalidInput(format!(
                "compaction job {} is in format {}, but this process reads format {JOB_FORMAT}: \
                 run the same iceberg-ops version on the client and every executor",
                job.job_id, job.format
            )));
        }
        Ok(job)
    }

    /// The table's identifier.
    pub fn ident(&self) -> Result<TableIdent> {
        TableIdent::from_strs(self.table.split('.')).map_err(|e| {
            Error::InvalidInput(format!(
                "compaction job {} names table '{}': {e}",
                self.job_id, self.table
            ))
        })
    }

    /// Rewrites group `task` of the table `handle` holds, writing its files under
    /// `data_location` (with the partition folders below it); commits nothing.
    pub async fn execute_task(
        &self,
        handle: &CatalogHandle,
        task: usize,
        data_location: &str,
    ) -> Result<CompactionOutput> {
        let group = self.groups.get(task).ok_or_else(|| {
            Error::InvalidInput(format!(
                "compaction job {} has {} groups, not {}",
                self.job_id,
                self.groups.len(),
                task + 1
            ))
        })?;
        let ident = self.ident()?;
        let table = ops_core::commit::load_current(handle, &ident).await?;
        let uuid = table.metadata().uuid().to_string();
        if uuid != self.table_uuid {
            return Err(Error::InvalidInput(format!(
                "{} is table {uuid}, not the table {} compaction job {} was planned on (it was \
                 dropped and created again): nothing is rewritten; plan the compaction again",
                self.table, self.table_uuid, self.job_id
            )));
        }
        let table = self.task_table(&table, data_location)?;
        let mut builder = CompactBuilder::new(handle, ident)
            .target_file_size(self.target_file_size)
            .to_current_spec(self.to_current_spec)
            .sort_memory(self.sort_memory);
        if let Some(sort) = &self.sort {
            builder = builder.sort(sort.clone());
        }
        builder.only_paths = Some(Arc::new(group.files.iter().cloned().collect()));
        let cache = ManifestCache::new(&table);
        let mut scratch = CompactMetrics::default();
        let mut planned = builder
            .plan(&table, &cache, self.target_file_size, &mut scratch)
            .await?;
        // Exactly the files the client planned, each as often: anything else means the table
        // changed under the job in a way its snapshot does not show.
        let mut want: HashMap<&str, usize> = HashMap::new();
        for f in &group.files {
            *want.entry(f.as_str()).or_default() += 1;
        }
        let mut found: HashMap<&str, usize> = HashMap::new();
        for g in &planned {
            for c in &g.files {
                let path = c.live.path.to_path_string();
                match want.get_key_value(path.as_str()).map(|(k, _)| *k) {
                    Some(p) => *found.entry(p).or_default() += 1,
                    None => return Err(self.changed(task, &path)),
                }
            }
        }
        if let Some((missing, _)) = want.iter().find(|(p, n)| found.get(*p) != Some(n)) {
            return Err(self.changed(task, missing));
        }
        if planned.len() != 1 {
            return Err(Error::InvalidInput(format!(
                "group {task} of compaction job {} spans {} partitions when planned again on \
                 snapshot {}: plan the compaction again",
                self.job_id,
                planned.len(),
                self.start_snapshot_id
            )));
        }
        let Some(planned) = planned.pop() else {
            return Err(self.changed(task, "(none)"));
        };
        let sort = match &self.sort {
            Some(spec) => Some(spec.resolve(table.metadata(), &self.table)?),
            None => None,
        };
        let equality = Arc::new(EqualityDeletes::for_read(
            &table,
            ops_core::write::table_arrow_schema(&table)?,
            ArrowReaderBuilder::new(table.file_io().clone(), iceberg::Runtime::try_current()?)
                .build(),
            planned.files.iter().flat_map(|c| c.equality()),
        )?);
        let files = rewrite_group(
            &table,
            planned,
            self.target_file_size,
            sort.as_ref().map(|s| (s, self.sort_memory)),
            &equality,
        )
        .await?;
        let spec_id = table.metadata().default_partition_spec_id();
        let partition_type = table
            .metadata()
            .default_partition_spec()
            .partition_type(table.metadata().current_schema())?;
        let version = table.metadata().format_version();
        let json: Result<Vec<String>> = files
            .iter()
            .map(|f| {
                iceberg::spec::serialize_data_file_to_json(f.clone(), &partition_type, version)
                    .map_err(Error::from)
            })
            .collect();
        let json = match json {
            Ok(j) => j,
            Err(e) => {
                let paths: Vec<String> = files.iter().map(|f| f.file_path().to_string()).collect();
                ops_core::commit::delete_quietly(table.file_io(), &paths).await;
                return Err(e);
            }
        };
        Ok(CompactionOutput {
            format: JOB_FORMAT,
            job_id: self.job_id.clone(),
            task,
            spec_id,
            files: json,
            error: None,
        })
    }

    /// `table` as of the job's snapshot, writing its data files under `data_location`: what
    /// a task plans on and writes with (never committed).
    fn task_table(&self, table: &Table, data_location: &str) -> Result<Table> {
        let md = table.metadata();
        if md.snapshot_by_id(self.start_snapshot_id).is_none() {
            return Err(Error::InvalidInput(format!(
                "{} no longer has snapshot {}, which compaction job {} was planned on (it was \
                 expired): plan the compaction again",
                self.table, self.start_snapshot_id, self.job_id
            )));
        }
        let metadata = TableMetadataBuilder::new_from_metadata(md.clone(), None)
            .set_ref(
                MAIN_BRANCH,
                SnapshotReference::new(
                    self.start_snapshot_id,
                    SnapshotRetention::branch(None, None, None),
                ),
            )?
            .set_properties(HashMap::from([(
                ops_core::location::WRITE_DATA_PATH.to_string(),
                data_location.trim_end_matches('/').to_string(),
            )]))?
            .build()?
            .metadata;
        let mut builder = Table::builder()
            .identifier(table.identifier().clone())
            .file_io(table.file_io().clone())
            .metadata(metadata)
            .runtime(iceberg::Runtime::try_current()?);
        if let Some(l) = table.metadata_location() {
            builder = builder.metadata_location(l);
        }
        Ok(builder.build()?)
    }

    fn changed(&self, task: usize, path: &str) -> Error {
        Error::InvalidInput(format!(
            "group {task} of compaction job {} does not find its files as planned on snapshot {} \
             ({path}): plan the compaction again",
            self.job_id, self.start_snapshot_id
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_of_another_format_is_refused() {
        let job = CompactionJob {
            format: JOB_FORMAT + 1,
            job_id: "compact-1".into(),
            catalog: "lake".into(),
            table: "db.t".into(),
            table_uuid: "u".into(),
            start_snapshot_id: 1,
            target_file_size: 10,
            to_current_spec: false,
            sort: None,
            sort_memory: 1,
            groups: vec![CompactionTask {
                partition: "p=1".into(),
                files: vec!["s3://b/t/data/a.parquet".into()],
            }],
        };
        let json = serde_json::to_vec(&job).unwrap_or_default();
        let err = CompactionJob::from_json(&json)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("same iceberg-ops version"), "{err}");
        let back = CompactionJob::from_json(
            &serde_json::to_vec(&CompactionJob {
                format: JOB_FORMAT,
                ..job
            })
            .unwrap_or_default(),
        );
        assert!(back.is_ok_and(|j| j.groups.len() == 1 && j.ident().is_ok()));
    }
}
