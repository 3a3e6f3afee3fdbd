//! The pack crate's error type.

use std::path::PathBuf;

/// Errors of pack and manifest handling.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// File-system error on a local pack.
    #[error("{path}: {action}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Bytes that are not what the format says (the caller names the
    /// object).
    #[error("{0}")]
    Format(String),
    /// A pack is written out of order.
    #[error("pack {first}..={last}: {detail}")]
    Order {
        /// The pack's first ledger.
        first: u32,
        /// The pack's last ledger.
        last: u32,
        /// What is out of order.
        detail: String,
    },
    /// A manifest that does not parse or contradicts itself.
    #[error("manifest {key}: {detail}")]
    Manifest {
        /// The manifest's key.
        key: String,
        /// What is wrong.
        detail: String,
    },
}

impl PackError {
    pub(crate) fn io(
        path: &std::path::Path,
        action: &'static str,
    ) -> impl FnOnce(std::io::Error) -> Self + use<> {
        let path = path.to_path_buf();
        move |source| Self::Io {
            path,
            action,
            source,
        }
    }
}

/// Result alias.
pub type PackResult<T> = Result<T, PackError>;
