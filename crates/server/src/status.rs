//! The one place where errors become gRPC statuses. Every message names
//! the field and the expected value.

use ledgerstore_db_api::DbError;
use ledgerstore_stellar::StellarError;
use ledgerstore_store::StoreError;
use tonic::{Code, Status};

/// Maps a store error to its gRPC status.
pub fn from_store(e: &StoreError) -> Status {
    let code = match e {
        StoreError::Gap { .. } => Code::FailedPrecondition,
        StoreError::InvalidBatch { .. } => Code::InvalidArgument,
        StoreError::TooLarge { .. } | StoreError::DiskFull { .. } => Code::ResourceExhausted,
        StoreError::HashExists { .. } => Code::AlreadyExists,
        _ if e.is_storage_full() => Code::ResourceExhausted,
        StoreError::LayoutMismatch { .. }
        | StoreError::SettingMismatch { .. }
        | StoreError::DataDir { .. }
        | StoreError::Db(DbError::CreationMismatch { .. }) => Code::FailedPrecondition,
        StoreError::Db(DbError::ReadTimeout { .. }) | StoreError::DeadlinePassed { .. } => {
            Code::DeadlineExceeded
        }
        StoreError::WritesRefused { .. }
        | StoreError::Repairing { .. }
        | StoreError::Remote { .. }
        | StoreError::Unavailable { .. } => Code::Unavailable,
        // A ledger whose stored skeleton and bodies do not give back the
        // ingested bytes: data lost, never served.
        StoreError::RemoteDamaged { .. }
        | StoreError::Db(DbError::Reassembly { .. } | DbError::NeedsBodies { .. }) => {
            Code::DataLoss
        }
        StoreError::Db(_)
        | StoreError::Segment(_)
        | StoreError::Io { .. }
        | StoreError::Corrupt(_) => Code::Internal,
    };
    let message = if matches!(e, StoreError::DiskFull { .. }) {
        format!("storage full, ingest paused until space is freed: {e}")
    } else if e.is_storage_full() {
        format!(
            "storage full: {e}; an engine met ENOSPC mid-write and stays read-only: free space, \
             then restart the daemon (raise limits.min_free_disk_mb to stop this before it \
             happens)"
        )
    } else {
        e.to_string()
    };
    Status::new(code, message)
}

/// A read past the query deadline, `query.timeout_ms`: the timer's
/// DEADLINE_EXCEEDED, or a store error as [`from_store`] maps it. A read
/// the deadline stopped inside the store (it waited on a published
/// store's fetch) answers as the timer does, naming what it waited for.
pub fn read_failed(timeout_ms: u64, e: Option<StoreError>) -> Status {
    let took = format!("query took longer than query.timeout_ms = {timeout_ms}");
    match e {
        None => Status::deadline_exceeded(took),
        Some(StoreError::DeadlinePassed { what }) => {
            Status::deadline_exceeded(format!("{took} ({what})"))
        }
        Some(e) => from_store(&e),
    }
}

/// Maps a failure to decode or extract a raw Stellar ledger; `field` names
/// the request field (e.g. `stellar_ledgers[3]`).
pub fn from_stellar(field: &str, e: &StellarError) -> Status {
    let code = match e {
        StellarError::Task(_) | StellarError::Io { .. } | StellarError::Store(_) => Code::Internal,
        _ => Code::InvalidArgument,
    };
    Status::new(code, format!("{field}: {e}"))
}

/// `field` must be 32 bytes.
pub fn bad_hash(field: &str, len: usize) -> Status {
    Status::invalid_argument(format!("{field}: must be 32 bytes, got {len}"))
}

/// The daemon is shutting down or still opening its stores.
pub fn unavailable(why: &str) -> Status {
    Status::unavailable(why.to_string())
}

/// A blocking task died.
pub fn internal_join(e: tokio::task::JoinError) -> Status {
    Status::internal(format!("worker task failed: {e}"))
}

/// A read that panicked on an async worker: INTERNAL, as a panicked
/// blocking task is, rather than a reset connection.
pub fn internal_panic() -> Status {
    Status::internal("worker task failed: the read panicked (see the daemon's log)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_follow_the_contract() {
        let cases = [
            (
                StoreError::Gap {
                    expected: 5,
                    got: 7,
                },
                Code::FailedPrecondition,
                "expected ledger seq 5",
            ),
            (
                StoreError::InvalidBatch {
                    field: "ledgers[0].raw".into(),
                    reason: "must not be empty".into(),
                },
                Code::InvalidArgument,
                "ledgers[0].raw: must not be empty",
            ),
            (
                StoreError::TooLarge {
                    field: "ledgers".into(),
                    got: 9,
                    limit: 8,
                    unit: "ledgers",
                },
                Code::ResourceExhausted,
                "limit 8",
            ),
            (
                StoreError::HashExists {
                    field: "h".into(),
                    hash: "ab".into(),
                    ledger: 3,
                },
                Code::AlreadyExists,
                "already stored in ledger 3",
            ),
            (
                StoreError::Db(ledgerstore_db_api::DbError::StorageFull {
                    engine: "mdbx",
                    table: "tx_data".into(),
                    detail: "disk full".into(),
                }),
                Code::ResourceExhausted,
                "restart the daemon",
            ),
            (
                StoreError::DiskFull {
                    path: "/data".into(),
                    free_mib: 10.0,
                    needed_mib: 256.5,
                    batch_mib: 0.25,
                },
                Code::ResourceExhausted,
                "storage full, ingest paused until space is freed: disk full: /data has 10.0 MiB free",
            ),
            (
                StoreError::Db(DbError::ReadTimeout {
                    table: "tx_data".into(),
                    held_ms: 6000,
                    max_ms: 5000,
                }),
                Code::DeadlineExceeded,
                "mdbx.max_read_txn_ms = 5000",
            ),
            (
                StoreError::WritesRefused {
                    reason: "writing the mark for ledgers 5..=9 failed".into(),
                },
                Code::Unavailable,
                "restart the daemon",
            ),
            (
                StoreError::Repairing {
                    first: 100,
                    last: 199,
                    reason: "checksum mismatch".into(),
                },
                Code::Unavailable,
                "ledgers 100..=199 are being repaired",
            ),
            (
                StoreError::Unavailable {
                    what: "ledger 25".into(),
                    reason: "its manifest could not be read yet".into(),
                },
                Code::Unavailable,
                "ledger 25 left this data dir for the published store, which cannot serve it now",
            ),
            (
                StoreError::Corrupt("x".into()),
                Code::Internal,
                "corrupt store",
            ),
        ];
        for (e, code, text) in cases {
            let s = from_store(&e);
            assert_eq!(s.code(), code, "{e}");
            assert!(s.message().contains(text), "{}", s.message());
        }
    }

    #[test]
    fn reads_past_the_deadline_name_the_setting_and_what_they_waited_for() {
        let timer = read_failed(250, None);
        assert_eq!(timer.code(), Code::DeadlineExceeded);
        assert_eq!(
            timer.message(),
            "query took longer than query.timeout_ms = 250"
        );
        let stopped = read_failed(
            250,
            Some(StoreError::DeadlinePassed {
                what: "another read's fetch of segment 7".into(),
            }),
        );
        assert_eq!(stopped.code(), Code::DeadlineExceeded);
        assert_eq!(
            stopped.message(),
            "query took longer than query.timeout_ms = 250 \
             (another read's fetch of segment 7)"
        );
        let other = read_failed(250, Some(StoreError::Corrupt("x".into())));
        assert_eq!(other.code(), Code::Internal, "{other:?}");
    }
}
