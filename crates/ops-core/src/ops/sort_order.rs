//! Replace the table's default sort order (what writers should sort new files by).

use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::spec::{NullOrder, SortDirection, SortField, SortOrder, Transform};
use iceberg::table::Table;
use iceberg::{TableIdent, TableRequirement, TableUpdate};

use crate::commit::{TableChange, commit_metadata_change};
use crate::{CatalogHandle, Error, Result};

/// Replaces the default sort order; no fields means unsorted.
#[must_use = "a SortOrderBuilder does nothing until awaited"]
pub struct SortOrderBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    fields: Vec<(String, Transform, SortDirection, NullOrder)>,
}

impl SortOrderBuilder {
    /// A sort-order replacement of `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            fields: Vec::new(),
        }
    }

    /// Sorts by `column` ascending, nulls first (Iceberg's default for ascending).
    pub fn asc(self, column: impl Into<String>) -> Self {
        self.by(
            column,
            Transform::Identity,
            SortDirection::Ascending,
            NullOrder::First,
        )
    }

    /// Sorts by `column` descending, nulls last (Iceberg's default for descending).
    pub fn desc(self, column: impl Into<String>) -> Self {
        self.by(
            column,
            Transform::Identity,
            SortDirection::Descending,
            NullOrder::Last,
        )
    }

    /// Sorts by `transform(column)` in the given direction and null order.
    pub fn by(
        mut self,
        column: impl Into<String>,
        transform: Transform,
        direction: SortDirection,
        nulls: NullOrder,
    ) -> Self {
        self.fields
            .push((column.into(), transform, direction, nulls));
        self
    }

    async fn execute(self) -> Result<Table> {
        let fields = self.fields;
        commit_metadata_change(&self.handle, &self.ident, |md| {
            let schema = md.current_schema();
            fields
                .iter()
                .map(|(column, transform, direction, null_order)| {
                    let field = schema.field_by_name(column).ok_or_else(|| {
                        Error::InvalidInput(format!("no column '{column}' to sort by"))
                    })?;
                    transform.result_type(&field.field_type).map_err(|e| {
                        Error::InvalidInput(format!(
                            "cannot sort by {transform}({column}): {}",
                            e.message()
                        ))
                    })?;
                    Ok(SortField {
                        source_id: field.id,
                        transform: *transform,
                        direction: *direction,
                        null_order: *null_order,
                    })
                })
                .collect::<Result<Vec<_>>>()
                .map(|sort_fields| {
                    let order = if sort_fields.is_empty() {
                        SortOrder::unsorted_order()
                    } else {
                        let next = md.sort_orders_iter().map(|o| o.order_id).max().unwrap_or(0) + 1;
                        SortOrder {
                            order_id: next,
                            fields: sort_fields,
                        }
                    };
                    Some(TableChange {
                        requirements: vec![
                            TableRequirement::UuidMatch { uuid: md.uuid() },
                            // Replacing the order this plan saw, not one another writer set.
                            TableRequirement::DefaultSortOrderIdMatch {
                                default_sort_order_id: md.default_sort_order_id(),
                            },
                        ],
                        updates: vec![
                            TableUpdate::AddSortOrder { sort_order: order },
                            TableUpdate::SetDefaultSortOrder { sort_order_id: -1 },
                        ],
                        ..Default::default()
                    })
                })
        })
        .await
    }
}

impl IntoFuture for SortOrderBuilder {
    type Output = Result<Table>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
