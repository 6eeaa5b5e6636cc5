//! What the engine's request paths (ingest, recall) answer when they cannot do what was asked.
//! Domain errors only: the server maps them to JSON-RPC errors once, at its edge.

use crate::embed::EmbedError;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request itself is wrong; the message says what to change.
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    /// Someone else changed it first; the message says what to do.
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::Invalid(message.into())
    }

    pub fn memory_not_found(id: &str) -> Self {
        Error::NotFound(format!(
            "no memory with id `{id}`; `mnemo list` shows the ids there are"
        ))
    }
}
