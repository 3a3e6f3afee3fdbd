//! The one mapping from failures to JSON-RPC error objects.
//!
//! Codes follow stellar-rpc: a bad parameter (hash, cursor, xdrFormat,
//! unknown field) is -32602 (invalid params); a request outside what this
//! instance holds (`startLedger` out of range, a limit above the maximum,
//! both `startLedger` and `cursor`) is -32600 (invalid request); anything
//! the store or the stored data fails at is -32603 (internal error), with
//! a message that says why; so are a deadline passed and a server too
//! busy to take another ledger-reading call.

use jsonrpsee::types::ErrorObjectOwned;
use ledgerstore_store::StoreError;

/// JSON-RPC 2.0 "invalid request".
pub const INVALID_REQUEST: i32 = -32600;
/// JSON-RPC 2.0 "invalid params".
pub const INVALID_PARAMS: i32 = -32602;
/// JSON-RPC 2.0 "internal error".
pub const INTERNAL_ERROR: i32 = -32603;

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// A parameter is malformed: its name and what is expected.
    #[error("{0}")]
    InvalidParams(String),
    /// A well-formed request this instance cannot answer (out of range).
    #[error("{0}")]
    InvalidRequest(String),
    /// One item of the answer is larger than the room it has: the
    /// response limit, or what is left of its batch's budget (a batch
    /// whose call gets this has spent its budget).
    #[error("{0}")]
    NoRoom(String),
    /// The store is opening or shutting down.
    #[error("{0}")]
    Unavailable(String),
    /// The call outlived `query.timeout_ms`.
    #[error("the request took longer than {0} ms (query.timeout_ms)")]
    Timeout(u64),
    /// Too many ledger-reading calls at once: refused, or waited in line
    /// until its deadline.
    #[error("{0}")]
    Busy(String),
    /// The store failed.
    #[error("storage error: {0}")]
    Store(#[from] StoreError),
    /// The event index failed.
    #[error("event index error: {0}")]
    Events(#[from] ledgerstore_events::EventsError),
    /// Stored data is not what a Stellar method can serve: synthetic
    /// ledgers, or XDR that does not decode.
    #[error("{0}")]
    NotStellar(String),
    /// A bug: a task panicked or failed to join.
    #[error("internal error: {0}")]
    Internal(String),
}

impl RpcError {
    /// The JSON-RPC error code.
    pub fn code(&self) -> i32 {
        match self {
            Self::InvalidParams(_) => INVALID_PARAMS,
            Self::InvalidRequest(_) | Self::NoRoom(_) => INVALID_REQUEST,
            Self::Unavailable(_)
            | Self::Timeout(_)
            | Self::Busy(_)
            | Self::Store(_)
            | Self::Events(_)
            | Self::NotStellar(_)
            | Self::Internal(_) => INTERNAL_ERROR,
        }
    }

    /// Whether the store stopped this call's read at the call's deadline
    /// (directly, or under getEvents' read of a ledger): such a call
    /// answers as its timeout does ([`RpcError::Timeout`]), whichever of
    /// the two noticed the deadline first.
    pub(crate) fn stopped_by_deadline(&self) -> bool {
        matches!(
            self,
            Self::Store(StoreError::DeadlinePassed { .. })
                | Self::Events(ledgerstore_events::EventsError::Store {
                    source: StoreError::DeadlinePassed { .. },
                    ..
                })
        )
    }

    pub(crate) fn params(msg: impl Into<String>) -> Self {
        Self::InvalidParams(msg.into())
    }

    pub(crate) fn request(msg: impl Into<String>) -> Self {
        Self::InvalidRequest(msg.into())
    }
}

impl From<RpcError> for ErrorObjectOwned {
    fn from(e: RpcError) -> Self {
        ErrorObjectOwned::owned(e.code(), e.to_string(), None::<()>)
    }
}

/// Result of a method.
pub type RpcResult<T> = Result<T, RpcError>;

#[cfg(test)]
mod tests {
    use ledgerstore_events::EventsError;

    use super::*;

    fn passed() -> StoreError {
        StoreError::DeadlinePassed {
            what: "a lookup waiting for the index of ledgers 1-10".into(),
        }
    }

    /// The deadline, met inside the store or under getEvents' ledger
    /// read, is the call's timeout; other store failures, and other
    /// failures of getEvents' read, keep their own answer.
    #[test]
    fn only_a_read_stopped_by_its_deadline_answers_as_the_timeout() {
        let events = |source| EventsError::Store { seq: 7, source };
        assert!(RpcError::Store(passed()).stopped_by_deadline());
        assert!(RpcError::Events(events(passed())).stopped_by_deadline());
        let unavailable = || StoreError::Unavailable {
            what: "ledger 7".into(),
            reason: "the published store is unreachable".into(),
        };
        assert!(!RpcError::Store(unavailable()).stopped_by_deadline());
        assert!(!RpcError::Events(events(unavailable())).stopped_by_deadline());
        assert!(!RpcError::Events(EventsError::MissingLedger(7)).stopped_by_deadline());
        assert!(!RpcError::Timeout(5).stopped_by_deadline());
    }
}
