use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, ListArray, MapArray, RecordBatch, RecordBatchOptions, StructArray,
    new_null_array,
};
use arrow_schema::DataType;

use crate::cast::cast_primitive;
use crate::{CastMode, ReconcileError, ReconciliationPlan};

/// Projects one source batch through `plan`: renames, casts (nested types child by child) and
/// null-fills, returning a batch with `plan.dest_arrow_schema` and the same number of rows.
///
/// Columns that need no conversion are shared, not copied; the rest allocate
/// O(rows × plan columns).
pub fn project_batch(
    batch: &RecordBatch,
    plan: &ReconciliationPlan,
) -> Result<RecordBatch, ReconcileError> {
    let rows = batch.num_rows();
    let mut columns = Vec::with_capacity(plan.projections.len());
    for p in &plan.projections {
        let field = &p.dest_field;
        let array = match (&p.source_name, p.fill_with_null) {
            (Some(source), false) => {
                let column = batch.column_by_name(source).ok_or_else(|| {
                    ReconcileError::MissingSourceColumn {
                        column: source.clone(),
                        available: column_names(batch),
                    }
                })?;
                convert_array_with(
                    column,
                    field.data_type(),
                    &p.dest_name,
                    ChildMatch::ByName,
                    p.cast_mode,
                )?
            }
            _ => new_null_array(field.data_type(), rows),
        };
        if !field.is_nullable() && array.null_count() > 0 {
            return Err(ReconcileError::NullInRequired {
                column: p.dest_name.clone(),
                nulls: array.null_count(),
            });
        }
        columns.push(array);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        plan.dest_arrow_schema.clone(),
        columns,
        &options,
    )?)
}

fn column_names(batch: &RecordBatch) -> String {
    batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// How struct children of the source are found for each child of the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildMatch {
    /// By name (the reconciler's rule: renames apply to top-level columns only).
    ByName,
    /// By the Iceberg field id in `PARQUET:field_id` metadata (reading old snapshots after a
    /// nested rename), falling back to the name for a target child without an id.
    ByFieldId,
}

const FIELD_ID: &str = "PARQUET:field_id";

fn child_index(
    from: &arrow_schema::Fields,
    to: &arrow_schema::Field,
    how: ChildMatch,
) -> Option<usize> {
    let id = |f: &arrow_schema::Field| f.metadata().get(FIELD_ID).cloned();
    match (how, id(to)) {
        (ChildMatch::ByFieldId, Some(target)) => from
            .iter()
            .position(|f| id(f).as_deref() == Some(target.as_str())),
        _ => from.iter().position(|f| f.name() == to.name()),
    }
}

/// Converts `array` to exactly `to`, including nested field names, nullability and metadata
/// (which carry the Iceberg field ids): struct children matched per `how` (a missing optional
/// child becomes nulls), list and map values converted recursively, primitives cast safely (a
/// value the cast would change is an error, see [`CastMode::Safe`]). `column` names the value in
/// errors.
pub fn convert_array(
    array: &ArrayRef,
    to: &DataType,
    column: &str,
    how: ChildMatch,
) -> Result<ArrayRef, ReconcileError> {
    convert_array_with(array, to, column, how, CastMode::Safe)
}

/// As [`convert_array`], with primitive casts under `mode`.
pub fn convert_array_with(
    array: &ArrayRef,
    to: &DataType,
    column: &str,
    how: ChildMatch,
    mode: CastMode,
) -> Result<ArrayRef, ReconcileError> {
    if array.data_type() == to {
        return Ok(array.clone());
    }
    match (array.data_type(), to) {
        (DataType::Struct(from_fields), DataType::Struct(to_fields)) => {
            let s = array.as_struct();
            let mut children = Vec::with_capacity(to_fields.len());
            for f in to_fields {
                let path = format!("{column}.{}", f.name());
                match child_index(from_fields, f, how) {
                    Some(i) => children.push(convert_array_with(
                        s.column(i),
                        f.data_type(),
                        &path,
                        how,
                        mode,
                    )?),
                    None if f.is_nullable() => {
                        children.push(new_null_array(f.data_type(), s.len()))
                    }
                    None => {
                        return Err(ReconcileError::MissingSourceColumn {
                            column: path,
                            available: s.column_names().join(", "),
                        });
                    }
                }
            }
            Ok(Arc::new(StructArray::try_new(
                to_fields.clone(),
                children,
                s.nulls().cloned(),
            )?))
        }
        (DataType::List(_), DataType::List(to_field)) => {
            let l = array.as_list::<i32>();
            let path = format!("{column}.element");
            let values = convert_array_with(l.values(), to_field.data_type(), &path, how, mode)?;
            Ok(Arc::new(ListArray::try_new(
                to_field.clone(),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?))
        }
        (DataType::Map(_, _), DataType::Map(to_entries, sorted)) => {
            let m = array.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            let entries = convert_array_with(&entries, to_entries.data_type(), column, how, mode)?;
            Ok(Arc::new(MapArray::try_new(
                to_entries.clone(),
                m.offsets().clone(),
                entries.as_struct().clone(),
                m.nulls().cloned(),
                *sorted,
            )?))
        }
        _ => cast_primitive(array, to, column, mode),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MissingInSource, SchemaReconciler};
    use arrow_array::{Float32Array, Int32Array, Int64Array, StringArray};
    use arrow_schema::{Field, Fields, Schema};
    use iceberg::spec::{
        ListType, NestedField, PrimitiveType, Schema as IcebergSchema, StructType, Type,
    };
    use proptest::prelude::*;

    fn batch(fields: Vec<Field>, cols: Vec<ArrayRef>) -> RecordBatch {
        RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
    }

    #[test]
    fn failed_cast_names_column_and_value() {
        let src = Schema::new(vec![Field::new("qty", DataType::Utf8, true)]);
        let dst = Schema::new(vec![Field::new("qty", DataType::Int64, true)]);
        let plan = SchemaReconciler::new().compute_plan(&src, &dst).unwrap();
        let b = batch(
            vec![Field::new("qty", DataType::Utf8, true)],
            vec![Arc::new(StringArray::from(vec![
                Some("1"),
                None,
                Some("seven"),
            ]))],
        );
        match project_batch(&b, &plan) {
            Err(ReconcileError::Cast { column, value, .. }) => {
                assert_eq!(column, "qty");
                assert_eq!(value.as_deref(), Some("seven"));
            }
            other => panic!("expected a cast error, got {other:?}"),
        }
    }

    #[test]
    fn missing_source_column_is_named() {
        let src = Schema::new(vec![Field::new("a", DataType::Int32, true)]);
        let plan = SchemaReconciler::new().compute_plan(&src, &src).unwrap();
        let b = batch(
            vec![Field::new("b", DataType::Int32, true)],
            vec![Arc::new(Int32Array::from(vec![1]))],
        );
        assert!(matches!(
            project_batch(&b, &plan),
            Err(ReconcileError::MissingSourceColumn { column, .. }) if column == "a"
        ));
    }

    #[test]
    fn null_into_required_is_refused() {
        let src = Schema::new(vec![Field::new("a", DataType::Int32, true)]);
        let dst = Schema::new(vec![Field::new("a", DataType::Int64, false)]);
        let plan = SchemaReconciler::new().compute_plan(&src, &dst).unwrap();
        let b = batch(
            vec![Field::new("a", DataType::Int32, true)],
            vec![Arc::new(Int32Array::from(vec![Some(1), None]))],
        );
        assert!(matches!(
            project_batch(&b, &plan),
            Err(ReconcileError::NullInRequired { nulls: 1, .. })
        ));
    }

    #[test]
    fn nested_struct_and_list_are_widened_with_field_ids() {
        let point = |t: PrimitiveType| {
            Type::Struct(StructType::new(vec![
                Arc::new(NestedField::optional(3, "x", Type::Primitive(t.clone()))),
                Arc::new(NestedField::optional(4, "y", Type::Primitive(t))),
            ]))
        };
        let list = |t: PrimitiveType| {
            Type::List(ListType::new(Arc::new(NestedField::list_element(
                6,
                Type::Primitive(t),
                false,
            ))))
        };
        let schema = |t: PrimitiveType| {
            IcebergSchema::builder()
                .with_fields(vec![
                    Arc::new(NestedField::required(
                        1,
                        "id",
                        Type::Primitive(PrimitiveType::Long),
                    )),
                    Arc::new(NestedField::optional(2, "p", point(t.clone()))),
                    Arc::new(NestedField::optional(5, "l", list(t))),
                ])
                .build()
                .unwrap()
        };
        let src = schema(PrimitiveType::Int);
        let dst = schema(PrimitiveType::Long);
        let plan = SchemaReconciler::new().compute_plan(&src, &dst).unwrap();

        // A source batch as a reader hands it over: no field-id metadata.
        let xy = Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("y", DataType::Int32, true),
        ]);
        let structs = StructArray::try_new(
            xy.clone(),
            vec![
                Arc::new(Int32Array::from(vec![1, 2])),
                Arc::new(Int32Array::from(vec![Some(3), None])),
            ],
            None,
        )
        .unwrap();
        let item = Arc::new(Field::new("element", DataType::Int32, false));
        let lists = ListArray::try_new(
            item.clone(),
            arrow_buffer::OffsetBuffer::from_lengths([2, 1]),
            Arc::new(Int32Array::from(vec![7, 8, 9])),
            None,
        )
        .unwrap();
        let b = batch(
            vec![
                Field::new("id", DataType::Int64, false),
                Field::new("p", DataType::Struct(xy), true),
                Field::new("l", DataType::List(item), true),
            ],
            vec![
                Arc::new(Int64Array::from(vec![10, 11])),
                Arc::new(structs),
                Arc::new(lists),
            ],
        );
        let out = project_batch(&b, &plan).unwrap();
        assert_eq!(out.schema(), plan.dest_arrow_schema);
        let p = out.column(1).as_struct();
        let x = p.column(0).as_primitive::<arrow_array::types::Int64Type>();
        assert_eq!(x.values().to_vec(), vec![1, 2]);
        assert!(p.column(1).is_null(1));
        let l = out.column(2).as_list::<i32>();
        let vals = l.values().as_primitive::<arrow_array::types::Int64Type>();
        assert_eq!(vals.values().to_vec(), vec![7, 8, 9]);
        // Child field ids survive.
        let DataType::Struct(fs) = out.schema().field(1).data_type().clone() else {
            panic!("not a struct")
        };
        assert_eq!(
            fs[1].metadata().get("PARQUET:field_id").map(String::as_str),
            Some("4")
        );
    }

    proptest! {
        #[test]
        fn widening_preserves_every_value(values in proptest::collection::vec(proptest::option::of(any::<i32>()), 0..200),
                                          floats in proptest::collection::vec(proptest::option::of(any::<f32>()), 0..200)) {
            let n = values.len().min(floats.len());
            let (values, floats) = (&values[..n], &floats[..n]);
            let src = Schema::new(vec![
                Field::new("a", DataType::Int32, true),
                Field::new("f", DataType::Float32, true),
            ]);
            let dst = Schema::new(vec![
                Field::new("renamed", DataType::Int64, true),
                Field::new("f", DataType::Float64, true),
                Field::new("fill", DataType::Utf8, true),
            ]);
            let plan = SchemaReconciler::new()
                .rename("a", "renamed")
                .on_missing_in_source(MissingInSource::Null)
                .compute_plan(&src, &dst)
                .unwrap();
            let b = batch(
                src.fields().iter().map(|f| f.as_ref().clone()).collect(),
                vec![
                    Arc::new(Int32Array::from(values.to_vec())),
                    Arc::new(Float32Array::from(floats.to_vec())),
                ],
            );
            let out = project_batch(&b, &plan).unwrap();
            prop_assert_eq!(out.num_rows(), n);
            let a = out.column(0).as_primitive::<arrow_array::types::Int64Type>();
            let got: Vec<Option<i64>> = a.iter().collect();
            let want: Vec<Option<i64>> = values.iter().map(|v| v.map(i64::from)).collect();
            prop_assert_eq!(got, want);
            let f = out.column(1).as_primitive::<arrow_array::types::Float64Type>();
            for (g, w) in f.iter().zip(floats) {
                match (g, w) {
                    (None, None) => {}
                    (Some(g), Some(w)) => prop_assert!(g.to_bits() == f64::from(*w).to_bits() || (g.is_nan() && w.is_nan())),
                    _ => prop_assert!(false, "null mismatch"),
                }
            }
            prop_assert_eq!(out.column(2).null_count(), n);
        }

        #[test]
        fn decimal_precision_widening_preserves_values(
            values in proptest::collection::vec(proptest::option::of(-999_999_999i128..=999_999_999), 0..100)
        ) {
            let src = Schema::new(vec![Field::new("d", DataType::Decimal128(9, 2), true)]);
            let dst = Schema::new(vec![Field::new("d", DataType::Decimal128(18, 2), true)]);
            let plan = SchemaReconciler::new().compute_plan(&src, &dst).unwrap();
            let arr = arrow_array::Decimal128Array::from(values.clone()).with_precision_and_scale(9, 2).unwrap();
            let b = batch(vec![Field::new("d", DataType::Decimal128(9, 2), true)], vec![Arc::new(arr)]);
            let out = project_batch(&b, &plan).unwrap();
            let got: Vec<Option<i128>> = out.column(0).as_primitive::<arrow_array::types::Decimal128Type>().iter().collect();
            prop_assert_eq!(got, values);
        }

        #[test]
        fn int_to_string_and_back_roundtrips(values in proptest::collection::vec(proptest::option::of(any::<i64>()), 0..100)) {
            let ints = Schema::new(vec![Field::new("v", DataType::Int64, true)]);
            let strs = Schema::new(vec![Field::new("v", DataType::Utf8, true)]);
            let to_str = SchemaReconciler::new().compute_plan(&ints, &strs).unwrap();
            let to_int = SchemaReconciler::new().compute_plan(&strs, &ints).unwrap();
            let b = batch(vec![Field::new("v", DataType::Int64, true)], vec![Arc::new(Int64Array::from(values.clone()))]);
            let back = project_batch(&project_batch(&b, &to_str).unwrap(), &to_int).unwrap();
            let got: Vec<Option<i64>> = back.column(0).as_primitive::<arrow_array::types::Int64Type>().iter().collect();
            prop_assert_eq!(got, values);
        }
    }
}
