//! The crate's one error type.

use std::path::Path;

use ledgerstore_event_index::EventIndexError;
use ledgerstore_stellar::events::EventId;
use ledgerstore_store::StoreError;

/// What can go wrong opening, building or querying the events store.
#[derive(Debug, thiserror::Error)]
pub enum EventsError {
    /// A setting out of its range.
    #[error("events config: {field} = {value}: must be {allowed}")]
    Config {
        /// The field (`events.file_ledgers`, ...).
        field: &'static str,
        /// The value given.
        value: String,
        /// The allowed range, in words.
        allowed: &'static str,
    },
    /// An I/O error on a file of the events dir.
    #[error("{action} {path}: {source}")]
    Io {
        /// What we were doing.
        action: &'static str,
        /// The file or dir.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A file of the events dir that is not ours, or a name or marker we
    /// cannot read.
    #[error("events dir {dir}: {what}")]
    Dir {
        /// The events dir.
        dir: String,
        /// What is wrong, naming the file.
        what: String,
    },
    /// An index file (named) that is damaged or cannot be built.
    #[error("event index {file}: {source}")]
    Index {
        /// The file (or `tail` for the in-memory index).
        file: String,
        /// The cause.
        source: EventIndexError,
    },
    /// A query the index refuses (filters beyond getEvents' limits).
    #[error("{0}")]
    Query(EventIndexError),
    /// The store failed to answer.
    #[error("ledger {seq}: reading the store: {source}")]
    Store {
        /// The ledger being read.
        seq: u32,
        /// The cause.
        source: StoreError,
    },
    /// A ledger the store should hold is not there.
    #[error("ledger {0} is not in the store")]
    MissingLedger(u32),
    /// A stored ledger whose events cannot be read (not a Stellar
    /// `LedgerCloseMeta`, or events stellar-rpc cannot serve).
    #[error("ledger {seq}: events: {what}")]
    Ledger {
        /// The ledger.
        seq: u32,
        /// Why.
        what: String,
    },
    /// The index names an event its ledger does not hold: the index and
    /// the store disagree.
    #[error("event {id} is indexed but not in ledger {}", id.ledger)]
    MissingEvent {
        /// The event.
        id: EventId,
    },
}

/// Result of the events store.
pub type EventsResult<T> = Result<T, EventsError>;

impl EventsError {
    /// Whether the error says an index file is damaged: it does not decode
    /// where a query read it, or it lists an event its ledger does not
    /// hold. The file is then dropped and rebuilt.
    pub(crate) fn means_damage(&self) -> bool {
        matches!(
            self,
            EventsError::Query(ledgerstore_event_index::EventIndexError::Corrupt(_))
                | EventsError::MissingEvent { .. }
        )
    }

    /// Wraps an I/O error with the path and the action.
    pub(crate) fn io(
        path: &Path,
        action: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.display().to_string();
        move |source| EventsError::Io {
            action,
            path,
            source,
        }
    }

    pub(crate) fn dir(dir: &Path, what: impl Into<String>) -> Self {
        EventsError::Dir {
            dir: dir.display().to_string(),
            what: what.into(),
        }
    }

    pub(crate) fn index(file: &Path, source: EventIndexError) -> Self {
        EventsError::Index {
            file: file.display().to_string(),
            source,
        }
    }

    pub(crate) fn ledger(seq: u32, what: impl std::fmt::Display) -> Self {
        EventsError::Ledger {
            seq,
            what: what.to_string(),
        }
    }
}
