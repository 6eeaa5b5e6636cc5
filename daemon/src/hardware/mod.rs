//! Hardware self-awareness: the system profile, periodic snapshots, the process inventory,
//! local inference servers and the adaptive budget. Collection sits behind the traits in
//! [`probe`]; this module turns readings into protocol values and keeps the latest in memory.

pub mod categories;
pub mod derive;
pub mod downsample;
pub mod inference;
pub mod nvml;
pub mod probe;
mod sampler;

use std::collections::HashMap;
use std::sync::{Mutex, RwLock};

use mnemo_protocol::system::{
    Budget, Capabilities, InferenceServer, ProcessEntry, Snapshot, SystemProfile,
};
use mnemo_protocol::time::{format_micros, now_micros};

pub use sampler::Sampler;

use crate::config::HardwareConfig;
use probe::{GpuProbe, HostProbe};

/// This machine's profile as mnemod's `system.profile` reports it, for figures measured
/// in-process (the embedding bench) to say where they were taken. Blocking.
pub fn this_machine(data_dir: &std::path::Path) -> SystemProfile {
    Monitor::of_this_machine(data_dir, HardwareConfig::default()).detect_profile()
}

/// Counts from the rest of the daemon that a snapshot records.
#[derive(Debug, Clone, Copy, Default)]
pub struct DaemonCounts {
    pub memory_count: Option<u64>,
    pub active_sessions: Option<u64>,
    pub pending_work: Option<u64>,
}

#[derive(Default)]
struct Latest {
    profile: Option<SystemProfile>,
    snapshot: Option<Snapshot>,
    processes: Vec<ProcessEntry>,
    processes_at: Option<String>,
    inference: Vec<InferenceServer>,
    /// First sighting of each process life (pid and start time).
    first_seen: HashMap<String, String>,
    /// Snapshots not yet written.
    unflushed: Vec<Snapshot>,
}

pub struct Monitor {
    host: Mutex<Box<dyn HostProbe>>,
    gpu: Box<dyn GpuProbe>,
    latest: RwLock<Latest>,
    pub config: HardwareConfig,
}

/// CPU time of the calling thread, for the sampler's own cost.
fn thread_cpu_us() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid out-parameter for this clock.
        (unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0)
            .then(|| ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000)
    }
    #[cfg(not(unix))]
    None
}

impl Monitor {
    /// The monitor of this machine: its host through sysinfo (disk figures for the volume
    /// holding `data_dir`), its NVIDIA GPUs through NVML where the driver is. Blocking
    /// (loading NVML).
    pub fn of_this_machine(data_dir: &std::path::Path, config: HardwareConfig) -> Self {
        Self::new(
            Box::new(probe::SysinfoProbe::new(data_dir)),
            Box::new(nvml::NvmlProbe::load()),
            config,
        )
    }

    pub fn new(host: Box<dyn HostProbe>, gpu: Box<dyn GpuProbe>, config: HardwareConfig) -> Self {
        Self {
            host: Mutex::new(host),
            gpu,
            latest: RwLock::new(Latest::default()),
            config,
        }
    }

    pub fn gpu_status(&self) -> String {
        self.gpu.status()
    }

    /// Reads the machine and derives its constraints. Blocking.
    pub fn detect_profile(&self) -> SystemProfile {
        let facts = self.host.lock().expect("host probe").facts();
        let (gpus, driver, cuda) = self.gpu.info();
        let capabilities = Capabilities {
            has_gpu: !gpus.is_empty() || cfg!(target_os = "macos"),
            cuda: cuda.is_some(),
            rocm: std::path::Path::new("/opt/rocm").exists()
                || std::path::Path::new("/dev/kfd").exists(),
            metal: cfg!(target_os = "macos"),
            neural_engine: cfg!(all(target_os = "macos", target_arch = "aarch64")),
        };
        let constraints = derive::constraints(
            facts.ram_total_bytes,
            facts.cpu_threads,
            &gpus,
            &capabilities,
        );
        SystemProfile {
            detected_at: format_micros(now_micros()),
            gpus,
            gpu_driver_version: driver,
            cuda_version: cuda,
            gpu_status: self.gpu.status(),
            capabilities,
            constraints,
            ..facts
        }
    }

    /// Takes one snapshot. Blocking.
    pub fn take_snapshot(&self, counts: DaemonCounts) -> Snapshot {
        let started = thread_cpu_us();
        let host = self.host.lock().expect("host probe").sample();
        let gpus = self.gpu.sample();
        let inference = self.latest.read().expect("latest").inference.clone();
        let ram_pct = (host.ram_total_bytes > 0).then(|| {
            100.0
                * (host.ram_total_bytes - host.ram_available_bytes.min(host.ram_total_bytes)) as f32
                / host.ram_total_bytes as f32
        });
        let mut snapshot = Snapshot {
            at: format_micros(now_micros()),
            span_secs: self.config.snapshot_interval_secs as u32,
            cpu_pct: host.cpu_pct,
            load_1: host.load.map(|l| l.0),
            load_5: host.load.map(|l| l.1),
            load_15: host.load.map(|l| l.2),
            ram_total_bytes: Some(host.ram_total_bytes),
            ram_used_bytes: Some(host.ram_used_bytes),
            ram_available_bytes: Some(host.ram_available_bytes),
            ram_pct,
            swap_total_bytes: Some(host.swap_total_bytes),
            swap_used_bytes: Some(host.swap_used_bytes),
            disk_used_bytes: host.disk_used_bytes,
            disk_free_bytes: host.disk_free_bytes,
            gpus,
            daemon_cpu_pct: host.own_cpu_pct,
            daemon_rss_bytes: host.own_rss_bytes,
            sampler_cpu_us: None,
            memory_count: counts.memory_count,
            active_sessions: counts.active_sessions,
            pending_work: counts.pending_work,
            inference,
        };
        snapshot.sampler_cpu_us = started
            .zip(thread_cpu_us())
            .map(|(a, b)| b.saturating_sub(a));
        snapshot
    }

    /// Takes the process inventory. Blocking.
    pub fn take_inventory(&self) -> Vec<(String, ProcessEntry)> {
        let readings = self.host.lock().expect("host probe").processes();
        let gpu_memory = self.gpu.process_memory();
        let now = format_micros(now_micros());
        let mut latest = self.latest.write().expect("latest");
        let mut seen = HashMap::new();
        let entries: Vec<(String, ProcessEntry)> = readings
            .iter()
            .map(|r| {
                let key = format!("{}-{}", r.pid, r.start_time);
                let first = latest
                    .first_seen
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| now.clone());
                seen.insert(key.clone(), first.clone());
                let entry = ProcessEntry {
                    pid: r.pid,
                    name: r.name.clone(),
                    cmdline: r.cmdline.clone(),
                    category: categories::categorize(
                        &r.name,
                        &r.cmdline,
                        &self.config.process_rules,
                    ),
                    cpu_pct: r.cpu_pct,
                    rss_bytes: r.rss_bytes,
                    gpu_memory_bytes: gpu_memory.get(&r.pid).copied(),
                    first_seen: first,
                    last_seen: now.clone(),
                };
                (key, entry)
            })
            .collect();
        latest.first_seen = seen;
        latest.processes = entries.iter().map(|(_, e)| e.clone()).collect();
        latest.processes_at = Some(now);
        drop(latest);
        if self.config.probe_inference {
            let found = inference::detect(&readings, std::time::Duration::from_millis(300));
            self.latest.write().expect("latest").inference = found;
        }
        entries
    }

    pub fn profile(&self) -> Option<SystemProfile> {
        self.latest.read().expect("latest").profile.clone()
    }

    fn set_profile(&self, profile: SystemProfile) {
        self.latest.write().expect("latest").profile = Some(profile);
    }

    /// First sightings of process lives stored before a restart, so a process that
    /// outlives mnemod keeps when it was first seen.
    fn remember_first_seen(&self, seen: HashMap<String, String>) {
        let mut latest = self.latest.write().expect("latest");
        for (key, first) in seen {
            latest.first_seen.entry(key).or_insert(first);
        }
    }

    pub fn snapshot(&self) -> Option<Snapshot> {
        self.latest.read().expect("latest").snapshot.clone()
    }

    /// Records a snapshot as the latest; returns the unflushed ones when a batch is full.
    fn record(&self, snapshot: Snapshot, flush: bool) -> Vec<Snapshot> {
        let mut latest = self.latest.write().expect("latest");
        latest.snapshot = Some(snapshot.clone());
        latest.unflushed.push(snapshot);
        if flush || latest.unflushed.len() >= self.config.flush_every.max(1) {
            std::mem::take(&mut latest.unflushed)
        } else {
            Vec::new()
        }
    }

    fn take_unflushed(&self) -> Vec<Snapshot> {
        std::mem::take(&mut self.latest.write().expect("latest").unflushed)
    }

    pub fn unflushed(&self) -> Vec<Snapshot> {
        self.latest.read().expect("latest").unflushed.clone()
    }

    pub fn processes(&self) -> (Option<String>, Vec<ProcessEntry>, Vec<InferenceServer>) {
        let latest = self.latest.read().expect("latest");
        (
            latest.processes_at.clone(),
            latest.processes.clone(),
            latest.inference.clone(),
        )
    }

    pub fn budget(&self) -> Budget {
        let recommended = self
            .profile()
            .map(|p| p.constraints.recommended_context_tokens)
            .unwrap_or(4096);
        derive::budget(recommended, self.snapshot().and_then(|s| s.ram_pct))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mnemo_protocol::system::{GpuInfo, GpuReading};
    use probe::{HostReading, ProcessReading};

    struct FakeHost {
        ram_pct: f32,
    }
    impl HostProbe for FakeHost {
        fn facts(&mut self) -> SystemProfile {
            SystemProfile {
                arch: "x86_64".into(),
                cpu_threads: 16,
                ram_total_bytes: 64 << 30,
                ..Default::default()
            }
        }
        fn sample(&mut self) -> HostReading {
            let total = 100u64 << 30;
            HostReading {
                cpu_pct: Some(12.5),
                ram_total_bytes: total,
                ram_available_bytes: total - (total as f32 * self.ram_pct / 100.0) as u64,
                ..Default::default()
            }
        }
        fn processes(&mut self) -> Vec<ProcessReading> {
            vec![
                ProcessReading {
                    pid: 10,
                    start_time: 1,
                    name: "ollama".into(),
                    cmdline: "ollama serve".into(),
                    cpu_pct: 50.0,
                    rss_bytes: 1 << 30,
                },
                ProcessReading {
                    pid: 11,
                    start_time: 2,
                    name: "firefox".into(),
                    cmdline: "firefox".into(),
                    cpu_pct: 3.0,
                    rss_bytes: 1 << 29,
                },
            ]
        }
    }

    /// Two GPUs; the second cannot report its temperature.
    struct TwoGpus;
    impl GpuProbe for TwoGpus {
        fn status(&self) -> String {
            "2 NVIDIA GPU(s) via NVML".into()
        }
        fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>) {
            let gpu = |i: u32, gb: u64| GpuInfo {
                index: i,
                name: format!("RTX {i}"),
                uuid: None,
                vram_total_bytes: Some(gb << 30),
            };
            (
                vec![gpu(0, 24), gpu(1, 12)],
                Some("550.54".into()),
                Some("12.4".into()),
            )
        }
        fn sample(&self) -> Vec<GpuReading> {
            vec![
                GpuReading {
                    index: 0,
                    name: "RTX 0".into(),
                    temperature_c: Some(61.0),
                    utilization_pct: Some(90.0),
                    ..Default::default()
                },
                GpuReading {
                    index: 1,
                    name: "RTX 1".into(),
                    temperature_c: None,
                    utilization_pct: Some(5.0),
                    ..Default::default()
                },
            ]
        }
        fn process_memory(&self) -> HashMap<u32, u64> {
            HashMap::from([(10, 8 << 30)])
        }
    }

    pub(crate) fn monitor(ram_pct: f32) -> Monitor {
        let config = HardwareConfig {
            probe_inference: false,
            ..Default::default()
        };
        Monitor::new(Box::new(FakeHost { ram_pct }), Box::new(TwoGpus), config)
    }

    #[test]
    fn profile_from_two_gpus() {
        let p = monitor(10.0).detect_profile();
        assert_eq!(p.gpus.len(), 2);
        assert!(p.capabilities.has_gpu && p.capabilities.cuda);
        assert_eq!(p.cuda_version.as_deref(), Some("12.4"));
        assert_eq!(p.constraints.largest_model_gb, 20.4);
    }

    #[test]
    fn snapshot_keeps_unsupported_metrics_absent() {
        let s = monitor(10.0).take_snapshot(DaemonCounts {
            memory_count: Some(7),
            ..Default::default()
        });
        assert_eq!(s.gpus[0].temperature_c, Some(61.0));
        assert_eq!(s.gpus[1].temperature_c, None);
        assert_eq!(s.memory_count, Some(7));
        assert!((s.ram_pct.unwrap() - 10.0).abs() < 0.01);
    }

    #[test]
    fn budget_halves_at_95_percent_ram() {
        let m = monitor(95.0);
        m.set_profile(m.detect_profile());
        let s = m.take_snapshot(DaemonCounts::default());
        m.record(s, false);
        let b = m.budget();
        assert_eq!(b.base_tokens, 16384);
        assert_eq!(b.pressure_multiplier, 0.5);
        assert_eq!(b.total_tokens, 8192);
    }

    #[test]
    fn inventory_categorises_and_remembers_first_sighting() {
        let m = monitor(10.0);
        let first = m.take_inventory();
        let ollama = &first.iter().find(|(_, e)| e.name == "ollama").unwrap().1;
        assert_eq!(ollama.category, "inference");
        assert_eq!(ollama.gpu_memory_bytes, Some(8 << 30));
        let firefox = &first.iter().find(|(_, e)| e.name == "firefox").unwrap().1;
        assert_eq!(
            (firefox.category.as_str(), firefox.gpu_memory_bytes),
            ("browser", None)
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = m.take_inventory();
        let again = &second.iter().find(|(_, e)| e.name == "ollama").unwrap().1;
        assert_eq!(again.first_seen, ollama.first_seen);
        assert!(again.last_seen > ollama.last_seen);
    }
}
