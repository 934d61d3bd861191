//! Step 3 of an import, beside the columns: files the table's other readers could not open.
//!
//! An imported file is read where it lies, by every engine that reads the table. Java reads
//! what the Iceberg spec allows, but PyIceberg 0.12 (the reader the seeds' users have) fails
//! every scan of a table holding one of these, so they are refused before anything is
//! written, naming the file and the fix — as PyIceberg's own `add_files` refuses the zoned
//! timestamps:
//!
//! - a path with `#` or `?`: PyIceberg parses a data file's location as a URL, so the rest of
//!   the path is a fragment or a query and the file is not found;
//! - a timestamp column whose Arrow schema (the `ARROW:schema` a pyarrow or pandas writer
//!   stores) names a zone other than UTC: PyIceberg takes the file's schema from it and
//!   refuses the type ("Unsupported type: timestamp[us, tz=America/New_York]"), although the
//!   Parquet values are UTC instants.

use parquet::file::metadata::ParquetMetaData;

use ops_core::{Error, Result};

/// The zone names PyIceberg 0.12 reads as UTC (`pyiceberg.io.pyarrow.UTC_ALIASES`).
const UTC_ALIASES: [&str; 4] = ["UTC", "+00:00", "Etc/UTC", "Z"];

/// Refuses `path` (its footer `meta`) when a reader of the table could not open it.
pub fn refuse_unreadable(path: &str, meta: &ParquetMetaData) -> Result<()> {
    refuse_url_characters(path)?;
    refuse_zoned_timestamps(path, meta)
}

fn refuse_url_characters(path: &str) -> Result<()> {
    if let Some(c) = path.chars().find(|c| matches!(c, '#' | '?')) {
        return Err(Error::InvalidInput(format!(
            "{path} has `{c}` in its path, which PyIceberg reads as the start of a URL's {}, so \
             it could not open the file and every scan of the table would fail: rename the \
             folder or file, or copy its rows in with `iceberg-ops migrate-data --source-path` \
             (which writes new files)",
            if c == '#' { "fragment" } else { "query" }
        )));
    }
    Ok(())
}

fn refuse_zoned_timestamps(path: &str, meta: &ParquetMetaData) -> Result<()> {
    let file = meta.file_metadata();
    // Without the stored Arrow schema the reader sees UTC timestamps: nothing to refuse.
    if !file
        .key_value_metadata()
        .is_some_and(|kv| kv.iter().any(|e| e.key == "ARROW:schema"))
    {
        return Ok(());
    }
    let Ok(arrow) =
        parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())
    else {
        // A stored schema the reader cannot take is ignored by it too.
        return Ok(());
    };
    let mut zoned = None;
    arrow.fields().filter_leaves(|_, f| {
        if let arrow_schema::DataType::Timestamp(_, Some(tz)) = f.data_type()
            && !UTC_ALIASES.contains(&tz.as_ref())
            && zoned.is_none()
        {
            zoned = Some((f.name().clone(), tz.to_string()));
        }
        false
    });
    match zoned {
        None => Ok(()),
        Some((column, tz)) => Err(Error::InvalidInput(format!(
            "column `{column}` of {path} is a timestamp in zone {tz} (its stored Arrow schema \
             says so): PyIceberg reads a timestamptz column only in UTC and would fail every \
             scan of the table, as its add_files refuses such a file. Write the column in UTC \
             (pandas: .dt.tz_convert('UTC'); pyarrow: cast to timestamp('us', tz='UTC')), or \
             copy its rows in with `iceberg-ops migrate-data --source-path`"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, RecordBatch, TimestampMicrosecondArray};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::reader::FileReader;
    use parquet::file::serialized_reader::SerializedFileReader;

    use super::*;

    fn footer(tz: Option<&str>) -> ParquetMetaData {
        let values = TimestampMicrosecondArray::from(vec![0i64]).with_timezone_opt(tz);
        let batch = RecordBatch::try_from_iter([("ts", Arc::new(values) as ArrayRef)])
            .unwrap_or_else(|e| panic!("{e}"));
        let mut out = Vec::new();
        let mut w =
            ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap_or_else(|e| panic!("{e}"));
        w.write(&batch).unwrap_or_else(|e| panic!("{e}"));
        w.close().unwrap_or_else(|e| panic!("{e}"));
        SerializedFileReader::new(Bytes::from(out))
            .unwrap_or_else(|e| panic!("{e}"))
            .metadata()
            .clone()
    }

    #[test]
    fn a_zone_other_than_utc_is_refused_naming_the_column() {
        let e = refuse_unreadable("/d/a.parquet", &footer(Some("America/New_York")))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("column `ts` of /d/a.parquet is a timestamp in zone America/New_York"),
            "{e}"
        );
        for ok in [None, Some("UTC"), Some("+00:00"), Some("Etc/UTC")] {
            assert!(
                refuse_unreadable("/d/a.parquet", &footer(ok)).is_ok(),
                "{ok:?}"
            );
        }
    }

    #[test]
    fn a_path_with_a_fragment_or_query_character_is_refused() {
        let meta = footer(None);
        for (path, what) in [
            ("/d/k=a#1/f.parquet", "fragment"),
            ("s3://b/k=q?x/f.parquet", "query"),
        ] {
            let e = refuse_unreadable(path, &meta)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains(path) && e.contains(what), "{e}");
        }
        for ok in ["/d/k=a b%20+;[]/f.parquet", "s3://b/k=ü/f.parquet"] {
            assert!(refuse_unreadable(ok, &meta).is_ok(), "{ok}");
        }
    }
}
