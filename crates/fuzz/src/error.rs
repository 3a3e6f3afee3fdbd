//! Errors of the seed builders (the targets themselves never return one).

use std::path::PathBuf;

/// Why a seed corpus could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FuzzError {
    /// A fixture could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A fixture did not decode as it must.
    #[error("fixture {name}: {detail}")]
    Fixture {
        /// The fixture.
        name: String,
        /// What was wrong.
        detail: String,
    },
    /// No target has that name.
    #[error("no fuzz target named {name:?}; the targets are {targets}")]
    UnknownTarget {
        /// The name asked for.
        name: String,
        /// Every target's name.
        targets: String,
    },
    /// Building a seed segment failed.
    #[error(transparent)]
    Segment(#[from] ledgerstore_segment::SegmentError),
    /// Writing a seed pack failed.
    #[error(transparent)]
    Pack(#[from] ledgerstore_pack::PackError),
    /// Encoding a seed record failed.
    #[error(transparent)]
    Db(#[from] ledgerstore_db_api::DbError),
}

/// A result of this crate.
pub type FuzzResult<T> = Result<T, FuzzError>;

impl FuzzError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }
}
