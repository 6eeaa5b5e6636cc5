//! The sessions in memory: each row (texts in the clear), an active session's turn counter,
//! recent messages and running summary; and the reads and writes of the `sessions` table.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mnemo_protocol::session::{Message, Role, SessionSummary};
use mnemo_protocol::time::{format_micros, now_micros};

use super::summary::Said;
use super::Recent;
use crate::error::{Error, Result};
use crate::store::filter::current;
use crate::store::sessions::SessionRecord;
use crate::store::{col, Pred, Store, StoreError};

#[derive(Clone)]
pub struct Entry {
    pub row: SessionRecord,
    pub summary: Option<SessionSummary>,
    /// Turns given out so far.
    pub turns: u64,
    pub recent: Recent,
    running: Option<SessionSummary>,
}

impl Entry {
    pub fn new(row: SessionRecord, summary: Option<SessionSummary>) -> Self {
        Self {
            turns: row.message_count as u64,
            row,
            summary,
            recent: Recent::new(),
            running: None,
        }
    }
}

/// The last `keep` messages of `said`.
fn recent_of(said: &[Said], keep: usize) -> Recent {
    let from = said.len().saturating_sub(keep);
    said[from..].iter().map(|s| s.message.clone()).collect()
}

#[derive(Clone)]
pub struct Book {
    store: Arc<Store>,
    entries: Arc<Mutex<HashMap<String, Entry>>>,
}

fn unknown(id: &str) -> Error {
    Error::NotFound(format!(
        "no session `{id}`; `mnemo session list` shows them, `mnemo session start` opens one"
    ))
}

fn ended(id: &str, at: i64) -> Error {
    Error::Conflict(format!(
        "session `{id}` ended at {}; start a new one (session.start) to go on",
        format_micros(at)
    ))
}

impl Book {
    pub fn new(store: Arc<Store>) -> Self {
        Self {
            store,
            entries: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub async fn load(&self, keep: usize) -> Result<usize> {
        let sealing = self.store.sealing();
        let mut entries = HashMap::new();
        for mut r in self.store.sessions().rows(&Pred::All).await? {
            let open = |column: &str, text: &str| sealing.open_label(&r.id, column, text, r.sealed);
            r.cwd = r.cwd.as_deref().map(|c| open("cwd", c)).transpose()?;
            r.summary = r
                .summary
                .as_deref()
                .map(|s| open("summary", s))
                .transpose()?;
            r.sealed = false;
            let summary = r
                .summary
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok());
            let mut entry = Entry::new(r, summary);
            if entry.row.ended_at.is_none() {
                // Counted from the memories: the row is not written per message.
                let said = self.messages(&entry.row, None).await?;
                entry.turns = said.iter().map(|s| s.message.turn).max().unwrap_or(0);
                entry.row.last_message_at = said.last().map(|_| {
                    said.iter()
                        .filter_map(|s| mnemo_protocol::time::parse_micros(&s.message.at).ok())
                        .max()
                        .unwrap_or(entry.row.started_at)
                });
                entry.recent = recent_of(&said, keep);
            }
            entries.insert(entry.row.id.clone(), entry);
        }
        let n = entries.len();
        *self.lock() = entries;
        Ok(n)
    }

    pub fn active_count(&self) -> u64 {
        self.lock()
            .values()
            .filter(|e| e.row.ended_at.is_none())
            .count() as u64
    }

    /// Writes `rows` (sealed in an encrypted store) and waits for the commit.
    pub async fn write(&self, rows: &[SessionRecord]) -> std::result::Result<(), StoreError> {
        let sealing = self.store.sealing();
        let sealed: Vec<SessionRecord> = rows
            .iter()
            .map(|r| {
                let mut row = r.clone();
                let mut any = false;
                let mut seal = |column: &str, text: &str| {
                    let (text, sealed) = sealing.seal_label(&r.id, column, text);
                    any |= sealed;
                    text
                };
                row.cwd = r.cwd.as_deref().map(|c| seal("cwd", c));
                row.summary = r.summary.as_deref().map(|s| seal("summary", s));
                row.sealed = any;
                row
            })
            .collect();
        let op = self.store.sessions().upsert(&sealed)?;
        self.store.writer().submit(op).await.map(|_| ())
    }

    pub fn insert(&self, entry: Entry) {
        let mut entries = self.lock();
        let entry = match entries.remove(&entry.row.id) {
            // An end keeps what the active session knew of its messages.
            Some(old) => Entry {
                turns: entry.turns.max(old.turns),
                recent: old.recent,
                ..entry
            },
            None => entry,
        };
        entries.insert(entry.row.id.clone(), entry);
    }

    pub fn entry(&self, id: &str) -> Result<Entry> {
        self.lock().get(id).cloned().ok_or_else(|| unknown(id))
    }

    /// The row of an active session.
    pub fn active_row(&self, id: &str) -> Result<SessionRecord> {
        let entries = self.lock();
        let e = entries.get(id).ok_or_else(|| unknown(id))?;
        match e.row.ended_at {
            Some(at) => Err(ended(id, at)),
            None => Ok(e.row.clone()),
        }
    }

    /// The next turn of an active session, taken now so concurrent messages get distinct
    /// turns.
    pub fn reserve_turn(&self, id: &str) -> Result<(SessionRecord, u64)> {
        let mut entries = self.lock();
        let e = entries.get_mut(id).ok_or_else(|| unknown(id))?;
        if let Some(at) = e.row.ended_at {
            return Err(ended(id, at));
        }
        e.turns += 1;
        Ok((e.row.clone(), e.turns))
    }

    /// A turn whose message was refused: given back when no later one was taken.
    pub fn give_back_turn(&self, id: &str, turn: u64) {
        if let Some(e) = self.lock().get_mut(id) {
            if e.turns == turn {
                e.turns -= 1;
            }
        }
    }

    /// A message was stored: it joins the recent ones and the running summary is stale.
    pub fn said(&self, id: &str, message: Message, keep: usize) {
        if let Some(e) = self.lock().get_mut(id) {
            let at = e.recent.partition_point(|m| m.turn < message.turn);
            e.recent.insert(at, message);
            while e.recent.len() > keep {
                e.recent.pop_front();
            }
            e.row.last_message_at = Some(now_micros());
            e.running = None;
        }
    }

    /// An active session's recent messages as the store holds them now.
    pub fn reread(&self, id: &str, said: &[Said], keep: usize) {
        if let Some(e) = self.lock().get_mut(id) {
            e.recent = recent_of(said, keep);
            e.running = None;
        }
    }

    pub fn cached_running(&self, id: &str) -> Option<SessionSummary> {
        self.lock().get(id)?.running.clone()
    }

    pub fn cache_running(&self, id: &str, summary: &SessionSummary) {
        if let Some(e) = self.lock().get_mut(id) {
            e.running = Some(summary.clone());
        }
    }

    /// Every row with its turns so far.
    pub fn rows(&self) -> Vec<(SessionRecord, u64)> {
        self.lock()
            .values()
            .map(|e| (e.row.clone(), e.turns))
            .collect()
    }

    pub fn last_ended(&self, namespace: &str) -> Option<Entry> {
        self.lock()
            .values()
            .filter(|e| e.row.namespace == namespace && e.summary.is_some())
            .filter(|e| e.row.ended_at.is_some())
            .max_by_key(|e| (e.row.ended_at, e.row.id.clone()))
            .cloned()
    }

    /// Active sessions with no message (or start) since `cutoff`.
    pub fn silent_since(&self, cutoff: i64) -> Vec<String> {
        self.lock()
            .values()
            .filter(|e| e.row.ended_at.is_none())
            .filter(|e| e.row.last_message_at.unwrap_or(e.row.started_at) < cutoff)
            .map(|e| e.row.id.clone())
            .collect()
    }

    /// The session's messages in turn order (the last `last` of them when given), read from
    /// the memories.
    pub async fn messages(&self, row: &SessionRecord, last: Option<usize>) -> Result<Vec<Said>> {
        let rows = self
            .store
            .columns_of(
                &col("session_id").eq(row.id.as_str()).and(current()),
                &[
                    "id",
                    "content",
                    "metadata",
                    "created_at",
                    "occurred_at",
                    "salience",
                    "emotion_primary",
                    "emotion_intensity",
                ],
            )
            .await?;
        let mut said: Vec<(i64, Said)> = rows
            .into_iter()
            .filter_map(|r| {
                let meta: serde_json::Value = serde_json::from_str(&r.metadata).unwrap_or_default();
                if meta.get("session_summary").is_some() {
                    return None;
                }
                let role: Role = meta
                    .get("role")
                    .and_then(|v| v.as_str())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_default();
                let turn = meta.get("turn").and_then(|v| v.as_u64()).unwrap_or(0);
                let emotion = r.emotion().map(|e| (e.primary, e.intensity));
                let at = r.event_time();
                let message = Message {
                    memory_id: r.id,
                    role,
                    turn,
                    content: r.content,
                    at: format_micros(at),
                };
                Some((
                    at,
                    Said {
                        message,
                        salience: r.salience,
                        emotion,
                    },
                ))
            })
            .collect();
        said.sort_by_key(|(at, s)| (s.message.turn, *at));
        let mut said: Vec<Said> = said.into_iter().map(|(_, s)| s).collect();
        if let Some(last) = last {
            said.drain(..said.len().saturating_sub(last));
        }
        Ok(said)
    }

    /// Asks the LLM for the summary's text and keeps it when it answers (blocking).
    pub fn refine_with_llm(
        &self,
        llm: &crate::llm::Llm,
        mut row: SessionRecord,
        mut summary: SessionSummary,
        messages: &[Message],
    ) {
        const SYSTEM: &str = "You summarise a conversation between a person and their assistant \
for the assistant's memory. Keep names, decisions, feelings and anything the person said they \
would do. Write 2 to 4 plain sentences, no preamble.";
        let transcript: String = messages
            .iter()
            .map(|m| format!("{}: {}\n", m.role, m.content))
            .collect();
        match llm.complete(SYSTEM, &transcript) {
            Ok(text) => {
                summary.text = text;
                summary.written_by = "llm".into();
                row.summary = Some(serde_json::to_string(&summary).expect("plain data"));
                let write = tokio::runtime::Handle::current().block_on(self.write(&[row.clone()]));
                match write {
                    Ok(()) => self.insert(Entry::new(row, Some(summary))),
                    Err(e) => tracing::warn!("keeping the LLM's session summary failed: {e}"),
                }
            }
            Err(e) => tracing::info!("the LLM wrote no session summary ({e}); the rule's stays"),
        }
    }
}
