//! Sessions: a conversation or task as it happens. Each message is stored through ingest as
//! a memory of the session (role and turn in its metadata), so the conversation is the
//! memory. An active session keeps its recent messages in memory (short-term memory); its
//! row is written when it starts and when it ends, never per message — after a crash the
//! count and the recent messages are read back from the memories. The end (asked for, or
//! after a silence) writes the session's summary, stores it as a summary memory of the
//! session, and marks consolidation due.

mod book;
pub mod summary;
mod transfer;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mnemo_protocol::memory::{AddParams, Filter, ForgetParams, MemoryKind};
use mnemo_protocol::session::{
    ListParams, Message, MessageParams, Session, SessionKind, SessionSummary, StartParams,
};
use mnemo_protocol::time::{format_micros, now_micros};
use serde_json::{json, Value};

use crate::config::{LlmConfig, SessionsConfig};
use crate::consolidate::Consolidation;
use crate::error::{Error, Result};
use crate::ingest::{validate_label, Ingest};
use crate::paging::Page;
use crate::shutdown::Shutdown;
use crate::store::sessions::SessionRecord;
use crate::store::Store;
use crate::usermodel::UserModel;
use book::{Book, Entry};

/// What the handles of a session service are.
pub struct Sessions {
    ingest: Arc<Ingest>,
    usermodel: Arc<UserModel>,
    consolidation: Arc<Consolidation>,
    config: SessionsConfig,
    llm: LlmConfig,
    /// The profile names a session may name.
    profiles: Vec<String>,
    book: Book,
    /// Active sessions, for the snapshots.
    active: Arc<AtomicU64>,
    /// One end at a time, so a session is summarised once.
    ending: tokio::sync::Mutex<()>,
}

/// The short-term memory of a session: its recent messages and what it is about so far.
pub struct ShortTerm {
    pub session: Session,
    pub recent: Vec<Message>,
    pub summary: Option<SessionSummary>,
}

impl Sessions {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store: Arc<Store>,
        ingest: Arc<Ingest>,
        usermodel: Arc<UserModel>,
        consolidation: Arc<Consolidation>,
        config: SessionsConfig,
        llm: LlmConfig,
        profiles: Vec<String>,
        active: Arc<AtomicU64>,
    ) -> Self {
        Self {
            ingest,
            usermodel,
            consolidation,
            config,
            llm,
            profiles,
            book: Book::new(store),
            active,
            ending: Default::default(),
        }
    }

    /// Reads the sessions back, and each active one's messages.
    pub async fn load(&self) -> Result<usize> {
        let n = self.book.load(self.config.recent_messages).await?;
        self.count_active();
        Ok(n)
    }

    /// Sessions open now.
    pub fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }

    fn count_active(&self) {
        self.active
            .store(self.book.active_count(), Ordering::Relaxed);
    }

    pub async fn start(&self, p: StartParams) -> Result<Session> {
        for (what, v) in [
            ("source", &p.source),
            ("namespace", &p.namespace),
            ("profile", &p.profile),
        ] {
            validate_label(what, v.as_deref()).map_err(Error::Invalid)?;
        }
        if let Some(profile) = &p.profile {
            if !self.profiles.contains(profile) {
                return Err(Error::invalid(format!(
                    "unknown profile `{profile}`; the profiles are {} (add one under [context.profiles] in the config)",
                    self.profiles.join(", ")
                )));
            }
        }
        let project_id = self
            .project_of(p.project.as_deref(), p.cwd.as_deref())
            .await?;
        let id = uuid::Uuid::now_v7().to_string();
        let row = SessionRecord {
            id: id.clone(),
            namespace: p
                .namespace
                .unwrap_or_else(|| mnemo_protocol::memory::DEFAULT_NAMESPACE.into()),
            kind: p.kind.unwrap_or_default().to_string(),
            source: p.source,
            profile: p.profile,
            active_project_id: project_id,
            cwd: p.cwd,
            started_at: now_micros(),
            consolidation_status: "none".into(),
            ..Default::default()
        };
        self.book.write(std::slice::from_ref(&row)).await?;
        let session = self.view(&row, None);
        self.book.insert(Entry::new(row, None));
        self.count_active();
        Ok(session)
    }

    /// The project a session works in: the one named (it must be known), else the one its
    /// working directory lies in.
    async fn project_of(&self, project: Option<&str>, cwd: Option<&str>) -> Result<Option<String>> {
        let projects = self.usermodel.projects();
        if let Some(id) = project {
            return match projects.get(id) {
                Some(p) => Ok(Some(p.id)),
                None => Err(Error::NotFound(format!(
                    "no project `{id}`; `mnemo projects` lists the known ones, or give the session a cwd"
                ))),
            };
        }
        let Some(cwd) = cwd else { return Ok(None) };
        let path = std::path::Path::new(cwd);
        if !path.is_absolute() {
            return Err(Error::invalid(format!(
                "cwd `{cwd}` is not absolute; give the full path"
            )));
        }
        if !path.exists() {
            return Err(Error::invalid(format!("cwd `{cwd}` does not exist")));
        }
        Ok(projects
            .root_of(cwd)
            .await
            .map(|root| projects.id_of(&root)))
    }

    /// Adds a message to an active session as a memory of it.
    pub async fn message(&self, p: MessageParams) -> Result<(String, u64)> {
        let mut metadata = match p.metadata {
            None => serde_json::Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(Error::invalid("metadata must be a JSON object")),
        };
        let (row, turn) = self.book.reserve_turn(&p.session_id)?;
        metadata.insert("role".into(), json!(p.role.as_str()));
        metadata.insert("turn".into(), json!(turn));
        if let Some(cwd) = &row.cwd {
            metadata.entry("cwd").or_insert_with(|| json!(cwd));
        }
        let item = AddParams {
            content: p.content,
            kind: Some(MemoryKind::Episodic),
            source: row.source.clone(),
            session_id: Some(row.id.clone()),
            occurred_at: p.occurred_at,
            metadata: Some(Value::Object(metadata)),
            namespace: Some(row.namespace.clone()),
            ..Default::default()
        };
        let added = match self.ingest.add(vec![item], false).await {
            Ok(mut records) => records.remove(0),
            Err(e) => {
                self.book.give_back_turn(&row.id, turn);
                return Err(e);
            }
        };
        self.book.said(
            &row.id,
            Message {
                memory_id: added.id.clone(),
                role: p.role,
                turn,
                content: added.content.clone(),
                at: format_micros(added.event_time()),
            },
            self.config.recent_messages,
        );
        Ok((added.id, turn))
    }

    /// Ends an active session: its summary is written and stored as a memory of it.
    pub async fn end(&self, id: &str) -> Result<Session> {
        let _one = self.ending.lock().await;
        let row = self.book.active_row(id)?;
        let said = self.book.messages(&row, None).await?;
        let (mut ended, summary) = self.summarized(&row, &said);
        ended.ended_at = Some(now_micros());
        ended.consolidation_status = "queued".into();
        if let Some(s) = &summary {
            self.store_summary(&ended, s).await?;
        }
        self.book.write(&[ended.clone()]).await?;
        self.book.insert(Entry::new(ended.clone(), summary.clone()));
        self.count_active();
        self.consolidation.mark_dirty();
        let llm = crate::llm::Llm::from_config(&self.llm);
        if let (Some(llm), Some(summary)) = (llm, summary) {
            tokio::task::spawn_blocking({
                let messages: Vec<Message> = said.into_iter().map(|s| s.message).collect();
                let book = self.book.clone();
                let ended = ended.clone();
                move || book.refine_with_llm(&llm, ended, summary, &messages)
            });
        }
        Ok(self.view(&ended, None))
    }

    /// `row` with its message count and the summary of `said` (none when it is empty).
    fn summarized(
        &self,
        row: &SessionRecord,
        said: &[summary::Said],
    ) -> (SessionRecord, Option<SessionSummary>) {
        let summary = (!said.is_empty()).then(|| {
            let names_in = |text: &str| self.ingest.mentions(&row.namespace, text);
            summary::summarize(&describe(row), said, &names_in)
        });
        let mut r = row.clone();
        r.message_count = said.len() as i64;
        r.summary = summary
            .as_ref()
            .map(|s| serde_json::to_string(s).expect("plain data"));
        r.emotional_arc = summary.as_ref().map(|s| s.emotional_arc.join(" → "));
        (r, summary)
    }

    /// The summary as a memory of the session, so recall finds what a past session was about.
    async fn store_summary(&self, row: &SessionRecord, summary: &SessionSummary) -> Result<()> {
        let item = AddParams {
            content: summary.text.clone(),
            kind: Some(MemoryKind::Summary),
            source: row.source.clone(),
            session_id: Some(row.id.clone()),
            metadata: Some(json!({ "session_summary": true })),
            namespace: Some(row.namespace.clone()),
            ..Default::default()
        };
        self.ingest.add(vec![item], false).await?;
        Ok(())
    }

    pub async fn get(&self, id: &str, messages: usize) -> Result<ShortTerm> {
        let entry = self.book.entry(id)?;
        let said = self.book.messages(&entry.row, Some(messages)).await?;
        let summary = match &entry.summary {
            Some(s) => Some(s.clone()),
            None => self.running_summary(&entry.row).await?,
        };
        Ok(ShortTerm {
            session: self.view(&entry.row, Some(entry.turns)),
            recent: said.into_iter().map(|s| s.message).collect(),
            summary,
        })
    }

    /// What an active session is about so far (none before its first message).
    async fn running_summary(&self, row: &SessionRecord) -> Result<Option<SessionSummary>> {
        if let Some(cached) = self.book.cached_running(&row.id) {
            return Ok(Some(cached));
        }
        let said = self.book.messages(row, None).await?;
        if said.is_empty() {
            return Ok(None);
        }
        let names_in = |text: &str| self.ingest.mentions(&row.namespace, text);
        let summary = summary::summarize(&format!("{} so far", describe(row)), &said, &names_in);
        self.book.cache_running(&row.id, &summary);
        Ok(Some(summary))
    }

    /// The short-term memory of a session for a context package: its recent messages (from
    /// memory, no read) and its running summary (or its summary, once ended).
    pub async fn short_term(&self, id: &str) -> Result<ShortTerm> {
        let entry = self.book.entry(id)?;
        let summary = match &entry.summary {
            Some(s) => Some(s.clone()),
            None => self.running_summary(&entry.row).await?,
        };
        let recent: Vec<Message> = match entry.row.ended_at {
            None => entry.recent.iter().cloned().collect(),
            Some(_) => self
                .book
                .messages(&entry.row, Some(self.config.recent_messages))
                .await?
                .into_iter()
                .map(|s| s.message)
                .collect(),
        };
        Ok(ShortTerm {
            session: self.view(&entry.row, Some(entry.turns)),
            recent,
            summary,
        })
    }

    /// The namespace and working directory of a known session, for what joins it (an
    /// episode); not found names what to do.
    pub fn place_of(&self, id: &str) -> Result<(String, Option<String>)> {
        let entry = self.book.entry(id)?;
        Ok((entry.row.namespace, entry.row.cwd))
    }

    /// The most recently ended session of `namespace` that has a summary.
    pub fn last_ended(&self, namespace: &str) -> Option<(Session, SessionSummary)> {
        let entry = self.book.last_ended(namespace)?;
        let summary = entry.summary.clone()?;
        Some((self.view(&entry.row, None), summary))
    }

    /// Why [`Self::last_ended`] found none, in words for `context --explain`.
    pub fn why_no_last_ended(&self, namespace: &str) -> &'static str {
        let ended = self
            .book
            .rows()
            .into_iter()
            .any(|(row, _)| row.namespace == namespace && row.ended_at.is_some());
        if ended {
            "no session given, and no ended session has a summary yet (summaries are written \
             after a session ends)"
        } else {
            "no session given and none has ended yet"
        }
    }

    pub fn list(
        &self,
        p: &ListParams,
    ) -> std::result::Result<(Vec<Session>, u64, Option<String>), String> {
        let page = Page::new(
            p.limit,
            mnemo_protocol::session::MAX_LIST,
            p.cursor.as_deref(),
        )?;
        let mut rows: Vec<(SessionRecord, u64)> = self
            .book
            .rows()
            .into_iter()
            .filter(|(r, _)| p.active.is_none_or(|a| a == r.ended_at.is_none()))
            .filter(|(r, _)| p.namespace.as_ref().is_none_or(|n| *n == r.namespace))
            .collect();
        rows.sort_by(|a, b| {
            b.0.started_at
                .cmp(&a.0.started_at)
                .then(b.0.id.cmp(&a.0.id))
        });
        let total = rows.len() as u64;
        let views = rows
            .iter()
            .map(|(r, turns)| self.view(r, Some(*turns)))
            .collect();
        let (sessions, next) = page.of(views);
        Ok((sessions, total, next))
    }

    /// After a forget: an active session's recent messages are read again, and an ended
    /// session that lost messages gets its summary (row and memory) written again from what
    /// remains, so no summary quotes what was forgotten.
    pub async fn forgotten(&self) -> Result<()> {
        let _one = self.ending.lock().await;
        for (row, _) in self.book.rows() {
            let said = self.book.messages(&row, None).await?;
            if row.ended_at.is_none() {
                self.book
                    .reread(&row.id, &said, self.config.recent_messages);
                continue;
            }
            if said.len() as i64 == row.message_count {
                continue;
            }
            let (kept, summary) = self.summarized(&row, &said);
            self.ingest
                .forget(ForgetParams {
                    ids: Vec::new(),
                    filter: Some(Filter {
                        session_id: Some(row.id.clone()),
                        kind: Some(MemoryKind::Summary),
                        ..Default::default()
                    }),
                })
                .await?;
            if let Some(s) = &summary {
                self.store_summary(&kept, s).await?;
            }
            self.book.write(std::slice::from_ref(&kept)).await?;
            self.book.insert(Entry::new(kept, summary));
        }
        Ok(())
    }

    /// After `mnemo encrypt`: every row written again, sealed.
    pub async fn reseal(&self) -> Result<()> {
        let rows: Vec<SessionRecord> = self.book.rows().into_iter().map(|(r, _)| r).collect();
        self.book.write(&rows).await?;
        Ok(())
    }

    /// The protocol's view of a row; `turns`: the messages so far of an active session.
    fn view(&self, r: &SessionRecord, turns: Option<u64>) -> Session {
        let summary: Option<SessionSummary> = r
            .summary
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok());
        Session {
            id: r.id.clone(),
            namespace: r.namespace.clone(),
            kind: r.kind.parse().unwrap_or_default(),
            source: r.source.clone(),
            profile: r.profile.clone(),
            project_id: r.active_project_id.clone(),
            cwd: r.cwd.clone(),
            started_at: format_micros(r.started_at),
            ended_at: r.ended_at.map(format_micros),
            last_message_at: r.last_message_at.map(format_micros),
            message_count: match r.ended_at {
                Some(_) => r.message_count as u64,
                None => turns.unwrap_or(r.message_count as u64),
            },
            summary,
            consolidation_status: self.consolidation_status(r),
        }
    }

    /// `none` while active; `queued` until a consolidation run completes after the end.
    fn consolidation_status(&self, r: &SessionRecord) -> String {
        let Some(ended) = r.ended_at else {
            return "none".into();
        };
        let done = self
            .consolidation
            .last_completed_start()
            .is_some_and(|started| started >= ended);
        if done { "done" } else { "queued" }.into()
    }

    /// Ends the sessions silent for longer than the config allows, every minute, until
    /// shutdown.
    pub async fn end_silent(self: Arc<Self>, shutdown: Shutdown) {
        let minutes = self.config.end_after_silence_minutes;
        if minutes == 0 {
            return;
        }
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tokio::select! {
                _ = shutdown.requested() => return,
                _ = tick.tick() => {}
            }
            let cutoff = now_micros() - minutes as i64 * 60_000_000;
            for id in self.book.silent_since(cutoff) {
                match self.end(&id).await {
                    Ok(_) => {
                        tracing::info!(session = %id, "ended a session silent for {minutes} minutes")
                    }
                    Err(e) => tracing::warn!(session = %id, "ending a silent session failed: {e}"),
                }
            }
        }
    }
}

/// "Coding session", "Chat", "Task".
fn describe(r: &SessionRecord) -> String {
    match r.kind.parse().unwrap_or_default() {
        SessionKind::Chat => "Chat".into(),
        SessionKind::Task => "Task".into(),
        SessionKind::Coding => "Coding session".into(),
    }
}

/// The recent messages kept for an active session, oldest first.
pub type Recent = VecDeque<Message>;
