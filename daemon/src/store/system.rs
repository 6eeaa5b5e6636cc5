//! The hardware tables: `system_profile` (a row per change), `snapshots` (raw rows, then
//! 1-minute aggregates) and `processes` (one row per process life, first and last seen).
//! Each row keeps the protocol value as JSON beside the columns queries filter on.

use std::sync::Arc;

use lancedb::arrow::arrow_array::{
    Array, ArrayRef, Float32Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use lancedb::arrow::arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancedb::{Connection, Table};
use mnemo_protocol::system::{ProcessEntry, Snapshot, SystemProfile};
use mnemo_protocol::time::parse_micros;

use super::error::StoreError;
use super::sql::{col, matching, Pred};
use super::tables::open_or_create;

pub const SNAPSHOTS: &str = "snapshots";
pub const PROFILES: &str = "system_profile";
pub const PROCESSES: &str = "processes";
pub const RAW: &str = "raw";
pub const MINUTE: &str = "minute";

fn snapshots_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("at", DataType::Int64, false),
        Field::new("resolution", DataType::Utf8, false),
        Field::new("span_secs", DataType::Int32, false),
        Field::new("cpu_pct", DataType::Float32, true),
        Field::new("ram_pct", DataType::Float32, true),
        Field::new("data", DataType::Utf8, false),
    ]))
}

fn profiles_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("detected_at", DataType::Int64, false),
        Field::new("data", DataType::Utf8, false),
    ]))
}

fn processes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("pid", DataType::Int64, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("category", DataType::Utf8, false),
        Field::new("first_seen", DataType::Int64, false),
        Field::new("last_seen", DataType::Int64, false),
        Field::new("data", DataType::Utf8, false),
    ]))
}

pub struct SystemTables {
    pub snapshots: Table,
    pub profiles: Table,
    pub processes: Table,
}

impl SystemTables {
    pub async fn open(db: &Connection, names: &[String]) -> Result<Self, StoreError> {
        Ok(Self {
            snapshots: open_or_create(db, names, SNAPSHOTS, snapshots_schema()).await?,
            profiles: open_or_create(db, names, PROFILES, profiles_schema()).await?,
            processes: open_or_create(db, names, PROCESSES, processes_schema()).await?,
        })
    }
}

pub(super) fn json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "{}".into())
}

fn micros(text: &str) -> i64 {
    parse_micros(text).unwrap_or_default()
}

pub fn snapshots_batch(rows: &[Snapshot], resolution: &str) -> Result<RecordBatch, StoreError> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|s| micros(&s.at)).collect::<Int64Array>()),
        Arc::new(
            rows.iter()
                .map(|_| Some(resolution))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|s| s.span_secs as i32)
                .collect::<Int32Array>(),
        ),
        Arc::new(rows.iter().map(|s| s.cpu_pct).collect::<Float32Array>()),
        Arc::new(rows.iter().map(|s| s.ram_pct).collect::<Float32Array>()),
        Arc::new(rows.iter().map(|s| Some(json(s))).collect::<StringArray>()),
    ];
    Ok(RecordBatch::try_new(snapshots_schema(), columns)?)
}

pub fn profile_batch(profile: &SystemProfile) -> Result<RecordBatch, StoreError> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![micros(&profile.detected_at)])),
        Arc::new(StringArray::from(vec![json(profile)])),
    ];
    Ok(RecordBatch::try_new(profiles_schema(), columns)?)
}

/// Keyed by pid and start time, so a reused pid is a new row.
pub fn processes_batch(rows: &[(String, ProcessEntry)]) -> Result<RecordBatch, StoreError> {
    let columns: Vec<ArrayRef> = vec![
        Arc::new(
            rows.iter()
                .map(|(k, _)| Some(k.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, p)| p.pid as i64)
                .collect::<Int64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, p)| Some(p.name.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, p)| Some(p.category.as_str()))
                .collect::<StringArray>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, p)| micros(&p.first_seen))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, p)| micros(&p.last_seen))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|(_, p)| Some(json(&without_arguments(p))))
                .collect::<StringArray>(),
        ),
    ];
    Ok(RecordBatch::try_new(processes_schema(), columns)?)
}

/// What of a process goes on disk: its program, never its arguments. Arguments carry
/// secrets (`mnemo add "…"` itself, tokens, passwords), and the inventory keeps for days;
/// the live answer still has the whole command line.
fn without_arguments(p: &ProcessEntry) -> ProcessEntry {
    let program = p.cmdline.split_whitespace().next().unwrap_or_default();
    ProcessEntry {
        cmdline: program.to_string(),
        ..p.clone()
    }
}

pub(super) async fn json_rows<T: serde::de::DeserializeOwned>(
    table: &Table,
    predicate: &Pred,
) -> Result<Vec<(i64, T)>, StoreError> {
    let batches = matching(table, predicate, None).await?;
    let mut out = Vec::new();
    for b in &batches {
        let time_col = if b.column_by_name("at").is_some() {
            "at"
        } else {
            "detected_at"
        };
        let (Some(times), Some(data)) = (
            b.column_by_name(time_col)
                .and_then(|c| c.as_any().downcast_ref::<Int64Array>()),
            b.column_by_name("data")
                .and_then(|c| c.as_any().downcast_ref::<StringArray>()),
        ) else {
            continue;
        };
        for i in 0..b.num_rows() {
            if data.is_valid(i) {
                if let Ok(v) = serde_json::from_str(data.value(i)) {
                    out.push((times.value(i), v));
                }
            }
        }
    }
    out.sort_by_key(|(t, _)| *t);
    Ok(out)
}

impl SystemTables {
    /// Snapshots in [since, until), oldest first; raw rows where they exist, minute rows before.
    pub async fn snapshots_between(
        &self,
        since: i64,
        until: i64,
    ) -> Result<Vec<Snapshot>, StoreError> {
        let rows: Vec<(i64, Snapshot)> = json_rows(
            &self.snapshots,
            &col("at").ge(since).and(col("at").lt(until)),
        )
        .await?;
        Ok(rows.into_iter().map(|(_, s)| s).collect())
    }

    pub async fn raw_snapshots_before(&self, before: i64) -> Result<Vec<Snapshot>, StoreError> {
        let rows: Vec<(i64, Snapshot)> = json_rows(
            &self.snapshots,
            &col("resolution").eq(RAW).and(col("at").lt(before)),
        )
        .await?;
        Ok(rows.into_iter().map(|(_, s)| s).collect())
    }

    /// First sightings (by process-life key) of processes seen since `since`.
    pub async fn process_first_seen(
        &self,
        since: i64,
    ) -> Result<std::collections::HashMap<String, String>, StoreError> {
        let columns = ["key", "first_seen"];
        let since = col("last_seen").ge(since);
        let batches = matching(&self.processes, &since, Some(&columns)).await?;
        let mut seen = std::collections::HashMap::new();
        for b in &batches {
            let keys = b
                .column_by_name("key")
                .and_then(|c| c.as_any().downcast_ref::<StringArray>());
            let firsts = b
                .column_by_name("first_seen")
                .and_then(|c| c.as_any().downcast_ref::<Int64Array>());
            if let (Some(keys), Some(firsts)) = (keys, firsts) {
                for i in 0..b.num_rows() {
                    seen.insert(
                        keys.value(i).to_string(),
                        mnemo_protocol::time::format_micros(firsts.value(i)),
                    );
                }
            }
        }
        Ok(seen)
    }

    pub async fn latest_profile(&self) -> Result<Option<SystemProfile>, StoreError> {
        let rows: Vec<(i64, SystemProfile)> =
            json_rows(&self.profiles, &col("detected_at").ge(0_i64)).await?;
        Ok(rows.into_iter().last().map(|(_, p)| p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_inventory_keeps_programs_not_arguments() {
        let entry = ProcessEntry {
            pid: 7,
            name: "mnemo".into(),
            cmdline: "/usr/bin/mnemo add my bank pin is 4321".into(),
            first_seen: "2026-11-23T00:00:00Z".into(),
            last_seen: "2026-11-23T00:00:00Z".into(),
            ..Default::default()
        };
        let batch = processes_batch(&[("7-1".into(), entry)]).unwrap();
        let stored = format!("{:?}", batch.column_by_name("data").unwrap());
        assert!(stored.contains("/usr/bin/mnemo"), "{stored}");
        assert!(
            !stored.contains("4321") && !stored.contains("bank"),
            "{stored}"
        );
    }
}
