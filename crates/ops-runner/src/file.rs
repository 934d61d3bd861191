//! Declarative migration files, `NNNN_<description>.toml`:
//!
//! ```toml
//! version = "0002"                 # optional; must equal the file name's prefix
//! description = "rename amount"    # optional; default from the file name
//! allow_destructive = false        # drop_table / drop_column are refused unless true
//!
//! [[upgrade]]
//! op = "rename_column"
//! table = "orders"
//! column = "amount"
//! to = "total"
//!
//! [[upgrade]]
//! op = "widen_column"
//! table = "orders"
//! column = "total"
//! type = "decimal(14,2)"
//!
//! # [[downgrade]] ... optional: without it the runner inverts reversible upgrades
//! ```
//!
//! A malformed file is an error naming the file, the line and the field.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::operation::{Operation, apply};
use crate::{Migration, MigrationContext, Result, RunnerError, StepError, normalize_version};

/// A version as written in a file: `"0002"` or `2`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum VersionValue {
    /// Text.
    Text(String),
    /// Integer.
    Int(i64),
}

/// The contents of one migration file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigrationFile {
    /// Declared version (optional; must equal the file's prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionValue>,
    /// Description (default: from the file name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `drop_table` / `drop_column` may run.
    #[serde(default)]
    pub allow_destructive: bool,
    /// Operations applied in order by `migrate` (none: an empty migration, e.g. a baseline).
    #[serde(default)]
    pub upgrade: Vec<Operation>,
    /// Operations applied in order by `rollback`; absent means "invert the upgrade".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downgrade: Option<Vec<Operation>>,
}

/// Line and column (1-based) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, col)
}

/// The span of `list[index].field` (or of `list[index]`) in the parsed document.
fn field_span(text: &str, list: &str, index: usize, field: &str) -> Option<usize> {
    let doc = toml::de::DeTable::parse(text).ok()?;
    let item = doc.get_ref().get(list)?.get_ref().get(index)?;
    match item.get_ref().get(field) {
        Some(v) => Some(v.span().start),
        None => Some(item.span().start),
    }
}

impl MigrationFile {
    /// Parses a file's text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<Self> {
        let load = |message: String| RunnerError::Load {
            file: file.to_path_buf(),
            message,
        };
        let parsed: MigrationFile = toml::from_str(text).map_err(|e| {
            let at = e
                .span()
                .map(|s| {
                    let (line, col) = line_col(text, s.start);
                    format!("line {line}, column {col}: ")
                })
                .unwrap_or_default();
            load(format!("{at}{}", e.message().trim_end()))
        })?;
        for (list, ops) in [
            ("upgrade", Some(&parsed.upgrade)),
            ("downgrade", parsed.downgrade.as_ref()),
        ] {
            for (i, op) in ops.into_iter().flatten().enumerate() {
                if let Err((field, message)) = op.validate() {
                    let line = field_span(text, list, i, field)
                        .map(|o| format!("line {}, ", line_col(text, o).0))
                        .unwrap_or_default();
                    return Err(load(format!(
                        "{line}{list}[{i}] ({}) field '{field}': {message}",
                        op.name()
                    )));
                }
                if op.is_destructive() && !parsed.allow_destructive {
                    let line = field_span(text, list, i, "op")
                        .map(|o| format!("line {}, ", line_col(text, o).0))
                        .unwrap_or_default();
                    return Err(load(format!(
                        "{line}{list}[{i}] {} on table '{}' destroys data; add \
                         `allow_destructive = true` at the top of the file to allow it",
                        op.name(),
                        op.table()
                    )));
                }
            }
        }
        Ok(parsed)
    }

    /// The downgrade: the written one, else the inverse of the upgrade (last operation first)
    /// with nothing recorded about the table (so `set_properties` has no inverse: the runner
    /// derives it from the values it recorded, see [`derived_downgrade`]).
    pub fn downgrade_ops(&self) -> std::result::Result<Vec<Operation>, String> {
        match &self.downgrade {
            Some(ops) => Ok(ops.clone()),
            None => derived_downgrade(&self.upgrade, &Default::default()),
        }
    }

    /// The file as TOML text.
    pub fn to_toml(&self) -> std::result::Result<String, toml::ser::Error> {
        toml::to_string(self)
    }
}

/// The operations that undo `upgrade` (all of it, or the part that landed), last first, using
/// the earlier property values recorded when it was applied (by operation index).
pub fn derived_downgrade(
    upgrade: &[Operation],
    earlier_properties: &std::collections::BTreeMap<
        usize,
        std::collections::BTreeMap<String, Option<String>>,
    >,
) -> std::result::Result<Vec<Operation>, String> {
    let mut out = Vec::new();
    for (i, op) in upgrade.iter().enumerate().rev() {
        out.extend(op.inverse_with(earlier_properties.get(&i))?);
    }
    Ok(out)
}

/// The hex SHA-256 of a list of operations (as the TOML a file would hold them in, so comments
/// and layout do not count): what `migrate` compares to resume after the operations of a failed
/// attempt that landed.
pub fn operations_checksum(ops: &[Operation]) -> String {
    #[derive(Serialize)]
    struct Listed<'a> {
        upgrade: &'a [Operation],
    }
    let text = toml::to_string(&Listed { upgrade: ops }).unwrap_or_else(|_| format!("{ops:?}"));
    checksum(text.as_bytes())
}

/// The text `iceberg-ops new` writes for an empty migration `version`.
pub fn template(version: &str, description: &str) -> String {
    let quoted = toml::Value::String(description.to_string()).to_string();
    format!(
        "# Migration {version}: {description}\n\
         # Operations: create_table, drop_table, rename_table, add_column, drop_column,\n\
         # rename_column, widen_column, make_optional, set_doc, move_column,\n\
         # set_identifier_fields, add_partition_field, remove_partition_field,\n\
         # replace_sort_order, set_properties, remove_properties (see docs/runner.md).\n\
         version = \"{version}\"\n\
         description = {quoted}\n\
         # drop_table and drop_column are refused unless this is true.\n\
         allow_destructive = false\n\
         \n\
         # [[upgrade]]\n\
         # op = \"add_column\"\n\
         # table = \"orders\"\n\
         # column = \"note\"\n\
         # type = \"string\"\n\
         \n\
         # Optional: without [[downgrade]] the runner inverts reversible upgrades\n\
         # (rename, add column, create table, set properties, add partition field).\n\
         # [[downgrade]]\n\
         # op = \"drop_column\"\n\
         # table = \"orders\"\n\
         # column = \"note\"\n"
    )
}

/// A migration loaded from a `NNNN_<description>.toml` file.
#[derive(Debug, Clone)]
pub struct FileMigration {
    path: PathBuf,
    version: String,
    description: String,
    checksum: String,
    file: MigrationFile,
}

/// The hex SHA-256 of a migration file's bytes.
pub fn checksum(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl FileMigration {
    /// Loads `path`, checking its name (`NNNN_<description>.toml`) against its declared version.
    pub fn load(path: &Path) -> Result<Self> {
        let load = |message: String| RunnerError::Load {
            file: path.to_path_buf(),
            message,
        };
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| load("the file name is not valid UTF-8".into()))?;
        let (prefix, rest) = parse_file_name(name).ok_or_else(|| {
            load(
                "the name must be NNNN_<description>.toml (four digits, an underscore, a \
                 description)"
                    .into(),
            )
        })?;
        let bytes = std::fs::read(path).map_err(|source| RunnerError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes.clone())
            .map_err(|_| load("the file is not valid UTF-8".into()))?;
        let file = MigrationFile::parse(&text, path)?;
        if let Some(declared) = &file.version {
            let declared_text = match declared {
                VersionValue::Text(s) => s.clone(),
                VersionValue::Int(i) => i.to_string(),
            };
            let ok = normalize_version(&declared_text).is_ok_and(|v| v == prefix);
            if !ok {
                return Err(load(format!(
                    "field 'version': declares version {declared_text} but the file name's \
                     prefix is {prefix}; make them equal"
                )));
            }
        }
        let description = file
            .description
            .clone()
            .unwrap_or_else(|| rest.replace('_', " "));
        Ok(Self {
            path: path.to_path_buf(),
            version: prefix.to_string(),
            description,
            checksum: checksum(&bytes),
            file,
        })
    }

    /// The parsed file.
    pub fn file(&self) -> &MigrationFile {
        &self.file
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `NNNN_<description>.toml` → (`NNNN`, `<description>`).
pub(crate) fn parse_file_name(name: &str) -> Option<(&str, &str)> {
    let stem = name.strip_suffix(".toml")?;
    let (prefix, rest) = stem.split_once('_')?;
    (prefix.len() == 4 && prefix.bytes().all(|b| b.is_ascii_digit()) && !rest.is_empty())
        .then_some((prefix, rest))
}

#[async_trait]
impl Migration for FileMigration {
    fn version(&self) -> &str {
        &self.version
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn checksum(&self) -> Option<String> {
        Some(self.checksum.clone())
    }

    fn source(&self) -> String {
        self.path.display().to_string()
    }

    fn operations(&self) -> Option<&[Operation]> {
        Some(&self.file.upgrade)
    }

    fn written_downgrade(&self) -> Option<&[Operation]> {
        self.file.downgrade.as_deref()
    }

    fn describe_upgrade(&self, ctx: &MigrationContext) -> Vec<String> {
        self.file.upgrade.iter().map(|o| o.describe(ctx)).collect()
    }

    fn describe_downgrade(
        &self,
        ctx: &MigrationContext,
    ) -> std::result::Result<Vec<String>, StepError> {
        let ops = self
            .file
            .downgrade_ops()
            .map_err(StepError::NotImplemented)?;
        Ok(ops.iter().map(|o| o.describe(ctx)).collect())
    }

    async fn upgrade(&self, ctx: &MigrationContext) -> std::result::Result<(), StepError> {
        apply(&self.file.upgrade, ctx).await
    }

    async fn downgrade(&self, ctx: &MigrationContext) -> std::result::Result<(), StepError> {
        let ops = self
            .file
            .downgrade_ops()
            .map_err(StepError::NotImplemented)?;
        apply(&ops, ctx).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        MigrationFile::parse(text, Path::new("m/0001_x.toml"))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn malformed_files_name_file_line_and_field() {
        let e = err("[[upgrade]]\nop = \"rename_column\"\ntable = \"t\"\ncolumn = \"a\"\n");
        assert!(e.contains("m/0001_x.toml"), "{e}");
        assert!(
            e.contains("line 1") && e.contains("missing field `to`"),
            "{e}"
        );

        let e = err(
            "[[upgrade]]\nop = \"add_column\"\ntable = \"t\"\ncolumn = \"a\"\ntype = \"lnog\"\n",
        );
        assert!(e.contains("line 5") && e.contains("field 'type'"), "{e}");
        assert!(e.contains("unknown type 'lnog'"), "{e}");

        let e = err("[[upgrade]]\nop = \"rename_colum\"\ntable = \"t\"\n");
        assert!(e.contains("line 2") && e.contains("rename_colum"), "{e}");

        let e = err("[[upgrade]]\nop = \"drop_table\"\ntable = \"t\"\ncolour = 1\n");
        assert!(e.contains("colour"), "{e}");

        let e = err("upgrade = []\nversoin = 2\n");
        assert!(e.contains("line 2") && e.contains("versoin"), "{e}");

        let e = err("\n[[upgrade]]\nop = \"drop_column\"\ntable = \"t\"\ncolumn = \"c\"\n");
        assert!(
            e.contains("line 3") && e.contains("allow_destructive"),
            "{e}"
        );
        MigrationFile::parse(
            "allow_destructive = true\n[[upgrade]]\nop = \"drop_column\"\ntable = \"t\"\ncolumn = \"c\"\n",
            Path::new("x"),
        )
        .unwrap();
    }

    #[test]
    fn the_landed_operations_checksum_ignores_layout_and_sees_changes() {
        let a = MigrationFile::parse(
            "[[upgrade]]\nop = \"add_column\"\ntable = \"t\"\ncolumn = \"c\"\ntype = \"int\"\n",
            Path::new("x"),
        )
        .unwrap();
        let b = MigrationFile::parse(
            "# a comment\n[[upgrade]]\nop = \"add_column\"\ncolumn = \"c\"\ntable = \"t\"\ntype = \"int\" # int\n",
            Path::new("x"),
        )
        .unwrap();
        let c = MigrationFile::parse(
            "[[upgrade]]\nop = \"add_column\"\ntable = \"t\"\ncolumn = \"c\"\ntype = \"long\"\n",
            Path::new("x"),
        )
        .unwrap();
        assert_eq!(
            operations_checksum(&a.upgrade),
            operations_checksum(&b.upgrade)
        );
        assert_ne!(
            operations_checksum(&a.upgrade),
            operations_checksum(&c.upgrade)
        );
        assert_ne!(operations_checksum(&a.upgrade), operations_checksum(&[]));
    }

    #[test]
    fn the_template_loads() {
        let f = MigrationFile::parse(&template("0004", "add \"notes\""), Path::new("x")).unwrap();
        assert!(f.upgrade.is_empty());
        assert_eq!(f.description.as_deref(), Some("add \"notes\""));
    }

    #[test]
    fn file_names_parse() {
        assert_eq!(
            parse_file_name("0001_create_orders.toml"),
            Some(("0001", "create_orders"))
        );
        assert_eq!(parse_file_name("001_x.toml"), None);
        assert_eq!(parse_file_name("0001.toml"), None);
        assert_eq!(parse_file_name("0001_x.py"), None);
    }

    #[test]
    fn derived_downgrade_reverses_and_inverts() {
        let f = MigrationFile::parse(
            "[[upgrade]]\nop = \"rename_table\"\ntable = \"a\"\nto = \"b\"\n\
             [[upgrade]]\nop = \"add_column\"\ntable = \"b\"\ncolumn = \"c\"\ntype = \"int\"\n",
            Path::new("x"),
        )
        .unwrap();
        let down = f.downgrade_ops().unwrap();
        assert_eq!(down[0].name(), "drop_column");
        assert_eq!(
            down[1],
            Operation::RenameTable {
                table: "b".into(),
                to: "a".into()
            }
        );
    }
}
