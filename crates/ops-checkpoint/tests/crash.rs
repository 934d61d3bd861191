//! Kill a writer mid-stream many times; the checkpoint must always be the old or the new one.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::Duration;

use ops_checkpoint::CheckpointStore;

const CHILD_VAR: &str = "OPS_CHECKPOINT_CRASH_CHILD";

fn snapshots_of(batch: u64) -> [i64; 2] {
    let b = batch as i64;
    [b * 10, b * 10 + 1]
}

/// Runs only when re-executed by `killed_writer_leaves_old_or_new_file`: commits batches as fast
/// as it can until it is killed.
#[test]
fn crash_child_writer() {
    let Ok(path) = std::env::var(CHILD_VAR) else {
        return;
    };
    let mut store = CheckpointStore::new(path);
    let mut next = store.last_committed().unwrap().map_or(0, |b| b + 1);
    loop {
        store.mark_committed(next, &snapshots_of(next)).unwrap();
        next += 1;
    }
}

#[test]
fn killed_writer_leaves_old_or_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ckpt.json");
    let exe = std::env::current_exe().unwrap();
    let mut last_seen: Option<u64> = None;
    let mut advanced = 0;
    const ROUNDS: u64 = 60;
    for round in 0..ROUNDS {
        let mut child = Command::new(&exe)
            .args(["crash_child_writer", "--exact", "--test-threads=1"])
            .env(CHILD_VAR, &path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Vary the kill point so it lands in every phase of a write.
        std::thread::sleep(Duration::from_millis(30 + (round * 7919) % 90));
        child.kill().unwrap();
        child.wait().unwrap();

        let mut store = CheckpointStore::new(&path);
        let state = store
            .state()
            .unwrap_or_else(|e| panic!("round {round}: checkpoint unusable after kill: {e}"));
        let Some(state) = state else {
            assert!(last_seen.is_none(), "round {round}: checkpoint vanished");
            continue;
        };
        let last = state
            .last_committed_batch
            .expect("a written checkpoint has a batch");
        let expected: Vec<i64> = (0..=last).flat_map(snapshots_of).collect();
        assert_eq!(
            state.dest_snapshot_ids, expected,
            "round {round}: torn contents"
        );
        assert!(
            last_seen.is_none_or(|prev| last >= prev),
            "round {round}: went backwards"
        );
        if last_seen != Some(last) {
            advanced += 1;
        }
        last_seen = Some(last);
    }
    assert!(
        // A loaded machine may start the child slowly; a quarter of the rounds still means
        // dozens of kills landing mid-stream.
        advanced >= ROUNDS / 4,
        "the writer made progress in only {advanced} of {ROUNDS} rounds; the test did not \
         exercise mid-write kills"
    );
}
