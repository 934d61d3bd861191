//! Which task failures Ballista should run again.
//!
//! Ballista 53 retries a failed task (up to the scheduler's `--task-max-failures`) only when
//! the executor reports an I/O error; any other error fails the job at once. A migration task
//! fails transiently when its object store or catalog does (a timeout, a 503, a reset
//! connection, throttling) — the same task on a fresh attempt succeeds — and permanently when
//! its input is wrong (a vanished source file, a schema that does not fit, bad settings), which
//! no retry mends. The storage layer says which it is: opendal marks errors temporary (and
//! persistent once its own retries ran out), iceberg marks retryable catalog errors, and
//! sockets report their kind.

use std::error::Error;
use std::io::ErrorKind;

/// True when something in `err`'s chain of causes is a failure a later attempt may not meet.
pub fn is_transient(err: &(dyn Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(o) = e.downcast_ref::<opendal_core::Error>() {
            // Temporary, or persistent (temporary but still failing after opendal's retries) —
            // but never a missing object, which no retry brings back (opendal marks a 404
            // persistent once its own retries gave up on it).
            return !o.is_permanent() && o.kind() != opendal_core::ErrorKind::NotFound;
        }
        if iceberg_error(e).is_some_and(iceberg::Error::retryable) {
            return true;
        }
        // Socket failures only: an unexpected end of a local file is not mended by a retry.
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ErrorKind::TimedOut
                    | ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::ConnectionRefused
                    | ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        next = e.source();
    }
    false
}

/// The iceberg error `e` is or wraps without being its own cause: a boxed one (a `#[source]`
/// box is its own link of the chain) and the `#[error(transparent)]` variants, whose `source()`
/// skips the iceberg error and goes straight to its cause.
fn iceberg_error<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a iceberg::Error> {
    if let Some(i) = e.downcast_ref::<iceberg::Error>() {
        return Some(i);
    }
    if let Some(i) = e.downcast_ref::<Box<iceberg::Error>>() {
        return Some(i);
    }
    let core = |c: &'a ops_core::Error| match c {
        ops_core::Error::Iceberg(i) => Some(&**i),
        _ => None,
    };
    let migration = |m: &'a ops_datamig::MigrationError| match m {
        ops_datamig::MigrationError::Iceberg(i) => Some(&**i),
        ops_datamig::MigrationError::Core(c) => core(c),
        _ => None,
    };
    if let Some(c) = e.downcast_ref::<ops_core::Error>() {
        return core(c);
    }
    if let Some(c) = e.downcast_ref::<Box<ops_core::Error>>() {
        return core(c);
    }
    if let Some(m) = e.downcast_ref::<ops_datamig::MigrationError>() {
        return migration(m);
    }
    if let Some(m) = e.downcast_ref::<Box<ops_datamig::MigrationError>>() {
        return migration(m);
    }
    match e.downcast_ref::<crate::error::ClusterError>()? {
        crate::error::ClusterError::Io { source, .. } => Some(source),
        crate::error::ClusterError::Migration(m) => migration(m),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io_failure(e: opendal_core::Error) -> iceberg::Error {
        // As iceberg-storage-opendal wraps every storage error.
        iceberg::Error::new(
            iceberg::ErrorKind::Unexpected,
            "Failure in doing io operation",
        )
        .with_source(e)
    }

    #[test]
    fn storage_errors_are_transient_as_opendal_marks_them() {
        let temporary =
            opendal_core::Error::new(opendal_core::ErrorKind::Unexpected, "503").set_temporary();
        assert!(is_transient(&io_failure(temporary)));
        let exhausted =
            opendal_core::Error::new(opendal_core::ErrorKind::Unexpected, "503").set_persistent();
        assert!(is_transient(&io_failure(exhausted)));
        let missing = opendal_core::Error::new(opendal_core::ErrorKind::NotFound, "no such key");
        assert!(!is_transient(&io_failure(missing)));
        // As opendal reports a 404 its retry layer gave up on.
        let missing = opendal_core::Error::new(opendal_core::ErrorKind::NotFound, "no such key")
            .set_persistent();
        assert!(!is_transient(&io_failure(missing)));
    }

    #[test]
    fn causes_are_followed_through_the_migration_errors() {
        let temporary =
            opendal_core::Error::new(opendal_core::ErrorKind::Unexpected, "reset").set_temporary();
        let wrapped = ops_datamig::MigrationError::from(io_failure(temporary));
        assert!(is_transient(&wrapped));
        let bad = ops_datamig::MigrationError::InvalidInput("no such column".into());
        assert!(!is_transient(&bad));
        let retryable =
            iceberg::Error::new(iceberg::ErrorKind::Unexpected, "throttled").with_retryable(true);
        assert!(is_transient(&retryable));
        let reset = std::io::Error::new(ErrorKind::ConnectionReset, "reset by peer");
        assert!(is_transient(&reset));
        let denied = std::io::Error::new(ErrorKind::PermissionDenied, "denied");
        assert!(!is_transient(&denied));
        let truncated = std::io::Error::new(ErrorKind::UnexpectedEof, "short read");
        assert!(!is_transient(&truncated));
    }

    /// A retryable iceberg error with no cause of its own (the Glue catalog's throttling,
    /// made text by its crate) is seen behind every wrapper a task's error passes through.
    #[test]
    fn a_retryable_catalog_error_is_seen_behind_the_wrappers() {
        let throttled = || {
            iceberg::Error::new(iceberg::ErrorKind::Unexpected, "ThrottlingException")
                .with_retryable(true)
        };
        let io = crate::error::ClusterError::Io {
            what: "load destination db.t".into(),
            source: Box::new(throttled()),
        };
        assert!(is_transient(&io));
        let migration = crate::error::ClusterError::Migration(ops_datamig::MigrationError::Core(
            ops_core::Error::from(throttled()),
        ));
        assert!(is_transient(&migration));
        let batch = ops_datamig::MigrationError::Batch {
            batch: 0,
            committed_batches: 0,
            checkpoint: None,
            write_mode: ops_datamig::WriteMode::Append,
            tagged_rerun: false,
            source: Box::new(ops_datamig::MigrationError::from(throttled())),
        };
        assert!(is_transient(&batch));
        let missing = crate::error::ClusterError::Io {
            what: "read s3://b/f.parquet".into(),
            source: Box::new(iceberg::Error::new(
                iceberg::ErrorKind::DataInvalid,
                "not a parquet file",
            )),
        };
        assert!(!is_transient(&missing));
    }
}
