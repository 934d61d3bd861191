//! This run's invocation as the commands a report prints repeat it: a fix or a hint names the
//! same `--config` and `--catalog` the user ran with, so it can be pasted as it is.

use std::path::PathBuf;

/// The `--config` the process was given (set once, by `main`).
pub static CONFIG_FILE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// What the fix commands repeat after the table name: this run's `--config` and `--catalog`.
pub(crate) fn command_args(catalog: &str) -> String {
    let mut args = Vec::new();
    if let Some(path) = CONFIG_FILE.get() {
        let shown = std::path::absolute(path).unwrap_or_else(|_| path.clone());
        args.push(format!(
            "--config {}",
            shell_word(&shown.display().to_string())
        ));
    }
    if catalog != default_catalog() {
        args.push(format!("--catalog {}", shell_word(catalog)));
    }
    args.join(" ")
}

/// The command that lists `catalog`'s tables, quoted for a message: `iceberg-ops table list`
/// with the flags that name the catalog (none for the default one).
pub(crate) fn table_list_command(catalog: &str) -> String {
    let args = command_args(catalog);
    if args.is_empty() {
        "`iceberg-ops table list`".to_string()
    } else {
        format!("`iceberg-ops table list {args}`")
    }
}

/// The catalog a command opens without `--catalog`: the one PyIceberg's `load_catalog()`
/// opens without a name (`default-catalog` in `.pyiceberg.yaml`, `PYICEBERG_DEFAULT_CATALOG`, or
/// a catalog named `default`), so both find the same tables; else the embedded default. Read
/// from the search path, not from `--config`, which clap has not parsed yet when it asks.
pub(crate) fn default_catalog() -> String {
    ops_core::catalog::CatalogConfig::load(None)
        .ok()
        .and_then(|c| c.default_catalog().map(str::to_string))
        .unwrap_or_else(|| ops_core::catalog::EMBEDDED_DEFAULT.to_string())
}

/// `s` as one shell word.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word the shell would split or expand is quoted; a quote inside it survives.
    #[test]
    fn words_are_quoted_only_when_the_shell_would_change_them() {
        assert_eq!(shell_word("lake"), "lake");
        assert_eq!(shell_word("/tmp/a-b_c.yaml"), "/tmp/a-b_c.yaml");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("my lake"), "'my lake'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
    }
}
