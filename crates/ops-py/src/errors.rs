//! Library errors as the seed's Python exceptions, in one place (as delta-rs's `error.rs`).
//!
//! The Rust message is kept whole: it names the table, file or column and the fix.
//!
//! | Rust error | Python exception |
//! |---|---|
//! | bad input, an unmappable schema, a refused write mode | `ValueError` |
//! | a checkpoint that cannot be used or resumed, a job already complete | `CheckpointError` (a `RuntimeError`) |
//! | a batch that failed | the exception of its cause, with the batch's message |
//! | a source column a batch lacks (`project_batch`) | `KeyError` |
//! | a value a safe cast would change | `pyarrow.lib.ArrowInvalid` |
//! | a catalog, storage or commit failure | `RuntimeError` |

use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use ops_checkpoint::CheckpointError as RustCheckpointError;
use ops_datamig::MigrationError;
use ops_reconcile::ReconcileError;

pyo3::create_exception!(
    iceberg_ops.data_migration.checkpoint,
    CheckpointError,
    pyo3::exceptions::PyRuntimeError,
    "Raised when a checkpoint file cannot be used: corrupt, unreadable, an unsupported version, \
     or a resume DataMigrator refuses (completed, other settings, a missing source snapshot, \
     batches no longer in the destination)."
);

pyo3::create_exception!(
    iceberg_ops.history,
    ConcurrentMigrationError,
    pyo3::exceptions::PyRuntimeError,
    "Raised when another process changed the migration history during a run: the losing run's \
     status is not recorded. Run migrations for a namespace from one job at a time."
);

/// A runner or history error as the seed's exception.
pub fn runner(e: ops_runner::RunnerError) -> PyErr {
    use ops_runner::RunnerError as R;
    let message = for_python(e.to_string());
    match &e {
        R::InvalidVersion { .. } | R::UnknownTarget { .. } | R::InvalidArgument(_) => {
            PyValueError::new_err(message)
        }
        R::DirectoryNotFound(_) => pyo3::exceptions::PyFileNotFoundError::new_err(message),
        R::NotImplemented { .. } => pyo3::exceptions::PyNotImplementedError::new_err(message),
        // The seed's message is the other run's, without our `ConcurrentMigrationError: `
        // prefix (the class says it).
        R::Concurrent(c) => ConcurrentMigrationError::new_err(c.0.clone()),
        R::Core(c) => core_kind(c).raise(message),
        _ => PyRuntimeError::new_err(message),
    }
}

/// The CLI's advice in a library message, in the Python API's words: the Rust crates serve
/// both, and a Python user has keyword arguments, not flags.
pub fn for_python(message: String) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("--on-duplicate-keys last", "on_duplicate_keys=\"last\""),
        ("--on-duplicate-keys error", "on_duplicate_keys=\"error\""),
        ("--on-duplicate-keys", "on_duplicate_keys"),
        (
            "pass a new --checkpoint path",
            "give the DataMigrator a CheckpointStore of a new path (or call \
             CheckpointStore.reset())",
        ),
        ("--checkpoint path", "CheckpointStore path"),
        ("--checkpoint", "checkpoint"),
        ("--copy-mode rewrite", "copy_mode=\"rewrite\""),
        ("--copy-mode files", "copy_mode=\"files\""),
        ("--copy-mode auto", "copy_mode=\"auto\""),
        ("--copy-mode reference", "copy_mode=\"reference\""),
        ("--copy-mode", "copy_mode"),
        ("--upsert-keys", "upsert_keys"),
        ("--row-filter", "row_filter"),
        ("--dry-run", "dry_run=True"),
        ("--migrations-dir", "migrations_dir="),
        (
            "`migrate-data` run with this checkpoint",
            "DataMigrator.run() with this checkpoint",
        ),
        ("`migrate-data`", "DataMigrator"),
        ("pass --force", "pass force=True"),
        ("`migrate repair`", "MigrationRunner.repair()"),
    ];
    let mut out = message;
    for (cli, python) in WORDS {
        if out.contains(cli) {
            out = out.replace(cli, python);
        }
    }
    out
}

/// A migration error as the seed's exception.
pub fn migration(e: MigrationError) -> PyErr {
    let message = for_python(e.to_string());
    let kind = kind_of(&e);
    kind.raise(message)
}

/// A reconciliation error as the seed's exception.
pub fn reconcile(e: ReconcileError) -> PyErr {
    let message = for_python(e.to_string());
    reconcile_kind(&e).raise(message)
}

/// A checkpoint error as the seed's exception.
pub fn checkpoint(e: RustCheckpointError) -> PyErr {
    let message = for_python(e.to_string());
    checkpoint_kind(&e).raise(message)
}

/// A catalog or storage error (opening a catalog, loading a table).
pub fn core(e: ops_core::Error) -> PyErr {
    let message = e.to_string();
    core_kind(&e).raise(message)
}

/// Which Python exception an error becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ValueError`.
    Value,
    /// `KeyError`.
    Key,
    /// `CheckpointError`.
    Checkpoint,
    /// `pyarrow.lib.ArrowInvalid` (a `ValueError` when pyarrow cannot be imported).
    ArrowInvalid,
    /// `RuntimeError`.
    Runtime,
}

impl Kind {
    /// The exception carrying `message`.
    pub fn raise(self, message: String) -> PyErr {
        match self {
            Kind::Value => PyValueError::new_err(message),
            Kind::Key => PyKeyError::new_err(message),
            Kind::Checkpoint => CheckpointError::new_err(message),
            Kind::Runtime => PyRuntimeError::new_err(message),
            Kind::ArrowInvalid => Python::attach(|py| {
                match py
                    .import("pyarrow.lib")
                    .and_then(|m| m.getattr("ArrowInvalid"))
                {
                    Ok(class) => PyErr::from_type(
                        class
                            .cast_into()
                            .unwrap_or_else(|_| py.get_type::<PyValueError>()),
                        message,
                    ),
                    Err(_) => PyValueError::new_err(message),
                }
            }),
        }
    }
}

/// The exception kind of a migration error (a failed batch takes its cause's).
pub fn kind_of(e: &MigrationError) -> Kind {
    match e {
        MigrationError::InvalidInput(_) => Kind::Value,
        MigrationError::Plan(p) => match reconcile_kind(p) {
            // A plan that cannot be made is bad input to the migrator (the seed's ValueError).
            Kind::Key => Kind::Value,
            k => k,
        },
        MigrationError::Checkpoint(c) => checkpoint_kind(c),
        MigrationError::Resume { .. } | MigrationError::AlreadyComplete { .. } => Kind::Checkpoint,
        MigrationError::Batch { source, .. } => kind_of(source),
        MigrationError::Core(c) => core_kind(c),
        _ => Kind::Runtime,
    }
}

fn reconcile_kind(e: &ReconcileError) -> Kind {
    match e {
        ReconcileError::MissingSourceColumn { .. } => Kind::Key,
        ReconcileError::Cast { .. } => Kind::ArrowInvalid,
        ReconcileError::Plan { .. } | ReconcileError::NullInRequired { .. } => Kind::Value,
        ReconcileError::Schema(_) => Kind::Value,
        _ => Kind::Runtime,
    }
}

fn checkpoint_kind(e: &RustCheckpointError) -> Kind {
    match e {
        // The seed's `mark_committed` raises ValueError for a batch at or below the last one.
        RustCheckpointError::OutOfOrder { .. } => Kind::Value,
        _ => Kind::Checkpoint,
    }
}

fn core_kind(e: &ops_core::Error) -> Kind {
    match e {
        ops_core::Error::Config(_) | ops_core::Error::InvalidInput(_) => Kind::Value,
        _ => Kind::Runtime,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_advice_reads_as_python_arguments() {
        let m = for_python(
            "key k repeats; keep the last row of each key with --on-duplicate-keys last, or \
             pass a new --checkpoint path"
                .to_string(),
        );
        assert_eq!(
            m,
            "key k repeats; keep the last row of each key with on_duplicate_keys=\"last\", or \
             give the DataMigrator a CheckpointStore of a new path (or call \
             CheckpointStore.reset())"
        );
    }

    #[test]
    fn a_failed_batch_raises_what_its_cause_raises() {
        let cause = MigrationError::InvalidInput("duplicate key".into());
        let batch = MigrationError::Batch {
            batch: 3,
            committed_batches: 3,
            checkpoint: None,
            write_mode: ops_datamig::WriteMode::Upsert,
            tagged_rerun: true,
            source: Box::new(cause),
        };
        assert_eq!(kind_of(&batch), Kind::Value);
        let resume = MigrationError::Resume {
            path: "c.json".into(),
            reason: "completed".into(),
            committed_batches: 0,
            rollback_to: None,
            dest: "d".into(),
            write_mode: ops_datamig::WriteMode::Append,
            job_done: true,
        };
        assert_eq!(kind_of(&resume), Kind::Checkpoint);
    }

    #[test]
    fn an_out_of_order_batch_is_a_value_error_and_a_corrupt_file_a_checkpoint_error() {
        let out = RustCheckpointError::OutOfOrder {
            path: "c.json".into(),
            batch: 1,
            last: 2,
        };
        assert_eq!(checkpoint_kind(&out), Kind::Value);
        let corrupt = RustCheckpointError::Corrupt {
            path: "c.json".into(),
            reason: "not JSON".into(),
        };
        assert_eq!(checkpoint_kind(&corrupt), Kind::Checkpoint);
    }
}
