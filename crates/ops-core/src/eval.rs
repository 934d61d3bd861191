//! Evaluates a bound Iceberg predicate over Arrow batches with SQL three-valued logic.
//!
//! iceberg's reader is not usable to decide which rows a delete removes: it rewrites
//! `NOT (x = 1)` to `x != 1`, which is NULL — so "not kept" — for a NULL `x`, and it treats a
//! column an older file lacks as matching every comparison. Here every comparison with a NULL
//! (or with a column the file predates, which projection fills with NULLs) is UNKNOWN, `AND` /
//! `OR` / `NOT` follow Kleene's logic, and NaN compares as IEEE 754 does (false, except `!=`),
//! as SQL engines, Spark and PyIceberg (through pyarrow compute) agree.
//!
//! Columns are found by field id (`PARQUET:field_id` metadata), nested ones through their
//! parent structs (a NULL parent makes the child NULL), so batches must carry the table's
//! current schema, e.g. from [`crate::scan::project_by_field_id`].

use std::collections::HashMap;
use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch, Scalar, StringArray,
    StructArray, Time64MicrosecondArray, TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow_schema::{DataType, Field};
use iceberg::expr::{BoundPredicate, BoundReference, PredicateOperator};
use iceberg::spec::{Datum, PrimitiveLiteral, PrimitiveType};

use crate::{Error, Result};

const FIELD_ID: &str = "PARQUET:field_id";

/// The predicate's value for each row of `batch`: true, false, or null for unknown.
pub fn evaluate(predicate: &BoundPredicate, batch: &RecordBatch) -> Result<BooleanArray> {
    evaluate_in(predicate, batch, None, &mut 0)
}

/// A predicate evaluated over many batches: long `IN` lists are hashed once, not per batch
/// (an upsert's delete filter holds one literal per updated key).
pub struct Evaluator {
    predicate: BoundPredicate,
    /// By the `IN` list's position in the predicate (pre-order) and the column's type.
    sets: std::sync::Mutex<HashMap<(usize, DataType), Arc<LiteralSet>>>,
}

type LiteralSet = std::collections::HashSet<Box<[u8]>>;

impl Evaluator {
    /// Prepares `predicate`.
    pub fn new(predicate: BoundPredicate) -> Self {
        Self {
            predicate,
            sets: std::sync::Mutex::new(HashMap::new()),
        }
    }

    /// [`evaluate`] of the prepared predicate.
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        evaluate_in(&self.predicate, batch, Some(self), &mut 0)
    }
}

fn evaluate_in(
    predicate: &BoundPredicate,
    batch: &RecordBatch,
    prepared: Option<&Evaluator>,
    sets_seen: &mut usize,
) -> Result<BooleanArray> {
    let rows = batch.num_rows();
    Ok(match predicate {
        BoundPredicate::AlwaysTrue => BooleanArray::from(vec![true; rows]),
        BoundPredicate::AlwaysFalse => BooleanArray::from(vec![false; rows]),
        BoundPredicate::And(e) => {
            let [l, r] = e.inputs();
            let l = evaluate_in(l, batch, prepared, sets_seen)?;
            and_kleene(&l, &evaluate_in(r, batch, prepared, sets_seen)?)?
        }
        BoundPredicate::Or(e) => {
            let [l, r] = e.inputs();
            let l = evaluate_in(l, batch, prepared, sets_seen)?;
            or_kleene(&l, &evaluate_in(r, batch, prepared, sets_seen)?)?
        }
        BoundPredicate::Not(e) => {
            let [inner] = e.inputs();
            not(&evaluate_in(inner, batch, prepared, sets_seen)?)?
        }
        BoundPredicate::Unary(e) => {
            let column = column(batch, e.term())?;
            match e.op() {
                PredicateOperator::IsNull => is_null(&column)?,
                PredicateOperator::NotNull => is_not_null(&column)?,
                PredicateOperator::IsNan => nan_mask(&column)?,
                PredicateOperator::NotNan => not(&nan_mask(&column)?)?,
                op => return Err(unsupported(op)),
            }
        }
        BoundPredicate::Binary(e) => {
            let column = column(batch, e.term())?;
            compare(&column, e.op(), e.literal())?
        }
        BoundPredicate::Set(e) => {
            let column = column(batch, e.term())?;
            let floating = matches!(
                column.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            );
            let position = *sets_seen;
            *sets_seen += 1;
            let any = if e.literals().len() > SET_SCAN_MAX && !floating {
                let key = (position, column.data_type().clone());
                let cached = prepared.and_then(|p| {
                    p.sets
                        .lock()
                        .unwrap_or_else(|poison| poison.into_inner())
                        .get(&key)
                        .cloned()
                });
                let set = match cached {
                    Some(set) => set,
                    None => {
                        let set = Arc::new(literal_set(&column, e.literals())?);
                        if let Some(p) = prepared {
                            p.sets
                                .lock()
                                .unwrap_or_else(|poison| poison.into_inner())
                                .insert(key, set.clone());
                        }
                        set
                    }
                };
                member_of(&column, &set)?
            } else {
                let mut any = BooleanArray::from(vec![false; rows]);
                for literal in e.literals() {
                    any = or_kleene(&any, &compare(&column, PredicateOperator::Eq, literal)?)?;
                }
                any
            };
            // `x IN ()` is false; with a NULL x, `x IN (..)` and `x NOT IN (..)` are unknown.
            let nulls = is_null(&column)?;
            let any = with_nulls(&any, &nulls)?;
            match e.op() {
                PredicateOperator::In => any,
                PredicateOperator::NotIn => not(&any)?,
                op => return Err(unsupported(op)),
            }
        }
    })
}

/// Up to this many literals an `IN` list is compared one by one; beyond, by hashing.
const SET_SCAN_MAX: usize = 16;

/// `column IN literals` by hash lookup of arrow's row encoding: linear in rows whatever the
/// number of literals (an upsert's delete filter holds one literal per updated key). Only for
/// types whose row encoding equality is SQL equality — floats (NaN, -0.0) stay on the
/// comparison path.
fn literal_set<'a>(
    column: &ArrayRef,
    literals: impl IntoIterator<Item = &'a Datum>,
) -> Result<LiteralSet> {
    use arrow_row::{RowConverter, SortField};
    let literals: Vec<&Datum> = literals.into_iter().collect();
    // The common key types in one array at once; others one literal at a time.
    let longs: Option<Vec<i64>> = literals
        .iter()
        .map(|l| match (l.data_type(), l.literal()) {
            (PrimitiveType::Long, PrimitiveLiteral::Long(v)) => Some(*v),
            _ => None,
        })
        .collect();
    let ints: Option<Vec<i32>> = literals
        .iter()
        .map(|l| match (l.data_type(), l.literal()) {
            (PrimitiveType::Int, PrimitiveLiteral::Int(v)) => Some(*v),
            _ => None,
        })
        .collect();
    let strings: Option<Vec<&str>> = literals
        .iter()
        .map(|l| match (l.data_type(), l.literal()) {
            (PrimitiveType::String, PrimitiveLiteral::String(v)) => Some(v.as_str()),
            _ => None,
        })
        .collect();
    let values: ArrayRef = if let Some(v) = longs {
        Arc::new(Int64Array::from(v))
    } else if let Some(v) = ints {
        Arc::new(Int32Array::from(v))
    } else if let Some(v) = strings {
        Arc::new(StringArray::from(v))
    } else {
        let values = literals
            .iter()
            .map(|l| literal_array(l))
            .collect::<Result<Vec<_>>>()?;
        let refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
        arrow_select::concat::concat(&refs)?
    };
    let values = arrow_cast::cast(&values, column.data_type())?;
    let converter = RowConverter::new(vec![SortField::new(column.data_type().clone())])?;
    let wanted = converter.convert_columns(&[values])?;
    Ok(wanted.iter().map(|r| Box::from(r.as_ref())).collect())
}

/// Membership of each row of `column` in `set` (from [`literal_set`] for the same type).
fn member_of(column: &ArrayRef, set: &LiteralSet) -> Result<BooleanArray> {
    use arrow_row::{RowConverter, SortField};
    let converter = RowConverter::new(vec![SortField::new(column.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(column))?;
    Ok((0..column.len())
        .map(|i| (!column.is_null(i)).then(|| set.contains(rows.row(i).as_ref())))
        .collect())
}

/// Rows for which `result` is not TRUE: false or unknown.
pub fn not_true(result: &BooleanArray) -> BooleanArray {
    result
        .iter()
        .map(|v| Some(v != Some(true)))
        .collect::<BooleanArray>()
}

fn unsupported(op: PredicateOperator) -> Error {
    Error::InvalidInput(format!("filter operator {op} is not supported here"))
}

/// Nulls wherever `nulls` is true, `values` elsewhere.
fn with_nulls(values: &BooleanArray, nulls: &BooleanArray) -> Result<BooleanArray> {
    Ok(values
        .iter()
        .zip(nulls.iter())
        .map(|(v, n)| if n == Some(true) { None } else { v })
        .collect())
}

fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

/// The column with `reference`'s field id, searched through structs.
fn column(batch: &RecordBatch, reference: &BoundReference) -> Result<ArrayRef> {
    let id = reference.field().id;
    let schema = batch.schema();
    for (field, array) in schema.fields().iter().zip(batch.columns()) {
        if let Some(found) = find(field, array, id)? {
            return Ok(found);
        }
    }
    // The batch carries the current schema, so a field it lacks was dropped: all NULL.
    Ok(arrow_array::new_null_array(
        &iceberg::arrow::type_to_arrow_type(&iceberg::spec::Type::Primitive(
            reference
                .field()
                .field_type
                .as_primitive_type()
                .cloned()
                .unwrap_or(PrimitiveType::String),
        ))?,
        batch.num_rows(),
    ))
}

/// The column of `batch` with field id `id`, searched through structs (NULL where a parent
/// struct is), or `None` when the batch has no such column outside lists and maps.
pub fn column_by_field_id(batch: &RecordBatch, id: i32) -> Result<Option<ArrayRef>> {
    let schema = batch.schema();
    for (field, array) in schema.fields().iter().zip(batch.columns()) {
        if let Some(found) = find(field, array, id)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

fn find(field: &Field, array: &ArrayRef, id: i32) -> Result<Option<ArrayRef>> {
    if field_id(field) == Some(id) {
        return Ok(Some(array.clone()));
    }
    let DataType::Struct(children) = field.data_type() else {
        return Ok(None);
    };
    let parent: &StructArray = array.as_struct();
    for (i, child) in children.iter().enumerate() {
        if let Some(found) = find(child, parent.column(i), id)? {
            return Ok(Some(match parent.nulls() {
                Some(_) => arrow_select::nullif::nullif(&found, &is_null(parent)?)?,
                None => found,
            }));
        }
    }
    Ok(None)
}

/// True where the value is NaN, null where it is null, false otherwise (non-float: never NaN).
fn nan_mask(column: &ArrayRef) -> Result<BooleanArray> {
    Ok(match column.data_type() {
        DataType::Float32 => column
            .as_primitive::<Float32Type>()
            .iter()
            .map(|v| v.map(f32::is_nan))
            .collect(),
        DataType::Float64 => column
            .as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(f64::is_nan))
            .collect(),
        _ => column.logical_nulls().map_or_else(
            || BooleanArray::from(vec![false; column.len()]),
            |n| n.iter().map(|valid| valid.then_some(false)).collect(),
        ),
    })
}

fn compare(column: &ArrayRef, op: PredicateOperator, literal: &Datum) -> Result<BooleanArray> {
    use arrow_ord::cmp;
    if matches!(
        op,
        PredicateOperator::StartsWith | PredicateOperator::NotStartsWith
    ) {
        let PrimitiveLiteral::String(prefix) = literal.literal() else {
            return Err(Error::InvalidInput(format!(
                "{op} needs a string, got {literal}"
            )));
        };
        let strings = arrow_cast::cast(column, &DataType::Utf8)?;
        let starts: BooleanArray = strings
            .as_string::<i32>()
            .iter()
            .map(|v| v.map(|s| s.starts_with(prefix.as_str())))
            .collect();
        return Ok(if op == PredicateOperator::StartsWith {
            starts
        } else {
            not(&starts)?
        });
    }
    let scalar = arrow_cast::cast(&literal_array(literal)?, column.data_type())?;
    // arrow compares floats by IEEE total order, where -0.0 < +0.0; SQL and pyarrow call them
    // equal. Adding +0.0 turns -0.0 into +0.0 and leaves every other value as it is.
    let (column, scalar) = match column.data_type() {
        DataType::Float32 | DataType::Float64 => {
            let zero = Scalar::new(arrow_cast::cast(
                &(Arc::new(Float64Array::from(vec![0.0])) as ArrayRef),
                column.data_type(),
            )?);
            (
                arrow_arith::numeric::add(column, &zero)?,
                arrow_arith::numeric::add(&scalar, &zero)?,
            )
        }
        _ => (column.clone(), scalar),
    };
    let column = &column;
    let scalar = Scalar::new(scalar);
    let result = match op {
        PredicateOperator::LessThan => cmp::lt(column, &scalar)?,
        PredicateOperator::LessThanOrEq => cmp::lt_eq(column, &scalar)?,
        PredicateOperator::GreaterThan => cmp::gt(column, &scalar)?,
        PredicateOperator::GreaterThanOrEq => cmp::gt_eq(column, &scalar)?,
        PredicateOperator::Eq => cmp::eq(column, &scalar)?,
        PredicateOperator::NotEq => cmp::neq(column, &scalar)?,
        op => return Err(unsupported(op)),
    };
    // arrow orders NaN above every number; IEEE (and SQL engines) say every comparison with
    // NaN is false except `!=`.
    if matches!(column.data_type(), DataType::Float32 | DataType::Float64) {
        let nan = nan_mask(column)?;
        let fixed: BooleanArray = result
            .iter()
            .zip(nan.iter())
            .map(|(r, n)| match n {
                Some(true) => Some(op == PredicateOperator::NotEq),
                _ => r,
            })
            .collect();
        return Ok(fixed);
    }
    Ok(result)
}

/// A one-element Arrow array holding `datum`, in the type iceberg maps its type to.
pub(crate) fn literal_array(datum: &Datum) -> Result<ArrayRef> {
    typed_literal_array(datum.data_type(), datum.literal())
}

/// A one-element Arrow array holding `literal` as a value of `ty`, in the type iceberg maps
/// `ty` to.
pub(crate) fn typed_literal_array(
    ty: &PrimitiveType,
    literal: &PrimitiveLiteral,
) -> Result<ArrayRef> {
    let bad = || Error::InvalidInput(format!("literal {literal:?} does not fit its type {ty}"));
    let array: ArrayRef = match (ty, literal) {
        (PrimitiveType::Boolean, PrimitiveLiteral::Boolean(v)) => {
            Arc::new(BooleanArray::from(vec![*v]))
        }
        (PrimitiveType::Int, PrimitiveLiteral::Int(v)) => Arc::new(Int32Array::from(vec![*v])),
        (PrimitiveType::Long, PrimitiveLiteral::Long(v)) => Arc::new(Int64Array::from(vec![*v])),
        (PrimitiveType::Float, PrimitiveLiteral::Float(v)) => {
            Arc::new(Float32Array::from(vec![v.0]))
        }
        (PrimitiveType::Double, PrimitiveLiteral::Double(v)) => {
            Arc::new(Float64Array::from(vec![v.0]))
        }
        (PrimitiveType::Date, PrimitiveLiteral::Int(v)) => Arc::new(Date32Array::from(vec![*v])),
        (PrimitiveType::Time, PrimitiveLiteral::Long(v)) => {
            Arc::new(Time64MicrosecondArray::from(vec![*v]))
        }
        (PrimitiveType::Timestamp, PrimitiveLiteral::Long(v)) => {
            Arc::new(TimestampMicrosecondArray::from(vec![*v]))
        }
        (PrimitiveType::Timestamptz, PrimitiveLiteral::Long(v)) => {
            Arc::new(TimestampMicrosecondArray::from(vec![*v]).with_timezone("+00:00"))
        }
        (PrimitiveType::TimestampNs, PrimitiveLiteral::Long(v)) => {
            Arc::new(TimestampNanosecondArray::from(vec![*v]))
        }
        (PrimitiveType::TimestamptzNs, PrimitiveLiteral::Long(v)) => {
            Arc::new(TimestampNanosecondArray::from(vec![*v]).with_timezone("+00:00"))
        }
        (PrimitiveType::String, PrimitiveLiteral::String(v)) => {
            Arc::new(StringArray::from(vec![v.as_str()]))
        }
        (PrimitiveType::Uuid, PrimitiveLiteral::UInt128(v)) => Arc::new(
            FixedSizeBinaryArray::try_from_iter(std::iter::once(v.to_be_bytes()))?,
        ),
        (PrimitiveType::Fixed(_), PrimitiveLiteral::Binary(v)) => Arc::new(
            FixedSizeBinaryArray::try_from_iter(std::iter::once(v.as_slice()))?,
        ),
        (PrimitiveType::Binary, PrimitiveLiteral::Binary(v)) => {
            Arc::new(BinaryArray::from_vec(vec![v.as_slice()]))
        }
        (PrimitiveType::Decimal { precision, scale }, PrimitiveLiteral::Int128(v)) => {
            Arc::new(Decimal128Array::from(vec![*v]).with_precision_and_scale(
                u8::try_from(*precision).map_err(|_| bad())?,
                i8::try_from(*scale).map_err(|_| bad())?,
            )?)
        }
        _ => return Err(bad()),
    };
    Ok(array)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_schema::Schema as ArrowSchema;
    use iceberg::expr::{Bind, Reference};
    use iceberg::spec::{NestedField, Schema, Type};

    use super::*;

    fn schema() -> iceberg::spec::SchemaRef {
        Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "x", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "s", Type::Primitive(PrimitiveType::String)).into(),
                    NestedField::optional(3, "f", Type::Primitive(PrimitiveType::Double)).into(),
                ])
                .build()
                .unwrap(),
        )
    }

    fn batch() -> RecordBatch {
        let field = |name: &str, id: i32, t: DataType| {
            Field::new(name, t, true)
                .with_metadata(HashMap::from([(FIELD_ID.to_string(), id.to_string())]))
        };
        let schema = ArrowSchema::new(vec![
            field("x", 1, DataType::Int64),
            field("s", 2, DataType::Utf8),
            field("f", 3, DataType::Float64),
        ]);
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(10)])),
                Arc::new(StringArray::from(vec![Some("eu"), Some("us"), None])),
                Arc::new(Float64Array::from(vec![Some(f64::NAN), Some(1.0), None])),
            ],
        )
        .unwrap()
    }

    fn eval(p: iceberg::expr::Predicate) -> Vec<Option<bool>> {
        let bound = p.bind(schema(), true).unwrap();
        evaluate(&bound, &batch()).unwrap().iter().collect()
    }

    #[test]
    fn null_comparisons_are_unknown_and_negation_keeps_them_unknown() {
        let eq = Reference::new("s").equal_to(Datum::string("eu"));
        assert_eq!(eval(eq.clone()), vec![Some(true), Some(false), None]);
        assert_eq!(eval(!eq), vec![Some(false), Some(true), None]);
        let gt = Reference::new("x").greater_than(Datum::long(5));
        assert_eq!(eval(gt), vec![Some(false), None, Some(true)]);
    }

    #[test]
    fn long_in_lists_hash_and_agree_with_comparison() {
        // Past SET_SCAN_MAX literals `IN` goes through the hash lookup: same answers, NULL stays
        // unknown, NOT IN its negation.
        let many: Vec<Datum> = (100..140).chain([10]).map(Datum::long).collect();
        assert!(many.len() > SET_SCAN_MAX);
        let r#in = Reference::new("x").is_in(many.clone());
        assert_eq!(eval(r#in), vec![Some(false), None, Some(true)]);
        let not_in = Reference::new("x").is_not_in(many);
        assert_eq!(eval(not_in), vec![Some(true), None, Some(false)]);
        let strings: Vec<Datum> = (0..30)
            .map(|i| Datum::string(format!("r{i}")))
            .chain([Datum::string("us")])
            .collect();
        let r#in = Reference::new("s").is_in(strings);
        assert_eq!(eval(r#in.clone()), vec![Some(false), Some(true), None]);
        // Prepared once, hashed once, right on every batch.
        let ev = Evaluator::new(r#in.bind(schema(), true).unwrap());
        for _ in 0..3 {
            let got: Vec<Option<bool>> = ev.evaluate(&batch()).unwrap().iter().collect();
            assert_eq!(got, vec![Some(false), Some(true), None]);
        }
        assert_eq!(ev.sets.lock().unwrap().len(), 1);
    }

    #[test]
    fn kleene_and_or() {
        let a = Reference::new("x").greater_than(Datum::long(5)); // F, U, T
        let b = Reference::new("s").equal_to(Datum::string("us")); // F, T, U
        assert_eq!(
            eval(a.clone().and(b.clone())),
            vec![Some(false), None, None]
        );
        assert_eq!(eval(a.or(b)), vec![Some(false), Some(true), Some(true)]);
    }

    #[test]
    fn nan_compares_false_except_not_equal() {
        let gt = Reference::new("f").greater_than(Datum::double(0.0));
        assert_eq!(eval(gt), vec![Some(false), Some(true), None]);
        let ne = Reference::new("f").not_equal_to(Datum::double(0.0));
        assert_eq!(eval(ne), vec![Some(true), Some(true), None]);
        assert_eq!(
            eval(Reference::new("f").is_nan()),
            vec![Some(true), Some(false), None]
        );
    }

    #[test]
    fn negative_zero_equals_zero() {
        let field = Field::new("f", DataType::Float64, true)
            .with_metadata(HashMap::from([(FIELD_ID.to_string(), "3".to_string())]));
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(vec![field])),
            vec![Arc::new(Float64Array::from(vec![
                Some(-0.0),
                Some(0.0),
                Some(1.0),
                Some(f64::NAN),
                None,
            ]))],
        )
        .unwrap();
        let run = |p: iceberg::expr::Predicate| -> Vec<Option<bool>> {
            evaluate(&p.bind(schema(), true).unwrap(), &batch)
                .unwrap()
                .iter()
                .collect()
        };
        let f = || Reference::new("f");
        let (t, n) = (Some(true), Some(false));
        assert_eq!(
            run(f().equal_to(Datum::double(0.0))),
            vec![t, t, n, n, None]
        );
        assert_eq!(
            run(f().equal_to(Datum::double(-0.0))),
            vec![t, t, n, n, None]
        );
        assert_eq!(
            run(f().less_than(Datum::double(0.0))),
            vec![n, n, n, n, None]
        );
        assert_eq!(
            run(f().greater_than_or_equal_to(Datum::double(0.0))),
            vec![t, t, t, n, None]
        );
        assert_eq!(
            run(f().is_in([Datum::double(0.0), Datum::double(5.0)])),
            vec![t, t, n, n, None]
        );
    }

    #[test]
    fn in_and_not_in_with_nulls() {
        let isin = Reference::new("x").is_in([Datum::long(1), Datum::long(2)]);
        assert_eq!(eval(isin), vec![Some(true), None, Some(false)]);
        let notin = Reference::new("x").is_not_in([Datum::long(1), Datum::long(2)]);
        assert_eq!(eval(notin), vec![Some(false), None, Some(true)]);
        let starts = Reference::new("s").starts_with(Datum::string("e"));
        assert_eq!(eval(starts), vec![Some(true), Some(false), None]);
        assert_eq!(
            not_true(&BooleanArray::from(vec![Some(true), Some(false), None]))
                .iter()
                .collect::<Vec<_>>(),
            vec![Some(false), Some(true), Some(true)]
        );
    }
}
