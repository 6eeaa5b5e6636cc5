//! The user model: beliefs read from memories at ingest (and set explicitly), weighed against
//! what is already believed ([`policy`]), kept bi-temporally — a replaced belief is closed,
//! never overwritten — and assembled into preferences and identity. Every belief is held in
//! memory (a person's model is thousands of rows, not millions) and each change is written
//! through the store's writer before the request that caused it is answered.

mod identity;
mod meaning;
mod policy;
pub mod projects;
#[cfg(test)]
mod sets;
mod slots;
mod talk;
mod transfer;
pub mod vectors;
pub mod views;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use mnemo_protocol::belief::{BeliefSource, BeliefType, PreferenceSetParams, USER};
use mnemo_protocol::graph::{EdgeType, Node};
use mnemo_protocol::memory::{MemoryKind, DEFAULT_NAMESPACE, MAX_LABEL_BYTES};
use mnemo_protocol::time::now_micros;

use crate::config::UserModelConfig;
use crate::embed::EmbedService;
use crate::error::{Error, Result};
use crate::store::beliefs::BeliefRecord;
use crate::store::edges::EdgeRecord;
use crate::store::filter::current;
use crate::store::{col, MemoryRecord, Pred, Store, StoreError};
use crate::understand::beliefs::{
    extract, extract_to, key_stems, preference_statement, statement, Signal, LEFT, OPEN,
};
use crate::understand::entities::fold;

pub use policy::confidence;
use policy::judge;
use slots::{slot, Beliefs};

/// How sure a belief set by the person is.
const EXPLICIT_CONFIDENCE: f32 = 0.95;
/// What a memory whose fact was superseded keeps of its score in recall.
pub const SUPERSEDED_FACTOR: f32 = 0.5;

pub struct UserModel {
    store: Arc<Store>,
    /// Embeds each statement after it is written ([`vectors`]), when told it is due.
    embed: EmbedService,
    vectors_due: tokio::sync::Notify,
    /// Every belief, current and past, by id; texts in the clear.
    beliefs: Mutex<Beliefs>,
    /// The vectors of the topics beliefs were weighed on by meaning ([`meaning`]).
    topics: Mutex<std::collections::HashMap<String, Vec<f32>>>,
    /// One change at a time, so two writers never judge against the same state.
    changing: tokio::sync::Mutex<()>,
    /// Read beliefs from new memories (`[usermodel] extract` in the config).
    extract: bool,
    /// Let the configured LLM read them again while idle (`[usermodel] llm_refine`), this
    /// many a consolidation run at most.
    llm_refine: bool,
    refine_per_run: usize,
    projects: projects::Projects,
    /// Who each turn of a chat is said to.
    talk: talk::Talk,
}

/// What one change wrote: rows to upsert, rows to delete, edges between memories.
#[derive(Default)]
struct Changes {
    rows: HashSet<String>,
    /// Of `rows`, those not in the table yet: appended rather than merged.
    fresh: HashSet<String>,
    deleted: Vec<String>,
    edges: Vec<EdgeRecord>,
    /// Written by the embedding itself: rows still without a vector failed to embed, and
    /// wait for the next change rather than asking again at once.
    embedded: bool,
}

impl UserModel {
    pub fn new(store: Arc<Store>, embed: EmbedService, config: &UserModelConfig) -> Self {
        Self {
            store: store.clone(),
            embed,
            vectors_due: tokio::sync::Notify::new(),
            beliefs: Mutex::default(),
            topics: Mutex::default(),
            changing: tokio::sync::Mutex::default(),
            extract: config.extract,
            llm_refine: config.llm_refine,
            refine_per_run: config.llm_refine_per_run,
            projects: projects::Projects::new(store.clone()),
            talk: talk::Talk::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Beliefs> {
        self.beliefs.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn projects(&self) -> &projects::Projects {
        &self.projects
    }

    /// Reads the tables (opening sealed texts); answers how many beliefs there are.
    pub async fn load(&self) -> std::result::Result<usize, StoreError> {
        self.projects.load().await?;
        let rows = self.store.beliefs().rows(&Pred::All).await?;
        let sealing = self.store.sealing();
        let mut beliefs = Beliefs::default();
        for mut r in rows {
            let open = |column: &str, text: &str| sealing.open_label(&r.id, column, text, r.sealed);
            r.subject = open("subject", &r.subject)?;
            r.predicate = open("predicate", &r.predicate)?;
            r.object = open("object", &r.object)?;
            r.statement = open("statement", &r.statement)?;
            r.sealed = false;
            beliefs.insert(r);
        }
        let n = beliefs.len();
        *self.lock() = beliefs;
        Ok(n)
    }

    /// Reads what new current memories say and weighs it against what is believed.
    pub async fn observe(&self, records: &[MemoryRecord]) -> Result<()> {
        if !self.extract {
            return Ok(());
        }
        let said: Vec<(&MemoryRecord, Signal)> = records
            .iter()
            .filter(|r| !r.is_summary && r.kind != MemoryKind::Summary && r.is_the_persons())
            .flat_map(|r| {
                let listener = self.talk.listener(r);
                extract_to(&r.content, r.event_time(), listener.as_deref())
                    .into_iter()
                    .map(move |s| (r, s))
            })
            .collect();
        if said.is_empty() {
            return Ok(());
        }
        // Applied and queued one change at a time; the commit is awaited after, so adds from
        // many clients commit together.
        let pending = {
            let _one = self.changing.lock().await;
            let now = now_micros();
            let mut changes = Changes::default();
            {
                let mut beliefs = self.lock();
                for (r, s) in said {
                    apply(&mut beliefs, read_from(r, s, RULES), now, &mut changes);
                }
            }
            self.queue(changes).await?
        };
        pending.committed().await
    }

    /// A memory's text was changed (`memory.update`): what the new version says is weighed as
    /// any new memory's, and the beliefs the old version alone said, which the new one no
    /// longer says, are closed where it begins (kept as history, never deleted); a belief
    /// other memories also say only loses this one's evidence.
    pub async fn revise(&self, old: &MemoryRecord, new: &MemoryRecord) -> Result<()> {
        let said: Vec<Signal> = if self.extract && new.is_the_persons() && !new.is_summary {
            extract(&new.content, new.event_time())
        } else {
            Vec::new()
        };
        let _one = self.changing.lock().await;
        let now = now_micros();
        let mut changes = Changes::default();
        {
            let mut beliefs = self.lock();
            let mut successors: Vec<String> = Vec::new();
            for s in said {
                let read = read_from(new, s, RULES);
                let id = read.id.clone();
                let (repeated, _) = apply(&mut beliefs, read, now, &mut changes);
                successors.push(repeated.unwrap_or(id));
            }
            let lineage = &old.lineage;
            let stale: Vec<String> = beliefs
                .values()
                .filter(|b| b.valid_to.is_none() && b.evidence.contains(lineage))
                .filter(|b| !successors.contains(&b.id))
                .map(|b| b.id.clone())
                .collect();
            for id in stale {
                let b = beliefs.get_mut(&id).expect("listed above");
                if b.evidence.len() > 1 {
                    let before = b.evidence.len();
                    let base = 1.0 - (1.0 - b.confidence).powf(1.0 / before as f32);
                    b.evidence.retain(|l| l != lineage);
                    b.confidence = confidence(base, b.evidence.len());
                    changes.rows.insert(id);
                    continue;
                }
                // The new version's belief of the same slot, when it has one, replaced it.
                let key = slot(b);
                let by = successors
                    .iter()
                    .find(|s| beliefs.get(*s).is_some_and(|n| slot(n) == key))
                    .cloned()
                    .unwrap_or_default();
                close(&mut beliefs, &id, &by, new.valid_from, &mut changes);
                if by.is_empty() {
                    if let Some(b) = beliefs.get_mut(&id) {
                        b.superseded_by = None;
                    }
                }
            }
        }
        self.write(changes).await
    }

    /// Whether the configured LLM reads memories again for what the rules missed
    /// (`[usermodel] llm_refine`); the beliefs it reads are kept only while extraction is on.
    pub fn refines(&self) -> bool {
        self.llm_refine && self.refine_per_run > 0
    }

    /// Most memories one consolidation run has the LLM read.
    pub fn refine_per_run(&self) -> usize {
        self.refine_per_run
    }

    /// Beliefs `read_by` (the configured LLM) found in `memory`, which the rules read before:
    /// weighed like the rules' own, so what the rules already hold is only repeated. A memory
    /// that stopped being current meanwhile (forgotten or replaced) yields nothing: a late
    /// reading never outlives a forget. Answers how many beliefs were new.
    pub async fn refine(
        &self,
        memory: &MemoryRecord,
        said: Vec<Signal>,
        read_by: &str,
    ) -> Result<usize> {
        if !self.extract || said.is_empty() || !memory.is_the_persons() {
            return Ok(0);
        }
        // Under the same lock a forget's retraction takes, so one of the two sees the other.
        let _one = self.changing.lock().await;
        let still = current().and(col("id").eq(&memory.id));
        if self.store.count(&still).await? == 0 {
            return Ok(0);
        }
        let now = now_micros();
        let mut changes = Changes::default();
        let mut added = 0;
        {
            let mut beliefs = self.lock();
            for s in said {
                let (repeated, _) = apply(
                    &mut beliefs,
                    read_from(memory, s, read_by),
                    now,
                    &mut changes,
                );
                added += usize::from(repeated.is_none());
            }
        }
        self.write(changes).await?;
        Ok(added)
    }

    /// Records a preference the person set; it replaces any current one of the same key.
    pub async fn set_preference(
        &self,
        p: PreferenceSetParams,
    ) -> Result<(BeliefRecord, Vec<String>)> {
        for (what, v) in [("domain", &p.domain), ("key", &p.key), ("value", &p.value)] {
            if v.trim().is_empty() {
                return Err(Error::invalid(format!(
                    "{what} is empty; a preference needs a domain (coding, food, writing, …), a key and a value"
                )));
            }
            if v.len() > MAX_LABEL_BYTES {
                return Err(Error::invalid(format!(
                    "{what} is over {MAX_LABEL_BYTES} bytes"
                )));
            }
        }
        let _one = self.changing.lock().await;
        let now = now_micros();
        let (key, value) = (p.key.trim().to_string(), p.value.trim().to_string());
        let new = BeliefRecord {
            id: uuid::Uuid::now_v7().to_string(),
            namespace: p.namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.into()),
            subject: USER.into(),
            statement: preference_statement(USER, &key, &value),
            predicate: key,
            object: value,
            belief_type: BeliefType::Preference,
            domain: Some(p.domain.trim().to_lowercase()),
            confidence: EXPLICIT_CONFIDENCE,
            source: BeliefSource::Explicit,
            valid_from: now,
            ..Default::default()
        };
        let id = new.id.clone();
        let mut changes = Changes::default();
        let superseded = {
            let mut beliefs = self.lock();
            apply(&mut beliefs, new, now, &mut changes)
        };
        self.write(changes).await?;
        let id = superseded.0.unwrap_or(id);
        let belief = self.lock().get(&id).cloned().expect("just written");
        Ok((belief, superseded.1))
    }

    /// Deletes a preference by id, or every version of a domain's key; how many went.
    pub async fn forget_preferences(
        &self,
        matching: impl Fn(&BeliefRecord) -> bool,
    ) -> Result<u64> {
        let _one = self.changing.lock().await;
        let mut changes = Changes::default();
        {
            let mut beliefs = self.lock();
            let ids: Vec<String> = beliefs
                .values()
                .filter(|b| b.belief_type == BeliefType::Preference && matching(b))
                .map(|b| b.id.clone())
                .collect();
            for id in ids {
                remove(&mut beliefs, &id, &mut changes);
            }
        }
        let n = changes.deleted.len() as u64;
        self.write(changes).await?;
        Ok(n)
    }

    /// Memories that were forgotten (their lineages): beliefs resting only on them go, the
    /// others lose that evidence and some confidence.
    pub async fn retract(&self, lineages: &HashSet<String>) -> Result<()> {
        if lineages.is_empty() {
            return Ok(());
        }
        let _one = self.changing.lock().await;
        let mut changes = Changes::default();
        {
            let mut beliefs = self.lock();
            let touched: Vec<String> = beliefs
                .values()
                .filter(|b| b.evidence.iter().any(|l| lineages.contains(l)))
                .map(|b| b.id.clone())
                .collect();
            for id in touched {
                let b = beliefs.get_mut(&id).expect("listed above");
                let before = b.evidence.len();
                // The first evidence is the memory it was read from.
                let source_went = memory_of(b).is_some_and(|l| lineages.contains(l));
                b.evidence.retain(|l| !lineages.contains(l));
                if b.evidence.is_empty() && b.source != BeliefSource::Explicit {
                    remove(&mut beliefs, &id, &mut changes);
                    continue;
                }
                // The base the confidence grew from, then grown again from what is left.
                let base = 1.0 - (1.0 - b.confidence).powf(1.0 / before as f32);
                b.confidence = confidence(base, b.evidence.len());
                if source_went {
                    b.source_memory_id = None;
                }
                changes.rows.insert(id);
            }
        }
        self.write(changes).await
    }

    /// After `mnemo encrypt`: every row written again, sealed.
    pub async fn reseal(&self) -> Result<()> {
        self.projects.reseal().await?;
        let _one = self.changing.lock().await;
        let ids: HashSet<String> = self.lock().keys().cloned().collect();
        self.store
            .writer()
            .submit(self.store.beliefs().delete_all())
            .await?;
        self.write(Changes {
            rows: ids,
            ..Default::default()
        })
        .await
    }

    /// Writes `changes` and waits for their commit.
    async fn write(&self, changes: Changes) -> Result<()> {
        self.queue(changes).await?.committed().await
    }

    /// Queues the writes of `changes` in turn; their commit is awaited apart
    /// ([`Pending::committed`]), so the change lock need not be held through it.
    async fn queue(&self, changes: Changes) -> Result<Pending> {
        let sealing = self.store.sealing();
        let rows: Vec<BeliefRecord> = {
            let beliefs = self.lock();
            changes
                .rows
                .iter()
                .filter_map(|id| beliefs.get(id))
                .map(|b| {
                    let mut row = b.clone();
                    let (subject, sealed) = sealing.seal_label(&b.id, "subject", &b.subject);
                    row.subject = subject;
                    row.predicate = sealing.seal_label(&b.id, "predicate", &b.predicate).0;
                    row.object = sealing.seal_label(&b.id, "object", &b.object).0;
                    row.statement = sealing.seal_label(&b.id, "statement", &b.statement).0;
                    row.sealed = sealed;
                    row
                })
                .collect()
        };
        let table = self.store.beliefs();
        let writer = self.store.writer();
        let mut queued = Vec::new();
        if !rows.is_empty() {
            let due = !changes.embedded && rows.iter().any(|b| self.lacks_vector(b));
            let (fresh, known): (Vec<BeliefRecord>, Vec<BeliefRecord>) = rows
                .into_iter()
                .partition(|b| changes.fresh.contains(&b.id));
            if !fresh.is_empty() {
                queued.push(writer.queue(table.append(&fresh)?).await?);
            }
            if !known.is_empty() {
                queued.push(writer.queue(table.upsert(&known)?).await?);
            }
            if due {
                self.vectors_due.notify_one();
            }
        }
        for chunk in changes.deleted.chunks(1000) {
            queued.push(writer.queue(table.delete_ids(chunk)).await?);
        }
        if !changes.edges.is_empty() {
            queued.push(
                writer
                    .queue(self.store.edges().upsert(&changes.edges)?)
                    .await?,
            );
        }
        Ok(Pending(queued))
    }

    /// Every belief matching `keep`, cloned (the views sort and page them).
    pub fn matching(&self, keep: impl Fn(&BeliefRecord) -> bool) -> Vec<BeliefRecord> {
        self.lock().values().filter(|b| keep(b)).cloned().collect()
    }

    pub fn get(&self, id: &str) -> Option<BeliefRecord> {
        self.lock().get(id).cloned()
    }
}

/// Writes queued in turn, not yet committed.
struct Pending(Vec<crate::store::writer::Queued>);

impl Pending {
    async fn committed(self) -> Result<()> {
        for q in self.0 {
            q.committed().await?;
        }
        Ok(())
    }
}

/// What rule-read beliefs say they were read by.
pub const RULES: &str = "rules";

/// A belief `s` as read from memory `r` by `read_by`, before it is weighed.
fn read_from(r: &MemoryRecord, s: Signal, read_by: &str) -> BeliefRecord {
    BeliefRecord {
        id: uuid::Uuid::now_v7().to_string(),
        namespace: r.namespace.clone(),
        subject: s.subject,
        predicate: s.predicate,
        object: s.object,
        negated: s.negated,
        statement: s.statement,
        belief_type: s.kind,
        domain: s.domain,
        scope: r.project_id.clone(),
        confidence: s.confidence,
        evidence: vec![r.lineage.clone()],
        source: BeliefSource::Extracted,
        read_by: Some(read_by.to_string()),
        source_memory_id: Some(r.id.clone()),
        valid_from: r.event_time(),
        ..Default::default()
    }
}

/// The memory a belief was read from first (its lineage), if it came from one.
fn memory_of(b: &BeliefRecord) -> Option<&String> {
    b.evidence.first()
}

/// Weighs `new` against the current beliefs of its slot and records the outcome; answers the
/// belief it repeated (if it was not added) and the beliefs it replaced.
fn apply(
    beliefs: &mut Beliefs,
    mut new: BeliefRecord,
    now: i64,
    changes: &mut Changes,
) -> (Option<String>, Vec<String>) {
    if !resolve_open(beliefs, &mut new) {
        return (None, Vec::new());
    }
    adopt_key(beliefs, &mut new);
    let key = slot(&new);
    let current = beliefs.current_in(&key);
    let verdict = judge(&new, &current);
    if let Some(id) = verdict.repeats {
        for old in &verdict.supersedes {
            close(beliefs, old, &id, new.valid_from, changes);
        }
        let b = beliefs.get_mut(&id).expect("a current belief");
        for lineage in &new.evidence {
            if !b.evidence.contains(lineage) {
                b.evidence.push(lineage.clone());
            }
        }
        if new.source.rank() > b.source.rank() {
            b.source = new.source;
        }
        b.confidence = b
            .confidence
            .max(new.confidence)
            .max(confidence(new.confidence, b.evidence.len()));
        changes.rows.insert(id.clone());
        return (Some(id), verdict.supersedes);
    }
    for id in &verdict.supersedes {
        close(beliefs, id, &new.id, new.valid_from, changes);
        link(
            &mut changes.edges,
            &new,
            &beliefs[id],
            EdgeType::Updates,
            now,
        );
    }
    if let Some((id, at)) = &verdict.superseded_by {
        new.valid_to = Some(*at);
        new.superseded_by = Some(id.clone());
        link(
            &mut changes.edges,
            &beliefs[id],
            &new,
            EdgeType::Updates,
            now,
        );
    }
    for id in &verdict.contradicts {
        let old = beliefs.get_mut(id).expect("a current belief");
        old.contradicts.push(new.id.clone());
        new.contradicts.push(id.clone());
        changes.rows.insert(id.clone());
        link(
            &mut changes.edges,
            &new,
            &beliefs[id],
            EdgeType::Contradicts,
            now,
        );
    }
    if let Some(id) = &verdict.extends {
        link(
            &mut changes.edges,
            &new,
            &beliefs[id],
            EdgeType::Extends,
            now,
        );
    }
    changes.rows.insert(new.id.clone());
    changes.fresh.insert(new.id.clone());
    beliefs.insert(new);
    (None, verdict.supersedes)
}

/// An edge of `kind` between the memories two beliefs were read from (none when they are one
/// memory, or either was set rather than read).
fn link(
    edges: &mut Vec<EdgeRecord>,
    from: &BeliefRecord,
    to: &BeliefRecord,
    kind: EdgeType,
    now: i64,
) {
    if let (Some(a), Some(b)) = (memory_of(from), memory_of(to)) {
        if a != b {
            edges.push(EdgeRecord::new(
                &from.namespace,
                Node::memory(a.clone()),
                Node::memory(b.clone()),
                kind,
                1.0,
                "usermodel",
                now,
            ));
        }
    }
}

/// Fills what a change left open from what is held: "I quit my job" ends the current
/// workplace ([`OPEN`]), "I left Acme" whichever home or workplace Acme is ([`LEFT`]). False
/// when nothing held matches: the change has nothing to end.
fn resolve_open(beliefs: &Beliefs, new: &mut BeliefRecord) -> bool {
    let open = new.object == OPEN;
    if new.predicate != LEFT && !open {
        return true;
    }
    let (namespace, subject) = (new.namespace.clone(), fold(&new.subject));
    let held = beliefs
        .values()
        .filter(|b| b.valid_to.is_none() && !b.negated && b.namespace == namespace)
        .filter(|b| fold(&b.subject) == subject)
        .filter(|b| {
            if new.predicate == LEFT {
                matches!(b.predicate.as_str(), "works_at" | "lives_in" | "studies_at")
                    && b.object.eq_ignore_ascii_case(&new.object)
            } else {
                b.predicate == new.predicate
            }
        })
        .max_by_key(|b| b.valid_from);
    let Some(held) = held else {
        return false;
    };
    new.predicate = held.predicate.clone();
    new.object = held.object.clone();
    new.belief_type = held.belief_type;
    new.statement = statement(&new.subject, &new.predicate, &new.object, new.negated);
    true
}

/// A choice lands on the key its thing already has: "prefers 2 spaces for indenting" after
/// "prefers tabs for indentation" is said of "indentation", so the two are one slot and the
/// newer replaces the older.
fn adopt_key(beliefs: &Beliefs, new: &mut BeliefRecord) {
    if new.belief_type != BeliefType::Preference || meaning::is_stance(&new.object) {
        return;
    }
    let (subject, stems) = (fold(&new.subject), key_stems(&new.predicate));
    let held = beliefs
        .values()
        .filter(|b| b.valid_to.is_none() && b.belief_type == BeliefType::Preference)
        .filter(|b| b.namespace == new.namespace && fold(&b.subject) == subject)
        .filter(|b| b.predicate != new.predicate && !meaning::is_stance(&b.object))
        .filter(|b| key_stems(&b.predicate) == stems)
        .max_by_key(|b| b.valid_from);
    if let Some(held) = held {
        new.predicate = held.predicate.clone();
        new.statement = preference_statement(&new.subject, &new.predicate, &new.object);
    }
}

/// Ends belief `id` where `by` begins (at `at`); it no longer contradicts anything current.
fn close(beliefs: &mut Beliefs, id: &str, by: &str, at: i64, changes: &mut Changes) {
    let old = beliefs.get_mut(id).expect("a current belief");
    old.valid_to = Some(at.max(old.valid_from));
    old.superseded_by = Some(by.to_string());
    let contradicted = std::mem::take(&mut old.contradicts);
    changes.rows.insert(id.to_string());
    for other in contradicted {
        if let Some(b) = beliefs.get_mut(&other) {
            b.contradicts.retain(|c| c != id);
            changes.rows.insert(other);
        }
    }
}

/// Deletes a belief: what it replaced holds again, and nothing contradicts it any more.
fn remove(beliefs: &mut Beliefs, id: &str, changes: &mut Changes) {
    let Some(gone) = beliefs.remove(id) else {
        return;
    };
    changes.rows.remove(id);
    changes.deleted.push(id.to_string());
    for b in beliefs.values_mut() {
        let mut touched = false;
        if gone.valid_to.is_none() && b.superseded_by.as_deref() == Some(id) {
            b.valid_to = None;
            b.superseded_by = None;
            touched = true;
        }
        if b.contradicts.iter().any(|c| c == id) {
            b.contradicts.retain(|c| c != id);
            touched = true;
        }
        if touched {
            changes.rows.insert(b.id.clone());
        }
    }
}
