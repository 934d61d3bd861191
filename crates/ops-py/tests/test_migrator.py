"""DataMigrator from Python, written from the seed's text: the user's PyIceberg tables in,
PyIceberg reading the destination back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pyarrow as pa
import pytest
from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, In, Not, IsNull
from pyiceberg.schema import Schema
from pyiceberg.table import StaticTable
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from iceberg_ops.data_migration import (
    CheckpointError,
    CheckpointStore,
    DataMigrator,
    MigrationResult,
    PartitionStrategy,
    SchemaReconciler,
)

SRC = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "order_total", IntegerType(), required=False),
    NestedField(3, "region", StringType(), required=False),
)
DST = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "total_amount", LongType(), required=False),
    NestedField(3, "region", StringType(), required=False),
    NestedField(4, "note", StringType(), required=False),
)
RENAME = dict(
    column_mapping={"order_total": "total_amount"},
    type_coercions={"total_amount": LongType()},
    on_missing_in_source="null",
)


def source(catalog, name="s.src", rows=1000, files=4):
    table = catalog.create_table(name, SRC)
    per = rows // files
    for f in range(files):
        ids = range(f * per, (f + 1) * per)
        table.append(
            pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "order_total": pa.array([i * 3 if i % 7 else None for i in ids], pa.int32()),
                    "region": pa.array(["eu" if i % 2 else "us" for i in ids]),
                }
            )
        )
    return table


def rows(table):
    table.refresh()
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def expected(src_table, row_filter=None):
    src = src_table.scan(row_filter=row_filter).to_arrow().to_pylist() if row_filter else \
        src_table.scan().to_arrow().to_pylist()
    return sorted(
        ({"id": r["id"], "total_amount": r["order_total"], "region": r["region"], "note": None}
         for r in src),
        key=lambda r: r["id"],
    )


def test_rename_coerce_and_null_fill_with_a_checkpoint(catalog, tmp_path):
    src = source(catalog)
    dst = catalog.create_table("s.dst", DST)
    seen = []
    store = CheckpointStore(tmp_path / "ck.json")
    m = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME), batch_rows=300,
                     checkpoint=store, progress=lambda done, total: seen.append((done, total)))
    result = m.run()
    assert isinstance(result, MigrationResult)
    assert rows(dst) == expected(src)
    assert result.rows_moved == 1000 and result.bytes_moved > 0
    assert result.checkpoint_path == tmp_path / "ck.json"
    assert result.dest_snapshot_before is None and not result.dry_run
    assert result.new_snapshots == [s.snapshot_id for s in dst.snapshots()]
    assert result.plan is not None and [p.dest_name for p in result.plan.projections] == [
        "id", "total_amount", "region", "note"]
    assert store.completed and store.dest_snapshot_ids == result.new_snapshots
    # progress after each catalog commit (batches waiting together commit as one, each its
    # own snapshot), rows_done growing to the total.
    assert 1 <= len(seen) <= len(result.new_snapshots) and len(result.new_snapshots) >= 4
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1][0] == 1000
    for method in ("row_count", "partition_hash", "sample"):
        v = m.verify(method=method)
        assert v.matches, (method, v)
        assert v.method == method and v.source_count == 1000 and v.dest_count == 1000
    # The same run again: the checkpoint is complete, refused before any write.
    with pytest.raises(CheckpointError, match="completed"):
        m.run()
    assert len(dst.refresh().snapshots()) == len(result.new_snapshots)


def test_a_dry_run_estimates_and_writes_nothing(catalog):
    src = source(catalog)
    dst = catalog.create_table("s.dst", DST)
    seen = []
    r = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME), dry_run=True,
                     progress=lambda d, t: seen.append((d, t))).run()
    assert r.dry_run and r.rows_moved == 0 and r.new_snapshots == []
    assert r.estimated_rows == 1000 and r.estimated_bytes > 0
    assert dst.refresh().current_snapshot() is None


def test_verify_reports_a_mismatch_it_sees(catalog):
    src = source(catalog)
    dst = catalog.create_table("s.dst", DST)
    m = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME))
    m.run()
    dst.refresh().append(pa.Table.from_pylist(
        [{"id": 5000, "total_amount": 1, "region": "eu", "note": "extra"}],
        schema=dst.schema().as_arrow()))
    v = m.verify()
    assert not v.matches and (v.source_count, v.dest_count) == (1000, 1001)
    with pytest.raises(ValueError, match="method"):
        m.verify(method="checksum")
    with pytest.raises(ValueError, match="sample_size"):
        m.verify(method="sample", sample_size=0)


def test_a_filter_as_a_pyiceberg_expression_moves_what_the_string_moves(catalog):
    src = source(catalog)
    text = "region = 'eu' AND id >= 500 AND NOT (order_total IS NULL) AND id IN (501, 503, 600, 777)"
    expression = And(
        And(EqualTo("region", "eu"), GreaterThanOrEqual("id", 500)),
        And(Not(IsNull("order_total")), In("id", {501, 503, 600, 777})),
    )
    for name, row_filter in (("s.by_text", text), ("s.by_expr", expression)):
        dst = catalog.create_table(name, DST)
        DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME),
                     row_filter=row_filter).run()
        assert rows(dst) == expected(src, text), name
    # 777 is a multiple of 7: its order_total is NULL.
    assert [r["id"] for r in rows(catalog.load_table("s.by_expr"))] == [501, 503]


def test_upsert_inserts_and_updates_by_key(catalog):
    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "v", StringType(), required=False), identifier_field_ids=[1])
    dst = catalog.create_table("s.dst", schema)
    dst.append(pa.Table.from_pylist([{"id": i, "v": "old"} for i in range(10)],
                                    schema=schema.as_arrow()))
    src = catalog.create_table("s.src", schema)
    src.append(pa.Table.from_pylist(
        [{"id": i, "v": "old" if i == 5 else "new"} for i in range(5, 15)], schema=schema.as_arrow()))
    r = DataMigrator(src, dst, write_mode="upsert", upsert_keys=["id"], batch_rows=4).run()
    assert (r.rows_inserted, r.rows_updated) == (5, 4)
    got = {x["id"]: x["v"] for x in rows(dst)}
    assert got == {**{i: "old" for i in range(6)}, **{i: "new" for i in range(6, 15)}}


def test_bad_arguments_raise_before_anything_is_written(catalog, tmp_path):
    src = source(catalog)
    dst = catalog.create_table("s.dst", DST)
    cases = [
        (dict(write_mode="upsert"), ValueError, "upsert_keys"),
        (dict(upsert_keys=["id"]), ValueError, "upsert_keys"),
        (dict(write_mode="upsert", upsert_keys=["id", "id"]), ValueError, "repeats"),
        (dict(write_mode="upsert", upsert_keys=[" "]), ValueError, "blank"),
        (dict(batch_rows=0), ValueError, "batch_rows"),
        (dict(write_mode="merge"), ValueError, "write_mode"),
        (dict(partition_strategy="flatten"), ValueError, "flatten|PRESERVE|partition_strategy"),
        (dict(checkpoint=str(tmp_path / "c.json")), TypeError, "CheckpointStore"),
    ]
    for kwargs, error, text in cases:
        with pytest.raises(error, match=text):
            DataMigrator(src, dst, **kwargs)
    with pytest.raises(ValueError, match="same table"):
        DataMigrator(src, catalog.load_table("s.src"))
    static = StaticTable.from_metadata(src.metadata_location)
    with pytest.raises(TypeError, match="StaticTable"):
        DataMigrator(static, dst)
    from pyiceberg.catalog.memory import InMemoryCatalog

    memory = InMemoryCatalog("mem")
    memory.create_namespace("m")
    with pytest.raises(TypeError, match="in-memory"):
        DataMigrator(memory.create_table("m.t", SRC), dst)
    # The strict default reconciler: the schemas differ, a ValueError naming the columns.
    with pytest.raises(ValueError, match="order_total"):
        DataMigrator(src, dst).run()
    assert dst.refresh().current_snapshot() is None
    assert PartitionStrategy.PRESERVE == "preserve"


def test_create_dest_makes_a_destination_that_does_not_exist(catalog):
    # The refusal names the argument that lifts it, and the argument exists in Python too.
    src = source(catalog)
    with pytest.raises(ValueError, match="create_dest"):
        DataMigrator(src, (catalog, "s.made")).run()
    with pytest.raises(TypeError, match="create_dest must be True or False"):
        DataMigrator(src, (catalog, "s.made"), create_dest="yes")
    assert not catalog.table_exists("s.made")
    r = DataMigrator(src, (catalog, "s.made"), create_dest=True).run()
    made = catalog.load_table("s.made")
    assert r.rows_moved == 1000
    assert [f.name for f in made.schema().fields] == ["id", "order_total", "region"]
    assert sorted(made.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == sorted(
        src.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def test_an_append_run_again_warns_that_it_adds_the_rows_again(catalog):
    # The seed's run() without a checkpoint appends every row again; the Python user is told,
    # as a UserWarning and in the result, naming the completed job that wrote them.
    src = source(catalog)
    first = DataMigrator(src, (catalog, "s.twice"), create_dest=True).run()
    assert first.warnings == []
    with pytest.warns(UserWarning, match="may already hold rows this append adds: job " + first.job_id):
        second = DataMigrator(src, (catalog, "s.twice")).run()
    assert len(second.warnings) == 1 and first.job_id in second.warnings[0]
    assert second.rows_moved == 1000
    assert len(rows(catalog.load_table("s.twice"))) == 2000


def test_tables_named_by_catalog_and_identifier(catalog):
    source(catalog)
    catalog.create_table("s.dst", DST)
    DataMigrator((catalog, "s.src"), (catalog, "s.dst"),
                 schema_reconciler=SchemaReconciler(**RENAME)).run()
    assert len(rows(catalog.load_table("s.dst"))) == 1000


CHILD = textwrap.dedent(
    """
    import sys, time
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.types import LongType
    from iceberg_ops.data_migration import CheckpointStore, DataMigrator, SchemaReconciler
    root, checkpoint = sys.argv[1], sys.argv[2]
    cat = SqlCatalog("lake", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    def progress(done, total):
        print("progress", done, flush=True)
        time.sleep(0.3)
    m = DataMigrator(cat.load_table("s.src"), cat.load_table("s.dst"),
                     schema_reconciler=SchemaReconciler(column_mapping={"order_total": "total_amount"},
                         type_coercions={"total_amount": LongType()}, on_missing_in_source="null"),
                     batch_rows=100, checkpoint=CheckpointStore(checkpoint), progress=progress)
    try:
        m.run()
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("interrupted", CheckpointStore(checkpoint).last_committed(), flush=True)
    """
)


def _child(tmp_path, checkpoint):
    return subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path / "lake"), str(checkpoint)],
                            stdout=subprocess.PIPE, text=True)


def _wait_for_progress(child, n):
    for _ in range(n):
        line = child.stdout.readline()
        assert line.startswith("progress"), line


@pytest.mark.parametrize("how", ["kill -9", "ctrl-c"])
def test_a_stopped_python_run_resumes_from_its_checkpoint(catalog, tmp_path, how):
    src = source(catalog, rows=5000, files=1)
    dst = catalog.create_table("s.dst", DST)
    checkpoint = tmp_path / "ck.json"
    child = _child(tmp_path, checkpoint)
    # The first commit is reported; the child sleeps in its progress callback, holding up the
    # next commit, and is stopped there.
    _wait_for_progress(child, 1)
    if how == "kill -9":
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    else:
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=60)
        assert "interrupted" in out and child.returncode == 0, out
    done_before = CheckpointStore(checkpoint).last_committed()
    assert done_before is not None and done_before < 49  # 50 batches of 100 rows
    assert not CheckpointStore(checkpoint).completed
    m = DataMigrator(src, catalog.load_table("s.dst"), schema_reconciler=SchemaReconciler(**RENAME),
                     batch_rows=100, checkpoint=CheckpointStore(checkpoint))
    result = m.run()
    assert result.batches_skipped >= 1
    assert rows(dst) == expected(src)  # every row once: none lost, none twice
    assert m.verify(method="partition_hash").matches


class Boom(Exception):
    pass


@pytest.mark.parametrize("at", ["first", "last"])
def test_an_exception_in_progress_stops_the_run_before_its_next_commit(catalog, tmp_path, at):
    src = source(catalog, rows=1000, files=1)
    dst = catalog.create_table("s.dst", DST)
    checkpoint = tmp_path / "ck.json"
    calls = []

    def progress(done, total):
        calls.append(done)
        if at == "first" or done == 1000:
            raise Boom(f"stop at {done}")

    m = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME), batch_rows=100,
                     checkpoint=CheckpointStore(checkpoint), progress=progress)
    with pytest.raises(Boom):
        m.run()
    store = CheckpointStore(checkpoint)
    assert len(calls) == (1 if at == "first" else len(calls))
    # Nothing was committed after the commit whose progress raised.
    committed = sum(1 for _ in dst.refresh().snapshots())
    assert store.last_committed() + 1 == committed
    assert not store.completed  # a re-run resumes instead of refusing a completed job
    result = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME), batch_rows=100,
                          checkpoint=CheckpointStore(checkpoint)).run()
    assert rows(dst) == expected(src)
    assert result.batches_skipped == committed and CheckpointStore(checkpoint).completed


def test_progress_may_read_the_checkpoint_and_call_iceberg_ops(catalog, tmp_path):
    src = source(catalog, rows=1000, files=1)
    dst = catalog.create_table("s.dst", DST)
    store = CheckpointStore(tmp_path / "ck.json")
    seen = []

    def progress(done, total):
        # The running migration holds the checkpoint's lock; reading takes none.
        seen.append((done, store.last_committed()))
        # A nested call starts its own runtime outside the running one.
        other = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME))
        assert other.verify().source_count == 1000

    DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME), batch_rows=250,
                 checkpoint=store, progress=progress).run()
    assert seen and seen[-1][0] == 1000 and seen[-1][1] is not None


def test_ctrl_c_while_rust_works_stops_it_and_a_rerun_resumes(catalog, tmp_path):
    # No progress callback: SIGINT arrives while the GIL is released, and is seen by the
    # runtime's signal check.
    src = source(catalog, rows=20_000, files=1)
    dst = catalog.create_table("s.dst", DST)
    checkpoint = tmp_path / "ck.json"
    script = CHILD.replace("progress=progress", "progress=None").replace(
        "batch_rows=100", "batch_rows=50")
    child = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / "lake"),
                              str(checkpoint)], stdout=subprocess.PIPE, text=True)
    store = CheckpointStore(checkpoint)
    deadline = time.time() + 60
    while (not checkpoint.exists() or store.last_committed() is None) and time.time() < deadline:
        time.sleep(0.01)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert out.startswith("interrupted"), out
    assert not store.completed and store.last_committed() < 399
    DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME), batch_rows=50,
                 checkpoint=CheckpointStore(checkpoint)).run()
    assert rows(dst) == expected(src)


def test_results_copy_pickle_and_convert(catalog):
    import copy
    import dataclasses
    import pickle

    src = source(catalog)
    dst = catalog.create_table("s.dst", DST)
    result = DataMigrator(src, dst, schema_reconciler=SchemaReconciler(**RENAME)).run()
    assert dataclasses.asdict(result)["rows_moved"] == 1000
    again = pickle.loads(pickle.dumps(result))
    assert again.rows_moved == 1000 and again.plan.projections == result.plan.projections
    assert copy.deepcopy(result).plan.warnings == result.plan.warnings
    assert "_native" not in {f.name for f in dataclasses.fields(result.plan)}
    # The plan still projects (it is the one computed), a copy says why it cannot.
    with pytest.raises(TypeError, match="compute it again"):
        SchemaReconciler(**RENAME).project_batch(pa.record_batch({"id": [1]}), again.plan)


def test_upsert_of_a_repeated_key_is_refused_or_takes_the_last_row(catalog):
    schema = Schema(NestedField(1, "id", LongType(), required=True),
                    NestedField(2, "v", StringType(), required=False), identifier_field_ids=[1])
    src = catalog.create_table("s.src", schema)
    src.append(pa.Table.from_pylist([{"id": 1, "v": "first"}, {"id": 2, "v": "x"}],
                                    schema=schema.as_arrow()))
    src.append(pa.Table.from_pylist([{"id": 1, "v": "later"}], schema=schema.as_arrow()))
    dst = catalog.create_table("s.dst", schema)
    with pytest.raises(ValueError) as e:
        DataMigrator(src, dst, write_mode="upsert", upsert_keys=["id"], batch_rows=2).run()
    assert 'on_duplicate_keys="last"' in str(e.value) and "--" not in str(e.value)
    assert dst.refresh().current_snapshot() is None
    DataMigrator(src, dst, write_mode="upsert", upsert_keys=["id"], batch_rows=2,
                 on_duplicate_keys="last").run()
    assert {r["id"]: r["v"] for r in rows(dst)} == {1: "later", 2: "x"}
    with pytest.raises(TypeError, match=r"\['id'\]"):
        DataMigrator(src, dst, write_mode="upsert", upsert_keys="id")
    with pytest.raises(TypeError, match="dry_run"):
        DataMigrator(src, dst, dry_run="yes")
    with pytest.raises(ValueError, match="batch_rows"):
        DataMigrator(src, dst, batch_rows=2**70)


def test_a_checkpoint_of_another_destination_names_that_one_in_its_advice(catalog, tmp_path):
    src = source(catalog)
    first = catalog.create_table("s.first", DST)
    other = catalog.create_table("s.other", DST)
    other.append(pa.Table.from_pylist(
        [{"id": 9, "total_amount": 1, "region": "eu", "note": "mine"}],
        schema=other.schema().as_arrow()))
    checkpoint = tmp_path / "ck.json"

    def stop(done, total):
        raise Boom("stop after the first commit")

    with pytest.raises(Boom):
        DataMigrator(src, first, schema_reconciler=SchemaReconciler(**RENAME), batch_rows=100,
                     checkpoint=CheckpointStore(checkpoint), progress=stop).run()
    with pytest.raises(CheckpointError) as e:
        DataMigrator(src, catalog.load_table("s.other"), schema_reconciler=SchemaReconciler(**RENAME),
                     batch_rows=100, checkpoint=CheckpointStore(checkpoint)).run()
    text = str(e.value)
    # The batches are in s.first, which had no snapshot before the job: that is the table to
    # empty, not s.other, which holds rows of its own.
    assert "s.first" in text and "delete s.other" not in text, text
    assert len(rows(catalog.load_table("s.other"))) == 1
