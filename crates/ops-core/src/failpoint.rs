//! Test-only failpoints: the process aborts at a named point of a job, as a SIGKILL landing
//! exactly there would, so the tests can stop a run between two of its durable steps instead
//! of hoping a random kill lands there. The crates above name their own points (ops-datamig's
//! `failpoint` module lists a migration's, ops-import's `migrate` a table migration's).
//!
//! `ICEBERG_OPS_TEST_ABORT_AT=<point>` names the point. It is honoured by debug builds only
//! (release builds, which users run, never read it), and only when its value is exactly a point
//! a job passes, so neither a release binary nor a stray value can abort real work. Before
//! aborting, the process prints `iceberg-ops: test failpoint <point>: aborting` on stderr, so a
//! test tells its failpoint from any other crash.

/// The environment variable naming the point to abort at (debug builds only).
pub const ABORT_AT_ENV: &str = "ICEBERG_OPS_TEST_ABORT_AT";

/// Aborts the process if the tests asked for `point` (see the module docs).
pub fn hit(point: &str) {
    if armed().is_some_and(|p| p == point) {
        abort(point);
    }
}

/// The point the tests named, in a debug build.
pub fn armed() -> Option<&'static str> {
    if !cfg!(debug_assertions) {
        return None;
    }
    static POINT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    POINT
        .get_or_init(|| std::env::var(ABORT_AT_ENV).ok())
        .as_deref()
}

/// Aborts the process at `point`, saying so on stderr.
pub fn abort(point: &str) -> ! {
    eprintln!("iceberg-ops: test failpoint {point}: aborting");
    std::process::abort()
}
