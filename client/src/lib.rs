//! mnemo's client side: an async client for `mnemod` over its local socket. The wire types and
//! default paths live in `mnemo-protocol`; the `mnemo` CLI is this crate's binary.

pub mod client;
pub mod fuzz;

pub use client::{Client, ClientError};
