//! The event bus: one broadcast channel every component publishes on and subscribers read.
//! The events are the protocol's, so what a `subscribe` client receives is what was sent.

pub use mnemo_protocol::events::Event;

pub type EventBus = tokio::sync::broadcast::Sender<Event>;

pub fn bus() -> EventBus {
    tokio::sync::broadcast::channel(1024).0
}
