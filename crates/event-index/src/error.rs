//! Errors of event index files.

use std::path::Path;

/// What can go wrong building, reading or querying an event index.
#[derive(Debug, thiserror::Error)]
pub enum EventIndexError {
    /// An I/O error on an index file.
    #[error("{action} {path}: {source}")]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// Bytes that are not a well-formed index (truncated, damaged, hostile).
    #[error("event index is corrupt: {0}")]
    Corrupt(String),
    /// The SHA-256 trailer does not match the bytes before it.
    #[error("event index checksum mismatch")]
    Checksum,
    /// Input an index cannot be built from (out of order, out of range,
    /// a diagnostic event, too many events, non-adjacent merge parts).
    #[error("cannot build event index: {0}")]
    Invalid(String),
    /// A query outside getEvents' limits (filters, contract ids, topics,
    /// segments, `**` not last).
    #[error("invalid event query: {0}")]
    Query(String),
}

/// Result of event index operations.
pub type EventIndexResult<T> = Result<T, EventIndexError>;

impl EventIndexError {
    /// Wraps an I/O error with the file and the action.
    pub fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.display().to_string();
        move |source| EventIndexError::Io {
            action,
            path,
            source,
        }
    }

    pub(crate) fn corrupt(what: impl Into<String>) -> Self {
        EventIndexError::Corrupt(what.into())
    }
}
