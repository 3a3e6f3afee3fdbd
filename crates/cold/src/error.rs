//! The cold tier's error type, and its conversion to the store's (reads
//! answer with [`StoreError`], so the APIs map codes in one place).

use ledgerstore_pack::PackError;
use ledgerstore_store::StoreError;

/// Errors of publishing and of replica reads.
#[derive(Debug, thiserror::Error)]
pub enum ColdError {
    /// The object store failed or refused a request (after retries).
    /// `cause` names the store and its endpoint: it is shown to the
    /// operator (logs, the writer's errors) and never to a replica's
    /// clients (see `From<ColdError> for StoreError`).
    #[error("object {object}: {detail}: {cause}")]
    Remote {
        /// The object's key.
        object: String,
        /// What failed, in words a client may see.
        detail: String,
        /// The store's own error (location, endpoint, status).
        cause: String,
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
    /// A dictionary version this data dir holds has other bytes than the
    /// one the published packs were compressed with.
    #[error(
        "dictionary version {version}: this data dir's has SHA-256 {local}, the one {location} \
         publishes (manifest {manifest}) has SHA-256 {published}; the published packs need \
         theirs, so this round would make them unreadable. This data dir was rebuilt or is \
         another writer's: publish it to another location, or publish from the data dir that \
         trained version {version}"
    )]
    DictReplaced {
        /// The dictionary version.
        version: u32,
        /// SHA-256 of the published dictionary.
        published: String,
        /// SHA-256 of this data dir's.
        local: String,
        /// The store.
        location: String,
        /// The manifest that lists the published one.
        manifest: u64,
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
    /// The round was stopped (the daemon is shutting down) before it
    /// finished; the previous manifest stays valid and the next round
    /// redoes the rest.
    #[error("publish round stopped before {0}: shutting down")]
    Stopped(String),
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

    /// What a client may be told of this failure (GetStatus'
    /// `follow_error`): the object and what failed, never the store's
    /// location, endpoint or credentials, which the log keeps.
    pub fn client_text(&self) -> String {
        match self {
            Self::Remote { object, detail, .. } => format!("object {object}: {detail}"),
            Self::Damaged { .. } => self.to_string(),
            _ => "reading the published manifest failed (the cause is in the server's log)".into(),
        }
    }

    /// Names the ledgers an object read was for (what a client can act
    /// on), for the errors a read answers with.
    pub(crate) fn for_ledgers(self, first: u32, last: u32) -> Self {
        self.map_detail(|d| format!("ledgers {first}..={last}: {d}"))
    }

    /// An object read's error with its detail (what a client may be told)
    /// rewritten by `f`; any other error as it is.
    pub(crate) fn map_detail(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            Self::Remote {
                object,
                detail,
                cause,
            } => Self::Remote {
                object,
                detail: f(detail),
                cause,
            },
            Self::Damaged { object, detail } => Self::Damaged {
                object,
                detail: f(detail),
            },
            other => other,
        }
    }
}

impl From<ColdError> for StoreError {
    fn from(e: ColdError) -> Self {
        match e {
            ColdError::Remote {
                object,
                detail,
                cause,
            } => {
                // The cause names the bucket and the endpoint: the log
                // keeps it, the client gets the object and its ledgers.
                tracing::warn!(object = %object, cause = %cause, "{detail}");
                StoreError::Remote { object, detail }
            }
            ColdError::Damaged { object, detail } => StoreError::RemoteDamaged { object, detail },
            ColdError::Store(e) => e,
            other => StoreError::Corrupt(other.to_string()),
        }
    }
}

/// A failure shared by every lookup that needed the same read, as each
/// of them would have met it.
pub(crate) fn dup(e: &ColdError) -> ColdError {
    match e {
        ColdError::Remote {
            object,
            detail,
            cause,
        } => ColdError::Remote {
            object: object.clone(),
            detail: detail.clone(),
            cause: cause.clone(),
        },
        ColdError::Damaged { object, detail } => ColdError::Damaged {
            object: object.clone(),
            detail: detail.clone(),
        },
        ColdError::Io { context, source } => ColdError::Io {
            context: context.clone(),
            source: std::io::Error::new(source.kind(), source.to_string()),
        },
        ColdError::Store(StoreError::DeadlinePassed { what }) => {
            ColdError::Store(StoreError::DeadlinePassed { what: what.clone() })
        }
        ColdError::Store(StoreError::Corrupt(detail)) => {
            ColdError::Store(StoreError::Corrupt(detail.clone()))
        }
        // Already a task's failure: shared again as it is, not wrapped in
        // a second "task failed:".
        ColdError::Task(detail) => ColdError::Task(detail.clone()),
        other => ColdError::Task(other.to_string()),
    }
}

/// Result alias.
pub type ColdResult<T> = Result<T, ColdError>;

/// Runs `f` on tokio's blocking pool (store reads, hashing, compression);
/// a task that panicked or was cancelled is [`ColdError::Task`].
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ColdResult<T> + Send + 'static,
) -> ColdResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ColdError::Task(e.to_string()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure shared again (a batch shares a piece's failure with
    /// each lookup that needed it, at each step) reads as it did the
    /// first time, not wrapped in a second "task failed:".
    #[test]
    fn a_failure_shared_again_reads_as_it_did() {
        let failures = [
            ColdError::Task("a read was lost".into()),
            ColdError::damaged("packs/p.pack", "ledger 3: bad frame"),
            ColdError::Store(StoreError::Corrupt("a bad record".into())),
        ];
        for e in failures {
            let once = dup(&e);
            let thrice = dup(&dup(&once));
            assert_eq!(thrice.to_string(), once.to_string(), "{e:?}");
            assert!(
                !once.to_string().contains("task failed: task failed"),
                "{once}"
            );
            assert_eq!(
                StoreError::from(thrice).to_string(),
                StoreError::from(e).to_string(),
                "as the lookup met it"
            );
        }
    }
}
