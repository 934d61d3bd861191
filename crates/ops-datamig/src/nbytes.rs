//! `MigrationResult::bytes_moved`: the seed's `sum(chunk.nbytes)`, pyarrow's `nbytes` (Arrow
//! C++'s `ReferencedBufferSize`): the bytes of the buffer ranges a chunk references. A slice
//! counts its own rows — the offsets, values and list/map entries its rows reach — not the
//! buffers it shares with the batch it was cut from; a dictionary counts its whole dictionary.
//! arrow-rs's `get_slice_memory_size` is close but counts every list's whole child array, so a
//! sliced list or map column would be counted once per slice.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;

/// pyarrow's `RecordBatch.nbytes` of `batch` (see the module docs).
pub(crate) fn arrow_bytes(batch: &RecordBatch) -> u64 {
    batch.columns().iter().map(array_bytes).sum()
}

/// Bytes a bitmap of `len` bits from bit `offset` covers (Arrow C++ counts whole bytes).
fn covering(offset: usize, len: usize) -> u64 {
    if len == 0 {
        return 0;
    }
    ((offset + len).div_ceil(8) - offset / 8) as u64
}

fn nulls_bytes(nulls: Option<&NullBuffer>) -> u64 {
    nulls.map_or(0, |n| covering(n.offset(), n.len()))
}

/// pyarrow's `Array.nbytes`. Nested arrays are walked with an explicit stack: the depth comes
/// from the user's schema.
fn array_bytes(root: &ArrayRef) -> u64 {
    let mut total = 0u64;
    let mut stack: Vec<ArrayRef> = vec![root.clone()];
    while let Some(a) = stack.pop() {
        let len = a.len();
        let dt = a.data_type();
        if let Some(width) = dt.primitive_width() {
            total += nulls_bytes(a.nulls()) + (len * width) as u64;
            continue;
        }
        match dt {
            DataType::Null => {}
            DataType::Boolean => {
                let b = a.as_boolean();
                total += nulls_bytes(a.nulls()) + covering(b.values().offset(), len);
            }
            DataType::Utf8 => {
                let o = a.as_string::<i32>().value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 4) as u64 + span(o, len);
            }
            DataType::Binary => {
                let o = a.as_binary::<i32>().value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 4) as u64 + span(o, len);
            }
            DataType::LargeUtf8 => {
                let o = a.as_string::<i64>().value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 8) as u64 + span(o, len);
            }
            DataType::LargeBinary => {
                let o = a.as_binary::<i64>().value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 8) as u64 + span(o, len);
            }
            DataType::List(_) => {
                let l = a.as_list::<i32>();
                let o = l.value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 4) as u64;
                stack.push(child_range(l.values(), o, len));
            }
            DataType::LargeList(_) => {
                let l = a.as_list::<i64>();
                let o = l.value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 8) as u64;
                stack.push(child_range(l.values(), o, len));
            }
            DataType::Map(_, _) => {
                let m = a.as_map();
                let o = m.value_offsets();
                total += nulls_bytes(a.nulls()) + (len * 4) as u64;
                let entries: ArrayRef = std::sync::Arc::new(m.entries().clone());
                stack.push(child_range(&entries, o, len));
            }
            DataType::FixedSizeList(_, _) => {
                // arrow-rs slices a fixed-size list's values with it.
                let l = a.as_fixed_size_list();
                total += nulls_bytes(a.nulls());
                stack.push(l.values().clone());
            }
            DataType::Struct(_) => {
                // arrow-rs slices a struct's columns with it.
                total += nulls_bytes(a.nulls());
                stack.extend(a.as_struct().columns().iter().cloned());
            }
            DataType::Dictionary(_, _) => {
                let d = a.as_any_dictionary();
                stack.push(d.keys().slice(0, d.keys().len()));
                stack.push(d.values().clone());
            }
            // Views, unions, run-ends: arrow-rs's slice accounting (buffers and nulls).
            _ => {
                total += a
                    .to_data()
                    .get_slice_memory_size()
                    .unwrap_or_else(|_| a.get_array_memory_size()) as u64;
            }
        }
    }
    total
}

/// Bytes of values between the first and the last of `len + 1` offsets.
fn span<O: Copy + TryInto<i64>>(offsets: &[O], len: usize) -> u64 {
    let at = |i: usize| {
        offsets
            .get(i)
            .and_then(|o| (*o).try_into().ok())
            .unwrap_or(0i64)
    };
    (at(len) - at(0)).max(0) as u64
}

/// The values rows `0..len` reach through `offsets`, clamped to the array (a malformed array
/// counts what it has).
fn child_range<O: Copy + TryInto<i64>>(values: &ArrayRef, offsets: &[O], len: usize) -> ArrayRef {
    let at = |i: usize| {
        offsets
            .get(i)
            .and_then(|o| (*o).try_into().ok())
            .and_then(|o: i64| usize::try_from(o).ok())
            .unwrap_or(0)
    };
    let start = at(0).min(values.len());
    let end = at(len).clamp(start, values.len());
    values.slice(start, end - start)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::builder::{Int64Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::types::Int32Type;
    use arrow_array::{
        ArrayRef, BooleanArray, DictionaryArray, Int64Array, RecordBatch, StringArray, StructArray,
    };
    use arrow_schema::{DataType, Field};

    use super::arrow_bytes;

    fn batch(column: ArrayRef) -> RecordBatch {
        RecordBatch::try_from_iter([("c", column)]).expect("batch")
    }

    /// (whole, sum of ten slices of 100 rows), both pyarrow 26.0.1's `nbytes` of the same data
    /// (the figures in the tests below were computed by pyarrow).
    fn whole_and_tenths(column: ArrayRef) -> (u64, u64) {
        let b = batch(column);
        let whole = arrow_bytes(&b);
        let tenths = (0..10).map(|i| arrow_bytes(&b.slice(i * 100, 100))).sum();
        (whole, tenths)
    }

    #[test]
    fn a_slice_counts_its_own_rows_not_the_buffers_it_shares() {
        let ids = Int64Array::from_iter_values(0..1000);
        let names = StringArray::from_iter_values((0..1000).map(|i| format!("name-{i:04}")));
        let b = RecordBatch::try_from_iter([
            ("id", Arc::new(ids) as ArrayRef),
            ("name", Arc::new(names) as ArrayRef),
        ])
        .expect("batch");
        let whole = arrow_bytes(&b);
        let tenths: u64 = (0..10).map(|i| arrow_bytes(&b.slice(i * 100, 100))).sum();
        // pyarrow: 8-byte ids, one 4-byte offset per row, 9-byte names; slices add up.
        assert_eq!(whole, 21_000);
        assert_eq!(tenths, 21_000);
    }

    #[test]
    fn nulls_and_booleans_count_the_bytes_their_bits_cover() {
        let n: Int64Array = (0..1000).map(|i| (i % 3 != 0).then_some(i)).collect();
        assert_eq!(whole_and_tenths(Arc::new(n.clone())), (8125, 8130));
        // Bits 4..12 cover two bytes.
        assert_eq!(arrow_bytes(&batch(Arc::new(n)).slice(4, 8)), 66);
        let b: BooleanArray = (0..1000).map(|i| Some(i % 2 == 0)).collect();
        assert_eq!(arrow_bytes(&batch(Arc::new(b.clone()))), 125);
        assert_eq!(arrow_bytes(&batch(Arc::new(b)).slice(4, 8)), 2);
    }

    #[test]
    fn a_sliced_list_or_map_counts_only_the_entries_its_rows_reach() {
        let mut l = ListBuilder::new(Int64Builder::new());
        for i in 0..1000 {
            l.append_value([Some(i), Some(i + 1)]);
        }
        assert_eq!(whole_and_tenths(Arc::new(l.finish())), (20_000, 20_000));
        let mut m = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
        for i in 0..1000 {
            m.keys().append_value("a");
            m.values().append_value(i);
            m.append(true).expect("map row");
        }
        assert_eq!(whole_and_tenths(Arc::new(m.finish())), (17_000, 17_000));
    }

    #[test]
    fn structs_and_dictionaries_count_as_pyarrow_does() {
        let a = Int64Array::from_iter_values(0..1000);
        let s = StringArray::from_iter_values((0..1000).map(|i| i.to_string()));
        let st = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int64, true)),
                Arc::new(a) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Utf8, true)),
                Arc::new(s) as ArrayRef,
            ),
        ]);
        assert_eq!(whole_and_tenths(Arc::new(st)), (14_890, 14_890));
        // The dictionary counts whole in every slice.
        let d: DictionaryArray<Int32Type> = ["x", "y"].iter().cycle().take(1000).copied().collect();
        let b = batch(Arc::new(d));
        assert_eq!(arrow_bytes(&b), 4010);
        assert_eq!(arrow_bytes(&b.slice(0, 100)), 410);
    }
}
