//! # ops-reconcile: map a source schema onto a destination schema
//!
//! A [`SchemaReconciler`] declares how source columns become destination columns: renames
//! (`column_mapping`), cast targets (`type_coercions`) and what to do with columns missing on
//! either side. It is a plan factory without per-batch state:
//!
//! 1. [`SchemaReconciler::compute_plan`] (once, from Arrow or Iceberg schemas) validates every
//!    policy up front — unknown mapping keys, non one-to-one mappings, unmatched columns, illegal
//!    coercions and impossible casts are collected into one [`ReconcileError::Plan`] — and
//!    returns a [`ReconciliationPlan`] of per-column [`ColumnProjection`]s, columns to auto-add,
//!    columns to widen, and warnings.
//! 2. [`project_batch`] (per batch) renames, casts and null-fills one Arrow batch, keeping the
//!    Iceberg field ids in the field metadata, in O(rows × plan columns) memory.
//!
//! Casts are safe as pyarrow's default cast is: a value that fails to convert, or that the cast
//! would change (a fraction cut off, an integer above 2^53 rounded to a double, a decimal rounded
//! to a smaller scale, nanoseconds or a time of day dropped), is a [`ReconcileError::Cast`]
//! naming the column and the value. [`SchemaReconciler::allow_lossy_casts`] accepts such changes
//! ([`CastMode::AllowLossy`]); the plan warns for every lossy cast either way. A nested source
//! field the destination struct lacks follows `on_missing_in_dest` as a top-level column does.
//!
//! ```
//! use ops_reconcile::{MissingInSource, SchemaReconciler, project_batch};
//! use iceberg::spec::{PrimitiveType, Type};
//! # use std::sync::Arc;
//! # use arrow_array::{Int32Array, RecordBatch};
//! # use arrow_schema::{DataType, Field, Schema};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let source = Schema::new(vec![
//!     Field::new("order_total", DataType::Int32, true),
//!     Field::new("qty", DataType::Int32, true),
//! ]);
//! let dest = Schema::new(vec![
//!     Field::new("total_amount", DataType::Int32, true),
//!     Field::new("qty", DataType::Int64, true),
//!     Field::new("note", DataType::Utf8, true),
//! ]);
//! let reconciler = SchemaReconciler::new()
//!     .rename("order_total", "total_amount")
//!     .coerce("qty", Type::Primitive(PrimitiveType::Long))
//!     .on_missing_in_source(MissingInSource::Null);
//! let plan = reconciler.compute_plan(&source, &dest)?;
//! let batch = RecordBatch::try_new(Arc::new(source), vec![
//!     Arc::new(Int32Array::from(vec![10, 20])),
//!     Arc::new(Int32Array::from(vec![1, 2])),
//! ])?;
//! let out = project_batch(&batch, &plan)?;
//! assert_eq!(out.schema().field(1).data_type(), &DataType::Int64);
//! assert_eq!(out.column(2).null_count(), 2);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod cast;
mod error;
#[cfg(test)]
mod nested_tests;
mod plan;
mod project;
mod promote;

pub use cast::CastMode;
pub use error::ReconcileError;
pub use plan::{
    ColumnProjection, MissingInDest, MissingInSource, ReconciliationPlan, SchemaInput,
    SchemaReconciler,
};
pub use project::{ChildMatch, convert_array, convert_array_with, project_batch};
pub use promote::is_legal_promotion;
