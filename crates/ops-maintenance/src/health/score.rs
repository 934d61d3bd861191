//! Amoro's health score (`CommonPartitionEvaluator.getHealthScore` and
//! `AbstractOptimizingEvaluator.PendingInput`, as of Amoro 0.9: AMORO-3620 and AMORO-3736),
//! per partition, and the table's from the partitions'.
//!
//! For a partition, with `files`, `bytes` and `records` those of the data files compaction
//! would consider (fragments, undersized files, and well-sized files of a partition with delete
//! files that apply: Amoro counts a well-sized file only when deletes apply to it):
//!
//! ```text
//! penalty          = 0 if files <= 1, else min(files, F)/F * min(bytes, U)/U
//! small_files      = ceil(40 - penalty * 40 * (1 - min(bytes/files, U)/U))
//! equality_deletes = ceil(40 - penalty * 40 * min(eq_records/records, R)/R)
//! position_deletes = ceil(20 - penalty * 20 * min(pos_records/records, 2R)/(2R))
//! ```
//!
//! F is `score-file-count` (12), U 75% of the target, R the equality delete ratio (0.1). The
//! table's part scores are the means of its partitions' (every partition holding data counts;
//! one that needs nothing scores full marks), each rounded up, and its score their sum.

use serde::Serialize;

use crate::policy::Thresholds;

/// The counts one partition is scored on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct ScoreInput {
    pub files: u64,
    pub bytes: u64,
    pub records: u64,
    pub equality_delete_records: u64,
    pub position_delete_records: u64,
}

/// A score and its parts, each out of its weight (Amoro's `HealthScoreInfo`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Score {
    /// 0 (needs care) to 100 (healthy): the sum of the parts.
    pub score: u32,
    /// Out of 40: small files.
    pub small_files: u32,
    /// Out of 40: equality deletes.
    pub equality_deletes: u32,
    /// Out of 20: position deletes.
    pub position_deletes: u32,
}

impl Score {
    /// Full marks.
    pub const FULL: Score = Score {
        score: 100,
        small_files: 40,
        equality_deletes: 40,
        position_deletes: 20,
    };
}

fn normalized(numerator: f64, denominator: f64) -> f64 {
    if denominator <= 0.0 {
        0.0
    } else {
        numerator.min(denominator) / denominator
    }
}

/// One partition's score.
pub(crate) fn partition_score(input: &ScoreInput, t: &Thresholds) -> Score {
    let files = input.files as f64;
    let undersized = t.min_file_size as f64;
    let penalty = if input.files <= 1 {
        0.0
    } else {
        normalized(files, t.score_file_count as f64) * normalized(input.bytes as f64, undersized)
    };
    let average = if input.files == 0 {
        0.0
    } else {
        input.bytes as f64 / files
    };
    let records = input.records as f64;
    let small = 1.0 - normalized(average, undersized);
    let eq = normalized(
        normalized(input.equality_delete_records as f64, records),
        t.equality_delete_ratio,
    );
    let pos = normalized(
        normalized(input.position_delete_records as f64, records),
        t.equality_delete_ratio * 2.0,
    );
    let part = |weight: f64, factor: f64| (weight - penalty * weight * factor).ceil() as u32;
    let (small_files, equality_deletes, position_deletes) =
        (part(40.0, small), part(40.0, eq), part(20.0, pos));
    Score {
        score: small_files + equality_deletes + position_deletes,
        small_files,
        equality_deletes,
        position_deletes,
    }
}

/// Sums partition scores into the table's.
#[derive(Debug, Default)]
pub(crate) struct TableScore {
    partitions: u64,
    parts: [u64; 3],
}

impl TableScore {
    pub fn add(&mut self, s: &Score) {
        self.partitions += 1;
        self.parts[0] += u64::from(s.small_files);
        self.parts[1] += u64::from(s.equality_deletes);
        self.parts[2] += u64::from(s.position_deletes);
    }

    pub fn finish(&self) -> Score {
        if self.partitions == 0 {
            return Score::FULL;
        }
        let mean = |total: u64| total.div_ceil(self.partitions) as u32;
        let (small_files, equality_deletes, position_deletes) = (
            mean(self.parts[0]),
            mean(self.parts[1]),
            mean(self.parts[2]),
        );
        Score {
            score: small_files + equality_deletes + position_deletes,
            small_files,
            equality_deletes,
            position_deletes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Policy, Thresholds};

    fn thresholds(target: u64) -> Thresholds {
        let props = [(
            "write.target-file-size-bytes".to_string(),
            target.to_string(),
        )]
        .into_iter()
        .collect();
        Thresholds::of_properties(&props, &[], &Policy::default()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn amoro_by_hand() {
        // The docs' example: 24 files of 1 MB against a 128 MB target (U = 96 MB): penalty
        // min(24,12)/12 * min(24MB, 96MB)/96MB = 0.25.
        let t = thresholds(128_000_000);
        let s = partition_score(
            &ScoreInput {
                files: 24,
                bytes: 24_000_000,
                records: 1000,
                equality_delete_records: 50,
                position_delete_records: 400,
            },
            &t,
        );
        // ceil(40 - 0.25*40*(1 - 1/96)) = ceil(30.10) = 31; ceil(40 - 0.25*40*0.5) = 35;
        // ceil(20 - 0.25*20*1) = 15 (the position share capped at 2R).
        assert_eq!(
            s,
            Score {
                score: 81,
                small_files: 31,
                equality_deletes: 35,
                position_deletes: 15
            }
        );
        // One file, or none: no penalty.
        let one = ScoreInput {
            files: 1,
            bytes: 10,
            records: 1,
            ..ScoreInput::default()
        };
        assert_eq!(partition_score(&one, &t), Score::FULL);
        // The worst: 12+ fragments filling U, every row deleted both ways.
        let worst = ScoreInput {
            files: 1_000_000,
            bytes: 96_000_000,
            records: 100,
            equality_delete_records: 100,
            position_delete_records: 100,
        };
        let s = partition_score(&worst, &t);
        assert!(s.score <= 1, "{s:?}");
        // The table: each part the mean of the partitions', rounded up, then summed.
        let mut table = TableScore::default();
        table.add(&s);
        table.add(&Score::FULL);
        let want = |a: u32, b: u32| (a + b).div_ceil(2);
        let got = table.finish();
        assert_eq!(got.small_files, want(s.small_files, 40));
        assert_eq!(got.equality_deletes, want(s.equality_deletes, 40));
        assert_eq!(got.position_deletes, want(s.position_deletes, 20));
        assert_eq!(
            got.score,
            got.small_files + got.equality_deletes + got.position_deletes
        );
        assert_eq!(TableScore::default().finish(), Score::FULL);
    }
}
