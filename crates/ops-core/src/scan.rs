//! Read a table back as a stream of Arrow batches.

use arrow_array::RecordBatch;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::table::Table;

use crate::Result;

/// Streams every row of `table` at `snapshot_id` (the current snapshot when `None`); an empty
/// table yields no batches. Delete files are applied by iceberg's reader.
pub async fn scan(
    table: &Table,
    snapshot_id: Option<i64>,
) -> Result<BoxStream<'static, Result<RecordBatch>>> {
    let snapshot_id = snapshot_id.or_else(|| table.metadata().current_snapshot_id());
    let Some(snapshot_id) = snapshot_id else {
        return Ok(futures::stream::empty().boxed());
    };
    let stream = table
        .scan()
        .snapshot_id(snapshot_id)
        .select_all()
        .build()?
        .to_arrow()
        .await?;
    Ok(stream.map_err(crate::Error::from).boxed())
}
