//! Step 3 of an import: a file's Parquet footer, from the file's tail only.

use iceberg::io::FileIO;
use parquet::file::metadata::{FooterTail, ParquetMetaData, ParquetMetaDataReader};

use ops_core::{Error, Result};

/// How much of the tail the first read asks for: most footers fit, so one read per file is the
/// rule and a second one the exception.
const TAIL_GUESS: u64 = 64 * 1024;

/// The footer of the Parquet file at `path` (`size` bytes), read through `io` with at most two
/// ranged reads of its tail. A file that is no Parquet is refused, naming it.
pub async fn read(io: &FileIO, path: &str, size: u64) -> Result<ParquetMetaData> {
    let not_parquet =
        |why: &str| Error::InvalidInput(format!("{path} is not a Parquet file: {why}"));
    if size < 12 {
        return Err(not_parquet("shorter than a Parquet header and footer"));
    }
    let reader = io.new_input(path)?.reader().await?;
    let tail_len = size.min(TAIL_GUESS);
    let tail = reader.read(size - tail_len..size).await?;
    let n = tail.len();
    if n < 8 {
        return Err(not_parquet("short read"));
    }
    let mut last8 = [0u8; 8];
    last8.copy_from_slice(&tail[n - 8..]);
    let footer = FooterTail::try_from(last8).map_err(|e| not_parquet(&e.to_string()))?;
    let len = footer.metadata_length() as u64;
    if len + 8 > size {
        return Err(not_parquet(
            "its footer claims more bytes than the file holds",
        ));
    }
    let metadata = if len + 8 <= n as u64 {
        tail.slice(n - 8 - len as usize..n - 8)
    } else {
        reader.read(size - 8 - len..size - 8).await?
    };
    ParquetMetaDataReader::decode_metadata(&metadata).map_err(|e| not_parquet(&e.to_string()))
}
