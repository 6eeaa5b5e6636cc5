//! Memory for agents that act (ARCHITECTURE §2, `agent`): episodes recorded with their
//! outcome, the triggered layer that warns before an action, procedures learned from
//! repeated episodes and the implicit stats. Episodes are memories (through ingest, so they
//! are understood, searched and forgotten like any other) with typed columns; the triggered
//! layer keeps a brief of each in memory ([`book`]), so a lookup never queries the store.
//! Procedures and stats are written by consolidation (the habits phase) and kept here.

pub mod book;
pub mod episode;
pub mod procedures;
pub mod stats;
pub mod triggers;

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use mnemo_protocol::agent::{
    Episode, Procedure, ProcedureKind, ProcedureListParams, ProcedureTrigger, RecordParams, Stat,
    StatCategory, StatsListParams, TriggersParams, TriggersResult, MAX_TARGETS, MAX_WARNINGS,
};
use mnemo_protocol::memory::{AddParams, MemoryKind, DEFAULT_NAMESPACE};
use mnemo_protocol::time::{format_micros, now_micros, parse_micros};

use crate::config::{AgentConfig, TriggeredSource};
use crate::error::{Error, Result};
use crate::ingest::{validate_label, Ingest};
use crate::store::procedures::ProcedureRecord;
use crate::store::stats::StatRecord;
use crate::store::{col, Pred, Store, StoreError};
use crate::usermodel::UserModel;
use book::{Book, Index};
use episode::{brief, normalize_command, normalize_path, normalize_targets, Brief};

/// Warnings `memory.triggers` gives when the request names no number.
const DEFAULT_WARNINGS: usize = 10;

pub struct Agent {
    store: Arc<Store>,
    ingest: Arc<Ingest>,
    usermodel: Arc<UserModel>,
    config: AgentConfig,
    book: Book,
    /// Every procedure, in the clear: lookups match their triggers.
    procedures: RwLock<Vec<Procedure>>,
}

impl Agent {
    pub fn new(
        store: Arc<Store>,
        ingest: Arc<Ingest>,
        usermodel: Arc<UserModel>,
        config: AgentConfig,
    ) -> Self {
        Self {
            store,
            ingest,
            usermodel,
            config,
            book: Book::default(),
            procedures: Default::default(),
        }
    }

    pub fn config(&self) -> &AgentConfig {
        &self.config
    }

    /// Reads the episodes (their columns only) and the procedures.
    pub async fn load(&self) -> std::result::Result<usize, StoreError> {
        let rows = self
            .store
            .columns_of(
                &col("action").not_null().and(col("valid_to").null()),
                &[
                    "id",
                    "namespace",
                    "session_id",
                    "project_id",
                    "created_at",
                    "occurred_at",
                    "action",
                    "outcome",
                    "duration_ms",
                    "metadata",
                    "sealed",
                ],
            )
            .await?;
        let briefs: Vec<Brief> = rows.iter().filter_map(brief).collect();
        let n = briefs.len();
        self.book.replace(Index::build(briefs));
        let procedures = self.read_procedures().await?;
        *self.procedures.write().unwrap_or_else(|p| p.into_inner()) = procedures;
        Ok(n)
    }

    /// Stores an episode as a memory with its typed columns, and indexes it.
    pub async fn record(&self, p: RecordParams) -> Result<Episode> {
        episode::validate(&p).map_err(Error::Invalid)?;
        let at = match &p.at {
            Some(at) => parse_micros(at).map_err(|e| Error::invalid(format!("at: {e}")))?,
            None => now_micros(),
        };
        let targets = normalize_targets(p.action, &p.targets, p.state.cwd.as_deref());
        let item = AddParams {
            content: episode::sentence(&p, &targets),
            kind: Some(MemoryKind::Episodic),
            source: p.actor.clone(),
            session_id: p.state.session_id.clone(),
            occurred_at: Some(format_micros(at)),
            metadata: Some(episode::metadata(&p, &targets)),
            namespace: p.namespace.clone(),
            ..Default::default()
        };
        let (action, outcome) = (p.action.to_string(), p.outcome.to_string());
        let duration = p.duration_ms.map(|d| d.min(i64::MAX as u64) as i64);
        let mut added = self
            .ingest
            .add_shaped(vec![item], false, |r| {
                r.action = Some(action.clone());
                r.outcome = Some(outcome.clone());
                r.duration_ms = duration;
                r.targets = targets.clone();
            })
            .await?;
        let record = added.remove(0);
        let b = brief(&record).ok_or_else(|| {
            Error::Conflict("the same text was stored at the same moment as a plain memory".into())
        })?;
        let episode = b.to_protocol(&record.content);
        self.book.push(b);
        Ok(episode)
    }

    /// Warnings and advice for a state; nothing when its history holds nothing like it.
    pub async fn triggers(&self, p: TriggersParams) -> Result<TriggersResult> {
        if p.is_empty() {
            return Err(Error::invalid(
                "name the state to look up: files about to be edited, a command, a tool or a task",
            ));
        }
        if p.files.len() > MAX_TARGETS {
            return Err(Error::invalid(format!(
                "{} files; the limit is {MAX_TARGETS}",
                p.files.len()
            )));
        }
        let limit = p.limit.unwrap_or(DEFAULT_WARNINGS);
        if !(1..=MAX_WARNINGS).contains(&limit) {
            return Err(Error::invalid(format!(
                "limit is {limit}; it must be 1–{MAX_WARNINGS}"
            )));
        }
        validate_label("namespace", p.namespace.as_deref()).map_err(Error::Invalid)?;
        episode::validate_cwd(p.state.cwd.as_deref()).map_err(Error::Invalid)?;
        let cwd = p.state.cwd.as_deref();
        // Where a command runs matters; the project lookup is paid only for commands.
        let place = match (&p.command, cwd) {
            (Some(_), Some(cwd)) => Some(self.place_of(cwd).await),
            _ => None,
        };
        let namespace = p.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
        let ask = triggers::Ask {
            namespace,
            files: p.files.iter().map(|f| normalize_path(f, cwd)).collect(),
            command: p.command.as_deref().map(normalize_command),
            tool: p.tool.as_ref().map(|t| t.trim().to_string()),
            task: p.state.task.clone(),
            place,
            now: now_micros(),
            failures: self.config.triggered(TriggeredSource::Failures),
            rules: self.config.triggered(TriggeredSource::Rules),
        };
        let index = self.book.read();
        let procedures = self.procedures.read().unwrap_or_else(|p| p.into_inner());
        let mut warnings = triggers::warnings(&index, &procedures, &ask);
        warnings.retain(|w| w.confidence >= self.config.min_confidence);
        warnings.truncate(limit);
        Ok(TriggersResult {
            warnings,
            episodes_known: index.episodes.len() as u64,
        })
    }

    /// The project a directory lies in, else the directory: where a command's history counts.
    async fn place_of(&self, cwd: &str) -> String {
        let projects = self.usermodel.projects();
        match projects.root_of(cwd).await {
            Some(root) => projects.id_of(&root),
            None => cwd.to_string(),
        }
    }

    /// Every episode (of `namespace`, when named).
    pub fn episodes(&self, namespace: Option<&str>) -> Vec<Arc<Brief>> {
        self.book.read().of(namespace)
    }

    pub fn procedures(&self, p: &ProcedureListParams) -> Vec<Procedure> {
        self.procedures
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|q| p.namespace.as_ref().is_none_or(|n| q.namespace == *n))
            .filter(|q| p.kind.is_none_or(|k| q.kind == k))
            .filter(|q| p.min_confidence.is_none_or(|c| q.confidence >= c))
            .cloned()
            .collect()
    }

    pub fn procedure(&self, id: &str) -> Result<Procedure> {
        self.procedures
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|p| p.id == id)
            .cloned()
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "no procedure `{id}`; `mnemo procedures` lists the learned ones"
                ))
            })
    }

    /// Makes `learned` the namespace's whole set of procedures.
    pub async fn replace_procedures(
        &self,
        namespace: &str,
        learned: Vec<Procedure>,
    ) -> std::result::Result<(), StoreError> {
        let table = self.store.procedures();
        let stale: Vec<String> = table
            .rows(&col("namespace").eq(namespace))
            .await?
            .into_iter()
            .map(|r| r.id)
            .filter(|id| !learned.iter().any(|p| p.id == *id))
            .collect();
        if !stale.is_empty() {
            self.store.writer().submit(table.delete_ids(&stale)).await?;
        }
        if !learned.is_empty() {
            let rows = learned
                .iter()
                .map(|p| self.procedure_row(p))
                .collect::<Vec<_>>();
            self.store.writer().submit(table.upsert(&rows)?).await?;
        }
        let mut all = self.procedures.write().unwrap_or_else(|p| p.into_inner());
        all.retain(|p| p.namespace != namespace);
        all.extend(learned);
        all.sort_by(|a, b| b.confidence.total_cmp(&a.confidence).then(a.id.cmp(&b.id)));
        Ok(())
    }

    fn procedure_row(&self, p: &Procedure) -> ProcedureRecord {
        let sealing = self.store.sealing();
        let (name, sealed) = sealing.seal_label(&p.id, "name", &p.name);
        let (trigger_target, _) = sealing.seal_label(&p.id, "trigger_target", &p.trigger.target);
        let steps = serde_json::to_string(&p.steps).expect("plain data");
        let (steps, _) = sealing.seal_label(&p.id, "steps", &steps);
        ProcedureRecord {
            id: p.id.clone(),
            namespace: p.namespace.clone(),
            kind: p.kind.to_string(),
            name,
            trigger_action: p.trigger.action.to_string(),
            trigger_target,
            steps,
            learned_from: p.learned_from.clone(),
            confidence: p.confidence,
            success_count: p.success_count as i64,
            failure_count: p.failure_count as i64,
            last_used: parse_micros(&p.last_used).unwrap_or_default(),
            updated_at: parse_micros(&p.updated_at).unwrap_or_default(),
            sealed,
        }
    }

    async fn read_procedures(&self) -> std::result::Result<Vec<Procedure>, StoreError> {
        let sealing = self.store.sealing();
        let mut out = Vec::new();
        for r in self.store.procedures().rows(&Pred::All).await? {
            let open = |column: &str, text: &str| sealing.open_label(&r.id, column, text, r.sealed);
            let (Ok(kind), Ok(action)) =
                (r.kind.parse::<ProcedureKind>(), r.trigger_action.parse())
            else {
                continue;
            };
            out.push(Procedure {
                namespace: r.namespace.clone(),
                kind,
                name: open("name", &r.name)?,
                trigger: ProcedureTrigger {
                    action,
                    target: open("trigger_target", &r.trigger_target)?,
                },
                steps: serde_json::from_str(&open("steps", &r.steps)?).unwrap_or_default(),
                learned_from: r.learned_from.clone(),
                success_count: r.success_count as u64,
                failure_count: r.failure_count as u64,
                confidence: r.confidence,
                last_used: format_micros(r.last_used),
                updated_at: format_micros(r.updated_at),
                id: r.id,
            });
        }
        out.sort_by(|a, b| b.confidence.total_cmp(&a.confidence).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    /// The stats, by category and then largest first.
    pub async fn stats(&self, p: &StatsListParams) -> std::result::Result<Vec<Stat>, StoreError> {
        let mut predicate = Pred::All;
        if let Some(n) = &p.namespace {
            predicate = predicate.and(col("namespace").eq(n));
        }
        if let Some(c) = p.category {
            predicate = predicate.and(col("category").eq(c.as_str()));
        }
        let sealing = self.store.sealing();
        let mut out = Vec::new();
        for r in self.store.stats().rows(&predicate).await? {
            let Ok(category) = r.category.parse::<StatCategory>() else {
                continue;
            };
            out.push(Stat {
                metric: sealing.open_label(&r.id, "metric", &r.metric, r.sealed)?,
                detail: r
                    .detail
                    .as_deref()
                    .map(|d| sealing.open_label(&r.id, "detail", d, r.sealed))
                    .transpose()?,
                namespace: r.namespace,
                category,
                value: r.value as f64,
                unit: r.unit,
                sample_size: r.sample_size as u64,
                updated_at: format_micros(r.updated_at),
            });
        }
        out.sort_by(|a, b| {
            (&a.namespace, a.category)
                .cmp(&(&b.namespace, b.category))
                .then(b.value.total_cmp(&a.value))
                .then(a.metric.cmp(&b.metric))
        });
        Ok(out)
    }

    /// Makes `stats` the namespace's whole set.
    pub async fn replace_stats(
        &self,
        namespace: &str,
        stats: &[Stat],
    ) -> std::result::Result<(), StoreError> {
        let table = self.store.stats();
        let op = crate::store::WriteOp::DeleteWhere {
            table: table.table().clone(),
            predicate: col("namespace").eq(namespace),
        };
        self.store.writer().submit(op).await?;
        if !stats.is_empty() {
            let rows: Vec<StatRecord> = stats.iter().map(|s| self.stat_row(s)).collect();
            self.store.writer().submit(table.upsert(&rows)?).await?;
        }
        Ok(())
    }

    fn stat_row(&self, s: &Stat) -> StatRecord {
        let sealing = self.store.sealing();
        let id = format!(
            "{}/{}/{}",
            s.namespace,
            s.category,
            crate::store::schema::content_hash(&sealing.entity_key(&s.metric))
        );
        let (metric, sealed) = sealing.seal_label(&id, "metric", &s.metric);
        StatRecord {
            metric,
            detail: s
                .detail
                .as_deref()
                .map(|d| sealing.seal_label(&id, "detail", d).0),
            namespace: s.namespace.clone(),
            category: s.category.to_string(),
            value: s.value as f32,
            unit: s.unit.clone(),
            sample_size: s.sample_size as i64,
            updated_at: parse_micros(&s.updated_at).unwrap_or_default(),
            sealed,
            id,
        }
    }

    /// After a forget: the episodes are read again, and procedures learned again from what
    /// remains, so none names a forgotten episode.
    pub async fn forgotten(&self, settings: &procedures::Settings) -> Result<()> {
        self.load().await?;
        let episodes = self.episodes(None);
        let namespaces: BTreeSet<String> = self
            .procedures
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|p| p.namespace.clone())
            .collect();
        for namespace in namespaces {
            let learned = procedures::learn(&namespace, &episodes, settings);
            self.replace_procedures(&namespace, learned).await?;
        }
        Ok(())
    }

    /// What learning procedures takes from the config.
    pub fn learning(&self, now: i64) -> procedures::Settings {
        procedures::Settings {
            min_support: self.config.min_support,
            chain_gap_us: self.config.chain_gap_minutes as i64 * 60_000_000,
            now,
        }
    }

    /// After `mnemo encrypt`: procedures and stats written again, sealed.
    pub async fn reseal(&self) -> Result<()> {
        let all = self.procedures(&Default::default());
        let namespaces: BTreeSet<String> = all.iter().map(|p| p.namespace.clone()).collect();
        for namespace in namespaces {
            let mine = all
                .iter()
                .filter(|p| p.namespace == namespace)
                .cloned()
                .collect();
            self.replace_procedures(&namespace, mine).await?;
        }
        let stats = self.stats(&Default::default()).await?;
        let namespaces: BTreeSet<String> = stats.iter().map(|s| s.namespace.clone()).collect();
        for namespace in namespaces {
            let mine: Vec<Stat> = stats
                .iter()
                .filter(|s| s.namespace == namespace)
                .cloned()
                .collect();
            self.replace_stats(&namespace, &mine).await?;
        }
        Ok(())
    }
}
