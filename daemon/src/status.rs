//! Health reporting: what each component says of itself for `daemon.status` and `mnemo doctor`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use mnemo_protocol::daemon::{ComponentHealth, ComponentState, ReembedStatus};

use crate::embed::{EmbedService, ReembedProgress};
use crate::hardware::Monitor;
use crate::shutdown::Shutdown;

pub struct Health {
    pub started: Instant,
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
            ComponentState {
                name: "store".into(),
                state: ComponentHealth::Ok,
                detail: format!("LanceDB at {}", self.db_dir.display()),
            },
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
}
