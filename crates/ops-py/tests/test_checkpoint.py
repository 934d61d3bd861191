"""CheckpointStore, written from the seed's text: the fresh and the resuming loop, the file
format, and its errors."""

import json

import pytest

from iceberg_ops.data_migration import CheckpointError, CheckpointStore


def test_fresh_migration_loop_then_resume_loop(tmp_path):
    path = tmp_path / "sub" / "migrate.json"
    store = CheckpointStore(path)
    assert not store.exists() and store.last_committed() is None
    store.start(source_snapshot_id=12345, job={"batch_rows": 50000, "write_mode": "append"})
    written = []
    for batch_idx in range(5):
        if store.is_committed(batch_idx):
            continue
        written.append(batch_idx)
        store.mark_committed(batch_idx, 1000 + batch_idx)
        if batch_idx == 2:
            break  # the crash
    assert written == [0, 1, 2]

    resumed = CheckpointStore(path)  # no start(): the file is loaded on first use
    assert resumed.last_committed() == 2
    again = [i for i in range(5) if not resumed.is_committed(i)]
    assert again == [3, 4]
    for i in again:
        resumed.mark_committed(i, [2000 + i, 3000 + i])
    resumed.mark_completed()
    assert resumed.completed
    assert resumed.dest_snapshot_ids == [1000, 1001, 1002, 2003, 3003, 2004, 3004]
    assert resumed.source_snapshot_id == 12345

    on_disk = json.loads(path.read_text())
    assert on_disk["version"] == 1
    assert on_disk["last_committed_batch"] == 4
    assert on_disk["completed"] is True
    assert on_disk["job"] == {"batch_rows": 50000, "write_mode": "append"}
    assert on_disk["started_at"].endswith("Z")


def test_job_is_returned_as_a_copy(tmp_path):
    store = CheckpointStore(tmp_path / "c.json")
    store.start(job={"a": [1]})
    job = store.job
    job["a"].append(2)
    assert store.job == {"a": [1]}


def test_mark_committed_out_of_order_is_a_value_error(tmp_path):
    store = CheckpointStore(tmp_path / "c.json")
    store.mark_committed(3, [])  # lazily creates the file
    with pytest.raises(ValueError, match="3"):
        store.mark_committed(3 - 1, 7)
    with pytest.raises(ValueError):
        store.mark_committed(-1, 7)


def test_corrupt_or_unsupported_files_are_checkpoint_errors_naming_the_path(tmp_path):
    path = tmp_path / "c.json"
    path.write_text("{not json")
    with pytest.raises(CheckpointError, match=str(path)):
        CheckpointStore(path).last_committed()
    path.write_text(json.dumps({"version": 99, "last_committed_batch": None}))
    with pytest.raises(CheckpointError, match="99"):
        CheckpointStore(path).last_committed()


def test_reset_is_idempotent_and_forgets(tmp_path):
    store = CheckpointStore(tmp_path / "c.json")
    store.reset()
    store.mark_committed(0, 1)
    store.reset()
    assert not store.exists() and store.last_committed() is None
    store.reset()
