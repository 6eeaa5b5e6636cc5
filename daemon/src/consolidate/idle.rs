//! When the machine can spare itself for consolidation: no request for memory work lately,
//! the rest of the machine quiet, RAM not short, not on battery.

use std::time::{Duration, Instant};

use mnemo_protocol::consolidate::IdleState;
use mnemo_protocol::system::Snapshot;
use tokio::sync::watch;

use crate::config::ConsolidateConfig;

/// When the last request for memory work arrived; runs watch it to step aside at once.
pub struct Activity {
    last: watch::Sender<Option<Instant>>,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            last: watch::channel(None).0,
        }
    }
}

impl Activity {
    pub fn touch(&self) {
        self.last.send_replace(Some(Instant::now()));
    }
    pub fn last(&self) -> Option<Instant> {
        *self.last.borrow()
    }
    pub fn watch(&self) -> watch::Receiver<Option<Instant>> {
        self.last.subscribe()
    }
}

/// Requests that count as the person's work. Status, system and dashboard reads do not, so
/// a dashboard left open never keeps consolidation from running.
pub fn is_user_work(method: &str) -> bool {
    method.starts_with("memory.") || method.starts_with("context.")
}

/// CPU used by everything but mnemod, in percent of the whole machine.
pub fn other_cpu_pct(snapshot: &Snapshot, threads: usize) -> Option<f32> {
    let total = snapshot.cpu_pct?;
    let own = snapshot.daemon_cpu_pct.unwrap_or(0.0) / threads.max(1) as f32;
    Some((total - own).max(0.0))
}

/// Reads the power supply where Linux exposes it: `Some(true)` when no AC adapter is online
/// and a battery is present.
pub fn on_battery() -> Option<bool> {
    let dir = std::fs::read_dir("/sys/class/power_supply").ok()?;
    let (mut battery, mut ac_online) = (false, false);
    for entry in dir.flatten() {
        let path = entry.path();
        let kind = std::fs::read_to_string(path.join("type")).unwrap_or_default();
        match kind.trim() {
            "Battery" => battery = true,
            "Mains" | "USB" => {
                let online = std::fs::read_to_string(path.join("online")).unwrap_or_default();
                ac_online |= online.trim() == "1";
            }
            _ => {}
        }
    }
    battery.then_some(!ac_online)
}

/// What the detector looks at.
#[derive(Debug, Clone, Default)]
pub struct Signals {
    pub since_request: Option<Duration>,
    pub other_cpu_pct: Option<f32>,
    pub ram_pct: Option<f32>,
    pub on_battery: Option<bool>,
}

/// Idle when every reading that exists is within its limit; a missing reading (no snapshot
/// yet, no battery) does not block.
pub fn assess(signals: &Signals, config: &ConsolidateConfig) -> IdleState {
    let mut blockers = Vec::new();
    if let Some(since) = signals.since_request {
        if since < Duration::from_secs(config.idle_after_secs) {
            blockers.push(format!(
                "a request {} s ago (idle after {} s)",
                since.as_secs(),
                config.idle_after_secs
            ));
        }
    }
    if let Some(cpu) = signals.other_cpu_pct {
        if cpu > config.max_other_cpu_pct {
            blockers.push(format!(
                "other processes use {cpu:.0}% CPU (limit {:.0}%)",
                config.max_other_cpu_pct
            ));
        }
    }
    if let Some(ram) = signals.ram_pct {
        if ram > config.max_ram_pct {
            blockers.push(format!(
                "RAM {ram:.0}% used (limit {:.0}%)",
                config.max_ram_pct
            ));
        }
    }
    if signals.on_battery == Some(true) && !config.run_on_battery {
        blockers.push("on battery".into());
    }
    IdleState {
        idle: blockers.is_empty(),
        blockers,
        seconds_since_request: signals.since_request.map(|d| d.as_secs()),
        other_cpu_pct: signals.other_cpu_pct,
        ram_pct: signals.ram_pct,
        on_battery: signals.on_battery,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(
        since: Option<u64>,
        cpu: Option<f32>,
        ram: Option<f32>,
        bat: Option<bool>,
    ) -> Signals {
        Signals {
            since_request: since.map(Duration::from_secs),
            other_cpu_pct: cpu,
            ram_pct: ram,
            on_battery: bat,
        }
    }

    #[test]
    fn each_signal_blocks_on_its_own() {
        let config = ConsolidateConfig::default();
        let cases = [
            (signals(None, None, None, None), true, ""),
            (
                signals(Some(300), Some(5.0), Some(40.0), Some(false)),
                true,
                "",
            ),
            (
                signals(Some(10), Some(5.0), Some(40.0), None),
                false,
                "a request 10 s ago",
            ),
            (
                signals(Some(300), Some(80.0), Some(40.0), None),
                false,
                "80% CPU",
            ),
            (
                signals(Some(300), Some(5.0), Some(97.0), None),
                false,
                "RAM 97%",
            ),
            (
                signals(Some(300), Some(5.0), Some(40.0), Some(true)),
                false,
                "on battery",
            ),
        ];
        for (s, idle, why) in cases {
            let state = assess(&s, &config);
            assert_eq!(state.idle, idle, "{s:?}: {:?}", state.blockers);
            if !idle {
                assert!(
                    state.blockers.join("; ").contains(why),
                    "{:?}",
                    state.blockers
                );
            }
        }
    }

    #[test]
    fn battery_can_be_allowed() {
        let config = ConsolidateConfig {
            run_on_battery: true,
            ..Default::default()
        };
        assert!(assess(&signals(None, None, None, Some(true)), &config).idle);
    }

    #[test]
    fn own_cpu_is_not_counted_as_other_work() {
        let snapshot = Snapshot {
            cpu_pct: Some(60.0),
            daemon_cpu_pct: Some(100.0),
            ..Default::default()
        };
        assert_eq!(other_cpu_pct(&snapshot, 2), Some(10.0));
    }

    #[test]
    fn only_memory_work_counts_as_activity() {
        assert!(is_user_work("memory.search"));
        assert!(!is_user_work("daemon.status"));
        assert!(!is_user_work("system.snapshot"));
        assert!(!is_user_work("consolidate.status"));
    }
}
