//! Arrow's row format for every column an Iceberg table can hold, maps included.
//!
//! `arrow_row` turns the rows of some columns into byte strings that compare and hash as the
//! values do — what an upsert matches rows with and `verify` hashes rows with — but it has no
//! map support. A map column is, underneath, a list of `(key, value)` entry structs, so here it is
//! encoded as that list, with the entries of each map sorted by key: two maps holding the same
//! entries in another order encode alike, since an Iceberg map has no order. Maps nested in
//! structs, lists and map values are converted the same way; every other column is used as it is.
//!
//! Use [`encodable`] on each column (or [`converter`] + [`convert`]) before `arrow_row`; the
//! converted type is a function of the input type alone ([`encodable_type`]), so a converter
//! built from one batch's types encodes every batch of the same schema.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, GenericListArray, MapArray, OffsetSizeTrait, StructArray,
    UInt32Array,
};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, Field, FieldRef, Fields};

use crate::Result;

/// Whether `data_type` holds a map anywhere (the only type `arrow_row` cannot encode).
pub fn has_map(data_type: &DataType) -> bool {
    match data_type {
        DataType::Map(..) => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_map(f.data_type())),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _) => has_map(f.data_type()),
        DataType::Dictionary(_, v) => has_map(v),
        _ => false,
    }
}

/// The type [`encodable`] turns a column of `data_type` into.
pub fn encodable_type(data_type: &DataType) -> DataType {
    if !has_map(data_type) {
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
        DataType::Dictionary(_, v) => encodable_type(v),
        other => other.clone(),
    }
}

/// `field` with its type made encodable (`nullable`: also allow nulls, as the list of a map's
/// entries does not promise their absence the way a map's entries field does).
fn retyped(field: &FieldRef, nullable: bool) -> FieldRef {
    Arc::new(
        Field::new(
            field.name(),
            encodable_type(field.data_type()),
            field.is_nullable() || nullable,
        )
        .with_metadata(field.metadata().clone()),
    )
}

/// `array` in a form `arrow_row` encodes (see the module docs): maps become lists of their
/// entries sorted by key; everything else is returned as it is.
pub fn encodable(array: &ArrayRef) -> Result<ArrayRef> {
    if !has_map(array.data_type()) {
        return Ok(array.clone());
    }
    Ok(match array.data_type() {
        DataType::Map(entries_field, _) => {
            let map: &MapArray = array.as_map();
            let entries: ArrayRef = Arc::new(map.entries().clone());
            let entries = encodable(&entries)?;
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
                .map(encodable)
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
                encodable(l.values())?,
                l.nulls().cloned(),
            )?)
        }
        DataType::Dictionary(..) => {
            // A dictionary of nested values is rare; decode it and convert the values.
            let plain = arrow_cast::cast(array, &dictionary_value_type(array.data_type()))?;
            encodable(&plain)?
        }
        _ => array.clone(),
    })
}

fn dictionary_value_type(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Dictionary(_, v) => v.as_ref().clone(),
        other => other.clone(),
    }
}

fn list<O: OffsetSizeTrait>(array: &ArrayRef, field: &FieldRef) -> Result<ArrayRef> {
    let l = array.as_list::<O>();
    Ok(Arc::new(GenericListArray::<O>::try_new(
        retyped(field, false),
        l.offsets().clone(),
        encodable(l.values())?,
        l.nulls().cloned(),
    )?))
}

/// `entries` (a struct of key and value) with each map's entries — the ranges of `offsets` —
/// sorted by key (in arrow's row order, the order every reader agrees on).
fn sort_entries(entries: &ArrayRef, offsets: &[i32]) -> Result<ArrayRef> {
    let keys = entries.as_struct().column(0).clone();
    let converter = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?;
    let rows = converter.convert_columns(&[keys])?;
    let mut order: Vec<u32> = (0..entries.len() as u32).collect();
    let mut sorted_already = true;
    for w in offsets.windows(2) {
        let (lo, hi) = (w[0] as usize, w[1] as usize);
        let run = &mut order[lo..hi];
        if run
            .windows(2)
            .all(|p| rows.row(p[0] as usize) <= rows.row(p[1] as usize))
        {
            continue;
        }
        sorted_already = false;
        run.sort_by(|a, b| rows.row(*a as usize).cmp(&rows.row(*b as usize)));
    }
    if sorted_already {
        return Ok(entries.clone());
    }
    Ok(arrow_select::take::take(
        entries.as_ref(),
        &UInt32Array::from(order),
        None,
    )?)
}

/// A row converter for columns of `types` after [`encodable`].
pub fn converter<'a>(types: impl IntoIterator<Item = &'a DataType>) -> Result<RowConverter> {
    Ok(RowConverter::new(
        types
            .into_iter()
            .map(|t| SortField::new(encodable_type(t)))
            .collect(),
    )?)
}

/// `columns` encoded by `converter` (from [`converter`] over their types), maps converted.
pub fn convert(converter: &RowConverter, columns: &[ArrayRef]) -> Result<Rows> {
    let columns = columns.iter().map(encodable).collect::<Result<Vec<_>>>()?;
    Ok(converter.convert_columns(&columns)?)
}

#[cfg(test)]
mod tests {
    use arrow_array::builder::{Int64Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::{Int64Array, StringArray};

    use super::*;

    /// Maps `[{a:1, b:2}, {b:2, a:1}, null, {}, {a:1, b:3}]`.
    fn maps() -> ArrayRef {
        let mut b = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
        for entries in [
            Some(vec![("a", 1), ("b", 2)]),
            Some(vec![("b", 2), ("a", 1)]),
            None,
            Some(vec![]),
            Some(vec![("a", 1), ("b", 3)]),
        ] {
            match entries {
                Some(es) => {
                    for (k, v) in es {
                        b.keys().append_value(k);
                        b.values().append_value(v);
                    }
                    b.append(true).unwrap();
                }
                None => b.append(false).unwrap(),
            }
        }
        Arc::new(b.finish())
    }

    #[test]
    fn maps_encode_by_their_entries_whatever_their_order() {
        let m = maps();
        assert!(RowConverter::new(vec![SortField::new(m.data_type().clone())]).is_err());
        let conv = converter([m.data_type()]).unwrap();
        let rows = convert(&conv, std::slice::from_ref(&m)).unwrap();
        assert_eq!(rows.row(0), rows.row(1), "same entries, other order");
        assert_ne!(rows.row(0), rows.row(4), "another value");
        assert_ne!(rows.row(2), rows.row(3), "NULL map is not the empty map");
        assert_ne!(rows.row(0), rows.row(3));
        // The converted type is the one `encodable_type` promises.
        assert_eq!(
            encodable(&m).unwrap().data_type(),
            &encodable_type(m.data_type())
        );
    }

    #[test]
    fn maps_nested_in_structs_and_lists_and_sliced_arrays_encode() {
        let m = maps();
        let s: ArrayRef = Arc::new(StructArray::from(vec![
            (
                Arc::new(Field::new("id", DataType::Int64, false)),
                Arc::new(Int64Array::from(vec![1, 1, 2, 3, 1])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("m", m.data_type().clone(), true)),
                m.clone(),
            ),
        ]));
        let conv = converter([s.data_type()]).unwrap();
        let rows = convert(&conv, std::slice::from_ref(&s)).unwrap();
        assert_eq!(rows.row(0), rows.row(1));
        assert_ne!(rows.row(0), rows.row(4));
        // A slice (offsets not starting at 0) encodes as the whole does.
        let sliced = convert(&conv, &[s.slice(1, 4)]).unwrap();
        assert_eq!(sliced.row(0), rows.row(1));
        assert_eq!(sliced.row(3), rows.row(4));

        let mut lb = ListBuilder::new(MapBuilder::new(
            None,
            StringBuilder::new(),
            Int64Builder::new(),
        ));
        for order in [["x", "y"], ["y", "x"]] {
            for k in order {
                lb.values().keys().append_value(k);
                lb.values().values().append_value(7);
            }
            lb.values().append(true).unwrap();
            lb.append(true);
        }
        let l: ArrayRef = Arc::new(lb.finish());
        let conv = converter([l.data_type()]).unwrap();
        let rows = convert(&conv, &[l]).unwrap();
        assert_eq!(rows.row(0), rows.row(1));
        let plain: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        assert!(Arc::ptr_eq(&encodable(&plain).unwrap(), &plain));
    }
}
