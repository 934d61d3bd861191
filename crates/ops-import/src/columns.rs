//! Step 4 of an import: a file's columns matched to the table's fields.
//!
//! A file written with Iceberg field ids (by an Iceberg writer, or a tool told the ids) is
//! matched by id. A file without them (Hive, Spark's plain Parquet, pyarrow) is matched by name
//! through the table's name mapping (`schema.name-mapping.default`), created from the schema
//! when the table has none, as Java's and PyIceberg's `add_files` do: readers then find its
//! columns the same way. Glue lower-cases column names while the files keep their own case: a
//! file column that matches a mapped name only when case is ignored (and only one) has its
//! spelling added to that field's names, or it would read as NULL.
//!
//! Then every matched column must fit its field's type ([`fits`]), and every required
//! top-level field must have a column in the file.

use std::collections::{HashMap, HashSet};

use iceberg::spec::{
    DEFAULT_SCHEMA_NAME_MAPPING, MappedField, NameMapping, PrimitiveType, Schema, Type,
};
use parquet::basic::{LogicalType, TimeUnit, Type as PhysicalType};
use parquet::schema::types::ColumnDescriptor;

use ops_core::{Error, Result};

/// A name mapping being matched against files, as an arena (no recursion over the schema).
#[derive(Debug, Clone)]
pub struct Mapping {
    nodes: Vec<Node>,
    roots: Vec<usize>,
    /// Whether the table has none yet (it is written with the first files without ids).
    pub created: bool,
    /// Whether names were added since it was read.
    pub changed: bool,
}

#[derive(Debug, Clone)]
struct Node {
    field_id: Option<i32>,
    names: Vec<String>,
    children: Vec<usize>,
}

/// Parquet's structural level names of lists and maps, which the mapping does not name.
const STRUCTURAL: [&str; 3] = ["list", "key_value", "map"];

impl Mapping {
    /// The table's name mapping (`properties`), or one created from `schema` (Java's
    /// `MappingUtil.create`: every field by its name, a list's element as `element`, a map's
    /// key and value as `key` and `value`).
    pub fn of(schema: &Schema, properties: &HashMap<String, String>) -> Result<Self> {
        if let Some(raw) = properties.get(DEFAULT_SCHEMA_NAME_MAPPING) {
            let parsed: NameMapping = serde_json::from_str(raw).map_err(|e| {
                Error::InvalidInput(format!(
                    "the table's {DEFAULT_SCHEMA_NAME_MAPPING} is not a name mapping: {e}"
                ))
            })?;
            let mut m = Self {
                nodes: Vec::new(),
                roots: Vec::new(),
                created: false,
                changed: false,
            };
            let mut stack: Vec<(&MappedField, Option<usize>)> =
                parsed.fields().iter().rev().map(|f| (f, None)).collect();
            while let Some((f, parent)) = stack.pop() {
                let i = m.push(parent, f.field_id(), f.names().to_vec());
                stack.extend(f.fields().iter().rev().map(|c| (c.as_ref(), Some(i))));
            }
            return Ok(m);
        }
        let mut m = Self {
            nodes: Vec::new(),
            roots: Vec::new(),
            created: true,
            changed: false,
        };
        let mut stack: Vec<(i32, String, &Type, Option<usize>)> = schema
            .as_struct()
            .fields()
            .iter()
            .rev()
            .map(|f| (f.id, f.name.clone(), f.field_type.as_ref(), None))
            .collect();
        while let Some((id, name, ty, parent)) = stack.pop() {
            let i = m.push(parent, Some(id), vec![name]);
            match ty {
                Type::Struct(s) => stack.extend(
                    s.fields()
                        .iter()
                        .rev()
                        .map(|f| (f.id, f.name.clone(), f.field_type.as_ref(), Some(i))),
                ),
                Type::List(l) => stack.push((
                    l.element_field.id,
                    "element".into(),
                    l.element_field.field_type.as_ref(),
                    Some(i),
                )),
                Type::Map(mt) => {
                    stack.push((
                        mt.value_field.id,
                        "value".into(),
                        mt.value_field.field_type.as_ref(),
                        Some(i),
                    ));
                    stack.push((
                        mt.key_field.id,
                        "key".into(),
                        mt.key_field.field_type.as_ref(),
                        Some(i),
                    ));
                }
                Type::Primitive(_) => {}
            }
        }
        Ok(m)
    }

    fn push(&mut self, parent: Option<usize>, field_id: Option<i32>, names: Vec<String>) -> usize {
        let i = self.nodes.len();
        self.nodes.push(Node {
            field_id,
            names,
            children: Vec::new(),
        });
        match parent {
            Some(p) => self.nodes[p].children.push(i),
            None => self.roots.push(i),
        }
        i
    }

    /// The field id the column at `parts` (a Parquet column path) maps to, and the ids of the
    /// fields it passes through; `None` when the mapping has no such column. A spelling that
    /// differs from one mapped name in case only is added to it ([`Self::changed`]).
    pub fn resolve(&mut self, parts: &[String]) -> Option<(i32, Vec<i32>)> {
        let mut level = self.roots.clone();
        let mut path_ids = Vec::new();
        let mut found: Option<usize> = None;
        for (k, part) in parts.iter().enumerate() {
            let last = k + 1 == parts.len();
            let exact = level
                .iter()
                .copied()
                .find(|&i| self.nodes[i].names.iter().any(|n| n == part));
            let next = exact.or_else(|| {
                let folded: Vec<usize> = level
                    .iter()
                    .copied()
                    .filter(|&i| {
                        self.nodes[i].names.iter().any(|n| {
                            n.eq_ignore_ascii_case(part) || n.to_lowercase() == part.to_lowercase()
                        })
                    })
                    .collect();
                (folded.len() == 1).then(|| {
                    self.nodes[folded[0]].names.push(part.clone());
                    self.changed = true;
                    folded[0]
                })
            });
            let next = match next {
                Some(n) => n,
                // A list's or map's structural level: stay where we are.
                None if !last && STRUCTURAL.contains(&part.as_str()) && found.is_some() => continue,
                // A two-level list (`col.array`, `col.bag`): its element is the one child.
                None if found.is_some() && level.len() == 1 => level[0],
                None => return None,
            };
            if let Some(id) = self.nodes[next].field_id {
                path_ids.push(id);
            }
            found = Some(next);
            level = self.nodes[next].children.clone();
        }
        let leaf = found?;
        let id = self.nodes[leaf].field_id?;
        path_ids.pop();
        Some((id, path_ids))
    }

    /// The mapping as the table property's JSON.
    pub fn to_json(&self) -> Result<String> {
        // Children always come after their parent: built from the last node back, each node's
        // children are ready when it is.
        let mut built: Vec<Option<MappedField>> = vec![None; self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            let n = &self.nodes[i];
            let children: Vec<MappedField> =
                n.children.iter().filter_map(|&c| built[c].take()).collect();
            built[i] = Some(MappedField::new(n.field_id, n.names.clone(), children));
        }
        let roots: Vec<MappedField> = self.roots.iter().filter_map(|&r| built[r].take()).collect();
        serde_json::to_string(&NameMapping::new(roots))
            .map_err(|e| Error::InvalidInput(format!("cannot write the name mapping: {e}")))
    }
}

/// One file column matched to a table field.
#[derive(Debug, Clone)]
pub struct Matched {
    /// The leaf's index among the file's columns.
    pub column: usize,
    /// The table field.
    pub field_id: i32,
    /// Its type.
    pub ty: PrimitiveType,
    /// Whether the column sits inside a list or map (no bounds: they would describe elements).
    pub repeated: bool,
}

/// Matches the leaf columns of a file's Parquet schema to the table's `schema` (see the module
/// docs): by field id when the file has them, else through `mapping`. Refuses a column that
/// does not fit its field and a required top-level field the file lacks, naming `path`.
pub fn match_columns(
    path: &str,
    columns: &[std::sync::Arc<ColumnDescriptor>],
    schema: &Schema,
    mapping: &mut Mapping,
    has_ids: bool,
) -> Result<Vec<Matched>> {
    let parents = parents(schema);
    let mut seen: HashSet<i32> = HashSet::new();
    let mut out = Vec::new();
    for (i, col) in columns.iter().enumerate() {
        let parts = col.path().parts();
        let resolved = if has_ids {
            let info = col.self_type().get_basic_info();
            info.has_id().then(|| info.id())
        } else {
            mapping.resolve(parts).map(|(id, _)| id)
        };
        let Some(id) = resolved else { continue };
        let Some(field) = schema.field_by_id(id) else {
            continue;
        };
        let name = schema
            .name_by_field_id(id)
            .unwrap_or(field.name.as_str())
            .to_string();
        let Type::Primitive(ty) = field.field_type.as_ref() else {
            return Err(Error::InvalidInput(format!(
                "column `{}` of {path} is a {}, but the table's field `{name}` is a {}",
                parts.join("."),
                describe(col),
                field.field_type
            )));
        };
        fits(ty, col).map_err(|why| {
            Error::InvalidInput(format!(
                "column `{}` of {path} is {}, which does not fit the table's {ty} column \
                 `{name}`{why}",
                parts.join("."),
                describe(col)
            ))
        })?;
        let mut at = Some(id);
        while let Some(a) = at {
            seen.insert(a);
            at = parents.get(&a).copied();
        }
        out.push(Matched {
            column: i,
            field_id: id,
            ty: ty.clone(),
            repeated: col.max_rep_level() > 0,
        });
    }
    for f in schema.as_struct().fields() {
        if f.required && !seen.contains(&f.id) {
            return Err(Error::InvalidInput(format!(
                "{path} has no column for the table's required field `{}`{}; a file must \
                 hold every required column",
                f.name,
                if has_ids {
                    format!(" (field id {})", f.id)
                } else {
                    String::new()
                }
            )));
        }
    }
    Ok(out)
}

/// Every field id's parent field id (top-level fields have none).
fn parents(schema: &Schema) -> HashMap<i32, i32> {
    let mut out = HashMap::new();
    let mut stack: Vec<(i32, &Type)> = schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| (f.id, f.field_type.as_ref()))
        .collect();
    while let Some((id, ty)) = stack.pop() {
        let children: Vec<(i32, &Type)> = match ty {
            Type::Struct(s) => s
                .fields()
                .iter()
                .map(|f| (f.id, f.field_type.as_ref()))
                .collect(),
            Type::List(l) => vec![(l.element_field.id, l.element_field.field_type.as_ref())],
            Type::Map(m) => vec![
                (m.key_field.id, m.key_field.field_type.as_ref()),
                (m.value_field.id, m.value_field.field_type.as_ref()),
            ],
            Type::Primitive(_) => Vec::new(),
        };
        for (c, t) in children {
            out.insert(c, id);
            stack.push((c, t));
        }
    }
    out
}

/// Whether a file's column whose leaves all carry field ids.
pub fn has_field_ids(columns: &[std::sync::Arc<ColumnDescriptor>]) -> bool {
    !columns.is_empty()
        && columns
            .iter()
            .all(|c| c.self_type().get_basic_info().has_id())
}

/// The Parquet column as a person reads it: physical type and annotation.
pub fn describe(col: &ColumnDescriptor) -> String {
    match col.logical_type_ref() {
        Some(l) => format!("{} ({l:?})", col.physical_type()),
        None => format!("{}", col.physical_type()),
    }
}

/// Whether a Parquet column of this physical type and annotation reads as `ty`, as the reader
/// converts it (`Err`: why not, appended to the message).
pub fn fits(ty: &PrimitiveType, col: &ColumnDescriptor) -> std::result::Result<(), String> {
    use PrimitiveType as P;
    let physical = col.physical_type();
    let logical = col.logical_type_ref();
    let integer = |max_bits: i8| match &logical {
        None => true,
        Some(LogicalType::Integer {
            bit_width,
            is_signed,
        }) => *is_signed && *bit_width <= max_bits || !*is_signed && *bit_width < max_bits,
        _ => false,
    };
    let ok = match ty {
        P::Boolean => physical == PhysicalType::BOOLEAN,
        P::Int => physical == PhysicalType::INT32 && integer(32),
        P::Long => {
            (physical == PhysicalType::INT64 && integer(64))
                || (physical == PhysicalType::INT32 && integer(32))
        }
        P::Float => physical == PhysicalType::FLOAT,
        P::Double => matches!(physical, PhysicalType::DOUBLE | PhysicalType::FLOAT),
        P::Date => physical == PhysicalType::INT32 && matches!(logical, Some(LogicalType::Date)),
        P::Time => {
            physical == PhysicalType::INT64
                && matches!(
                    logical,
                    Some(LogicalType::Time {
                        unit: TimeUnit::MICROS,
                        ..
                    })
                )
        }
        P::Timestamp | P::Timestamptz => match (physical, &logical) {
            (PhysicalType::INT96, _) => true,
            (PhysicalType::INT64, Some(LogicalType::Timestamp { unit, .. })) => match unit {
                TimeUnit::MILLIS | TimeUnit::MICROS => true,
                TimeUnit::NANOS => {
                    return Err(": nanosecond timestamps do not fit a microsecond column \
                                (write the file with coerce_timestamps='us')"
                        .into());
                }
            },
            _ => false,
        },
        P::TimestampNs | P::TimestamptzNs => {
            physical == PhysicalType::INT64
                && matches!(
                    logical,
                    Some(LogicalType::Timestamp {
                        unit: TimeUnit::NANOS,
                        ..
                    })
                )
        }
        P::String => {
            physical == PhysicalType::BYTE_ARRAY
                && matches!(
                    logical,
                    None | Some(LogicalType::String | LogicalType::Enum | LogicalType::Json)
                )
        }
        P::Uuid => physical == PhysicalType::FIXED_LEN_BYTE_ARRAY && col.type_length() == 16,
        P::Fixed(n) => {
            physical == PhysicalType::FIXED_LEN_BYTE_ARRAY
                && u64::try_from(col.type_length()).ok() == Some(*n)
        }
        P::Binary => matches!(
            physical,
            PhysicalType::BYTE_ARRAY | PhysicalType::FIXED_LEN_BYTE_ARRAY
        ),
        P::Decimal { precision, scale } => match &logical {
            Some(LogicalType::Decimal {
                scale: s,
                precision: p,
            }) => {
                u32::try_from(*s).ok() == Some(*scale)
                    && u32::try_from(*p).is_ok_and(|p| p <= *precision)
            }
            _ => false,
        },
    };
    if ok { Ok(()) } else { Err(String::new()) }
}

#[cfg(test)]
mod tests {
    use iceberg::spec::{ListType, NestedField, StructType};

    use super::*;

    fn schema() -> Result<Schema> {
        Ok(Schema::builder()
            .with_fields(vec![
                NestedField::required(1, "id", Type::Primitive(PrimitiveType::Long)).into(),
                NestedField::optional(2, "region", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::optional(
                    3,
                    "point",
                    Type::Struct(StructType::new(vec![
                        NestedField::optional(4, "x", Type::Primitive(PrimitiveType::Double))
                            .into(),
                    ])),
                )
                .into(),
                NestedField::optional(
                    5,
                    "tags",
                    Type::List(ListType::new(
                        NestedField::optional(6, "element", Type::Primitive(PrimitiveType::String))
                            .into(),
                    )),
                )
                .into(),
            ])
            .build()?)
    }

    fn parts(p: &str) -> Vec<String> {
        p.split('.').map(str::to_string).collect()
    }

    #[test]
    fn a_created_mapping_resolves_nested_and_case_folded_columns() -> Result<()> {
        let schema = schema()?;
        let mut m = Mapping::of(&schema, &HashMap::new())?;
        assert!(m.created);
        assert_eq!(m.resolve(&parts("id")).map(|r| r.0), Some(1));
        assert_eq!(m.resolve(&parts("point.x")), Some((4, vec![3])));
        assert_eq!(m.resolve(&parts("tags.list.element")).map(|r| r.0), Some(6));
        assert_eq!(m.resolve(&parts("tags.array")).map(|r| r.0), Some(6));
        assert!(!m.changed);
        assert_eq!(m.resolve(&parts("Region")).map(|r| r.0), Some(2));
        assert!(m.changed);
        assert_eq!(m.resolve(&parts("nope")), None);
        // Written and read back: the alias stays.
        let json = m.to_json()?;
        let props = HashMap::from([(DEFAULT_SCHEMA_NAME_MAPPING.to_string(), json.clone())]);
        let mut again = Mapping::of(&schema, &props)?;
        assert!(!again.created);
        assert!(json.contains("\"Region\""), "{json}");
        assert_eq!(again.resolve(&parts("Region")).map(|r| r.0), Some(2));
        assert!(!again.changed);
        assert_eq!(
            again.resolve(&parts("tags.list.element")).map(|r| r.0),
            Some(6)
        );
        Ok(())
    }
}
