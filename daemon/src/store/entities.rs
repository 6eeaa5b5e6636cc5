//! The `entities` table (ARCHITECTURE §3): what the store knows of each entity its memories
//! mention — name, aliases, type, first and last seen, how many current memories mention it.
//! Derived data: `graph::EntityBook` keeps it and writes what changed every few seconds.
//! An entity's id is its graph node id (its key, keyed in an encrypted store), scoped by
//! namespace; in an encrypted store its name and aliases are sealed to the row.

use mnemo_protocol::entity::EntityType;

use super::column::table_rows;

pub const ENTITIES: &str = "entities";

table_rows! {
    /// One entity as stored. Times are UTC microseconds.
    EntityRecord {
        /// `namespace|key`: one row per entity of a namespace.
        id: String,
        namespace: String,
        /// The graph node id: the folded name, keyed in an encrypted store.
        key: String,
        entity_type: EntityType,
        /// The form written most often (sealed in an encrypted store).
        name: String,
        /// Every form written, as JSON `{form: times}` (sealed in an encrypted store).
        aliases: String,
        relation: Option<String>,
        mention_count: i64,
        first_seen: i64,
        last_seen: i64,
        /// Sum of the salience of the memories mentioning it (mean = sum / mentions).
        salience_sum: f32,
        merged_into: Option<String>,
        sealed: bool,
    }
}

pub fn entity_id(namespace: &str, key: &str) -> String {
    format!("{namespace}|{key}")
}

/// The entities table: rows keyed by `namespace|key`.
pub type EntityTable = super::keyed::KeyedTable<EntityRecord>;
