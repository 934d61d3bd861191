//! Columns in the form `verify` encodes and hashes rows in.
//!
//! `arrow_row` gives every value a byte string that is equal exactly when the values are, except
//! in two places that matter here:
//! - it has no map support. [`ops_core::rows`] (which upsert's key sets use too) encodes a map as
//!   the list of its `(key, value)` entries sorted by key: an Iceberg map has no order, and two
//!   maps holding the same entries in another order are the same value.
//! - floating point is encoded by its bits, so two NaNs with different payloads would differ.
//!   Here every NaN is first made the one canonical NaN (NaN equals NaN, as Iceberg's and
//!   pyarrow's equality of a copied value has it); -0.0 and 0.0 stay different (Iceberg orders
//!   -0.0 before 0.0, a copy keeps the sign). Only verify does this: an upsert's key matching is
//!   SQL equality, where NaN matches nothing.
//!
//! The NaN step keeps every type as it is, so a converter built from the schema
//! ([`converter`]) encodes every batch of it. Recursion follows the type's nesting, never the
//! data.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, GenericListArray, MapArray, OffsetSizeTrait, StructArray,
};
use arrow_row::RowConverter;
use arrow_schema::{DataType, FieldRef};

use crate::Result;

/// Whether `data_type` holds floating point anywhere.
fn has_float(data_type: &DataType) -> bool {
    match data_type {
        // Iceberg has no half floats.
        DataType::Float32 | DataType::Float64 => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_float(f.data_type())),
        DataType::Map(f, _)
        | DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => has_float(f.data_type()),
        DataType::Dictionary(_, v) => has_float(v),
        _ => false,
    }
}

/// A row converter for columns of `types` after [`canonical`].
pub(super) fn converter<'a>(types: impl IntoIterator<Item = &'a DataType>) -> Result<RowConverter> {
    Ok(ops_core::rows::converter(types)?)
}

/// `array` as `arrow_row` should encode it (see the module docs).
pub(super) fn canonical(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(ops_core::rows::encodable(&one_nan(array)?)?)
}

/// `array` with every NaN, at any depth, the canonical NaN; its type unchanged.
pub(super) fn one_nan(array: &ArrayRef) -> Result<ArrayRef> {
    if !has_float(array.data_type()) {
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
        DataType::Map(field, ordered) => {
            let map = array.as_map();
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = one_nan(&entries)?;
            Arc::new(MapArray::try_new(
                field.clone(),
                map.offsets().clone(),
                entries.as_struct().clone(),
                map.nulls().cloned(),
                *ordered,
            )?)
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let columns = s
                .columns()
                .iter()
                .map(one_nan)
                .collect::<Result<Vec<_>>>()?;
            Arc::new(StructArray::try_new(
                fields.clone(),
                columns,
                s.nulls().cloned(),
            )?)
        }
        DataType::List(f) => list::<i32>(array, f)?,
        DataType::LargeList(f) => list::<i64>(array, f)?,
        DataType::FixedSizeList(f, n) => {
            let l = array.as_fixed_size_list();
            Arc::new(FixedSizeListArray::try_new(
                f.clone(),
                *n,
                one_nan(l.values())?,
                l.nulls().cloned(),
            )?)
        }
        DataType::Dictionary(..) => {
            let d = array.as_any_dictionary();
            d.with_values(one_nan(d.values())?)
        }
        // List views do not come out of Iceberg readers; arrow_row refuses them clearly.
        _ => array.clone(),
    })
}

fn list<O: OffsetSizeTrait>(array: &ArrayRef, field: &FieldRef) -> Result<ArrayRef> {
    let l = array.as_list::<O>();
    Ok(Arc::new(GenericListArray::<O>::try_new(
        field.clone(),
        l.offsets().clone(),
        one_nan(l.values())?,
        l.nulls().cloned(),
    )?))
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{
        Float64Builder, Int64Builder, ListBuilder, MapBuilder, StringBuilder,
    };
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

    #[test]
    fn nan_inside_a_map_value_or_a_struct_is_one_value() {
        let other_nan = f64::from_bits(f64::NAN.to_bits() | 1);
        let mut b = MapBuilder::new(None, StringBuilder::new(), Float64Builder::new());
        for v in [f64::NAN, other_nan, -0.0, 0.0] {
            b.keys().append_value("k");
            b.values().append_value(v);
            b.append(true).expect("map");
        }
        let rows = encode(Arc::new(b.finish()));
        assert_eq!(rows[0], rows[1]);
        assert_ne!(rows[2], rows[3]);
        let s: ArrayRef = Arc::new(StructArray::from(vec![(
            Arc::new(Field::new("f", DataType::Float64, true)),
            Arc::new(Float64Array::from(vec![f64::NAN, other_nan])) as ArrayRef,
        )]));
        let rows = encode(s);
        assert_eq!(rows[0], rows[1]);
    }
}
