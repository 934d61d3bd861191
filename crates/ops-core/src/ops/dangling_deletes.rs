//! Delete files that can no longer apply to any live data file (Java's remove-dangling-deletes,
//! `RemoveDanglingDeletesSparkAction`), so a rewrite can drop them in its own commit.
//!
//! A delete file applies to a data file of its partition (any partition, for an equality delete
//! of an unpartitioned spec) whose data sequence number is at most its own (a position delete)
//! or below it (an equality delete); a position delete only to the paths its `file_path`
//! column's bounds allow (Java's `DeleteFileIndex.canContainPosDeletesForFile`). Once no live
//! data file is one it could apply to, it is dangling: readers skip it anyway, but it stays in
//! the metadata, and a planner that only compares sequence numbers and partitions (iceberg
//! 0.10.1's) still attaches it to the rewritten files, which a later compaction would rewrite
//! again for that reason alone.
//!
//! Scopes are compared by canonical partition ([`super::canonical_partition`]): a delete stored
//! as `long` 7 and a data file of `int` 7 are one partition here, which can only keep a delete
//! file, never drop one that applies.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use iceberg::spec::{
    DataContentType, DataFile, ManifestContentType, PrimitiveLiteral, SnapshotRef,
};

use super::snapshot::{LiveFile, ManifestCache, PartitionKey, canonical_partition, live_files_of};
use crate::Result;

/// Field id of a position delete file's `file_path` column (`MetadataColumns.DELETE_FILE_PATH`).
const DELETE_FILE_PATH_ID: i32 = 2_147_483_546;

/// A live delete file of a snapshot.
#[derive(Debug, Clone)]
pub(crate) struct LiveDelete {
    pub file: DataFile,
    pub spec_id: i32,
    /// Its data sequence number.
    pub sequence_number: i64,
}

impl LiveDelete {
    pub(crate) fn key(&self) -> PartitionKey {
        (self.spec_id, canonical_partition(self.file.partition()))
    }

    /// Whether this position delete file may hold rows of `path`, by its `file_path` bounds
    /// (true without bounds, and for an equality delete). Paths compare as Java's
    /// `Comparators.charSequences` does, by UTF-16 code units — and as Parquet statistics
    /// (where writers take the bounds from) do, by UTF-8 bytes: a path is excluded only when
    /// both orders put it outside, as the two differ for paths mixing characters above U+FFFF
    /// with U+E000–U+FFFF.
    pub(crate) fn may_reference(&self, path: &str) -> bool {
        self.within(path, |a, b| a.encode_utf16().cmp(b.encode_utf16()))
            || self.within(path, |a, b| a.cmp(b))
    }

    fn within(&self, path: &str, cmp: impl Fn(&str, &str) -> Ordering) -> bool {
        if self.file.content_type() != DataContentType::PositionDeletes {
            return true;
        }
        let bound = |bounds: &HashMap<i32, iceberg::spec::Datum>| match bounds
            .get(&DELETE_FILE_PATH_ID)
            .map(|d| d.literal())
        {
            Some(PrimitiveLiteral::String(s)) => Some(s.clone()),
            _ => None,
        };
        if let Some(lower) = bound(self.file.lower_bounds())
            && cmp(path, &lower) == Ordering::Less
        {
            return false;
        }
        if let Some(upper) = bound(self.file.upper_bounds())
            && cmp(path, &upper) == Ordering::Greater
        {
            return false;
        }
        true
    }

    /// Whether it could apply to `data` (sequence numbers and, for position deletes, bounds;
    /// the partition is the caller's).
    pub(crate) fn may_apply_to(&self, data: &LiveFile) -> bool {
        match self.file.content_type() {
            DataContentType::PositionDeletes => {
                data.sequence_number <= self.sequence_number
                    && self.may_reference(data.file.file_path())
            }
            DataContentType::EqualityDeletes => data.sequence_number < self.sequence_number,
            DataContentType::Data => false,
        }
    }
}

/// Every live delete file of `snapshot`.
pub(crate) async fn live_delete_files_of(
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
        })
        .collect())
}

/// The paths of the delete files among `deletes`, in the partitions `touched` (a global
/// equality delete whenever any partition is), that can apply to
/// none of `live` (the live data files as they will be once the commit lands). `unpartitioned`
/// says whether a spec id has no partition fields: an equality delete of such a spec applies
/// to every partition of every spec, so it is weighed against every live file.
pub(crate) fn dangling(
    deletes: &[LiveDelete],
    live: &[LiveFile],
    touched: &HashSet<PartitionKey>,
    unpartitioned: impl Fn(i32) -> bool,
) -> Vec<String> {
    let mut by_key: HashMap<PartitionKey, Vec<&LiveFile>> = HashMap::new();
    for f in live {
        by_key.entry(f.key()).or_default().push(f);
    }
    let global = |d: &LiveDelete| {
        d.file.content_type() == DataContentType::EqualityDeletes && unpartitioned(d.spec_id)
    };
    let mut out: Vec<String> = deletes
        .iter()
        // A global equality delete applies to files of every partition: any rewrite touches it.
        .filter(|d| touched.contains(&d.key()) || (!touched.is_empty() && global(d)))
        .filter(|d| {
            let applies = if global(d) {
                live.iter().any(|f| d.may_apply_to(f))
            } else {
                by_key
                    .get(&d.key())
                    .is_some_and(|fs| fs.iter().any(|f| d.may_apply_to(f)))
            };
            !applies
        })
        .map(|d| d.file.file_path().to_string())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::{DataFileBuilder, DataFileFormat, Datum, Literal, Struct};

    fn file(path: &str, content: DataContentType, region: &str) -> DataFile {
        file_with_bounds(path, content, region, None)
    }

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

    fn data(path: &str, region: &str, seq: i64) -> LiveFile {
        LiveFile {
            file: file(path, DataContentType::Data, region),
            spec_id: 0,
            sequence_number: seq,
        }
    }

    fn delete(file: DataFile, seq: i64) -> LiveDelete {
        LiveDelete {
            file,
            spec_id: 0,
            sequence_number: seq,
        }
    }

    fn touched(regions: &[&str]) -> HashSet<PartitionKey> {
        regions
            .iter()
            .map(|r| (0, Struct::from_iter([Some(Literal::string(*r))])))
            .collect()
    }

    #[test]
    fn a_position_delete_dangles_once_no_file_it_names_or_could_name_is_live() {
        // Spark-style: bounds name exactly the file it deletes from.
        let pos = delete(
            file_with_bounds(
                "s3://b/d/pos.parquet",
                DataContentType::PositionDeletes,
                "eu",
                Some(("s3://b/d/a.parquet", "s3://b/d/a.parquet")),
            ),
            3,
        );
        let a = data("s3://b/d/a.parquet", "eu", 1);
        let rewritten = data("s3://b/d/z-compacted.parquet", "eu", 3);
        let all = touched(&["eu"]);
        assert!(
            dangling(
                std::slice::from_ref(&pos),
                std::slice::from_ref(&a),
                &all,
                |_| false
            )
            .is_empty()
        );
        // The file it names was rewritten into one outside its bounds, same sequence number.
        assert_eq!(
            dangling(
                std::slice::from_ref(&pos),
                std::slice::from_ref(&rewritten),
                &all,
                |_| false
            ),
            vec!["s3://b/d/pos.parquet".to_string()]
        );
        // Only in the partitions asked about.
        assert!(
            dangling(
                std::slice::from_ref(&pos),
                &[rewritten],
                &touched(&["us"]),
                |_| false
            )
            .is_empty()
        );

        // Without bounds it may name any file of its partition of a sequence number <= its own.
        let open = delete(
            file(
                "s3://b/d/pos2.parquet",
                DataContentType::PositionDeletes,
                "eu",
            ),
            3,
        );
        let same_seq = data("s3://b/d/z.parquet", "eu", 3);
        let newer = data("s3://b/d/z.parquet", "eu", 4);
        let other_partition = data("s3://b/d/y.parquet", "us", 1);
        assert!(dangling(std::slice::from_ref(&open), &[same_seq], &all, |_| false).is_empty());
        assert_eq!(
            dangling(&[open], &[newer, other_partition], &all, |_| false),
            vec!["s3://b/d/pos2.parquet".to_string()]
        );
    }

    #[test]
    fn an_equality_delete_dangles_at_or_below_every_live_sequence_number() {
        let eq = delete(
            file(
                "s3://b/d/eq.parquet",
                DataContentType::EqualityDeletes,
                "eu",
            ),
            3,
        );
        let all = touched(&["eu"]);
        let older = data("s3://b/d/a.parquet", "eu", 2);
        let same = data("s3://b/d/b.parquet", "eu", 3);
        assert!(
            dangling(
                std::slice::from_ref(&eq),
                &[older.clone(), same.clone()],
                &all,
                |_| { false }
            )
            .is_empty()
        );
        assert_eq!(
            dangling(
                std::slice::from_ref(&eq),
                std::slice::from_ref(&same),
                &all,
                |_| false
            ),
            vec!["s3://b/d/eq.parquet".to_string()]
        );
        // Of an unpartitioned spec it applies everywhere: an older file elsewhere keeps it.
        let elsewhere = data("s3://b/d/c.parquet", "us", 1);
        assert!(
            dangling(
                std::slice::from_ref(&eq),
                &[same.clone(), elsewhere],
                &all,
                |_| true
            )
            .is_empty()
        );
        assert_eq!(dangling(&[eq], &[same], &all, |_| true).len(), 1);
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
}
