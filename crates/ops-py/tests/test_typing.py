"""The package's type hints and stubs, as mypy --strict sees them from a user's code."""

import subprocess
import sys
import textwrap

USER_CODE = textwrap.dedent(
    """
    from pyiceberg.catalog import load_catalog
    from iceberg_ops.core.catalog import CatalogFactory
    from iceberg_ops.data_migration import (
        CheckpointStore, DataMigrator, MigrationResult, SchemaReconciler, VerificationResult)
    from iceberg_ops.history import MigrationHistory
    from iceberg_ops.runner import MigrationRunner, normalize_version

    cat = load_catalog("lake")
    m = DataMigrator(cat.load_table("a.b"), cat.load_table("a.c"), batch_rows=10,
                     schema_reconciler=SchemaReconciler(column_mapping={"x": "y"}),
                     checkpoint=CheckpointStore("c.json"), progress=lambda d, t: None)
    r: MigrationResult = m.run()
    n: int = r.rows_moved
    v: VerificationResult = m.verify(method="sample", sample_size=3)
    ok: bool = v.matches
    s: str = normalize_version(2)
    applied: list[str] = MigrationRunner(CatalogFactory.build("sqlite"), "sales").migrate(2)
    versions: set[str] = MigrationHistory(cat).get_applied_versions("sales")
    """
)


def test_the_package_and_a_users_code_type_check_strictly(tmp_path):
    user = tmp_path / "user.py"
    user.write_text(USER_CODE)
    # pyarrow ships no type information: its names are Any here, as in any user's project.
    for target in (["-p", "iceberg_ops"], [str(user)]):
        run = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports",
             "--no-incremental", *target],
            capture_output=True, text=True, cwd=tmp_path,
        )
        assert run.returncode == 0, run.stdout + run.stderr
