//! The streaming pass of `health`: delete manifests (they are few), then data manifests, into a
//! running total per partition. Nothing of a data file outlives its visit; the delete files are
//! kept as a few numbers each until the data files have said which of them still apply.

use std::collections::HashMap;

use iceberg::spec::{DataContentType, SnapshotRef, Struct};
use iceberg::table::Table;
use ops_core::Result;
use ops_core::ops::live_deletes::referenced_path;
use ops_core::ops::{ManifestCache, PartitionKey, each_live_data_file, each_live_delete_file};

use super::score::{ScoreInput, TableScore, partition_score};
use super::{PartitionHealth, SizeBucket, Skew, TableHealth};
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
    /// Files compaction takes as small (below 75% of the target).
    candidates: u64,
    /// Bytes and records of the fragments and undersized files.
    small_bytes: u64,
    small_records: u64,
    /// The two smallest candidates (Amoro's `min1SegmentFileSize`/`min2`).
    min1: u64,
    min2: u64,
    /// The lowest data sequence number of its files (what equality deletes apply by).
    min_seq: i64,
    /// The lowest sequence number of the commits that added its files (what position deletes
    /// apply by: no position delete names a file added after it).
    min_file_seq: i64,
    /// Every delete file of the partition, and its records.
    pos_files: u64,
    pos_records: u64,
    eq_files: u64,
    eq_records: u64,
    /// The records of the delete files that still apply (dangling ones left out; global
    /// equality deletes added once known).
    pos_live: u64,
    eq_live: u64,
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
            candidates: 0,
            small_bytes: 0,
            small_records: 0,
            min1: u64::MAX,
            min2: u64::MAX,
            min_seq: i64::MAX,
            min_file_seq: i64::MAX,
            pos_files: 0,
            pos_records: 0,
            eq_files: 0,
            eq_records: 0,
            pos_live: 0,
            eq_live: 0,
        }
    }
}

/// What is kept of a delete file until the data files are seen.
struct SeenDelete {
    key: PartitionKey,
    seq: i64,
    /// The sequence number of the commit that added it.
    file_seq: i64,
    records: u64,
    equality: bool,
    /// An equality delete of an unpartitioned spec: it applies to every partition.
    global: bool,
    /// A position delete scoped to one data file (Spark's): that file's path.
    referenced: Option<String>,
    /// Its referenced file is live with a sequence number it applies to.
    referenced_live: bool,
}

impl SeenDelete {
    /// Whether no live data file can take it any more (as `dangling_deletes` decides, the
    /// `file_path` bounds only where they name one file).
    fn dangling(&self, parts: &HashMap<PartitionKey, Part>, global_min_seq: i64) -> bool {
        if self.referenced.is_some() {
            return !self.referenced_live;
        }
        let part = parts.get(&self.key);
        if self.global {
            global_min_seq >= self.seq
        } else if self.equality {
            part.map_or(i64::MAX, |p| p.min_seq) >= self.seq
        } else {
            // Per partition only the lowest of each is kept: a partition whose oldest file and
            // earliest-added file are two files counts as one the delete may apply to (it is
            // kept: `remove-dangling-deletes` decides file by file).
            part.is_none_or(|p| p.min_seq > self.seq || p.min_file_seq > self.file_seq)
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

    // Delete files first: few, and the data files decide which still apply.
    let mut seen: Vec<SeenDelete> = Vec::new();
    let mut by_path: HashMap<String, Vec<usize>> = HashMap::new();
    let deletes = &mut report.deletes;
    each_live_delete_file(snapshot, cache, |live| {
        let size = live.file.file_size_in_bytes();
        let records = live.file.record_count();
        let equality = live.file.content_type() == DataContentType::EqualityDeletes;
        let key = live.key();
        let part = parts
            .entry(key.clone())
            .or_insert_with(|| Part::new(live.file.partition().clone()));
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
        let referenced = referenced_path(&live.file);
        if let Some(path) = &referenced {
            by_path.entry(path.clone()).or_default().push(seen.len());
        }
        seen.push(SeenDelete {
            key,
            seq: live.sequence_number,
            file_seq: live.file_sequence_number,
            records,
            equality,
            global: equality && crate::compact::unpartitioned(md, live.spec_id),
            referenced,
            referenced_live: false,
        });
        Ok(())
    })
    .await?;

    let mut histogram = [0u64; 65];
    let mut global_min_seq = i64::MAX;
    let data = &mut report.data;
    each_live_data_file(snapshot, cache, |live| {
        let size = live.file.file_size_in_bytes();
        let records = live.file.record_count();
        let seq = live.sequence_number;
        data.files += 1;
        data.bytes += size;
        data.records += records;
        histogram[(64 - size.leading_zeros()) as usize] += 1;
        global_min_seq = global_min_seq.min(seq);
        // Amoro's classes: fragments up to target/8, undersized up to 75% of the target.
        let class = if size <= t.fragment_size {
            &mut data.fragments
        } else if size <= t.min_file_size {
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
        if let Some(ids) = by_path.get(live.file.file_path()) {
            for &i in ids {
                if let Some(d) = seen.get_mut(i)
                    && live.sequence_number <= d.seq
                    && live.file_sequence_number <= d.file_seq
                {
                    d.referenced_live = true;
                }
            }
        }
        let part = parts
            .entry(live.key())
            .or_insert_with(|| Part::new(live.file.partition().clone()));
        part.files += 1;
        part.bytes += size;
        part.records += records;
        part.min_seq = part.min_seq.min(seq);
        part.min_file_seq = part.min_file_seq.min(live.file_sequence_number);
        if size <= t.min_file_size {
            if size <= t.fragment_size {
                part.fragments += 1;
            } else {
                part.undersized += 1;
            }
            part.small_bytes += size;
            part.small_records += records;
        }
        // Compaction's own rule: below 75% of the target.
        if size < t.min_file_size {
            part.candidates += 1;
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

    // Which delete files still apply: their records count for the score and the thresholds.
    let mut global: Vec<(i64, u64)> = Vec::new();
    for d in &seen {
        if d.dangling(&parts, global_min_seq) {
            report.deletes.dangling_files += 1;
        } else if d.global {
            global.push((d.seq, d.records));
        } else if let Some(part) = parts.get_mut(&d.key) {
            if d.equality {
                part.eq_live += d.records;
            } else {
                part.pos_live += d.records;
            }
        }
    }
    drop(seen);
    drop(by_path);
    for part in parts.values_mut().filter(|p| p.files > 0) {
        part.eq_live += global
            .iter()
            .filter(|(seq, _)| part.min_seq < *seq)
            .map(|(_, n)| n)
            .sum::<u64>();
    }
    let rows = report.data.records as f64;
    if rows > 0.0 {
        let round = |v: f64| (v * 10_000.0).round() / 10_000.0;
        let d = &mut report.deletes;
        d.position.ratio = round(d.position.records as f64 / rows);
        d.equality.ratio = round(d.equality.records as f64 / rows);
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
    let mut table_score = TableScore::default();
    let mut partitions: Vec<PartitionHealth> = parts
        .into_iter()
        .map(|((spec_id, _), p)| {
            let name = specs.get(&spec_id).map_or_else(String::new, |(s, ty)| {
                crate::compact::partition_name(s, ty.as_ref(), &p.raw)
            });
            let has_deletes = p.pos_live + p.eq_live > 0;
            // Amoro counts a well-sized file only when deletes apply to it.
            let input = if has_deletes {
                ScoreInput {
                    files: p.files,
                    bytes: p.bytes,
                    records: p.records,
                    equality_delete_records: p.eq_live,
                    position_delete_records: p.pos_live,
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
            // Compaction bin-packs a partition's small files: with the two smallest fitting
            // in one file, at least one group of two forms (first fit, largest first).
            let packs = p.candidates >= t.min_input_files as u64
                && p.min1.saturating_add(p.min2) <= t.target_file_size;
            let rows = p.records as f64;
            let deletes_past = p.eq_live as f64 > rows * t.equality_delete_ratio
                || p.pos_live as f64 > rows * t.position_delete_ratio;
            let current = spec_id == default_spec;
            PartitionHealth {
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
                small_files_due: current && p.files > 0 && packs,
                deletes_due: current && p.files > 0 && deletes_past,
                compaction_due: current && p.files > 0 && (packs || deletes_past),
            }
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
    report.data_partition_count = sizes.len() as u64;
    if sizes.len() >= 2 {
        sizes.sort_unstable();
        let n = sizes.len();
        // The median: the middle one, or the mean of the two in the middle.
        let median = if !n.is_multiple_of(2) {
            sizes[n / 2].0
        } else {
            (sizes[n / 2 - 1].0 + sizes[n / 2].0) / 2
        }
        .max(1);
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
            .then_with(|| b.compaction_due.cmp(&a.compaction_due))
            .then_with(|| a.partition.cmp(&b.partition))
            .then_with(|| a.spec_id.cmp(&b.spec_id))
    });
    report.partitions = partitions;
    Ok(())
}
