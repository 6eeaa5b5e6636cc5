//! mnemod's engine. Modules follow ARCHITECTURE.md §2. Data flows one way: `server` ->
//! `ingest` / `recall` -> (`understand`, `embed`, `access`, `held`) -> `store`; the store
//! tells `held` of its commits through an observer rather than calling into it. The
//! background components (`hardware`, `consolidate`, `watch`, `maintenance`, re-embedding in
//! `embed`) depend on `store`, `held`, `embed` and the event bus, never on the server or
//! each other.
//! `daemon` builds them all and gives each only the handles it uses.

mod access;
mod agent;
pub mod config;
mod consolidate;
mod context;
pub mod daemon;
#[doc(hidden)]
pub mod embed;
mod error;
mod events;
mod graph;
mod hardware;
mod held;
mod httpjson;
mod ingest;
mod knowledge;
mod linalg;
mod living;
mod llm;
mod lock;
mod maintenance;
mod paging;
mod process;
mod readiness;
mod recall;
mod server;
mod sessions;
mod shutdown;
mod status;
mod store;
#[doc(hidden)]
pub mod understand;
mod usermodel;
mod watch;

/// For the embedding bench: the machine its figures were taken on.
pub use hardware::this_machine;
/// The Cargo profile this code was built with, as `status` reports it and every bench
/// prints it: figures from a debug build are 10–50× slower.
pub const BUILD_PROFILE: &str = if cfg!(debug_assertions) {
    "debug"
} else {
    "release"
};
/// For `main`: the socket-activation descriptor, read before the runtime starts.
pub use server::activation_fd;
