//! Delete files that can no longer apply to any live data file (Java's remove-dangling-deletes,
//! `RemoveDanglingDeletesSparkAction`), so a rewrite can drop them in its own commit.
//!
//! A delete file applies to a data file of its partition (any partition, for an equality delete
//! of an unpartitioned spec) whose data sequence number is at most its own (a position delete)
//! or below it (an equality delete); a position delete only to the paths its `file_path`
//! column's bounds allow (Java's `DeleteFileIndex.canContainPosDeletesForFile`), and only to
//! files added no later than itself: it names files by path, and a file a later commit added
//! (a compaction's output, which keeps an older data sequence number) did not exist when it was
//! written. Java judges by data sequence number alone, so it keeps such a delete until a second
//! rewrite. Once no live
//! data file is one it could apply to, it is dangling: readers skip it anyway, but it stays in
//! the metadata, and a planner that only compares sequence numbers and partitions (iceberg
//! 0.10.1's) still attaches it to the rewritten files, which a later compaction would rewrite
//! again for that reason alone.
//!
//! Scopes are compared by canonical partition ([`ops_core::ops::canonical_partition`]): a delete stored
//! as `long` 7 and a data file of `int` 7 are one partition here, which can only keep a delete
//! file, never drop one that applies.

use std::collections::{HashMap, HashSet};

use iceberg::spec::DataContentType;
use ops_core::ops::live_deletes::LiveDelete;
use ops_core::ops::{LiveFile, PartitionKey};

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
    let mut scan = DanglingScan::new(deletes, touched, unpartitioned);
    for f in live {
        scan.see(f);
    }
    scan.finish()
}

/// [`dangling`] with the live data files handed over one at a time, so a commit streams them
/// from the manifests instead of holding every live file of the table (with its column
/// statistics, a few KiB each) to weigh a handful of delete files against them.
pub(crate) struct DanglingScan<'a> {
    /// The delete files weighed: those in the touched partitions, and the global ones.
    weighed: Vec<&'a LiveDelete>,
    /// Whether each of them applies to a live file seen so far.
    applies: Vec<bool>,
    /// Positions in `weighed` of the partition-scoped ones, by partition.
    by_key: HashMap<PartitionKey, Vec<usize>>,
    /// Positions in `weighed` of the global ones.
    global: Vec<usize>,
}

impl<'a> DanglingScan<'a> {
    /// A scan of `deletes` in the partitions `touched` (see [`dangling`]).
    pub(crate) fn new(
        deletes: &'a [LiveDelete],
        touched: &HashSet<PartitionKey>,
        unpartitioned: impl Fn(i32) -> bool,
    ) -> Self {
        let is_global = |d: &LiveDelete| {
            d.file.content_type() == DataContentType::EqualityDeletes && unpartitioned(d.spec_id)
        };
        let mut scan = Self {
            weighed: Vec::new(),
            applies: Vec::new(),
            by_key: HashMap::new(),
            global: Vec::new(),
        };
        for d in deletes {
            let global = is_global(d);
            // A global equality delete applies to files of every partition: any rewrite
            // touches it.
            if !(touched.contains(&d.key()) || (!touched.is_empty() && global)) {
                continue;
            }
            let i = scan.weighed.len();
            scan.weighed.push(d);
            scan.applies.push(false);
            if global {
                scan.global.push(i);
            } else {
                scan.by_key.entry(d.key()).or_default().push(i);
            }
        }
        scan
    }

    /// Whether no delete file is weighed (nothing to stream the live files for).
    pub(crate) fn is_empty(&self) -> bool {
        self.weighed.is_empty()
    }

    /// Weighs the weighed delete files against the live data file `f`.
    pub(crate) fn see(&mut self, f: &LiveFile) {
        let Self {
            weighed,
            applies,
            by_key,
            global,
        } = self;
        let scoped = if by_key.is_empty() {
            None
        } else {
            by_key.get(&f.key())
        };
        for &i in global.iter().chain(scoped.into_iter().flatten()) {
            if !applies[i] && weighed[i].may_apply_to(f) {
                applies[i] = true;
            }
        }
    }

    /// The paths of the weighed delete files that applied to no live file seen, sorted.
    pub(crate) fn finish(self) -> Vec<String> {
        let mut out: Vec<String> = self
            .weighed
            .iter()
            .zip(&self.applies)
            .filter(|(_, applies)| !**applies)
            .map(|(d, _)| d.file.file_path().to_string())
            .collect();
        out.sort();
        out
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use iceberg::spec::DataFile;
    use iceberg::spec::{DataFileBuilder, DataFileFormat, Datum, Literal, Struct};
    use ops_core::ops::live_deletes::DELETE_FILE_PATH_ID;

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
            file_sequence_number: seq,
        }
    }

    fn delete(file: DataFile, seq: i64) -> LiveDelete {
        LiveDelete {
            file,
            spec_id: 0,
            sequence_number: seq,
            file_sequence_number: seq,
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
}
