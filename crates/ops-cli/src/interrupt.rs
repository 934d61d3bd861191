//! SIGINT and SIGTERM during `maintain` or a cluster compaction: the first asks the work to
//! stop at its next safe point (never inside a commit) — a cluster job's client cancels the
//! job and removes what nothing will commit, `maintain` starts nothing more; a second one
//! exits at once. During a local migration: exit at once, saying what was left and how to go
//! on ([`exit_on_signal`]).

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
                let Some(code) = next_signal().await else {
                    // No handler could be installed: the default (exit at once) stays.
                    return;
                };
                if asked {
                    eprintln!(
                        "iceberg-ops: interrupted again; exiting now, as a kill would: what was \
                         committed stays, but the cluster job is not cancelled and its files are \
                         left for `iceberg-ops table remove-orphans`"
                    );
                    std::process::exit(code);
                }
                asked = true;
                eprintln!(
                    "iceberg-ops: interrupted; stopping after the work in progress reaches a safe \
                     point (a cluster job: after the commit in progress, if any; interrupt again \
                     to exit now)"
                );
                let _ = tx.send(true);
            }
        });
        rx
    })
    .clone()
}

/// At the first SIGINT or SIGTERM, prints `message` and exits with the shell's code for the
/// signal, as the signal's default would but saying so: for work built to survive a kill at
/// any point (a local migration: each commit lands whole or not at all, and a re-run finds
/// what landed), where waiting for a safe point gains nothing and the user needs to know what
/// was left and how to go on.
/// The message can be changed as the work goes on, through the handle returned (a signal
/// listener cannot be taken back: tokio keeps it registered).
pub fn exit_on_signal(message: String) -> std::sync::Arc<std::sync::Mutex<String>> {
    let shared = std::sync::Arc::new(std::sync::Mutex::new(message));
    let said = shared.clone();
    tokio::spawn(async move {
        if let Some(code) = next_signal().await {
            let message = said.lock().map(|m| m.clone()).unwrap_or_default();
            // After the progress line the reporter may have left unfinished.
            eprintln!("\n{message}");
            std::process::exit(code);
        }
    });
    shared
}

/// Waits for SIGINT or SIGTERM and gives the exit code a shell reports for it (130, 143);
/// `None` when neither can be listened for.
async fn next_signal() -> Option<i32> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{Signal, SignalKind, signal};
        // Made once: a signal arriving between two waits is kept for the next.
        static LISTENERS: tokio::sync::OnceCell<Option<tokio::sync::Mutex<(Signal, Signal)>>> =
            tokio::sync::OnceCell::const_new();
        let listeners = LISTENERS
            .get_or_init(|| async {
                match (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                ) {
                    (Ok(int), Ok(term)) => Some(tokio::sync::Mutex::new((int, term))),
                    _ => None,
                }
            })
            .await
            .as_ref()?;
        let mut guard = listeners.lock().await;
        let (int, term) = &mut *guard;
        tokio::select! {
            _ = int.recv() => Some(130),
            _ = term.recv() => Some(143),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.ok().map(|()| 130)
    }
}
