//! `row_count`: source rows against destination rows, from the manifests' record counts
//! wherever that is exact.
//!
//! A file is read only where delete files apply to it or the row filter cannot be decided for
//! the whole file from its identity-partition values (evaluated with SQL's three-valued logic;
//! a filter on another column, a value written before a widening, or floating point leave it to
//! the read).

use futures::{StreamExt, TryStreamExt};
use iceberg::expr::{Bind, BoundPredicate, BoundReference, Predicate, PredicateOperator};
use iceberg::spec::{
    Datum, Literal, ManifestContentType, PartitionSpec, PrimitiveLiteral, PrimitiveType, Struct,
    Transform,
};
use iceberg::table::Table;

use ops_core::file_path::{FilePath, FilePathMap, FilePaths};

use crate::Result;
use crate::plan::read::PlannedRead;

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
    for task in read.files.iter() {
        // The filter on the file's partition values: `Some(true)` every row matches,
        // `Some(false)` none does (whatever its deletes), `None` only its rows can tell.
        let on_file = match &bound {
            None => Some(true),
            Some(p) => specs
                .of(&task.path)
                .and_then(|id| md.partition_spec_by_id(id))
                .zip(task.partition.as_deref())
                .and_then(|(spec, values)| on_partition(p, spec, values))
                .and_then(|v| v),
        };
        let whole_file = task.whole();
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
        from_manifests = read.files.len() - to_read.len(),
        read = to_read.len(),
        "row count"
    );
    if to_read.is_empty() {
        return Ok(total);
    }
    let mut stream = read.with_files(to_read).stream(table, 65_536)?;
    while let Some(b) = stream.next().await {
        total += b?.num_rows() as u64;
    }
    Ok(total)
}

/// Rows of `table` at `snapshot` (none: 0) under `filter`: from the streamed manifests when
/// that is exact and unfiltered ([`count_from_manifests`]), else planned ([`count`]).
pub(super) async fn rows(
    table: &Table,
    snapshot: Option<i64>,
    filter: Option<&Predicate>,
) -> Result<u64> {
    let Some(id) = snapshot else {
        return Ok(0);
    };
    if filter.is_none()
        && let Some(n) = count_from_manifests(table, id).await?
    {
        return Ok(n);
    }
    let read = PlannedRead::plan(table, snapshot, filter.cloned()).await?;
    count(&read, table, filter).await
}

/// Rows of `snapshot_id` of `table` from its manifests' record counts alone, read entry by
/// entry (a million files counted in memory that does not grow with them), when that is exact:
/// no delete file is live in the snapshot. `None` when one is (the planned [`count`] then
/// reads the files it applies to). No row filter: the caller plans a filtered count.
async fn count_from_manifests(table: &Table, snapshot_id: i64) -> Result<Option<u64>> {
    // Read or not, a table with column defaults is refused as every read path refuses it.
    ops_core::scan::refuse_column_defaults(table)?;
    let Some(snapshot) = table.metadata().snapshot_by_id(snapshot_id) else {
        return Err(crate::MigrationError::InvalidInput(format!(
            "{} has no snapshot {snapshot_id}; list its snapshots with `iceberg-ops table \
             snapshots`",
            table.identifier()
        )));
    };
    let list = table.manifest_list_reader(snapshot).load().await?;
    let io = table.file_io();
    let (deletes, data): (Vec<_>, Vec<_>) = list
        .entries()
        .iter()
        .partition(|mf| mf.content == ManifestContentType::Deletes);
    for mf in deletes {
        let mut entries = std::pin::pin!(ops_core::manifests::entries(io, mf));
        while let Some(e) = entries.try_next().await? {
            if e.is_alive() {
                return Ok(None);
            }
        }
    }
    let mut rows = std::pin::pin!(ops_core::manifests::entries_of_all(
        io,
        data.into_iter().cloned().collect()
    ));
    let mut total = 0u64;
    let mut files = 0u64;
    while let Some(e) = rows.try_next().await? {
        if e.is_alive() {
            total += e.data_file().record_count();
            files += 1;
        }
    }
    tracing::debug!(table = %table.identifier(), files, rows = total, "row count from manifests");
    Ok(Some(total))
}

/// The partition spec of each data file of a snapshot.
enum FileSpecs {
    /// The table only ever had this spec: no manifest needs opening.
    One(i32),
    ByPath(FilePathMap<i32>),
}

impl FileSpecs {
    async fn load(table: &Table, snapshot_id: i64) -> Result<Self> {
        let md = table.metadata();
        if md.partition_specs_iter().len() == 1 {
            return Ok(Self::One(md.default_partition_spec_id()));
        }
        let mut out = FilePathMap::new();
        let mut paths = FilePaths::new();
        if let Some(snapshot) = md.snapshot_by_id(snapshot_id) {
            let list = table.manifest_list_reader(snapshot).load().await?;
            for mf in list.entries() {
                if mf.content != ManifestContentType::Data {
                    continue;
                }
                let mut entries = std::pin::pin!(ops_core::manifests::entries(table.file_io(), mf));
                while let Some(e) = entries.try_next().await? {
                    if e.is_alive() {
                        *out.entry_or_insert_with(paths.path(e.data_file().file_path()), || 0) =
                            mf.partition_spec_id;
                    }
                }
            }
        }
        Ok(Self::ByPath(out))
    }

    fn of(&self, path: &FilePath) -> Option<i32> {
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
