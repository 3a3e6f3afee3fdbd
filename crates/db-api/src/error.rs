//! The error type of the storage API and its engines.

/// Errors from codecs and storage engines.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// A key had the wrong length for its table.
    #[error("{table}: key must be {expected} bytes, got {got}")]
    KeyLength {
        /// Table name.
        table: &'static str,
        /// Expected length in bytes.
        expected: usize,
        /// Length seen.
        got: usize,
    },
    /// A stored record names a format version this build cannot read.
    #[error("{what}: unsupported record format version {version} (this build reads {supported})")]
    UnsupportedVersion {
        /// Kind of record.
        what: &'static str,
        /// Version found.
        version: u8,
        /// Versions supported.
        supported: &'static str,
    },
    /// A stored record failed to decode.
    #[error("{what}: corrupt record: {detail}")]
    Corrupt {
        /// Kind of record.
        what: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// A ledger's cut (where a transaction part sits in its raw bytes) is
    /// wrong: outside raw, overlapping another, or not the part's bytes.
    #[error("cuts[{cut}]: {reason}")]
    BadCut {
        /// Index of the cut in the ledger's list.
        cut: usize,
        /// What is wrong.
        reason: String,
    },
    /// A skeleton ledger record and its transactions' bodies do not put
    /// back the ledger that was stored: one of them is damaged.
    #[error(
        "ledger {seq}: its stored skeleton and transaction bodies do not reassemble the ingested \
         ledger ({detail}); the ledger record or a body is damaged"
    )]
    Reassembly {
        /// The ledger.
        seq: u32,
        /// What did not match.
        detail: String,
    },
    /// A skeleton ledger record was read where only a whole ledger will do
    /// (a reader that has no access to the bodies): refused, never served
    /// as the ledger.
    #[error("ledger {seq}: its record holds a skeleton; the ledger needs its bodies to be read")]
    NeedsBodies {
        /// The ledger.
        seq: u32,
    },
    /// zstd failed to compress or decompress.
    #[error("zstd: {0}")]
    Compression(#[source] std::io::Error),
    /// The engine ran out of space (disk full, or the map's upper bound).
    #[error("{engine} store {table}: out of space: {detail}")]
    StorageFull {
        /// Engine name.
        engine: &'static str,
        /// Table name.
        table: String,
        /// Engine message.
        detail: String,
    },
    /// A read transaction outlived its bound and gave up (MDBX keeps the
    /// snapshot of a live reader, so readers are bounded).
    #[error(
        "mdbx store {table}: a read transaction was open {held_ms} ms, over \
         mdbx.max_read_txn_ms = {max_ms}; ask for fewer keys per call"
    )]
    ReadTimeout {
        /// Table name.
        table: String,
        /// How long it was open.
        held_ms: u64,
        /// The bound.
        max_ms: u64,
    },
    /// Any other engine failure.
    #[error("{engine} store {table}: {detail}")]
    Engine {
        /// Engine name.
        engine: &'static str,
        /// Table name.
        table: String,
        /// Engine message.
        detail: String,
    },
    /// A setting fixed when the table was created was asked for with
    /// another value.
    #[error(
        "{engine} store {table} was created with {setting} = {recorded}; it cannot be \
         opened with {requested} (the setting is fixed at creation: leave it unset to \
         use the recorded value)"
    )]
    CreationMismatch {
        /// Engine name.
        engine: &'static str,
        /// Table name.
        table: String,
        /// The setting, as its config key.
        setting: &'static str,
        /// The value the table was created with.
        recorded: String,
        /// The value asked for.
        requested: String,
    },
    /// File-system error around the engine (directories, sizes).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl DbError {
    /// True when the failure is a full disk or map: the caller may retry once
    /// space is freed.
    pub fn is_storage_full(&self) -> bool {
        matches!(self, DbError::StorageFull { .. })
    }
}

/// Result alias for the storage API.
pub type DbResult<T> = Result<T, DbError>;
