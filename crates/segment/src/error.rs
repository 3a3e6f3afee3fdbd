//! Errors of segment files.

use std::path::Path;

/// What can go wrong building or reading a segment.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// An I/O error on a segment file.
    #[error("{action} {path}: {source}")]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A segment file that fails verification.
    #[error("segment {path} is corrupt: {detail}")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// Input a segment cannot be built from.
    #[error("cannot build segment: {0}")]
    Invalid(String),
    /// The build was asked to stop (its temporary files are left for the
    /// next open to remove).
    #[error("segment build stopped")]
    Cancelled,
}

/// Result of segment operations.
pub type SegmentResult<T> = Result<T, SegmentError>;

impl SegmentError {
    /// Wraps an I/O error with the file and the action.
    pub fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.display().to_string();
        move |source| SegmentError::Io {
            action,
            path,
            source,
        }
    }
}
