//! The live delete files of a snapshot, and which data files each could still apply to: what a
//! read applying deletes needs ([`crate::equality_deletes`]), and what compaction's
//! remove-dangling-deletes weighs (in the `ops-maintenance` crate).
//!
//! A delete file applies to a data file of its partition (any partition, for an equality delete
//! of an unpartitioned spec) whose data sequence number is at most its own (a position delete)
//! or below it (an equality delete); a position delete only to the paths its `file_path`
//! column's bounds allow (Java's `DeleteFileIndex.canContainPosDeletesForFile`).

use std::cmp::Ordering;
use std::collections::HashMap;

use iceberg::spec::{
    DataContentType, DataFile, ManifestContentType, PrimitiveLiteral, SnapshotRef,
};

use super::snapshot::{LiveFile, ManifestCache, PartitionKey, canonical_partition, live_files_of};
use crate::Result;

/// Field id of a position delete file's `file_path` column (`MetadataColumns.DELETE_FILE_PATH`).
pub const DELETE_FILE_PATH_ID: i32 = 2_147_483_546;

/// Whether the delete file `file` may hold rows of the data file `path` (see
/// [`LiveDelete::may_reference`]; for callers holding only the `DataFile`).
pub fn may_reference(file: &DataFile, path: &str) -> bool {
    within(file, path, |a, b| a.encode_utf16().cmp(b.encode_utf16()))
        || within(file, path, |a, b| a.cmp(b))
}

/// The one data file a position delete file can reference, when its `file_path` bounds are
/// equal (Spark's file-scoped deletes): Java's `ContentFileUtil.referencedDataFile`.
pub fn referenced_path(file: &DataFile) -> Option<String> {
    if file.content_type() != DataContentType::PositionDeletes {
        return None;
    }
    let bound = |bounds: &HashMap<i32, iceberg::spec::Datum>| match bounds
        .get(&DELETE_FILE_PATH_ID)
        .map(|d| d.literal())
    {
        Some(PrimitiveLiteral::String(s)) => Some(s.clone()),
        _ => None,
    };
    let lower = bound(file.lower_bounds())?;
    (bound(file.upper_bounds()).as_deref() == Some(lower.as_str())).then_some(lower)
}

fn within(file: &DataFile, path: &str, cmp: impl Fn(&str, &str) -> Ordering) -> bool {
    if file.content_type() != DataContentType::PositionDeletes {
        return true;
    }
    let bound = |bounds: &HashMap<i32, iceberg::spec::Datum>| match bounds
        .get(&DELETE_FILE_PATH_ID)
        .map(|d| d.literal())
    {
        Some(PrimitiveLiteral::String(s)) => Some(s.clone()),
        _ => None,
    };
    if let Some(lower) = bound(file.lower_bounds())
        && cmp(path, &lower) == Ordering::Less
    {
        return false;
    }
    if let Some(upper) = bound(file.upper_bounds())
        && cmp(path, &upper) == Ordering::Greater
    {
        return false;
    }
    true
}

/// A live delete file of a snapshot.
#[derive(Debug, Clone)]
pub struct LiveDelete {
    /// The delete file as its manifest entry holds it.
    pub file: DataFile,
    /// The partition spec it was written under.
    pub spec_id: i32,
    /// Its data sequence number.
    pub sequence_number: i64,
    /// The sequence number of the commit that added it (its data sequence number when the
    /// manifest entry has none).
    pub file_sequence_number: i64,
}

impl LiveDelete {
    /// Its partition, canonicalised (see [`PartitionKey`]).
    pub fn key(&self) -> PartitionKey {
        (self.spec_id, canonical_partition(self.file.partition()))
    }

    /// Whether this position delete file may hold rows of `path`, by its `file_path` bounds
    /// (true without bounds, and for an equality delete). Paths compare as Java's
    /// `Comparators.charSequences` does, by UTF-16 code units — and as Parquet statistics
    /// (where writers take the bounds from) do, by UTF-8 bytes: a path is excluded only when
    /// both orders put it outside, as the two differ for paths mixing characters above U+FFFF
    /// with U+E000–U+FFFF.
    pub fn may_reference(&self, path: &str) -> bool {
        may_reference(&self.file, path)
    }

    /// Whether it could apply to `data` (sequence numbers and, for position deletes, bounds;
    /// the partition is the caller's).
    pub fn may_apply_to(&self, data: &LiveFile) -> bool {
        match self.file.content_type() {
            // A position delete names files by path: one added by a commit after the one that
            // added the delete (a compaction's output, which keeps an older data sequence
            // number) did not exist when it was written. Compared commit to commit, not with
            // the delete's data sequence number, which a rewrite of the delete may have kept
            // older than a file it names.
            DataContentType::PositionDeletes => {
                data.sequence_number <= self.sequence_number
                    && data.file_sequence_number <= self.file_sequence_number
                    && self.may_reference(data.file.file_path())
            }
            DataContentType::EqualityDeletes => data.sequence_number < self.sequence_number,
            DataContentType::Data => false,
        }
    }
}

/// Every live delete file of `snapshot`.
pub async fn live_delete_files_of(
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
) -> Result<Vec<LiveDelete>> {
    Ok(live_files_of(snapshot, cache, ManifestContentType::Deletes)
        .await?
        .into_iter()
        .map(|f| LiveDelete {
            file: f.file,
            spec_id: f.spec_id,
            sequence_number: f.sequence_number,
            file_sequence_number: f.file_sequence_number,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{DataFileBuilder, DataFileFormat, Datum, Literal, Struct};

    fn file_with_bounds(
        path: &str,
        content: DataContentType,
        region: &str,
        bounds: Option<(&str, &str)>,
    ) -> DataFile {
        let mut b = DataFileBuilder::default();
        b.content(content)
            .file_path(path.to_string())
            .file_format(DataFileFormat::Parquet)
            .partition(Struct::from_iter([Some(Literal::string(region))]))
            .record_count(1)
            .file_size_in_bytes(10);
        if content == DataContentType::EqualityDeletes {
            b.equality_ids(Some(vec![1]));
        }
        if let Some((lo, hi)) = bounds {
            b.lower_bounds(HashMap::from([(DELETE_FILE_PATH_ID, Datum::string(lo))]))
                .upper_bounds(HashMap::from([(DELETE_FILE_PATH_ID, Datum::string(hi))]));
        }
        b.build().unwrap_or_else(|e| panic!("{e}"))
    }

    fn delete(file: DataFile, seq: i64) -> LiveDelete {
        LiveDelete {
            file,
            spec_id: 0,
            sequence_number: seq,
            file_sequence_number: seq,
        }
    }

    #[test]
    fn paths_compare_as_utf16_like_java() {
        // U+1F600 is above U+FF5E as a code point (and in UTF-8 bytes), but its UTF-16
        // surrogates (0xD83D ...) sort below 0xFF5E: in Java's order these bounds hold U+E000,
        // which is kept (byte order alone would exclude it).
        let pos = delete(
            file_with_bounds(
                "p",
                DataContentType::PositionDeletes,
                "eu",
                Some(("s3://b/\u{1F600}", "s3://b/\u{FF5E}")),
            ),
            1,
        );
        assert!(pos.may_reference("s3://b/\u{E000}"));
        assert!(!pos.may_reference("s3://b/a"));
        assert!(!pos.may_reference("s3://b/\u{FFFD}"));
        // Bounds in byte order (U+FF5E .. U+1F600) hold U+10000 there, not in UTF-16: kept.
        let bytes = delete(
            file_with_bounds(
                "p",
                DataContentType::PositionDeletes,
                "eu",
                Some(("s3://b/\u{FF5E}", "s3://b/\u{1F600}")),
            ),
            1,
        );
        assert!(bytes.may_reference("s3://b/\u{10000}"));
        assert!(!bytes.may_reference("s3://b/a"));
    }

    /// A position delete applies to files committed no later than itself, whatever data
    /// sequence numbers a rewrite kept: one converted from an equality delete (data sequence
    /// 3) and committed after a compaction's output (data sequence 1, committed at 5) names
    /// that output; the output of a compaction committed after it does not exist for it.
    #[test]
    fn a_position_delete_reaches_files_committed_no_later_than_itself() {
        let data = |data_seq: i64, file_seq: i64| LiveFile {
            file: file_with_bounds("s3://b/d1", DataContentType::Data, "eu", None),
            spec_id: 0,
            sequence_number: data_seq,
            file_sequence_number: file_seq,
        };
        let mut pos = delete(
            file_with_bounds("p", DataContentType::PositionDeletes, "eu", None),
            3,
        );
        pos.file_sequence_number = 6;
        assert!(pos.may_apply_to(&data(1, 5)));
        assert!(pos.may_apply_to(&data(3, 6)));
        assert!(!pos.may_apply_to(&data(1, 7)), "committed after the delete");
        assert!(
            !pos.may_apply_to(&data(4, 4)),
            "data sequence past the delete's"
        );
    }
}
