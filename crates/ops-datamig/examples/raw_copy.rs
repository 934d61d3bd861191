//! The floor a data migration is measured against: a plain arrow-rs Parquet read→write of the
//! same files, no Iceberg, no catalog, no projection.
//!
//!     cargo run --release -p ops-datamig --example raw_copy -- SRC_DIR OUT_DIR [--threads N] [--batch-rows N]
//!
//! Every `*.parquet` file under `SRC_DIR` is read in `--batch-rows` batches (default 65,536) and
//! written to its own file in `OUT_DIR` with zstd (parquet-rs's default level), the files split
//! over `--threads` OS threads (default 1) by size. Prints one JSON line: tool, threads, files,
//! rows, bytes_in, bytes_out, seconds, rows_per_s. `scripts/bench-migrate` measures its peak RSS.

use std::error::Error;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow_array::RecordBatchReader;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

type Res<T> = Result<T, Box<dyn Error + Send + Sync>>;

struct Args {
    src: PathBuf,
    out: PathBuf,
    threads: usize,
    batch_rows: usize,
}

fn parse_args() -> Res<Args> {
    let usage = "usage: raw_copy SRC_DIR OUT_DIR [--threads N] [--batch-rows N]";
    let mut positional = Vec::new();
    let (mut threads, mut batch_rows) = (1usize, 65_536usize);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--threads" | "--batch-rows" => {
                let v: usize = it
                    .next()
                    .ok_or_else(|| format!("{a} needs a value; {usage}"))?
                    .parse()
                    .map_err(|_| format!("{a} takes a positive integer; {usage}"))?;
                if v == 0 {
                    return Err(format!("{a} must be at least 1").into());
                }
                if a == "--threads" {
                    threads = v;
                } else {
                    batch_rows = v;
                }
            }
            _ => positional.push(PathBuf::from(a)),
        }
    }
    let [src, out] = <[PathBuf; 2]>::try_from(positional).map_err(|_| usage.to_string())?;
    Ok(Args {
        src,
        out,
        threads,
        batch_rows,
    })
}

fn parquet_files(dir: &Path, found: &mut Vec<(PathBuf, u64)>) -> Res<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| format!("read {}: {e}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            parquet_files(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            found.push((path, entry.metadata()?.len()));
        }
    }
    Ok(())
}

/// Copies `files` one after the other; returns (rows, bytes written).
fn copy_files(files: &[(PathBuf, usize)], out: &Path, batch_rows: usize) -> Res<(u64, u64)> {
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let (mut rows, mut bytes) = (0u64, 0u64);
    for (path, n) in files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?
            .with_batch_size(batch_rows)
            .build()?;
        let dest = out.join(format!("{n:05}.parquet"));
        let mut writer =
            ArrowWriter::try_new(File::create(&dest)?, reader.schema(), Some(props.clone()))?;
        for batch in reader {
            let batch = batch?;
            rows += batch.num_rows() as u64;
            writer.write(&batch)?;
        }
        writer.close()?;
        bytes += std::fs::metadata(&dest)?.len();
    }
    Ok((rows, bytes))
}

fn main() -> Res<()> {
    let args = parse_args()?;
    let mut found = Vec::new();
    parquet_files(&args.src, &mut found)?;
    if found.is_empty() {
        return Err(format!("no *.parquet file under {}", args.src.display()).into());
    }
    std::fs::create_dir_all(&args.out)?;
    let bytes_in: u64 = found.iter().map(|(_, len)| len).sum();
    // Largest first onto the least loaded thread, so the threads finish together.
    found.sort_by_key(|f| std::cmp::Reverse(f.1));
    let mut shares: Vec<(u64, Vec<(PathBuf, usize)>)> = vec![(0, Vec::new()); args.threads];
    for (n, (path, len)) in found.iter().enumerate() {
        if let Some(share) = shares.iter_mut().min_by_key(|s| s.0) {
            share.0 += len;
            share.1.push((path.clone(), n));
        }
    }
    let start = Instant::now();
    let results: Vec<Res<(u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = shares
            .iter()
            .map(|(_, files)| s.spawn(|| copy_files(files, &args.out, args.batch_rows)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a copy thread panicked".into()))
            })
            .collect()
    });
    let seconds = start.elapsed().as_secs_f64();
    let (mut rows, mut bytes_out) = (0u64, 0u64);
    for r in results {
        let (r, b) = r?;
        rows += r;
        bytes_out += b;
    }
    println!(
        "{}",
        serde_json::json!({
            "tool": "raw-arrow-rs",
            "threads": args.threads,
            "batch_rows": args.batch_rows,
            "files": found.len(),
            "rows": rows,
            "bytes_in": bytes_in,
            "bytes_out": bytes_out,
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "rows_per_s": (rows as f64 / seconds).round(),
        })
    );
    Ok(())
}
