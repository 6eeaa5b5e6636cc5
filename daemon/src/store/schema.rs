//! The `memories` table: its columns, listed once in [`memory_columns!`], from which the row
//! type, the Arrow schema, both batch conversions and the wire mapping are made. Arrow comes
//! from lancedb's own re-exports, so there is one version.

use std::sync::Arc;

use lancedb::arrow::arrow_array::{Array, ArrayRef, Float32Array, RecordBatch};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use mnemo_protocol::memory::{Memory, MemoryKind};
use mnemo_protocol::time::{format_micros, parse_micros};
use mnemo_protocol::understanding::{Emotion, EventTime, SalienceFactors};

use super::column::Column;
use super::error::StoreError;

/// Bumped whenever the `memories` columns change; recorded in the `meta` table. A table of an
/// older version gains the new (nullable) columns, all null, when opened.
pub const MEMORIES_SCHEMA_VERSION: u32 = 5;

/// How a column goes on the wire (`protocol::memory::Memory`).
trait Wire<T> {
    fn wire(&self) -> T;
}
impl<T: Clone> Wire<T> for T {
    fn wire(&self) -> T {
        self.clone()
    }
}
/// Times travel as RFC 3339 text.
struct Time<'a, T>(&'a T);
impl Time<'_, i64> {
    fn wire(&self) -> String {
        format_micros(*self.0)
    }
}
impl Time<'_, Option<i64>> {
    fn wire(&self) -> Option<String> {
        self.0.map(format_micros)
    }
}

/// Wire times back to microseconds, naming the field that does not parse.
struct FromTime<'a, T>(&'a T, &'static str);
impl FromTime<'_, String> {
    fn unwire(&self) -> Result<i64, String> {
        parse_micros(self.0).map_err(|e| format!("{}: {e}", self.1))
    }
}
impl FromTime<'_, Option<String>> {
    fn unwire(&self) -> Result<Option<i64>, String> {
        self.0
            .as_deref()
            .map(parse_micros)
            .transpose()
            .map_err(|e| format!("{}: {e}", self.1))
    }
}

macro_rules! unwire_value {
    (same, $v:expr, $name:ident) => {
        Ok::<_, String>($v.clone())
    };
    (time, $v:expr, $name:ident) => {
        FromTime($v, stringify!($name)).unwire()
    };
    (json, $v:expr, $name:ident) => {
        Ok::<_, String>($v.to_string())
    };
}

macro_rules! wire_value {
    (same, $v:expr) => {
        Wire::wire($v)
    };
    (time, $v:expr) => {
        Time($v).wire()
    };
    (json, $v:expr) => {
        serde_json::from_str($v).unwrap_or(serde_json::Value::Null)
    };
}

/// Declares the `memories` columns: `name: Type` and, for columns the wire `Memory` carries,
/// `=> same | time | json`.
macro_rules! memory_columns {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty $(=> $wire:ident)? ),* $(,)?) => {
        /// One version of a memory as stored. Times are UTC microseconds.
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct MemoryRecord {
            $( $(#[$doc])* pub $name: $ty, )*
        }

        /// The table's columns for vectors of `dim` dimensions.
        pub fn memories_schema(dim: usize) -> SchemaRef {
            Arc::new(Schema::new(vec![
                $( Field::new(stringify!($name), <$ty as Column>::data_type(dim as i32), <$ty as Column>::nullable()), )*
            ]))
        }

        /// Rows as a batch of `schema` (the table's own, so nullability matches it).
        pub fn to_batch(schema: &SchemaRef, rows: &[MemoryRecord]) -> Result<RecordBatch, StoreError> {
            let dim = vector_dim(schema)?;
            let columns: Vec<ArrayRef> = vec![
                $( <$ty as Column>::to_array(rows.iter().map(|r| &r.$name).collect(), dim)?, )*
            ];
            Ok(RecordBatch::try_new(schema.clone(), columns)?)
        }

        /// Rows of a batch; columns it lacks (a read of a few columns) read as defaults.
        pub fn from_batch(batch: &RecordBatch) -> Vec<MemoryRecord> {
            records(batch).collect()
        }

        /// The batch's rows one at a time: a reader that keeps little of each row makes and
        /// drops one record at a time, rather than a batch's worth (thousands of vectors)
        /// among what it keeps.
        pub fn records(batch: &RecordBatch) -> impl Iterator<Item = MemoryRecord> + '_ {
            $( let $name = batch.column_by_name(stringify!($name)); )*
            (0..batch.num_rows()).map(move |row| MemoryRecord {
                $( $name: $name.map(|c| <$ty as Column>::read(c.as_ref(), row)).unwrap_or_default(), )*
            })
        }

        impl MemoryRecord {
            /// Whether the row's `column` holds other than what a read without that column
            /// gives it (None, no items, false); a column it does not have counts as held.
            pub fn fills(&self, column: &str) -> bool {
                match column {
                    $( stringify!($name) => self.$name != <$ty>::default(), )*
                    _ => true,
                }
            }

            pub fn to_protocol(&self) -> Memory {
                Memory {
                    $( $( $name: wire_value!($wire, &self.$name), )? )*
                    emotion: self.emotion(),
                    salience_factors: self.salience_factors(),
                    event: self.event(),
                    entities: Vec::new(),
                    edges: Vec::new(),
                }
            }

            /// The row a wire `Memory` describes (an exported one, imported): every column it
            /// carries, its emotion, salience factors and event time; no vector, entities or
            /// hashed terms yet. Errors name the field that does not parse.
            pub fn from_protocol(m: &Memory) -> Result<MemoryRecord, String> {
                let mut r = MemoryRecord {
                    $( $( $name: unwire_value!($wire, &m.$name, $name)?, )? )*
                    ..Default::default()
                };
                if let Some(e) = &m.emotion {
                    r.set_emotion(e);
                }
                r.set_salience_factors(m.salience_factors.as_ref());
                // An episode's lookup keys are its targets, kept in its metadata.
                r.targets = episode_targets(&m.metadata);
                if let Some(event) = &m.event {
                    r.event_start = Some(parse_micros(&event.start).map_err(|e| format!("event.start: {e}"))?);
                    r.event_end = Some(parse_micros(&event.end).map_err(|e| format!("event.end: {e}"))?);
                }
                Ok(r)
            }
        }
    };
}

memory_columns! {
    id: String => same,
    /// The id of the first version: history is one filter, no chain walking.
    lineage: String => same,
    namespace: String => same,
    content: String => same,
    kind: MemoryKind => same,
    domain: Option<String> => same,
    source: Option<String> => same,
    session_id: Option<String> => same,
    project_id: Option<String>,
    vector: Vec<f32>,
    /// The model that made `vector`; search compares only vectors of the configured model.
    embed_model: String,
    salience: f32 => same,
    strength: f32 => same,
    emotion_primary: Option<String>,
    emotion_intensity: Option<f32>,
    emotion_valence: Option<f32>,
    emotion_arousal: Option<f32>,
    created_at: i64 => time,
    occurred_at: Option<i64> => time,
    valid_from: i64 => time,
    valid_to: Option<i64> => time,
    superseded_by: Option<String> => same,
    is_summary: bool => same,
    summarizes: Vec<String> => same,
    entities: Vec<String>,
    tags: Vec<String> => same,
    /// JSON text.
    metadata: String => json,
    content_hash: String => same,
    access_count: i64 => same,
    last_accessed_at: Option<i64> => time,
    /// Schema 2: the summary this row was folded into.
    summarized_by: Option<String> => same,
    /// Schema 2: when consolidation found it faded.
    faded_at: Option<i64> => time,
    /// Schema 3: in an encrypted store, the keyed hashes of the content's terms (what the
    /// full-text index covers there); null otherwise.
    terms: Option<String>,
    /// Schema 3: content and metadata are ciphertext (see `seal.rs`).
    sealed: bool,
    /// Schema 4: what the salience was made of (JSON of `SalienceFactors`); null when the
    /// salience was given with the memory.
    salience_factors: Option<String>,
    /// Schema 4: the time the text speaks about ("last Saturday"), end exclusive.
    event_start: Option<i64>,
    event_end: Option<i64>,
    /// Schema 5: an episode's action (`episode.record`); null for every other memory.
    action: Option<String> => same,
    /// Schema 5: an episode's outcome.
    outcome: Option<String> => same,
    /// Schema 5: how long an episode's action took.
    duration_ms: Option<i64> => same,
    /// Schema 5: an episode's targets as looked up (keyed in an encrypted store; the text
    /// as given is in the metadata).
    targets: Vec<String>,
}

/// The targets an episode's metadata names (`episode.targets`).
pub fn episode_targets(metadata: &serde_json::Value) -> Vec<String> {
    metadata
        .pointer("/episode/targets")
        .and_then(|t| t.as_array())
        .map(|t| {
            t.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn vector_dim(schema: &Schema) -> Result<i32, StoreError> {
    match schema.field_with_name("vector").map(|f| f.data_type()) {
        Ok(DataType::FixedSizeList(_, d)) => Ok(*d),
        _ => Err(StoreError::Schema("memories has no vector column".into())),
    }
}

impl MemoryRecord {
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
            salience: 5.0,
            strength: 1.0,
            created_at: now,
            valid_from: now,
            metadata: "{}".into(),
            ..Default::default()
        }
    }

    pub fn emotion(&self) -> Option<Emotion> {
        Some(Emotion {
            primary: self.emotion_primary.as_deref()?.parse().ok()?,
            intensity: self.emotion_intensity.unwrap_or_default(),
            valence: self.emotion_valence.unwrap_or_default(),
            arousal: self.emotion_arousal.unwrap_or_default(),
        })
    }

    pub fn set_emotion(&mut self, e: &Emotion) {
        self.emotion_primary = Some(e.primary.as_str().to_string());
        self.emotion_intensity = Some(e.intensity);
        self.emotion_valence = Some(e.valence);
        self.emotion_arousal = Some(e.arousal);
    }

    pub fn salience_factors(&self) -> Option<SalienceFactors> {
        serde_json::from_str(self.salience_factors.as_deref()?).ok()
    }

    pub fn set_salience_factors(&mut self, f: Option<&SalienceFactors>) {
        self.salience_factors = f.map(|f| serde_json::to_string(f).expect("plain numbers"));
    }

    pub fn event(&self) -> Option<EventTime> {
        Some(EventTime {
            start: format_micros(self.event_start?),
            end: format_micros(self.event_end?),
        })
    }

    /// When the memory happened, for time filters and recency: occurred_at, else created_at.
    pub fn event_time(&self) -> i64 {
        self.occurred_at.unwrap_or(self.created_at)
    }

    /// Whether the person said it: a session's assistant and tool messages (their `role`
    /// in the metadata) say nothing about them.
    pub fn is_the_persons(&self) -> bool {
        let role = serde_json::from_str::<serde_json::Value>(&self.metadata)
            .ok()
            .and_then(|m| m.get("role")?.as_str().map(str::to_string));
        !matches!(role.as_deref(), Some("assistant" | "tool"))
    }
}

/// The text two memories must share to be the same: case and spacing do not count.
pub fn normalized_for_hash(content: &str) -> String {
    content
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// What makes two texts the same memory in a plain store (an encrypted one keys it).
pub fn content_hash(content: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(normalized_for_hash(content).as_bytes());
    hex(&digest[..16])
}

/// Lower-case hex digits of `bytes` (hashes, keys).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// Every column but the vector and the hashed terms: what reads fetch unless they need
/// vectors.
pub fn columns_without_vector(schema: &Schema) -> Vec<String> {
    schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| n != "vector" && n != "terms")
        .collect()
}

/// The columns a search answers with: what a wire `Memory` is made of (and whether it is
/// sealed), without the vector, the hashed terms and the lookup keys (entities, targets) a
/// hit never shows. At 10 rows a take reads each column apart: fewer columns, faster take.
pub fn answered_columns(schema: &Schema) -> Vec<String> {
    const UNSHOWN: [&str; 6] = [
        "vector",
        "terms",
        "entities",
        "targets",
        "embed_model",
        "project_id",
    ];
    schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|n| !UNSHOWN.contains(&n.as_str()))
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
            terms: Some("t".into()),
            sealed: false,
            salience_factors: Some("{}".into()),
            event_start: Some(4),
            event_end: Some(5),
            action: Some("edit".into()),
            outcome: Some("failure".into()),
            duration_ms: Some(1200),
            targets: vec!["/repo/a.py".into()],
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
    fn a_row_survives_the_wire_but_for_what_is_made_again_on_import() {
        let mut row = record("a", "first", 4);
        row.salience_factors = Some(serde_json::to_string(&SalienceFactors::default()).unwrap());
        row.emotion_primary = Some("joy".into());
        row.emotion_intensity = Some(0.5);
        row.emotion_valence = Some(0.25);
        row.emotion_arousal = Some(0.75);
        let back = MemoryRecord::from_protocol(&row.to_protocol()).unwrap();
        // The vector, its model, the entities and the hashed terms are made again.
        let expected = MemoryRecord {
            vector: vec![],
            embed_model: String::new(),
            entities: vec![],
            terms: None,
            targets: vec![],
            ..row
        };
        assert_eq!(back, expected);
    }

    #[test]
    fn a_wire_time_that_does_not_parse_is_named() {
        let mut m = record("a", "first", 4).to_protocol();
        m.valid_from = "yesterday-ish".into();
        let err = MemoryRecord::from_protocol(&m).unwrap_err();
        assert!(err.starts_with("valid_from:"), "{err}");
    }

    #[test]
    fn wrong_dimension_is_refused() {
        let schema = memories_schema(8);
        let err = to_batch(&schema, &[record("a", "x", 4)]).unwrap_err();
        assert!(err.to_string().contains("4 dimensions"), "{err}");
    }
}
