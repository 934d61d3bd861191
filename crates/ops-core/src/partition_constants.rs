//! Identity-partition values as constants of the rows read, as Java's
//! `PartitionUtil.constantsMap` makes them.
//!
//! A data file need not hold its identity-partition source columns: a Hive file registered by
//! Spark's `migrate` or `add_files` lives in `dt=2024-01-01/` without a `dt` column, and only the
//! manifest entry's partition tuple holds the value. Java reads every identity-partition source
//! column from that tuple, whether the file has the column or not (its Parquet readers put a
//! constant reader before the file's column). iceberg 0.10.1's reader does the same when a task
//! carries its file's partition spec and tuple, but its planner passes no spec
//! (`scan/context.rs`: `.with_partition_spec(None)`), so such a file reads NULL for `dt`, and a
//! copy or a rewrite writes its rows to `dt=null`.
//!
//! - Planning: every task carries its file's spec — [`SpecAttacher`] for the planner's tasks (the
//!   spec of the manifest listing the file), task builders from the manifest entry directly.
//! - Reading: [`for_reader`] turns a task into the form iceberg's reader can apply (see there);
//!   a reader of our own takes [`constants`] and [`fill`].
//!
//! Only top-level columns are filled (a source inside a struct is read from the file), as by
//! iceberg's reader, which fills the projected top-level columns only.
//!
//! A NULL partition value is not made a constant (iceberg's reader cannot express one): the
//! file's column is read, which a file written by a partitioned writer holds as NULL there
//! anyway, and a file lacking it reads NULL. Java reads the NULL constant in both cases.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_schema::{Field, Schema as ArrowSchema, SchemaRef};
use iceberg::scan::FileScanTask;
use iceberg::spec::{
    Literal, ManifestContentType, PartitionSpec, PartitionSpecRef, PrimitiveLiteral, PrimitiveType,
    Struct, Transform, UnboundPartitionField,
};
use iceberg::table::Table;

use crate::{Error, Result};

const FIELD_ID: &str = "PARQUET:field_id";

/// Gives each planned task the spec of the manifest listing its file (what iceberg's planner
/// leaves out), task by task, so a plan can stream. Only files whose spec has an identity field
/// need it; when the table has one spec, or the snapshot's data manifests share one, no
/// manifest is read; otherwise the data manifests of specs with identity fields are read once,
/// into a map from path to spec (of those files only).
#[derive(Debug, Clone)]
pub enum SpecAttacher {
    /// No spec has an identity field: nothing to attach.
    Nothing,
    /// Every file has this spec.
    All(PartitionSpecRef),
    /// The spec of each file of a spec with identity fields.
    ByPath(Arc<HashMap<String, PartitionSpecRef>>),
}

impl SpecAttacher {
    /// What [`SpecAttacher::attach`] needs for the tasks of `table` at `snapshot_id`.
    pub async fn load(table: &Table, snapshot_id: i64) -> Result<Self> {
        let md = table.metadata();
        let has_identity = |spec: &PartitionSpec| {
            spec.fields()
                .iter()
                .any(|f| f.transform == Transform::Identity)
        };
        if !md.partition_specs_iter().any(|s| has_identity(s)) {
            return Ok(Self::Nothing);
        }
        if md.partition_specs_iter().len() == 1 {
            return Ok(Self::All(md.default_partition_spec().clone()));
        }
        let Some(snapshot) = md.snapshot_by_id(snapshot_id) else {
            return Err(Error::InvalidInput(format!(
                "{} has no snapshot {snapshot_id}",
                table.identifier()
            )));
        };
        let list = table.manifest_list_reader(snapshot).load().await?;
        let data: Vec<_> = list
            .entries()
            .iter()
            .filter(|m| m.content == ManifestContentType::Data)
            .collect();
        let spec_of = |id: i32| -> Result<PartitionSpecRef> {
            md.partition_spec_by_id(id).cloned().ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{} lists a manifest of partition spec {id}, which its metadata lacks",
                    table.identifier()
                ))
            })
        };
        let ids: HashSet<i32> = data.iter().map(|m| m.partition_spec_id).collect();
        if ids.len() == 1
            && let Some(id) = ids.into_iter().next()
        {
            return Ok(Self::All(spec_of(id)?));
        }
        let mut by_path: HashMap<String, PartitionSpecRef> = HashMap::new();
        for mf in data {
            let spec = spec_of(mf.partition_spec_id)?;
            if !has_identity(&spec) {
                continue;
            }
            let mut entries = std::pin::pin!(crate::manifests::entries(table.file_io(), mf));
            while let Some(e) = futures::TryStreamExt::try_next(&mut entries).await? {
                if e.is_alive() {
                    by_path.insert(e.data_file().file_path().to_string(), spec.clone());
                }
            }
        }
        Ok(Self::ByPath(Arc::new(by_path)))
    }

    /// Sets `task.partition_spec` to its file's spec (where it matters, see the type's docs).
    pub fn attach(&self, task: &mut FileScanTask) {
        match self {
            Self::Nothing => {}
            Self::All(spec) => task.partition_spec = Some(spec.clone()),
            Self::ByPath(by_path) => {
                if let Some(spec) = by_path.get(&task.data_file_path) {
                    task.partition_spec = Some(spec.clone());
                }
            }
        }
    }
}

/// One identity-partition value of a file, as a value of its column.
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    /// The source column's field id.
    pub field_id: i32,
    /// The column's type in the schema read with.
    pub ty: PrimitiveType,
    /// The value, of that type.
    pub value: PrimitiveLiteral,
}

/// The identity-partition values of `task`'s file (its `partition_spec` and `partition`), by
/// source field id, typed as `task.schema` has the column: a value written before its column
/// was widened (`int` for a `long` now) is promoted. NULL values, sources the schema lacks (a
/// dropped column) or does not hold as a primitive, and values of another type are left out.
pub fn constants(task: &FileScanTask) -> Vec<Constant> {
    let (Some(spec), Some(partition)) = (&task.partition_spec, &task.partition) else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (pos, pf) in spec.fields().iter().enumerate() {
        if pf.transform != Transform::Identity || !seen.insert(pf.source_id) {
            continue;
        }
        let Some(ty) = task
            .schema
            .field_by_id(pf.source_id)
            .and_then(|f| f.field_type.as_primitive_type().cloned())
        else {
            continue;
        };
        let Some(Some(Literal::Primitive(p))) = partition.fields().get(pos) else {
            continue;
        };
        if let Some((value, _)) = crate::ops::snapshot_fit_literal(p.clone(), &ty) {
            out.push(Constant {
                field_id: pf.source_id,
                ty,
                value,
            });
        }
    }
    out
}

/// `task` as iceberg's reader must get it to fill the [`constants`] of its file: a spec of only
/// those identity fields (named as their columns, which always binds) and a tuple of their
/// values in the schema's types. iceberg's reader fails on a spec field whose source the schema
/// lacks and on a value of another type than the column's, and cannot build a `uuid` constant
/// from its literal (it is passed as its 16 bytes). The constants come back run-end encoded
/// and, for timestamps, times and uuids, in the storage type (`Int64`, `Binary`):
/// [`crate::scan::project_by_field_id`] decodes them.
pub fn for_reader(mut task: FileScanTask) -> iceberg::Result<FileScanTask> {
    let constants = constants(&task);
    let Some(spec) = task.partition_spec.take() else {
        return Ok(task);
    };
    if constants.is_empty() {
        task.partition = None;
        return Ok(task);
    }
    let by_source: HashMap<i32, i32> = spec
        .fields()
        .iter()
        .filter(|f| f.transform == Transform::Identity)
        .map(|f| (f.source_id, f.field_id))
        .collect();
    let mut builder = PartitionSpec::builder(task.schema.clone()).with_spec_id(spec.spec_id());
    let mut values = Vec::with_capacity(constants.len());
    for c in constants {
        let name = task
            .schema
            .name_by_field_id(c.field_id)
            .unwrap_or_default()
            .to_string();
        builder = builder.add_unbound_field(UnboundPartitionField {
            source_id: c.field_id,
            field_id: by_source.get(&c.field_id).copied(),
            name,
            transform: Transform::Identity,
        })?;
        let literal = match (c.ty, c.value) {
            (PrimitiveType::Uuid, PrimitiveLiteral::UInt128(v)) => {
                PrimitiveLiteral::Binary(v.to_be_bytes().to_vec())
            }
            (_, l) => l,
        };
        values.push(Some(Literal::Primitive(literal)));
    }
    task.partition_spec = Some(Arc::new(builder.build()?));
    task.partition = Some(Struct::from_iter(values));
    Ok(task)
}

/// `batch` (top-level columns carrying field ids) with the column of each of `constants` that
/// `schema` holds at the top level set to its value on every row: replaced where the batch has
/// it (Java's constant wins over the file's column), appended (named and typed as in `schema`)
/// where it lacks it.
pub fn fill(
    batch: &RecordBatch,
    constants: &[Constant],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    if constants.is_empty() {
        return Ok(batch.clone());
    }
    let rows = batch.num_rows();
    let mut fields: Vec<Arc<Field>> = batch.schema().fields().iter().cloned().collect();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    for c in constants {
        let id = c.field_id;
        let Some(target) = schema
            .fields()
            .iter()
            .find(|f| field_id(f) == Some(id))
            .cloned()
        else {
            continue;
        };
        let column = constant_column(c, target.data_type(), rows)?;
        match fields.iter().position(|f| field_id(f) == Some(id)) {
            Some(i) => {
                fields[i] = Arc::new(
                    Field::new(
                        fields[i].name(),
                        target.data_type().clone(),
                        target.is_nullable(),
                    )
                    .with_metadata(fields[i].metadata().clone()),
                );
                columns[i] = column;
            }
            None => {
                fields.push(Arc::new(
                    Field::new(
                        target.name(),
                        target.data_type().clone(),
                        target.is_nullable(),
                    )
                    .with_metadata(target.metadata().clone()),
                ));
                columns.push(column);
            }
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::new_with_metadata(
            fields,
            batch.schema().metadata().clone(),
        )),
        columns,
        &options,
    )?)
}

/// `c`'s value on each of `rows` rows, as an array of type `to`.
fn constant_column(c: &Constant, to: &arrow_schema::DataType, rows: usize) -> Result<ArrayRef> {
    let one = crate::eval::typed_literal_array(&c.ty, &c.value)?;
    let one = if one.data_type() == to {
        one
    } else {
        arrow_cast::cast_with_options(
            &one,
            to,
            &arrow_cast::CastOptions {
                safe: false,
                ..Default::default()
            },
        )?
    };
    let zeros = UInt32Array::from(vec![0u32; rows]);
    Ok(arrow_select::take::take(&one, &zeros, None)?)
}

fn field_id(field: &Field) -> Option<i32> {
    field.metadata().get(FIELD_ID).and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::DataType;
    use iceberg::spec::{DataFileFormat, NestedField, Schema, Type};

    use super::*;

    /// id long, dt string, u uuid, n long (an `int` partition value widened since), d long
    /// (dropped from the read schema when `dropped`), partitioned by identity of dt, u, n, d and
    /// bucket(4, id).
    fn task(dropped: bool) -> anyhow::Result<FileScanTask> {
        let prim = |p: PrimitiveType| Type::Primitive(p);
        let mut fields = vec![
            NestedField::optional(1, "id", prim(PrimitiveType::Long)).into(),
            NestedField::optional(2, "dt", prim(PrimitiveType::String)).into(),
            NestedField::optional(3, "u", prim(PrimitiveType::Uuid)).into(),
            NestedField::optional(4, "n", prim(PrimitiveType::Long)).into(),
        ];
        if !dropped {
            fields.push(NestedField::optional(5, "d", prim(PrimitiveType::Long)).into());
        }
        let full = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    NestedField::optional(1, "id", prim(PrimitiveType::Long)).into(),
                    NestedField::optional(2, "dt", prim(PrimitiveType::String)).into(),
                    NestedField::optional(3, "u", prim(PrimitiveType::Uuid)).into(),
                    NestedField::optional(4, "n", prim(PrimitiveType::Int)).into(),
                    NestedField::optional(5, "d", prim(PrimitiveType::Long)).into(),
                ])
                .build()?,
        );
        let spec = PartitionSpec::builder(full)
            .add_partition_field("dt", "dt", Transform::Identity)?
            .add_partition_field("u", "u", Transform::Identity)?
            .add_partition_field("n", "n_part", Transform::Identity)?
            .add_partition_field("d", "d", Transform::Identity)?
            .add_partition_field("id", "id_bucket", Transform::Bucket(4))?
            .build()?;
        let schema = Arc::new(Schema::builder().with_fields(fields).build()?);
        let ids = schema.as_struct().fields().iter().map(|f| f.id).collect();
        Ok(FileScanTask::builder()
            .with_file_size_in_bytes(1)
            .with_start(0)
            .with_length(1)
            .with_data_file_path("f.parquet".into())
            .with_data_file_format(DataFileFormat::Parquet)
            .with_schema(schema)
            .with_project_field_ids(ids)
            .with_partition(Some(Struct::from_iter([
                Some(Literal::string("2024-01-01")),
                Some(Literal::Primitive(PrimitiveLiteral::UInt128(7))),
                Some(Literal::int(5)),
                None,
                Some(Literal::int(3)),
            ])))
            .with_partition_spec(Some(Arc::new(spec)))
            .with_case_sensitive(true)
            .build())
    }

    #[test]
    fn identity_values_are_typed_as_the_read_schema_has_their_columns() -> anyhow::Result<()> {
        let got = constants(&task(false)?);
        let want = vec![
            Constant {
                field_id: 2,
                ty: PrimitiveType::String,
                value: PrimitiveLiteral::String("2024-01-01".into()),
            },
            Constant {
                field_id: 3,
                ty: PrimitiveType::Uuid,
                value: PrimitiveLiteral::UInt128(7),
            },
            // Written as an `int` before `n` became `long`.
            Constant {
                field_id: 4,
                ty: PrimitiveType::Long,
                value: PrimitiveLiteral::Long(5),
            },
            // `d` is NULL and `id_bucket` no identity: neither is a constant.
        ];
        assert_eq!(got, want);
        Ok(())
    }

    /// iceberg's reader gets a spec it can bind to the read schema (a dropped source left out)
    /// and values of the columns' types (a uuid as its bytes).
    #[test]
    fn the_readers_task_binds_and_carries_typed_values() -> anyhow::Result<()> {
        let t = for_reader(task(true)?)?;
        let spec = t.partition_spec.ok_or_else(|| anyhow::anyhow!("no spec"))?;
        let fields: Vec<(i32, &str)> = spec
            .fields()
            .iter()
            .map(|f| (f.source_id, f.name.as_str()))
            .collect();
        assert_eq!(fields, vec![(2, "dt"), (3, "u"), (4, "n")]);
        let values = t.partition.ok_or_else(|| anyhow::anyhow!("no values"))?;
        let mut uuid = vec![0u8; 15];
        uuid.push(7);
        assert_eq!(
            values.fields(),
            &[
                Some(Literal::string("2024-01-01")),
                Some(Literal::Primitive(PrimitiveLiteral::Binary(uuid))),
                Some(Literal::long(5)),
            ]
        );
        // No identity value: no spec, iceberg's reader reads the file's columns.
        let mut none = task(false)?;
        none.partition = Some(Struct::from_iter([None, None, None, None, None]));
        let none = for_reader(none)?;
        assert!(none.partition_spec.is_none() && none.partition.is_none());
        Ok(())
    }

    #[test]
    fn fill_replaces_or_appends_each_constant_column() -> anyhow::Result<()> {
        let t = task(false)?;
        let schema = Arc::new(iceberg::arrow::schema_to_arrow_schema(&t.schema)?);
        let with_id = |name: &str, id: i32, ty: DataType| {
            Field::new(name, ty, true)
                .with_metadata(HashMap::from([(FIELD_ID.to_string(), id.to_string())]))
        };
        // The file has `id` and a stale `dt`, and lacks `u` and `n`.
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(vec![
                with_id("id", 1, DataType::Int64),
                with_id("dt", 2, DataType::Utf8),
            ])),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(StringArray::from(vec!["old", "old"])),
            ],
        )?;
        let filled = fill(&batch, &constants(&t), &schema)?;
        let names: Vec<&str> = filled
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, vec!["id", "dt", "u", "n"]);
        let dt = filled.column(1).as_any().downcast_ref::<StringArray>();
        assert_eq!(
            dt.map(|a| a.iter().collect::<Vec<_>>()),
            Some(vec![Some("2024-01-01"), Some("2024-01-01")])
        );
        assert_eq!(filled.column(2).data_type(), &DataType::FixedSizeBinary(16));
        let n = filled.column(3).as_any().downcast_ref::<Int64Array>();
        assert_eq!(n.map(|a| a.values().to_vec()), Some(vec![5, 5]));
        assert_eq!(filled.column(3).null_count(), 0);
        Ok(())
    }
}
