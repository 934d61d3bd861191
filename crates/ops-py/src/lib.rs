//! # ops-py: the compiled half of the `iceberg_ops` Python package
//!
//! The package users import is Python (`python/iceberg_ops/`): the seed's classes, signatures,
//! docstrings and type hints. Under it sits this module, `iceberg_ops._native`, which runs the
//! Rust crates: [`migrate`] runs and verifies a `DataMigrator` job described in JSON,
//! [`reconcile`] computes reconciliation plans and projects Arrow batches, [`checkpoint`] is the
//! checkpoint file, [`runner`] the migration runner (with Python migration files) and its
//! history, [`catalog`] resolves catalogs by name as the CLI does, and [`errors`] maps every
//! library error onto the seed's exception classes.
//!
//! Structured values cross the boundary as JSON (small, and testable on both sides); Arrow data
//! crosses through the Arrow PyCapsule interface without copies. Work runs with the GIL
//! released ([`runtime::block_on_detached`]), and Ctrl-C stops it at an await point, where a
//! crash would leave the same (resumable) state.
//!
//! PyO3's `extension-module` feature is left to maturin (it sets it when it builds the wheel),
//! so `cargo test --workspace` links this crate against libpython like any other binary.

pub mod catalog;
pub mod checkpoint;
pub mod errors;
pub mod migrate;
pub mod reconcile;
pub mod runner;
pub mod runtime;

use pyo3::prelude::*;

/// jemalloc for the extension's own (Rust) allocations; see Cargo.toml.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// `iceberg_ops._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("CheckpointError", py.get_type::<errors::CheckpointError>())?;
    m.add(
        "ConcurrentMigrationError",
        py.get_type::<errors::ConcurrentMigrationError>(),
    )?;
    m.add_function(wrap_pyfunction!(migrate::run_migration, m)?)?;
    m.add_function(wrap_pyfunction!(migrate::verify_migration, m)?)?;
    m.add_function(wrap_pyfunction!(reconcile::compute_plan, m)?)?;
    m.add_function(wrap_pyfunction!(reconcile::project_batch, m)?)?;
    m.add_class::<reconcile::NativePlan>()?;
    m.add_class::<checkpoint::NativeCheckpoint>()?;
    m.add_class::<runner::NativeRunner>()?;
    m.add_class::<runner::NativeHistory>()?;
    m.add_function(wrap_pyfunction!(catalog::resolve_catalog, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::check_catalog, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::sqlite_library_version, m)?)?;
    m.add_function(wrap_pyfunction!(catalog::normalize_version, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
