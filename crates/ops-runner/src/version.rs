//! Migration versions: 1–4 decimal digits, stored zero-padded so they sort as numbers.

use std::fmt;

use crate::{Result, RunnerError};

/// Normalises a user-supplied migration version to its 4-digit form: `"2"`, `"0002"`, `2` and
/// `" 2 "` all give `"0002"`; `10` gives `"0010"`.
///
/// # Errors
/// [`RunnerError::InvalidVersion`] unless the value (surrounding whitespace ignored) is 1–4
/// decimal digits.
///
/// ```
/// assert_eq!(ops_runner::normalize_version("2").unwrap(), "0002");
/// assert_eq!(ops_runner::normalize_version(10).unwrap(), "0010");
/// assert!(ops_runner::normalize_version("12345").is_err());
/// ```
pub fn normalize_version(value: impl fmt::Display) -> Result<String> {
    let text = value.to_string();
    let trimmed = text.trim();
    if trimmed.is_empty() || trimmed.len() > 4 || !trimmed.bytes().all(|b| b.is_ascii_digit()) {
        return Err(RunnerError::InvalidVersion { value: text });
    }
    Ok(format!("{trimmed:0>4}"))
}

/// A target version as a caller gives it: 1–4 digits or an integer; normalised when used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target(String);

impl Target {
    /// The normalised 4-digit version.
    pub fn normalized(&self) -> Result<String> {
        normalize_version(&self.0)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Target {
    fn from(v: &str) -> Self {
        Target(v.to_string())
    }
}

impl From<String> for Target {
    fn from(v: String) -> Self {
        Target(v)
    }
}

macro_rules! int_target {
    ($($t:ty),*) => {$(
        impl From<$t> for Target {
            fn from(v: $t) -> Self {
                Target(v.to_string())
            }
        }
    )*};
}
int_target!(i32, i64, u16, u32, u64, usize);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_as_the_seed() -> Result<()> {
        assert_eq!(normalize_version("2")?, "0002");
        assert_eq!(normalize_version("0002")?, "0002");
        assert_eq!(normalize_version(2)?, "0002");
        assert_eq!(normalize_version(10)?, "0010");
        assert_eq!(normalize_version(" 7 ")?, "0007");
        assert_eq!(normalize_version("9999")?, "9999");
        for bad in ["", " ", "12345", "-1", "1a", "v2", "2.0", "٣"] {
            assert!(
                matches!(
                    normalize_version(bad),
                    Err(RunnerError::InvalidVersion { .. })
                ),
                "{bad:?} accepted"
            );
        }
        assert!(normalize_version(-1).is_err());
        assert!(normalize_version(10000).is_err());
        // "2" and "10" order numerically once normalised.
        assert!(normalize_version("2")? < normalize_version("10")?);
        assert_eq!(Target::from(3u32).normalized()?, "0003");
        Ok(())
    }
}
