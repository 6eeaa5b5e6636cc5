//! mnemod's engine. Modules follow ARCHITECTURE.md §2; `ingest` holds the write pipeline
//! (validate -> understand -> embed -> store) that the architecture draws as a data flow.

pub mod config;
pub mod consolidate;
pub mod daemon;
pub mod embed;
pub mod engine;
pub mod events;
pub mod hardware;
pub mod httpjson;
pub mod ingest;
pub mod linalg;
pub mod llm;
pub mod lock;
pub mod readiness;
pub mod recall;
pub mod server;
pub mod store;
pub mod understand;
