//! Amoro's health score (`CommonPartitionEvaluator.getHealthScore`), per partition, and the
//! table's as the mean of its partitions'.
//!
//! For a partition, with `files`, `bytes` and `records` those of the data files compaction
//! would consider (fragments, undersized files, and well-sized files of a partition with delete
//! files: Amoro counts a well-sized file only when deletes apply to it):
//!
//! ```text
//! table_penalty   = 0 if files <= 1, else min(files, F)/F * min(bytes, T)/T
//! small_files     = 1 - min(bytes/files, U)/U      (the mean size; see partition_score)
//! equality        = min(eq_records/records, R)/R
//! position        = min(pos_records/records, 2R)/(2R)
//! score           = ceil(100 - table_penalty * (40*small_files + 40*equality + 20*position))
//! ```
//!
//! F is `score-file-count` (12), T the target file size, U 75% of it, R the equality delete
//! ratio (0.1). A table's score is the mean of its partitions' scores (each partition holding
//! data counts; a partition that needs nothing scores 100), rounded up as Amoro rounds each.

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

/// A score and the points each part took off it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Score {
    /// 0 (needs care) to 100 (healthy).
    pub score: u32,
    /// Points lost to small files (at most 40).
    pub small_files: f64,
    /// Points lost to equality deletes (at most 40).
    pub equality_deletes: f64,
    /// Points lost to position deletes (at most 20).
    pub position_deletes: f64,
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
    let table_penalty = if input.files <= 1 {
        0.0
    } else {
        normalized(files, t.score_file_count as f64)
            * normalized(input.bytes as f64, t.target_file_size as f64)
    };
    // Amoro writes `getNormalizedRatio(dataFilesSize, dataFiles)`, min(bytes, files) / files:
    // 1 byte whenever a file holds one, so its small-file penalty is always full. The mean is
    // what its documentation describes, and what this uses.
    let average = if input.files == 0 {
        0.0
    } else {
        input.bytes as f64 / files
    };
    let records = input.records as f64;
    let small = 1.0 - normalized(average, t.min_file_size as f64);
    let eq = normalized(
        normalized(input.equality_delete_records as f64, records),
        t.equality_delete_ratio,
    );
    let pos = normalized(
        normalized(input.position_delete_records as f64, records),
        t.equality_delete_ratio * 2.0,
    );
    let parts = [
        table_penalty * 40.0 * small,
        table_penalty * 40.0 * eq,
        table_penalty * 20.0 * pos,
    ];
    let lost: f64 = parts.iter().sum();
    Score {
        score: (100.0 - lost).ceil().clamp(0.0, 100.0) as u32,
        small_files: parts[0],
        equality_deletes: parts[1],
        position_deletes: parts[2],
    }
}

/// Sums partition scores into the table's.
#[derive(Debug, Default)]
pub(crate) struct TableScore {
    partitions: u64,
    total: f64,
    parts: [f64; 3],
}

impl TableScore {
    pub fn add(&mut self, s: &Score) {
        self.partitions += 1;
        self.total += f64::from(s.score);
        self.parts[0] += s.small_files;
        self.parts[1] += s.equality_deletes;
        self.parts[2] += s.position_deletes;
    }

    pub fn finish(&self) -> Score {
        if self.partitions == 0 {
            return Score {
                score: 100,
                ..Score::default()
            };
        }
        let n = self.partitions as f64;
        let round = |v: f64| (v * 10.0).round() / 10.0;
        Score {
            score: (self.total / n).ceil().clamp(0.0, 100.0) as u32,
            small_files: round(self.parts[0] / n),
            equality_deletes: round(self.parts[1] / n),
            position_deletes: round(self.parts[2] / n),
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
        // 24 files of 1 MB against a 128 MB target: table penalty min(24,12)/12 *
        // min(24MB,128MB)/128MB = 0.1875; small = 1 - 1/96 (U = 96 MB).
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
        let penalty = 0.1875;
        let small = 1.0 - 1.0 / 96.0;
        assert!(
            (s.small_files - penalty * 40.0 * small).abs() < 1e-9,
            "{s:?} {t:?}"
        );
        assert!((s.equality_deletes - penalty * 40.0 * 0.5).abs() < 1e-9);
        assert!(
            (s.position_deletes - penalty * 20.0).abs() < 1e-9,
            "capped at 2R"
        );
        let lost = penalty * (40.0 * small + 40.0 * 0.5 + 20.0);
        assert_eq!(s.score, (100.0 - lost).ceil() as u32);
        // One file, or none: no penalty.
        let one = ScoreInput {
            files: 1,
            bytes: 10,
            records: 1,
            ..ScoreInput::default()
        };
        assert_eq!(partition_score(&one, &t).score, 100);
        // The worst: 12+ fragments filling the target, half the rows deleted both ways.
        let worst = ScoreInput {
            files: 1_000_000,
            bytes: 128_000_000,
            records: 100,
            equality_delete_records: 100,
            position_delete_records: 100,
        };
        let s = partition_score(&worst, &t);
        assert!(s.score <= 1, "{s:?}");
        let mut table = TableScore::default();
        table.add(&partition_score(&worst, &t));
        table.add(&partition_score(&one, &t));
        assert_eq!(
            table.finish().score,
            ((s.score + 100) as f64 / 2.0).ceil() as u32
        );
        assert_eq!(TableScore::default().finish().score, 100);
    }
}
