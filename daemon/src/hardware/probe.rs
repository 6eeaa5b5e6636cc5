//! Collectors behind small traits, so tests can feed known readings. The real ones read the
//! OS through sysinfo and statvfs; the GPU one is in `nvml`.

use std::path::{Path, PathBuf};

use mnemo_protocol::system::{GpuInfo, SystemProfile};
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System, UpdateKind};

/// One reading of the host.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostReading {
    pub cpu_pct: Option<f32>,
    pub load: Option<(f32, f32, f32)>,
    pub ram_total_bytes: u64,
    pub ram_used_bytes: u64,
    pub ram_available_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_used_bytes: u64,
    pub disk_used_bytes: Option<u64>,
    pub disk_free_bytes: Option<u64>,
    pub own_cpu_pct: Option<f32>,
    pub own_rss_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessReading {
    pub pid: u32,
    pub start_time: u64,
    pub name: String,
    pub cmdline: String,
    pub cpu_pct: f32,
    pub rss_bytes: u64,
}

pub trait HostProbe: Send {
    /// The host's part of the profile (everything but GPUs, capabilities and constraints).
    fn facts(&mut self) -> SystemProfile;
    fn sample(&mut self) -> HostReading;
    fn processes(&mut self) -> Vec<ProcessReading>;
}

/// GPU facts and readings; "no GPU" is an ordinary answer with a status saying why.
pub trait GpuProbe: Send + Sync {
    fn status(&self) -> String;
    fn info(&self) -> (Vec<GpuInfo>, Option<String>, Option<String>);
    fn sample(&self) -> Vec<mnemo_protocol::system::GpuReading>;
    /// GPU memory by pid, where the driver reports it.
    fn process_memory(&self) -> std::collections::HashMap<u32, u64>;
}

pub struct SysinfoProbe {
    system: System,
    own_pid: Pid,
    data_dir: PathBuf,
}

impl SysinfoProbe {
    pub fn new(data_dir: &Path) -> Self {
        let mut system = System::new();
        system.refresh_cpu_usage();
        Self {
            system,
            own_pid: Pid::from_u32(std::process::id()),
            data_dir: data_dir.to_path_buf(),
        }
    }
}

/// The filesystem holding a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filesystem {
    pub total_bytes: u64,
    /// Free to this user (not counting blocks reserved for root).
    pub free_bytes: u64,
    /// Mounted read-only.
    pub read_only: bool,
}

/// The filesystem holding `path` (or its nearest existing ancestor).
#[cfg(unix)]
pub fn filesystem(path: &Path) -> Option<Filesystem> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let c_path = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c_path is a valid C string and stat a properly sized out-parameter.
    if unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) } != 0 {
        return None;
    }
    let block = stat.f_frsize as u64;
    Some(Filesystem {
        total_bytes: stat.f_blocks as u64 * block,
        free_bytes: stat.f_bavail as u64 * block,
        read_only: stat.f_flag & libc::ST_RDONLY != 0,
    })
}

#[cfg(not(unix))]
pub fn filesystem(_path: &Path) -> Option<Filesystem> {
    None
}

/// Total and free bytes of the filesystem holding `path`.
pub fn disk_space(path: &Path) -> Option<(u64, u64)> {
    filesystem(path).map(|f| (f.total_bytes, f.free_bytes))
}

impl HostProbe for SysinfoProbe {
    fn facts(&mut self) -> SystemProfile {
        self.system.refresh_memory();
        self.system
            .refresh_cpu_list(sysinfo::CpuRefreshKind::nothing());
        let cpus = self.system.cpus();
        SystemProfile {
            host_name: System::host_name(),
            os_name: System::name(),
            os_version: System::os_version(),
            kernel_version: System::kernel_version(),
            arch: System::cpu_arch(),
            cpu_model: cpus
                .first()
                .map(|c| c.brand().trim().to_string())
                .filter(|b| !b.is_empty()),
            cpu_cores: System::physical_core_count(),
            cpu_threads: cpus.len().max(1),
            ram_total_bytes: self.system.total_memory(),
            swap_total_bytes: self.system.total_swap(),
            disk_mount: Some(self.data_dir.display().to_string()),
            disk_total_bytes: disk_space(&self.data_dir).map(|d| d.0),
            ..Default::default()
        }
    }

    fn sample(&mut self) -> HostReading {
        self.system.refresh_cpu_usage();
        self.system.refresh_memory();
        self.system.refresh_processes_specifics(
            ProcessesToUpdate::Some(&[self.own_pid]),
            false,
            ProcessRefreshKind::nothing().with_cpu().with_memory(),
        );
        let own = self.system.process(self.own_pid);
        let load = System::load_average();
        let disk = disk_space(&self.data_dir);
        HostReading {
            cpu_pct: Some(self.system.global_cpu_usage()),
            load: (cfg!(unix)).then_some((load.one as f32, load.five as f32, load.fifteen as f32)),
            ram_total_bytes: self.system.total_memory(),
            ram_used_bytes: self.system.used_memory(),
            ram_available_bytes: self.system.available_memory(),
            swap_total_bytes: self.system.total_swap(),
            swap_used_bytes: self.system.used_swap(),
            disk_used_bytes: disk.map(|(total, free)| total.saturating_sub(free)),
            disk_free_bytes: disk.map(|d| d.1),
            // sysinfo reports per-process CPU as a share of one core ×100; scale to the machine.
            own_cpu_pct: own.map(|p| p.cpu_usage() / self.system.cpus().len().max(1) as f32),
            own_rss_bytes: own.map(|p| p.memory()),
        }
    }

    fn processes(&mut self) -> Vec<ProcessReading> {
        self.system.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing()
                .with_cpu()
                .with_memory()
                .with_cmd(UpdateKind::OnlyIfNotSet),
        );
        self.system
            .processes()
            .values()
            .filter(|p| p.thread_kind().is_none())
            .map(|p| {
                let cmd: Vec<String> = p
                    .cmd()
                    .iter()
                    .map(|c| c.to_string_lossy().to_string())
                    .collect();
                ProcessReading {
                    pid: p.pid().as_u32(),
                    start_time: p.start_time(),
                    name: p.name().to_string_lossy().to_string(),
                    cmdline: cmd.join(" ").chars().take(256).collect(),
                    cpu_pct: p.cpu_usage(),
                    rss_bytes: p.memory(),
                }
            })
            .collect()
    }
}
