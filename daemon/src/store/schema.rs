//! The `memories` table: its Arrow schema and the conversions between rows and
//! [`MemoryRecord`]. Arrow comes from lancedb's own re-exports, so there is one version.

use std::sync::Arc;

use lancedb::arrow::arrow_array::{
    builder::{ListBuilder, StringBuilder},
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int64Array, ListArray,
    RecordBatch, StringArray,
};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use mnemo_client::protocol::memory::{Memory, MemoryKind};
use mnemo_client::protocol::time::format_micros;

use super::StoreError;

/// Bumped whenever the `memories` columns change; recorded in the `meta` table.
pub const MEMORIES_SCHEMA_VERSION: u32 = 2;

/// One version of a memory as stored. Times are UTC microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRecord {
    pub id: String,
    pub lineage: String,
    pub namespace: String,
    pub content: String,
    pub kind: MemoryKind,
    pub domain: Option<String>,
    pub source: Option<String>,
    pub session_id: Option<String>,
    pub project_id: Option<String>,
    pub vector: Vec<f32>,
    pub embed_model: String,
    pub salience: f32,
    pub strength: f32,
    pub emotion_primary: Option<String>,
    pub emotion_intensity: Option<f32>,
    pub emotion_valence: Option<f32>,
    pub emotion_arousal: Option<f32>,
    pub created_at: i64,
    pub occurred_at: Option<i64>,
    pub valid_from: i64,
    pub valid_to: Option<i64>,
    pub superseded_by: Option<String>,
    pub is_summary: bool,
    pub summarizes: Vec<String>,
    pub entities: Vec<String>,
    pub tags: Vec<String>,
    /// JSON text.
    pub metadata: String,
    pub content_hash: String,
    pub access_count: i64,
    pub last_accessed_at: Option<i64>,
    /// Schema 2: the summary this row was folded into.
    pub summarized_by: Option<String>,
    /// Schema 2: when consolidation found it faded.
    pub faded_at: Option<i64>,
}

impl MemoryRecord {
    pub fn to_protocol(&self) -> Memory {
        Memory {
            id: self.id.clone(),
            lineage: self.lineage.clone(),
            namespace: self.namespace.clone(),
            content: self.content.clone(),
            kind: self.kind,
            domain: self.domain.clone(),
            source: self.source.clone(),
            session_id: self.session_id.clone(),
            salience: self.salience,
            strength: self.strength,
            created_at: format_micros(self.created_at),
            occurred_at: self.occurred_at.map(format_micros),
            valid_from: format_micros(self.valid_from),
            valid_to: self.valid_to.map(format_micros),
            superseded_by: self.superseded_by.clone(),
            tags: self.tags.clone(),
            metadata: serde_json::from_str(&self.metadata).unwrap_or(serde_json::Value::Null),
            content_hash: self.content_hash.clone(),
            is_summary: self.is_summary,
            summarizes: self.summarizes.clone(),
            summarized_by: self.summarized_by.clone(),
            faded_at: self.faded_at.map(format_micros),
            access_count: self.access_count,
            last_accessed_at: self.last_accessed_at.map(format_micros),
        }
    }

    /// A fresh first version: full strength, current from `now`, never accessed. Callers set
    /// what they know beyond the text (and the vector, once embedded).
    pub fn new(namespace: String, content: String, kind: MemoryKind, now: i64) -> Self {
        let id = uuid::Uuid::now_v7().to_string();
        Self {
            lineage: id.clone(),
            id,
            namespace,
            content_hash: content_hash(&content),
            content,
            kind,
            domain: None,
            source: None,
            session_id: None,
            project_id: None,
            vector: Vec::new(),
            embed_model: String::new(),
            salience: 5.0,
            strength: 1.0,
            emotion_primary: None,
            emotion_intensity: None,
            emotion_valence: None,
            emotion_arousal: None,
            created_at: now,
            occurred_at: None,
            valid_from: now,
            valid_to: None,
            superseded_by: None,
            is_summary: false,
            summarizes: Vec::new(),
            entities: Vec::new(),
            tags: Vec::new(),
            metadata: "{}".into(),
            access_count: 0,
            last_accessed_at: None,
            summarized_by: None,
            faded_at: None,
        }
    }

    /// When the memory happened, for time filters and recency: occurred_at, else created_at.
    pub fn event_time(&self) -> i64 {
        self.occurred_at.unwrap_or(self.created_at)
    }
}

/// What makes two texts the same memory: case and spacing do not count.
pub fn content_hash(content: &str) -> String {
    use sha2::{Digest, Sha256};
    let normalized: String = content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let digest = Sha256::digest(normalized.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn list_of_strings() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

pub fn memories_schema(dim: usize) -> SchemaRef {
    let s = |name: &str, nullable| Field::new(name, DataType::Utf8, nullable);
    let i = |name: &str, nullable| Field::new(name, DataType::Int64, nullable);
    let f = |name: &str, nullable| Field::new(name, DataType::Float32, nullable);
    Arc::new(Schema::new(
        vec![
            s("id", false),
            s("lineage", false),
            s("namespace", false),
            s("content", false),
            s("kind", false),
            s("domain", true),
            s("source", true),
            s("session_id", true),
            s("project_id", true),
            Field::new(
                "vector",
                DataType::FixedSizeList(
                    Arc::new(Field::new("item", DataType::Float32, true)),
                    dim as i32,
                ),
                false,
            ),
            s("embed_model", false),
            f("salience", false),
            f("strength", false),
            s("emotion_primary", true),
            f("emotion_intensity", true),
            f("emotion_valence", true),
            f("emotion_arousal", true),
            i("created_at", false),
            i("occurred_at", true),
            i("valid_from", false),
            i("valid_to", true),
            s("superseded_by", true),
            Field::new("is_summary", DataType::Boolean, false),
            Field::new("summarizes", list_of_strings(), true),
            Field::new("entities", list_of_strings(), true),
            Field::new("tags", list_of_strings(), true),
            s("metadata", false),
            s("content_hash", false),
            i("access_count", false),
            i("last_accessed_at", true),
        ]
        .into_iter()
        .chain(added_in_v2())
        .collect::<Vec<_>>(),
    ))
}

/// Columns schema 2 added; a version-1 table gains them, all null, when opened.
pub fn added_in_v2() -> Vec<Field> {
    vec![
        Field::new("summarized_by", DataType::Utf8, true),
        Field::new("faded_at", DataType::Int64, true),
    ]
}

/// A batch of some `memories` columns (the first being `id`), typed as the table types them:
/// the source of a partial-schema merge.
pub fn patch_batch(
    schema: &Schema,
    columns: Vec<(&str, ArrayRef)>,
) -> Result<RecordBatch, StoreError> {
    let mut fields = Vec::new();
    for (name, _) in &columns {
        fields.push(schema.field_with_name(name)?.clone());
    }
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
}

/// Every column but the vector: what reads fetch unless they need vectors.
pub fn columns_without_vector(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| n != "vector")
        .collect()
}

fn strings(values: impl Iterator<Item = Option<String>>) -> ArrayRef {
    Arc::new(values.collect::<StringArray>())
}

fn string_lists<'a>(values: impl Iterator<Item = &'a Vec<String>>) -> ArrayRef {
    let mut builder = ListBuilder::new(StringBuilder::new());
    for list in values {
        for item in list {
            builder.values().append_value(item);
        }
        builder.append(true);
    }
    Arc::new(builder.finish())
}

pub fn to_batch(schema: &SchemaRef, rows: &[MemoryRecord]) -> Result<RecordBatch, StoreError> {
    let dim = match schema
        .field_with_name("vector")
        .map(|f| f.data_type().clone())
    {
        Ok(DataType::FixedSizeList(_, d)) => d,
        _ => return Err(StoreError::Schema("memories has no vector column".into())),
    };
    if let Some(bad) = rows.iter().find(|r| r.vector.len() != dim as usize) {
        return Err(StoreError::Schema(format!(
            "vector of {} dimensions for a table of {dim} (memory {})",
            bad.vector.len(),
            bad.id
        )));
    }
    let owned = |f: fn(&MemoryRecord) -> Option<String>| strings(rows.iter().map(f));
    let req = |f: fn(&MemoryRecord) -> &str| strings(rows.iter().map(|r| Some(f(r).to_string())));
    let columns: Vec<ArrayRef> = vec![
        req(|r| &r.id),
        req(|r| &r.lineage),
        req(|r| &r.namespace),
        req(|r| &r.content),
        req(|r| r.kind.as_str()),
        owned(|r| r.domain.clone()),
        owned(|r| r.source.clone()),
        owned(|r| r.session_id.clone()),
        owned(|r| r.project_id.clone()),
        Arc::new(FixedSizeListArray::try_new(
            Arc::new(Field::new("item", DataType::Float32, true)),
            dim,
            Arc::new(Float32Array::from_iter_values(
                rows.iter().flat_map(|r| r.vector.iter().copied()),
            )),
            None,
        )?),
        req(|r| &r.embed_model),
        Arc::new(rows.iter().map(|r| r.salience).collect::<Float32Array>()),
        Arc::new(rows.iter().map(|r| r.strength).collect::<Float32Array>()),
        owned(|r| r.emotion_primary.clone()),
        Arc::new(
            rows.iter()
                .map(|r| r.emotion_intensity)
                .collect::<Float32Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| r.emotion_valence)
                .collect::<Float32Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| r.emotion_arousal)
                .collect::<Float32Array>(),
        ),
        Arc::new(rows.iter().map(|r| r.created_at).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.occurred_at).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.valid_from).collect::<Int64Array>()),
        Arc::new(rows.iter().map(|r| r.valid_to).collect::<Int64Array>()),
        owned(|r| r.superseded_by.clone()),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.is_summary))
                .collect::<BooleanArray>(),
        ),
        string_lists(rows.iter().map(|r| &r.summarizes)),
        string_lists(rows.iter().map(|r| &r.entities)),
        string_lists(rows.iter().map(|r| &r.tags)),
        req(|r| &r.metadata),
        req(|r| &r.content_hash),
        Arc::new(rows.iter().map(|r| r.access_count).collect::<Int64Array>()),
        Arc::new(
            rows.iter()
                .map(|r| r.last_accessed_at)
                .collect::<Int64Array>(),
        ),
        owned(|r| r.summarized_by.clone()),
        Arc::new(rows.iter().map(|r| r.faded_at).collect::<Int64Array>()),
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// Typed access to a batch's columns by name; absent columns read as defaults, so reads that
/// skip the vector (or ask for a few columns) still decode.
struct Columns<'a>(&'a RecordBatch);

impl Columns<'_> {
    fn get<T: 'static>(&self, name: &str) -> Option<&T> {
        self.0
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
    }
    fn string(&self, name: &str, row: usize) -> Option<String> {
        self.get::<StringArray>(name)
            .filter(|a| a.is_valid(row))
            .map(|a| a.value(row).to_string())
    }
    fn int(&self, name: &str, row: usize) -> Option<i64> {
        self.get::<Int64Array>(name)
            .filter(|a| a.is_valid(row))
            .map(|a| a.value(row))
    }
    fn float(&self, name: &str, row: usize) -> Option<f32> {
        self.get::<Float32Array>(name)
            .filter(|a| a.is_valid(row))
            .map(|a| a.value(row))
    }
    fn list(&self, name: &str, row: usize) -> Vec<String> {
        let Some(list) = self.get::<ListArray>(name).filter(|a| a.is_valid(row)) else {
            return Vec::new();
        };
        let values = list.value(row);
        let Some(values) = values.as_any().downcast_ref::<StringArray>() else {
            return Vec::new();
        };
        values.iter().flatten().map(str::to_string).collect()
    }
    fn vector(&self, row: usize) -> Vec<f32> {
        let Some(list) = self.get::<FixedSizeListArray>("vector") else {
            return Vec::new();
        };
        let values = list.value(row);
        values
            .as_any()
            .downcast_ref::<Float32Array>()
            .map(|v| v.values().to_vec())
            .unwrap_or_default()
    }
}

pub fn from_batch(batch: &RecordBatch) -> Vec<MemoryRecord> {
    let c = Columns(batch);
    (0..batch.num_rows())
        .map(|row| MemoryRecord {
            id: c.string("id", row).unwrap_or_default(),
            lineage: c.string("lineage", row).unwrap_or_default(),
            namespace: c.string("namespace", row).unwrap_or_default(),
            content: c.string("content", row).unwrap_or_default(),
            kind: c
                .string("kind", row)
                .and_then(|k| k.parse().ok())
                .unwrap_or_default(),
            domain: c.string("domain", row),
            source: c.string("source", row),
            session_id: c.string("session_id", row),
            project_id: c.string("project_id", row),
            vector: c.vector(row),
            embed_model: c.string("embed_model", row).unwrap_or_default(),
            salience: c.float("salience", row).unwrap_or(5.0),
            strength: c.float("strength", row).unwrap_or(1.0),
            emotion_primary: c.string("emotion_primary", row),
            emotion_intensity: c.float("emotion_intensity", row),
            emotion_valence: c.float("emotion_valence", row),
            emotion_arousal: c.float("emotion_arousal", row),
            created_at: c.int("created_at", row).unwrap_or_default(),
            occurred_at: c.int("occurred_at", row),
            valid_from: c.int("valid_from", row).unwrap_or_default(),
            valid_to: c.int("valid_to", row),
            superseded_by: c.string("superseded_by", row),
            is_summary: c
                .get::<BooleanArray>("is_summary")
                .map(|a| a.value(row))
                .unwrap_or(false),
            summarizes: c.list("summarizes", row),
            entities: c.list("entities", row),
            tags: c.list("tags", row),
            metadata: c.string("metadata", row).unwrap_or_else(|| "{}".into()),
            content_hash: c.string("content_hash", row).unwrap_or_default(),
            access_count: c.int("access_count", row).unwrap_or_default(),
            last_accessed_at: c.int("last_accessed_at", row),
            summarized_by: c.string("summarized_by", row),
            faded_at: c.int("faded_at", row),
        })
        .collect()
}

/// A float column of a search result (`_distance`, `_score`), by row.
pub fn float_column(batch: &RecordBatch, name: &str) -> Vec<Option<f32>> {
    let Some(col) = batch.column_by_name(name) else {
        return vec![None; batch.num_rows()];
    };
    match col.as_any().downcast_ref::<Float32Array>() {
        Some(a) => (0..a.len())
            .map(|i| a.is_valid(i).then(|| a.value(i)))
            .collect(),
        None => vec![None; batch.num_rows()],
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn record(id: &str, content: &str, dim: usize) -> MemoryRecord {
        MemoryRecord {
            id: id.into(),
            lineage: id.into(),
            namespace: "default".into(),
            content: content.into(),
            kind: MemoryKind::Episodic,
            domain: Some("work".into()),
            source: None,
            session_id: None,
            project_id: None,
            vector: vec![0.5; dim],
            embed_model: "test".into(),
            salience: 5.0,
            strength: 1.0,
            emotion_primary: None,
            emotion_intensity: None,
            emotion_valence: None,
            emotion_arousal: None,
            created_at: 1,
            occurred_at: Some(2),
            valid_from: 1,
            valid_to: None,
            superseded_by: None,
            is_summary: false,
            summarizes: vec![],
            entities: vec!["Ann".into()],
            tags: vec!["a".into(), "b".into()],
            metadata: "{\"x\":1}".into(),
            content_hash: "h".into(),
            access_count: 0,
            last_accessed_at: None,
            summarized_by: None,
            faded_at: Some(3),
        }
    }

    #[test]
    fn rows_round_trip_through_arrow() {
        let schema = memories_schema(4);
        let rows = vec![record("a", "first", 4), record("b", "second", 4)];
        let batch = to_batch(&schema, &rows).unwrap();
        assert_eq!(from_batch(&batch), rows);
    }

    #[test]
    fn wrong_dimension_is_refused() {
        let schema = memories_schema(8);
        let err = to_batch(&schema, &[record("a", "x", 4)]).unwrap_err();
        assert!(err.to_string().contains("4 dimensions"), "{err}");
    }
}
