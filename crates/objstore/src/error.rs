//! The crate's one error type.

/// Object-storage errors.
#[derive(Debug, thiserror::Error)]
pub enum ObjStoreError {
    /// The location string does not parse.
    #[error("location {location:?}: expected {expected}")]
    Location {
        /// What was given.
        location: String,
        /// What is accepted.
        expected: String,
    },
    /// An option does not fit the location.
    #[error("{location}: {detail}")]
    Options {
        /// The location, as given.
        location: String,
        /// What is wrong and how to fix it.
        detail: String,
    },
    /// The store could not be built (bad endpoint, TLS, …).
    #[error("{location}: {source}")]
    Build {
        /// The location, as given.
        location: String,
        /// object_store's error.
        #[source]
        source: object_store::Error,
    },
}

/// Results of this crate.
pub type ObjStoreResult<T> = Result<T, ObjStoreError>;
