//! Live events: `subscribe` to topics, then `event` notifications arrive on the same
//! connection (`{"jsonrpc":"2.0","method":"event","params":{"topic":..,"event":..}}`)
//! between the replies, until `unsubscribe` or the connection closes.

use serde::{Deserialize, Serialize};

use super::consolidate::{Phase, RunStatus};
use super::system::Snapshot;

/// The method name of event notifications.
pub const EVENT: &str = "event";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topic {
    /// Every resource snapshot as it is taken.
    Snapshot,
    /// Memories added, updated, forgotten; index maintenance.
    Memory,
    /// Consolidation progress and run ends.
    Consolidation,
}

impl Topic {
    pub const ALL: [Topic; 3] = [Topic::Snapshot, Topic::Memory, Topic::Consolidation];
}

/// Everything mnemod publishes on its event bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    MemoryAdded {
        id: String,
        namespace: String,
        kind: String,
        /// The first line of the content, shortened, for live feeds.
        #[serde(default)]
        preview: String,
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
    Snapshot(Box<Snapshot>),
    /// A run's progress (`done` of `total` units of `phase`) or its end (`status`).
    Consolidation {
        run_id: String,
        status: RunStatus,
        phase: Option<Phase>,
        done: u64,
        total: u64,
    },
}

impl Event {
    pub fn topic(&self) -> Topic {
        match self {
            Event::Snapshot(_) => Topic::Snapshot,
            Event::Consolidation { .. } => Topic::Consolidation,
            _ => Topic::Memory,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventParams {
    pub topic: Topic,
    pub event: Event,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicsParams {
    /// Empty or absent: every topic.
    #[serde(default)]
    pub topics: Vec<Topic>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TopicsResult {
    /// What this connection is subscribed to now.
    pub topics: Vec<Topic>,
}

crate::methods! {
    Subscribe = "subscribe" (TopicsParams) -> TopicsResult;
    Unsubscribe = "unsubscribe" (TopicsParams) -> TopicsResult;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_name_their_topic_and_round_trip() {
        let e = Event::MemoryAdded {
            id: "a".into(),
            namespace: "default".into(),
            kind: "episodic".into(),
            preview: "hi".into(),
        };
        assert_eq!(e.topic(), Topic::Memory);
        let text = serde_json::to_string(&EventParams {
            topic: e.topic(),
            event: e.clone(),
        })
        .unwrap();
        assert!(text.contains("\"type\":\"memory_added\""), "{text}");
        let back: EventParams = serde_json::from_str(&text).unwrap();
        assert_eq!(back.event, e);
    }
}
