//! Columns in the form `verify` encodes and hashes rows in.
//!
//! `arrow_row` gives every value a byte string that is equal exactly when the values are, except
//! in two places that matter here:
//! - it has no map support. A map is, underneath, a list of `(key, value)` entry structs, so it is
//!   encoded as that list with each map's entries sorted by key: an Iceberg map has no order, and
//!   two maps holding the same entries in another order are the same value.
//! - floating point is encoded by its bits, so two NaNs with different payloads would differ.
//!   Every NaN is made the one canonical NaN (NaN equals NaN, as Iceberg's and pyarrow's equality
//!   of a copied value has it); -0.0 and 0.0 stay different (Iceberg orders -0.0 before 0.0, a
//!   copy keeps the sign).
//!
//! The converted type is a function of the input type alone ([`canonical_type`]), so a converter
//! built from the schema encodes every batch of it. Recursion follows the type's nesting, never
//! the data.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, GenericListArray, OffsetSizeTrait, StructArray,
    UInt32Array,
};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, FieldRef, Fields};

use crate::Result;

/// Whether `data_type` needs converting (holds a map or floating point anywhere).
fn needs(data_type: &DataType) -> bool {
    match data_type {
        DataType::Map(..) | DataType::Float32 | DataType::Float64 => true,
        DataType::Struct(fields) => fields.iter().any(|f| needs(f.data_type())),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => needs(f.data_type()),
        DataType::Dictionary(_, v) => needs(v),
        _ => false,
    }
}

/// The type [`canonical`] turns a column of `data_type` into.
pub(super) fn canonical_type(data_type: &DataType) -> DataType {
    if !needs(data_type) {
        return data_type.clone();
    }
    match data_type {
        DataType::Map(entries, _) => DataType::List(retyped(entries, true)),
        DataType::Struct(fields) => {
            DataType::Struct(fields.iter().map(|f| retyped(f, false)).collect::<Fields>())
        }
        DataType::List(f) => DataType::List(retyped(f, false)),
        DataType::LargeList(f) => DataType::LargeList(retyped(f, false)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(retyped(f, false), *n),
        DataType::Dictionary(_, v) => canonical_type(v),
        other => other.clone(),
    }
}

/// `field` with its type made canonical (`nullable`: a list of a map's entries may not promise
/// non-null entries the way the map's entries field does).
fn retyped(field: &FieldRef, nullable: bool) -> FieldRef {
    Arc::new(
        Field::new(
            field.name(),
            canonical_type(field.data_type()),
            field.is_nullable() || nullable,
        )
        .with_metadata(field.metadata().clone()),
    )
}

/// A row converter for columns of `types` after [`canonical`].
pub(super) fn converter<'a>(types: impl IntoIterator<Item = &'a DataType>) -> Result<RowConverter> {
    Ok(RowConverter::new(
        types
            .into_iter()
            .map(|t| SortField::new(canonical_type(t)))
            .collect(),
    )?)
}

/// `array` as `arrow_row` should encode it (see the module docs).
pub(super) fn canonical(array: &ArrayRef) -> Result<ArrayRef> {
    if !needs(array.data_type()) {
        return Ok(array.clone());
    }
    Ok(match array.data_type() {
        DataType::Float32 => Arc::new(
            array
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| if v.is_nan() { f32::NAN } else { v }),
        ),
        DataType::Float64 => Arc::new(
            array
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| if v.is_nan() { f64::NAN } else { v }),
        ),
        DataType::Map(entries_field, _) => {
            let map = array.as_map();
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = canonical(&entries)?;
            let sorted = sort_entries(&entries, map.value_offsets())?;
            Arc::new(GenericListArray::<i32>::try_new(
                retyped(entries_field, true),
                map.offsets().clone(),
                sorted,
                map.nulls().cloned(),
            )?)
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let columns = s
                .columns()
                .iter()
                .map(canonical)
                .collect::<Result<Vec<_>>>()?;
            let fields: Fields = fields.iter().map(|f| retyped(f, false)).collect();
            Arc::new(StructArray::try_new(fields, columns, s.nulls().cloned())?)
        }
        DataType::List(f) => list::<i32>(array, f)?,
        DataType::LargeList(f) => list::<i64>(array, f)?,
        DataType::FixedSizeList(f, n) => {
            let l = array.as_fixed_size_list();
            Arc::new(FixedSizeListArray::try_new(
                retyped(f, false),
                *n,
                canonical(l.values())?,
                l.nulls().cloned(),
            )?)
        }
        DataType::Dictionary(_, v) => canonical(&arrow_cast::cast(array, v)?)?,
        // List views do not come out of Iceberg readers; arrow_row refuses them clearly.
        _ => array.clone(),
    })
}

fn list<O: OffsetSizeTrait>(array: &ArrayRef, field: &FieldRef) -> Result<ArrayRef> {
    let l = array.as_list::<O>();
    Ok(Arc::new(GenericListArray::<O>::try_new(
        retyped(field, false),
        l.offsets().clone(),
        canonical(l.values())?,
        l.nulls().cloned(),
    )?))
}

/// `entries` (a struct of key and value) with the entries of each map — the ranges of
/// `offsets` — in the row order of their keys (map keys are unique, so that order is total).
fn sort_entries(entries: &ArrayRef, offsets: &[i32]) -> Result<ArrayRef> {
    let keys = entries.as_struct().column(0).clone();
    let converter = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?;
    let rows = converter.convert_columns(&[keys])?;
    let mut order: Vec<u32> = (0..entries.len() as u32).collect();
    let mut moved = false;
    for w in offsets.windows(2) {
        let (lo, hi) = (w[0] as usize, w[1] as usize);
        let Some(run) = order.get_mut(lo..hi) else {
            continue;
        };
        if run
            .windows(2)
            .all(|p| rows.row(p[0] as usize) <= rows.row(p[1] as usize))
        {
            continue;
        }
        moved = true;
        run.sort_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
    }
    if !moved {
        return Ok(entries.clone());
    }
    Ok(arrow_select::take::take(
        entries.as_ref(),
        &UInt32Array::from(order),
        None,
    )?)
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{Int64Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::{Float64Array, StructArray};
    use arrow_schema::Field;

    use super::*;

    fn encode(array: ArrayRef) -> Vec<Vec<u8>> {
        let converter = converter([array.data_type()]).expect("converter");
        let rows = converter
            .convert_columns(&[canonical(&array).expect("canonical")])
            .expect("rows");
        rows.iter().map(|r| r.as_ref().to_vec()).collect()
    }

    #[test]
    fn nan_is_one_value_and_negative_zero_is_not_zero() {
        let other_nan = f64::from_bits(f64::NAN.to_bits() | 1);
        assert!(other_nan.is_nan());
        let rows = encode(Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            Some(other_nan),
            Some(-0.0),
            Some(0.0),
            None,
        ])));
        assert_eq!(rows[0], rows[1]);
        assert_ne!(rows[2], rows[3]);
        assert_ne!(rows[4], rows[3]);
    }

    /// map<string, list<long>> (the corpus's), rows: {a:[1], b:[2]}, {b:[2], a:[1]}, {a:[1], b:[3]}, NULL
    fn maps() -> ArrayRef {
        let mut b = MapBuilder::new(
            None,
            StringBuilder::new(),
            ListBuilder::new(Int64Builder::new()),
        );
        for entries in [
            vec![("a", 1), ("b", 2)],
            vec![("b", 2), ("a", 1)],
            vec![("a", 1), ("b", 3)],
        ] {
            for (k, v) in entries {
                b.keys().append_value(k);
                b.values().values().append_value(v);
                b.values().append(true);
            }
            b.append(true).expect("map");
        }
        b.append(false).expect("null map");
        Arc::new(b.finish())
    }

    #[test]
    fn maps_encode_by_their_entries_whatever_their_order() {
        let rows = encode(maps());
        assert_eq!(rows[0], rows[1]);
        assert_ne!(rows[0], rows[2]);
        assert_ne!(rows[0], rows[3]);
    }

    #[test]
    fn maps_inside_structs_and_sliced_arrays_encode() {
        let m = maps();
        let s: ArrayRef = Arc::new(StructArray::from(vec![(
            Arc::new(Field::new("m", m.data_type().clone(), true)),
            m,
        )]));
        let all = encode(s.clone());
        let sliced = encode(s.slice(1, 2));
        assert_eq!(all[0], all[1]);
        assert_eq!(sliced, all[1..3].to_vec());
    }
}
