//! Request and response shapes of the S3 Tables migration operations, named and spelled as in
//! the service model (`s3tables-service-2.json`, rest-json, camelCase members), so they can be
//! swapped for aws-sdk-s3tables' own types once the SDK ships these operations.
//!
//! Timestamps (`createdAt`, `stateUpdatedAt`) stay ISO 8601 strings as the service sends them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// An enum of the model. Values the service sends that this version does not know are kept as
/// `Unknown` (AWS adds states and codes without notice; a new value must not break decoding), and
/// parsing operator input ([`std::str::FromStr`]) accepts only the model's exact spelling.
macro_rules! model_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $variant,)+
            /// A value the model this crate was built from does not list, kept as sent.
            Unknown(String),
        }
        impl $name {
            /// The value exactly as the service model spells it (or as the service sent it).
            pub fn as_str(&self) -> &str {
                match self { $(Self::$variant => $wire,)+ Self::Unknown(s) => s.as_str() }
            }
            /// Every value the model lists, in model order.
            pub fn values() -> &'static [&'static str] {
                &[$($wire),+]
            }
            /// Whether the value is one the model lists.
            pub fn is_known(&self) -> bool {
                !matches!(self, Self::Unknown(_))
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Ok(match s.as_str() {
                    $($wire => Self::$variant,)+
                    _ => Self::Unknown(s),
                })
            }
        }
        impl std::str::FromStr for $name {
            type Err = crate::Error;
            /// Only the model's exact spelling is accepted (`queued`, never `QUEUED`).
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($wire => Ok(Self::$variant),)+
                    other => Err(crate::Error::Validation {
                        message: format!(
                            "'{other}' is not a valid {}: use one of [{}] (exact case)",
                            stringify!($name),
                            Self::values().join(", ")
                        ),
                    }),
                }
            }
        }
    };
}

model_enum!(
    /// `MigrationState`: where a migration is in its lifecycle.
    MigrationState {
        /// The service accepted the request.
        New = "new",
        /// Checking source and destination, writing compatibility reports.
        Planning = "planning",
        /// Planned; waits for UpdateTableMigration.
        PendingReview = "pendingReview",
        /// Approved, waiting to migrate.
        Queued = "queued",
        /// Copying and committing data.
        Migrating = "migrating",
        /// Every planned object migrated.
        Succeeded = "succeeded",
        /// Failed; see `failureReason`.
        Failed = "failed",
        /// Cancel requested, finishing work in progress.
        Cancelling = "cancelling",
        /// Cancelled.
        Cancelled = "cancelled",
    }
);

impl MigrationState {
    /// Whether the migration can no longer change state by itself. A state this version does
    /// not know is not terminal: the guard keeps waiting (within its stuck limit) rather than
    /// act on a migration whose end it cannot recognise.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Cancelled)
    }
}

model_enum!(
    /// `MigrationRequestedState`: what UpdateTableMigration may ask for.
    MigrationRequestedState {
        /// Approve a reviewed plan.
        Queued = "queued",
        /// Cancel the migration.
        Cancelled = "cancelled",
    }
);

model_enum!(
    /// `MigrationType`: which operation started a migration.
    MigrationType {
        /// StartTableMigration.
        Start = "start",
        /// SyncTableMigration.
        Sync = "sync",
    }
);

model_enum!(
    /// `MigrationSourceType`.
    MigrationSourceType {
        /// An AWS Glue Data Catalog table.
        GlueTable = "glueTable",
    }
);

model_enum!(
    /// `MigrationFailureCode`: why a migration failed.
    MigrationFailureCode {
        /// The service could not assume the role.
        RolePermissions = "rolePermissions",
        /// The role cannot read the source.
        SourcePermissions = "sourcePermissions",
        /// The role cannot write the destination or reports.
        DestinationPermissions = "destinationPermissions",
        /// A named resource does not exist.
        ResourceNotFound = "resourceNotFound",
        /// The source cannot be migrated.
        SourceNotSupported = "sourceNotSupported",
        /// Objects failed to migrate.
        ObjectMigrationReport = "objectMigrationReport",
        /// Objects are not compatible.
        ObjectCompatibilityReport = "objectCompatibilityReport",
        /// The table is not compatible.
        TableCompatibilityReport = "tableCompatibilityReport",
        /// A service error.
        InternalError = "internalError",
        /// The report bucket cannot be used.
        ReportBucketNotSupported = "reportBucketNotSupported",
    }
);

model_enum!(
    /// `UnmatchedSourceFieldsPolicy`.
    UnmatchedSourceFieldsPolicy {
        /// Fail the migration (default).
        Fail = "fail",
        /// Leave the column out of the destination.
        Drop = "drop",
    }
);

model_enum!(
    /// `IncompatibleValuesPolicy`.
    IncompatibleValuesPolicy {
        /// Fail the migration (default).
        Fail = "fail",
        /// Write the whole column null for an object whose type does not fit.
        SetNull = "setNull",
    }
);

model_enum!(
    /// `SSEAlgorithm`.
    SseAlgorithm {
        /// S3-managed keys.
        Aes256 = "AES256",
        /// KMS keys.
        AwsKms = "aws:kms",
    }
);

model_enum!(
    /// `StorageClass`.
    StorageClass {
        /// S3 Standard.
        Standard = "STANDARD",
        /// S3 Intelligent-Tiering.
        IntelligentTiering = "INTELLIGENT_TIERING",
    }
);

model_enum!(
    /// `DataFileFormat`.
    DataFileFormat {
        /// Parquet (the only format).
        Parquet = "parquet",
    }
);

model_enum!(
    /// `CompressionCodec`.
    CompressionCodec {
        /// Zstandard (the default).
        Zstd = "zstd",
        /// Snappy.
        Snappy = "snappy",
        /// Gzip.
        Gzip = "gzip",
        /// None.
        Uncompressed = "uncompressed",
    }
);

model_enum!(
    /// `SchemaV2FieldType`: the type of a schema's top level.
    SchemaV2FieldType {
        /// Always `struct`.
        Struct = "struct",
    }
);

model_enum!(
    /// `IcebergSortDirection`.
    IcebergSortDirection {
        /// Ascending.
        Asc = "asc",
        /// Descending.
        Desc = "desc",
    }
);

model_enum!(
    /// `IcebergNullOrder`.
    IcebergNullOrder {
        /// Nulls before values.
        NullsFirst = "nulls-first",
        /// Nulls after values.
        NullsLast = "nulls-last",
    }
);

model_enum!(
    /// `IcebergCompactionStrategy`.
    IcebergCompactionStrategy {
        /// Chosen by the service.
        Auto = "auto",
        /// Bin-packing (the only one migration accepts, the default).
        Binpack = "binpack",
        /// Sort.
        Sort = "sort",
        /// Z-order.
        ZOrder = "z-order",
    }
);

model_enum!(
    /// `FindingCategory`: what to change to fix a compatibility finding.
    FindingCategory {
        /// A permission or request setting.
        Access = "access",
        /// The Glue table definition or object properties.
        Metadata = "metadata",
        /// Object contents.
        Data = "data",
        /// An internal error.
        Internal = "internal",
    }
);

model_enum!(
    /// `TableType`.
    TableType {
        /// A customer table.
        Customer = "customer",
        /// An AWS table.
        Aws = "aws",
    }
);

model_enum!(
    /// `OpenTableFormat`.
    OpenTableFormat {
        /// Apache Iceberg.
        Iceberg = "ICEBERG",
    }
);

/// `GlueTableSource`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GlueTableSource {
    /// The Data Catalog (account) ID.
    pub catalog_id: String,
    /// The Glue database.
    pub database_name: String,
    /// The Glue table.
    pub table_name: String,
}

/// `SourceConfiguration` (a union with one member).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceConfiguration {
    /// The Glue table to migrate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glue_table: Option<GlueTableSource>,
}

/// `SchemaV2Field`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SchemaV2Field {
    /// Field ID.
    pub id: i32,
    /// Column name.
    pub name: String,
    /// Iceberg type: a primitive name or a nested type document.
    pub r#type: serde_json::Value,
    /// Whether nulls are refused.
    pub required: bool,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
}

/// `IcebergSchemaV2`: a destination schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IcebergSchemaV2 {
    /// Always `struct`.
    pub r#type: SchemaV2FieldType,
    /// The columns.
    pub fields: Vec<SchemaV2Field>,
    /// Schema ID (`schema-id` on the wire).
    #[serde(rename = "schema-id", default, skip_serializing_if = "Option::is_none")]
    pub schema_id: Option<i32>,
    /// Identifier field IDs (`identifier-field-ids` on the wire).
    #[serde(
        rename = "identifier-field-ids",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub identifier_field_ids: Option<Vec<i32>>,
}

/// `IcebergSortField`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IcebergSortField {
    /// Field ID of the column (`source-id` on the wire).
    #[serde(rename = "source-id")]
    pub source_id: i32,
    /// Transform, e.g. `identity`.
    pub transform: String,
    /// `asc` or `desc`.
    pub direction: IcebergSortDirection,
    /// `nulls-first` or `nulls-last` (`null-order` on the wire).
    #[serde(rename = "null-order")]
    pub null_order: IcebergNullOrder,
}

/// `IcebergSortOrder`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IcebergSortOrder {
    /// Order ID (`order-id` on the wire).
    #[serde(rename = "order-id")]
    pub order_id: i32,
    /// Sort fields.
    pub fields: Vec<IcebergSortField>,
}

/// `EncryptionConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EncryptionConfiguration {
    /// `AES256` or `aws:kms`.
    pub sse_algorithm: SseAlgorithm,
    /// KMS key for `aws:kms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key_arn: Option<String>,
}

/// `StorageClassConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageClassConfiguration {
    /// `STANDARD` or `INTELLIGENT_TIERING`.
    pub storage_class: StorageClass,
}

/// `MigrationTableProperties`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationTableProperties {
    /// Only `parquet`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_format: Option<DataFileFormat>,
    /// 2 or 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iceberg_format_version: Option<i32>,
    /// `zstd`, `snappy`, `gzip`, `uncompressed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression_codec: Option<CompressionCodec>,
    /// Dictionary encoding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dictionary_encoding: Option<bool>,
}

/// `DestinationTable`: the table to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DestinationTable {
    /// `tableBucketARN`.
    #[serde(rename = "tableBucketARN")]
    pub table_bucket_arn: String,
    /// Namespace (must exist).
    pub namespace: String,
    /// Table name (must not exist).
    pub name: String,
    /// Encryption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption_configuration: Option<EncryptionConfiguration>,
    /// Storage class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_configuration: Option<StorageClassConfiguration>,
    /// Tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<BTreeMap<String, String>>,
    /// Table properties.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<MigrationTableProperties>,
    /// Destination schema; inferred from the source when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<IcebergSchemaV2>,
    /// Sort order (requires `schema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iceberg_sort_order: Option<IcebergSortOrder>,
}

/// `MigrationCompactionSettings`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationCompactionSettings {
    /// 64–512.
    #[serde(
        rename = "targetFileSizeMB",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub target_file_size_mb: Option<i32>,
    /// Strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<IcebergCompactionStrategy>,
}

/// `MigrationSnapshotManagementSettings`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationSnapshotManagementSettings {
    /// At least 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_snapshots_to_keep: Option<i32>,
    /// Hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_snapshot_age_hours: Option<i32>,
}

/// `MaintenanceSettings`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceSettings {
    /// Compaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iceberg_compaction: Option<MigrationCompactionSettings>,
    /// Snapshot management.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iceberg_snapshot_management: Option<MigrationSnapshotManagementSettings>,
}

/// `MigrationPolicies`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationPolicies {
    /// Source columns the destination schema lacks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmatched_source_fields_policy: Option<UnmatchedSourceFieldsPolicy>,
    /// Values the destination type cannot hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incompatible_values_policy: Option<IncompatibleValuesPolicy>,
}

/// `DataMigrationSettings` (request).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataMigrationSettings {
    /// Maintenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintenance_settings: Option<MaintenanceSettings>,
    /// Policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration_policies: Option<MigrationPolicies>,
}

/// `DataMigrationOverview` (response): the settings and policies in effect, defaults filled in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataMigrationOverview {
    /// Maintenance.
    pub maintenance_settings: MaintenanceSettings,
    /// Policies.
    pub migration_policies: MigrationPolicies,
}

/// `MigrationReportPrefixes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationReportPrefixes {
    /// Prefix of the table compatibility report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_compatibility_report: Option<String>,
    /// Prefix of the object compatibility report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_compatibility_report: Option<String>,
    /// Prefix of the object migration report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_migration_report: Option<String>,
}

/// `MigrationOutputConfiguration`: where reports go (mandatory).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationOutputConfiguration {
    /// General purpose bucket ARN, `arn:aws:s3:::<bucket>`.
    pub bucket: String,
    /// Key prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefixes: Option<MigrationReportPrefixes>,
}

/// `StartTableMigrationRequest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartTableMigrationRequest {
    /// `roleARN`.
    #[serde(rename = "roleARN")]
    pub role_arn: String,
    /// Destination.
    pub destination_table: DestinationTable,
    /// `glueTable`.
    pub source_type: MigrationSourceType,
    /// Source.
    pub source: SourceConfiguration,
    /// Settings and policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_migration: Option<DataMigrationSettings>,
    /// Pause at `pendingReview`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_migration_plan: Option<bool>,
    /// Report location.
    pub migration_output: MigrationOutputConfiguration,
}

/// `StartTableMigrationResponse` (also `SyncTableMigrationResponse`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartTableMigrationResponse {
    /// The new migration.
    pub migration_id: String,
    /// Its initial state.
    pub state: MigrationState,
}

/// `SyncTableMigrationResponse`.
pub type SyncTableMigrationResponse = StartTableMigrationResponse;

/// `SyncTableMigrationRequest`: only these four members (no source).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncTableMigrationRequest {
    /// `roleARN`.
    #[serde(rename = "roleARN")]
    pub role_arn: String,
    /// `tableARN` of the migrated table.
    #[serde(rename = "tableARN")]
    pub table_arn: String,
    /// Pause at `pendingReview`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_migration_plan: Option<bool>,
    /// Report location.
    pub migration_output: MigrationOutputConfiguration,
}

/// `UpdateTableMigrationRequest` (`tableARN`, `migrationId` go in the query string).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTableMigrationRequest {
    /// Query `tableARN`.
    #[serde(skip)]
    pub table_arn: Option<String>,
    /// Query `migrationId`.
    #[serde(skip)]
    pub migration_id: Option<String>,
    /// `queued` or `cancelled`.
    pub requested_state: MigrationRequestedState,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_description: Option<String>,
}

/// `UpdateTableMigrationResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTableMigrationResponse {
    /// The migration.
    pub migration_id: String,
    /// Its state after the update.
    pub state: MigrationState,
    /// `tableARN`.
    #[serde(rename = "tableARN", default, skip_serializing_if = "Option::is_none")]
    pub table_arn: Option<String>,
}

/// `MigrationFailureReason`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationFailureReason {
    /// Failure code.
    pub code: MigrationFailureCode,
    /// Detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// `PlanningStats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanningStats {
    /// Objects scanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_scanned: Option<i64>,
    /// Objects planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_planned: Option<i64>,
    /// Partitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_count: Option<i64>,
}

/// `MigrationStats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationStats {
    /// Migrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_migrated: Option<i64>,
    /// Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_failed_migration: Option<i64>,
    /// Pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects_pending_migration: Option<i64>,
}

/// `ReportOverview`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportOverview {
    /// Key prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The report object (manifest for object reports); present once written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// `checksumCRC64NVME`.
    #[serde(
        rename = "checksumCRC64NVME",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub checksum_crc64_nvme: Option<String>,
    /// Blocking findings by category (`access`, `metadata`, `data`, `internal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_findings: Option<BTreeMap<FindingCategory, i64>>,
}

impl ReportOverview {
    /// Sum of the blocking findings.
    pub fn invalid_total(&self) -> i64 {
        self.invalid_findings
            .as_ref()
            .map(|m| m.values().sum())
            .unwrap_or(0)
    }
}

/// `MigrationOutputOverview`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationOutputOverview {
    /// Report bucket ARN.
    pub bucket: String,
    /// Table compatibility report (CSV).
    pub table_compatibility_report: ReportOverview,
    /// Object compatibility report (manifest).
    pub object_compatibility_report: ReportOverview,
    /// Object migration report (manifest).
    pub object_migration_report: ReportOverview,
}

/// `GetTableMigrationResponse`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTableMigrationResponse {
    /// ID.
    pub migration_id: String,
    /// `tableBucketARN`.
    #[serde(rename = "tableBucketARN")]
    pub table_bucket_arn: String,
    /// Namespace.
    pub namespace: String,
    /// `tableARN`, once the table exists.
    #[serde(rename = "tableARN", default, skip_serializing_if = "Option::is_none")]
    pub table_arn: Option<String>,
    /// Table name.
    pub name: String,
    /// `start` or `sync`.
    pub r#type: MigrationType,
    /// State.
    pub state: MigrationState,
    /// `roleARN`.
    #[serde(rename = "roleARN")]
    pub role_arn: String,
    /// Whether it pauses for review.
    pub review_migration_plan: bool,
    /// Absent until planning ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_valid_plan: Option<bool>,
    /// ISO 8601.
    pub created_at: String,
    /// ISO 8601.
    pub state_updated_at: String,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<MigrationFailureReason>,
    /// Planning figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_stats: Option<PlanningStats>,
    /// Migration figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migration_stats: Option<MigrationStats>,
    /// `glueTable`.
    pub source_type: MigrationSourceType,
    /// Source.
    pub source: SourceConfiguration,
    /// Settings.
    pub data_migration: DataMigrationOverview,
    /// Reports.
    pub migration_output: MigrationOutputOverview,
}

/// `MigrationSummary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationSummary {
    /// ID.
    pub migration_id: String,
    /// `tableBucketARN`.
    #[serde(rename = "tableBucketARN")]
    pub table_bucket_arn: String,
    /// Namespace.
    pub namespace: String,
    /// `tableARN`.
    #[serde(rename = "tableARN", default, skip_serializing_if = "Option::is_none")]
    pub table_arn: Option<String>,
    /// Name.
    pub name: String,
    /// `start` or `sync`.
    pub r#type: MigrationType,
    /// State.
    pub state: MigrationState,
    /// Absent while planning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_valid_plan: Option<bool>,
    /// ISO 8601.
    pub created_at: String,
    /// ISO 8601.
    pub state_updated_at: String,
}

/// `GetTableMigrationRequest` (query string): one of the two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetTableMigrationRequest {
    /// Query `migrationId`.
    pub migration_id: Option<String>,
    /// Query `tableARN`: the table's most recent migration.
    pub table_arn: Option<String>,
}

/// `ListTableMigrationsRequest` (all query string).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListTableMigrationsRequest {
    /// Scope: a table bucket.
    pub table_bucket_arn: Option<String>,
    /// Narrow to a namespace (needs the bucket).
    pub namespace: Option<String>,
    /// Narrow to a name (needs bucket and namespace).
    pub name: Option<String>,
    /// Scope: one table (not with the bucket).
    pub table_arn: Option<String>,
    /// Filter by state.
    pub state: Option<MigrationState>,
    /// Filter by plan validity.
    pub has_valid_plan: Option<bool>,
    /// Page size, 1–1000.
    pub max_results: Option<i32>,
    /// Continuation.
    pub next_token: Option<String>,
}

/// `ListTableMigrationsResponse`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTableMigrationsResponse {
    /// Newest first; may be empty while `nextToken` is set.
    pub migrations: Vec<MigrationSummary>,
    /// Absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_token: Option<String>,
}

/// `GetTableRequest` (query string): `tableArn`, or bucket, namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GetTableRequest {
    /// Query `tableBucketARN`.
    pub table_bucket_arn: Option<String>,
    /// Query `namespace`.
    pub namespace: Option<String>,
    /// Query `name`.
    pub name: Option<String>,
    /// Query `tableArn` (this spelling: the model's `locationName`).
    pub table_arn: Option<String>,
}

/// `ReplicationInformation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicationInformation {
    /// `sourceTableARN`.
    #[serde(rename = "sourceTableARN")]
    pub source_table_arn: String,
}

/// `ManagedTableInformation`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ManagedTableInformation {
    /// Set for a replica table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_information: Option<ReplicationInformation>,
}

/// `GetTableResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTableResponse {
    /// Name.
    pub name: String,
    /// `customer` or `aws`.
    pub r#type: TableType,
    /// `tableARN`.
    #[serde(rename = "tableARN")]
    pub table_arn: String,
    /// Namespace path.
    pub namespace: Vec<String>,
    /// Namespace ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_id: Option<String>,
    /// Version token.
    pub version_token: String,
    /// Current metadata file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_location: Option<String>,
    /// Warehouse location.
    pub warehouse_location: String,
    /// ISO 8601.
    pub created_at: String,
    /// Account that created it.
    pub created_by: String,
    /// Set (`migration.s3tables.amazonaws.com`) while a migration owns the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by_service: Option<String>,
    /// ISO 8601.
    pub modified_at: String,
    /// Account that last modified it.
    pub modified_by: String,
    /// Owner.
    pub owner_account_id: String,
    /// `ICEBERG`.
    pub format: OpenTableFormat,
    /// Table bucket ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_bucket_id: Option<String>,
    /// Replication details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_table_information: Option<ManagedTableInformation>,
}

/// `GetTableMetadataLocationResponse`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTableMetadataLocationResponse {
    /// Version token.
    pub version_token: String,
    /// Current metadata file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_location: Option<String>,
    /// Warehouse location.
    pub warehouse_location: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enums_use_model_spelling_only() {
        assert_eq!(
            serde_json::to_string(&MigrationRequestedState::Queued).ok(),
            Some("\"queued\"".into())
        );
        assert_eq!(MigrationState::PendingReview.as_str(), "pendingReview");
        assert!("QUEUED".parse::<MigrationRequestedState>().is_err());
        assert!(matches!(
            "queued".parse::<MigrationRequestedState>(),
            Ok(MigrationRequestedState::Queued)
        ));
    }

    #[test]
    fn start_request_serialises_model_member_names() -> Result<(), serde_json::Error> {
        let req = StartTableMigrationRequest {
            role_arn: "arn:aws:iam::1:role/r".into(),
            destination_table: DestinationTable {
                table_bucket_arn: "arn:aws:s3tables:us-east-1:1:bucket/b".into(),
                namespace: "ns".into(),
                name: "t".into(),
                encryption_configuration: None,
                storage_class_configuration: None,
                tags: None,
                properties: None,
                schema: None,
                iceberg_sort_order: None,
            },
            source_type: MigrationSourceType::GlueTable,
            source: SourceConfiguration {
                glue_table: Some(GlueTableSource {
                    catalog_id: "1".into(),
                    database_name: "db".into(),
                    table_name: "src".into(),
                }),
            },
            data_migration: Some(DataMigrationSettings {
                maintenance_settings: None,
                migration_policies: Some(MigrationPolicies {
                    unmatched_source_fields_policy: Some(UnmatchedSourceFieldsPolicy::Drop),
                    incompatible_values_policy: Some(IncompatibleValuesPolicy::SetNull),
                }),
            }),
            review_migration_plan: Some(true),
            migration_output: MigrationOutputConfiguration {
                bucket: "arn:aws:s3:::reports".into(),
                prefixes: None,
            },
        };
        let v = serde_json::to_value(&req)?;
        assert_eq!(v["roleARN"], "arn:aws:iam::1:role/r");
        assert_eq!(
            v["destinationTable"]["tableBucketARN"],
            "arn:aws:s3tables:us-east-1:1:bucket/b"
        );
        assert_eq!(v["sourceType"], "glueTable");
        assert_eq!(v["source"]["glueTable"]["catalogId"], "1");
        assert_eq!(
            v["dataMigration"]["migrationPolicies"]["incompatibleValuesPolicy"],
            "setNull"
        );
        assert_eq!(v["reviewMigrationPlan"], true);
        let back: StartTableMigrationRequest = serde_json::from_value(v)?;
        assert_eq!(back, req);
        Ok(())
    }
}
