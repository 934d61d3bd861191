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
use parquet::schema::types::{ColumnDescriptor, SchemaDescriptor};

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
    /// fields it passes through; `None` when the mapping has no such column. With `fold`, a
    /// level whose name matches no mapped name exactly may match one (only one) when case is
    /// ignored: the aliases that takes are returned (node, spelling), for [`Self::alias`] to
    /// add once the column is accepted.
    pub fn resolve(&self, parts: &[String], fold: bool) -> Option<Resolved> {
        let mut level = self.roots.clone();
        let mut path_ids = Vec::new();
        let mut aliases = Vec::new();
        let mut found: Option<usize> = None;
        for (k, part) in parts.iter().enumerate() {
            let last = k + 1 == parts.len();
            let exact = level
                .iter()
                .copied()
                .find(|&i| self.nodes[i].names.iter().any(|n| n == part));
            let folded = || {
                let lower = part.to_lowercase();
                let matching: Vec<usize> = level
                    .iter()
                    .copied()
                    .filter(|&i| {
                        self.nodes[i]
                            .names
                            .iter()
                            .any(|n| n.to_lowercase() == lower)
                    })
                    .collect();
                (matching.len() == 1).then(|| matching[0])
            };
            let next = match exact {
                Some(n) => Some(n),
                None if fold => folded().inspect(|&n| aliases.push((n, part.clone()))),
                None => None,
            };
            let next = match next {
                Some(n) => n,
                // A list's or map's structural level: stay where we are.
                None if !last && STRUCTURAL.contains(&part.as_str()) && found.is_some() => continue,
                // A two-level list (`col.array`, `col.bag`): its element, the list's one
                // child (not a struct's one field: `point.y` is no `point.x`).
                None if found.is_some()
                    && level.len() == 1
                    && self.nodes[level[0]].names.iter().any(|n| n == "element") =>
                {
                    level[0]
                }
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
        Some(Resolved {
            field_id: id,
            parents: path_ids,
            aliases,
        })
    }

    /// Adds the spellings a folded match took ([`Resolved::aliases`]).
    pub fn alias(&mut self, aliases: &[(usize, String)]) {
        for (node, name) in aliases {
            if !self.nodes[*node].names.contains(name) {
                self.nodes[*node].names.push(name.clone());
                self.changed = true;
            }
        }
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

/// The table's top-level column named `name`, ignoring case (as Hive names columns and
/// partition keys).
pub fn column_named<'a>(
    schema: &'a Schema,
    name: &str,
) -> Option<&'a iceberg::spec::NestedFieldRef> {
    schema
        .as_struct()
        .fields()
        .iter()
        .find(|f| f.name.eq_ignore_ascii_case(name))
}

/// What a column path maps to ([`Mapping::resolve`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The field.
    pub field_id: i32,
    /// The fields it lies in, outermost first.
    pub parents: Vec<i32>,
    /// Spellings a case-folded match would add: (mapping node, name).
    pub aliases: Vec<(usize, String)>,
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
/// docs): by field id when the file has them, else through `mapping` — exact names first, then
/// names that differ in case only, for columns no exact match took. Refuses, naming `path`:
/// a column the table lacks (PyIceberg cannot read the table then, and PyIceberg's
/// `add_files` refuses it too); two columns of one field; field ids that contradict their
/// names (a column named as one table column carrying another's id); a column that does not
/// fit its field; a required top-level field the file lacks.
pub fn match_columns(
    path: &str,
    descr: &SchemaDescriptor,
    schema: &Schema,
    mapping: &mut Mapping,
) -> Result<(Vec<Matched>, HashSet<i32>)> {
    let columns = descr.columns();
    let has_ids = has_field_ids(descr);
    let fields = fields(schema);
    let mut ids: Vec<Option<i32>> = vec![None; columns.len()];
    if has_ids {
        for (i, col) in columns.iter().enumerate() {
            let info = col.self_type().get_basic_info();
            ids[i] = Some(info.id());
        }
        refuse_contradicting_ids(path, descr, schema)?;
    } else {
        let mut taken: HashSet<i32> = HashSet::new();
        for (i, col) in columns.iter().enumerate() {
            if let Some(r) = mapping.resolve(col.path().parts(), false) {
                taken.insert(r.field_id);
                ids[i] = Some(r.field_id);
            }
        }
        for (i, col) in columns.iter().enumerate() {
            if ids[i].is_some() {
                continue;
            }
            if let Some(r) = mapping.resolve(col.path().parts(), true)
                && taken.insert(r.field_id)
            {
                mapping.alias(&r.aliases);
                ids[i] = Some(r.field_id);
            }
        }
    }
    let mut seen: HashSet<i32> = HashSet::new();
    let mut by_field: HashMap<i32, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, col) in columns.iter().enumerate() {
        let parts = col.path().parts();
        let field = ids[i].and_then(|id| schema.field_by_id(id).map(|f| (id, f)));
        let Some((id, field)) = field else {
            // The schema has the column but the table's name mapping does not name it (a
            // writer added it without extending the mapping): that, not the schema, is what
            // to fix.
            if ids[i].is_none()
                && let Some(f) = schema.field_by_name(&parts.join("."))
            {
                return Err(Error::InvalidInput(format!(
                    "column `{}` of {path} is the table's field {} by name, but the table's \
                     name mapping ({DEFAULT_SCHEMA_NAME_MAPPING}) does not name it, so readers \
                     of files without field ids would not find it: add {{\"field-id\": {}, \
                     \"names\": [\"{}\"]}} to the mapping (nested under its parent's \
                     \"fields\" for a nested column), then add the files",
                    parts.join("."),
                    f.id,
                    f.id,
                    parts.last().map_or("", |n| n.as_str())
                )));
            }
            return Err(Error::InvalidInput(format!(
                "column `{}` of {path} is not in the table{}: add it to the table's schema \
                 first, or leave it out of the files (a reader could not read the table)",
                parts.join("."),
                match ids[i] {
                    Some(id) => format!(" (its field id {id} is none of the table's)"),
                    None => String::new(),
                }
            )));
        };
        if let Some(other) = by_field.insert(id, i) {
            return Err(Error::InvalidInput(format!(
                "columns `{}` and `{}` of {path} both map to the table's field {id}; a file \
                 may hold one column per field",
                columns[other].path().parts().join("."),
                parts.join(".")
            )));
        }
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
        let under_repeated = fields.get(&id).is_some_and(|f| f.repeated);
        if (col.max_rep_level() > 0) != under_repeated {
            return Err(Error::InvalidInput(format!(
                "column `{}` of {path} is {} but the table's `{name}` is {}",
                parts.join("."),
                if col.max_rep_level() > 0 {
                    "repeated (inside a list or map)"
                } else {
                    "not repeated"
                },
                if under_repeated {
                    "inside a list or map"
                } else {
                    "a single value per row"
                }
            )));
        }
        let mut at = Some(id);
        while let Some(a) = at {
            seen.insert(a);
            at = fields.get(&a).and_then(|f| f.parent);
        }
        out.push(Matched {
            column: i,
            field_id: id,
            ty: ty.clone(),
            repeated: col.max_rep_level() > 0,
        });
    }
    // Every required field of a struct the file has (the table's top level included).
    let mut required: Vec<(&i32, &FieldFacts)> = fields
        .iter()
        .filter(|(id, f)| {
            f.required && !seen.contains(id) && f.parent.is_none_or(|p| seen.contains(&p))
        })
        .collect();
    required.sort_by_key(|(id, _)| **id);
    if let Some((id, _)) = required.first() {
        let name = schema.name_by_field_id(**id).unwrap_or("?");
        return Err(Error::InvalidInput(format!(
            "{path} has no column for the table's required field `{name}`{}; a file must hold \
             every required column",
            if has_ids {
                format!(" (field id {id})")
            } else {
                String::new()
            }
        )));
    }
    Ok((out, seen))
}

/// What matching needs to know of a table field.
#[derive(Debug, Clone, Copy)]
pub struct FieldFacts {
    /// The field it lies in (`None` at the top level).
    pub parent: Option<i32>,
    /// Whether it is required.
    pub required: bool,
    /// Whether every field from the top level down to it is required: only then is a NULL
    /// in its column a NULL of its own (not of a struct around it).
    pub required_path: bool,
    /// Whether it lies in a list or a map (its column is repeated).
    pub repeated: bool,
}

/// Every field of `schema` by id (walked with a stack, not recursion).
pub fn fields(schema: &Schema) -> HashMap<i32, FieldFacts> {
    let mut out = HashMap::new();
    let mut stack: Vec<(&iceberg::spec::NestedField, Option<i32>, bool, bool)> = schema
        .as_struct()
        .fields()
        .iter()
        .map(|f| (f.as_ref(), None, true, false))
        .collect();
    while let Some((f, parent, parent_required, repeated)) = stack.pop() {
        let required_path = parent_required && f.required;
        out.insert(
            f.id,
            FieldFacts {
                parent,
                required: f.required,
                required_path,
                repeated,
            },
        );
        match f.field_type.as_ref() {
            Type::Struct(s) => stack.extend(
                s.fields()
                    .iter()
                    .map(|c| (c.as_ref(), Some(f.id), required_path, repeated)),
            ),
            Type::List(l) => stack.push((l.element_field.as_ref(), Some(f.id), false, true)),
            Type::Map(m) => {
                stack.push((m.key_field.as_ref(), Some(f.id), false, true));
                stack.push((m.value_field.as_ref(), Some(f.id), false, true));
            }
            Type::Primitive(_) => {}
        }
    }
    out
}

/// Refuses NULLs in a required column (`stats` by field id; `matched` from
/// [`match_columns`]): a NULL count above zero, or an unknown one in a column the file
/// declares optional — PyIceberg's `add_files` refuses an optional column for a required
/// field, and a reader fails on the NULL.
pub fn refuse_nulls_in_required(
    path: &str,
    descr: &SchemaDescriptor,
    schema: &Schema,
    matched: &[Matched],
    stats: &HashMap<i32, crate::metrics::ColumnStats>,
) -> Result<()> {
    let fields = fields(schema);
    for m in matched {
        if !fields.get(&m.field_id).is_some_and(|f| f.required_path) {
            continue;
        }
        let name = schema.name_by_field_id(m.field_id).unwrap_or("?");
        let optional = descr
            .column(m.column)
            .self_type()
            .get_basic_info()
            .repetition()
            == parquet::basic::Repetition::OPTIONAL;
        match stats.get(&m.field_id).and_then(|s| s.nulls) {
            Some(0) => {}
            Some(n) => {
                return Err(Error::InvalidInput(format!(
                    "{path}: column `{name}` holds {n} NULL(s), but the table's `{name}` is \
                     required"
                )));
            }
            None if optional => {
                return Err(Error::InvalidInput(format!(
                    "{path}: column `{name}` is optional and its statistics do not say whether \
                     it holds NULLs, but the table's `{name}` is required"
                )));
            }
            None => {}
        }
    }
    Ok(())
}

/// Refuses a file whose top-level column named as one table column carries another table
/// column's field id (`b` with `a`'s id): read by id, the two would come back swapped. A
/// column renamed since the file was written (its old name is no table column now) is fine.
fn refuse_contradicting_ids(path: &str, descr: &SchemaDescriptor, schema: &Schema) -> Result<()> {
    for top in descr.root_schema().get_fields() {
        let info = top.get_basic_info();
        if !info.has_id() {
            continue;
        }
        let (id, name) = (info.id(), top.name());
        let Some(by_id) = schema.as_struct().field_by_id(id) else {
            continue;
        };
        if by_id.name.eq_ignore_ascii_case(name) {
            continue;
        }
        if let Some(by_name) = schema
            .as_struct()
            .fields()
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .filter(|f| f.id != id)
        {
            return Err(Error::InvalidInput(format!(
                "column `{name}` of {path} carries field id {id}, which is the table's `{}`; \
                 the table's `{}` is field id {}. Read by id, the columns would be swapped: \
                 the file's field ids are not this table's",
                by_id.name, by_name.name, by_name.id
            )));
        }
    }
    Ok(())
}

/// Whether the file is read by field id: its first top-level field carries one (the reader's
/// rule, Java's `ParquetSchemaUtil.hasIds`); otherwise by name through the mapping.
pub fn has_field_ids(descr: &SchemaDescriptor) -> bool {
    descr
        .root_schema()
        .get_fields()
        .first()
        .is_some_and(|f| f.get_basic_info().has_id())
}

/// The column's logical type, or the one its converted type (all a file of parquet-mr before
/// 1.11 — Hive 3, Spark 3.1 and older — carries) stands for, as parquet-java's
/// `LogicalTypeAnnotation.fromOriginalType` maps it.
pub fn logical(col: &ColumnDescriptor) -> Option<LogicalType> {
    use parquet::basic::ConvertedType as C;
    if let Some(l) = col.logical_type_ref() {
        return Some(l.clone());
    }
    let int = |bit_width: i8, is_signed: bool| LogicalType::Integer {
        bit_width,
        is_signed,
    };
    Some(match col.converted_type() {
        C::UTF8 => LogicalType::String,
        C::ENUM => LogicalType::Enum,
        C::JSON => LogicalType::Json,
        C::BSON => LogicalType::Bson,
        C::DATE => LogicalType::Date,
        C::DECIMAL => LogicalType::Decimal {
            scale: col.type_scale(),
            precision: col.type_precision(),
        },
        C::TIME_MILLIS => LogicalType::Time {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::MILLIS,
        },
        C::TIME_MICROS => LogicalType::Time {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::MICROS,
        },
        C::TIMESTAMP_MILLIS => LogicalType::Timestamp {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::MILLIS,
        },
        C::TIMESTAMP_MICROS => LogicalType::Timestamp {
            is_adjusted_to_u_t_c: true,
            unit: TimeUnit::MICROS,
        },
        C::INT_8 => int(8, true),
        C::INT_16 => int(16, true),
        C::INT_32 => int(32, true),
        C::INT_64 => int(64, true),
        C::UINT_8 => int(8, false),
        C::UINT_16 => int(16, false),
        C::UINT_32 => int(32, false),
        C::UINT_64 => int(64, false),
        _ => return None,
    })
}

/// The Parquet column as a person reads it: physical type and annotation.
pub fn describe(col: &ColumnDescriptor) -> String {
    match logical(col) {
        Some(l) => format!("{} ({l:?})", col.physical_type()),
        None => format!("{}", col.physical_type()),
    }
}

/// Whether a Parquet column of this physical type and annotation reads as `ty`, as the reader
/// converts it (`Err`: why not, appended to the message).
pub fn fits(ty: &PrimitiveType, col: &ColumnDescriptor) -> std::result::Result<(), String> {
    use PrimitiveType as P;
    let physical = col.physical_type();
    let logical = logical(col);
    let logical = logical.as_ref();
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
                // Every 32-bit integer fits a long, unsigned ones too.
                || (physical == PhysicalType::INT32
                    && (integer(32)
                        || matches!(
                            logical,
                            Some(LogicalType::Integer { bit_width: 32, .. })
                        )))
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
            (
                PhysicalType::INT64,
                Some(LogicalType::Timestamp {
                    is_adjusted_to_u_t_c,
                    ..
                }),
            ) if *is_adjusted_to_u_t_c != (*ty == P::Timestamptz) => {
                return Err(if *is_adjusted_to_u_t_c {
                    ": its instants are UTC-adjusted (a timestamp with a time zone); the \
                     table's column has none (timestamptz would fit)"
                        .into()
                } else {
                    ": its timestamps have no time zone; the table's column is UTC-adjusted \
                     (timestamp would fit)"
                        .into()
                });
            }
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
        let id = |m: &Mapping, p: &str, fold: bool| m.resolve(&parts(p), fold).map(|r| r.field_id);
        assert_eq!(id(&m, "id", false), Some(1));
        let x = m.resolve(&parts("point.x"), false);
        assert_eq!(x.map(|r| (r.field_id, r.parents)), Some((4, vec![3])));
        assert_eq!(id(&m, "tags.list.element", false), Some(6));
        assert_eq!(id(&m, "tags.array", false), Some(6));
        assert_eq!(id(&m, "Region", false), None);
        let folded = m.resolve(&parts("Region"), true);
        assert_eq!(folded.as_ref().map(|r| r.field_id), Some(2));
        assert!(!m.changed);
        m.alias(&folded.map(|r| r.aliases).unwrap_or_default());
        assert!(m.changed);
        assert_eq!(id(&m, "nope", true), None);
        // Written and read back: the alias stays.
        let json = m.to_json()?;
        let props = HashMap::from([(DEFAULT_SCHEMA_NAME_MAPPING.to_string(), json.clone())]);
        let again = Mapping::of(&schema, &props)?;
        assert!(!again.created);
        assert!(json.contains("\"Region\""), "{json}");
        assert_eq!(id(&again, "Region", false), Some(2));
        assert_eq!(id(&again, "tags.list.element", false), Some(6));
        Ok(())
    }
}
