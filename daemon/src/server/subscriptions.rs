//! Per-connection state: the event topics a client subscribed to, and the task that forwards
//! matching bus events to it as `event` notifications between its replies.

use std::collections::BTreeSet;
use std::sync::Arc;

use mnemo_protocol::events::{EventParams, Topic, TopicsParams, TopicsResult, EVENT};
use tokio::sync::{broadcast, mpsc, watch};

use super::budget::Outgoing;
use super::state::State;

#[derive(Default)]
pub struct Subscriptions {
    topics: watch::Sender<BTreeSet<Topic>>,
}

impl Subscriptions {
    fn topics(&self) -> TopicsResult {
        TopicsResult {
            topics: self.topics.borrow().iter().copied().collect(),
        }
    }

    /// Adds topics (all when none are named).
    pub fn subscribe(&self, p: TopicsParams) -> TopicsResult {
        self.topics.send_modify(|t| t.extend(chosen(p)));
        self.topics()
    }

    /// Drops topics (all when none are named).
    pub fn unsubscribe(&self, p: TopicsParams) -> TopicsResult {
        let drop = chosen(p);
        self.topics.send_modify(|t| t.retain(|x| !drop.contains(x)));
        self.topics()
    }
}

fn chosen(p: TopicsParams) -> Vec<Topic> {
    if p.topics.is_empty() {
        Topic::ALL.to_vec()
    } else {
        p.topics
    }
}

/// Sends the events of the subscribed topics to `replies` until the connection goes. Reads
/// the bus only while subscribed, so an idle connection costs nothing.
pub async fn forward_events(
    subscriptions: Arc<Subscriptions>,
    engine: Arc<State>,
    replies: mpsc::Sender<Outgoing>,
) {
    let mut topics = subscriptions.topics.subscribe();
    let mut events: Option<broadcast::Receiver<crate::events::Event>> = None;
    loop {
        let event = match events.as_mut() {
            None => {
                // Checked before waiting: a subscribe may have come before this task ran.
                if !topics.borrow_and_update().is_empty() {
                    events = Some(engine.events.subscribe());
                    continue;
                }
                tokio::select! {
                    changed = topics.changed() => if changed.is_err() { return },
                    _ = replies.closed() => return,
                }
                continue;
            }
            Some(rx) => tokio::select! {
                changed = topics.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if topics.borrow_and_update().is_empty() {
                        events = None;
                    }
                    continue;
                }
                _ = replies.closed() => return,
                event = rx.recv() => event,
            },
        };
        match event {
            Ok(event) => {
                let topic = event.topic();
                if !topics.borrow().contains(&topic) {
                    continue;
                }
                let notification = serde_json::json!({
                    "jsonrpc": "2.0",
                    "method": EVENT,
                    "params": EventParams { topic, event },
                });
                if replies
                    .send(Outgoing::plain(notification.to_string()))
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!("a subscriber fell behind and missed {missed} events");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
