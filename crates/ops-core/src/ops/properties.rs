//! Set and remove table properties in one commit.
//!
//! The merged properties are checked before anything is written: a `commit.retry.*` or
//! `write.*` value iceberg cannot parse would break every later commit.

use std::collections::HashMap;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use iceberg::spec::TableProperties;
use iceberg::table::Table;
use iceberg::{TableIdent, TableRequirement, TableUpdate};

use crate::commit::{TableChange, commit_metadata_change};
use crate::{CatalogHandle, Error, Result};

/// Updates table properties (see the module docs).
#[must_use = "a PropertiesBuilder does nothing until awaited"]
pub struct PropertiesBuilder {
    handle: CatalogHandle,
    ident: TableIdent,
    set: HashMap<String, String>,
    remove: Vec<String>,
}

impl PropertiesBuilder {
    /// A property update of `ident` in `handle`'s catalog.
    pub fn new(handle: &CatalogHandle, ident: TableIdent) -> Self {
        Self {
            handle: handle.clone(),
            ident,
            set: HashMap::new(),
            remove: Vec::new(),
        }
    }

    /// Sets `key` to `value`.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.set.insert(key.into(), value.into());
        self
    }

    /// Removes `key` (absent keys are ignored).
    pub fn remove(mut self, key: impl Into<String>) -> Self {
        self.remove.push(key.into());
        self
    }

    async fn execute(self) -> Result<Table> {
        if let Some(k) = self.remove.iter().find(|k| self.set.contains_key(*k)) {
            return Err(Error::InvalidInput(format!(
                "property '{k}' is both set and removed; choose one"
            )));
        }
        commit_metadata_change(&self.handle, &self.ident, |md| {
            let mut merged = md.properties().clone();
            merged.extend(self.set.clone());
            for k in &self.remove {
                merged.remove(k);
            }
            TableProperties::try_from(&merged)
                .map_err(|e| Error::InvalidInput(format!("invalid table property: {e}")))
                .map(|_| {
                    let mut updates = Vec::new();
                    if !self.set.is_empty() {
                        updates.push(TableUpdate::SetProperties {
                            updates: self.set.clone(),
                        });
                    }
                    let removals: Vec<String> = self
                        .remove
                        .iter()
                        .filter(|k| md.properties().contains_key(*k))
                        .cloned()
                        .collect();
                    if !removals.is_empty() {
                        updates.push(TableUpdate::RemoveProperties { removals });
                    }
                    (!updates.is_empty()).then(|| TableChange {
                        requirements: vec![TableRequirement::UuidMatch { uuid: md.uuid() }],
                        updates,
                        ..Default::default()
                    })
                })
        })
        .await
    }
}

impl IntoFuture for PropertiesBuilder {
    type Output = Result<Table>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.execute())
    }
}
