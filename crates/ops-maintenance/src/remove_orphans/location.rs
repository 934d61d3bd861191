//! Table locations and file paths compared as Java's `DeleteOrphanFiles` compares them: by
//! path, then scheme and authority, so one file named two ways is recognised (or refused).

use ops_core::{Error, Result};

/// Schemes naming one file system, as Java's default `equal_schemes` (`s3n,s3a` → `s3`): Hadoop
/// writes `s3a://` paths for the objects an `s3://` listing returns.
const EQUAL_SCHEMES: [(&str, &str); 2] = [("s3a", "s3"), ("s3n", "s3")];

/// A location split into scheme, authority and path, so `file:/x`, `file:///x` and `/x` have
/// one path and scheme, and `s3://b/x` and `s3a://b/x` one path and two schemes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Location {
    /// Lower case; `file` for a plain path.
    pub(crate) scheme: String,
    /// The bucket or host; empty for a local path.
    pub(crate) authority: String,
    /// Absolute, without repeated or trailing slashes (local paths: `.` and `..` resolved).
    pub(crate) path: String,
    /// As the metadata spells it.
    pub(crate) original: String,
}

impl Location {
    pub(crate) fn parse(s: &str) -> Result<Self> {
        let original = s.to_string();
        let (scheme, rest) = match s.split_once(':') {
            Some((scheme, rest))
                if !scheme.is_empty()
                    && scheme
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
            {
                (scheme.to_ascii_lowercase(), rest)
            }
            _ => ("file".to_string(), s),
        };
        let (authority, path) = match rest.strip_prefix("//") {
            Some(after) => match after.find('/') {
                Some(i) => (after[..i].to_string(), after[i..].to_string()),
                None => (after.to_string(), "/".to_string()),
            },
            None => (String::new(), rest.to_string()),
        };
        let path = normalize(&path);
        // A local path with `.` or `..` segments names the same file as its resolved form, and
        // the listing yields resolved paths: unresolved, a referenced file would look orphaned.
        // (An object store key is literal: `a/../b` is a key of its own there.)
        let path = if scheme == "file" {
            resolve_dots(&path)
        } else {
            path
        };
        if scheme == "file" && !authority.is_empty() && authority != "localhost" {
            return Err(Error::InvalidInput(format!(
                "'{s}' names a file on host '{authority}', which iceberg-ops cannot list"
            )));
        }
        let authority = if scheme == "file" {
            String::new()
        } else {
            authority
        };
        Ok(Self {
            scheme,
            authority,
            path,
            original,
        })
    }

    /// Whether this is a local file system path.
    pub(crate) fn is_local(&self) -> bool {
        self.scheme == "file"
    }

    /// Whether `other` is on the same file system: equal authorities and schemes equal once
    /// Java's default equal schemes are applied. With equal paths, the same file.
    pub(crate) fn same_file_system(&self, other: &Location) -> bool {
        canonical_scheme(&self.scheme) == canonical_scheme(&other.scheme)
            && self.authority.eq_ignore_ascii_case(&other.authority)
    }

    /// The local path `listed` (under this location) as the table's own paths spell it.
    pub(crate) fn local_url(&self, listed: &str) -> String {
        if self.original.starts_with("file://") {
            format!("file://{listed}")
        } else if self.original.starts_with("file:") {
            format!("file:{listed}")
        } else {
            listed.to_string()
        }
    }

    /// The object `key` in this location's bucket, with this location's scheme.
    pub(crate) fn object_url(&self, key: &str) -> String {
        // Lower case: iceberg's FileIO matches the scheme as written (`S3://` is refused).
        format!(
            "{}://{}/{}",
            self.scheme,
            self.authority,
            key.trim_start_matches('/')
        )
    }
}

fn canonical_scheme(scheme: &str) -> &str {
    EQUAL_SCHEMES
        .iter()
        .find(|(from, _)| *from == scheme)
        .map_or(scheme, |(_, to)| to)
}

/// `path` without repeated or trailing slashes, so a listed key and a referenced path compare
/// by their segments.
pub(crate) fn normalize(path: &str) -> String {
    let mut path = path.to_string();
    while path.contains("//") {
        path = path.replace("//", "/");
    }
    path.trim_end_matches('/').to_string()
}

/// `path` with its `.` and `..` segments resolved lexically (a `..` at the root stays at the
/// root, as the file system has it).
fn resolve_dots(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() && !absolute {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(s: &str) -> Location {
        Location::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn local_spellings_are_one_location_and_s3a_is_s3_as_java_has_it() {
        let a = loc("file:///tmp/w/t/data/a.parquet");
        let b = loc("file:/tmp/w/t/data/a.parquet");
        let c = loc("/tmp/w/t/data/a.parquet");
        assert_eq!(
            (a.scheme.as_str(), a.path.as_str()),
            ("file", "/tmp/w/t/data/a.parquet")
        );
        assert_eq!(
            (&a.scheme, &a.authority, &a.path),
            (&b.scheme, &b.authority, &b.path)
        );
        assert_eq!(
            (&a.scheme, &a.authority, &a.path),
            (&c.scheme, &c.authority, &c.path)
        );
        let s3 = loc("s3://bucket/t/data/a.parquet");
        let s3a = loc("s3a://bucket/t/data/a.parquet");
        assert_eq!(s3.path, s3a.path);
        assert_eq!(s3.authority, "bucket");
        assert!(!s3.is_local() && a.is_local());
        // Java's default equal schemes: s3a and s3n are s3; nothing else is, and another
        // bucket is another file system.
        assert!(s3.same_file_system(&s3a) && s3a.same_file_system(&s3));
        assert!(s3.same_file_system(&loc("s3n://bucket/t/data/a.parquet")));
        assert!(!s3.same_file_system(&loc("gs://bucket/t/data/a.parquet")));
        assert!(!s3.same_file_system(&loc("s3://other/t/data/a.parquet")));
        assert!(!s3.same_file_system(&a));
        // Listed objects are named with the scheme the table location uses.
        assert_eq!(
            s3a.object_url("t/data/b.parquet"),
            "s3a://bucket/t/data/b.parquet"
        );
        assert_eq!(
            loc("S3://bucket/t").object_url("t/x"),
            "s3://bucket/t/x",
            "iceberg's FileIO takes the scheme in lower case only"
        );
        assert_eq!(a.local_url("/tmp/w/b"), "file:///tmp/w/b");
        assert_eq!(c.local_url("/tmp/w/b"), "/tmp/w/b");
        assert!(Location::parse("file://otherhost/x").is_err());
    }

    #[test]
    fn dot_segments_of_local_paths_resolve_and_object_keys_stay_literal() {
        assert_eq!(
            loc("file:///w/t/./data/../data/a.parquet").path,
            "/w/t/data/a.parquet"
        );
        assert_eq!(loc("/w/t/data/./a.parquet").path, "/w/t/data/a.parquet");
        assert_eq!(loc("file:///../w/a").path, "/w/a");
        assert_eq!(loc("s3://b/t/../a").path, "/t/../a");
    }
}
