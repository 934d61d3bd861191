//! Manifests read entry by entry, so a table of a million files is planned, verified and
//! cleaned up in memory that does not grow with its file count.
//!
//! iceberg's `ManifestFile::load_manifest` holds a manifest's bytes and every entry at once:
//! a PyIceberg `add_files` of a million files writes one manifest of about 200 MB and a
//! million entries, several KiB each once decoded with their column statistics. [`entries`]
//! streams them instead (the vendored iceberg's `ManifestFile::entry_stream`, which its scan
//! planner uses too): decoded on a blocking thread, a few hundred ahead of the consumer; a
//! manifest that is not a local file and is larger than
//! [`iceberg::spec::ENTRY_STREAM_IN_MEMORY_BYTES`] is copied in ranges to an anonymous
//! temporary file first, so neither its bytes nor its entries are held.

use futures::{Stream, StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::spec::{ManifestEntry, ManifestFile};

use crate::Result;

/// The entries of `manifest` (live, existing and deleted alike, as its file lists them), each
/// inheriting the snapshot id and sequence numbers from its manifest-list entry as
/// `load_manifest`'s do, streamed in the file's order. Dropping the stream stops the reading.
pub fn entries(
    io: &FileIO,
    manifest: &ManifestFile,
) -> impl Stream<Item = Result<ManifestEntry>> + Send + use<> {
    manifest.entry_stream(io).map_err(crate::Error::from)
}

/// Manifests read at once by [`entries_of_all`].
pub const READ_CONCURRENCY: usize = 8;

/// The entries of every manifest in `manifests`, read [`READ_CONCURRENCY`] at a time, each as
/// [`entries`] streams it; the manifests' entries interleave in no fixed order.
pub fn entries_of_all(
    io: &FileIO,
    manifests: Vec<ManifestFile>,
) -> impl Stream<Item = Result<ManifestEntry>> + Send + use<> {
    let io = io.clone();
    futures::stream::iter(manifests)
        .map(move |mf| Box::pin(entries(&io, &mf)))
        .flatten_unordered(READ_CONCURRENCY)
}

/// Whether `read` is at its end (a helper for tests that check the spill copied everything).
#[cfg(test)]
fn at_end(read: &mut impl std::io::Read) -> bool {
    let mut one = [0u8; 1];
    matches!(read.read(&mut one), Ok(0))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use std::io::{BufReader, Cursor, Seek, Write};

    use super::*;

    /// Entries streamed from a manifest equal `load_manifest`'s, in the same order, whether
    /// the manifest is read from a local path, from memory, or spilled.
    #[tokio::test(flavor = "multi_thread")]
    async fn streamed_entries_equal_the_loaded_manifest() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (handle, table) = crate::ops::append::tests::table(dir.path()).await?;
        let mut table = table;
        for chunk in [vec![1, 2, 3], vec![4, 5], vec![6]] {
            let batch = crate::ops::append::tests::batch(&table, chunk)?;
            (table, _) = crate::append::append(
                &handle,
                &table,
                futures::stream::iter([Ok(batch)]),
                HashMap::new(),
            )
            .await?;
        }
        let list = current_manifests(&table).await?;
        assert!(!list.entries().is_empty());
        for mf in list.entries() {
            let loaded: Vec<ManifestEntry> = mf
                .load_manifest(table.file_io())
                .await?
                .entries()
                .iter()
                .map(|e| e.as_ref().clone())
                .collect();
            assert!(!loaded.is_empty());
            let streamed: Vec<ManifestEntry> = entries(table.file_io(), mf).try_collect().await?;
            assert_eq!(streamed, loaded, "{}", mf.manifest_path);

            // The same bytes read from memory (a remote manifest under the spill size) and
            // from a spilled temporary file.
            let bytes = std::fs::read(mf.manifest_path.trim_start_matches("file://"))?;
            let mut from_memory = Vec::new();
            mf.read_entries_from(Cursor::new(bytes.clone()), |e| {
                from_memory.push(e);
                Ok(true)
            })?;
            assert_eq!(from_memory, loaded);
            let mut spill = tempfile::tempfile()?;
            spill.write_all(&bytes)?;
            spill.seek(std::io::SeekFrom::Start(0))?;
            let mut from_spill = Vec::new();
            let mut reader = BufReader::new(spill);
            mf.read_entries_from(&mut reader, |e| {
                from_spill.push(e);
                Ok(true)
            })?;
            assert_eq!(from_spill, loaded);
            assert!(at_end(&mut reader));
        }
        Ok(())
    }

    /// A manifest of many chunks (decoded on a thread of its own beside the converting one)
    /// gives every entry once, in the file's order; a reader that stops early stops it; and a
    /// manifest cut short is an error after the entries before the cut.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_long_manifest_reads_in_order_stops_early_and_fails_at_a_cut() -> anyhow::Result<()> {
        use iceberg::spec::{DataContentType, DataFileBuilder, DataFileFormat, Struct};
        const FILES: u64 = 1_000;
        let dir = tempfile::tempdir()?;
        let (handle, table) = crate::ops::append::tests::table(dir.path()).await?;
        let files = (0..FILES)
            .map(|i| {
                DataFileBuilder::default()
                    .content(DataContentType::Data)
                    .file_path(format!("{}/data/f{i:05}.parquet", dir.path().display()))
                    .file_format(DataFileFormat::Parquet)
                    .partition(Struct::empty())
                    .partition_spec_id(0)
                    .record_count(i + 1)
                    .file_size_in_bytes(100 + i)
                    .build()
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let (table, _) =
            crate::ops::append::AppendBuilder::new(&handle, table.identifier().clone())
                .with_files(files)
                .await?;
        let list = current_manifests(&table).await?;
        let [mf] = list.entries() else {
            anyhow::bail!("{} manifests", list.entries().len());
        };
        let bytes = std::fs::read(mf.manifest_path.trim_start_matches("file://"))?;

        let mut seen = Vec::new();
        mf.read_entries_from(Cursor::new(bytes.clone()), |e| {
            seen.push((e.file_path().to_string(), e.record_count()));
            Ok(true)
        })?;
        let want: Vec<(String, u64)> = (0..FILES)
            .map(|i| {
                (
                    format!("{}/data/f{i:05}.parquet", dir.path().display()),
                    i + 1,
                )
            })
            .collect();
        assert_eq!(seen, want);
        // A slow reader: the decoder, finding it busy, resolves chunks itself; the entries
        // are the same, in the same order.
        let mut slow = Vec::new();
        mf.read_entries_from(Cursor::new(bytes.clone()), |e| {
            if slow.len() % 64 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            slow.push((e.file_path().to_string(), e.record_count()));
            Ok(true)
        })?;
        assert_eq!(slow, want);
        let streamed: Vec<ManifestEntry> = entries(table.file_io(), mf).try_collect().await?;
        assert_eq!(streamed.len(), FILES as usize);

        let mut taken = 0;
        mf.read_entries_from(Cursor::new(bytes.clone()), |_| {
            taken += 1;
            Ok(taken < 300)
        })?;
        assert_eq!(taken, 300);

        // The last block's sync marker cut off: every block before it is handed over, then
        // the error.
        let cut = &bytes[..bytes.len() - 5];
        let mut before = 0u64;
        let got = mf.read_entries_from(Cursor::new(cut.to_vec()), |_| {
            before += 1;
            Ok(true)
        });
        assert!(got.is_err(), "{got:?}");
        assert!(
            before > 256 && before < FILES,
            "{before} entries before the cut"
        );
        Ok(())
    }

    /// The manifest list of `table`'s current snapshot.
    async fn current_manifests(
        table: &iceberg::table::Table,
    ) -> anyhow::Result<iceberg::spec::ManifestList> {
        let snapshot = table
            .metadata()
            .current_snapshot()
            .ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
        Ok(table.manifest_list_reader(snapshot).load().await?)
    }

    /// A manifest that is not there is an error naming it, not an empty stream.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_missing_manifest_is_an_error() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let (_, table) = crate::ops::append::tests::table(dir.path()).await?;
        let mf = iceberg::spec::ManifestFile {
            manifest_path: format!("{}/gone.avro", dir.path().display()),
            manifest_length: 10,
            partition_spec_id: 0,
            content: iceberg::spec::ManifestContentType::Data,
            sequence_number: 1,
            min_sequence_number: 1,
            added_snapshot_id: 1,
            added_files_count: None,
            existing_files_count: None,
            deleted_files_count: None,
            added_rows_count: None,
            existing_rows_count: None,
            deleted_rows_count: None,
            partitions: None,
            key_metadata: None,
            first_row_id: None,
        };
        let got: Result<Vec<ManifestEntry>> = entries(table.file_io(), &mf).try_collect().await;
        assert!(got.is_err(), "{got:?}");
        Ok(())
    }
}
