use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, BooleanArray, GenericListArray, MapArray, OffsetSizeTrait, RecordBatch,
    RecordBatchOptions, StructArray, make_array, new_null_array,
};
use arrow_buffer::{BooleanBufferBuilder, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, FieldRef, Fields};
use arrow_select::filter::filter;
use arrow_select::take::take;

use crate::cast::{CastKind, cast_kind, cast_primitive};
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
///
/// Changing only the Arrow representation of a value (list ↔ large list, string ↔ large string
/// ↔ string view, binary likewise, a dictionary to its values) is lossless and needs no check. A
/// nested cast applies the primitive rules to the child values, so a lossy element is reported
/// with its full path (`items.element.qty`, `m.value`). Elements a slice or a null slot hides
/// are neither converted nor written.
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
    // Recursion follows the schema's nesting, never the data: each call goes one type level down.
    if array.data_type() == to {
        return Ok(array.clone());
    }
    match (array.data_type(), to) {
        (DataType::Dictionary(_, _), _) if !matches!(to, DataType::Dictionary(_, _)) => {
            let dictionary = array.as_any_dictionary();
            let decoded = take(dictionary.values().as_ref(), dictionary.keys(), None)?;
            convert_array_with(&decoded, to, column, how, mode)
        }
        (DataType::Struct(from_fields), DataType::Struct(to_fields)) => {
            convert_struct(array.as_struct(), from_fields, to_fields, column, how, mode)
        }
        (DataType::List(_), DataType::List(t)) => {
            convert_list::<i32, i32>(array.as_list(), t, column, how, mode)
        }
        (DataType::LargeList(_), DataType::List(t)) => {
            convert_list::<i64, i32>(array.as_list(), t, column, how, mode)
        }
        (DataType::List(_), DataType::LargeList(t)) => {
            convert_list::<i32, i64>(array.as_list(), t, column, how, mode)
        }
        (DataType::LargeList(_), DataType::LargeList(t)) => {
            convert_list::<i64, i64>(array.as_list(), t, column, how, mode)
        }
        (DataType::Map(_, _), DataType::Map(to_entries, sorted)) => {
            convert_map(array.as_map(), to_entries, *sorted, column, how, mode)
        }
        _ => cast_primitive(array, to, column, mode),
    }
}

fn convert_struct(
    s: &StructArray,
    from_fields: &Fields,
    to_fields: &Fields,
    column: &str,
    how: ChildMatch,
    mode: CastMode,
) -> Result<ArrayRef, ReconcileError> {
    let parent = s.nulls().filter(|n| n.null_count() > 0);
    let mut children = Vec::with_capacity(to_fields.len());
    for f in to_fields {
        let path = format!("{column}.{}", f.name());
        let child = match child_index(from_fields, f, how) {
            Some(i) => {
                let child = s.column(i);
                // A child's values under a null struct are not data (Arrow leaves them
                // undefined): nulled before the cast, they cannot fail it.
                let child = match parent {
                    Some(p) if !never_fails(child.data_type(), f.data_type()) => {
                        with_nulls(child, p)?
                    }
                    _ => child.clone(),
                };
                convert_array_with(&child, f.data_type(), &path, how, mode)?
            }
            None if f.is_nullable() => new_null_array(f.data_type(), s.len()),
            None => {
                return Err(ReconcileError::MissingSourceColumn {
                    column: path,
                    available: s.column_names().join(", "),
                });
            }
        };
        if !f.is_nullable() {
            require_values(&child, parent, &path)?;
        }
        children.push(child);
    }
    Ok(Arc::new(StructArray::try_new(
        to_fields.clone(),
        children,
        s.nulls().cloned(),
    )?))
}

fn convert_list<S: OffsetSizeTrait, T: OffsetSizeTrait>(
    list: &GenericListArray<S>,
    to_field: &FieldRef,
    column: &str,
    how: ChildMatch,
    mode: CastMode,
) -> Result<ArrayRef, ReconcileError> {
    let path = format!("{column}.element");
    let (values, offsets) =
        visible_values::<S, T>(list.value_offsets(), list.nulls(), list.values(), column)?;
    let values = convert_array_with(&values, to_field.data_type(), &path, how, mode)?;
    if !to_field.is_nullable() {
        require_values(&values, None, &path)?;
    }
    Ok(Arc::new(GenericListArray::<T>::try_new(
        to_field.clone(),
        offsets,
        values,
        list.nulls().cloned(),
    )?))
}

fn convert_map(
    map: &MapArray,
    to_entries: &FieldRef,
    sorted: bool,
    column: &str,
    how: ChildMatch,
    mode: CastMode,
) -> Result<ArrayRef, ReconcileError> {
    let DataType::Struct(to_kv) = to_entries.data_type() else {
        return Err(ReconcileError::Schema(format!(
            "map column '{column}': the target entries are {}, not a struct",
            to_entries.data_type()
        )));
    };
    let entries: ArrayRef = Arc::new(map.entries().clone());
    let (entries, offsets) =
        visible_values::<i32, i32>(map.value_offsets(), map.nulls(), &entries, column)?;
    let entries = entries.as_struct();
    if entries.num_columns() != 2 || to_kv.len() != 2 {
        return Err(ReconcileError::Schema(format!(
            "map column '{column}': entries must be (key, value) structs"
        )));
    }
    // Keys and values by position: writers name the entry fields differently.
    let mut kv = Vec::with_capacity(2);
    for (i, (f, part)) in to_kv.iter().zip(["key", "value"]).enumerate() {
        let path = format!("{column}.{part}");
        let converted = convert_array_with(entries.column(i), f.data_type(), &path, how, mode)?;
        if !f.is_nullable() {
            require_values(&converted, None, &path)?;
        }
        kv.push(converted);
    }
    let entries = StructArray::try_new(to_kv.clone(), kv, entries.nulls().cloned())?;
    Ok(Arc::new(MapArray::try_new(
        to_entries.clone(),
        offsets,
        entries,
        map.nulls().cloned(),
        sorted,
    )?))
}

/// The child values a list-like array shows, with offsets from 0 in the target offset type: the
/// values outside a slice, and those behind a null slot (Arrow allows a null list to cover
/// values), are left out, so they are neither cast nor written.
fn visible_values<S: OffsetSizeTrait, T: OffsetSizeTrait>(
    offsets: &[S],
    nulls: Option<&NullBuffer>,
    values: &ArrayRef,
    column: &str,
) -> Result<(ArrayRef, OffsetBuffer<T>), ReconcileError> {
    let (Some(first), Some(last)) = (offsets.first(), offsets.last()) else {
        return Ok((values.slice(0, 0), OffsetBuffer::new_empty()));
    };
    let (first, last) = (first.as_usize(), last.as_usize());
    let hidden = |i: usize| nulls.is_some_and(|n| n.is_null(i)) && offsets[i + 1] > offsets[i];
    let slots = offsets.len() - 1;
    let compact = nulls.is_some_and(|n| n.null_count() > 0) && (0..slots).any(hidden);
    let too_many = || ReconcileError::Cast {
        column: column.to_string(),
        from: values.data_type().to_string(),
        to: format!("a list with {}-bit offsets", 8 * std::mem::size_of::<T>()),
        value: None,
        message: "the batch holds more child values than the offsets can address; read \
                  smaller batches"
            .to_string(),
    };
    let mut out = Vec::with_capacity(offsets.len());
    out.push(T::usize_as(0));
    let mut end = 0usize;
    let visible = if compact {
        let mut keep = BooleanBufferBuilder::new(last - first);
        for i in 0..slots {
            let len = (offsets[i + 1] - offsets[i]).as_usize();
            let shown = !hidden(i);
            keep.append_n(len, shown);
            if shown {
                end += len;
            }
            out.push(T::from_usize(end).ok_or_else(too_many)?);
        }
        let keep = BooleanArray::new(keep.finish(), None);
        filter(&values.slice(first, last - first), &keep)?
    } else {
        for pair in offsets.windows(2) {
            end += (pair[1] - pair[0]).as_usize();
            out.push(T::from_usize(end).ok_or_else(too_many)?);
        }
        values.slice(first, last - first)
    };
    Ok((visible, OffsetBuffer::new(ScalarBuffer::from(out))))
}

/// True when converting `from` to `to` cannot fail or change a value, whatever the values:
/// representation changes and exact widenings, at every level.
fn never_fails(from: &DataType, to: &DataType) -> bool {
    match (from, to) {
        (DataType::Dictionary(_, v), _) if !matches!(to, DataType::Dictionary(_, _)) => {
            never_fails(v, to)
        }
        (DataType::Struct(f), DataType::Struct(t)) => t.iter().all(|tf| {
            f.iter()
                .find(|ff| ff.name() == tf.name())
                .is_some_and(|ff| never_fails(ff.data_type(), tf.data_type()))
        }),
        (
            DataType::List(f) | DataType::LargeList(f),
            DataType::List(t) | DataType::LargeList(t),
        )
        | (DataType::Map(f, _), DataType::Map(t, _)) => never_fails(f.data_type(), t.data_type()),
        _ => from == to || cast_kind(from, to) == CastKind::Exact,
    }
}

/// `array` with the slots `extra` marks null made null too.
fn with_nulls(array: &ArrayRef, extra: &NullBuffer) -> Result<ArrayRef, ReconcileError> {
    let nulls = NullBuffer::union(array.nulls(), Some(extra));
    Ok(make_array(
        array.to_data().into_builder().nulls(nulls).build()?,
    ))
}

/// Refuses nulls in a required field where its parent (if any) has a value.
fn require_values(
    array: &ArrayRef,
    parent: Option<&NullBuffer>,
    path: &str,
) -> Result<(), ReconcileError> {
    let Some(nulls) = array.nulls().filter(|n| n.null_count() > 0) else {
        return Ok(());
    };
    let nulls = match parent {
        None => nulls.null_count(),
        Some(p) => (p.inner() & &!nulls.inner()).count_set_bits(),
    };
    if nulls == 0 {
        return Ok(());
    }
    Err(ReconcileError::NullInRequired {
        column: path.to_string(),
        nulls,
    })
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
        let lists = arrow_array::ListArray::try_new(
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
