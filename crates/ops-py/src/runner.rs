//! `MigrationRunner` and `MigrationHistory`: the Rust runner and history table, with the
//! user's `NNNN_<description>.py` migration files registered as code migrations whose hooks
//! call back into Python.
//!
//! The Python side discovers and imports the files (and refuses a bad one before anything
//! runs); each becomes a [`PyMigration`]: its version, description, the checksum of the file's
//! bytes (so `validate` reports an edited applied file) and the instance whose
//! `pre_upgrade`/`upgrade`/`post_upgrade`/`downgrade` get the live PyIceberg catalog. A hook
//! runs on the calling thread, outside the runtime's context, with the GIL taken: Python code
//! in it may itself call iceberg_ops (which starts its own runtime), and Ctrl-C raises
//! `KeyboardInterrupt` inside it, as in a pure-Python runner. An exception it raises is
//! recorded in history as `<ExceptionType>: <message>`, as the seed records a failure, and the
//! runner's `RuntimeError` carries it as its `__cause__`; a `KeyboardInterrupt` or
//! `SystemExit` is recorded the same way (the migration stopped half-way) and then raised as
//! itself. A `NotImplementedError` from `downgrade()` is the seed's "no downgrade".
//!
//! Each object owns a runtime: the catalog its history is read through stays bound to it
//! between calls (the history remembers what it last read, to detect concurrent writers).

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use ops_core::CatalogHandle;
use ops_runner::{
    HistoryRow, Migration, MigrationContext, MigrationHistory, MigrationRunner, RollbackTo,
    StepError, Target,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use serde::Serialize;

use crate::errors;
use crate::migrate::{CatalogSpec, open};
use crate::runtime::{Interrupt, OwnedRuntime, block_on_in, call_python};

/// The exception the last failing hook raised, for the error the runner call ends with.
type HookError = Arc<std::sync::Mutex<Option<PyErr>>>;

/// A Python migration file, as the Python runner imported it.
pub struct PyMigration {
    version: String,
    description: String,
    checksum: String,
    file: PathBuf,
    instance: Py<PyAny>,
    catalog: Py<PyAny>,
    hooks: Hooks,
    raised: HookError,
}

/// Which optional hooks the migration class defines.
#[derive(Debug, Clone, Copy)]
struct Hooks {
    pre_upgrade: bool,
    post_upgrade: bool,
    downgrade: bool,
}

impl PyMigration {
    /// Calls `instance.<hook>(catalog)` on this thread (see the module docs).
    fn call(&self, hook: &'static str) -> Result<(), StepError> {
        call_python(|py| {
            let Err(e) = self
                .instance
                .call_method1(py, hook, (self.catalog.clone_ref(py),))
            else {
                return Ok(());
            };
            tracing::debug!(file = %self.file.display(), hook, error = %e, "migration hook raised");
            let kind = e
                .get_type(py)
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "Exception".to_string());
            let message = e.value(py).to_string();
            let not_implemented = e.is_instance_of::<pyo3::exceptions::PyNotImplementedError>(py);
            // PyIceberg's commit conflict: the seed's ConcurrentMigrationError, nothing
            // recorded for the version.
            let conflict = py
                .import("pyiceberg.exceptions")
                .and_then(|m| m.getattr("CommitFailedException"))
                .is_ok_and(|class| e.get_type(py).is_subclass(&class).unwrap_or(false));
            if let Ok(mut slot) = self.raised.lock() {
                *slot = Some(e);
            }
            Err(if conflict {
                StepError::Core(ops_core::Error::CommitConflict {
                    table: format!("a table of migration {} ({hook})", self.version),
                    detail: format!("{kind}: {message}"),
                })
            } else if not_implemented && hook == "downgrade" {
                StepError::NotImplemented(format!(
                    "migration {} ({}): downgrade() raised NotImplementedError: {message}",
                    self.version,
                    self.file.display()
                ))
            } else if message.is_empty() {
                StepError::Raised(kind)
            } else {
                StepError::Raised(format!("{kind}: {message}"))
            })
        })
    }
}

#[async_trait]
impl Migration for PyMigration {
    fn version(&self) -> &str {
        &self.version
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn checksum(&self) -> Option<String> {
        Some(self.checksum.clone())
    }
    fn source(&self) -> String {
        self.file.display().to_string()
    }
    fn describe_upgrade(&self, _ctx: &MigrationContext) -> Vec<String> {
        vec![format!("runs upgrade() of {}", self.file.display())]
    }
    fn describe_downgrade(&self, _ctx: &MigrationContext) -> Result<Vec<String>, StepError> {
        if self.hooks.downgrade {
            Ok(vec![format!("runs downgrade() of {}", self.file.display())])
        } else {
            Err(self.no_downgrade())
        }
    }
    async fn pre_upgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        if self.hooks.pre_upgrade {
            self.call("pre_upgrade")?;
        }
        Ok(())
    }
    async fn upgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        self.call("upgrade")
    }
    async fn post_upgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        if self.hooks.post_upgrade {
            self.call("post_upgrade")?;
        }
        Ok(())
    }
    async fn downgrade(&self, _ctx: &MigrationContext) -> Result<(), StepError> {
        if !self.hooks.downgrade {
            return Err(self.no_downgrade());
        }
        self.call("downgrade")
    }
}

impl PyMigration {
    fn no_downgrade(&self) -> StepError {
        StepError::NotImplemented(format!(
            "migration {} ({}) defines no downgrade(); write one to roll it back",
            self.version,
            self.file.display()
        ))
    }
}

/// A runtime for an object and the catalog `spec` opened on it (bound to it for the object's
/// life).
fn open_owned(py: Python<'_>, spec: &CatalogSpec) -> PyResult<(OwnedRuntime, CatalogHandle)> {
    let runtime = OwnedRuntime::new()?;
    let interrupt = Interrupt::default();
    let handle = block_on_in(py, runtime.get()?, &interrupt, || async {
        open(spec).await.map_err(errors::core)
    })??;
    Ok((runtime, handle))
}

fn to_json<T: Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value)
        .map_err(|e| PyValueError::new_err(format!("a result does not serialize: {e}")))
}

/// The Rust runner for one namespace, with the Python migration files registered.
#[pyclass(frozen, module = "iceberg_ops._native")]
pub struct NativeRunner {
    runtime: OwnedRuntime,
    runner: Arc<MigrationRunner>,
    raised: HookError,
}

#[pymethods]
impl NativeRunner {
    /// `migrations`: `(version, description, file, instance, (pre_upgrade, post_upgrade,
    /// downgrade))` per Python file, `catalog` the PyIceberg catalog their hooks get.
    #[new]
    #[pyo3(signature = (catalog_spec, catalog, namespace, meta_namespace, migrations_dir, migrations))]
    #[allow(clippy::type_complexity)]
    fn new(
        py: Python<'_>,
        catalog_spec: &str,
        catalog: Py<PyAny>,
        namespace: String,
        meta_namespace: String,
        migrations_dir: PathBuf,
        migrations: Vec<(String, String, PathBuf, Py<PyAny>, (bool, bool, bool))>,
    ) -> PyResult<Self> {
        let spec = CatalogSpec::parse(catalog_spec)?;
        let raised: HookError = Arc::default();
        let mut code: Vec<Arc<dyn Migration>> = Vec::new();
        for (version, description, file, instance, (pre, post, down)) in migrations {
            let bytes = std::fs::read(&file).map_err(|e| {
                PyRuntimeError::new_err(format!("cannot read migration {}: {e}", file.display()))
            })?;
            code.push(Arc::new(PyMigration {
                version,
                description,
                checksum: ops_runner::file::checksum(&bytes),
                file,
                instance,
                catalog: catalog.clone_ref(py),
                hooks: Hooks {
                    pre_upgrade: pre,
                    post_upgrade: post,
                    downgrade: down,
                },
                raised: raised.clone(),
            }));
        }
        let (runtime, handle) = open_owned(py, &spec)?;
        let mut runner = MigrationRunner::new(&handle, namespace)
            .meta_namespace(&meta_namespace)
            .migrations_dir(Some(migrations_dir));
        for m in code {
            runner = runner.register(m);
        }
        Ok(Self {
            runtime,
            runner: Arc::new(runner),
            raised,
        })
    }

    /// Every discovered migration's state, as JSON, and its printed line.
    fn status(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        let runner = self.runner.clone();
        let entries = self.run(py, || async move { runner.status().await })?;
        entries
            .iter()
            .map(|e| Ok((to_json(e)?, e.to_string())))
            .collect()
    }

    /// The pending steps up to `target`, as JSON.
    #[pyo3(signature = (target=None))]
    fn plan(&self, py: Python<'_>, target: Option<String>) -> PyResult<String> {
        let runner = self.runner.clone();
        let steps = self.run(py, || async move { runner.plan(target_of(target)).await })?;
        to_json(&steps)
    }

    /// Applies pending migrations up to `target`; the versions applied.
    #[pyo3(signature = (target=None))]
    fn migrate(&self, py: Python<'_>, target: Option<String>) -> PyResult<Vec<String>> {
        let runner = self.runner.clone();
        self.run(
            py,
            || async move { runner.migrate(target_of(target)).await },
        )
    }

    /// Rolls back `steps` migrations, or down to `target`; the versions rolled back. `force`:
    /// run today's file even when it changed since it was applied.
    #[pyo3(signature = (steps=1, target=None, force=false))]
    fn rollback(
        &self,
        py: Python<'_>,
        steps: usize,
        target: Option<String>,
        force: bool,
    ) -> PyResult<Vec<String>> {
        let to = match target {
            Some(t) => RollbackTo::Target(Target::from(t)),
            None => RollbackTo::Steps(steps),
        };
        let options = ops_runner::RollbackOptions {
            force,
            ..Default::default()
        };
        let runner = self.runner.clone();
        self.run(
            py,
            || async move { runner.rollback_with(to, options).await },
        )
    }

    /// Clears failed attempts from history and records the checksums of applied files as they
    /// are now; the report as JSON.
    fn repair(&self, py: Python<'_>) -> PyResult<String> {
        let runner = self.runner.clone();
        let report = self.run(py, || async move { runner.repair().await })?;
        to_json(&report)
    }

    /// Marks migrations up to `target` applied without running them; the versions stamped.
    #[pyo3(signature = (target=None))]
    fn stamp(&self, py: Python<'_>, target: Option<String>) -> PyResult<Vec<String>> {
        let runner = self.runner.clone();
        self.run(py, || async move { runner.stamp(target_of(target)).await })
    }

    /// What differs between history and the migrations (an applied file edited since, an
    /// applied version's file missing, ...), as JSON, each with its printed line.
    fn validate(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        let runner = self.runner.clone();
        let issues = self.run(py, || async move { runner.validate().await })?;
        issues
            .iter()
            .map(|i| Ok((to_json(i)?, i.to_string())))
            .collect()
    }

    /// Every history row of the namespace, as JSON.
    fn history(&self, py: Python<'_>) -> PyResult<String> {
        let runner = self.runner.clone();
        let rows = self.run(py, || async move { runner.history().await })?;
        to_json(&rows)
    }
}

fn target_of(value: Option<String>) -> Option<Target> {
    value.map(Target::from)
}

impl NativeRunner {
    /// Runs a runner call to its end with the GIL released. Ctrl-C is not watched for here:
    /// hooks run on this thread, where Python raises `KeyboardInterrupt` inside them; between
    /// hooks (history reads and writes, short) a pending signal is raised when the call
    /// returns.
    fn run<F, Fut, T>(&self, py: Python<'_>, work: F) -> PyResult<T>
    where
        F: FnOnce() -> Fut + Send,
        Fut: std::future::Future<Output = ops_runner::Result<T>>,
        T: Send,
    {
        let runtime = self.runtime.get()?;
        if let Ok(mut slot) = self.raised.lock() {
            *slot = None;
        }
        let out = py.detach(|| runtime.block_on(work()));
        out.map_err(|e| {
            let raised = self.raised.lock().ok().and_then(|mut slot| slot.take());
            let err = errors::runner(e);
            match raised {
                // Not an Exception (KeyboardInterrupt, SystemExit): recorded as the failure
                // it is, then raised as itself.
                Some(original) if !original.is_instance_of::<pyo3::exceptions::PyException>(py) => {
                    original
                }
                Some(original) => {
                    err.set_cause(py, Some(original));
                    err
                }
                None => err,
            }
        })
    }
}

/// The history table of one catalog's meta-namespace.
#[pyclass(frozen, module = "iceberg_ops._native")]
pub struct NativeHistory {
    runtime: OwnedRuntime,
    history: Arc<MigrationHistory>,
}

#[pymethods]
impl NativeHistory {
    #[new]
    fn new(py: Python<'_>, catalog_spec: &str, meta_namespace: String) -> PyResult<Self> {
        let (runtime, handle) = open_owned(py, &CatalogSpec::parse(catalog_spec)?)?;
        Ok(Self {
            runtime,
            history: Arc::new(MigrationHistory::new(&handle, &meta_namespace)),
        })
    }

    /// Records a status: `applied`, `rolled_back` or `failed` (with `error`).
    #[pyo3(signature = (status, version, namespace, description, error=None))]
    fn record(
        &self,
        py: Python<'_>,
        status: &str,
        version: String,
        namespace: String,
        description: String,
        error: Option<String>,
    ) -> PyResult<()> {
        let history = self.history.clone();
        let status = status.to_string();
        let interrupt = Interrupt::default();
        block_on_in(py, self.runtime.get()?, &interrupt, || async move {
            match status.as_str() {
                "applied" => {
                    history
                        .record_applied(&version, &namespace, &description, None)
                        .await
                }
                "rolled_back" => {
                    history
                        .record_rolled_back(&version, &namespace, &description, None)
                        .await
                }
                _ => {
                    history
                        .record_failed(
                            &version,
                            &namespace,
                            &description,
                            error.as_deref().unwrap_or(""),
                            None,
                        )
                        .await
                }
            }
        })?
        .map_err(errors::runner)
    }

    /// Every current row of `namespace`, as JSON.
    fn get_all(&self, py: Python<'_>, namespace: String) -> PyResult<String> {
        let history = self.history.clone();
        let interrupt = Interrupt::default();
        let rows: Vec<HistoryRow> =
            block_on_in(py, self.runtime.get()?, &interrupt, || async move {
                history.get_all(&namespace).await
            })?
            .map_err(errors::runner)?;
        to_json(&rows)
    }
}
