//! The store's error type. The daemon maps it to gRPC codes in one place
//! (`ledgerstore-server`'s `status` module).

use std::path::PathBuf;

use ledgerstore_db_api::{DbError, Layout};

/// Errors of the tiered store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A batch does not continue from the mark.
    #[error("ledger gap: expected ledger seq {expected}, got {got}")]
    Gap {
        /// The seq the store expects next.
        expected: u32,
        /// The first new seq of the batch.
        got: u32,
    },
    /// A batch is malformed; nothing was written.
    #[error("invalid batch: {field}: {reason}")]
    InvalidBatch {
        /// The field at fault, e.g. `ledgers[3].transactions[7].hash`.
        field: String,
        /// What was expected.
        reason: String,
    },
    /// Not enough free disk for the batch; nothing was written.
    #[error(
        "disk full: {path} has {free_mib:.1} MiB free, and this batch needs {needed_mib:.1} MiB \
         (limits.min_free_disk_mb plus twice its {batch_mib:.1} MiB); free space or grow the \
         filesystem, then resend"
    )]
    DiskFull {
        /// The data dir.
        path: String,
        /// Free bytes there, in MiB.
        free_mib: f64,
        /// What the batch needs, in MiB.
        needed_mib: f64,
        /// The batch's stored bytes, in MiB.
        batch_mib: f64,
    },
    /// A record or batch exceeds a configured limit; nothing was written.
    #[error("too large: {field} is {got} {unit}, limit {limit}")]
    TooLarge {
        /// The field at fault.
        field: String,
        /// Size seen.
        got: u64,
        /// Configured limit.
        limit: u64,
        /// Unit of both numbers.
        unit: &'static str,
    },
    /// A transaction hash is already stored under another ledger.
    #[error("{field}: tx hash {hash} is already stored in ledger {ledger}")]
    HashExists {
        /// The field at fault.
        field: String,
        /// Hash, hex.
        hash: String,
        /// Ledger that already holds it.
        ledger: u32,
    },
    /// The data dir was created with another layout.
    #[error(
        "data dir {dir} was created with layout {recorded}; it cannot be opened as {requested}"
    )]
    LayoutMismatch {
        /// Data dir.
        dir: PathBuf,
        /// Layout recorded in the dir.
        recorded: Layout,
        /// Layout asked for.
        requested: Layout,
    },
    /// A setting the data dir was created with was asked for with another
    /// value.
    #[error(
        "data dir {dir} was created with {setting} = {recorded}; it cannot be opened with \
         {requested} (the setting is recorded at creation: leave it unset to use the \
         recorded value)"
    )]
    SettingMismatch {
        /// Data dir.
        dir: PathBuf,
        /// The setting, as its config key.
        setting: &'static str,
        /// The value recorded in the dir.
        recorded: String,
        /// The value asked for.
        requested: String,
    },
    /// The data dir is missing, held by another process, or not ours.
    #[error("data dir {dir}: {reason}")]
    DataDir {
        /// Data dir.
        dir: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A storage engine or codec failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A segment file of the `indexed` layout failed to build or verify.
    #[error(transparent)]
    Segment(#[from] ledgerstore_segment::SegmentError),
    /// File-system error on the store's own files.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Ingest is refused until the store is reopened (a `MARK` write
    /// failed), or the store was opened by an offline reader.
    #[error(
        "writes refused: {reason}. Nothing above the durable mark is acknowledged; reopen the \
         store (restart the daemon): open reads MARK back from disk, rolls back anything above \
         it, and ingest resumes from there"
    )]
    WritesRefused {
        /// What happened.
        reason: String,
    },
    /// A lookup found nothing, and the index segment of a range that may
    /// hold the hash is being rebuilt (its file is missing or damaged): the
    /// answer is unknown until the repair finishes.
    #[error(
        "ledgers {first}..={last} are being repaired: their index segment cannot serve ({reason}); \
         retry once the rebuild finishes (stats shows segments.repairing)"
    )]
    Repairing {
        /// First ledger of the range.
        first: u32,
        /// Last ledger of the range.
        last: u32,
        /// Why the segment cannot serve.
        reason: String,
    },
    /// Stored data contradicts itself.
    #[error("corrupt store: {0}")]
    Corrupt(String),
    /// An object of the published cold tier could not be read (the object
    /// store is unreachable or refused): retry, or ask the writer.
    #[error("object {object}: {detail}")]
    Remote {
        /// The object's key, under the store's location.
        object: String,
        /// What failed.
        detail: String,
    },
    /// A read needs ledgers this data dir evicted to the published store
    /// (`[cold] keep_local_ranges`), and that store cannot serve them now:
    /// its manifest could not be read yet, or does not list them. The
    /// answer is unknown, not empty: retry.
    /// It names the ledgers, never the store: clients may not learn the
    /// bucket or its endpoint (the server's log has them).
    #[error(
        "{what} left this data dir for the published store, which cannot serve it now: \
         {reason}; retry (GetStatus shows the published store's state)"
    )]
    Unavailable {
        /// What was asked for, e.g. `ledger 25`.
        what: String,
        /// Why it cannot serve.
        reason: String,
    },
    /// A read of the published store stopped at its request's deadline
    /// (gRPC `query.timeout_ms`, a Stellar RPC call's): the answer is
    /// unknown.
    #[error(
        "{what}: the request's deadline passed before the published store answered; the rest \
         was not read"
    )]
    DeadlinePassed {
        /// What was being read, e.g. `a batch of 500 transactions`.
        what: String,
    },
    /// An object of the published cold tier is missing or does not match
    /// what the manifest records (size, checksum, format): the range it
    /// holds cannot serve until it is published again.
    #[error("object {object} is missing or damaged: {detail}")]
    RemoteDamaged {
        /// The object's key, under the store's location.
        object: String,
        /// What is wrong.
        detail: String,
    },
}

impl StoreError {
    /// True when the failure is lack of space.
    pub fn is_storage_full(&self) -> bool {
        match self {
            StoreError::DiskFull { .. } => true,
            StoreError::Db(e) => e.is_storage_full(),
            StoreError::Io { source, .. } => source.raw_os_error() == Some(libc::ENOSPC),
            _ => false,
        }
    }

    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> StoreError {
        let context = context.into();
        move |source| StoreError::Io { context, source }
    }
}

/// Result alias for the store.
pub type StoreResult<T> = Result<T, StoreError>;
