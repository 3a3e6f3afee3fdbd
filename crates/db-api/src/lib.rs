//! The storage API of ledgerstore.
//!
//! This crate declares the three logical tables once ([`table`]), how keys are
//! encoded ([`codec::Encode`] / [`codec::Decode`], big-endian and
//! order-preserving) and how values are compressed ([`codec::Compress`] /
//! [`codec::Decompress`], zstd in the application), the record formats
//! ([`records`]), and the traits a storage engine implements ([`engine`]).
//!
//! It depends on no storage engine: `ledgerstore-engine-rocks` and
//! `ledgerstore-engine-mdbx` implement [`engine::KvStore`], and only the
//! binary (through `ledgerstore-backends`) picks which one serves a table.

pub mod batch;
pub mod body;
pub mod codec;
pub mod dict;
pub mod engine;
pub mod error;
mod hash;
pub mod input;
pub mod iostat;
pub mod layout;
pub mod records;
pub mod skeleton;
pub mod table;

pub use batch::{Batcher, batch_len};
pub use body::{ALIAS_BODY, BodyForm, RAW_BODY, TxBody};
pub use bytes::Bytes;
pub use codec::{Compress, Decode, Decompress, Encode};
pub use dict::{DictSet, Dictionary};
pub use engine::{
    Access, BlockDict, CommitTiming, EngineFactory, EngineKind, EngineStats, KvStore, KvWrite,
    TableBackup, ValueCompression,
};
pub use error::{DbError, DbResult};
pub use input::{Cut, LedgerInput, Part, TxInput};
pub use layout::Layout;
pub use records::{
    Alias, LedgerBytes, LedgerContent, LedgerRecord, LedgerRecordRef, StoredLedger, TxRecord,
    TxRecordRef, is_zstd_frame, ledger_record_bytes, ledger_record_seq,
};
pub use skeleton::{SkelCut, Skeleton, check_cuts, sha256, split};
pub use table::{Ledgers, Table, TableId, TxBodies, TxData, TxHash, TxHotIndex, TxIndex, TxPos};

/// Total size of the regular files under `path` (0 when it does not exist).
pub fn dir_size(path: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
