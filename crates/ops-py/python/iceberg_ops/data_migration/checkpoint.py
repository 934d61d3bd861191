"""Resumable-migration bookkeeping for the cross-table data migrator.

A :class:`CheckpointStore` persists per-batch progress to a JSON file on local disk (format
version 1, written atomically: a flushed and fsync-ed ``<path>.tmp`` replaces the file). It is
the same file ``iceberg-ops migrate-data --checkpoint`` reads and writes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from iceberg_ops import _native
from iceberg_ops._native import CheckpointError

__all__ = ["CheckpointError", "CheckpointStore"]


def _batch_index(batch_idx: int) -> int:
    if isinstance(batch_idx, bool) or not isinstance(batch_idx, int):
        raise TypeError(f"batch_idx must be an int, not {type(batch_idx).__name__}")
    if batch_idx < 0:
        raise ValueError(f"batch_idx must be zero or more, not {batch_idx}")
    return batch_idx


class CheckpointStore:
    """JSON-file-backed checkpoint for resumable data migrations.

    The constructor does not touch disk. Call :meth:`start` to initialise a fresh checkpoint,
    or any accessor on an existing file to read it. Reads take no lock, so a progress callback
    or another process may read the checkpoint of a running migration; each write takes the
    file's lock (``<path>.lock``) for its duration, and a running migration holds it throughout.

    Args:
        path: Where the checkpoint JSON lives; its directory is created on first write.
    """

    def __init__(self, path: str | Path) -> None:
        self._path = Path(path)
        self._native = _native.NativeCheckpoint(self._path)

    def __repr__(self) -> str:
        return f"CheckpointStore({str(self._path)!r})"

    @property
    def path(self) -> Path:
        """Filesystem path the checkpoint persists to."""
        return self._path

    def exists(self) -> bool:
        """True if the checkpoint file is currently on disk."""
        return self._native.exists()

    def start(self, source_snapshot_id: int | None = None, *, job: dict[str, Any] | None = None) -> None:
        """Initialise a fresh checkpoint, overwriting any previous file."""
        job_json = None
        if job is not None:
            if not isinstance(job, dict):
                raise TypeError(f"job must be a dict, not {type(job).__name__}")
            try:
                job_json = json.dumps(job)
            except TypeError as e:
                raise ValueError(f"job must be JSON-serialisable: {e}") from None
        self._native.start(source_snapshot_id, job_json)

    def reset(self) -> None:
        """Delete the checkpoint file and clear in-memory state (idempotent)."""
        self._native.reset()

    def mark_completed(self) -> None:
        """Mark the migration as complete; the file stays for audit."""
        self._native.mark_completed()

    def is_committed(self, batch_idx: int) -> bool:
        """True if ``batch_idx`` was already committed."""
        return self._native.is_committed(_batch_index(batch_idx))

    def mark_committed(self, batch_idx: int, dest_snapshot_id: int | list[int]) -> None:
        """Record that ``batch_idx`` produced ``dest_snapshot_id`` (one id or a list) and persist.

        Raises:
            ValueError: ``batch_idx`` is not greater than :meth:`last_committed`.
        """
        ids = [dest_snapshot_id] if isinstance(dest_snapshot_id, int) else list(dest_snapshot_id)
        self._native.mark_committed(_batch_index(batch_idx), ids)

    def last_committed(self) -> int | None:
        """The last committed batch index, or ``None``."""
        return self._native.last_committed()

    @property
    def source_snapshot_id(self) -> int | None:
        """Source snapshot recorded by the most recent :meth:`start`."""
        return self._native.source_snapshot_id()

    @property
    def job(self) -> dict[str, Any] | None:
        """Job identity recorded by the most recent :meth:`start` (a copy)."""
        text = self._native.job()
        return None if text is None else json.loads(text)

    @property
    def started_at(self) -> str | None:
        """ISO 8601 UTC timestamp of the most recent :meth:`start`."""
        return self._native.started_at()

    @property
    def completed(self) -> bool:
        """True once :meth:`mark_completed` was called."""
        return self._native.completed()

    @property
    def dest_snapshot_ids(self) -> list[int]:
        """Snapshot ids every committed batch produced, in commit order."""
        return self._native.dest_snapshot_ids()
