//! Nested projection and casting: lists, large lists, structs, maps and dictionaries with nulls at
//! every level. Arrays are built from a value model in any Arrow representation, so a converted
//! array can be compared with the one built directly in the target representation.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    ArrayRef, Float32Array, Float64Array, GenericListArray, Int32Array, Int64Array,
    LargeStringArray, MapArray, OffsetSizeTrait, RecordBatch, StringArray, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, Schema};
use iceberg::spec::{
    ListType, MapType, NestedField, PrimitiveType, Schema as IcebergSchema, StructType, Type,
};
use proptest::prelude::*;

use crate::{CastMode, ChildMatch, ReconcileError, SchemaReconciler, convert_array_with};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// One value of any (nested) type.
#[derive(Debug, Clone, PartialEq)]
enum V {
    Null,
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<V>),
    Struct(Vec<V>),
    Map(Vec<(String, V)>),
}

/// A value no safe cast of this type accepts (a long above 2^53 into a double, a double that
/// is no float, ...): what a reader may leave behind a null slot.
fn garbage(dt: &DataType) -> V {
    match dt {
        DataType::Int32 | DataType::Int64 => V::Int((1 << 53) + 1),
        DataType::Float32 | DataType::Float64 => V::Float(0.1),
        DataType::Struct(fs) => V::Struct(fs.iter().map(|f| garbage(f.data_type())).collect()),
        DataType::List(f) | DataType::LargeList(f) => V::List(vec![garbage(f.data_type())]),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => V::Map(vec![("garbage".into(), garbage(kv[1].data_type()))]),
            _ => V::Null,
        },
        _ => V::Str("garbage".into()),
    }
}

fn build_list<O: OffsetSizeTrait>(
    values: &[V],
    field: &FieldRef,
    hide: bool,
) -> Result<ArrayRef, ReconcileError> {
    let mut lengths = Vec::with_capacity(values.len());
    let mut children = Vec::new();
    let mut valid = Vec::with_capacity(values.len());
    for v in values {
        match v {
            V::List(items) => {
                valid.push(true);
                lengths.push(items.len());
                children.extend(items.iter().cloned());
            }
            _ => {
                valid.push(false);
                if hide {
                    lengths.push(1);
                    children.push(garbage(field.data_type()));
                } else {
                    lengths.push(0);
                }
            }
        }
    }
    let child = build(&children, field, hide)?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        field.clone(),
        OffsetBuffer::from_lengths(lengths),
        child,
        Some(NullBuffer::from(valid)),
    )?))
}

/// `values` as an array of `field`'s type; with `hide`, every null list, map or struct slot
/// covers garbage values (which Arrow allows and a conversion must ignore).
fn build(values: &[V], field: &FieldRef, hide: bool) -> Result<ArrayRef, ReconcileError> {
    let int = |v: &V| match v {
        V::Int(x) => Some(*x),
        _ => None,
    };
    // A long lands in a double column as the cast would put it (the expected side of a
    // long → double test).
    let float = |v: &V| match v {
        V::Float(x) => Some(*x),
        V::Int(x) => Some(*x as f64),
        _ => None,
    };
    let text = |v: &V| match v {
        V::Str(s) => Some(s.clone()),
        _ => None,
    };
    Ok(match field.data_type() {
        DataType::Int32 => Arc::new(Int32Array::from_iter(
            values.iter().map(|v| int(v).map(|x| x as i32)),
        )),
        DataType::Int64 => Arc::new(Int64Array::from_iter(values.iter().map(int))),
        DataType::Float32 => Arc::new(Float32Array::from_iter(
            values.iter().map(|v| float(v).map(|x| x as f32)),
        )),
        DataType::Float64 => Arc::new(Float64Array::from_iter(values.iter().map(float))),
        DataType::Utf8 => Arc::new(StringArray::from_iter(values.iter().map(text))),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from_iter(values.iter().map(text))),
        DataType::Dictionary(_, inner) => {
            let plain = build(
                values,
                &Arc::new(Field::new("v", (**inner).clone(), true)),
                hide,
            )?;
            arrow_cast::cast(&plain, field.data_type())?
        }
        DataType::List(f) => build_list::<i32>(values, f, hide)?,
        DataType::LargeList(f) => build_list::<i64>(values, f, hide)?,
        DataType::Struct(fs) => {
            let mut columns = Vec::with_capacity(fs.len());
            for (j, f) in fs.iter().enumerate() {
                let column: Vec<V> = values
                    .iter()
                    .map(|v| match v {
                        V::Struct(xs) => xs[j].clone(),
                        _ if hide => garbage(f.data_type()),
                        _ => V::Null,
                    })
                    .collect();
                columns.push(build(&column, f, hide)?);
            }
            let valid: Vec<bool> = values.iter().map(|v| matches!(v, V::Struct(_))).collect();
            Arc::new(StructArray::try_new(
                fs.clone(),
                columns,
                Some(NullBuffer::from(valid)),
            )?)
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                return Err(ReconcileError::Schema("map entries".into()));
            };
            let (mut lengths, mut keys, mut vals, mut valid) = (vec![], vec![], vec![], vec![]);
            for v in values {
                match v {
                    V::Map(pairs) => {
                        valid.push(true);
                        lengths.push(pairs.len());
                        for (k, x) in pairs {
                            keys.push(V::Str(k.clone()));
                            vals.push(x.clone());
                        }
                    }
                    _ => {
                        valid.push(false);
                        if hide {
                            lengths.push(1);
                            keys.push(V::Str("garbage".into()));
                            vals.push(garbage(kv[1].data_type()));
                        } else {
                            lengths.push(0);
                        }
                    }
                }
            }
            let entries_array = StructArray::try_new(
                kv.clone(),
                vec![build(&keys, &kv[0], hide)?, build(&vals, &kv[1], hide)?],
                None,
            )?;
            Arc::new(MapArray::try_new(
                entries.clone(),
                OffsetBuffer::from_lengths(lengths),
                entries_array,
                Some(NullBuffer::from(valid)),
                *sorted,
            )?)
        }
        other => return Err(ReconcileError::Schema(format!("no builder for {other}"))),
    })
}

/// Values of `field`'s type: nulls wherever the field is optional, lists and maps of 0-3
/// entries. Longs are mostly small, sometimes beyond 2^53.
fn values(field: &FieldRef) -> BoxedStrategy<V> {
    let value = match field.data_type() {
        DataType::Int32 => any::<i32>().prop_map(|x| V::Int(i64::from(x))).boxed(),
        DataType::Int64 => prop_oneof![4 => -1000i64..1000, 1 => any::<i64>()]
            .prop_map(V::Int)
            .boxed(),
        DataType::Float32 => any::<f32>().prop_map(|x| V::Float(f64::from(x))).boxed(),
        DataType::Float64 => any::<f64>().prop_map(V::Float).boxed(),
        DataType::Dictionary(_, inner) => {
            values(&Arc::new(Field::new("v", (**inner).clone(), false)))
        }
        DataType::List(f) | DataType::LargeList(f) => proptest::collection::vec(values(f), 0..4)
            .prop_map(V::List)
            .boxed(),
        DataType::Struct(fs) => fs
            .iter()
            .map(values)
            .collect::<Vec<_>>()
            .prop_map(V::Struct)
            .boxed(),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => {
                proptest::collection::btree_map("[a-c]{1,2}", values(&kv[1]), 0..4)
                    .prop_map(|m| V::Map(m.into_iter().collect()))
                    .boxed()
            }
            _ => Just(V::Null).boxed(),
        },
        _ => "[a-zé]{0,3}".prop_map(V::Str).boxed(),
    };
    if field.is_nullable() {
        prop_oneof![1 => Just(V::Null), 4 => value].boxed()
    } else {
        value
    }
}

fn f(name: &str, dt: DataType, nullable: bool) -> FieldRef {
    Arc::new(Field::new(name, dt, nullable))
}

fn list(large: bool, element: FieldRef) -> DataType {
    if large {
        DataType::LargeList(element)
    } else {
        DataType::List(element)
    }
}

fn string(large: bool) -> DataType {
    if large {
        DataType::LargeUtf8
    } else {
        DataType::Utf8
    }
}

/// The corpus's `nested` table in one Arrow representation: `large` as pyarrow reads it (large
/// lists and strings, dictionary-encoded tags), else as iceberg-rust's schema has it. With
/// `widen`, the promotions Iceberg allows inside (qty int→long, lat float→double, matrix
/// int→long).
fn nested_fields(large: bool, widen: bool) -> Vec<FieldRef> {
    let (int, float) = if widen {
        (DataType::Int64, DataType::Float64)
    } else {
        (DataType::Int32, DataType::Float32)
    };
    let geo = DataType::Struct(Fields::from(vec![
        f("lat", float, true),
        f("lon", DataType::Float64, true),
    ]));
    let address = DataType::Struct(Fields::from(vec![
        f("city", string(large), true),
        f("geo", geo, true),
    ]));
    let item = DataType::Struct(Fields::from(vec![
        f("sku", string(large), true),
        f("qty", int.clone(), true),
    ]));
    let entries = DataType::Struct(Fields::from(vec![
        f("key", string(large), false),
        f(
            "value",
            list(large, f("element", DataType::Int64, true)),
            true,
        ),
    ]));
    let matrix = list(
        large,
        f("element", list(large, f("element", int, true)), true),
    );
    let tag = if large {
        DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::LargeUtf8))
    } else {
        DataType::Utf8
    };
    vec![
        f("address", address, true),
        f("items", list(large, f("element", item, true)), true),
        f(
            "attrs",
            DataType::Map(f("entries", entries, false), false),
            true,
        ),
        f("matrix", matrix, true),
        f("tags", list(large, f("element", tag, false)), true),
    ]
}

fn convert(array: &ArrayRef, to: &DataType, column: &str) -> Result<ArrayRef, ReconcileError> {
    convert_array_with(array, to, column, ChildMatch::ByName, CastMode::Safe)
}

/// Rows `start..start + len` of `rows`, and the same slice of `array`.
fn slice(rows: &[V], array: &ArrayRef, start: usize, len: usize) -> (Vec<V>, ArrayRef) {
    let start = start.min(rows.len());
    let len = len.min(rows.len() - start);
    (rows[start..start + len].to_vec(), array.slice(start, len))
}

/// Longs a double cannot hold exactly (the cast back differs, or does not fit).
fn inexact_in_double(x: i64) -> bool {
    (x as f64) as i128 != i128::from(x)
}

/// A column of the nested table, its rows (large representation), a slice and whether the
/// target widens.
fn nested_case() -> impl Strategy<Value = (usize, Vec<V>, usize, usize, bool)> {
    (0usize..5).prop_flat_map(|c| {
        let field = nested_fields(true, false)[c].clone();
        (
            Just(c),
            proptest::collection::vec(values(&field), 0..24),
            0usize..8,
            0usize..24,
            any::<bool>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Every column of the corpus's nested table, from its large representation (with garbage
    /// behind null slots, sliced) to the small one, with and without the promotions inside:
    /// never an error, every value as built directly in the target representation.
    #[test]
    fn nested_representation_changes_and_promotions_keep_every_value(
        (column, rows, start, len, widen) in nested_case()
    ) {
        let from = &nested_fields(true, false)[column];
        let to = &nested_fields(false, widen)[column];
        let source = build(&rows, from, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (rows, source) = slice(&rows, &source, start, len);
        let out = convert(&source, to.data_type(), to.name());
        let out = match out {
            Ok(out) => out,
            Err(e) => return Err(TestCaseError::fail(format!("{}: {e}", to.name()))),
        };
        let want = build(&rows, to, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(out.data_type(), to.data_type());
        prop_assert_eq!(&out, &want);
        // And back: the small representation converts to the large one as losslessly.
        let large = nested_fields(true, widen)[column].clone();
        let large = match large.data_type() {
            // Dictionaries are a source representation only.
            DataType::LargeList(e) if matches!(e.data_type(), DataType::Dictionary(..)) => {
                f("tags", list(true, f("element", DataType::LargeUtf8, false)), true)
            }
            _ => large,
        };
        let back = convert(&out, large.data_type(), large.name())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let want = build(&rows, &large, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back, &want);
    }

    /// A lossy cast inside a list of structs (`long` → `double`) is checked element by element:
    /// it fails exactly when a visible element does not survive, naming the element's path and
    /// the first such value; values behind null slots never fail it.
    #[test]
    fn a_lossy_nested_cast_reports_the_first_changed_element(
        rows in proptest::collection::vec(values(&items(true, DataType::Int64)), 0..24),
        start in 0usize..8,
        len in 0usize..24,
    ) {
        let from = items(true, DataType::Int64);
        let to = items(false, DataType::Float64);
        let source = build(&rows, &from, true).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let (rows, source) = slice(&rows, &source, start, len);
        let first_bad = rows.iter().find_map(|row| match row {
            V::List(elements) => elements.iter().find_map(|e| match e {
                V::Struct(fs) => match fs[1] {
                    V::Int(x) if inexact_in_double(x) => Some(x),
                    _ => None,
                },
                _ => None,
            }),
            _ => None,
        });
        match (convert(&source, to.data_type(), "items"), first_bad) {
            (Ok(out), None) => {
                let want = build(&rows, &to, false).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&out, &want);
            }
            (Err(ReconcileError::Cast { column, value, message, .. }), Some(x)) => {
                prop_assert_eq!(column, "items.element.n");
                prop_assert_eq!(value, Some(x.to_string()));
                prop_assert!(message.contains("would change the value"), "{}", message);
            }
            (other, bad) => prop_assert!(false, "first bad {:?}, got {:?}", bad, other.map(|a| a.len())),
        }
    }
}

/// `items: list<struct<sku: string, n: $n>>`.
fn items(large: bool, n: DataType) -> FieldRef {
    let item = DataType::Struct(Fields::from(vec![
        f("sku", string(large), true),
        f("n", n, true),
    ]));
    f("items", list(large, f("element", item, true)), true)
}

fn ice_long() -> Type {
    Type::Primitive(PrimitiveType::Long)
}

/// The failure: an Iceberg-schema plan (lists of strings, a list of structs) and a batch
/// as a Parquet reader of a PyIceberg file hands it over (large lists and strings).
#[test]
fn a_plan_from_iceberg_schemas_projects_large_list_batches() -> TestResult {
    let schema = |qty: Type| -> Result<IcebergSchema, iceberg::Error> {
        let item = Type::Struct(StructType::new(vec![
            Arc::new(NestedField::optional(
                31,
                "sku",
                Type::Primitive(PrimitiveType::String),
            )),
            Arc::new(NestedField::optional(32, "qty", qty)),
        ]));
        IcebergSchema::builder()
            .with_fields(vec![
                Arc::new(NestedField::required(1, "id", ice_long())),
                Arc::new(NestedField::optional(
                    3,
                    "items",
                    Type::List(ListType::new(Arc::new(NestedField::list_element(
                        30, item, false,
                    )))),
                )),
                Arc::new(NestedField::optional(
                    6,
                    "tags",
                    Type::List(ListType::new(Arc::new(NestedField::list_element(
                        60,
                        Type::Primitive(PrimitiveType::String),
                        false,
                    )))),
                )),
                Arc::new(NestedField::optional(
                    4,
                    "attrs",
                    Type::Map(MapType::new(
                        Arc::new(NestedField::map_key_element(
                            40,
                            Type::Primitive(PrimitiveType::String),
                        )),
                        Arc::new(NestedField::map_value_element(
                            41,
                            Type::List(ListType::new(Arc::new(NestedField::list_element(
                                42,
                                ice_long(),
                                false,
                            )))),
                            false,
                        )),
                    )),
                )),
            ])
            .build()
    };
    // The same schema, and a destination whose qty was widened to long.
    for dest in [
        schema(Type::Primitive(PrimitiveType::Int))?,
        schema(ice_long())?,
    ] {
        let source = schema(Type::Primitive(PrimitiveType::Int))?;
        let plan = SchemaReconciler::new().compute_plan(&source, &dest)?;
        let rows = vec![
            V::List(vec![
                V::Struct(vec![V::Str("k1".into()), V::Int(1)]),
                V::Null,
                V::Struct(vec![V::Null, V::Null]),
            ]),
            V::Null,
            V::List(vec![]),
        ];
        let tags = vec![
            V::List(vec![V::Str("t0".into()), V::Null]),
            V::Null,
            V::List(vec![]),
        ];
        let attrs = vec![
            V::Map(vec![
                ("a".into(), V::List(vec![V::Int(7), V::Null])),
                ("b".into(), V::Null),
            ]),
            V::Map(vec![]),
            V::Null,
        ];
        let large = nested_fields(true, false);
        let (items_f, attrs_f) = (large[1].clone(), large[2].clone());
        let tags_f = f(
            "tags",
            list(true, f("element", DataType::LargeUtf8, true)),
            true,
        );
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                f("id", DataType::Int64, false),
                items_f.clone(),
                tags_f.clone(),
                attrs_f.clone(),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![1, 2, 3])),
                build(&rows, &items_f, true)?,
                build(&tags, &tags_f, true)?,
                build(&attrs, &attrs_f, true)?,
            ],
        )?;
        let out = crate::project_batch(&batch, &plan)?;
        assert_eq!(out.schema(), plan.dest_arrow_schema);
        let dest_fields = plan.dest_arrow_schema.fields();
        assert_eq!(out.column(1), &build(&rows, &dest_fields[1], false)?);
        assert_eq!(out.column(2), &build(&tags, &dest_fields[2], false)?);
        assert_eq!(out.column(3), &build(&attrs, &dest_fields[3], false)?);
    }
    Ok(())
}

#[test]
fn lossless_representation_changes_never_advise_lossy_casts() -> TestResult {
    // Every plan-level pair of the same Iceberg type in two representations warns about nothing.
    let dict = |v: DataType| DataType::Dictionary(Box::new(DataType::Int32), Box::new(v));
    let pairs = [
        (DataType::LargeUtf8, DataType::Utf8),
        (DataType::Utf8View, DataType::Utf8),
        (DataType::LargeBinary, DataType::Binary),
        (DataType::BinaryView, DataType::Binary),
        (DataType::Binary, DataType::LargeBinary),
        (dict(DataType::LargeUtf8), DataType::Utf8),
        (dict(DataType::Int64), DataType::Int64),
        (
            list(true, f("element", DataType::LargeUtf8, true)),
            list(false, f("element", DataType::Utf8, true)),
        ),
        (
            nested_fields(true, false)[2].data_type().clone(),
            nested_fields(false, false)[2].data_type().clone(),
        ),
        (
            nested_fields(true, false)[3].data_type().clone(),
            nested_fields(false, true)[3].data_type().clone(),
        ),
    ];
    for (from, to) in pairs {
        let src = Schema::new(vec![Field::new("c", from.clone(), true)]);
        let dst = Schema::new(vec![Field::new("c", to.clone(), true)]);
        let plan = SchemaReconciler::new().compute_plan(&src, &dst)?;
        assert!(
            plan.warnings.is_empty(),
            "{from} → {to}: {:?}",
            plan.warnings
        );
    }
    Ok(())
}

#[test]
fn dictionary_columns_decode_and_cast_their_values() -> TestResult {
    let dict = DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Int64));
    let field = f("v", dict, true);
    let rows = vec![V::Int(1), V::Null, V::Int((1 << 53) + 1), V::Int(1)];
    let array = build(&rows, &field, false)?;
    let out = convert(&array.slice(0, 2), &DataType::Int64, "v")?;
    assert_eq!(
        out.as_primitive::<arrow_array::types::Int64Type>().value(0),
        1
    );
    assert!(out.is_null(1));
    match convert(&array, &DataType::Float64, "v") {
        Err(ReconcileError::Cast { column, value, .. }) => {
            assert_eq!(column, "v");
            assert_eq!(value.as_deref(), Some("9007199254740993"));
        }
        other => panic!("expected a cast error, got {other:?}"),
    }
    Ok(())
}

#[test]
fn a_lossy_struct_field_in_a_list_names_its_path_and_value() -> TestResult {
    let from = items(true, DataType::Float64);
    let to = items(false, DataType::Float32);
    let rows = vec![
        V::List(vec![V::Struct(vec![V::Null, V::Float(0.5)])]),
        V::Null,
        V::List(vec![
            V::Null,
            V::Struct(vec![V::Str("x".into()), V::Float(0.1)]),
        ]),
    ];
    let source = build(&rows, &from, true)?;
    match convert(&source, to.data_type(), "items") {
        Err(e @ ReconcileError::Cast { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("'items.element.n'"), "{msg}");
            assert!(msg.contains("offending value: 0.1"), "{msg}");
            assert!(msg.contains("allow_lossy_casts"), "{msg}");
        }
        other => panic!("expected a cast error, got {other:?}"),
    }
    // The first row alone is exact.
    let out = convert(&source.slice(0, 2), to.data_type(), "items")?;
    assert_eq!(&out, &build(&rows[..2], &to, false)?);
    Ok(())
}

#[test]
fn nulls_in_required_nested_fields_name_the_path() -> TestResult {
    let element = |nullable| f("element", DataType::Int64, nullable);
    let from = f("l", list(true, element(true)), true);
    let rows = vec![V::List(vec![V::Int(1), V::Null]), V::Null];
    let source = build(&rows, &from, true)?;
    match convert(&source, &list(false, element(false)), "l") {
        Err(ReconcileError::NullInRequired { column, nulls }) => {
            assert_eq!((column.as_str(), nulls), ("l.element", 1));
        }
        other => panic!("expected a null-in-required error, got {other:?}"),
    }
    // A required struct field is checked where its struct has a value, not under a null one.
    let st = |t: DataType, nullable| DataType::Struct(Fields::from(vec![f("x", t, nullable)]));
    let source = build(
        &[V::Struct(vec![V::Int(1)]), V::Null],
        &f("s", st(DataType::Int32, true), true),
        false,
    )?;
    let out = convert(&source, &st(DataType::Int64, false), "s")?;
    assert!(out.is_null(1));
    let source = build(
        &[V::Struct(vec![V::Null]), V::Null],
        &f("s", st(DataType::Int32, true), true),
        false,
    )?;
    match convert(&source, &st(DataType::Int64, false), "s") {
        Err(ReconcileError::NullInRequired { column, nulls }) => {
            assert_eq!((column.as_str(), nulls), ("s.x", 1));
        }
        other => panic!("expected a null-in-required error, got {other:?}"),
    }
    Ok(())
}
