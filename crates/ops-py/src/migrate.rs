//! `DataMigrator.run()` and `verify()`: a job described in JSON by the Python class, run by
//! [`ops_datamig::DataMigrator`] on catalogs opened from the user's PyIceberg catalogs'
//! properties.

use std::collections::BTreeMap;
use std::sync::Arc;

use ops_core::catalog::{CatalogDefinition, settings_for};
use ops_core::{CatalogHandle, CatalogSettings, iceberg::TableIdent};
use ops_datamig::{CopyMode, DataMigrator, OnDuplicateKeys, VerifyMethod, WriteMode};
use ops_reconcile::SchemaReconciler;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::Deserialize;

use crate::errors;
use crate::reconcile::NativePlan;
use crate::runtime::{Interrupt, block_on_detached, call_python};

/// A catalog as PyIceberg holds it: its name and properties (`type` included).
#[derive(Debug, Clone, Deserialize)]
pub struct CatalogSpec {
    /// The catalog's name.
    pub name: String,
    /// Its properties, PyIceberg's keys.
    pub properties: BTreeMap<String, String>,
}

/// A table: its catalog, namespace and name.
#[derive(Debug, Clone, Deserialize)]
pub struct TableSpec {
    /// Where it lives.
    pub catalog: CatalogSpec,
    /// Namespace levels, then the table's name.
    pub identifier: Vec<String>,
}

/// Everything `DataMigrator.__init__` was given, checked by the Python class.
#[derive(Debug, Clone, Deserialize)]
pub struct JobSpec {
    /// The source table.
    pub source: TableSpec,
    /// The destination table.
    pub dest: TableSpec,
    /// The reconciler (`None`: the strict default).
    #[serde(default)]
    pub reconciler: Option<SchemaReconciler>,
    /// The row filter, in PyIceberg's string syntax.
    #[serde(default)]
    pub row_filter: Option<String>,
    /// The pinned source snapshot.
    #[serde(default)]
    pub source_snapshot: Option<i64>,
    /// Rows per commit.
    pub batch_rows: usize,
    /// `append`, `upsert` or `overwrite_partition`.
    pub write_mode: WriteMode,
    /// Upsert keys.
    #[serde(default)]
    pub upsert_keys: Option<Vec<String>>,
    /// The checkpoint file.
    #[serde(default)]
    pub checkpoint: Option<String>,
    /// A dry run.
    #[serde(default)]
    pub dry_run: bool,
    /// Whether files may be copied whole instead of rewritten (`auto` by default).
    #[serde(default)]
    pub copy_mode: CopyMode,
    /// An upsert's rule for a key that repeats in the source (`error` by default).
    #[serde(default)]
    pub on_duplicate_keys: OnDuplicateKeys,
    /// Create a destination that does not exist (`create_dest=True`).
    #[serde(default)]
    pub create_dest: bool,
}

impl JobSpec {
    fn parse(json: &str) -> PyResult<Self> {
        serde_json::from_str(json)
            .map_err(|e| PyValueError::new_err(format!("not a DataMigrator job: {e}")))
    }
}

impl CatalogSpec {
    /// The catalog the Python side described (its JSON).
    pub fn parse(json: &str) -> PyResult<Self> {
        serde_json::from_str(json).map_err(|e| PyValueError::new_err(format!("not a catalog: {e}")))
    }

    /// Checked and translated by ops-core's catalog factory, without connecting.
    pub fn settings(&self) -> Result<CatalogSettings, ops_core::Error> {
        let definition = CatalogDefinition::inline(&self.name, self.properties.clone());
        let base = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        Ok(settings_for(definition, &base)?)
    }
}

/// Opens the catalog PyIceberg described.
pub async fn open(spec: &CatalogSpec) -> Result<CatalogHandle, ops_core::Error> {
    ops_core::catalog::open_settings(spec.settings()?).await
}

fn ident(spec: &TableSpec) -> PyResult<TableIdent> {
    TableIdent::from_strs(&spec.identifier).map_err(|e| {
        PyValueError::new_err(format!(
            "table identifier {:?} is not NAMESPACE.TABLE: {e}",
            spec.identifier
        ))
    })
}

/// The Rust migrator for `job`, its catalogs opened.
async fn migrator(job: &JobSpec) -> PyResult<DataMigrator> {
    let source_catalog = open(&job.source.catalog).await.map_err(errors::core)?;
    let dest_catalog = if job.dest.catalog.name == job.source.catalog.name
        && job.dest.catalog.properties == job.source.catalog.properties
    {
        source_catalog.clone()
    } else {
        open(&job.dest.catalog).await.map_err(errors::core)?
    };
    let mut m = DataMigrator::new(
        &source_catalog,
        ident(&job.source)?,
        &dest_catalog,
        ident(&job.dest)?,
    )
    .batch_rows(job.batch_rows)
    .write_mode(job.write_mode)
    .copy_mode(job.copy_mode)
    .on_duplicate_keys(job.on_duplicate_keys)
    .create_dest(job.create_dest)
    .dry_run(job.dry_run);
    if let Some(r) = &job.reconciler {
        m = m.schema_reconciler(r.clone());
    }
    if let Some(f) = &job.row_filter {
        m = m.row_filter(f.as_str());
    }
    if let Some(s) = job.source_snapshot {
        m = m.source_snapshot(s);
    }
    if let Some(keys) = &job.upsert_keys {
        m = m.upsert_keys(keys.clone());
    }
    if let Some(path) = &job.checkpoint {
        m = m.checkpoint(path);
    }
    Ok(m)
}

/// Runs the migration `job` (JSON); returns the `MigrationResult` as JSON and the plan used.
/// `progress(rows_done, rows_total)` is called after each commit, with the GIL held; an
/// exception it raises stops the run and is raised here.
#[pyfunction]
#[pyo3(signature = (job, progress=None))]
pub fn run_migration(
    py: Python<'_>,
    job: &str,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, Option<NativePlan>)> {
    let job = JobSpec::parse(job)?;
    let interrupt = Arc::new(Interrupt::default());
    let callback = progress.map(|cb| {
        let interrupt = interrupt.clone();
        move |done: u64, total: Option<u64>| {
            if interrupt.stopped() {
                return;
            }
            call_python(|py| {
                if let Err(e) = cb.call1(py, (done, total)) {
                    interrupt.stop(e);
                }
            });
        }
    });
    let stop = interrupt.flag();
    let result = block_on_detached(py, &interrupt, || async move {
        // An exception in `progress` stops the run before its next commit.
        let mut m = migrator(&job).await?.stop_when(stop);
        if let Some(cb) = callback {
            m = m.progress(cb);
        }
        m.run().await.map_err(errors::migration)
    })??;
    let json = serde_json::to_string(&result)
        .map_err(|e| PyValueError::new_err(format!("the result does not serialize: {e}")))?;
    Ok((json, result.plan.map(NativePlan::from)))
}

/// Verifies `job`'s destination against its source by `method`; returns the
/// `VerificationResult` as JSON.
#[pyfunction]
pub fn verify_migration(
    py: Python<'_>,
    job: &str,
    method: &str,
    sample_size: usize,
) -> PyResult<String> {
    let job = JobSpec::parse(job)?;
    let method: VerifyMethod = method.parse().map_err(errors::migration)?;
    let interrupt = Interrupt::default();
    let result = block_on_detached(py, &interrupt, || async move {
        let m = migrator(&job).await?;
        m.verify(method, sample_size)
            .await
            .map_err(errors::migration)
    })??;
    serde_json::to_string(&result)
        .map_err(|e| PyValueError::new_err(format!("the result does not serialize: {e}")))
}
