/// Why a plan could not be computed or a batch could not be projected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// Every problem found while planning, reported together.
    #[error("schema reconciliation failed with {} problem(s):\n  - {}", problems.len(), problems.join("\n  - "))]
    Plan {
        /// One line per problem, each naming the column and the fix.
        problems: Vec<String>,
    },

    /// A batch lacks a column the plan reads: the plan was computed from a different source
    /// schema.
    #[error(
        "the batch has no column '{column}' (it has: {available}); the plan was computed for a \
         different source schema — recompute it from the schema being read"
    )]
    MissingSourceColumn {
        /// The column the plan expects.
        column: String,
        /// The batch's columns.
        available: String,
    },

    /// A value could not be converted to the destination type.
    #[error("column '{column}': cannot cast {from} to {to}{}: {message}", value.as_ref().map(|v| format!(" (offending value: {v})")).unwrap_or_default())]
    Cast {
        /// Destination column.
        column: String,
        /// Source Arrow type.
        from: String,
        /// Target Arrow type.
        to: String,
        /// The first value that failed, when it can be found.
        value: Option<String>,
        /// Arrow's message.
        message: String,
    },

    /// A required (non-nullable) destination column received nulls.
    #[error("column '{column}' is required in the destination but {nulls} source row(s) are null")]
    NullInRequired {
        /// Destination column.
        column: String,
        /// How many nulls.
        nulls: usize,
    },

    /// An Iceberg schema or type could not be expressed in Arrow (or back).
    #[error("schema conversion failed: {0}")]
    Schema(String),

    /// Arrow refused to assemble the projected batch.
    #[error(transparent)]
    Arrow(#[from] arrow_schema::ArrowError),
}
