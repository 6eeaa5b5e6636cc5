//! The store's one error type, and the message clean-up every reply of it goes through.

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("storage: {0}")]
    Lance(String),
    #[error("storage schema: {0}")]
    Schema(String),
    #[error("the database was written by a newer mnemo (schema {found}, this one knows {known}); upgrade mnemo")]
    TooNew { found: u32, known: u32 },
    /// Someone else changed the row first.
    #[error("{0}")]
    Conflict(String),
    #[error("the writer has stopped (mnemod is shutting down)")]
    Closed,
    /// The encryption key is missing, wrong, or does not open a row.
    #[error("{0}")]
    Key(String),
}

/// A commit prepared beside the writer, to run in its turn (`WriterHandle::in_turn`).
pub type InTurn = futures::future::BoxFuture<'static, Result<u64, StoreError>>;

impl From<lancedb::Error> for StoreError {
    fn from(e: lancedb::Error) -> Self {
        StoreError::Lance(e.to_string())
    }
}

impl From<lance::Error> for StoreError {
    fn from(e: lance::Error) -> Self {
        StoreError::Lance(e.to_string())
    }
}

impl From<lancedb::arrow::arrow_schema::ArrowError> for StoreError {
    fn from(e: lancedb::arrow::arrow_schema::ArrowError) -> Self {
        StoreError::Schema(e.to_string())
    }
}

/// The message without the `/…/file.rs:12:34` locations the storage engine appends: they
/// name the build machine's paths and mean nothing to a client (the log keeps them).
pub fn without_source_locations(message: &str) -> String {
    let is_location = |word: &str| {
        let word = word.trim_end_matches([',', ')', '.', ';']);
        word.split_once(".rs:").is_some_and(|(path, line)| {
            (path.contains('/') || path.contains('\\'))
                && !line.is_empty()
                && line
                    .split(':')
                    .all(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    let kept: Vec<&str> = message
        .split(' ')
        .filter(|word| !is_location(word.trim_start_matches('(')))
        .collect();
    kept.join(" ")
        .replace(" ,", ",")
        .replace(", )", ")")
        .replace("()", "")
        .trim_end_matches([',', ' '])
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_lose_the_build_machines_paths() {
        let raw = "Commit conflict for version 7: This UpdateConfig transaction was preempted by concurrent transaction Rewrite at version 7. Please retry., /home/builder/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/lance-0.38.2/src/io/commit.rs:1663:27";
        let clean = without_source_locations(raw);
        assert!(
            !clean.contains(".rs:") && !clean.contains("/home"),
            "{clean}"
        );
        assert!(clean.ends_with("Please retry."), "{clean}");
        let nested = "IO error: not found (src/io.rs:12:5), then (C:\\b\\x.rs:3:1) done";
        assert_eq!(
            without_source_locations(nested),
            "IO error: not found then done"
        );
        // Words that only look a little like locations stay.
        let plain = "file notes.rs: see tools.rs:x";
        assert_eq!(without_source_locations(plain), plain);
    }
}
