//! The wire contract between `mnemod` and every client: JSON-RPC 2.0, one JSON value per
//! line. Each method is a type implementing [`Method`], which names it and fixes its params
//! and result, so daemon handlers and client calls cannot disagree.

pub mod consolidate;
pub mod daemon;
pub mod events;
pub mod jsonrpc;
pub mod memory;
pub mod system;
pub mod time;

use serde::{de::DeserializeOwned, Deserialize, Serialize};

pub use jsonrpc::{codes, Id, Request, Response, RpcError};

/// Bumped on any incompatible change to a method's params or result.
pub const PROTOCOL_VERSION: u32 = 1;
/// Default largest frame (one line) either side accepts.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

pub trait Method {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned + Send + 'static;
    type Result: Serialize + DeserializeOwned + Send + 'static;
}

/// Params of a method that takes none: `{}`, `null` or absent.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}
