"""SchemaReconciler, written from the seed's text: plans from Iceberg or Arrow schemas, and
batches projected through the Arrow PyCapsule interface."""

import pyarrow as pa
import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import IntegerType, LongType, NestedField, StringType

from iceberg_ops.data_migration import ColumnProjection, ReconciliationPlan, SchemaReconciler

SRC = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "order_total", IntegerType(), required=False),
    NestedField(3, "qty", IntegerType(), required=False),
)
DST = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "total_amount", IntegerType(), required=False),
    NestedField(3, "qty", LongType(), required=False),
    NestedField(4, "note", StringType(), required=False),
)


def batch():
    return pa.RecordBatch.from_pydict(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "order_total": pa.array([10, 20, None], pa.int32()),
            "qty": pa.array([1, 2, 3], pa.int32()),
        }
    )


def test_same_schema_plan_projects_every_column_unchanged():
    # The seed's "trivial case".
    reconciler = SchemaReconciler()
    plan = reconciler.compute_plan(SRC, SRC)
    out = reconciler.project_batch(batch(), plan)
    assert out.num_rows == 3
    assert out.column_names == ["id", "order_total", "qty"]
    assert out.column(1).to_pylist() == [10, 20, None]
    assert out.schema.equals(plan.dest_arrow_schema, check_metadata=False)


def test_rename_widen_and_null_fill_as_the_seed_example():
    reconciler = SchemaReconciler(
        column_mapping={"order_total": "total_amount"},
        type_coercions={"qty": LongType()},
        on_missing_in_source="null",
        on_missing_in_dest="error",
    )
    plan = reconciler.compute_plan(SRC, DST)
    assert isinstance(plan, ReconciliationPlan)
    assert plan.projections == [
        ColumnProjection("id", "id", pa.int64(), False),
        ColumnProjection("total_amount", "order_total", pa.int32(), False),
        ColumnProjection("qty", "qty", pa.int64(), False),
        ColumnProjection("note", None, pa.string(), True),
    ]
    assert any("note" in w for w in plan.warnings)
    out = reconciler.project_batch(batch(), plan)
    assert out.column_names == ["id", "total_amount", "qty", "note"]
    assert out.schema.field("qty").type == pa.int64()
    assert out.column(3).null_count == 3
    # Field ids ride along in the field metadata, as the writer needs them.
    assert out.schema.field("total_amount").metadata[b"PARQUET:field_id"] == b"2"


def test_unmatched_columns_are_one_value_error_naming_each():
    with pytest.raises(ValueError) as e:
        SchemaReconciler().compute_plan(SRC, DST)
    text = str(e.value)
    assert "order_total" in text and "note" in text


def test_auto_add_lists_columns_with_iceberg_types():
    reconciler = SchemaReconciler(on_missing_in_dest="auto_add", on_missing_in_source="null")
    plan = reconciler.compute_plan(SRC, Schema(NestedField(1, "id", LongType())))
    assert plan.auto_add_columns == [("order_total", IntegerType()), ("qty", IntegerType())]


def test_arrow_schemas_plan_too():
    src = pa.schema([("a", pa.int32()), ("b", pa.string())])
    dst = pa.schema([("a", pa.int64()), ("b", pa.string())])
    plan = SchemaReconciler().compute_plan(src, dst)
    out = SchemaReconciler().project_batch(
        pa.RecordBatch.from_pydict({"a": pa.array([1], pa.int32()), "b": ["x"]}, schema=src), plan
    )
    assert out.schema.field("a").type == pa.int64()


def test_a_batch_missing_a_planned_column_is_a_key_error():
    reconciler = SchemaReconciler()
    plan = reconciler.compute_plan(SRC, SRC)
    stale = pa.RecordBatch.from_pydict({"id": pa.array([1], pa.int64())})
    with pytest.raises(KeyError) as e:
        reconciler.project_batch(stale, plan)
    assert "order_total" in str(e.value)


def test_a_value_a_safe_cast_would_change_is_arrow_invalid_naming_it():
    src = pa.schema([("v", pa.float64())])
    dst = pa.schema([("v", pa.int64())])
    reconciler = SchemaReconciler()
    plan = reconciler.compute_plan(src, dst)
    good = pa.RecordBatch.from_pydict({"v": [1.0, 2.0]}, schema=src)
    assert reconciler.project_batch(good, plan).column(0).to_pylist() == [1, 2]
    bad = pa.RecordBatch.from_pydict({"v": [1.5]}, schema=src)
    with pytest.raises(pa.lib.ArrowInvalid) as e:
        reconciler.project_batch(bad, plan)
    assert "1.5" in str(e.value)
    lossy = SchemaReconciler(allow_lossy_casts=True)
    assert lossy.project_batch(bad, lossy.compute_plan(src, dst)).column(0).to_pylist() == [1]


class OnlyCapsules:
    """An Arrow producer that is not pyarrow: it only speaks the PyCapsule interface."""

    def __init__(self, batch):
        self._batch = batch

    def __arrow_c_array__(self, requested_schema=None):
        return self._batch.__arrow_c_array__(requested_schema)


def test_any_arrow_producer_crosses_by_pycapsule():
    reconciler = SchemaReconciler()
    plan = reconciler.compute_plan(SRC, SRC)
    out = reconciler.project_batch(OnlyCapsules(batch()), plan)
    assert isinstance(out, pa.RecordBatch)
    assert out.column(0).to_pylist() == [1, 2, 3]


def test_bad_arguments_are_type_or_value_errors_naming_them():
    with pytest.raises(ValueError, match="on_missing_in_source"):
        SchemaReconciler(on_missing_in_source="drop")
    with pytest.raises(ValueError, match="on_missing_in_dest"):
        SchemaReconciler(on_missing_in_dest="add")
    with pytest.raises(TypeError, match="source_schema"):
        SchemaReconciler().compute_plan({"id": "long"}, SRC)
    with pytest.raises(TypeError, match=r"type_coercions\['qty'\]"):
        SchemaReconciler(type_coercions={"qty": "long"}).compute_plan(SRC, DST)
    with pytest.raises(TypeError, match="plan"):
        SchemaReconciler().project_batch(batch(), ReconciliationPlan())
