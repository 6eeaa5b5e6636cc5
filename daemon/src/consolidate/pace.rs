//! How a run steps aside: phases call [`Pace::checkpoint`] between units of work and wrap
//! long storage calls in [`Pace::guard`]; both end the phase as soon as a request for memory
//! work arrives, the rest of the machine gets busy, or mnemod is stopping.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mnemo_protocol::consolidate::{Phase, Progress};
use tokio::sync::{broadcast, watch};

use super::idle::other_cpu_pct;
use super::Consolidator;
use crate::events::Event;

/// How often a phase that works through many units saves how far it got (dedup's watermark,
/// the summaries drafted). A stop or a crash loses at most this much, and the phase redoes it
/// without change. Saved after every block, a first dedup of 1M distinct memories went ~8 %
/// slower (a save is a merge into small tables).
pub const SAVE_EVERY: Duration = Duration::from_secs(2);

/// Why a phase stopped before its end.
#[derive(Debug)]
pub enum Stop {
    /// The person's work needs the machine; `latency` is from its request to now.
    Yield {
        latency: Duration,
        why: String,
    },
    Shutdown,
    Failed(String),
}

impl From<crate::store::StoreError> for Stop {
    fn from(e: crate::store::StoreError) -> Self {
        match e {
            crate::store::StoreError::Closed => Stop::Shutdown,
            other => Stop::Failed(other.to_string()),
        }
    }
}

/// The yield for the request the activity watch just reported.
fn request_arrived(activity: &mut watch::Receiver<Option<Instant>>) -> Stop {
    let at = *activity.borrow_and_update();
    Stop::Yield {
        latency: at.map(|t| t.elapsed()).unwrap_or_default(),
        why: "a request for memory work arrived".into(),
    }
}

pub struct Pace {
    ctx: Arc<Consolidator>,
    /// Manual runs finish whatever the idle state; the others step aside.
    yields: bool,
    activity: watch::Receiver<Option<Instant>>,
    shutdown: watch::Receiver<bool>,
    snapshots: broadcast::Receiver<Event>,
    throttle: Duration,
    run_id: String,
}

impl Pace {
    pub fn new(ctx: &Arc<Consolidator>, run_id: &str, yields: bool) -> Self {
        let mut activity = ctx.state.activity.watch();
        activity.mark_unchanged();
        Self {
            ctx: ctx.clone(),
            yields,
            activity,
            shutdown: ctx.shutdown.watch(),
            snapshots: ctx.events.subscribe(),
            throttle: Duration::from_millis(ctx.state.config.throttle_ms),
            run_id: run_id.to_string(),
        }
    }

    pub fn ctx(&self) -> &Arc<Consolidator> {
        &self.ctx
    }

    fn stop_now(&mut self) -> Option<Stop> {
        if *self.shutdown.borrow() {
            return Some(Stop::Shutdown);
        }
        if !self.yields {
            return None;
        }
        if self.activity.has_changed().unwrap_or(false) {
            return Some(request_arrived(&mut self.activity));
        }
        None
    }

    /// Resolves when the run must stop; never resolves for a manual run until shutdown.
    async fn interrupted(&mut self) -> Stop {
        let threads = super::cpu_threads(&self.ctx);
        let limit = self.ctx.state.config.max_other_cpu_pct;
        loop {
            tokio::select! {
                _ = self.shutdown.wait_for(|s| *s) => return Stop::Shutdown,
                changed = self.activity.changed(), if self.yields => {
                    if changed.is_err() {
                        return Stop::Shutdown;
                    }
                    return request_arrived(&mut self.activity);
                }
                event = self.snapshots.recv(), if self.yields => {
                    if let Ok(Event::Snapshot(s)) = event {
                        if let Some(cpu) = other_cpu_pct(&s, threads).filter(|c| *c > limit) {
                            return Stop::Yield {
                                latency: Duration::ZERO,
                                why: format!("other processes use {cpu:.0}% CPU"),
                            };
                        }
                    }
                }
            }
        }
    }

    /// Between units of work: stop if needed, else rest for the throttle.
    pub async fn checkpoint(&mut self) -> Result<(), Stop> {
        if let Some(stop) = self.stop_now() {
            return Err(stop);
        }
        if self.throttle.is_zero() {
            return Ok(());
        }
        let throttle = self.throttle;
        tokio::select! {
            stop = self.interrupted() => Err(stop),
            _ = tokio::time::sleep(throttle) => Ok(()),
        }
    }

    /// Runs `work` unless the run must stop first; then `work` is dropped. Only for work that
    /// commits atomically (a LanceDB commit is all or nothing), so dropping it loses nothing.
    pub async fn guard<T>(
        &mut self,
        work: impl std::future::Future<Output = T>,
    ) -> Result<T, Stop> {
        if let Some(stop) = self.stop_now() {
            return Err(stop);
        }
        tokio::select! {
            stop = self.interrupted() => Err(stop),
            done = work => Ok(done),
        }
    }

    /// One reply of the configured LLM, asked on the blocking pool; the phase ends instead
    /// if the machine is needed meanwhile.
    pub async fn ask(
        &mut self,
        llm: &Arc<crate::llm::Llm>,
        system: &'static str,
        prompt: String,
    ) -> Result<Result<String, crate::llm::LlmError>, Stop> {
        let llm = llm.clone();
        let asked = self
            .guard(tokio::task::spawn_blocking(move || {
                llm.complete(system, &prompt)
            }))
            .await?;
        Ok(asked.unwrap_or_else(|e| {
            Err(crate::llm::LlmError::Unreachable(format!(
                "the call failed: {e}"
            )))
        }))
    }

    pub fn progress(&self, phase: Phase, done: u64, total: u64) {
        self.ctx
            .state
            .set_progress(&self.ctx, &self.run_id, Progress { phase, done, total });
    }
}
