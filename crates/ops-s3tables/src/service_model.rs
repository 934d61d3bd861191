//! The S3 Tables service model as AWS publishes it (`model/s3tables-service-2.json`, rest-json),
//! read at run time: each operation's route and success code, and the shapes of its input and
//! output with every member's wire name (`locationName`), location (uri, query string, header or
//! body), required-ness, enum values and constraints.
//!
//! Two users, neither of which trusts the client's types:
//! - the emulator decodes and validates requests with it ([`ServiceModel::decode_input`]) and
//!   checks and encodes its responses ([`ServiceModel::encode_output`]), so a client that drifts
//!   from the model is refused as the service would refuse it;
//! - the conformance tests walk every shape and hold the client's types against it.
//!
//! Decoded values are keyed by the model's *member* names (as the SDKs name them); the wire names
//! appear only on the wire. (`orderId` is the member, `order-id` its wire name.)

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

/// The model file, compiled in.
pub const MODEL_JSON: &str = include_str!("../model/s3tables-service-2.json");

/// Where a member travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The JSON body.
    Body,
    /// A path segment (`{name}` in the request URI).
    Uri,
    /// The query string.
    Query,
    /// An HTTP header.
    Header,
}

/// A member of a structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member name (what the SDKs call it).
    pub name: String,
    /// The target shape.
    pub shape: String,
    /// Where it travels.
    pub location: Location,
    /// The name on the wire: `locationName`, else the member name.
    pub wire_name: String,
}

/// A shape of the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// A structure (or union, or document).
    Structure {
        /// Members in model order.
        members: Vec<Member>,
        /// Required member names.
        required: Vec<String>,
        /// Exactly one member set.
        union: bool,
        /// Any JSON value (`document`).
        document: bool,
    },
    /// A list.
    List {
        /// Element shape.
        member: String,
        /// Length bounds.
        min: Option<i64>,
        /// Length bounds.
        max: Option<i64>,
    },
    /// A map with string keys.
    Map {
        /// Key shape.
        key: String,
        /// Value shape.
        value: String,
    },
    /// A string, possibly an enum.
    String {
        /// The enum's values, exact case.
        enum_values: Option<Vec<String>>,
        /// Length bounds.
        min: Option<i64>,
        /// Length bounds.
        max: Option<i64>,
        /// A regular expression the whole value must match.
        pattern: Option<String>,
    },
    /// An integer (`integer` or `long`).
    Integer {
        /// Range.
        min: Option<i64>,
        /// Range.
        max: Option<i64>,
    },
    /// A boolean.
    Boolean,
    /// A timestamp (ISO 8601 in this protocol).
    Timestamp,
}

/// An operation's route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operation {
    /// `StartTableMigration`, ...
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// Request URI template, e.g. `/tables/{tableBucketARN}/{namespace}/{name}/metadata-location`.
    pub request_uri: String,
    /// Success status.
    pub response_code: u16,
    /// Input shape.
    pub input: Option<String>,
    /// Output shape.
    pub output: Option<String>,
}

impl Operation {
    /// Whether a request's method and decoded path segments fit this operation's route.
    pub fn matches(&self, method: &str, segments: &[String]) -> bool {
        let template: Vec<&str> = self
            .request_uri
            .split('?')
            .next()
            .unwrap_or_default()
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        self.method == method
            && template.len() == segments.len()
            && template
                .iter()
                .zip(segments)
                .all(|(t, s)| (t.starts_with('{') && t.ends_with('}')) || t == s)
    }
}

/// The parsed model.
#[derive(Debug, Clone)]
pub struct ServiceModel {
    operations: BTreeMap<String, Operation>,
    shapes: BTreeMap<String, Shape>,
}

/// A request that does not fit the model, as the service says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The parts of an HTTP request the model routes members from.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    /// Decoded path segments.
    pub segments: &'a [String],
    /// Decoded query pairs.
    pub query: &'a [(String, String)],
    /// Headers, names lowercase.
    pub headers: &'a [(String, String)],
    /// Body bytes.
    pub body: &'a [u8],
}

fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

impl ServiceModel {
    /// The compiled-in model, parsed once.
    pub fn get() -> Result<&'static ServiceModel, String> {
        static MODEL: OnceLock<Result<ServiceModel, String>> = OnceLock::new();
        MODEL
            .get_or_init(|| Self::parse(MODEL_JSON))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Parses a model document.
    pub fn parse(json: &str) -> Result<ServiceModel, String> {
        let doc: Value =
            serde_json::from_str(json).map_err(|e| format!("service model: not JSON: {e}"))?;
        let mut operations = BTreeMap::new();
        for (name, op) in doc["operations"]
            .as_object()
            .ok_or("service model: no operations")?
        {
            let http = &op["http"];
            operations.insert(
                name.clone(),
                Operation {
                    name: name.clone(),
                    method: text(http, "method").ok_or(format!("{name}: no http.method"))?,
                    request_uri: text(http, "requestUri")
                        .ok_or(format!("{name}: no http.requestUri"))?,
                    response_code: int(http, "responseCode").unwrap_or(200) as u16,
                    input: op["input"]["shape"].as_str().map(str::to_string),
                    output: op["output"]["shape"].as_str().map(str::to_string),
                },
            );
        }
        let mut shapes = BTreeMap::new();
        for (name, s) in doc["shapes"]
            .as_object()
            .ok_or("service model: no shapes")?
        {
            let shape = match s["type"].as_str().unwrap_or_default() {
                "structure" => {
                    let mut members = Vec::new();
                    for (m, def) in s["members"].as_object().into_iter().flatten() {
                        let location = match def["location"].as_str() {
                            None => Location::Body,
                            Some("uri") => Location::Uri,
                            Some("querystring") => Location::Query,
                            Some("header") => Location::Header,
                            Some(other) => {
                                return Err(format!("{name}.{m}: unknown location {other}"));
                            }
                        };
                        members.push(Member {
                            name: m.clone(),
                            shape: text(def, "shape").ok_or(format!("{name}.{m}: no shape"))?,
                            location,
                            wire_name: text(def, "locationName").unwrap_or_else(|| m.clone()),
                        });
                    }
                    Shape::Structure {
                        members,
                        required: s["required"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|r| r.as_str().map(str::to_string))
                            .collect(),
                        union: s["union"].as_bool().unwrap_or(false),
                        document: s["document"].as_bool().unwrap_or(false),
                    }
                }
                "list" => Shape::List {
                    member: s["member"]["shape"]
                        .as_str()
                        .ok_or(format!("{name}: list without member"))?
                        .to_string(),
                    min: int(s, "min"),
                    max: int(s, "max"),
                },
                "map" => Shape::Map {
                    key: text(&s["key"], "shape").ok_or(format!("{name}: map without key"))?,
                    value: text(&s["value"], "shape")
                        .ok_or(format!("{name}: map without value"))?,
                },
                "string" => Shape::String {
                    enum_values: s["enum"].as_array().map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    }),
                    min: int(s, "min"),
                    max: int(s, "max"),
                    pattern: text(s, "pattern"),
                },
                // A Smithy `integer` is 32-bit: its range is bounded by i32 even where the
                // model gives no min or max (a `long` is the i64 JSON numbers carry).
                "integer" => Shape::Integer {
                    min: Some(
                        int(s, "min").map_or(i64::from(i32::MIN), |m| m.max(i64::from(i32::MIN))),
                    ),
                    max: Some(
                        int(s, "max").map_or(i64::from(i32::MAX), |m| m.min(i64::from(i32::MAX))),
                    ),
                },
                "long" => Shape::Integer {
                    min: int(s, "min"),
                    max: int(s, "max"),
                },
                "boolean" => Shape::Boolean,
                "timestamp" => Shape::Timestamp,
                other => return Err(format!("{name}: unsupported shape type {other}")),
            };
            shapes.insert(name.clone(), shape);
        }
        Ok(ServiceModel { operations, shapes })
    }

    /// An operation by name.
    pub fn operation(&self, name: &str) -> Option<&Operation> {
        self.operations.get(name)
    }

    /// Every operation.
    pub fn operations(&self) -> impl Iterator<Item = &Operation> {
        self.operations.values()
    }

    /// A shape by name.
    pub fn shape(&self, name: &str) -> Option<&Shape> {
        self.shapes.get(name)
    }

    /// Among `names`, the operation whose method and URI template match a request's method
    /// and path segments (rest-json routes by both).
    pub fn route(&self, names: &[&str], method: &str, segments: &[String]) -> Option<&Operation> {
        names
            .iter()
            .filter_map(|n| self.operations.get(*n))
            .find(|op| op.matches(method, segments))
    }

    /// Decodes an operation's input from a request: uri, query, header and body members, each
    /// validated against its shape. The result is keyed by member names.
    pub fn decode_input(&self, op: &Operation, req: RequestParts<'_>) -> Result<Value, Invalid> {
        let Some(input) = &op.input else {
            return Ok(Value::Object(Map::new()));
        };
        let Some(Shape::Structure {
            members, required, ..
        }) = self.shapes.get(input)
        else {
            return Err(Invalid(format!("{input} is not a structure")));
        };
        let mut out = Map::new();
        let template: Vec<&str> = op
            .request_uri
            .split('?')
            .next()
            .unwrap_or_default()
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        let body: Map<String, Value> = if members.iter().any(|m| m.location == Location::Body) {
            if req.body.iter().all(u8::is_ascii_whitespace) {
                Map::new()
            } else {
                match serde_json::from_slice(req.body) {
                    Ok(Value::Object(o)) => o,
                    Ok(_) => return Err(Invalid("the request body must be a JSON object".into())),
                    Err(e) => return Err(Invalid(format!("the request body is not JSON: {e}"))),
                }
            }
        } else {
            if !req.body.iter().all(u8::is_ascii_whitespace) {
                return Err(Invalid(format!("{} takes no request body", op.name)));
            }
            Map::new()
        };
        let body_wire: Vec<&str> = members
            .iter()
            .filter(|m| m.location == Location::Body)
            .map(|m| m.wire_name.as_str())
            .collect();
        if let Some(unknown) = body.keys().find(|k| !body_wire.contains(&k.as_str())) {
            return Err(Invalid(format!(
                "{input}: unknown member '{unknown}' (members: {})",
                body_wire.join(", ")
            )));
        }
        let query_wire: Vec<&str> = members
            .iter()
            .filter(|m| m.location == Location::Query)
            .map(|m| m.wire_name.as_str())
            .collect();
        if let Some((unknown, _)) = req
            .query
            .iter()
            .find(|(k, _)| !query_wire.contains(&k.as_str()))
        {
            return Err(Invalid(format!(
                "{input}: unknown query parameter '{unknown}' (parameters: {})",
                query_wire.join(", ")
            )));
        }
        for m in members {
            let path = m.name.clone();
            let raw: Option<Value> = match m.location {
                Location::Body => body.get(&m.wire_name).cloned(),
                Location::Uri => {
                    let label = format!("{{{}}}", m.wire_name);
                    let greedy = format!("{{{}+}}", m.wire_name);
                    template
                        .iter()
                        .position(|t| *t == label || *t == greedy)
                        .and_then(|i| req.segments.get(i))
                        .map(|s| self.scalar_from_text(&m.shape, s, &path))
                        .transpose()?
                }
                Location::Query => {
                    let mut values = req.query.iter().filter(|(k, _)| *k == m.wire_name);
                    let first = values.next();
                    if values.next().is_some() {
                        return Err(Invalid(format!(
                            "query parameter '{}' given more than once",
                            m.wire_name
                        )));
                    }
                    first
                        .map(|(_, v)| self.scalar_from_text(&m.shape, v, &path))
                        .transpose()?
                }
                Location::Header => req
                    .headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(&m.wire_name))
                    .map(|(_, v)| self.scalar_from_text(&m.shape, v, &path))
                    .transpose()?,
            };
            match raw {
                Some(Value::Null) | None => {
                    if required.contains(&m.name) {
                        return Err(Invalid(format!(
                            "1 validation error detected: Value null at '{}' failed to satisfy \
                             constraint: Member must not be null",
                            m.name
                        )));
                    }
                }
                Some(v) => {
                    let v = self.from_wire(&m.shape, &v, &path)?;
                    out.insert(m.name.clone(), v);
                }
            }
        }
        Ok(Value::Object(out))
    }

    /// Encodes an operation's output (keyed by member names) for the wire, after checking it
    /// against the output shape: a response the model does not allow is an error, not sent.
    pub fn encode_output(&self, op: &Operation, value: &Value) -> Result<Value, Invalid> {
        match &op.output {
            Some(shape) => self.to_wire(shape, value, shape),
            None => Ok(Value::Object(Map::new())),
        }
    }

    /// Converts a query, uri or header text into the JSON value of a scalar shape.
    fn scalar_from_text(&self, shape: &str, text: &str, path: &str) -> Result<Value, Invalid> {
        match self.shapes.get(shape) {
            Some(Shape::String { .. }) | Some(Shape::Timestamp) => Ok(Value::String(text.into())),
            Some(Shape::Integer { .. }) => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| Invalid(format!("'{text}' at '{path}' is not an integer"))),
            Some(Shape::Boolean) => match text {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(Invalid(format!("'{text}' at '{path}' is not a boolean"))),
            },
            _ => Err(Invalid(format!(
                "'{path}' ({shape}) cannot travel outside the body"
            ))),
        }
    }

    /// Validates a wire value against `shape` and renames members to member names.
    pub fn from_wire(&self, shape: &str, v: &Value, path: &str) -> Result<Value, Invalid> {
        self.convert(shape, v, path, Direction::FromWire)
    }

    /// Validates a value keyed by member names against `shape` and renames to wire names.
    pub fn to_wire(&self, shape: &str, v: &Value, path: &str) -> Result<Value, Invalid> {
        self.convert(shape, v, path, Direction::ToWire)
    }

    fn convert(
        &self,
        shape: &str,
        v: &Value,
        path: &str,
        dir: Direction,
    ) -> Result<Value, Invalid> {
        // Iterative over the value tree so a deeply nested document cannot exhaust the stack.
        enum Task<'v> {
            Visit(String, &'v Value, String),
            Finish(Finish),
        }
        enum Finish {
            Object(Vec<String>),
            Array(usize),
        }
        let mut tasks = vec![Task::Visit(shape.to_string(), v, path.to_string())];
        let mut done: Vec<Value> = Vec::new();
        while let Some(task) = tasks.pop() {
            match task {
                Task::Finish(Finish::Object(keys)) => {
                    let values = done.split_off(done.len() - keys.len());
                    done.push(Value::Object(keys.into_iter().zip(values).collect()));
                }
                Task::Finish(Finish::Array(n)) => {
                    let values = done.split_off(done.len() - n);
                    done.push(Value::Array(values));
                }
                Task::Visit(shape, v, path) => {
                    let Some(def) = self.shapes.get(&shape) else {
                        return Err(Invalid(format!("{path}: unknown shape {shape}")));
                    };
                    match def {
                        Shape::Structure { document: true, .. } => done.push(v.clone()),
                        Shape::Structure {
                            members,
                            required,
                            union,
                            ..
                        } => {
                            let Value::Object(obj) = v else {
                                return Err(Invalid(format!("{path} must be an object")));
                            };
                            let from = |m: &Member| match dir {
                                Direction::FromWire => m.wire_name.clone(),
                                Direction::ToWire => m.name.clone(),
                            };
                            let to = |m: &Member| match dir {
                                Direction::FromWire => m.name.clone(),
                                Direction::ToWire => m.wire_name.clone(),
                            };
                            let known: Vec<String> = members.iter().map(&from).collect();
                            if let Some(unknown) = obj.keys().find(|k| !known.contains(k)) {
                                return Err(Invalid(format!(
                                    "{path}: unknown member '{unknown}' (members: {})",
                                    known.join(", ")
                                )));
                            }
                            let mut keys = Vec::new();
                            let mut children = Vec::new();
                            for m in members {
                                let child = format!("{path}.{}", m.name);
                                match obj.get(&from(m)) {
                                    None | Some(Value::Null) => {
                                        if required.contains(&m.name) {
                                            return Err(Invalid(format!(
                                                "1 validation error detected: Value null at \
                                                 '{child}' failed to satisfy constraint: Member \
                                                 must not be null"
                                            )));
                                        }
                                    }
                                    Some(value) => {
                                        keys.push(to(m));
                                        children.push(Task::Visit(m.shape.clone(), value, child));
                                    }
                                }
                            }
                            if *union && keys.len() != 1 {
                                return Err(Invalid(format!(
                                    "{path}: exactly one member must be set, got {}",
                                    keys.len()
                                )));
                            }
                            tasks.push(Task::Finish(Finish::Object(keys)));
                            tasks.extend(children.into_iter().rev());
                        }
                        Shape::List { member, min, max } => {
                            let Value::Array(items) = v else {
                                return Err(Invalid(format!("{path} must be a list")));
                            };
                            check_len(items.len(), *min, *max, &path)?;
                            tasks.push(Task::Finish(Finish::Array(items.len())));
                            for (i, item) in items.iter().enumerate().rev() {
                                tasks.push(Task::Visit(
                                    member.clone(),
                                    item,
                                    format!("{path}[{i}]"),
                                ));
                            }
                        }
                        Shape::Map { key, value } => {
                            let Value::Object(obj) = v else {
                                return Err(Invalid(format!("{path} must be a map")));
                            };
                            for k in obj.keys() {
                                self.convert(
                                    key,
                                    &Value::String(k.clone()),
                                    &format!("{path} key"),
                                    dir,
                                )?;
                            }
                            let keys: Vec<String> = obj.keys().cloned().collect();
                            tasks.push(Task::Finish(Finish::Object(keys)));
                            for (k, item) in obj.iter().rev() {
                                tasks.push(Task::Visit(value.clone(), item, format!("{path}.{k}")));
                            }
                        }
                        Shape::String {
                            enum_values,
                            min,
                            max,
                            pattern,
                        } => {
                            let Value::String(s) = v else {
                                return Err(Invalid(format!("{path} must be a string")));
                            };
                            if let Some(values) = enum_values
                                && !values.contains(s)
                            {
                                return Err(Invalid(format!(
                                    "1 validation error detected: Value '{s}' at '{path}' failed \
                                     to satisfy constraint: Member must satisfy enum value set: \
                                     [{}]",
                                    values.join(", ")
                                )));
                            }
                            check_len(s.chars().count(), *min, *max, &path)?;
                            if let Some(p) = pattern
                                && !full_match(p, s)?
                            {
                                return Err(Invalid(format!(
                                    "1 validation error detected: Value '{s}' at '{path}' failed \
                                     to satisfy constraint: Member must satisfy regular \
                                     expression pattern: {p}"
                                )));
                            }
                            done.push(v.clone());
                        }
                        Shape::Integer { min, max } => {
                            let Some(n) = v.as_i64() else {
                                return Err(Invalid(format!("{path} must be an integer")));
                            };
                            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                                return Err(Invalid(format!(
                                    "1 validation error detected: Value '{n}' at '{path}' failed \
                                     to satisfy constraint: Member must be between {} and {}",
                                    min.map_or("-".into(), |m| m.to_string()),
                                    max.map_or("-".into(), |m| m.to_string())
                                )));
                            }
                            done.push(v.clone());
                        }
                        Shape::Boolean => {
                            if !v.is_boolean() {
                                return Err(Invalid(format!("{path} must be a boolean")));
                            }
                            done.push(v.clone());
                        }
                        Shape::Timestamp => {
                            let ok = v
                                .as_str()
                                .is_some_and(|s| chrono::DateTime::parse_from_rfc3339(s).is_ok())
                                || v.is_number();
                            if !ok {
                                return Err(Invalid(format!(
                                    "{path} must be an ISO 8601 timestamp"
                                )));
                            }
                            done.push(v.clone());
                        }
                    }
                }
            }
        }
        done.pop()
            .ok_or_else(|| Invalid(format!("{path}: nothing decoded")))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    FromWire,
    ToWire,
}

fn check_len(n: usize, min: Option<i64>, max: Option<i64>, path: &str) -> Result<(), Invalid> {
    let n = n as i64;
    if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
        return Err(Invalid(format!(
            "1 validation error detected: Value at '{path}' failed to satisfy constraint: Member \
             must have length between {} and {}",
            min.map_or("0".into(), |m| m.to_string()),
            max.map_or("-".into(), |m| m.to_string())
        )));
    }
    Ok(())
}

/// Whether `pattern` matches all of `s`. The model's patterns carry no anchors; the service
/// applies them to the whole value.
fn full_match(pattern: &str, s: &str) -> Result<bool, Invalid> {
    static CACHE: OnceLock<std::sync::Mutex<BTreeMap<String, regex_lite::Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if !cache.contains_key(pattern) {
        let re = regex_lite::Regex::new(&format!("^(?:{pattern})$"))
            .map_err(|e| Invalid(format!("model pattern {pattern}: {e}")))?;
        cache.insert(pattern.to_string(), re);
    }
    Ok(cache.get(pattern).is_some_and(|re| re.is_match(s)))
}

#[cfg(test)]
mod integer_tests {
    use super::*;

    #[test]
    fn an_integer_member_is_bounded_by_i32() -> Result<(), String> {
        let m = ServiceModel::get()?;
        let big = serde_json::json!(3_000_000_000i64);
        assert!(
            m.from_wire("MigrationMinSnapshotsToKeep", &big, "x")
                .is_err()
        );
        assert!(m.from_wire("Integer", &big, "x").is_err());
        assert!(
            m.from_wire("MigrationMinSnapshotsToKeep", &serde_json::json!(5), "x")
                .is_ok()
        );
        // A long keeps the i64 range.
        assert!(m.from_wire("Long", &big, "x").is_ok());
        Ok(())
    }
}
