//! Sessions out and in for `memory.export` / `memory.import`: each with its kind, times,
//! place and summary, so an imported store lists the same sessions (their messages are
//! memories, exported with the memories).

use mnemo_protocol::session::Session;
use mnemo_protocol::time::parse_micros;
use mnemo_protocol::transfer::{ImportResult, Record};

use super::book::Entry;
use super::Sessions;
use crate::error::{Error, Result};
use crate::ingest::validate_label;
use crate::store::sessions::SessionRecord;

/// The row an exported session describes, checked.
fn imported(s: &Session) -> std::result::Result<SessionRecord, String> {
    if s.id.trim().is_empty() || s.namespace.trim().is_empty() {
        return Err("a session needs an id and a namespace".into());
    }
    validate_label("session id", Some(&s.id))?;
    validate_label("namespace", Some(&s.namespace))?;
    validate_label("source", s.source.as_deref())?;
    validate_label("profile", s.profile.as_deref())?;
    let time = |what: &str, t: &str| parse_micros(t).map_err(|e| format!("{what}: {e}"));
    let started_at = time("started_at", &s.started_at)?;
    let ended_at = s
        .ended_at
        .as_deref()
        .map(|t| time("ended_at", t))
        .transpose()?;
    let last_message_at = s
        .last_message_at
        .as_deref()
        .map(|t| time("last_message_at", t))
        .transpose()?;
    let summary = s
        .summary
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| e.to_string())?;
    Ok(SessionRecord {
        id: s.id.clone(),
        namespace: s.namespace.clone(),
        kind: s.kind.as_str().into(),
        source: s.source.clone(),
        profile: s.profile.clone(),
        active_project_id: s.project_id.clone(),
        cwd: s.cwd.clone(),
        started_at,
        ended_at,
        last_message_at,
        message_count: s.message_count as i64,
        summary,
        emotional_arc: s.summary.as_ref().map(|s| s.emotional_arc.join(" → ")),
        consolidation_status: if ended_at.is_some() { "queued" } else { "none" }.into(),
        sealed: false,
    })
}

impl Sessions {
    /// Every session (of `namespace`), by id.
    pub fn exported(&self, namespace: Option<&str>) -> Vec<Record> {
        let mut rows = self.book.rows();
        rows.retain(|(r, _)| namespace.is_none_or(|n| n == r.namespace));
        rows.sort_by(|a, b| a.0.id.cmp(&b.0.id));
        rows.iter()
            .map(|(r, turns)| Record::Session(Box::new(self.view(r, Some(*turns)))))
            .collect()
    }

    /// The session records among `records`, checked, as rows for [`Sessions::import`]. Apart
    /// from it so an import checks every kind of record before it writes any.
    pub fn checked(records: &[Record]) -> Result<Vec<SessionRecord>> {
        let mut rows = Vec::new();
        for (i, record) in records.iter().enumerate() {
            let Record::Session(s) = record else {
                continue;
            };
            let row = imported(s)
                .map_err(|e| Error::invalid(format!("records[{i}]: {e}; nothing was imported")))?;
            rows.push(row);
        }
        Ok(rows)
    }

    /// Writes checked session rows; sessions already held (by id) are skipped.
    pub async fn import(&self, checked: Vec<SessionRecord>) -> Result<ImportResult> {
        let mut rows = Vec::new();
        let mut skipped = 0;
        for row in checked {
            let held = self.book.entry(&row.id).is_ok();
            if held || rows.iter().any(|r: &SessionRecord| r.id == row.id) {
                skipped += 1;
            } else {
                rows.push(row);
            }
        }
        if rows.is_empty() {
            return Ok(ImportResult { added: 0, skipped });
        }
        self.book.write(&rows).await?;
        let added = rows.len() as u64;
        for row in rows {
            let summary = row
                .summary
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok());
            self.book.insert(Entry::new(row, summary));
        }
        Ok(ImportResult { added, skipped })
    }
}
