//! The cold tier's error type, and its conversion to the store's (reads
//! answer with [`StoreError`], so the APIs map codes in one place).

use ledgerstore_pack::PackError;
use ledgerstore_store::StoreError;

/// Errors of publishing and of replica reads.
#[derive(Debug, thiserror::Error)]
pub enum ColdError {
    /// The object store failed or refused a request (after retries).
    #[error("object {object}: {detail}")]
    Remote {
        /// The object's key.
        object: String,
        /// What failed.
        detail: String,
    },
    /// An object is missing, or its bytes are not what the manifest says.
    #[error("object {object} is missing or damaged: {detail}")]
    Damaged {
        /// The object's key.
        object: String,
        /// What is wrong.
        detail: String,
    },
    /// Another writer published the manifest version this one was about
    /// to create.
    #[error(
        "manifest {key} already exists: another writer publishes to this store. One store has \
         one writer; stop the other, or publish to another location"
    )]
    Conflict {
        /// The manifest's key.
        key: String,
    },
    /// What is published does not continue this data dir's history.
    #[error("{0}")]
    Diverged(String),
    /// A range cannot be published yet.
    #[error("{0}")]
    NotReady(String),
    /// The local store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A pack could not be written or read.
    #[error(transparent)]
    Pack(#[from] PackError),
    /// Local files (the cache, packs being written).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A task died.
    #[error("task failed: {0}")]
    Task(String),
}

impl ColdError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }

    pub(crate) fn damaged(object: &str, detail: impl Into<String>) -> Self {
        Self::Damaged {
            object: object.to_string(),
            detail: detail.into(),
        }
    }
}

impl From<ColdError> for StoreError {
    fn from(e: ColdError) -> Self {
        match e {
            ColdError::Remote { object, detail } => StoreError::Remote { object, detail },
            ColdError::Damaged { object, detail } => StoreError::RemoteDamaged { object, detail },
            ColdError::Store(e) => e,
            other => StoreError::Corrupt(other.to_string()),
        }
    }
}

/// Result alias.
pub type ColdResult<T> = Result<T, ColdError>;
