//! The event bus: one broadcast channel every component publishes on and subscribers read.

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    MemoryAdded {
        id: String,
        namespace: String,
        kind: String,
    },
    MemoryUpdated {
        id: String,
        replaces: String,
    },
    MemoryForgotten {
        count: u64,
    },
    IndexMaintained {
        what: String,
    },
    Snapshot(Box<mnemo_client::protocol::system::Snapshot>),
    /// A run's progress (`done` of `total` units of `phase`) or its end (`status`).
    Consolidation {
        run_id: String,
        status: mnemo_client::protocol::consolidate::RunStatus,
        phase: Option<mnemo_client::protocol::consolidate::Phase>,
        done: u64,
        total: u64,
    },
}

pub type EventBus = tokio::sync::broadcast::Sender<Event>;

pub fn bus() -> EventBus {
    tokio::sync::broadcast::channel(1024).0
}
