"""MigrationRunner, MigrationHistory and CatalogFactory, written from the seed's text: Python
migration files run by the Rust runner, history in an Iceberg table."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from iceberg_ops.core.catalog import CatalogFactory
from iceberg_ops.history import ConcurrentMigrationError, MigrationHistory
from iceberg_ops.runner import Migration, MigrationRunner, normalize_version

CREATE_ORDERS = '''
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from iceberg_ops.runner import Migration

class CreateOrders(Migration):
    version = "0001"
    def upgrade(self, catalog):
        catalog.create_namespace_if_not_exists("sales")
        catalog.create_table("sales.orders", Schema(NestedField(1, "id", LongType())))
    def downgrade(self, catalog):
        catalog.drop_table("sales.orders")
'''

ADD_SKU = '''
from pyiceberg.types import StringType
from iceberg_ops.runner import Migration

class AddSku(Migration):
    version = "0002"
    description = "add sku"
    def upgrade(self, catalog):
        with catalog.load_table("sales.orders").update_schema() as u:
            u.add_column("sku", StringType())
    def downgrade(self, catalog):
        with catalog.load_table("sales.orders").update_schema() as u:
            u.delete_column("sku")
'''

NO_DOWNGRADE = '''
from iceberg_ops.runner import Migration

class Tag(Migration):
    version = "0003"
    def upgrade(self, catalog):
        t = catalog.load_table("sales.orders")
        with t.transaction() as tx:
            tx.set_properties({"owner": "sales"})
'''


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def columns(catalog, name="sales.orders"):
    return [f.name for f in catalog.load_table(name).schema().fields]


def test_the_seed_usage_block_on_the_embedded_default(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYICEBERG_HOME", raising=False)
    catalog = CatalogFactory.build("sqlite")
    assert (tmp_path / ".iceberg-ops").is_dir()
    migrations = tmp_path / "migrations"
    write(migrations, "0001_create_orders.py", CREATE_ORDERS)
    write(migrations, "0002_add_sku.py", ADD_SKU)
    runner = MigrationRunner(catalog, namespace="sales", meta_namespace="_iceberg_ops",
                             migrations_dir="./migrations")
    status = runner.status()
    assert [(s["version"], s["state"]) for s in status] == [("0001", "pending"), ("0002", "pending")]
    assert "[pending]" in capsys.readouterr().out
    assert not catalog.namespace_exists("_iceberg_ops")  # status writes nothing
    assert runner.migrate(target="0001") == ["0001"]
    assert columns(catalog) == ["id"]
    assert runner.migrate(target=2) == ["0002"]
    assert columns(catalog) == ["id", "sku"]
    assert runner.migrate() == []
    assert runner.rollback(steps=1) == ["0002"]
    assert columns(catalog) == ["id"]
    assert runner.migrate() == ["0002"]
    assert runner.rollback(target="0000") == ["0002", "0001"]
    assert not catalog.table_exists("sales.orders")
    rows = runner.history()
    assert {(r["version"], r["status"]) for r in rows} == {("0001", "rolled_back"), ("0002", "rolled_back")}
    assert next(r for r in rows if r["version"] == "0002")["description"] == "add sku"
    assert next(r for r in rows if r["version"] == "0001")["description"] == "create orders"
    # stamp: adopt without running upgrade()
    assert runner.stamp() == ["0001", "0002"]
    assert not catalog.table_exists("sales.orders")
    assert MigrationHistory(catalog).get_applied_versions("sales") == {"0001", "0002"}


def test_namespace_scoped_layout_and_toml_migrations_beside_python_ones(tmp_path, catalog):
    migrations = tmp_path / "migrations"
    write(migrations / "sales", "0001_create_orders.py", CREATE_ORDERS)
    write(migrations / "sales", "0002_tag.toml", '''
        version = "0002"
        description = "tag orders"

        [[upgrade]]
        op = "set_properties"
        table = "orders"
        properties = { team = "sales" }
    ''')
    write(migrations, "0001_flat_ignored.py", "raise SystemExit('the flat file must not load')")
    runner = MigrationRunner(catalog, "sales", migrations_dir=migrations)
    assert runner.migrate() == ["0001", "0002"]
    assert catalog.load_table("sales.orders").properties["team"] == "sales"


def test_a_bad_file_is_a_runtime_error_naming_it_before_anything_runs(tmp_path, catalog):
    cases = {
        "0002_broken.py": ("import no_such_module_here\n", "No module named"),
        "0002_none.py": ("x = 1\n", "found none"),
        "0002_two.py": (
            "from iceberg_ops.runner import Migration\n"
            "class A(Migration):\n    version = '0002'\n    def upgrade(self, c): pass\n"
            "class B(Migration):\n    version = '0002'\n    def upgrade(self, c): pass\n",
            "found A, B",
        ),
        "0002_mismatch.py": (
            "from iceberg_ops.runner import Migration\n"
            "class A(Migration):\n    version = '0003'\n    def upgrade(self, c): pass\n",
            "file name says 0002",
        ),
    }
    for name, (text, why) in cases.items():
        folder = tmp_path / name
        write(folder, "0001_create_orders.py", CREATE_ORDERS)
        bad = write(folder, name, text)
        runner = MigrationRunner(catalog, "sales", migrations_dir=folder)
        with pytest.raises(RuntimeError) as e:
            runner.migrate()
        assert str(bad) in str(e.value) and why in str(e.value), str(e.value)
        assert not catalog.table_exists("sales.orders"), name  # 0001 did not run either
    with pytest.raises(FileNotFoundError, match="migrations_dir"):
        MigrationRunner(catalog, "sales", migrations_dir=tmp_path / "absent").status()


def test_a_failing_upgrade_is_recorded_with_its_exception_type(tmp_path, catalog):
    folder = tmp_path / "m"
    write(folder, "0001_boom.py", '''
        from iceberg_ops.runner import Migration
        class Boom(Migration):
            version = "1"
            def upgrade(self, catalog):
                raise ValueError("the data is not ready")
    ''')
    runner = MigrationRunner(catalog, "sales", migrations_dir=folder)
    with pytest.raises(RuntimeError, match="ValueError: the data is not ready"):
        runner.migrate()
    row = MigrationHistory(catalog).get_all("sales")[0]
    assert (row["version"], row["status"]) == ("0001", "failed")
    assert row["error"] == "ValueError: the data is not ready"
    assert set(row) == {"version", "namespace", "description", "applied_at", "status", "error"}


def test_rollback_without_downgrade_refuses_and_edited_files_are_reported(tmp_path, catalog):
    folder = tmp_path / "m"
    write(folder, "0001_create_orders.py", CREATE_ORDERS)
    tag = write(folder, "0003_tag.py", NO_DOWNGRADE)
    runner = MigrationRunner(catalog, "sales", migrations_dir=folder)
    assert runner.migrate() == ["0001", "0003"]
    with pytest.raises(NotImplementedError, match="downgrade"):
        runner.rollback()
    assert runner.validate() == []
    tag.write_text(tag.read_text() + "\n# edited after it was applied\n")
    issues = runner.validate()
    assert [(i["problem"], i["version"]) for i in issues] == [("changed", "0003")]
    with pytest.raises(ValueError, match="steps"):
        runner.rollback(steps=0)
    with pytest.raises(ValueError, match="0009"):
        runner.migrate(target="9")


def test_normalize_version_as_the_seed():
    assert normalize_version("2") == "0002"
    assert normalize_version(10) == "0010"
    assert normalize_version(" 0002 ") == "0002"
    for bad in ("12345", "x", "", True):
        with pytest.raises(ValueError):
            normalize_version(bad)


def test_history_detects_a_concurrent_writer_of_the_same_key(catalog):
    first = MigrationHistory(catalog)
    second = MigrationHistory(catalog)
    assert first.get_all("sales") == []
    assert not catalog.namespace_exists("_iceberg_ops")  # reads create nothing
    first.record_applied("0001", "sales", "one")
    assert second.get_applied_versions("sales") == {"0001"}
    first.record_rolled_back("0001", "sales", "one")
    with pytest.raises(ConcurrentMigrationError):
        second.record_applied("0001", "sales", "one")  # its read predates first's write
    assert issubclass(ConcurrentMigrationError, RuntimeError)
    assert [r["status"] for r in first.get_all("sales")] == ["rolled_back"]


RACER = textwrap.dedent(
    """
    import sys
    from pyiceberg.catalog.sql import SqlCatalog
    from iceberg_ops.history import ConcurrentMigrationError
    from iceberg_ops.runner import MigrationRunner
    root, folder = sys.argv[1], sys.argv[2]
    cat = SqlCatalog("lake", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    try:
        print("applied", MigrationRunner(cat, "sales", migrations_dir=folder).migrate(), flush=True)
    except ConcurrentMigrationError as e:
        print("concurrent", e, flush=True)
    """
)


def test_two_python_runners_racing_on_one_history(tmp_path, catalog):
    folder = tmp_path / "m"
    marker = tmp_path / "upgrades"
    write(folder, "0001_slow.py", f'''
        import time
        from iceberg_ops.runner import Migration
        class Slow(Migration):
            version = "0001"
            def upgrade(self, catalog):
                with open({str(marker)!r}, "a") as f:
                    f.write("upgrade\\n")
                # Both runs are inside upgrade() at once, after both read history, however
                # slowly each started: wait for the other's mark (at most a minute).
                deadline = time.time() + 60
                while open({str(marker)!r}).read().count("upgrade") < 2 and time.time() < deadline:
                    time.sleep(0.05)
    ''')
    runs = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path / "lake"), str(folder)],
                             stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = sorted(r.communicate(timeout=120)[0].strip() for r in runs)
    assert outs[0].startswith("applied ['0001']") and outs[1].startswith("concurrent"), outs
    assert marker.read_text().count("upgrade") == 2  # the seed: both upgrades may run
    rows = MigrationHistory(catalog).get_all("sales")
    assert [(r["version"], r["status"]) for r in rows] == [("0001", "applied")]


def test_catalog_factory_reads_pyiceberg_configuration(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__URI", f"sqlite:///{tmp_path}/lake.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKE__WAREHOUSE", f"file://{tmp_path}/wh")
    catalog = CatalogFactory.build("lake")
    catalog.create_namespace("n")
    assert catalog.list_namespaces() == [("n",)]
    with pytest.raises(ValueError, match="nope"):
        CatalogFactory.build("nope")


def test_migration_base_class_is_the_seed_shape():
    assert Migration().pre_upgrade(None) is None
    with pytest.raises(NotImplementedError):
        Migration().upgrade(None)


def test_a_migration_file_may_move_data_with_data_migrator(tmp_path, catalog):
    # The data migration runs inside the runner's hook: its own runtime on the hook's thread.
    import pyarrow as pa
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField

    schema = Schema(NestedField(1, "id", LongType()))
    catalog.create_table("s.old", schema).append(pa.table({"id": pa.array(range(50), pa.int64())}))
    folder = tmp_path / "m"
    write(folder, "0001_copy.py", '''
        from iceberg_ops.data_migration import DataMigrator
        from iceberg_ops.runner import Migration
        class Copy(Migration):
            version = "0001"
            def upgrade(self, catalog):
                new = catalog.create_table("s.new", catalog.load_table("s.old").schema())
                DataMigrator(catalog.load_table("s.old"), new, batch_rows=20).run()
    ''')
    assert MigrationRunner(catalog, "s", migrations_dir=folder).migrate() == ["0001"]
    assert catalog.load_table("s.new").scan().to_arrow().num_rows == 50


HOOKS = '''
from iceberg_ops.runner import Migration
LOG = {log!r}
with open(LOG, "a") as f:
    f.write("import\\n")

class Hooks(Migration):
    version = "0001"
    def pre_upgrade(self, catalog):
        open(LOG, "a").write("pre\\n")
    def upgrade(self, catalog):
        open(LOG, "a").write("upgrade\\n")
    def post_upgrade(self, catalog):
        open(LOG, "a").write("post\\n")
    def downgrade(self, catalog):
        raise NotImplementedError("irreversible")
'''

FAILS = '''
from iceberg_ops.runner import Migration
class Fails(Migration):
    version = "0002"
    def upgrade(self, catalog):
        raise KeyError("missing thing")
'''

NEVER = '''
from iceberg_ops.runner import Migration
class Never(Migration):
    version = "0003"
    def upgrade(self, catalog):
        catalog.create_namespace("never")
'''


def test_hooks_run_in_order_files_import_once_and_a_failure_stops_the_run(tmp_path, catalog):
    log = tmp_path / "log"
    folder = tmp_path / "m"
    write(folder, "0001_hooks.py", HOOKS.format(log=str(log)))
    write(folder, "0002_fails.py", FAILS)
    write(folder, "0003_never.py", NEVER)
    runner = MigrationRunner(catalog, "sales", migrations_dir=folder)
    runner.status()
    runner.plan()
    with pytest.raises(RuntimeError) as e:
        runner.migrate()
    assert isinstance(e.value.__cause__, KeyError)  # the hook's own exception, kept
    assert log.read_text().split() == ["import", "pre", "upgrade", "post"]
    assert not catalog.namespace_exists("never")  # the run stopped at 0002
    rows = {r["version"]: r for r in MigrationHistory(catalog).get_all("sales")}
    assert rows["0001"]["status"] == "applied" and rows["0002"]["status"] == "failed"
    assert rows["0002"]["error"] == "KeyError: 'missing thing'" and "0003" not in rows
    # downgrade() raising NotImplementedError is the seed's "not implemented"; target with
    # any steps ignores them.
    with pytest.raises(NotImplementedError, match="irreversible"):
        runner.rollback(steps=-1, target="0000")


def test_an_edited_file_rolls_back_only_when_forced(tmp_path, catalog):
    folder = tmp_path / "m"
    orders = write(folder, "0001_create_orders.py", CREATE_ORDERS)
    runner = MigrationRunner(catalog, "sales", migrations_dir=folder)
    runner.migrate()
    orders.write_text(orders.read_text() + "\n# a comment added after it was applied\n")
    with pytest.raises(RuntimeError) as e:
        runner.rollback()
    assert "force=True" in str(e.value) and "--" not in str(e.value)
    assert runner.rollback(force=True) == ["0001"]
    assert not catalog.table_exists("sales.orders")


CTRL_C = textwrap.dedent(
    """
    import sys
    from pyiceberg.catalog.sql import SqlCatalog
    from iceberg_ops.history import MigrationHistory
    from iceberg_ops.runner import MigrationRunner
    root, folder = sys.argv[1], sys.argv[2]
    cat = SqlCatalog("lake", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    try:
        MigrationRunner(cat, "sales", migrations_dir=folder).migrate()
        print("finished", flush=True)
    except KeyboardInterrupt:
        rows = MigrationHistory(cat).get_all("sales")
        print("interrupted", [(r["version"], r["status"]) for r in rows], flush=True)
    """
)


def test_ctrl_c_inside_a_hook_raises_keyboard_interrupt_there(tmp_path, catalog):
    import signal

    folder = tmp_path / "m"
    started = tmp_path / "started"
    write(folder, "0001_slow.py", f'''
        import time
        from iceberg_ops.runner import Migration
        class Slow(Migration):
            version = "0001"
            def upgrade(self, catalog):
                open({str(started)!r}, "w").close()
                time.sleep(60)
    ''')
    child = subprocess.Popen([sys.executable, "-c", CTRL_C, str(tmp_path / "lake"), str(folder)],
                             stdout=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not started.exists() and time.time() < deadline:
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=30)  # no hang
    # Stopped half-way: recorded as failed, so the next migrate runs it again.
    assert out.strip() == "interrupted [('0001', 'failed')]", out


def test_a_commit_conflict_in_a_hook_is_a_concurrent_migration_error_recording_nothing(
    tmp_path, catalog
):
    folder = tmp_path / "m"
    write(folder, "0001_conflict.py", '''
        from pyiceberg.exceptions import CommitFailedException
        from iceberg_ops.runner import Migration
        class Conflict(Migration):
            version = "0001"
            def upgrade(self, catalog):
                raise CommitFailedException("requirement failed: branch main has changed")
    ''')
    with pytest.raises(ConcurrentMigrationError, match="nothing was recorded") as e:
        MigrationRunner(catalog, "sales", migrations_dir=folder).migrate()
    assert type(e.value.__cause__).__name__ == "CommitFailedException"
    assert MigrationHistory(catalog).get_all("sales") == []
