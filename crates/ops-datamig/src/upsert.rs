//! Upsert one chunk: copy-on-write, one commit, unchanged rows untouched.
//!
//! 1. Refuse a chunk holding a key twice (earlier chunks stay committed).
//! 2. Read the destination rows with the chunk's keys (a key predicate pushed into the scan) at
//!    the current snapshot `S`, and classify every chunk row: new key → insert; same key and
//!    same values → unchanged (not written); same key, other values → update.
//! 3. One `OverwriteBuilder` commit: delete the updated keys' rows (copy-on-write
//!    `overwrite_filter`), add the inserted and updated rows, validated from `S` with the chunk's
//!    keys as the conflict filter — a concurrent writer touching those keys is a conflict, not a
//!    silent lost update. Nothing to write → no commit.

use std::collections::HashMap;
use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use futures::StreamExt;
use iceberg::TableIdent;
use iceberg::expr::{Predicate, Reference};
use iceberg::spec::Datum;
use iceberg::table::Table;
use ops_core::CatalogHandle;
use ops_core::ops::overwrite::OverwriteBuilder;

use crate::{MigrationError, Result};

/// What one chunk's upsert did.
pub(crate) struct UpsertOutcome {
    pub table: Option<Table>,
    pub snapshot: Option<i64>,
    pub inserted: u64,
    pub updated: u64,
}

pub(crate) async fn upsert_chunk(
    handle: &CatalogHandle,
    ident: &TableIdent,
    dest: &Table,
    keys: &[String],
    batches: &[RecordBatch],
    properties: HashMap<String, String>,
) -> Result<UpsertOutcome> {
    let target = ops_core::write::table_arrow_schema(dest)?;
    let conformed = batches
        .iter()
        .map(|b| ops_core::write::conform(b, &target))
        .collect::<ops_core::Result<Vec<_>>>()?;
    let batch = arrow_select::concat::concat_batches(&target, &conformed)?;
    let key_idx: Vec<usize> = keys
        .iter()
        .map(|k| {
            target.index_of(k).map_err(|_| {
                MigrationError::InvalidInput(format!(
                    "upsert key '{k}' is not a destination column"
                ))
            })
        })
        .collect::<Result<_>>()?;
    let key_converter = converter(key_idx.iter().map(|&i| batch.column(i).data_type()))?;
    let row_converter = converter(batch.columns().iter().map(|c| c.data_type()))?;
    let key_cols: Vec<ArrayRef> = key_idx.iter().map(|&i| batch.column(i).clone()).collect();
    for (k, col) in keys.iter().zip(&key_cols) {
        if col.null_count() > 0 {
            return Err(MigrationError::InvalidInput(format!(
                "upsert key column '{k}' holds {} null value(s) in this batch; keys must be set",
                col.null_count()
            )));
        }
    }
    let chunk_keys = key_converter.convert_columns(&key_cols)?;
    let chunk_rows = row_converter.convert_columns(batch.columns())?;
    let mut first_row: HashMap<Vec<u8>, usize> = HashMap::new();
    for i in 0..batch.num_rows() {
        if let Some(&j) = first_row.get(chunk_keys.row(i).as_ref()) {
            return Err(MigrationError::InvalidInput(format!(
                "upsert batch holds key ({}) twice (rows {j} and {i} of the batch); \
                 deduplicate the source on the upsert keys",
                describe_key(&key_cols, i)
            )));
        }
        first_row.insert(chunk_keys.row(i).as_ref().to_vec(), i);
    }

    let all_keys = key_predicate(keys, &key_cols, 0..batch.num_rows())?;
    let since = dest.metadata().current_snapshot_id();
    let mut existing: HashMap<Vec<u8>, Vec<u8>> = HashMap::new();
    if since.is_some() {
        let mut stream = ops_core::scan::scan_filtered(dest, since, Some(all_keys.clone())).await?;
        while let Some(b) = stream.next().await {
            let b = ops_core::write::conform(&b?, &target)?;
            let kc: Vec<ArrayRef> = key_idx.iter().map(|&i| b.column(i).clone()).collect();
            let ks = key_converter.convert_columns(&kc)?;
            let rs = row_converter.convert_columns(b.columns())?;
            for i in 0..b.num_rows() {
                existing.insert(ks.row(i).as_ref().to_vec(), rs.row(i).as_ref().to_vec());
            }
        }
    }
    let mut write: Vec<u32> = Vec::new();
    let mut updated: Vec<usize> = Vec::new();
    let mut inserted = 0u64;
    for i in 0..batch.num_rows() {
        match existing.get(chunk_keys.row(i).as_ref()) {
            None => {
                inserted += 1;
                write.push(i as u32);
            }
            Some(row) if row.as_slice() == chunk_rows.row(i).as_ref() => {}
            Some(_) => {
                updated.push(i);
                write.push(i as u32);
            }
        }
    }
    if write.is_empty() {
        return Ok(UpsertOutcome {
            table: None,
            snapshot: None,
            inserted: 0,
            updated: 0,
        });
    }
    let rows = arrow_select::take::take_record_batch(&batch, &UInt32Array::from(write))?;
    let written = ops_core::write::write_files(dest, futures::stream::iter([Ok(rows)])).await?;
    let mut builder = OverwriteBuilder::new(handle, ident.clone())
        .add_written(written)
        .validate_from_snapshot(since)
        .conflict_detection_filter(all_keys)
        .with_properties(properties);
    if !updated.is_empty() {
        builder =
            builder.overwrite_filter(key_predicate(keys, &key_cols, updated.iter().copied())?);
    }
    let (table, metrics) = builder.await?;
    Ok(UpsertOutcome {
        table: Some(table),
        snapshot: Some(metrics.snapshot_id),
        inserted,
        updated: updated.len() as u64,
    })
}

fn converter<'a>(types: impl Iterator<Item = &'a DataType>) -> Result<RowConverter> {
    Ok(RowConverter::new(
        types.map(|t| SortField::new(t.clone())).collect(),
    )?)
}

fn describe_key(cols: &[ArrayRef], row: usize) -> String {
    let options = FormatOptions::default().with_null("null");
    cols.iter()
        .map(|c| {
            ArrayFormatter::try_new(c.as_ref(), &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn datum(col: &ArrayRef, row: usize, name: &str) -> Result<Datum> {
    Ok(match col.data_type() {
        DataType::Int32 => Datum::int(col.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Datum::long(col.as_primitive::<Int64Type>().value(row)),
        DataType::Date32 => Datum::date(col.as_primitive::<Date32Type>().value(row)),
        DataType::Utf8 => Datum::string(col.as_string::<i32>().value(row)),
        DataType::LargeUtf8 => Datum::string(col.as_string::<i64>().value(row)),
        DataType::Boolean => Datum::bool(col.as_boolean().value(row)),
        other => {
            return Err(MigrationError::InvalidInput(format!(
                "upsert key '{name}' has type {other}, which upsert keys do not support yet; \
                 use int, long, date, string or boolean keys"
            )));
        }
    })
}

/// Rows whose keys are those of `rows` in `cols`.
fn key_predicate(
    keys: &[String],
    cols: &[ArrayRef],
    rows: impl Iterator<Item = usize>,
) -> Result<Predicate> {
    let rows: Vec<usize> = rows.collect();
    if let ([key], [col]) = (keys, cols) {
        let mut seen = HashSet::new();
        let mut datums = Vec::with_capacity(rows.len());
        for r in rows {
            let d = datum(col, r, key)?;
            if seen.insert(d.to_string()) {
                datums.push(d);
            }
        }
        return Ok(Reference::new(key.clone()).is_in(datums));
    }
    let mut out: Option<Predicate> = None;
    for r in rows {
        let mut conj: Option<Predicate> = None;
        for (k, c) in keys.iter().zip(cols) {
            let eq = Reference::new(k.clone()).equal_to(datum(c, r, k)?);
            conj = Some(match conj {
                None => eq,
                Some(p) => p.and(eq),
            });
        }
        if let Some(c) = conj {
            out = Some(match out {
                None => c,
                Some(p) => p.or(c),
            });
        }
    }
    Ok(out.unwrap_or(Predicate::AlwaysFalse))
}
