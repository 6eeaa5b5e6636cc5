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
            self.hardware(),
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

    /// Degraded while the sampler has fallen behind: no snapshot for three intervals.
    fn hardware(&self) -> ComponentState {
        let every = self.hardware.config.snapshot_interval_secs.max(1);
        let latest = self
            .hardware
            .snapshot()
            .and_then(|s| mnemo_protocol::time::parse_micros(&s.at).ok());
        let stale = sampler_problem(
            latest,
            mnemo_protocol::time::now_micros(),
            self.started.elapsed().as_secs(),
            every,
        );
        let gpu = self.hardware.gpu_status();
        match stale {
            Some(problem) => ComponentState {
                name: "hardware".into(),
                state: ComponentHealth::Degraded,
                detail: format!("{problem}; GPU: {gpu}"),
            },
            None => ComponentState {
                name: "hardware".into(),
                state: ComponentHealth::Ok,
                detail: format!("snapshots every {every} s; GPU: {gpu}"),
            },
        }
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

/// Why the sampler is behind, if it is: its latest snapshot (µs) is older than three intervals,
/// or none was taken in the first three intervals after start.
fn sampler_problem(latest: Option<i64>, now: i64, up_secs: u64, every: u64) -> Option<String> {
    let late_after = 3 * every;
    match latest {
        Some(at) => {
            let age = (now.saturating_sub(at) / 1_000_000).max(0) as u64;
            (age > late_after)
                .then(|| format!("the last snapshot is {age} s old (one is due every {every} s)"))
        }
        None => (up_secs > late_after)
            .then(|| format!("no snapshot yet after {up_secs} s (one is due every {every} s)")),
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

#[cfg(test)]
mod tests {
    use super::sampler_problem;

    const S: i64 = 1_000_000;

    #[test]
    fn a_fresh_snapshot_is_healthy() {
        assert_eq!(sampler_problem(Some(100 * S), 104 * S, 60, 5), None);
    }

    #[test]
    fn an_old_snapshot_says_how_old() {
        let why = sampler_problem(Some(100 * S), 160 * S, 600, 5).expect("stale");
        assert!(why.contains("60 s old"), "{why}");
    }

    #[test]
    fn no_snapshot_is_fine_only_at_first() {
        assert_eq!(sampler_problem(None, 0, 2, 5), None);
        let why = sampler_problem(None, 0, 40, 5).expect("late");
        assert!(why.contains("no snapshot yet after 40 s"), "{why}");
    }
}
