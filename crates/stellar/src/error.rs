//! The one error type of `ledgerstore-stellar`. Every message names where
//! the problem is (file, frame, ledger, transaction index) and what was
//! expected, so a pipeline operator can act on it without a debugger.

/// Result alias.
pub type StellarResult<T> = Result<T, StellarError>;

/// What can go wrong turning Stellar input into ledgers.
#[derive(Debug, thiserror::Error)]
pub enum StellarError {
    /// `--network` / `stellar.network` is empty, or a near miss of a name.
    #[error(
        "network: {0:?} is not a network name (pubnet, testnet, futurenet, standalone); a \
         passphrase is any other non-empty string, e.g. \"Apply Load\""
    )]
    UnknownNetwork(String),
    /// Bytes that do not decode as the XDR type they should be.
    #[error("{at}: not a valid {ty} XDR: {detail}")]
    Xdr {
        /// Where: a file, frame or ledger.
        at: String,
        /// The XDR type expected.
        ty: &'static str,
        /// The decoder's complaint.
        detail: String,
    },
    /// A zstd frame that does not decompress, or decompresses past the limit.
    #[error("{at}: zstd: {detail}")]
    Zstd {
        /// The file.
        at: String,
        /// What failed.
        detail: String,
    },
    /// Structure that decodes but is inconsistent: a batch whose sequence
    /// range disagrees with its ledgers, a truncated record mark, …
    #[error("{at}: {detail}")]
    Format {
        /// Where.
        at: String,
        /// What is wrong and what was expected.
        detail: String,
    },
    /// A ledger whose tx set and processing results do not match: a hash
    /// computed from an envelope with the network passphrase must equal the
    /// `TransactionResultPair.transactionHash` of exactly one result.
    #[error("ledger {seq}: {detail}")]
    Mismatch {
        /// The ledger.
        seq: u32,
        /// Which entry, which hash, and what it should have matched.
        detail: String,
    },
    /// Ledgers that do not follow each other.
    #[error("gap: {detail}")]
    Gap {
        /// Which files or ledgers, and the sequences on either side.
        detail: String,
    },
    /// A data lake that cannot be used as asked.
    #[error("data lake {root}: {detail}")]
    Lake {
        /// The lake's root.
        root: String,
        /// What is wrong.
        detail: String,
    },
    /// Reading a local file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Reading from the object store behind a data lake.
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    /// A decode task died (a panic in the XDR decoder would land here).
    #[error("decode task: {0}")]
    Task(String),
}

impl StellarError {
    pub(crate) fn xdr(at: impl Into<String>, ty: &'static str, e: stellar_xdr::Error) -> Self {
        StellarError::Xdr {
            at: at.into(),
            ty,
            detail: xdr_detail(&e),
        }
    }

    /// The walker's refusal ([`crate::walk`]), with the byte offset.
    pub(crate) fn walk(at: impl Into<String>, ty: &'static str, f: crate::walk::WalkError) -> Self {
        StellarError::Xdr {
            at: at.into(),
            ty,
            detail: f.to_string(),
        }
    }

    pub(crate) fn format(at: impl Into<String>, detail: impl Into<String>) -> Self {
        StellarError::Format {
            at: at.into(),
            detail: detail.into(),
        }
    }
}

/// The XDR decoder's errors say little on their own; spell them out.
fn xdr_detail(e: &stellar_xdr::Error) -> String {
    use stellar_xdr::Error as E;
    match e {
        E::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "truncated: the bytes end inside a value".into()
        }
        E::Invalid => "an invalid value (unknown union arm, enum value or bool)".into(),
        E::LengthMismatch => "trailing bytes after the value".into(),
        E::LengthExceedsMax => "a length above the type's maximum".into(),
        E::NonZeroPadding => "non-zero padding".into(),
        E::DepthLimitExceeded => "nested deeper than the decode depth limit".into(),
        E::LengthLimitExceeded => "truncated: a length runs past the end of the bytes".into(),
        other => other.to_string(),
    }
}
