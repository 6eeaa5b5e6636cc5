//! Health reporting: what each component says of itself for `daemon.status` and `mnemo doctor`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use mnemo_protocol::daemon::{ComponentHealth, ComponentState, ReembedStatus};

use crate::embed::{EmbedService, ReembedProgress};
use crate::hardware::Monitor;
use crate::shutdown::Shutdown;
use crate::store::WriterHandle;

/// Free space under which the store is reported as nearly full: a commit with its index
/// updates can take this much.
const LOW_DISK_BYTES: u64 = 64 << 20;

pub struct Health {
    pub started: Instant,
    /// Tells whether writes are failing now.
    pub writes: WriterHandle,
    pub embed: EmbedService,
    pub reembed: Arc<ReembedProgress>,
    pub hardware: Arc<Monitor>,
    pub db_dir: PathBuf,
    pub shutdown: Shutdown,
}

impl Health {
    pub fn reembed(&self) -> Option<ReembedStatus> {
        self.reembed.status()
    }

    pub fn components(&self) -> Vec<ComponentState> {
        let e = self.embed.embedder();
        let (state, mut detail) = match e.degraded() {
            Some(why) => (ComponentHealth::Degraded, why),
            None => (
                ComponentHealth::Ok,
                format!("{} ({} dimensions)", e.model_id(), e.dim()),
            ),
        };
        if let Some(r) = self.reembed() {
            detail.push_str(&format!(
                "; re-embedding {}/{} memories with {}",
                r.done, r.total, r.model
            ));
        }
        let stopping = self.shutdown.is_requested();
        vec![
            ComponentState {
                name: "embedder".into(),
                state,
                detail,
            },
            self.store(),
            ComponentState {
                name: "hardware".into(),
                state: ComponentHealth::Ok,
                detail: format!(
                    "snapshots every {} s; GPU: {}",
                    self.hardware.config.snapshot_interval_secs,
                    self.hardware.gpu_status()
                ),
            },
            ComponentState {
                name: "server".into(),
                state: if stopping {
                    ComponentHealth::Degraded
                } else {
                    ComponentHealth::Ok
                },
                detail: if stopping {
                    "shutting down".into()
                } else {
                    "accepting".into()
                },
            },
        ]
    }

    /// Degraded while the store cannot take writes (searches still work), with why.
    fn store(&self) -> ComponentState {
        let place = format!("LanceDB at {}", self.db_dir.display());
        let (state, detail) = match disk_problem(&self.db_dir).or_else(|| {
            self.writes
                .failing()
                .map(|why| format!("the last write failed: {why}"))
        }) {
            Some(problem) => (
                ComponentHealth::Degraded,
                format!("{place}: {problem}; searches work, writes fail until it is fixed"),
            ),
            None => (ComponentHealth::Ok, place),
        };
        ComponentState {
            name: "store".into(),
            state,
            detail,
        }
    }
}

/// Why the database directory cannot take writes, found without writing.
fn disk_problem(db_dir: &Path) -> Option<String> {
    let fs = crate::hardware::probe::filesystem(db_dir)?;
    if fs.read_only {
        return Some("the file system is mounted read-only".into());
    }
    if !writable(db_dir) || !writable(&db_dir.join(format!("{}.lance", crate::store::MEMORIES))) {
        return Some(format!(
            "read-only: no write permission (`chmod -R u+w {}`)",
            db_dir.display()
        ));
    }
    (fs.free_bytes < LOW_DISK_BYTES).then(|| {
        format!(
            "the disk is full ({} MiB free); free some space",
            fs.free_bytes >> 20
        )
    })
}

/// Whether this process may write in `dir` (true when it does not exist yet).
fn writable(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        if !dir.exists() {
            return true;
        }
        let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
            return true;
        };
        // SAFETY: a valid C string; access only checks permissions.
        unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        true
    }
}
