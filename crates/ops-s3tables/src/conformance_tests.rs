//! The client's types and requests held against the service model, shape by shape, so no member
//! can drift: every structure reachable from the operations the client speaks is generated from
//! the model (every member, then only the required ones) and must decode into our type and
//! encode back unchanged; dropping any required member must be refused; every enum must list
//! the model's values and keep one it does not know. Each operation is then sent by the client
//! to a recording server and every input member must arrive under its wire name in its location
//! (path, query string, header or body), and nothing else.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use aws_credential_types::Credentials;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::http_server::{Request, Response, serve};
use crate::model::*;
use crate::service_model::{Location, Member, ServiceModel, Shape};
use crate::{S3TablesClient, Signer};

/// The operations the client speaks.
const OPERATIONS: [&str; 8] = [
    "StartTableMigration",
    "GetTableMigration",
    "ListTableMigrations",
    "UpdateTableMigration",
    "SyncTableMigration",
    "CompleteTableMigration",
    "GetTable",
    "GetTableMetadataLocation",
];

/// A value the model's enums do not have: an open enum must keep it.
const FUTURE: &str = "someFutureValue";

type Roundtrip = fn(&Value) -> Result<Value, String>;

fn roundtrip<T: Serialize + DeserializeOwned>(v: &Value) -> Result<Value, String> {
    let t: T = serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&t).map_err(|e| e.to_string())
}

fn model() -> &'static ServiceModel {
    match ServiceModel::get() {
        Ok(m) => m,
        Err(e) => panic!("service model: {e}"),
    }
}

/// Our type for each structure shape of the body.
fn structures() -> BTreeMap<&'static str, Roundtrip> {
    let mut m: BTreeMap<&'static str, Roundtrip> = BTreeMap::new();
    m.insert(
        "StartTableMigrationRequest",
        roundtrip::<StartTableMigrationRequest>,
    );
    m.insert("DestinationTable", roundtrip::<DestinationTable>);
    m.insert(
        "EncryptionConfiguration",
        roundtrip::<EncryptionConfiguration>,
    );
    m.insert(
        "StorageClassConfiguration",
        roundtrip::<StorageClassConfiguration>,
    );
    m.insert(
        "MigrationTableProperties",
        roundtrip::<MigrationTableProperties>,
    );
    m.insert("IcebergSchemaV2", roundtrip::<IcebergSchemaV2>);
    m.insert("SchemaV2Field", roundtrip::<SchemaV2Field>);
    m.insert("IcebergSortOrder", roundtrip::<IcebergSortOrder>);
    m.insert("IcebergSortField", roundtrip::<IcebergSortField>);
    m.insert("SourceConfiguration", roundtrip::<SourceConfiguration>);
    m.insert("GlueTableSource", roundtrip::<GlueTableSource>);
    m.insert("DataMigrationSettings", roundtrip::<DataMigrationSettings>);
    m.insert("MaintenanceSettings", roundtrip::<MaintenanceSettings>);
    m.insert(
        "MigrationCompactionSettings",
        roundtrip::<MigrationCompactionSettings>,
    );
    m.insert(
        "MigrationSnapshotManagementSettings",
        roundtrip::<MigrationSnapshotManagementSettings>,
    );
    m.insert("MigrationPolicies", roundtrip::<MigrationPolicies>);
    m.insert(
        "MigrationOutputConfiguration",
        roundtrip::<MigrationOutputConfiguration>,
    );
    m.insert(
        "MigrationReportPrefixes",
        roundtrip::<MigrationReportPrefixes>,
    );
    m.insert(
        "StartTableMigrationResponse",
        roundtrip::<StartTableMigrationResponse>,
    );
    m.insert(
        "GetTableMigrationResponse",
        roundtrip::<GetTableMigrationResponse>,
    );
    m.insert(
        "MigrationFailureReason",
        roundtrip::<MigrationFailureReason>,
    );
    m.insert("PlanningStats", roundtrip::<PlanningStats>);
    m.insert("MigrationStats", roundtrip::<MigrationStats>);
    m.insert("DataMigrationOverview", roundtrip::<DataMigrationOverview>);
    m.insert(
        "MigrationOutputOverview",
        roundtrip::<MigrationOutputOverview>,
    );
    m.insert("ReportOverview", roundtrip::<ReportOverview>);
    m.insert(
        "ListTableMigrationsResponse",
        roundtrip::<ListTableMigrationsResponse>,
    );
    m.insert("MigrationSummary", roundtrip::<MigrationSummary>);
    m.insert(
        "UpdateTableMigrationRequest",
        roundtrip::<UpdateTableMigrationRequest>,
    );
    m.insert(
        "UpdateTableMigrationResponse",
        roundtrip::<UpdateTableMigrationResponse>,
    );
    m.insert(
        "SyncTableMigrationRequest",
        roundtrip::<SyncTableMigrationRequest>,
    );
    m.insert(
        "SyncTableMigrationResponse",
        roundtrip::<SyncTableMigrationResponse>,
    );
    m.insert("GetTableResponse", roundtrip::<GetTableResponse>);
    m.insert(
        "ManagedTableInformation",
        roundtrip::<ManagedTableInformation>,
    );
    m.insert(
        "ReplicationInformation",
        roundtrip::<ReplicationInformation>,
    );
    m.insert(
        "GetTableMetadataLocationResponse",
        roundtrip::<GetTableMetadataLocationResponse>,
    );
    m
}

/// Our type for each enum shape: its values and a round trip.
fn enums() -> BTreeMap<&'static str, (&'static [&'static str], Roundtrip)> {
    macro_rules! e {
        ($m:ident, $($shape:literal => $ty:ty),+ $(,)?) => {
            $($m.insert($shape, (<$ty>::values(), roundtrip::<$ty> as Roundtrip));)+
        };
    }
    let mut m = BTreeMap::new();
    e!(m,
        "SSEAlgorithm" => SseAlgorithm,
        "StorageClass" => StorageClass,
        "DataFileFormat" => DataFileFormat,
        "CompressionCodec" => CompressionCodec,
        "SchemaV2FieldType" => SchemaV2FieldType,
        "IcebergSortDirection" => IcebergSortDirection,
        "IcebergNullOrder" => IcebergNullOrder,
        "MigrationSourceType" => MigrationSourceType,
        "IcebergCompactionStrategy" => IcebergCompactionStrategy,
        "UnmatchedSourceFieldsPolicy" => UnmatchedSourceFieldsPolicy,
        "IncompatibleValuesPolicy" => IncompatibleValuesPolicy,
        "MigrationState" => MigrationState,
        "MigrationType" => MigrationType,
        "MigrationFailureCode" => MigrationFailureCode,
        "FindingCategory" => FindingCategory,
        "MigrationRequestedState" => MigrationRequestedState,
        "TableType" => TableType,
        "OpenTableFormat" => OpenTableFormat,
    );
    m
}

fn members(shape: &str) -> (&'static [Member], &'static [String], bool) {
    match model().shape(shape) {
        Some(Shape::Structure {
            members,
            required,
            union,
            ..
        }) => (members, required, *union),
        other => panic!("{shape} is not a structure: {other:?}"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    /// Every member.
    All,
    /// Only required members (a union keeps its first member).
    Required,
}

/// A wire value of `shape` generated from the model (body members only, wire names).
fn sample(shape: &str, fill: Fill, hint: &str) -> Value {
    match model().shape(shape) {
        Some(Shape::Structure { document: true, .. }) => json!({"type": "list", "element-id": 3,
            "element": "string", "element-required": false}),
        Some(Shape::Structure {
            members,
            required,
            union,
            ..
        }) => {
            let mut out = Map::new();
            for (i, m) in members
                .iter()
                .filter(|m| m.location == Location::Body)
                .enumerate()
            {
                let keep = match fill {
                    Fill::All => !*union || i == 0,
                    Fill::Required => required.contains(&m.name) || (*union && i == 0),
                };
                if keep {
                    out.insert(m.wire_name.clone(), sample(&m.shape, fill, &m.name));
                }
            }
            Value::Object(out)
        }
        Some(Shape::List { member, .. }) => json!([sample(member, fill, hint)]),
        Some(Shape::Map { key, value }) => {
            let k = match sample(key, fill, "key") {
                Value::String(s) => s,
                other => other.to_string(),
            };
            json!({ k: sample(value, fill, hint) })
        }
        Some(Shape::String {
            enum_values: Some(values),
            ..
        }) => json!(values[0]),
        Some(Shape::String { .. }) => json!(format!("{hint}-value")),
        Some(Shape::Integer { min, .. }) => json!(min.unwrap_or(7).max(1)),
        Some(Shape::Boolean) => json!(true),
        Some(Shape::Timestamp) => json!("2026-11-04T12:00:00Z"),
        None => panic!("unknown shape {shape}"),
    }
}

/// Every shape reachable from the operations through body members (and map keys).
fn reachable() -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = OPERATIONS
        .iter()
        .filter_map(|o| model().operation(o))
        .flat_map(|o| [o.input.clone(), o.output.clone()])
        .flatten()
        .collect();
    while let Some(s) = todo.pop() {
        if !seen.insert(s.clone()) {
            continue;
        }
        match model().shape(&s) {
            Some(Shape::Structure { members, .. }) => {
                todo.extend(members.iter().map(|m| m.shape.clone()))
            }
            Some(Shape::List { member, .. }) => todo.push(member.clone()),
            Some(Shape::Map { key, value }) => {
                todo.push(key.clone());
                todo.push(value.clone());
            }
            _ => {}
        }
    }
    seen
}

fn has_body(shape: &str) -> bool {
    let (members, _, _) = members(shape);
    members.iter().any(|m| m.location == Location::Body)
}

#[test]
fn every_shape_has_our_type_with_the_models_members_and_enums() {
    let structures = structures();
    let enums = enums();
    let mut problems = Vec::new();
    for shape in reachable() {
        match model().shape(&shape) {
            Some(Shape::Structure { document: true, .. }) => {}
            Some(Shape::Structure { .. }) if !has_body(&shape) => {
                // All members travel outside the body: the request test checks them.
            }
            Some(Shape::Structure { .. }) => match structures.get(shape.as_str()) {
                None => problems.push(format!("{shape}: no type of ours is registered")),
                Some(rt) => problems.extend(check_structure(&shape, *rt)),
            },
            Some(Shape::String {
                enum_values: Some(values),
                ..
            }) => match enums.get(shape.as_str()) {
                None => problems.push(format!(
                    "{shape}: the model's enum [{}] has no enum type of ours",
                    values.join(", ")
                )),
                Some((ours, rt)) => {
                    if ours != values {
                        problems.push(format!("{shape}: ours {ours:?}, model {values:?}"));
                    }
                    for v in values.iter().map(String::as_str).chain([FUTURE]) {
                        match rt(&json!(v)) {
                            Ok(back) if back == json!(v) => {}
                            other => problems.push(format!("{shape}: '{v}' came back {other:?}")),
                        }
                    }
                }
            },
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

fn check_structure(shape: &str, rt: Roundtrip) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect_same = |what: &str, v: &Value| match rt(v) {
        Ok(back) if &back == v => {}
        Ok(back) => problems.push(format!("{shape} ({what}): sent {v}, our type gave {back}")),
        Err(e) => problems.push(format!("{shape} ({what}): {v} refused: {e}")),
    };
    let all = sample(shape, Fill::All, shape);
    let min = sample(shape, Fill::Required, shape);
    expect_same("every member", &all);
    expect_same("required members only", &min);
    let (members, required, _) = members(shape);
    for m in members.iter().filter(|m| m.location == Location::Body) {
        if let Some(Shape::String {
            enum_values: Some(values),
            ..
        }) = model().shape(&m.shape)
        {
            for v in values.iter().map(String::as_str).chain([FUTURE]) {
                let mut x = all.clone();
                x[&m.wire_name] = json!(v);
                expect_same(&format!("{} = {v}", m.name), &x);
            }
        }
        if let Some(Shape::Map { key, .. }) = model().shape(&m.shape)
            && let Some(Shape::String {
                enum_values: Some(values),
                ..
            }) = model().shape(key)
        {
            for v in values.iter().map(String::as_str).chain([FUTURE]) {
                let mut x = all.clone();
                x[&m.wire_name] = json!({ v: 1 });
                expect_same(&format!("{} key {v}", m.name), &x);
            }
        }
    }
    for r in required {
        let Some(m) = members.iter().find(|m| &m.name == r) else {
            continue;
        };
        if m.location != Location::Body {
            continue;
        }
        let mut x = min.clone();
        if let Some(o) = x.as_object_mut() {
            o.remove(&m.wire_name);
        }
        if rt(&x).is_ok() {
            problems.push(format!(
                "{shape}: required member {} ('{}') may be absent in our type",
                m.name, m.wire_name
            ));
        }
    }
    problems
}

// ---- requests on the wire ----

type Log = Arc<Mutex<Vec<Request>>>;

/// A server answering every request with `status` and `body`, recording requests.
async fn recorder(status: u16, body: Value) -> (S3TablesClient, Log) {
    let log: Log = Arc::default();
    let seen = log.clone();
    let served = serve(([127, 0, 0, 1], 0).into(), move |req| {
        let seen = seen.clone();
        let body = body.clone();
        async move {
            seen.lock().unwrap_or_else(|e| e.into_inner()).push(req);
            if status == 204 {
                Response::empty(204)
            } else {
                Response::json(status, &body)
            }
        }
    })
    .await;
    let (addr, _task) = match served {
        Ok(s) => s,
        Err(e) => panic!("cannot serve: {e}"),
    };
    let signer = Signer::new(Credentials::for_tests(), "us-east-1", "s3tables");
    (S3TablesClient::new(format!("http://{addr}"), signer), log)
}

/// The input members of an operation, generated from the model: member name → wire value
/// (scalars as JSON).
fn input_members(op: &str, fill: Fill) -> Map<String, Value> {
    let Some(input) = model().operation(op).and_then(|o| o.input.clone()) else {
        return Map::new();
    };
    let (members, required, _) = members(&input);
    let mut out = Map::new();
    for m in members {
        if fill == Fill::All || required.contains(&m.name) {
            out.insert(m.name.clone(), sample(&m.shape, fill, &m.name));
        }
    }
    out
}

fn s(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(|v| v.as_str()).map(str::to_string)
}

/// The wire body an input's body members make.
fn body_of(op: &str, members_in: &Map<String, Value>) -> Value {
    let Some(input) = model().operation(op).and_then(|o| o.input.clone()) else {
        return json!({});
    };
    let (members, _, _) = members(&input);
    let mut body = Map::new();
    for m in members.iter().filter(|m| m.location == Location::Body) {
        if let Some(v) = members_in.get(&m.name) {
            body.insert(m.wire_name.clone(), v.clone());
        }
    }
    Value::Object(body)
}

/// Calls `op` through the client with `m` (member name → value). Which client call carries
/// which member is the only hand-written part.
async fn call(client: &S3TablesClient, op: &str, m: &Map<String, Value>) -> Result<Value, String> {
    let e = |e: crate::Error| e.to_string();
    match op {
        "StartTableMigration" => {
            let req: StartTableMigrationRequest =
                serde_json::from_value(body_of(op, m)).map_err(|e| e.to_string())?;
            client
                .start_table_migration(&req)
                .await
                .map(|r| json(&r))
                .map_err(e)
        }
        "GetTableMigration" => client
            .get_table_migration_request(&GetTableMigrationRequest {
                migration_id: s(m, "migrationId"),
                table_arn: s(m, "tableARN"),
            })
            .await
            .map(|r| json(&r))
            .map_err(e),
        "ListTableMigrations" => {
            let state = s(m, "state")
                .map(|v| v.parse::<MigrationState>())
                .transpose()
                .map_err(e)?;
            client
                .list_table_migrations(&ListTableMigrationsRequest {
                    table_bucket_arn: s(m, "tableBucketARN"),
                    namespace: s(m, "namespace"),
                    name: s(m, "name"),
                    table_arn: s(m, "tableARN"),
                    state,
                    has_valid_plan: m.get("hasValidPlan").and_then(Value::as_bool),
                    max_results: m
                        .get("maxResults")
                        .and_then(Value::as_i64)
                        .map(|n| n as i32),
                    next_token: s(m, "nextToken"),
                })
                .await
                .map(|r| json(&r))
                .map_err(e)
        }
        "UpdateTableMigration" => {
            let mut req: UpdateTableMigrationRequest =
                serde_json::from_value(body_of(op, m)).map_err(|e| e.to_string())?;
            req.table_arn = s(m, "tableARN");
            req.migration_id = s(m, "migrationId");
            client
                .update_table_migration(&req)
                .await
                .map(|r| json(&r))
                .map_err(e)
        }
        "SyncTableMigration" => {
            let req: SyncTableMigrationRequest =
                serde_json::from_value(body_of(op, m)).map_err(|e| e.to_string())?;
            client
                .sync_table_migration(&req)
                .await
                .map(|r| json(&r))
                .map_err(e)
        }
        "CompleteTableMigration" => client
            .complete_table_migration(&s(m, "tableARN").unwrap_or_default())
            .await
            .map(|()| json!({}))
            .map_err(e),
        "GetTable" => client
            .get_table_request(&GetTableRequest {
                table_bucket_arn: s(m, "tableBucketARN"),
                namespace: s(m, "namespace"),
                name: s(m, "name"),
                table_arn: s(m, "tableArn"),
            })
            .await
            .map(|r| json(&r))
            .map_err(e),
        "GetTableMetadataLocation" => client
            .get_table_metadata_location(
                &s(m, "tableBucketARN").unwrap_or_default(),
                &s(m, "namespace").unwrap_or_default(),
                &s(m, "name").unwrap_or_default(),
            )
            .await
            .map(|r| json(&r))
            .map_err(e),
        other => Err(format!("no call for {other}")),
    }
}

/// A response as JSON, for comparison.
fn json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_default()
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// What the request must look like: each member where the model puts it, under its wire name.
fn check_request(op: &str, m: &Map<String, Value>, req: &Request) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(operation) = model().operation(op) else {
        return vec![format!("{op}: not in the model")];
    };
    let input = operation.input.clone().unwrap_or_default();
    let (members, _, _) = members(&input);
    if req.method != operation.method {
        problems.push(format!(
            "{op}: method {} (model {})",
            req.method, operation.method
        ));
    }
    // Path: the template with uri members substituted (segments compared decoded).
    let expected: Vec<String> = operation
        .request_uri
        .split('?')
        .next()
        .unwrap_or_default()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|seg| {
            let label = seg.trim_start_matches('{').trim_end_matches('}');
            match members
                .iter()
                .find(|x| x.location == Location::Uri && x.wire_name == label)
            {
                Some(x) if seg.starts_with('{') => {
                    m.get(&x.name).map(scalar_text).unwrap_or_default()
                }
                _ => seg.to_string(),
            }
        })
        .collect();
    if req.segments != expected {
        problems.push(format!(
            "{op}: path {:?} (model {expected:?})",
            req.segments
        ));
    }
    let mut query: Vec<(String, String)> = members
        .iter()
        .filter(|x| x.location == Location::Query)
        .filter_map(|x| {
            m.get(&x.name)
                .map(|v| (x.wire_name.clone(), scalar_text(v)))
        })
        .collect();
    query.sort();
    let mut sent = req.query.clone();
    sent.sort();
    if sent != query {
        problems.push(format!("{op}: query {sent:?} (model {query:?})"));
    }
    for x in members.iter().filter(|x| x.location == Location::Header) {
        let want = m.get(&x.name).map(scalar_text);
        let got = req
            .header(&x.wire_name.to_ascii_lowercase())
            .map(str::to_string);
        if want != got {
            problems.push(format!(
                "{op}: header {} = {got:?} (model {want:?})",
                x.wire_name
            ));
        }
    }
    let body = body_of(op, m);
    let has_body_members = members.iter().any(|x| x.location == Location::Body);
    if has_body_members {
        match serde_json::from_slice::<Value>(&req.body) {
            Ok(v) if v == body => {}
            Ok(v) => problems.push(format!("{op}: body {v} (model {body})")),
            Err(e) => problems.push(format!("{op}: body is not JSON: {e}")),
        }
    } else if !req.body.is_empty() {
        problems.push(format!(
            "{op}: a body was sent but the model has no body members: {}",
            String::from_utf8_lossy(&req.body)
        ));
    }
    problems
}

#[tokio::test]
async fn every_operation_sends_each_member_where_the_model_says() {
    let mut problems = Vec::new();
    for op in OPERATIONS {
        let Some(operation) = model().operation(op) else {
            problems.push(format!("{op}: not in the model"));
            continue;
        };
        let response = operation
            .output
            .as_deref()
            .map(|o| sample(o, Fill::All, o))
            .unwrap_or_else(|| json!({}));
        for fill in [Fill::All, Fill::Required] {
            let (client, log) = recorder(operation.response_code, response.clone()).await;
            let m = input_members(op, fill);
            match call(&client, op, &m).await {
                Ok(got) if operation.output.is_none() || got == response => {}
                Ok(got) => problems.push(format!(
                    "{op} ({fill:?}): response {response} came back as {got}"
                )),
                Err(e) => problems.push(format!("{op} ({fill:?}): {e}")),
            }
            let mut reqs = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
            // Start and Sync list the table's migrations first (for a lookup after an
            // ambiguous failure); that listing is ListTableMigrations' own request.
            if matches!(op, "StartTableMigration" | "SyncTableMigration") {
                reqs.retain(|r| r.path != "/list-table-migrations");
            }
            match reqs.as_slice() {
                [one] => problems.extend(
                    check_request(op, &m, one)
                        .into_iter()
                        .map(|p| format!("{p} [{fill:?}]")),
                ),
                other => problems.push(format!("{op}: {} requests sent", other.len())),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
