"""MigrationRunner — discovers, applies and rolls back Iceberg migrations for one namespace.

Migration files are ``NNNN_<description>.py`` in ``migrations_dir`` (flat), or in
``migrations_dir/<namespace>/`` when that directory exists (namespace-scoped). Each holds
exactly one :class:`Migration` subclass whose ``version`` equals the file's ``NNNN``::

    # migrations/sales/0002_add_sku.py
    from iceberg_ops.runner import Migration

    class AddSku(Migration):
        version = "0002"
        description = "add sku"              # optional: default, the file name's description
        def upgrade(self, catalog): ...      # catalog: the one the runner was given
        def downgrade(self, catalog): ...    # optional: without it rollback refuses

TOML migrations of the ``iceberg-ops`` command work beside them. History, its checksums (a
Python file's is its bytes, so ``validate`` reports an edited applied file) and the
concurrency rules are the Rust runner's: concurrent runs for one namespace are detected when
history is written (:class:`~iceberg_ops.history.ConcurrentMigrationError`), not prevented, so
``upgrade()`` should be idempotent.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

from iceberg_ops import _native, _tables

__all__ = ["Migration", "MigrationRunner", "normalize_version"]

_FILE = re.compile(r"(\d{4})_(.+)\.py")


def normalize_version(value: str | int) -> str:
    """Normalise a migration version to its 4-digit form: ``"2"``, ``2`` -> ``"0002"``.

    Raises:
        ValueError: ``value`` is not 1-4 decimal digits.
    """
    return _native.normalize_version(value)


class Migration:
    """Base class of the one migration class in a ``NNNN_<description>.py`` file.

    Attributes:
        version: ``"NNNN"``, equal to the file name's prefix.
        description: Stored in history; default, the file name's description.
    """

    version: str = ""
    description: str | None = None

    def pre_upgrade(self, catalog: Any) -> None:
        """Runs before :meth:`upgrade` (optional)."""

    def upgrade(self, catalog: Any) -> None:
        """Applies the migration."""
        raise NotImplementedError(f"{type(self).__name__} defines no upgrade()")

    def post_upgrade(self, catalog: Any) -> None:
        """Runs after a successful :meth:`upgrade` (optional)."""

    def downgrade(self, catalog: Any) -> None:
        """Undoes the migration (optional: without it, rollback refuses)."""
        raise NotImplementedError(f"{type(self).__name__} defines no downgrade()")


def _overrides(cls: type, name: str) -> bool:
    return getattr(cls, name) is not getattr(Migration, name)


# Files imported by this process, by path: (mtime_ns, size) when imported, and what loading
# them gave. A runner call imports a file again only when it changed, so its module-level code
# (registering models, metrics) runs once, not once per status()/plan()/migrate().
_LOADED: dict[Path, tuple[tuple[int, int], tuple[Any, ...]]] = {}


def _load(path: Path, prefix: str, default_description: str) -> tuple[Any, ...]:
    stat = path.stat()
    stamp = (stat.st_mtime_ns, stat.st_size)
    key = path.resolve()
    cached = _LOADED.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    loaded = _import(path, prefix, default_description)
    _LOADED[key] = (stamp, loaded)
    return loaded


def _import(path: Path, prefix: str, default_description: str) -> tuple[Any, ...]:
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    module_name = f"iceberg_ops_migration_{prefix}_{digest}"
    try:
        return _import_module(path, prefix, default_description, module_name)
    except BaseException:
        # A rejected file leaves nothing behind.
        sys.modules.pop(module_name, None)
        raise


def _import_module(
    path: Path, prefix: str, default_description: str, module_name: str
) -> tuple[Any, ...]:
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise ImportError("not a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except Exception as e:
        raise RuntimeError(f"cannot load migration {path}: {type(e).__name__}: {e}") from e
    classes = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Migration)
        and obj is not Migration
        and obj.__module__ == module_name
    ]
    if len(classes) != 1:
        found = ", ".join(c.__name__ for c in classes) or "none"
        raise RuntimeError(
            f"cannot load migration {path}: it must define exactly one subclass of "
            f"iceberg_ops.runner.Migration (found {found})"
        )
    cls = classes[0]
    try:
        version = normalize_version(cls.version)
    except (ValueError, TypeError) as e:
        raise RuntimeError(f"cannot load migration {path}: {cls.__name__}.version: {e}") from e
    if version != prefix:
        raise RuntimeError(
            f"cannot load migration {path}: {cls.__name__}.version is {cls.version!r}, but the "
            f"file name says {prefix}; make them equal"
        )
    description = cls.description if cls.description is not None else default_description
    try:
        instance = cls()
    except Exception as e:
        raise RuntimeError(
            f"cannot load migration {path}: {cls.__name__}() raised {type(e).__name__}: {e}"
        ) from e
    hooks = tuple(_overrides(cls, h) for h in ("pre_upgrade", "post_upgrade", "downgrade"))
    return (version, str(description), path, instance, hooks)


def _target(target: str | int | None) -> str | None:
    if target is None:
        return None
    if isinstance(target, bool) or not isinstance(target, (str, int)):
        raise ValueError(f"target must be a version such as '2', '0002' or 2, not {target!r}")
    return normalize_version(target)


class MigrationRunner:
    """Orchestrates discovery, application and rollback of migrations for one namespace.

    Args:
        catalog: A live PyIceberg catalog (from
            :meth:`iceberg_ops.core.catalog.CatalogFactory.build` or your own).
        namespace: The namespace whose tables this runner manages (required).
        meta_namespace: Where the history table lives (default ``"_iceberg_ops"``).
        migrations_dir: The migration files' directory (default ``"./migrations"``).
    """

    def __init__(
        self,
        catalog: Any,
        namespace: str,
        meta_namespace: str = "_iceberg_ops",
        migrations_dir: str | Path = "./migrations",
    ) -> None:
        if not isinstance(namespace, str) or not namespace.strip():
            raise ValueError(f"namespace must be a non-empty string, not {namespace!r}")
        if not isinstance(meta_namespace, str) or not meta_namespace.strip():
            raise ValueError(f"meta_namespace must be a non-empty string, not {meta_namespace!r}")
        self.catalog = catalog
        self.namespace = namespace
        self.meta_namespace = meta_namespace
        self.migrations_dir = Path(migrations_dir)
        self._catalog_spec = json.dumps(_tables.catalog_spec(catalog, "catalog"))

    def _files(self) -> list[tuple[Any, ...]]:
        base = self.migrations_dir
        if not base.is_dir():
            raise FileNotFoundError(
                f"migrations directory {base} does not exist; create it or pass migrations_dir="
            )
        scoped = base / self.namespace
        folder = scoped if scoped.is_dir() else base
        loaded = []
        for path in sorted(folder.iterdir()):
            m = _FILE.fullmatch(path.name)
            if m and path.is_file():
                loaded.append(_load(path, m.group(1), m.group(2).replace("_", " ")))
        return loaded

    def _native(self) -> _native.NativeRunner:
        # Every call discovers the files again (they may have changed) and imports each, which
        # runs its module-level code, before anything is applied.
        return _native.NativeRunner(
            self._catalog_spec,
            self.catalog,
            self.namespace,
            self.meta_namespace,
            self.migrations_dir,
            self._files(),
        )

    def status(self) -> list[dict[str, Any]]:
        """Print every discovered migration's state (``[applied]``, ``[pending]``,
        ``[rolled_back]``, ``[FAILED]``, and history rows whose file is missing); return them.
        Writes nothing."""
        entries = self._native().status()
        for _, line in entries:
            print(line)
        return [json.loads(entry) for entry, _ in entries]

    def plan(self, target: str | int | None = None) -> list[dict[str, Any]]:
        """Print and return the pending migrations up to ``target``; writes nothing."""
        steps: list[dict[str, Any]] = json.loads(self._native().plan(_target(target)))
        for step in steps:
            print(f"{step['version']}  {step['description']}")
            for change in step["changes"]:
                print(f"    {change}")
        return steps

    def migrate(self, target: str | int | None = None) -> list[str]:
        """Apply pending migrations in version order up to ``target``; return the versions.

        Raises:
            ValueError: ``target`` is malformed or names no discovered migration.
            FileNotFoundError: the migrations directory does not exist.
            RuntimeError: a file cannot be loaded, or a migration fails (recorded as failed,
                ``"<ExceptionType>: <message>"``).
            ConcurrentMigrationError: another run wrote this namespace's history meanwhile.
        """
        return self._native().migrate(_target(target))

    def rollback(
        self, steps: int = 1, target: str | int | None = None, *, force: bool = False
    ) -> list[str]:
        """Roll back the last ``steps`` applied migrations, or every one above ``target``
        (``"0000"`` undoes all; ``steps`` is then ignored); highest version first. Return the
        versions.

        A migration file edited since it was applied is refused (the rollback would undo what
        the file says now, not what was applied); ``force=True`` (an iceberg-ops extension)
        runs today's file anyway.

        Raises:
            ValueError: ``steps`` below 1 (without ``target``), or a bad ``target``.
            NotImplementedError: a migration to undo defines no ``downgrade()`` (or its
                ``downgrade()`` raises it).
            RuntimeError: a migration file to undo is missing or changed, or a ``downgrade()``
                fails.
        """
        if target is None:
            if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps < 2**63:
                raise ValueError(f"steps must be at least 1, not {steps!r}")
        else:
            steps = 1
        return self._native().rollback(steps, _target(target), bool(force))

    def repair(self) -> dict[str, Any]:
        """Clear failed attempts from history (so ``migrate`` runs them again) and record the
        checksums of applied migration files as they are now (after an edit that changes no
        meaning); return what was cleared and realigned. An iceberg-ops extension."""
        report: dict[str, Any] = json.loads(self._native().repair())
        return report

    def stamp(self, target: str | int | None = None) -> list[str]:
        """Mark migrations up to ``target`` applied without running them; return the versions."""
        return self._native().stamp(_target(target))

    def validate(self) -> list[dict[str, Any]]:
        """Print and return what differs between history and the migration files: an applied
        file edited since it was applied (its checksum is the file's bytes), an applied
        version whose file is gone. Empty when they agree. Writes nothing."""
        issues = self._native().validate()
        for _, line in issues:
            print(line)
        return [json.loads(issue) for issue, _ in issues]

    def history(self) -> list[dict[str, Any]]:
        """Print each version's latest recorded status; return the rows."""
        rows: list[dict[str, Any]] = json.loads(self._native().history())
        for row in rows:
            error = f"  {row['error']}" if row.get("error") else ""
            print(f"{row['version']}  {row['status']:<12} {row['applied_at']}  "
                  f"{row.get('description') or ''}{error}")
        return rows
