//! When a table needs care: the thresholds `health` reports against and `maintain` acts on.
//!
//! Each threshold comes from, in order: the table's property, the policy file's section for the
//! table's namespace (the longest one that is a prefix of it: `[namespace."a.b"]` covers `a.b`
//! and `a.b.c`), the policy file's `[defaults]`, then the built-in default. The managed services
//! keep theirs in their APIs (Glue's optimizer, S3 Tables) or in a service (Amoro); here they
//! are table properties, so a table carries its own rules to whichever machine maintains it.
//!
//! | property | default | from |
//! |---|---|---|
//! | `write.target-file-size-bytes` | 512 MiB | Iceberg |
//! | `iceberg-ops.maintain.min-input-files` | 5 | Java's `min-input-files` |
//! | `iceberg-ops.maintain.equality-delete-ratio` | 0.1 | Amoro's `major.trigger.duplicate-ratio` |
//! | `iceberg-ops.maintain.position-delete-ratio` | 0.2 | twice that, as Amoro's score weighs them |
//! | `iceberg-ops.maintain.score-file-count` | 12 | Amoro's `minor.trigger.file-count` |
//! | `iceberg-ops.maintain.orphan-interval` | 7d | (no metadata trace: a state file keeps the last run) |
//! | `iceberg-ops.maintain.orphan-older-than` | 3d | Java's `DeleteOrphanFiles`, S3 Tables' `unreferencedDays` |
//! | `iceberg-ops.maintain.enabled` | true | `false` leaves the table to someone else |
//! | `iceberg-ops.maintain.rewrite-old-spec-files` | false | `true`: compaction rewrites files of older partition specs into the current one |
//! | `history.expire.max-snapshot-age-ms` | 5 days | Iceberg (the policy file may default it) |
//! | `history.expire.min-snapshots-to-keep` | 1 | Iceberg (the policy file may default it) |

use std::collections::{BTreeMap, HashMap};

use iceberg::spec::{TableMetadata, TableProperties};
use ops_core::{Error, Result};
use serde::Deserialize;

/// Property prefix of the maintenance thresholds.
pub const PREFIX: &str = "iceberg-ops.maintain.";

/// Java's `min-input-files`.
pub const DEFAULT_MIN_INPUT_FILES: usize = 5;
/// Amoro's `self-optimizing.major.trigger.duplicate-ratio`.
pub const DEFAULT_EQUALITY_DELETE_RATIO: f64 = 0.1;
/// Twice the equality ratio, as Amoro's score weighs position deletes.
pub const DEFAULT_POSITION_DELETE_RATIO: f64 = 0.2;
/// Amoro's `self-optimizing.minor.trigger.file-count`: below it a table's score is dampened.
pub const DEFAULT_SCORE_FILE_COUNT: usize = 12;
/// How often `maintain` looks for orphan files.
pub const DEFAULT_ORPHAN_INTERVAL_MS: i64 = 7 * DAY_MS;
/// The youngest file unattended orphan cleanup may delete: a writer's files are invisible to
/// metadata until its commit, and three days is what Java and S3 Tables wait.
pub const MIN_ORPHAN_AGE_MS: i64 = 3 * DAY_MS;

const DAY_MS: i64 = 86_400_000;

/// The thresholds one table is judged by, each with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// The file size compaction aims at.
    pub target_file_size: u64,
    /// Files at most this big are fragments (Amoro: target / 8).
    pub fragment_size: u64,
    /// Files below this are undersized (75% of the target: Java's `min-file-size-bytes`,
    /// Glue's optimizer, Amoro's `min-target-size-ratio`).
    pub min_file_size: u64,
    /// A partition is compacted once it holds this many undersized files.
    pub min_input_files: usize,
    /// A partition is compacted once its equality delete records exceed this share of its
    /// data records.
    pub equality_delete_ratio: f64,
    /// ... or its position delete records this share.
    pub position_delete_ratio: f64,
    /// Amoro's dampening of small tables' scores.
    pub score_file_count: usize,
    /// How often `maintain` looks for orphan files.
    pub orphan_interval_ms: i64,
    /// The youngest file `maintain`'s orphan cleanup deletes (at least 3 days).
    pub orphan_older_than_ms: i64,
    /// Whether `maintain` looks after the table at all.
    pub enabled: bool,
    /// Whether `maintain`'s compaction rewrites files of older partition specs into the current
    /// one (Spark's `rewrite_data_files` leaves them unless asked, as `table compact` does).
    pub rewrite_old_spec_files: bool,
    /// The policy's snapshot age for a table without `history.expire.max-snapshot-age-ms`.
    pub snapshot_max_age_ms: Option<i64>,
    /// The policy's snapshots kept for a table without `history.expire.min-snapshots-to-keep`.
    pub min_snapshots_to_keep: Option<usize>,
    /// Where each threshold came from (`name` → `property`, `policy [..]` or `default`).
    pub sources: BTreeMap<String, String>,
}

/// One layer of a policy file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PolicyValues {
    /// `write.target-file-size-bytes` for tables without it.
    pub target_file_size_bytes: Option<u64>,
    /// See [`Thresholds::min_input_files`].
    pub min_input_files: Option<usize>,
    /// See [`Thresholds::equality_delete_ratio`].
    pub equality_delete_ratio: Option<f64>,
    /// See [`Thresholds::position_delete_ratio`].
    pub position_delete_ratio: Option<f64>,
    /// See [`Thresholds::score_file_count`].
    pub score_file_count: Option<usize>,
    /// See [`Thresholds::orphan_interval_ms`], as an age (`7d`, `12h`).
    pub orphan_interval: Option<String>,
    /// See [`Thresholds::orphan_older_than_ms`], as an age (`3d`).
    pub orphan_older_than: Option<String>,
    /// `history.expire.max-snapshot-age-ms` for tables without it, as an age (`5d`).
    pub max_snapshot_age: Option<String>,
    /// `history.expire.min-snapshots-to-keep` for tables without it.
    pub min_snapshots_to_keep: Option<usize>,
    /// See [`Thresholds::enabled`].
    pub enabled: Option<bool>,
    /// See [`Thresholds::rewrite_old_spec_files`].
    pub rewrite_old_spec_files: Option<bool>,
}

/// A `--policy` file: `[defaults]` and `[namespace."NS"]` sections of [`PolicyValues`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Values for every table.
    #[serde(default)]
    pub defaults: PolicyValues,
    /// Values for the tables of a namespace (and its nested ones).
    #[serde(default)]
    pub namespace: BTreeMap<String, PolicyValues>,
}

impl Policy {
    /// Parses a policy file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let policy: Policy = toml::from_str(text).map_err(|e| {
            Error::InvalidInput(format!(
                "the policy file {origin} is not valid: {e}. It takes [defaults] and \
                 [namespace.\"NS\"] sections with the keys target-file-size-bytes, \
                 min-input-files, equality-delete-ratio, position-delete-ratio, \
                 score-file-count, orphan-interval, orphan-older-than, max-snapshot-age, \
                 min-snapshots-to-keep, enabled, rewrite-old-spec-files (see \
                 docs/maintenance.md)"
            ))
        })?;
        // Check every section now, not when a table first meets it.
        let empty = HashMap::new();
        let sections = std::iter::once(("[defaults]".to_string(), &policy.defaults)).chain(
            policy
                .namespace
                .iter()
                .map(|(ns, v)| (format!("[namespace.\"{ns}\"]"), v)),
        );
        for (section, values) in sections {
            Thresholds::resolve_with(&empty, &[(&section, values)]).map_err(|e| {
                Error::InvalidInput(format!("the policy file {origin}, section {section}: {e}"))
            })?;
        }
        Ok(policy)
    }

    /// The layers that apply to `namespace`, most specific first.
    fn layers<'a>(&'a self, namespace: &[String]) -> Vec<(String, &'a PolicyValues)> {
        let mut out: Vec<(usize, String, &PolicyValues)> = self
            .namespace
            .iter()
            .filter_map(|(ns, values)| {
                let parts: Vec<&str> = ns.split('.').collect();
                let covers = parts.len() <= namespace.len()
                    && parts.iter().zip(namespace).all(|(a, b)| *a == b);
                covers.then(|| (parts.len(), format!("policy [namespace.\"{ns}\"]"), values))
            })
            .collect();
        out.sort_by_key(|(depth, _, _)| std::cmp::Reverse(*depth));
        let mut layers: Vec<(String, &PolicyValues)> =
            out.into_iter().map(|(_, name, v)| (name, v)).collect();
        layers.push(("policy [defaults]".to_string(), &self.defaults));
        layers
    }
}

impl Thresholds {
    /// The thresholds of the table `md` in `namespace` under `policy`.
    pub fn of(md: &TableMetadata, namespace: &[String], policy: &Policy) -> Result<Self> {
        Self::of_properties(md.properties(), namespace, policy)
    }

    /// The thresholds of a table with these properties in `namespace` under `policy`.
    pub fn of_properties(
        properties: &HashMap<String, String>,
        namespace: &[String],
        policy: &Policy,
    ) -> Result<Self> {
        let layers = policy.layers(namespace);
        let layers: Vec<(&str, &PolicyValues)> =
            layers.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        Self::resolve_with(properties, &layers)
    }

    fn resolve_with(
        props: &HashMap<String, String>,
        layers: &[(&str, &PolicyValues)],
    ) -> Result<Self> {
        let mut sources = BTreeMap::new();
        // The first of: the property, the layers, the default.
        fn pick<T: Clone>(
            sources: &mut BTreeMap<String, String>,
            name: &str,
            property: Option<(String, Result<T>)>,
            layers: &[(&str, &PolicyValues)],
            from_layer: impl Fn(&PolicyValues) -> Option<Result<T>>,
            default: T,
        ) -> Result<T> {
            if let Some((key, value)) = property {
                sources.insert(name.to_string(), format!("property {key}"));
                return value;
            }
            for (layer, values) in layers {
                if let Some(value) = from_layer(values) {
                    sources.insert(name.to_string(), layer.to_string());
                    return value;
                }
            }
            sources.insert(name.to_string(), "default".to_string());
            Ok(default)
        }
        let prop = |key: &str| props.get(key).map(|v| (key.to_string(), v.clone()));
        let target_key = TableProperties::PROPERTY_WRITE_TARGET_FILE_SIZE_BYTES;
        let target = pick(
            &mut sources,
            "target_file_size",
            prop(target_key).map(|(k, v)| {
                let parsed = whole::<u64>(&k, &v).and_then(|n| positive(&k, n));
                (k, parsed)
            }),
            layers,
            |l| {
                l.target_file_size_bytes
                    .map(|n| positive("target-file-size-bytes", n))
            },
            TableProperties::PROPERTY_WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT as u64,
        )?;
        let key = |name: &str| format!("{PREFIX}{name}");
        let min_input_files = pick(
            &mut sources,
            "min_input_files",
            prop(&key("min-input-files")).map(|(k, v)| {
                let parsed = whole::<usize>(&k, &v).and_then(|n| positive(&k, n));
                (k, parsed)
            }),
            layers,
            |l| l.min_input_files.map(|n| positive("min-input-files", n)),
            DEFAULT_MIN_INPUT_FILES,
        )?;
        let equality_delete_ratio = pick(
            &mut sources,
            "equality_delete_ratio",
            prop(&key("equality-delete-ratio")).map(|(k, v)| {
                let parsed = ratio_text(&k, &v);
                (k, parsed)
            }),
            layers,
            |l| {
                l.equality_delete_ratio
                    .map(|r| ratio("equality-delete-ratio", r))
            },
            DEFAULT_EQUALITY_DELETE_RATIO,
        )?;
        let position_delete_ratio = pick(
            &mut sources,
            "position_delete_ratio",
            prop(&key("position-delete-ratio")).map(|(k, v)| {
                let parsed = ratio_text(&k, &v);
                (k, parsed)
            }),
            layers,
            |l| {
                l.position_delete_ratio
                    .map(|r| ratio("position-delete-ratio", r))
            },
            DEFAULT_POSITION_DELETE_RATIO,
        )?;
        let score_file_count = pick(
            &mut sources,
            "score_file_count",
            prop(&key("score-file-count")).map(|(k, v)| {
                let parsed = whole::<usize>(&k, &v).and_then(|n| positive(&k, n));
                (k, parsed)
            }),
            layers,
            |l| l.score_file_count.map(|n| positive("score-file-count", n)),
            DEFAULT_SCORE_FILE_COUNT,
        )?;
        let orphan_interval_ms = pick(
            &mut sources,
            "orphan_interval",
            prop(&key("orphan-interval")).map(|(k, v)| {
                let parsed = age_ms(&k, &v);
                (k, parsed)
            }),
            layers,
            |l| {
                l.orphan_interval
                    .as_deref()
                    .map(|v| age_ms("orphan-interval", v))
            },
            DEFAULT_ORPHAN_INTERVAL_MS,
        )?;
        let orphan_older_than_ms = pick(
            &mut sources,
            "orphan_older_than",
            prop(&key("orphan-older-than")).map(|(k, v)| {
                let parsed = age_ms(&k, &v).and_then(|ms| at_least_3_days(&k, ms));
                (k, parsed)
            }),
            layers,
            |l| {
                l.orphan_older_than.as_deref().map(|v| {
                    age_ms("orphan-older-than", v)
                        .and_then(|ms| at_least_3_days("orphan-older-than", ms))
                })
            },
            MIN_ORPHAN_AGE_MS,
        )?;
        let enabled = pick(
            &mut sources,
            "enabled",
            prop(&key("enabled")).map(|(k, v)| {
                let parsed = boolean(&k, &v);
                (k, parsed)
            }),
            layers,
            |l| l.enabled.map(Ok),
            true,
        )?;
        let rewrite_old_spec_files = pick(
            &mut sources,
            "rewrite_old_spec_files",
            prop(&key("rewrite-old-spec-files")).map(|(k, v)| {
                let parsed = boolean(&k, &v);
                (k, parsed)
            }),
            layers,
            |l| l.rewrite_old_spec_files.map(Ok),
            false,
        )?;
        // Iceberg's own properties win; the policy only fills in for a table without them.
        let age_key = TableProperties::PROPERTY_MAX_SNAPSHOT_AGE_MS;
        let snapshot_max_age_ms = if props.contains_key(age_key) {
            None
        } else {
            let mut found = None;
            for (layer, values) in layers {
                if let Some(v) = &values.max_snapshot_age {
                    found = Some(age_ms("max-snapshot-age", v)?);
                    sources.insert("max_snapshot_age".into(), layer.to_string());
                    break;
                }
            }
            found
        };
        let keep_key = TableProperties::PROPERTY_MIN_SNAPSHOTS_TO_KEEP;
        let min_snapshots_to_keep = if props.contains_key(keep_key) {
            None
        } else {
            let mut found = None;
            for (layer, values) in layers {
                if let Some(n) = values.min_snapshots_to_keep {
                    found = Some(positive("min-snapshots-to-keep", n)?);
                    sources.insert("min_snapshots_to_keep".into(), layer.to_string());
                    break;
                }
            }
            found
        };
        Ok(Self {
            target_file_size: target,
            fragment_size: target / 8,
            min_file_size: (target as f64 * 0.75) as u64,
            min_input_files,
            equality_delete_ratio,
            position_delete_ratio,
            score_file_count,
            orphan_interval_ms,
            orphan_older_than_ms,
            enabled,
            rewrite_old_spec_files,
            snapshot_max_age_ms,
            min_snapshots_to_keep,
            sources,
        })
    }
}

fn boolean(key: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Error::InvalidInput(format!(
            "the table property {key}={value} is neither true nor false"
        ))),
    }
}

fn whole<T: std::str::FromStr>(key: &str, value: &str) -> Result<T> {
    value.trim().parse().map_err(|_| {
        Error::InvalidInput(format!(
            "the table property {key}={value} is not a whole number; set it to one or remove it"
        ))
    })
}

fn positive<T: PartialOrd + Default + std::fmt::Display>(key: &str, n: T) -> Result<T> {
    if n > T::default() {
        Ok(n)
    } else {
        Err(Error::InvalidInput(format!(
            "{key} is {n}: it must be at least 1"
        )))
    }
}

fn ratio_text(key: &str, value: &str) -> Result<f64> {
    let r: f64 = value.trim().parse().map_err(|_| {
        Error::InvalidInput(format!(
            "the table property {key}={value} is not a number; write a share such as 0.1"
        ))
    })?;
    ratio(key, r)
}

fn ratio(key: &str, r: f64) -> Result<f64> {
    if r.is_finite() && r > 0.0 && r <= 1.0 {
        Ok(r)
    } else {
        Err(Error::InvalidInput(format!(
            "{key} is {r}: it must be a share above 0 and at most 1, such as 0.1 (a tenth of \
             the rows)"
        )))
    }
}

/// An age as `7d`, `12h`, `90m`, `3600s` or parts of them summed (`23h59m`, `1d 12h`).
pub fn age_ms(key: &str, value: &str) -> Result<i64> {
    let age = age(value).ok_or_else(|| {
        Error::InvalidInput(format!(
            "{key}={value} is not an age: write a number with a unit s, m, h or d (7d, 12h, \
             23h59m)"
        ))
    })?;
    i64::try_from(age.as_millis())
        .map_err(|_| Error::InvalidInput(format!("{key}={value} is too long an age")))
}

/// `text` as an age: numbers each followed by a unit `s`, `m` (or `min`), `h` or `d`, summed
/// (`3d`, `23h59m`, `1h 30m`); `None` if it is not one. One too long to count is
/// `u64::MAX` seconds (an age before any file).
pub fn age(text: &str) -> Option<std::time::Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().unwrap_or(u64::MAX);
        let after = rest[digits..].trim_start();
        let letters = after
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len());
        let secs: u64 = match &after[..letters] {
            "s" => 1,
            "m" | "min" => 60,
            "h" => 3600,
            "d" => 86_400,
            _ => return None,
        };
        total = total.saturating_add(n.saturating_mul(secs));
        rest = after[letters..].trim_start();
    }
    Some(std::time::Duration::from_secs(total))
}

fn at_least_3_days(key: &str, ms: i64) -> Result<i64> {
    if ms >= MIN_ORPHAN_AGE_MS {
        Ok(ms)
    } else {
        Err(Error::InvalidInput(format!(
            "{key} is under 3 days: unattended orphan cleanup never deletes files younger than \
             3d (a writer's files stay unreferenced until its commit). Run `iceberg-ops table \
             remove-orphans` by hand for a shorter age"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(kv: &[(&str, &str)]) -> HashMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_then_policy_layers_then_properties() {
        let policy = Policy::parse(
            r#"
            [defaults]
            min-input-files = 20
            orphan-interval = "1d"
            [namespace."sales"]
            min-input-files = 8
            max-snapshot-age = "2d"
            [namespace."sales.eu"]
            equality-delete-ratio = 0.3
            "#,
            "p.toml",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ns = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
        let layers = policy.layers(&ns("sales.eu"));
        let layers: Vec<(&str, &PolicyValues)> =
            layers.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        let t = Thresholds::resolve_with(&props(&[]), &layers).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.min_input_files, 8);
        assert_eq!(t.equality_delete_ratio, 0.3);
        assert_eq!(t.orphan_interval_ms, DAY_MS);
        assert_eq!(t.snapshot_max_age_ms, Some(2 * DAY_MS));
        assert_eq!(t.sources["min_input_files"], "policy [namespace.\"sales\"]");
        assert_eq!(t.sources["position_delete_ratio"], "default");
        let t = Thresholds::resolve_with(
            &props(&[
                ("iceberg-ops.maintain.min-input-files", "3"),
                ("history.expire.max-snapshot-age-ms", "1000"),
                ("write.target-file-size-bytes", "800"),
            ]),
            &layers,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.min_input_files, 3);
        assert_eq!(t.snapshot_max_age_ms, None, "the table's own property wins");
        assert_eq!(
            (t.target_file_size, t.fragment_size, t.min_file_size),
            (800, 100, 600)
        );
        // "salesx" is not under "sales".
        assert_eq!(policy.layers(&ns("salesx")).len(), 1);
    }

    #[test]
    fn ages_add_their_parts() {
        assert_eq!(age_ms("k", "3d").ok(), Some(3 * DAY_MS));
        assert_eq!(age_ms("k", "23h59m").ok(), Some(DAY_MS - 60_000));
        assert_eq!(age_ms("k", " 1d 12h ").ok(), Some(DAY_MS * 3 / 2));
        assert_eq!(age_ms("k", "90min").ok(), Some(5_400_000));
        for bad in ["", "h", "3", "1h30", "3w", "-1d", "1.5h"] {
            assert!(age(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn bad_values_are_refused_naming_the_key() {
        let err = |kv: &[(&str, &str)]| {
            Thresholds::resolve_with(&props(kv), &[])
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(
            err(&[("iceberg-ops.maintain.min-input-files", "x")]).contains("min-input-files=x")
        );
        assert!(err(&[("iceberg-ops.maintain.orphan-older-than", "1d")]).contains("under 3 days"));
        assert!(err(&[("iceberg-ops.maintain.equality-delete-ratio", "-1")]).contains("above 0"));
        assert!(err(&[("iceberg-ops.maintain.position-delete-ratio", "5")]).contains("at most 1"));
        assert!(err(&[("iceberg-ops.maintain.enabled", "maybe")]).contains("true nor false"));
        let e = Policy::parse("[defaults]\nmin-inptu-files = 3\n", "p.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("p.toml") && e.contains("min-inptu-files"), "{e}");
        let e = Policy::parse("[defaults]\norphan-older-than = \"2h\"\n", "p.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("under 3 days"), "{e}");
        assert!(err(&[("iceberg-ops.maintain.orphan-older-than", "3w")]).contains("not an age"));
        assert!(
            err(&[(
                "iceberg-ops.maintain.orphan-interval",
                "99999999999999999999d"
            )])
            .contains("too long an age")
        );
        let e = Policy::parse("[namespace.\"a.b\"]\nmin-input-files = 0\n", "p.toml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("p.toml") && e.contains("[namespace.\"a.b\"]") && e.contains("at least 1"),
            "{e}"
        );
    }
}
