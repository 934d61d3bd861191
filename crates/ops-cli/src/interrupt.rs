//! SIGINT and SIGTERM while a cluster job runs: the first asks the job's client to stop at its
//! next safe point (never inside a commit), so it cancels the job and removes what nothing
//! will commit; a second one exits at once.

use tokio::sync::watch;

/// A flag that turns true at the first SIGINT or SIGTERM (the handler is installed on the
/// first call; later calls share it).
pub fn on_signal() -> watch::Receiver<bool> {
    static STOP: std::sync::OnceLock<watch::Receiver<bool>> = std::sync::OnceLock::new();
    STOP.get_or_init(|| {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            let mut asked = false;
            loop {
                if !next_signal().await {
                    // No handler could be installed: the default (exit at once) stays.
                    return;
                }
                if asked {
                    eprintln!("iceberg-ops: interrupted again; exiting now");
                    std::process::exit(130);
                }
                asked = true;
                eprintln!(
                    "iceberg-ops: interrupted; stopping the cluster job after the commit in \
                     progress, if any (interrupt again to exit now)"
                );
                let _ = tx.send(true);
            }
        });
        rx
    })
    .clone()
}

/// Waits for SIGINT or SIGTERM; false when neither can be listened for.
async fn next_signal() -> bool {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut int), Ok(mut term)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) else {
            return false;
        };
        tokio::select! {
            _ = int.recv() => true,
            _ = term.recv() => true,
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.is_ok()
    }
}
