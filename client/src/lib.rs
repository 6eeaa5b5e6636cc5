//! mnemo's client side: an async client for `mnemod` over its local socket. The wire types and
//! default paths live in `mnemo-protocol`; the `mnemo` CLI is this crate's binary, and what it
//! shares with the bench (`mnemo-bench`) lives here: LoCoMo samples as memories, progress on
//! stderr, waiting for a consolidation run.

pub mod client;
pub mod locomo;
pub mod progress;
pub mod runs;

pub use client::{Client, ClientError};

/// The exit status of a command that failed with `e`: sysexits' `EX_UNAVAILABLE` (69) when
/// mnemod is not running, apart from clap's 2 for a usage error and 1 for the rest, so a
/// script can tell "start mnemod" from "fix the command".
pub fn exit_status(e: &anyhow::Error) -> u8 {
    match e.downcast_ref::<ClientError>() {
        Some(ClientError::NotRunning { .. }) => 69,
        _ => 1,
    }
}
