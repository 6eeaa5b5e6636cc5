//! Consolidation: while the machine is idle (or on demand, or on a daily schedule) mnemod
//! folds accesses, decays strength, merges duplicates, summarises old weak clusters and
//! compacts storage. Each phase works in small units, records where it is in the run's
//! `runs` row, and steps aside as soon as the person's work needs the machine.

mod access;
mod decay;
mod dedup;
pub mod idle;
mod pace;
mod storage;
mod summarize;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo_client::protocol::consolidate::{
    IdleState, Phase, PhaseRecord, PhaseState, Progress, RunRecord, RunStarted, RunStatus,
    RunTrigger, StatusResult,
};
use mnemo_client::protocol::time::{format_micros, now_micros};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::engine::Engine;
use crate::events::Event;
use crate::store::runs::run_batch;
use crate::store::{StoreError, WriteOp};
pub use idle::Activity;
use pace::{Pace, Stop};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsolidateConfig {
    /// Runs start by themselves when idle (and on the schedule); `consolidate.run` always works.
    pub enabled: bool,
    /// Seconds without a request for memory work before the machine counts as idle.
    pub idle_after_secs: u64,
    /// CPU use of everything else, in percent of the machine, above which runs wait or yield.
    pub max_other_cpu_pct: f32,
    /// RAM use in percent above which runs wait or yield.
    pub max_ram_pct: f32,
    pub run_on_battery: bool,
    /// Seconds between idle checks.
    pub check_interval_secs: u64,
    /// An idle run starts at most this often once a run has completed (when there is work).
    pub min_interval_secs: u64,
    /// Daily local time ("03:30") for a run whatever the idle state; it still yields.
    pub schedule: Option<String>,
    /// Rows per unit of work (between yield checks).
    pub batch_rows: usize,
    /// Rest between units of work, so a run never takes a whole core for long.
    pub throttle_ms: u64,
    /// Days for strength to halve at salience 5 without access.
    pub half_life_days: f64,
    /// Strength below which a memory is marked faded (never deleted).
    pub fade_below: f32,
    /// Cosine similarity at or above which two memories are duplicates.
    pub dedup_threshold: f32,
    /// Duplicates that both say when they happened merge only within this many hours.
    pub dedup_event_window_hours: f64,
    /// Memories older than this many days (by when they happened) may be summarised...
    pub summary_min_age_days: f64,
    /// ... when weaker than this ...
    pub summary_max_strength: f32,
    /// ... and less salient than this ...
    pub summary_max_salience: f32,
    /// ... in clusters (namespace, session or domain, week) of at least this many.
    pub summary_min_cluster: usize,
    pub summary_max_cluster: usize,
    /// Old LanceDB versions are pruned after this many hours.
    pub version_retention_hours: u64,
}

impl Default for ConsolidateConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            idle_after_secs: 120,
            max_other_cpu_pct: 25.0,
            max_ram_pct: 90.0,
            run_on_battery: false,
            check_interval_secs: 5,
            min_interval_secs: 3600,
            schedule: None,
            batch_rows: 512,
            throttle_ms: 5,
            half_life_days: 30.0,
            fade_below: 0.1,
            dedup_threshold: 0.95,
            dedup_event_window_hours: 24.0,
            summary_min_age_days: 30.0,
            summary_max_strength: 0.3,
            summary_max_salience: 5.0,
            summary_min_cluster: 3,
            summary_max_cluster: 40,
            version_retention_hours: 24,
        }
    }
}

impl ConsolidateConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.batch_rows == 0 || self.check_interval_secs == 0 {
            return Err("consolidate.batch_rows and check_interval_secs must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.dedup_threshold) || self.dedup_threshold < 0.5 {
            return Err("consolidate.dedup_threshold must be between 0.5 and 1.0".into());
        }
        if self.half_life_days <= 0.0 {
            return Err("consolidate.half_life_days must be above 0".into());
        }
        if self.summary_min_cluster < 2 || self.summary_max_cluster < self.summary_min_cluster {
            return Err(
                "consolidate.summary_min_cluster must be at least 2 and at most summary_max_cluster"
                    .into(),
            );
        }
        if let Some(s) = &self.schedule {
            parse_schedule(s)?;
        }
        Ok(())
    }
}

/// "HH:MM" -> minutes after midnight.
fn parse_schedule(text: &str) -> Result<u32, String> {
    let bad = || format!("consolidate.schedule `{text}` is not a time like \"03:30\"");
    let (h, m) = text.trim().split_once(':').ok_or_else(bad)?;
    let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 23 || m > 59 {
        return Err(bad());
    }
    Ok(h * 60 + m)
}

/// The next instant (UTC micros) the local clock reads `minutes` after midnight.
fn next_scheduled(minutes: u32, now: chrono::DateTime<chrono::Local>) -> i64 {
    use chrono::{Duration as Days, NaiveTime, TimeZone};
    let at = NaiveTime::from_hms_opt(minutes / 60, minutes % 60, 0).unwrap_or_default();
    let today = now.date_naive().and_time(at);
    let candidate = chrono::Local
        .from_local_datetime(&today)
        .earliest()
        .unwrap_or(now);
    let next = if candidate > now {
        candidate
    } else {
        chrono::Local
            .from_local_datetime(&(today + Days::days(1)))
            .earliest()
            .unwrap_or(now)
    };
    next.timestamp_micros()
}

#[derive(Default)]
struct Shared {
    /// The run going on, or the yielded/interrupted one waiting to resume.
    current: Option<RunRecord>,
    progress: Option<Progress>,
    idle: IdleState,
    last_completed: Option<RunRecord>,
    next_scheduled: Option<i64>,
    /// `consolidate.run` asked for a run; its record is `current`.
    manual: bool,
    /// Memory changed since the last completed run.
    dirty: bool,
}

/// Consolidation's state, shared by its task and the request handlers.
pub struct Consolidation {
    pub config: ConsolidateConfig,
    pub activity: Activity,
    shared: Mutex<Shared>,
    wake: Notify,
}

impl Consolidation {
    pub fn new(config: ConsolidateConfig) -> Self {
        Self {
            config,
            activity: Activity::default(),
            shared: Mutex::new(Shared {
                dirty: true,
                ..Default::default()
            }),
            wake: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> StatusResult {
        let s = self.lock();
        let state = match s.current.as_ref().map(|r| r.status) {
            Some(RunStatus::Running) => "running",
            Some(RunStatus::Yielded | RunStatus::Interrupted) => "yielded",
            _ => "idle",
        };
        StatusResult {
            enabled: self.config.enabled,
            state: state.into(),
            idle: s.idle.clone(),
            current: s.current.clone(),
            progress: s.progress.clone(),
            last_completed: s.last_completed.clone(),
            next_scheduled: s.next_scheduled.map(format_micros),
        }
    }

    /// `consolidate.run`: resumes a stopped run or starts a new one, now.
    pub fn request_run(&self) -> RunStarted {
        let mut s = self.lock();
        let started = match &mut s.current {
            Some(run) if run.status == RunStatus::Running => RunStarted {
                run_id: run.id.clone(),
                resumed: false,
                already_running: true,
            },
            Some(run) => {
                run.trigger = RunTrigger::Manual;
                RunStarted {
                    run_id: run.id.clone(),
                    resumed: true,
                    already_running: false,
                }
            }
            None => {
                let run = new_run(RunTrigger::Manual);
                let id = run.id.clone();
                s.current = Some(run);
                RunStarted {
                    run_id: id,
                    resumed: false,
                    already_running: false,
                }
            }
        };
        if !started.already_running {
            s.manual = true;
        }
        drop(s);
        self.wake.notify_one();
        started
    }

    /// Memory changed: there is something to consolidate.
    pub fn mark_dirty(&self) {
        self.lock().dirty = true;
    }

    fn set_progress(&self, engine: &Engine, run_id: &str, progress: Progress) {
        self.lock().progress = Some(progress.clone());
        let _ = engine.events.send(Event::Consolidation {
            run_id: run_id.to_string(),
            status: RunStatus::Running,
            phase: Some(progress.phase),
            done: progress.done,
            total: progress.total,
        });
    }
}

fn new_run(trigger: RunTrigger) -> RunRecord {
    let now = format_micros(now_micros());
    RunRecord {
        id: uuid::Uuid::now_v7().to_string(),
        trigger,
        status: RunStatus::Running,
        started_at: now.clone(),
        updated_at: now,
        completed_at: None,
        phases: Phase::ALL.into_iter().map(PhaseRecord::pending).collect(),
        yields: 0,
        yield_latency_ms: Vec::new(),
        error: None,
    }
}

/// Records the run in `runs` (and, while it runs, as the status handlers show).
async fn save(engine: &Engine, run: &mut RunRecord) -> Result<(), StoreError> {
    run.updated_at = format_micros(now_micros());
    if run.status == RunStatus::Running {
        engine.consolidation.lock().current = Some(run.clone());
    }
    let batch = run_batch(run)?;
    engine
        .store
        .writer()
        .submit(WriteOp::Merge {
            table: engine.store.runs().runs.clone(),
            on: "id",
            batch,
        })
        .await?;
    Ok(())
}

/// The consolidation task: picks up an interrupted run, then checks every few seconds
/// whether to start or resume one.
pub async fn run(engine: Arc<Engine>) {
    let c = &engine.consolidation;
    if let Err(e) = recover(&engine).await {
        tracing::warn!("consolidation: cannot read earlier runs: {e}");
    }
    let schedule = c
        .config
        .schedule
        .as_deref()
        .and_then(|s| parse_schedule(s).ok());
    let interval = Duration::from_secs(c.config.check_interval_secs);
    loop {
        if let Some(minutes) = schedule {
            let mut s = c.lock();
            if s.next_scheduled.is_none() {
                s.next_scheduled = Some(next_scheduled(minutes, chrono::Local::now()));
            }
        }
        tokio::select! {
            _ = engine.stopped() => break,
            _ = c.wake.notified() => {}
            _ = tokio::time::sleep(interval) => {}
        }
        let idle = assess_now(&engine);
        let trigger = {
            let mut s = c.lock();
            s.idle = idle.clone();
            let now = now_micros();
            let due_schedule = s.next_scheduled.is_some_and(|t| now >= t);
            if due_schedule {
                s.next_scheduled = None;
            }
            let since_last = s
                .last_completed
                .as_ref()
                .and_then(|r| r.completed_at.as_deref())
                .and_then(|t| mnemo_client::protocol::time::parse_micros(t).ok())
                .map(|t| now.saturating_sub(t) / 1_000_000)
                .unwrap_or(i64::MAX);
            let work_due = s.dirty && since_last >= c.config.min_interval_secs as i64;
            let resumable = s.current.as_ref().is_some_and(|r| r.status.resumable());
            if s.manual {
                s.manual = false;
                Some(RunTrigger::Manual)
            } else if !c.config.enabled {
                None
            } else if due_schedule {
                Some(RunTrigger::Schedule)
            } else if idle.idle && (resumable || work_due) {
                Some(RunTrigger::Idle)
            } else {
                None
            }
        };
        if let Some(trigger) = trigger {
            drive(&engine, trigger).await;
        }
    }
}

/// Logical CPUs, for turning mnemod's own CPU (percent of a core) into a share of the machine.
fn cpu_threads(engine: &Engine) -> usize {
    engine
        .hardware
        .profile()
        .map(|p| p.cpu_threads)
        .unwrap_or(1)
}

fn assess_now(engine: &Engine) -> IdleState {
    let snapshot = engine.hardware.snapshot();
    let threads = cpu_threads(engine);
    let signals = idle::Signals {
        since_request: engine.consolidation.activity.last().map(|t| t.elapsed()),
        other_cpu_pct: snapshot
            .as_ref()
            .and_then(|s| idle::other_cpu_pct(s, threads)),
        ram_pct: snapshot.as_ref().and_then(|s| s.ram_pct),
        on_battery: idle::on_battery(),
    };
    idle::assess(&signals, &engine.consolidation.config)
}

/// At start: a run left `running` was cut short by a crash or a kill; it resumes later.
async fn recover(engine: &Engine) -> Result<(), StoreError> {
    let runs = engine.store.runs().recent(20).await?;
    let mut s = engine.consolidation.lock();
    s.last_completed = runs
        .iter()
        .find(|r| r.status == RunStatus::Completed)
        .cloned();
    if let Some(latest) = runs.first() {
        if latest.status == RunStatus::Running || latest.status.resumable() {
            let mut run = latest.clone();
            if run.status == RunStatus::Running {
                tracing::info!(
                    "consolidation run {} was interrupted; it will resume",
                    run.id
                );
                run.status = RunStatus::Interrupted;
            }
            s.current = Some(run);
        }
    }
    Ok(())
}

/// Runs (or resumes) the current run until it completes, yields, fails or mnemod stops.
async fn drive(engine: &Arc<Engine>, trigger: RunTrigger) {
    let c = &engine.consolidation;
    let mut run = {
        let mut s = c.lock();
        let mut run = match s.current.take() {
            Some(run) => run,
            None => new_run(trigger),
        };
        if trigger == RunTrigger::Manual {
            run.trigger = RunTrigger::Manual;
        }
        run.status = RunStatus::Running;
        s.dirty = false;
        s.current = Some(run.clone());
        run
    };
    let yields = run.trigger != RunTrigger::Manual;
    tracing::info!(run = %run.id, trigger = ?run.trigger, "consolidation run starts");
    let mut pace = Pace::new(engine, &run.id, yields);
    let outcome = phases(&mut pace, &mut run).await;
    match outcome {
        Ok(()) => {
            run.status = RunStatus::Completed;
            run.completed_at = Some(format_micros(now_micros()));
            tracing::info!(run = %run.id, "consolidation run completed");
        }
        Err(Stop::Yield { latency, why }) => {
            run.status = RunStatus::Yielded;
            run.yields += 1;
            run.yield_latency_ms.push(latency.as_millis() as u64);
            tracing::info!(
                run = %run.id,
                "consolidation yielded ({why}) {} ms after the request",
                latency.as_millis()
            );
        }
        Err(Stop::Shutdown) => run.status = RunStatus::Interrupted,
        Err(Stop::Failed(e)) => {
            tracing::warn!(run = %run.id, "consolidation failed: {e}");
            run.status = RunStatus::Failed;
            run.error = Some(e);
        }
    }
    if let Err(e) = save(engine, &mut run).await {
        tracing::warn!("cannot record consolidation run {}: {e}", run.id);
    }
    let phase = run
        .phases
        .iter()
        .find(|p| p.state != PhaseState::Done)
        .map(|p| p.phase);
    let _ = engine.events.send(Event::Consolidation {
        run_id: run.id.clone(),
        status: run.status,
        phase,
        done: 0,
        total: 0,
    });
    let mut s = c.lock();
    s.progress = None;
    if run.status == RunStatus::Completed {
        s.last_completed = Some(run);
        s.current = None;
    } else if run.status == RunStatus::Failed {
        s.current = None;
    } else {
        s.current = Some(run);
    }
}

async fn phases(pace: &mut Pace, run: &mut RunRecord) -> Result<(), Stop> {
    let engine = pace.engine().clone();
    for i in 0..run.phases.len() {
        if run.phases[i].state == PhaseState::Done {
            continue;
        }
        let phase = run.phases[i].phase;
        run.phases[i].state = PhaseState::Running;
        run.phases[i]
            .started_at
            .get_or_insert_with(|| format_micros(now_micros()));
        save(&engine, run).await?;
        pace.progress(phase, 0, 0);
        let mut record = run.phases[i].clone();
        let result = match phase {
            Phase::Access => access::run(pace, &mut record).await,
            Phase::Decay => decay::run(pace, &mut record).await,
            Phase::Dedup => dedup::run(pace, &mut record).await,
            Phase::Summaries => summarize::run(pace, &mut record).await,
            Phase::Storage => storage::run(pace, &mut record).await,
        };
        run.phases[i] = record;
        result?;
        run.phases[i].state = PhaseState::Done;
        run.phases[i].completed_at = Some(format_micros(now_micros()));
        save(&engine, run).await?;
    }
    Ok(())
}

/// Adds `n` to a phase's count.
fn bump(record: &mut PhaseRecord, key: &str, n: u64) {
    *record.counts.entry(key.to_string()).or_default() += n;
}

/// Saves a phase's cursor mid-phase, so a crash resumes after the last finished unit.
async fn save_cursor(pace: &Pace, record: &PhaseRecord) -> Result<(), Stop> {
    let engine = pace.engine();
    let mut run = {
        let s = engine.consolidation.lock();
        match s.current.clone() {
            Some(run) => run,
            None => return Ok(()),
        }
    };
    if let Some(slot) = run.phases.iter_mut().find(|p| p.phase == record.phase) {
        *slot = record.clone();
    }
    save(engine, &mut run).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_and_refuse() {
        assert_eq!(parse_schedule("03:30"), Ok(210));
        assert!(parse_schedule("25:00").is_err());
        assert!(parse_schedule("3h").is_err());
    }

    #[test]
    fn next_schedule_is_today_or_tomorrow() {
        use chrono::TimeZone;
        let now = chrono::Local
            .with_ymd_and_hms(2026, 11, 22, 10, 0, 0)
            .unwrap();
        let later_today = next_scheduled(11 * 60, now);
        assert_eq!(later_today - now.timestamp_micros(), 3_600_000_000);
        let tomorrow = next_scheduled(9 * 60, now);
        assert_eq!(tomorrow - now.timestamp_micros(), 23 * 3_600_000_000);
    }
}
