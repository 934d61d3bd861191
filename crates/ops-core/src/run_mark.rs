//! Marks that say which process runs a long job, so a second run can tell a job still going
//! from one whose process is gone: `host:pid:started-ms`. ops-import's table migration records
//! one on its backup; ops-maintenance's `maintain` holds one per table as its lease.

use std::path::Path;

/// The host this process runs on (read once).
pub fn this_host() -> String {
    static HOST: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        std::fs::read_to_string("/etc/hostname")
            .ok()
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".into())
    })
    .clone()
}

/// Now, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// This process's mark: `host:pid:now-ms`.
pub fn this_run() -> String {
    format!("{}:{}:{}", this_host(), std::process::id(), now_ms())
}

/// A mark's parts: (host, pid, started ms); `None` for text of another form.
pub fn parse(run: &str) -> Option<(&str, u32, i64)> {
    let mut parts = run.rsplitn(3, ':');
    let (Some(ms), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return None;
    };
    Some((host, pid.parse().ok()?, ms.parse().ok()?))
}

/// Whether the run that wrote `run` ([`this_run`]) may still be going: on this host, while its
/// process lives (another process than this one); on another host, for `remote_lease_ms` after
/// it started. A mark of another form was left by a run that is over.
pub fn may_be_alive(run: &str, remote_lease_ms: i64) -> bool {
    let Some((host, pid, ms)) = parse(run) else {
        return false;
    };
    if host == this_host() {
        return pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists();
    }
    now_ms().saturating_sub(ms) < remote_lease_ms
}
