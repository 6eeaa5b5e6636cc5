//! Opening a table: made empty when missing, brought to the current columns when an older
//! mnemod made it. Every table of the store opens through here.

use std::sync::Arc;

use lancedb::arrow::arrow_schema::{Field, Schema, SchemaRef};
use lancedb::{Connection, Table};

use super::error::StoreError;

/// The memories' table.
pub const MEMORIES: &str = "memories";

pub(super) async fn open_or_create(
    db: &Connection,
    names: &[String],
    name: &str,
    schema: SchemaRef,
) -> Result<Table, StoreError> {
    if names.iter().any(|n| n == name) {
        let table = db.open_table(name).execute().await?;
        add_missing_columns(&table, name, &schema).await?;
        Ok(table)
    } else {
        Ok(db.create_empty_table(name, schema).execute().await?)
    }
}

/// Brings a table made by an older mnemod to the columns `wanted`: each column added since
/// starts null for the rows already there (a metadata-only commit), so rows of the new shape
/// can be written beside them.
pub(super) async fn add_missing_columns(
    table: &Table,
    name: &str,
    wanted: &Schema,
) -> Result<(), StoreError> {
    let schema = table.schema().await?;
    let missing: Vec<Field> = wanted
        .fields()
        .iter()
        .filter(|f| schema.field_with_name(f.name()).is_err())
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    tracing::info!(
        "upgrading the {name} table: adding {}",
        missing
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    table
        .add_columns()
        .transform(lancedb::table::NewColumnTransform::AllNulls(Arc::new(
            Schema::new(missing),
        )))
        .execute()
        .await?;
    Ok(())
}
