//! mnemo's client side: the protocol every party speaks, where the socket lives, and an async
//! client. The `mnemo` CLI is this crate's binary; the daemon uses only [`protocol`] and
//! [`paths`].

pub mod client;
pub mod manpage;
pub mod paths;
pub mod protocol;

pub use client::{Client, ClientError};
