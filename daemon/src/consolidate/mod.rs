//! Consolidation: while the machine is idle (or on demand, or on a daily schedule) mnemod
//! folds accesses, decays strength, merges duplicates, summarises old weak clusters and
//! compacts storage. Each phase works in small units, records where it is in the run's
//! `runs` row, and steps aside as soon as the person's work needs the machine.

mod access;
mod decay;
mod dedup;
mod edges;
mod entities;
mod habits;
pub mod idle;
mod living;
mod pace;
mod refine;
mod related;
mod storage;
mod summarize;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo_protocol::consolidate::{
    ConsolidationStatus, IdleState, Phase, PhaseRecord, PhaseState, Progress, RunRecord,
    RunStarted, RunStatus, RunTrigger,
};
use mnemo_protocol::time::{format_micros, now_micros};
use tokio::sync::{broadcast, Notify};

use crate::access::AccessRecorder;
use crate::agent::Agent;
use crate::config::{parse_schedule, ConsolidateConfig, LlmConfig};
use crate::embed::EmbedService;
use crate::events::{Event, EventBus};
use crate::graph::{EntityBook, Gazetteer};
use crate::hardware::Monitor;
use crate::living::Living;
use crate::shutdown::Shutdown;
use crate::store::runs::run_batch;
use crate::store::{Store, StoreError, WriteOp};
use crate::usermodel::UserModel;
pub use idle::Activity;
use pace::{Pace, Stop};

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

/// What consolidation works with: the store it rewrites, the embedder for summaries, the
/// machine's readings (to step aside), the bus, and its own shared state.
pub struct Consolidator {
    pub state: Arc<Consolidation>,
    pub store: Arc<Store>,
    /// What searches hold in memory: dedup finds neighbours through it.
    pub held: Arc<crate::held::Held>,
    pub embed: EmbedService,
    pub events: EventBus,
    pub hardware: Arc<Monitor>,
    pub shutdown: Shutdown,
    pub llm: LlmConfig,
    pub db_dir: PathBuf,
    /// Flushed before the access phase, so it folds every access made before the run.
    pub access: AccessRecorder,
    /// Where proven aliases merge; the people living summaries name.
    pub entities: Arc<EntityBook>,
    /// The names memories are read with: names the LLM finds join them.
    pub names: Arc<Gazetteer>,
    /// The beliefs and projects living summaries are written from.
    pub usermodel: Arc<UserModel>,
    pub living: Arc<Living>,
    /// The episodes procedures are learned from, and where procedures and stats are kept.
    pub agent: Arc<Agent>,
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

    pub fn status(&self) -> ConsolidationStatus {
        let s = self.lock();
        let state = match s.current.as_ref().map(|r| r.status) {
            Some(RunStatus::Running) => "running",
            Some(RunStatus::Yielded | RunStatus::Interrupted) => "yielded",
            _ => "idle",
        };
        ConsolidationStatus {
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

    /// When the last completed run started (UTC microseconds).
    pub fn last_completed_start(&self) -> Option<i64> {
        let s = self.lock();
        mnemo_protocol::time::parse_micros(&s.last_completed.as_ref()?.started_at).ok()
    }

    /// Memory changed: there is something to consolidate.
    pub fn mark_dirty(&self) {
        self.lock().dirty = true;
    }

    fn set_progress(&self, ctx: &Consolidator, run_id: &str, progress: Progress) {
        self.lock().progress = Some(progress.clone());
        let _ = ctx.events.send(Event::Consolidation {
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
async fn save(ctx: &Consolidator, run: &mut RunRecord) -> Result<(), StoreError> {
    run.updated_at = format_micros(now_micros());
    if run.status == RunStatus::Running {
        ctx.state.lock().current = Some(run.clone());
    }
    let batch = run_batch(run)?;
    ctx.store
        .writer()
        .submit(WriteOp::Merge {
            table: ctx.store.runs().runs.clone(),
            on: "id",
            batch,
        })
        .await?;
    Ok(())
}

/// The consolidation task: checks every few seconds whether to start or resume a run (the
/// one mnemod stopped in, taken up by [`Consolidation::recover`] before it answered).
pub async fn run(ctx: Arc<Consolidator>) {
    let c = &ctx.state;
    let schedule = c
        .config
        .schedule
        .as_deref()
        .and_then(|s| parse_schedule(s).ok());
    let interval = Duration::from_secs(c.config.check_interval_secs);
    let mut changes = ctx.events.subscribe();
    loop {
        if let Some(minutes) = schedule {
            let mut s = c.lock();
            if s.next_scheduled.is_none() {
                s.next_scheduled = Some(next_scheduled(minutes, chrono::Local::now()));
            }
        }
        tokio::select! {
            _ = ctx.shutdown.requested() => break,
            _ = c.wake.notified() => {}
            _ = tokio::time::sleep(interval) => {}
            event = changes.recv() => {
                if changes_memory(&event) {
                    c.mark_dirty();
                }
                continue;
            }
        }
        let idle = assess_now(&ctx).await;
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
                .and_then(|t| mnemo_protocol::time::parse_micros(t).ok())
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
            drive(&ctx, trigger).await;
        }
    }
}

/// Whether a bus event means memory changed (a missed event might have).
fn changes_memory(event: &Result<Event, broadcast::error::RecvError>) -> bool {
    matches!(
        event,
        Ok(Event::MemoryAdded { .. } | Event::MemoryUpdated { .. } | Event::MemoryForgotten { .. })
            | Err(broadcast::error::RecvError::Lagged(_))
    )
}

/// Logical CPUs, for turning mnemod's own CPU (percent of a core) into a share of the machine.
fn cpu_threads(ctx: &Consolidator) -> usize {
    ctx.hardware.profile().map(|p| p.cpu_threads).unwrap_or(1)
}

async fn assess_now(ctx: &Consolidator) -> IdleState {
    let snapshot = ctx.hardware.snapshot();
    let threads = cpu_threads(ctx);
    let signals = idle::Signals {
        since_request: ctx.state.activity.last().map(|t| t.elapsed()),
        other_cpu_pct: snapshot
            .as_ref()
            .and_then(|s| idle::other_cpu_pct(s, threads)),
        ram_pct: snapshot.as_ref().and_then(|s| s.ram_pct),
        // sysfs reads block; keep them off the reactor.
        on_battery: tokio::task::spawn_blocking(idle::on_battery)
            .await
            .unwrap_or(None),
    };
    idle::assess(&signals, &ctx.state.config)
}

impl Consolidation {
    /// At start, before mnemod answers requests: reads the last completed run, and takes up
    /// a run left `running` (cut short by a crash or a kill) to resume later. Done in the
    /// consolidation task, a `consolidate.run` answered first started a new run this then
    /// replaced, and `mnemo consolidate --wait` waited for that run forever.
    pub async fn recover(&self, store: &Store) {
        if let Err(e) = self.recover_from(store).await {
            tracing::warn!("consolidation: cannot read earlier runs: {e}");
        }
    }

    async fn recover_from(&self, store: &Store) -> Result<(), StoreError> {
        let runs = store.runs().recent(20).await?;
        let mut s = self.lock();
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
}

/// Runs (or resumes) the current run until it completes, yields, fails or mnemod stops.
async fn drive(ctx: &Arc<Consolidator>, trigger: RunTrigger) {
    let c = &ctx.state;
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
    let mut pace = Pace::new(ctx, &run.id, yields);
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
    if let Err(e) = save(ctx, &mut run).await {
        tracing::warn!("cannot record consolidation run {}: {e}", run.id);
    }
    let phase = run
        .phases
        .iter()
        .find(|p| p.state != PhaseState::Done)
        .map(|p| p.phase);
    let _ = ctx.events.send(Event::Consolidation {
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
    let ctx = pace.ctx().clone();
    for i in 0..run.phases.len() {
        if run.phases[i].state == PhaseState::Done {
            continue;
        }
        let phase = run.phases[i].phase;
        run.phases[i].state = PhaseState::Running;
        run.phases[i]
            .started_at
            .get_or_insert_with(|| format_micros(now_micros()));
        save(&ctx, run).await?;
        pace.progress(phase, 0, 0);
        let mut record = run.phases[i].clone();
        let result = match phase {
            Phase::Entities => entities::run(pace, &mut record).await,
            Phase::Edges => edges::run(pace, &mut record).await,
            Phase::Access => access::run(pace, &mut record).await,
            Phase::Decay => decay::run(pace, &mut record).await,
            Phase::Dedup => dedup::run(pace, &mut record).await,
            Phase::Refine => refine::run(pace, &mut record).await,
            Phase::Summaries => summarize::run(pace, &mut record).await,
            Phase::Living => living::run(pace, &mut record).await,
            Phase::Habits => habits::run(pace, &mut record).await,
            Phase::Storage => storage::run(pace, &mut record).await,
        };
        run.phases[i] = record;
        ctx.store.drop_cached_pages().await;
        // A phase's code (and Lance's for its reads and writes) mostly runs in no other
        // phase, and the kernel maps code 64 KB around each page run: at 1M memories
        // 90-104 MB of mnemod's code stayed resident through a first run; let go after
        // each phase, the storage phase topped with 40 MB of it.
        let bytes = crate::process::drop_code_pages();
        tracing::debug!(
            "let go of mnemod's own code pages ({} MB mapped)",
            bytes >> 20
        );
        result?;
        run.phases[i].state = PhaseState::Done;
        run.phases[i].completed_at = Some(format_micros(now_micros()));
        save(&ctx, run).await?;
    }
    Ok(())
}

/// Who wrote the edges consolidation forms.
pub const BY_CONSOLIDATION: &str = "consolidation";

/// The creation time up to which a watermarked pass is done (-1: nothing yet).
async fn done_through(store: &Store, key: &str) -> Result<i64, StoreError> {
    Ok(store
        .meta_get(key)
        .await?
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1))
}

/// Ranges of about `size` over `times` (sorted), never splitting equal times: a phase that
/// keeps "done through time t" then resumes after t without skipping a row of time t.
fn time_blocks(times: &[i64], size: usize) -> Vec<std::ops::Range<usize>> {
    let mut blocks = Vec::new();
    let mut start = 0;
    while start < times.len() {
        let mut end = (start + size.max(1)).min(times.len());
        while end < times.len() && times[end] == times[end - 1] {
            end += 1;
        }
        blocks.push(start..end);
        start = end;
    }
    blocks
}

/// Adds `n` to a phase's count.
fn bump(record: &mut PhaseRecord, key: &str, n: u64) {
    *record.counts.entry(key.to_string()).or_default() += n;
}

/// Saves a phase's cursor mid-phase, so a crash resumes after the last finished unit.
/// The time up to which a phase reads access events: taken once (after the recorder has
/// written what it held) and kept in the cursor across a resume, so events arriving meanwhile
/// wait for the next run instead of being deleted unread.
async fn events_cutoff(pace: &Pace, record: &mut PhaseRecord) -> Result<i64, Stop> {
    if let Some(c) = record.cursor.as_deref().and_then(|c| c.parse().ok()) {
        return Ok(c);
    }
    pace.ctx().access.flush().await;
    let c = now_micros();
    record.cursor = Some(c.to_string());
    save_cursor(pace, record).await?;
    Ok(c)
}

async fn save_cursor(pace: &Pace, record: &PhaseRecord) -> Result<(), Stop> {
    let ctx = pace.ctx();
    let mut run = {
        let s = ctx.state.lock();
        match s.current.clone() {
            Some(run) => run,
            None => return Ok(()),
        }
    };
    if let Some(slot) = run.phases.iter_mut().find(|p| p.phase == record.phase) {
        *slot = record.clone();
    }
    save(ctx, &mut run).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_never_split_rows_of_one_time() {
        assert_eq!(time_blocks(&[1, 2, 2, 2, 3, 4], 2), vec![0..4, 4..6]);
        assert_eq!(time_blocks(&[5, 5, 5], 1), vec![0..3]);
        assert!(time_blocks(&[], 4).is_empty());
    }

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
