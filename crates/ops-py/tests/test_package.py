"""The package is the installed wheel, with the seed's module paths and names."""

import importlib
from pathlib import Path

import iceberg_ops


def test_the_package_is_imported_from_the_installed_wheel_not_the_source_tree():
    source = Path(__file__).resolve().parents[1] / "python"
    assert source not in Path(iceberg_ops.__file__).resolve().parents
    assert (Path(iceberg_ops.__file__).parent / "py.typed").is_file()
    assert (Path(iceberg_ops.__file__).parent / "_native.pyi").is_file()


def test_names_import_from_the_package_and_from_their_submodules_as_the_same_objects():
    package = importlib.import_module("iceberg_ops.data_migration")
    where = {
        "migrator": ["DataMigrator", "MigrationResult", "PartitionStrategy", "VerificationResult"],
        "reconciler": ["SchemaReconciler", "ReconciliationPlan", "ColumnProjection"],
        "checkpoint": ["CheckpointStore", "CheckpointError"],
    }
    for module, names in where.items():
        sub = importlib.import_module(f"iceberg_ops.data_migration.{module}")
        for name in names:
            assert getattr(package, name) is getattr(sub, name), name


def test_checkpoint_error_is_a_runtime_error():
    from iceberg_ops.data_migration import CheckpointError

    assert issubclass(CheckpointError, RuntimeError)


def test_every_public_name_has_a_docstring():
    package = importlib.import_module("iceberg_ops.data_migration")
    for name in package.__all__:
        obj = getattr(package, name)
        assert (obj.__doc__ or "").strip(), name


def test_the_runner_history_and_catalog_modules_have_the_seed_names_documented():
    from iceberg_ops.core.catalog import CatalogFactory
    from iceberg_ops.history import ConcurrentMigrationError, MigrationHistory
    from iceberg_ops.runner import Migration, MigrationRunner, normalize_version

    for obj in (CatalogFactory, ConcurrentMigrationError, MigrationHistory, Migration,
                MigrationRunner, normalize_version, CatalogFactory.build,
                MigrationRunner.migrate, MigrationRunner.rollback, MigrationRunner.stamp,
                MigrationRunner.status, MigrationRunner.plan, MigrationRunner.history):
        assert (obj.__doc__ or "").strip(), obj
    assert issubclass(ConcurrentMigrationError, RuntimeError)


def test_the_extension_runs_on_the_sqlite_library_python_loads():
    # Two SQLite libraries in one process release each other's POSIX locks: a PyIceberg commit
    # beside an interrupted migration then failed with "disk I/O error", once after landing.
    import sqlite3

    from iceberg_ops import _native

    assert _native.sqlite_library_version() == sqlite3.sqlite_version


def test_importing_the_package_does_not_import_pyarrow():
    # pyarrow (tens of MiB) is imported when Arrow data or types are first used, not before: a
    # migration whose plan nobody reads runs without it.
    import subprocess
    import sys

    code = (
        "import sys, iceberg_ops.data_migration, iceberg_ops.runner, iceberg_ops.history, "
        "iceberg_ops.core.catalog; print('pyarrow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
