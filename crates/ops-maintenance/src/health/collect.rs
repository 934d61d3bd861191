//! The streaming pass of `health`: data manifests, then delete manifests, into a running total
//! per partition. Nothing of a file outlives its visit.

use std::collections::HashMap;

use iceberg::spec::{DataContentType, SnapshotRef, Struct};
use iceberg::table::Table;
use ops_core::Result;
use ops_core::ops::{ManifestCache, PartitionKey, each_live_data_file, each_live_delete_file};

use super::score::{ScoreInput, TableScore, partition_score};
use super::{PartitionHealth, SizeBucket, Skew, TableHealth, deletes_past};
use crate::policy::Thresholds;

/// One partition's running totals.
struct Part {
    /// The tuple as first seen (for its name).
    raw: Struct,
    files: u64,
    bytes: u64,
    records: u64,
    fragments: u64,
    undersized: u64,
    /// Bytes and records of the fragments and undersized files.
    small_bytes: u64,
    small_records: u64,
    /// The two smallest small files (Amoro's `min1SegmentFileSize`/`min2`).
    min1: u64,
    min2: u64,
    /// The lowest data sequence number of its files.
    min_seq: i64,
    pos_files: u64,
    pos_records: u64,
    eq_files: u64,
    eq_records: u64,
}

impl Part {
    fn new(raw: Struct) -> Self {
        Self {
            raw,
            files: 0,
            bytes: 0,
            records: 0,
            fragments: 0,
            undersized: 0,
            small_bytes: 0,
            small_records: 0,
            min1: u64::MAX,
            min2: u64::MAX,
            min_seq: i64::MAX,
            pos_files: 0,
            pos_records: 0,
            eq_files: 0,
            eq_records: 0,
        }
    }
}

/// Streams the live files of `snapshot` into `report` (data, deletes, histogram, partitions,
/// skew, score, compaction due).
pub(super) async fn files(
    table: &Table,
    snapshot: &SnapshotRef,
    cache: &ManifestCache,
    t: &Thresholds,
    report: &mut TableHealth,
) -> Result<()> {
    let md = table.metadata();
    let default_spec = md.default_partition_spec_id();
    let mut parts: HashMap<PartitionKey, Part> = HashMap::new();
    let mut histogram = [0u64; 65];
    let mut global_min_seq = i64::MAX;
    let data = &mut report.data;
    each_live_data_file(snapshot, cache, |live| {
        let size = live.file.file_size_in_bytes();
        let records = live.file.record_count();
        data.files += 1;
        data.bytes += size;
        data.records += records;
        histogram[(64 - size.leading_zeros()) as usize] += 1;
        global_min_seq = global_min_seq.min(live.sequence_number);
        let class = if size <= t.fragment_size {
            &mut data.fragments
        } else if size < t.min_file_size {
            &mut data.undersized
        } else {
            &mut data.well_sized
        };
        class.files += 1;
        class.bytes += size;
        if live.spec_id != default_spec {
            data.other_spec.files += 1;
            data.other_spec.bytes += size;
        }
        let key = live.key();
        let part = parts
            .entry(key)
            .or_insert_with(|| Part::new(live.file.partition().clone()));
        part.files += 1;
        part.bytes += size;
        part.records += records;
        part.min_seq = part.min_seq.min(live.sequence_number);
        if size < t.min_file_size {
            if size <= t.fragment_size {
                part.fragments += 1;
            } else {
                part.undersized += 1;
            }
            part.small_bytes += size;
            part.small_records += records;
            if size < part.min1 {
                part.min2 = part.min1;
                part.min1 = size;
            } else if size < part.min2 {
                part.min2 = size;
            }
        }
        Ok(())
    })
    .await?;
    data.mean_bytes = data.bytes.checked_div(data.files).unwrap_or(0);

    let deletes = &mut report.deletes;
    each_live_delete_file(snapshot, cache, |live| {
        let size = live.file.file_size_in_bytes();
        let records = live.file.record_count();
        let seq = live.sequence_number;
        let equality = live.file.content_type() == DataContentType::EqualityDeletes;
        let global = equality && crate::compact::unpartitioned(md, live.spec_id);
        let key = live.key();
        let part = parts
            .entry(key)
            .or_insert_with(|| Part::new(live.file.partition().clone()));
        // By sequence numbers alone (a position delete's path bounds may rule out more).
        let dangling = if global {
            global_min_seq >= seq
        } else if equality {
            part.min_seq >= seq
        } else {
            part.min_seq > seq
        };
        if dangling {
            deletes.dangling_files += 1;
        }
        let class = if equality {
            part.eq_files += 1;
            part.eq_records += records;
            &mut deletes.equality
        } else {
            part.pos_files += 1;
            part.pos_records += records;
            &mut deletes.position
        };
        class.files += 1;
        class.bytes += size;
        class.records += records;
        Ok(())
    })
    .await?;
    let rows = report.data.records as f64;
    if rows > 0.0 {
        let round = |v: f64| (v * 10_000.0).round() / 10_000.0;
        deletes.position.ratio = round(deletes.position.records as f64 / rows);
        deletes.equality.ratio = round(deletes.equality.records as f64 / rows);
    }

    let first = histogram.iter().position(|n| *n > 0);
    let last = histogram.iter().rposition(|n| *n > 0);
    if let (Some(first), Some(last)) = (first, last) {
        report.size_histogram = (first..=last)
            .map(|bits| SizeBucket {
                min_bytes: if bits == 0 { 0 } else { 1u64 << (bits - 1) },
                max_bytes: if bits == 0 {
                    0
                } else if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                },
                files: histogram[bits],
            })
            .collect();
    }

    let schema = md.current_schema();
    let specs: HashMap<i32, _> = md
        .partition_specs_iter()
        .map(|s| (s.spec_id(), (s.clone(), s.partition_type(schema).ok())))
        .collect();
    let threshold_report = report.thresholds.clone();
    let mut table_score = TableScore::default();
    let mut partitions: Vec<PartitionHealth> = parts
        .into_iter()
        .map(|((spec_id, _), p)| {
            let name = specs.get(&spec_id).map_or_else(String::new, |(s, ty)| {
                crate::compact::partition_name(s, ty.as_ref(), &p.raw)
            });
            let has_deletes = p.pos_files + p.eq_files > 0;
            // Amoro counts a well-sized file only when deletes apply to it.
            let input = if has_deletes {
                ScoreInput {
                    files: p.files,
                    bytes: p.bytes,
                    records: p.records,
                    equality_delete_records: p.eq_records,
                    position_delete_records: p.pos_records,
                }
            } else {
                ScoreInput {
                    files: p.fragments + p.undersized,
                    bytes: p.small_bytes,
                    records: p.small_records,
                    ..ScoreInput::default()
                }
            };
            let score = partition_score(&input, t);
            if p.files > 0 {
                table_score.add(&score);
            }
            let mut health = PartitionHealth {
                spec_id,
                partition: name,
                data_files: p.files,
                data_bytes: p.bytes,
                data_records: p.records,
                fragments: p.fragments,
                undersized: p.undersized,
                position_delete_files: p.pos_files,
                position_delete_records: p.pos_records,
                equality_delete_files: p.eq_files,
                equality_delete_records: p.eq_records,
                score,
                compaction_due: false,
            };
            let small = p.fragments + p.undersized;
            // Compaction bin-packs a partition's small files: with the two smallest fitting
            // in one file, at least one group of two forms (first fit, largest first).
            let packs = small >= t.min_input_files as u64
                && p.min1.saturating_add(p.min2) <= t.target_file_size;
            health.compaction_due = spec_id == default_spec
                && p.files > 0
                && (packs || deletes_past(&health, &threshold_report));
            health
        })
        .collect();
    report.score = table_score.finish();
    report.due.compact_partitions = partitions.iter().filter(|p| p.compaction_due).count() as u64;
    report.partition_count = partitions.len() as u64;

    let mut sizes: Vec<(u64, &str)> = partitions
        .iter()
        .filter(|p| p.data_files > 0)
        .map(|p| (p.data_bytes, p.partition.as_str()))
        .collect();
    if sizes.len() >= 2 {
        sizes.sort_unstable();
        let median = sizes[(sizes.len() - 1) / 2].0.max(1);
        if let Some((largest_bytes, largest)) = sizes.last() {
            report.skew = Some(Skew {
                largest: largest.to_string(),
                largest_bytes: *largest_bytes,
                median_bytes: median,
                ratio: ((*largest_bytes as f64 / median as f64) * 10.0).round() / 10.0,
            });
        }
    }
    partitions.sort_by(|a, b| {
        a.score
            .score
            .cmp(&b.score.score)
            .then_with(|| a.partition.cmp(&b.partition))
            .then_with(|| a.spec_id.cmp(&b.spec_id))
    });
    report.partitions = partitions;
    Ok(())
}
