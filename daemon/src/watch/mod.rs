//! Notes folders (`[[watch]]`): each folder is scanned when mnemod starts, then followed as
//! its files change. Every paragraph of a note is a memory (see `mnemo_protocol::notes`); an
//! edited note supersedes exactly the paragraphs that changed, a deleted one forgets its
//! memories, a renamed one moves them. The store is the only record of what came from where
//! (the source and metadata of the current memories), so a restart, or a change made while
//! mnemod was down, is caught up by the next scan.

mod folder;
mod follow;
mod plan;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use mnemo_protocol::daemon::WatchedFolder;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::WatchConfig;
use crate::ingest::Ingest;
use crate::shutdown::Shutdown;
use crate::store::Store;

/// The watched folders' progress, for `daemon.status` and the dashboard.
#[derive(Default)]
pub struct Watch {
    folders: Vec<Arc<Mutex<WatchedFolder>>>,
}

impl Watch {
    /// Starts one follower per folder. `activity` tells when a request for memory work
    /// arrived: a first scan steps aside for it, as consolidation does.
    pub fn start(
        configs: &[WatchConfig],
        ingest: Arc<Ingest>,
        store: Arc<Store>,
        activity: watch::Receiver<Option<Instant>>,
        shutdown: Shutdown,
    ) -> (Arc<Self>, Vec<JoinHandle<()>>) {
        let mut watch = Watch::default();
        let mut tasks = Vec::new();
        for config in configs {
            let status = Arc::new(Mutex::new(WatchedFolder {
                path: config.path.display().to_string(),
                namespace: config.namespace.clone(),
                state: "starting".into(),
                ..Default::default()
            }));
            watch.folders.push(status.clone());
            let follower = follow::Follower::new(
                config.clone(),
                ingest.clone(),
                store.clone(),
                status,
                activity.clone(),
                shutdown.clone(),
            );
            tasks.push(tokio::spawn(follower.run()));
        }
        (Arc::new(watch), tasks)
    }

    pub fn status(&self) -> Vec<WatchedFolder> {
        self.folders
            .iter()
            .map(|f| f.lock().expect("watch status lock").clone())
            .collect()
    }
}
