//! `DataMigrator::verify`: does the destination hold what the source (filtered, pinned) holds?
//!
//! - `row_count` — source rows against destination rows, from the manifests' record counts;
//!   a file is read only where delete files apply to it or the row filter cannot be decided for
//!   the whole file from its identity-partition values (evaluated with SQL's three-valued logic;
//!   a filter on another column, a value written before a widening, or floating point leave it
//!   to the read).
//! - `partition_hash` — both sides are streamed; every row (the projected destination columns)
//!   is encoded canonically with arrow's row format and hashed (xxh3-128); per destination
//!   partition (any transform, computed from the row) the count and the wrapping sum of the row
//!   hashes form an order-independent digest. Memory is one entry per partition, never a table.
//! - `sample` — on each side the `sample_size` rows with the smallest row hashes (a bottom-k
//!   sketch, streamed): the same rows are chosen on both sides whatever the read order, so a
//!   large identical copy never reports a false mismatch.
//!
//! Caveat (the seed's): the source is compared with the destination's whole current state.
//! Rows the destination held before the migration, upserts and partition overwrites make the
//! sides differ by design; interpret the result accordingly.

use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{Schema, SchemaRef};
use futures::StreamExt;
use futures::stream::BoxStream;
use iceberg::expr::{Bind, BoundPredicate, BoundReference, Predicate, PredicateOperator};
use iceberg::spec::{
    Datum, Literal, ManifestContentType, PartitionSpec, PartitionSpecRef, PrimitiveLiteral,
    PrimitiveType, Struct, Transform,
};
use iceberg::table::Table;
use iceberg::transform::{BoxedTransformFunction, create_transform_function};
use ops_reconcile::ReconciliationPlan;
use twox_hash::XxHash3_128;

use crate::read::PlannedRead;
use crate::{DataMigrator, MigrationError, Result, VerificationResult, VerifyMethod};

pub(crate) async fn verify(
    m: &DataMigrator,
    method: VerifyMethod,
    sample_size: usize,
) -> Result<VerificationResult> {
    if method == VerifyMethod::Sample && sample_size == 0 {
        return Err(MigrationError::InvalidInput(
            "sample_size must be at least 1 for method sample".into(),
        ));
    }
    let source = m.source.load().await?;
    let dest = m.dest.load().await?;
    let snapshot = m
        .source_snapshot
        .or(m.last_source_snapshot)
        .or_else(|| source.metadata().current_snapshot_id());
    let predicate = m.predicate(&source, snapshot)?;
    let src_read = PlannedRead::plan(&source, snapshot, predicate.clone()).await?;
    let dst_read = PlannedRead::plan(&dest, dest.metadata().current_snapshot_id(), None).await?;
    let mut result = VerificationResult {
        method,
        matches: false,
        source_count: None,
        dest_count: None,
        sample_size: None,
        mismatched_partitions: Vec::new(),
        details: Vec::new(),
    };
    match method {
        VerifyMethod::RowCount => {
            let s = count(&src_read, &source, predicate.as_ref()).await?;
            let d = count(&dst_read, &dest, None).await?;
            result.source_count = Some(s);
            result.dest_count = Some(d);
            result.matches = s == d;
            if s != d {
                result.details.push(format!(
                    "source has {s} row(s) (after filter, at snapshot {}), destination has {d}",
                    snapshot.map_or("none".into(), |s| s.to_string())
                ));
            }
        }
        VerifyMethod::PartitionHash | VerifyMethod::Sample => {
            let plan = m.compute_plan(&source, &dest)?;
            let side = Compared::new(&plan, &dest)?;
            let src = side.source_stream(src_read.stream(&source, 65_536)?, plan.clone());
            let dst = side.dest_stream(dst_read.stream(&dest, 65_536)?);
            if method == VerifyMethod::PartitionHash {
                let a = side.partition_digests(src).await?;
                let b = side.partition_digests(dst).await?;
                compare_partitions(&a, &b, &mut result);
            } else {
                let a = side.bottom_k(src, sample_size).await?;
                let b = side.bottom_k(dst, sample_size).await?;
                compare_samples(a, b, sample_size, &mut result);
            }
        }
    }
    Ok(result)
}

/// Rows of `read`, from the manifests' record counts wherever that is exact: a file no delete
/// file applies to, under no filter or a filter decided for the whole file by its
/// identity-partition values. Only the other files are read.
async fn count(read: &PlannedRead, table: &Table, filter: Option<&Predicate>) -> Result<u64> {
    let Some(snapshot_id) = read.snapshot_id else {
        return Ok(0);
    };
    let md = table.metadata();
    let bound = match filter {
        None => None,
        Some(f) => {
            let schema = md
                .snapshot_by_id(snapshot_id)
                .and_then(|s| s.schema_id())
                .and_then(|id| md.schema_by_id(id))
                .unwrap_or_else(|| md.current_schema())
                .clone();
            Some(f.bind(schema, true)?)
        }
    };
    let specs = match &bound {
        Some(_) => FileSpecs::load(table, snapshot_id).await?,
        None => FileSpecs::One(md.default_partition_spec_id()),
    };
    let mut total = 0u64;
    let mut to_read = Vec::new();
    for task in &read.tasks {
        // The filter on the file's partition values: `Some(true)` every row matches,
        // `Some(false)` none does (whatever its deletes), `None` only its rows can tell.
        let on_file = match &bound {
            None => Some(true),
            Some(p) => specs
                .of(&task.data_file_path)
                .and_then(|id| md.partition_spec_by_id(id))
                .zip(task.partition.as_ref())
                .and_then(|(spec, values)| on_partition(p, spec, values))
                .and_then(|v| v),
        };
        let whole_file = task.start == 0 && task.length == task.file_size_in_bytes;
        let decided = match (on_file, task.record_count, whole_file) {
            (Some(false), ..) => Some(0),
            (Some(true), Some(rows), true) if task.deletes.is_empty() => Some(rows),
            _ => None,
        };
        match decided {
            Some(rows) => total += rows,
            None => to_read.push(task.clone()),
        }
    }
    tracing::debug!(
        table = %table.identifier(),
        from_manifests = read.tasks.len() - to_read.len(),
        read = to_read.len(),
        "row count"
    );
    if to_read.is_empty() {
        return Ok(total);
    }
    let mut stream = read.with_tasks(to_read).stream(table, 65_536)?;
    while let Some(b) = stream.next().await {
        total += b?.num_rows() as u64;
    }
    Ok(total)
}

/// The partition spec of each data file of a snapshot.
enum FileSpecs {
    /// The table only ever had this spec: no manifest needs opening.
    One(i32),
    ByPath(HashMap<String, i32>),
}

impl FileSpecs {
    async fn load(table: &Table, snapshot_id: i64) -> Result<Self> {
        let md = table.metadata();
        if md.partition_specs_iter().len() == 1 {
            return Ok(Self::One(md.default_partition_spec_id()));
        }
        let mut out = HashMap::new();
        if let Some(snapshot) = md.snapshot_by_id(snapshot_id) {
            let list = table.manifest_list_reader(snapshot).load().await?;
            for mf in list.entries() {
                if mf.content != ManifestContentType::Data {
                    continue;
                }
                let manifest = mf.load_manifest(table.file_io()).await?;
                for e in manifest.entries() {
                    if e.is_alive() {
                        out.insert(e.data_file().file_path().to_string(), mf.partition_spec_id);
                    }
                }
            }
        }
        Ok(Self::ByPath(out))
    }

    fn of(&self, path: &str) -> Option<i32> {
        match self {
            Self::One(id) => Some(*id),
            Self::ByPath(m) => m.get(path).copied(),
        }
    }
}

/// `p` for every row of a file whose identity-partition values are `values`, as SQL sees it
/// (`Some(None)`: unknown), or `None` when the partition values do not decide it — a column
/// that is not identity-partitioned, a value written before its column was widened (another
/// literal type), floating point (NaN), or an operator not handled here.
fn on_partition(p: &BoundPredicate, spec: &PartitionSpec, values: &Struct) -> Option<Option<bool>> {
    match p {
        BoundPredicate::AlwaysTrue => Some(Some(true)),
        BoundPredicate::AlwaysFalse => Some(Some(false)),
        BoundPredicate::And(e) => {
            let [l, r] = e.inputs();
            match (on_partition(l, spec, values), on_partition(r, spec, values)) {
                (Some(Some(false)), _) | (_, Some(Some(false))) => Some(Some(false)),
                (Some(a), Some(b)) => Some(if a == Some(true) && b == Some(true) {
                    Some(true)
                } else {
                    None
                }),
                _ => None,
            }
        }
        BoundPredicate::Or(e) => {
            let [l, r] = e.inputs();
            match (on_partition(l, spec, values), on_partition(r, spec, values)) {
                (Some(Some(true)), _) | (_, Some(Some(true))) => Some(Some(true)),
                (Some(a), Some(b)) => Some(if a == Some(false) && b == Some(false) {
                    Some(false)
                } else {
                    None
                }),
                _ => None,
            }
        }
        BoundPredicate::Not(e) => {
            let [inner] = e.inputs();
            on_partition(inner, spec, values).map(|v| v.map(|b| !b))
        }
        BoundPredicate::Unary(e) => {
            let value = identity_value(e.term(), spec, values)?;
            match e.op() {
                PredicateOperator::IsNull => Some(Some(value.is_none())),
                PredicateOperator::NotNull => Some(Some(value.is_some())),
                _ => None,
            }
        }
        BoundPredicate::Binary(e) => {
            let value = identity_value(e.term(), spec, values)?;
            let Some(value) = value else {
                return Some(None);
            };
            let order = compare(value, e.literal())?;
            Some(Some(match e.op() {
                PredicateOperator::Eq => order.is_eq(),
                PredicateOperator::NotEq => order.is_ne(),
                PredicateOperator::LessThan => order.is_lt(),
                PredicateOperator::LessThanOrEq => order.is_le(),
                PredicateOperator::GreaterThan => order.is_gt(),
                PredicateOperator::GreaterThanOrEq => order.is_ge(),
                _ => return None,
            }))
        }
        BoundPredicate::Set(e) => {
            let value = identity_value(e.term(), spec, values)?;
            let Some(value) = value else {
                return Some(None);
            };
            let mut any = false;
            for d in e.literals() {
                any |= compare(value, d)?.is_eq();
            }
            match e.op() {
                PredicateOperator::In => Some(Some(any)),
                PredicateOperator::NotIn => Some(Some(!any)),
                _ => None,
            }
        }
    }
}

/// The value of `term`'s column in a file's partition tuple (`Some(None)`: NULL), when the
/// column is identity-partitioned.
fn identity_value<'a>(
    term: &BoundReference,
    spec: &PartitionSpec,
    values: &'a Struct,
) -> Option<Option<&'a PrimitiveLiteral>> {
    let id = term.field().id;
    let index = spec
        .fields()
        .iter()
        .position(|f| f.source_id == id && f.transform == Transform::Identity)?;
    match values.fields().get(index)? {
        None => Some(None),
        Some(Literal::Primitive(p)) => Some(Some(p)),
        Some(_) => None,
    }
}

/// Orders a partition value against a bound literal of the column's type; `None` unless both
/// have the same representation (a value written before a widening has another one) and are
/// not floating point.
fn compare(value: &PrimitiveLiteral, literal: &Datum) -> Option<std::cmp::Ordering> {
    let other = literal.literal();
    let comparable = std::mem::discriminant(value) == std::mem::discriminant(other)
        && !matches!(
            literal.data_type(),
            PrimitiveType::Float | PrimitiveType::Double
        )
        && !matches!(
            value,
            PrimitiveLiteral::AboveMax | PrimitiveLiteral::BelowMin
        );
    if comparable {
        value.partial_cmp(other)
    } else {
        None
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Digest {
    label: String,
    rows: u64,
    sum: u128,
}

/// The columns both sides are compared on and how a row's partition is computed.
struct Compared {
    target: SchemaRef,
    spec: PartitionSpecRef,
    /// (column index in `target`, transform, partition field name)
    partition: Vec<(usize, BoxedTransformFunction, String)>,
}

impl Compared {
    fn new(plan: &ReconciliationPlan, dest: &Table) -> Result<Self> {
        let full = ops_core::write::table_arrow_schema(dest)?;
        let names: Vec<&str> = plan
            .projections
            .iter()
            .map(|p| p.dest_name.as_str())
            .filter(|n| full.field_with_name(n).is_ok())
            .collect();
        let fields: Vec<_> = names
            .iter()
            .filter_map(|n| full.field_with_name(n).ok().cloned())
            .collect();
        let target = Arc::new(Schema::new(fields));
        let md = dest.metadata();
        let spec = md.default_partition_spec().clone();
        let schema = md.current_schema();
        let mut partition = Vec::new();
        for f in spec.fields() {
            let column = schema
                .field_by_id(f.source_id)
                .map(|c| c.name.clone())
                .unwrap_or_default();
            let index = target.index_of(&column).map_err(|_| {
                MigrationError::InvalidInput(format!(
                    "partition source column '{column}' of the destination is not among the \
                     migrated columns; partition_hash cannot place source rows — use row_count \
                     or sample"
                ))
            })?;
            partition.push((
                index,
                create_transform_function(&f.transform)?,
                f.name.clone(),
            ));
        }
        Ok(Self {
            target,
            spec,
            partition,
        })
    }

    fn select(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let mut columns = Vec::with_capacity(self.target.fields().len());
        for f in self.target.fields() {
            let c = batch.column_by_name(f.name()).ok_or_else(|| {
                MigrationError::InvalidInput(format!("compared column '{}' is missing", f.name()))
            })?;
            columns.push(c.clone());
        }
        let names = RecordBatch::try_new_with_options(
            Arc::new(Schema::new(
                self.target
                    .fields()
                    .iter()
                    .zip(&columns)
                    .map(|(f, c)| {
                        arrow_schema::Field::new(f.name(), c.data_type().clone(), f.is_nullable())
                    })
                    .collect::<Vec<_>>(),
            )),
            columns,
            &arrow_array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )?;
        Ok(ops_core::write::conform(&names, &self.target)?)
    }

    fn source_stream(
        &self,
        stream: BoxStream<'static, Result<RecordBatch>>,
        plan: ReconciliationPlan,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        stream
            .map(move |b| Ok(ops_reconcile::project_batch(&b?, &plan)?))
            .boxed()
    }

    fn dest_stream(
        &self,
        stream: BoxStream<'static, Result<RecordBatch>>,
    ) -> BoxStream<'static, Result<RecordBatch>> {
        stream
    }

    fn converter(&self) -> Result<RowConverter> {
        Ok(RowConverter::new(
            self.target
                .fields()
                .iter()
                .map(|f| SortField::new(f.data_type().clone()))
                .collect(),
        )?)
    }

    /// xxh3-128 of every row's canonical encoding.
    fn row_hashes(&self, converter: &RowConverter, batch: &RecordBatch) -> Result<Vec<u128>> {
        let rows = converter.convert_columns(batch.columns())?;
        Ok(rows
            .iter()
            .map(|r| XxHash3_128::oneshot(r.as_ref()))
            .collect())
    }

    async fn partition_digests(
        &self,
        mut stream: BoxStream<'static, Result<RecordBatch>>,
    ) -> Result<BTreeMap<Vec<u8>, Digest>> {
        let converter = self.converter()?;
        let mut out: BTreeMap<Vec<u8>, Digest> = BTreeMap::new();
        while let Some(batch) = stream.next().await {
            let batch = self.select(&batch?)?;
            let hashes = self.row_hashes(&converter, &batch)?;
            let values: Vec<ArrayRef> = self
                .partition
                .iter()
                .map(|(i, t, _)| t.transform(batch.column(*i).clone()))
                .collect::<iceberg::Result<_>>()?;
            let key_converter = RowConverter::new(
                values
                    .iter()
                    .map(|v| SortField::new(v.data_type().clone()))
                    .collect(),
            )?;
            let keys = key_converter.convert_columns(&values)?;
            let options = FormatOptions::default().with_null("null");
            let formatters: Vec<ArrayFormatter<'_>> = values
                .iter()
                .map(|v| ArrayFormatter::try_new(v.as_ref(), &options))
                .collect::<std::result::Result<_, _>>()?;
            for (row, h) in hashes.iter().enumerate() {
                // arrow-row encodes no rows for zero columns: an unpartitioned table is one key.
                let key = if values.is_empty() {
                    Vec::new()
                } else {
                    keys.row(row).as_ref().to_vec()
                };
                let entry = out.entry(key).or_insert_with(|| Digest {
                    label: self.label(&formatters, row),
                    ..Digest::default()
                });
                entry.rows += 1;
                entry.sum = entry.sum.wrapping_add(*h);
            }
        }
        Ok(out)
    }

    fn label(&self, formatters: &[ArrayFormatter<'_>], row: usize) -> String {
        if self.spec.fields().is_empty() {
            return "<unpartitioned>".into();
        }
        self.partition
            .iter()
            .zip(formatters)
            .map(|((_, _, name), f)| format!("{name}={}", f.value(row)))
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The `k` rows with the smallest hashes (and how many rows were seen).
    async fn bottom_k(
        &self,
        mut stream: BoxStream<'static, Result<RecordBatch>>,
        k: usize,
    ) -> Result<(Vec<(u128, Vec<u8>)>, u64)> {
        let converter = self.converter()?;
        let mut heap: BinaryHeap<(u128, Vec<u8>)> = BinaryHeap::new();
        let mut seen = 0u64;
        while let Some(batch) = stream.next().await {
            let batch = self.select(&batch?)?;
            let rows = converter.convert_columns(batch.columns())?;
            for r in rows.iter() {
                seen += 1;
                let h = XxHash3_128::oneshot(r.as_ref());
                if heap.len() < k {
                    heap.push((h, r.as_ref().to_vec()));
                } else if heap.peek().is_some_and(|top| h < top.0) {
                    heap.pop();
                    heap.push((h, r.as_ref().to_vec()));
                }
            }
        }
        Ok((heap.into_sorted_vec(), seen))
    }
}

fn compare_partitions(
    src: &BTreeMap<Vec<u8>, Digest>,
    dst: &BTreeMap<Vec<u8>, Digest>,
    result: &mut VerificationResult,
) {
    result.source_count = Some(src.values().map(|d| d.rows).sum());
    result.dest_count = Some(dst.values().map(|d| d.rows).sum());
    for (key, a) in src {
        match dst.get(key) {
            None => {
                result.mismatched_partitions.push(a.label.clone());
                result.details.push(format!(
                    "partition {} has {} row(s) in the source and none in the destination",
                    a.label, a.rows
                ));
            }
            Some(b) if a.rows != b.rows => {
                result.mismatched_partitions.push(a.label.clone());
                result.details.push(format!(
                    "partition {}: {} row(s) in the source, {} in the destination",
                    a.label, a.rows, b.rows
                ));
            }
            Some(b) if a.sum != b.sum => {
                result.mismatched_partitions.push(a.label.clone());
                result.details.push(format!(
                    "partition {}: same row count ({}) but different contents",
                    a.label, a.rows
                ));
            }
            Some(_) => {}
        }
    }
    for (key, b) in dst {
        if !src.contains_key(key) {
            result.mismatched_partitions.push(b.label.clone());
            result.details.push(format!(
                "partition {} has {} row(s) in the destination and none in the source",
                b.label, b.rows
            ));
        }
    }
    result.matches = result.mismatched_partitions.is_empty();
}

fn compare_samples(
    (a, src_rows): (Vec<(u128, Vec<u8>)>, u64),
    (b, dst_rows): (Vec<(u128, Vec<u8>)>, u64),
    k: usize,
    result: &mut VerificationResult,
) {
    result.source_count = Some(src_rows);
    result.dest_count = Some(dst_rows);
    let compared = (k as u64).min(src_rows).min(dst_rows);
    result.sample_size = Some(compared);
    let differing = a.iter().zip(&b).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
    result.matches = differing == 0;
    if differing > 0 {
        result.details.push(format!(
            "{differing} of the {} sampled row(s) (smallest row hashes) differ between source \
             ({src_rows} rows) and destination ({dst_rows} rows)",
            a.len().max(b.len())
        ));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use iceberg::expr::{Bind, Reference};
    use iceberg::spec::{
        Datum, Literal, NestedField, PartitionSpec, PrimitiveType, Schema, Struct, Transform, Type,
    };

    use super::on_partition;

    fn setup() -> (Arc<Schema>, PartitionSpec) {
        let schema = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String))
                        .into(),
                    NestedField::optional(3, "n", Type::Primitive(PrimitiveType::Long)).into(),
                ])
                .build()
                .expect("schema"),
        );
        let spec = PartitionSpec::builder(schema.clone())
            .add_partition_field("region", "region", Transform::Identity)
            .expect("field")
            .add_partition_field("n", "n", Transform::Identity)
            .expect("field")
            .build()
            .expect("spec");
        (schema, spec)
    }

    #[test]
    fn partition_values_decide_with_sql_logic_or_leave_it_to_the_read() {
        let (schema, spec) = setup();
        let eu = Struct::from_iter([Some(Literal::string("eu")), Some(Literal::long(7))]);
        // n written as an int before a widening: another representation, never decided.
        let old = Struct::from_iter([None, Some(Literal::int(7))]);
        let region = || Reference::new("region");
        let n = || Reference::new("n");
        let cases = [
            (
                region().equal_to(Datum::string("eu")),
                &eu,
                Some(Some(true)),
            ),
            (
                region().equal_to(Datum::string("us")),
                &eu,
                Some(Some(false)),
            ),
            (region().not_equal_to(Datum::string("us")), &old, Some(None)),
            (region().is_null(), &old, Some(Some(true))),
            (
                region()
                    .equal_to(Datum::string("eu"))
                    .and(n().greater_than(Datum::long(3))),
                &eu,
                Some(Some(true)),
            ),
            (n().greater_than(Datum::long(3)), &old, None),
            // Undecidable AND NULL stays undecidable; TRUE OR undecidable is TRUE.
            (
                region()
                    .equal_to(Datum::string("us"))
                    .and(n().greater_than(Datum::long(3))),
                &old,
                None,
            ),
            (
                region().is_null().or(n().greater_than(Datum::long(3))),
                &old,
                Some(Some(true)),
            ),
            (
                region().is_in([Datum::string("eu"), Datum::string("us")]),
                &eu,
                Some(Some(true)),
            ),
            (
                !region().equal_to(Datum::string("eu")),
                &eu,
                Some(Some(false)),
            ),
            (Reference::new("id").equal_to(Datum::long(1)), &eu, None),
            // FALSE AND undecidable is FALSE: the file holds no matching row.
            (
                region()
                    .equal_to(Datum::string("us"))
                    .and(Reference::new("id").equal_to(Datum::long(1))),
                &eu,
                Some(Some(false)),
            ),
        ];
        for (p, values, want) in cases {
            let bound = p.bind(schema.clone(), true).expect("bind");
            assert_eq!(on_partition(&bound, &spec, values), want, "{p}");
        }
    }
}
