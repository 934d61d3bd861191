//! Rust work run from Python: the GIL released, a fresh tokio runtime per call, Ctrl-C and
//! callback errors as stops at an await point.
//!
//! A stop drops the work's future and shuts the runtime down, which drops every task it
//! spawned at its next await: what is left is what a `kill -9` at that moment leaves (commits
//! are atomic, the checkpoint is replaced atomically), so the same call run again resumes.
//! A runtime per call, not one per process: the catalogs a call opens (SQLite and PostgreSQL
//! pools, HTTP clients) live and die with it, so nothing of a stopped call lingers.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Calls Python from inside the work: outside the runtime's context
/// (`tokio::task::block_in_place`), so Python code there may itself call iceberg_ops, which
/// starts a runtime of its own, and a long callback does not hold up the runtime's other tasks.
pub fn call_python<T>(f: impl FnOnce(Python<'_>) -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| Python::attach(f))
        }
        _ => Python::attach(f),
    }
}

/// How often pending signals (Ctrl-C) are checked while Rust works.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// Why a call stopped early: the first Python exception raised by a callback or a signal
/// handler. Shared with the callbacks the work calls.
#[derive(Debug, Default)]
pub struct Interrupt {
    stopped: Arc<AtomicBool>,
    error: Mutex<Option<PyErr>>,
}

impl Interrupt {
    /// Records `error` (the first one wins) and asks the work to stop.
    pub fn stop(&self, error: PyErr) {
        if let Ok(mut slot) = self.error.lock()
            && slot.is_none()
        {
            *slot = Some(error);
        }
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// True once [`Interrupt::stop`] was called.
    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// The flag [`Interrupt::stop`] sets, for work that checks it between its steps
    /// (`DataMigrator::stop_when`: before each commit).
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.stopped.clone()
    }

    fn take(&self) -> PyErr {
        self.error
            .lock()
            .ok()
            .and_then(|mut e| e.take())
            .unwrap_or_else(|| PyRuntimeError::new_err("the operation was interrupted"))
    }
}

/// Runs the future `work()` makes on a new runtime with the GIL released, checking for
/// signals every [`SIGNAL_CHECK`]; returns its output, or the exception that stopped it. The
/// runtime, and every task the work spawned, is gone when this returns.
pub fn block_on_detached<F, Fut, T>(py: Python<'_>, interrupt: &Interrupt, work: F) -> PyResult<T>
where
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = T>,
    T: Send,
{
    let outcome = py.detach(|| -> PyResult<Option<T>> {
        let runtime = new_runtime()?;
        let out = drive(&runtime, interrupt, work);
        runtime.shutdown_background();
        Ok(out)
    })?;
    finish(outcome, interrupt)
}

/// As [`block_on_detached`], on a runtime that outlives the call (an object's: the catalogs
/// it opened stay bound to it). A stop drops the work's future only.
pub fn block_on_in<F, Fut, T>(
    py: Python<'_>,
    runtime: &tokio::runtime::Runtime,
    interrupt: &Interrupt,
    work: F,
) -> PyResult<T>
where
    F: FnOnce() -> Fut + Send,
    Fut: Future<Output = T>,
    T: Send,
{
    let outcome = py.detach(|| drive(runtime, interrupt, work));
    finish(outcome, interrupt)
}

/// An object's runtime, shut down without waiting for its threads when the object is freed
/// (which may happen with the GIL held, while a thread of the runtime waits for the GIL).
#[derive(Debug)]
pub struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl OwnedRuntime {
    /// A new runtime.
    pub fn new() -> PyResult<Self> {
        new_runtime().map(|r| Self(Some(r)))
    }

    /// The runtime.
    pub fn get(&self) -> PyResult<&tokio::runtime::Runtime> {
        self.0
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("the object's runtime was shut down"))
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// A multi-threaded runtime for one call or one object.
pub fn new_runtime() -> PyResult<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("iceberg-ops")
        .build()
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the tokio runtime: {e}")))
}

fn drive<F, Fut, T>(runtime: &tokio::runtime::Runtime, interrupt: &Interrupt, work: F) -> Option<T>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = T>,
{
    runtime.block_on(async {
        let work = work();
        let mut work = std::pin::pin!(work);
        let mut tick = tokio::time::interval(SIGNAL_CHECK);
        loop {
            tokio::select! {
                out = &mut work => break Some(out),
                _ = tick.tick() => {
                    if interrupt.stopped() {
                        break None;
                    }
                    // block_on polls on the calling thread, the one Python delivers signals
                    // to, so this is where Ctrl-C is seen.
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        interrupt.stop(e);
                        break None;
                    }
                }
            }
        }
    })
}

fn finish<T>(outcome: Option<T>, interrupt: &Interrupt) -> PyResult<T> {
    match outcome {
        Some(out) if !interrupt.stopped() => Ok(out),
        _ => Err(interrupt.take()),
    }
}
