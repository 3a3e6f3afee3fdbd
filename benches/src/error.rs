//! The benches' error type.

use ledgerstore_db_api::DbError;
use ledgerstore_store::StoreError;

/// Anything that stops a bench or the study.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An environment knob has a value that cannot be used.
    #[error("{name}={value:?}: expected {expected}")]
    Knob {
        /// Variable name.
        name: &'static str,
        /// What was given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An engine failed outside the store.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A file could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A fixture or a result is not what it should be.
    #[error("{0}")]
    Invalid(String),
    /// The plot could not be drawn.
    #[error("plot: {0}")]
    Plot(String),
}

/// Result of the benches' helpers.
pub type BenchResult<T> = Result<T, BenchError>;

impl BenchError {
    /// Maps an I/O error, naming what was being done.
    pub fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}
