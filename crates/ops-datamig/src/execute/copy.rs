//! The file copy: source data files copied byte for byte (or referenced in place) into the
//! destination instead of decoded, projected and re-encoded — for files routed to
//! [`FileRoute::Copy`] or [`FileRoute::Reference`] (see `plan::route`).
//!
//! 1. [`copy_files`] copies with ranged reads of [`COPY_CHUNK_BYTES`] (never a whole file in
//!    memory), a few files at once, into the destination's data location, or references the
//!    source path;
//! 2. it builds each [`DataFile`] from the source manifest entry's metrics, with the partition
//!    tuple mapped onto the destination's fields (a source `void` field's NULL left out, a
//!    destination `void` field's NULL put in) and it and the bounds typed for the destination;
//! 3. the caller commits them (e.g. `AppendBuilder::add_written`), one group of whole files per
//!    batch. A failed copy deletes every file the call wrote.

use std::collections::HashMap;

use futures::StreamExt;
use iceberg::io::FileIO;
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, Datum, Literal, PartitionKey,
    PartitionSpec, PrimitiveLiteral, PrimitiveType, Struct, Type,
};
use iceberg::table::Table;
use ops_core::location::DataLocations;
use ops_core::write::WrittenFiles;

use crate::plan::eligibility::{describe_spec, is_promotion, partition_map};
use crate::plan::route::PlannedFile;
use crate::{FileRoute, MigrationError, Result};

/// Bytes read and written per request when copying a file.
pub const COPY_CHUNK_BYTES: u64 = 4 * 1024 * 1024;

/// Files copied at once by [`copy_files`] (memory: this many chunks in flight).
const COPY_CONCURRENCY: usize = 4;

/// Copies (`FileRoute::Copy`) or references (`FileRoute::Reference`) source data files into
/// `dest`, returning them ready to commit under the destination's default spec. Each file
/// comes with the source spec it was written under ([`PlannedFile::spec_id`], as
/// [`route_files`](crate::route_files) returns it), which places its partition values.
///
/// Copies stream [`COPY_CHUNK_BYTES`] at a time, a few files at once. If any copy fails, every
/// file this call wrote is deleted (best effort) and the first error is returned.
pub async fn copy_files(
    source: &Table,
    dest: &Table,
    files: &[PlannedFile],
    route: FileRoute,
) -> Result<WrittenFiles> {
    if !matches!(route, FileRoute::Copy | FileRoute::Reference) {
        return Err(MigrationError::InvalidInput(format!(
            "copy_files takes files routed to copy or reference, not {route}"
        )));
    }
    let target = CopyTarget::new(source, dest)?;
    // A plain queue of calls rather than `stream::iter(..).map(closure).buffered(..)`: the
    // closure's higher-ranked lifetimes make the future not provably `Send` for `tokio::spawn`
    // (rust-lang/rust#102211).
    let mut results: Vec<Result<DataFile>> = Vec::with_capacity(files.len());
    let mut pending = futures::stream::FuturesOrdered::new();
    for file in files {
        if pending.len() >= COPY_CONCURRENCY
            && let Some(r) = pending.next().await
        {
            results.push(r);
        }
        pending.push_back(target.one(source, dest, file, route));
    }
    while let Some(r) = pending.next().await {
        results.push(r);
    }
    let mut out = Vec::with_capacity(results.len());
    let mut first_error = None;
    for r in results {
        match r {
            Ok(f) => out.push(f),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_error {
        if route == FileRoute::Copy {
            for f in &out {
                remove_quietly(dest.file_io(), f.file_path()).await;
            }
        }
        return Err(e);
    }
    Ok(WrittenFiles {
        spec_id: target.spec.spec_id(),
        files: out,
    })
}

/// The destination facts every copied file needs.
struct CopyTarget {
    spec: PartitionSpec,
    schema: iceberg::spec::SchemaRef,
    partition_types: Vec<Option<PrimitiveType>>,
    /// Source spec id → where each destination partition value comes from (see
    /// [`partition_map`]); a spec whose layout differs is absent.
    partition_maps: HashMap<i32, Vec<Option<usize>>>,
    locations: DataLocations,
    /// Source sort order id → the id the destination keeps for it (same fields).
    sort_orders: HashMap<i64, i32>,
}

impl CopyTarget {
    fn new(source: &Table, dest: &Table) -> Result<Self> {
        let md = dest.metadata();
        let spec = md.default_partition_spec().as_ref().clone();
        let schema = md.current_schema().clone();
        let partition_types = spec
            .partition_type(&schema)?
            .fields()
            .iter()
            .map(|f| f.field_type.as_primitive_type().cloned())
            .collect();
        let partition_maps = source
            .metadata()
            .partition_specs_iter()
            .filter_map(|s| Some((s.spec_id(), partition_map(s, &spec)?)))
            .collect();
        let mut sort_orders = HashMap::new();
        for order in source.metadata().sort_orders_iter() {
            if let Some(same) = md.sort_order_by_id(order.order_id)
                && same.fields == order.fields
            {
                sort_orders.insert(order.order_id, same.order_id as i32);
            }
        }
        Ok(Self {
            spec,
            schema,
            partition_types,
            partition_maps,
            locations: DataLocations::for_table(md)?,
            sort_orders,
        })
    }

    async fn one(
        &self,
        source: &Table,
        dest: &Table,
        planned: &PlannedFile,
        route: FileRoute,
    ) -> Result<DataFile> {
        let file = planned.data_file.as_deref().ok_or_else(|| {
            MigrationError::InvalidInput(format!(
                "{} is routed to {} without its manifest entry; route it with route_files \
                 (which keeps the entry of every file it copies or references)",
                planned.routed.path, planned.routed.route
            ))
        })?;
        let partition = self.partition(source, file, planned.spec_id)?;
        let (path, copied) = match route {
            FileRoute::Reference => (file.file_path().to_string(), false),
            _ => {
                let key = (!self.spec.is_unpartitioned()).then(|| {
                    PartitionKey::new(self.spec.clone(), self.schema.clone(), partition.clone())
                });
                let name = format!("{}-copy.parquet", uuid::Uuid::now_v7());
                let to = self.locations.path(key.as_ref(), &name)?;
                if let Err(e) = stream_copy(source, dest, file, &to).await {
                    remove_quietly(dest.file_io(), &to).await;
                    return Err(e);
                }
                (to, true)
            }
        };
        let described = self.describe(file, path.clone(), partition);
        keep_if_described(dest.file_io(), copied.then_some(path.as_str()), described).await
    }

    /// The destination's entry for `file` at `path`.
    fn describe(&self, file: &DataFile, path: String, partition: Struct) -> Result<DataFile> {
        let mut b = DataFileBuilder::default();
        b.content(DataContentType::Data)
            .file_path(path)
            .file_format(DataFileFormat::Parquet)
            .partition(partition)
            .partition_spec_id(self.spec.spec_id())
            .record_count(file.record_count())
            .file_size_in_bytes(file.file_size_in_bytes())
            .column_sizes(self.known(file.column_sizes()))
            .value_counts(self.known(file.value_counts()))
            .null_value_counts(self.known(file.null_value_counts()))
            .nan_value_counts(self.known(file.nan_value_counts()))
            .lower_bounds(self.bounds(file.lower_bounds()))
            .upper_bounds(self.bounds(file.upper_bounds()))
            .key_metadata(file.key_metadata().map(<[u8]>::to_vec))
            .split_offsets(file.split_offsets().map(<[i64]>::to_vec));
        if let Some(id) = file
            .sort_order_id()
            .and_then(|id| self.sort_orders.get(&i64::from(id)))
        {
            b.sort_order_id(*id);
        }
        b.build().map_err(|e| {
            MigrationError::InvalidInput(format!(
                "cannot describe the copy of {}: {e}",
                file.file_path()
            ))
        })
    }

    /// The source partition tuple (of source spec `spec_id`) as the destination's: mapped onto
    /// its fields by [`partition_map`] (the same layout, `void` fields aside, checked when
    /// routing) and typed as them (a widened identity/truncate column turns `int` into `long`).
    fn partition(&self, source: &Table, file: &DataFile, spec_id: i32) -> Result<Struct> {
        let md = source.metadata();
        let (Some(spec), Some(map)) = (
            md.partition_spec_by_id(spec_id),
            self.partition_maps.get(&spec_id),
        ) else {
            return Err(MigrationError::InvalidInput(format!(
                "{} was written under source partition spec {spec_id}, which {} the \
                 destination's [{}]; route files with route_files before copying",
                file.file_path(),
                match md.partition_spec_by_id(spec_id) {
                    Some(s) => format!("[{}] does not lay out as", describe_spec(s)),
                    None => "the source metadata lacks, so it cannot match".to_string(),
                },
                describe_spec(&self.spec)
            )));
        };
        let values = file.partition();
        if values.fields().len() != spec.fields().len() {
            return Err(MigrationError::InvalidInput(format!(
                "{} has {} partition values but its source spec {spec_id} has {} fields",
                file.file_path(),
                values.fields().len(),
                spec.fields().len()
            )));
        }
        map.iter()
            .map(|from| from.and_then(|i| values.fields().get(i)?.as_ref()))
            .zip(&self.partition_types)
            .map(|(v, want)| match (v, want) {
                (None, _) => Ok(None),
                (Some(Literal::Primitive(p)), Some(want)) => fit(p, want)
                    .map(|p| Some(Literal::Primitive(p)))
                    .ok_or_else(|| {
                        MigrationError::InvalidInput(format!(
                            "partition value {p:?} of {} does not fit the destination's {want}",
                            file.file_path()
                        ))
                    }),
                (Some(other), _) => Err(MigrationError::InvalidInput(format!(
                    "partition value {other:?} of {} is not a primitive",
                    file.file_path()
                ))),
            })
            .collect()
    }

    /// Metrics of field ids the destination schema has (a dropped column's are left out).
    fn known(&self, m: &HashMap<i32, u64>) -> HashMap<i32, u64> {
        m.iter()
            .filter(|(id, _)| self.schema.field_by_id(**id).is_some())
            .map(|(k, v)| (*k, *v))
            .collect()
    }

    /// Bounds re-typed to the destination field's type: an `int` bound of a column now `long`
    /// is rewritten as a long, so every reader decodes 8 bytes (iceberg-rust also reads 4, but
    /// not every engine does). A bound that cannot be re-typed is dropped: bounds are optional.
    fn bounds(&self, m: &HashMap<i32, Datum>) -> HashMap<i32, Datum> {
        m.iter()
            .filter_map(|(id, d)| {
                let want = self
                    .schema
                    .field_by_id(*id)?
                    .field_type
                    .as_primitive_type()?;
                let widened = widen(d, want);
                if widened.is_none() {
                    tracing::debug!(field_id = id, bound = %d, to = %want, "dropping a bound");
                }
                Some((*id, widened?))
            })
            .collect()
    }
}

/// `p` as a value of `want`: unchanged, or promoted `int`→`long` / `float`→`double`.
fn fit(p: &PrimitiveLiteral, want: &PrimitiveType) -> Option<PrimitiveLiteral> {
    use PrimitiveLiteral as L;
    use PrimitiveType as T;
    Some(match (p, want) {
        (L::Int(i), T::Long) => L::Long(i64::from(*i)),
        (L::Float(f), T::Double) => L::Double(f64::from(f.0).into()),
        (L::Boolean(_), T::Boolean)
        | (L::Int(_), T::Int | T::Date)
        | (
            L::Long(_),
            T::Long | T::Time | T::Timestamp | T::Timestamptz | T::TimestampNs | T::TimestamptzNs,
        )
        | (L::Float(_), T::Float)
        | (L::Double(_), T::Double)
        | (L::String(_), T::String)
        | (L::Binary(_), T::Binary | T::Fixed(_))
        | (L::Int128(_), T::Decimal { .. })
        | (L::UInt128(_), T::Uuid) => p.clone(),
        _ => return None,
    })
}

/// `d` as a datum of `want` (identity or a promotion).
fn widen(d: &Datum, want: &PrimitiveType) -> Option<Datum> {
    if d.data_type() == want {
        return Some(d.clone());
    }
    match (d.literal(), want) {
        (PrimitiveLiteral::Float(f), PrimitiveType::Double) => Some(Datum::double(f64::from(f.0))),
        _ if is_promotion(d.data_type(), want) => d
            .clone()
            .to(&Type::Primitive(want.clone()))
            .ok()
            .filter(|w| w.data_type() == want),
        _ => None,
    }
}

/// Streams the bytes of `file` from the source's storage to `to` in the destination's.
async fn stream_copy(source: &Table, dest: &Table, file: &DataFile, to: &str) -> Result<()> {
    let from = file.file_path();
    let size = file.file_size_in_bytes();
    let input = source.file_io().new_input(from)?;
    // The manifest's size is what the copy's entry will claim: a file of another size would
    // be copied short or described wrongly.
    let actual = input.metadata().await?.size;
    if actual != size {
        return Err(MigrationError::InvalidInput(format!(
            "{from} is {actual} bytes but its manifest entry says {size}; rewrite it \
             (--copy-mode rewrite) or repair the source"
        )));
    }
    let reader = input.reader().await?;
    let mut writer = dest.file_io().new_output(to)?.writer().await?;
    let mut offset = 0u64;
    while offset < size {
        let end = (offset + COPY_CHUNK_BYTES).min(size);
        let chunk = reader.read(offset..end).await?;
        if chunk.len() as u64 != end - offset {
            return Err(MigrationError::InvalidInput(format!(
                "{from}: read {} bytes at offset {offset}, expected {}",
                chunk.len(),
                end - offset
            )));
        }
        writer.write(chunk).await?;
        offset = end;
    }
    writer.close().await?;
    tracing::debug!(from, to, bytes = size, "copied data file");
    Ok(())
}

/// `described` as the result of a copy to `copied` (`None` for a reference), deleting the copy
/// when it could not be described: no entry will ever name it, so it would be an orphan.
async fn keep_if_described(
    io: &FileIO,
    copied: Option<&str>,
    described: Result<DataFile>,
) -> Result<DataFile> {
    if described.is_err()
        && let Some(path) = copied
    {
        remove_quietly(io, path).await;
    }
    described
}

async fn remove_quietly(io: &FileIO, path: &str) {
    if let Err(e) = io.delete(path).await {
        tracing::warn!(path, error = %e, "could not delete a partial copy; remove it by hand");
    }
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{FormatVersion, UnboundPartitionSpec};
    use ops_reconcile::ReconciliationPlan;

    use super::*;
    use crate::testing::orders;

    #[test]
    fn bounds_and_partition_values_are_retyped_for_a_widened_column() {
        assert_eq!(
            widen(&Datum::int(7), &PrimitiveType::Long),
            Some(Datum::long(7))
        );
        assert_eq!(
            widen(&Datum::float(1.5), &PrimitiveType::Double),
            Some(Datum::double(1.5))
        );
        let narrow = PrimitiveType::Decimal {
            precision: 10,
            scale: 2,
        };
        // 12.34: unscaled 1234, big-endian.
        let d = Datum::try_from_bytes(&[0x04, 0xD2], narrow).unwrap();
        let wide = PrimitiveType::Decimal {
            precision: 20,
            scale: 2,
        };
        let w = widen(&d, &wide).unwrap();
        assert_eq!((w.data_type(), w.literal()), (&wide, d.literal()));
        assert_eq!(widen(&Datum::long(7), &PrimitiveType::Int), None);
        assert_eq!(
            fit(&PrimitiveLiteral::Int(3), &PrimitiveType::Long),
            Some(PrimitiveLiteral::Long(3))
        );
        assert_eq!(fit(&PrimitiveLiteral::Long(3), &PrimitiveType::Int), None);
    }

    #[tokio::test]
    async fn a_copy_that_cannot_be_described_is_deleted() {
        let io = FileIO::new_with_memory();
        let path = "memory:///wh/dst/data/x-copy.parquet";
        io.new_output(path)
            .unwrap()
            .write(vec![1u8, 2, 3].into())
            .await
            .unwrap();
        let failed = || Err(MigrationError::InvalidInput("no entry".into()));
        // A reference is the source's file: never deleted.
        assert!(keep_if_described(&io, None, failed()).await.is_err());
        assert!(io.exists(path).await.unwrap());
        assert!(keep_if_described(&io, Some(path), failed()).await.is_err());
        assert!(!io.exists(path).await.unwrap());
    }

    #[tokio::test]
    async fn discard_never_deletes_outside_the_destination() {
        let s = orders();
        let md = iceberg::spec::TableMetadataBuilder::new(
            s.as_ref().clone(),
            UnboundPartitionSpec::builder().build(),
            iceberg::spec::SortOrder::unsorted_order(),
            "memory:///wh/dst/events".to_string(),
            FormatVersion::V2,
            HashMap::new(),
        )
        .unwrap()
        .build()
        .unwrap()
        .metadata;
        let io = FileIO::new_with_memory();
        let dest = Table::builder()
            .metadata(md)
            .identifier(iceberg::TableIdent::from_strs(["dst", "events"]).unwrap())
            .file_io(io.clone())
            .runtime(iceberg::Runtime::current())
            .build()
            .unwrap();
        let ours = "memory:///wh/dst/events/data/a-copy.parquet";
        // A referenced source file, and one under a sibling whose name extends the location.
        let theirs = "memory:///wh/src/events/data/a.parquet";
        let sibling = "memory:///wh/dst/events2/data/a.parquet";
        let mut files = Vec::new();
        for path in [ours, theirs, sibling] {
            io.new_output(path)
                .unwrap()
                .write(vec![1u8].into())
                .await
                .unwrap();
            files.push(
                DataFileBuilder::default()
                    .content(DataContentType::Data)
                    .file_path(path.to_string())
                    .file_format(DataFileFormat::Parquet)
                    .record_count(1)
                    .file_size_in_bytes(1)
                    .build()
                    .unwrap(),
            );
        }
        let payload = crate::execute::worker::Payload::Written(WrittenFiles { spec_id: 0, files });
        crate::execute::worker::discard(&dest, payload).await;
        assert!(!io.exists(ours).await.unwrap());
        assert!(io.exists(theirs).await.unwrap());
        assert!(io.exists(sibling).await.unwrap());
    }

    /// The migrator spawns it on tokio tasks.
    #[allow(dead_code)]
    fn futures_are_send(a: &Table, b: &Table, f: &[PlannedFile], _p: &ReconciliationPlan) {
        fn send<T: Send>(_: T) {}
        send(copy_files(a, b, f, FileRoute::Copy));
    }
}
