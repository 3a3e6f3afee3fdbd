//! The three logical tables, declared once with typed keys and values.
//!
//! | table      | key                    | value                                  |
//! |------------|------------------------|----------------------------------------|
//! | `ledgers`  | ledger seq, u32 BE (4) | [`StoredLedger`], zstd                 |
//! | `tx_data`  | tx hash (32)           | [`TxRecord`], zstd                      |
//! | `tx_index` | tx hash (32)           | ledger seq, u32 BE (4), uncompressed    |
//!
//! The `indexed` layout keeps transactions in ledger order instead. Its
//! `tx_data` slot holds [`TxBodies`] and its `tx_index` slot holds
//! [`TxHotIndex`] (the open range only; closed ranges live in immutable
//! segment files):
//!
//! | table          | key                            | value                                   |
//! |----------------|--------------------------------|-----------------------------------------|
//! | `tx_bodies`    | [`TxPos`]: seq u32 BE, index u32 BE (8) | [`crate::body`] framing: hash, dictionary version, zstd frame |
//! | `tx_hot_index` | [`TxPos`] (8)                  | tx hash (32), uncompressed              |
//!
//! Both are keyed by position, so every batch appends at the end of both
//! trees. The hot index is a log that the store reads back into an
//! in-memory hash map at open; the map answers lookups. (Releases before
//! this one keyed `tx_hot_index` by hash; such entries are converted when
//! a writer opens the store.)

use crate::codec::{Compress, Decode, Decompress, Encode};
use crate::error::{DbError, DbResult};
pub use crate::hash::TxHash;
use crate::records::{StoredLedger, TxRecord};

/// A table: a name, a key type and a value type.
pub trait Table {
    /// Name, used for directories, metrics and messages.
    const NAME: &'static str;
    /// Which table this is.
    const ID: TableId;
    /// Key type.
    type Key: Encode + Decode;
    /// Value type.
    type Value: Compress + Decompress;
}

/// Identifies a table at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TableId {
    /// ledger seq → ledger record.
    Ledgers,
    /// tx hash → tx record.
    TxData,
    /// tx hash → ledger seq.
    TxIndex,
}

impl TableId {
    /// All tables, in commit order: the ledgers table is made durable first.
    pub const ALL: [TableId; 3] = [TableId::Ledgers, TableId::TxData, TableId::TxIndex];

    /// The table's name.
    pub fn name(self) -> &'static str {
        match self {
            TableId::Ledgers => Ledgers::NAME,
            TableId::TxData => TxData::NAME,
            TableId::TxIndex => TxIndex::NAME,
        }
    }
}

impl std::fmt::Display for TableId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `ledgers`: ledger seq → [`StoredLedger`] (a whole
/// [`LedgerRecord`](crate::records::LedgerRecord), or
/// a skeleton whose bodies are in `tx_bodies`).
#[derive(Debug)]
pub struct Ledgers;
impl Table for Ledgers {
    const NAME: &'static str = "ledgers";
    const ID: TableId = TableId::Ledgers;
    type Key = u32;
    type Value = StoredLedger;
}

/// `tx_data`: tx hash → [`TxRecord`].
#[derive(Debug)]
pub struct TxData;
impl Table for TxData {
    const NAME: &'static str = "tx_data";
    const ID: TableId = TableId::TxData;
    type Key = TxHash;
    type Value = TxRecord;
}

/// `tx_index`: tx hash → ledger seq.
#[derive(Debug)]
pub struct TxIndex;
impl Table for TxIndex {
    const NAME: &'static str = "tx_index";
    const ID: TableId = TableId::TxIndex;
    type Key = TxHash;
    type Value = u32;
}

/// `tx_bodies` (layout `indexed`, in the `tx_data` slot): position →
/// stored body (see [`crate::body`]).
#[derive(Debug)]
pub struct TxBodies;
impl Table for TxBodies {
    const NAME: &'static str = "tx_bodies";
    const ID: TableId = TableId::TxData;
    type Key = TxPos;
    type Value = crate::body::TxBody;
}

/// `tx_hot_index` (layout `indexed`, in the `tx_index` slot): position →
/// tx hash, for ledgers not yet covered by a segment. Appended in key
/// order; lookups go through the store's in-memory map of it.
#[derive(Debug)]
pub struct TxHotIndex;
impl Table for TxHotIndex {
    const NAME: &'static str = "tx_hot_index";
    const ID: TableId = TableId::TxIndex;
    type Key = TxPos;
    type Value = TxHash;
}

/// Where a transaction lives: its ledger and apply index. Encodes as 8
/// big-endian bytes, so keys sort in ledger order, then apply order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TxPos {
    /// Ledger sequence.
    pub seq: u32,
    /// Apply index within the ledger.
    pub index: u32,
}

impl TxPos {
    /// The 8-byte key.
    pub fn to_bytes(self) -> [u8; 8] {
        let mut k = [0u8; 8];
        k[..4].copy_from_slice(&self.seq.to_be_bytes());
        k[4..].copy_from_slice(&self.index.to_be_bytes());
        k
    }

    /// Parses the 8-byte key.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let b = <[u8; 8]>::try_from(bytes).ok()?;
        Some(TxPos {
            seq: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            index: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        })
    }
}

impl Encode for TxPos {
    type Encoded = [u8; 8];
    fn encode(&self) -> [u8; 8] {
        self.to_bytes()
    }
}

impl Decode for TxPos {
    fn decode(bytes: &[u8]) -> DbResult<Self> {
        TxPos::from_bytes(bytes).ok_or(DbError::KeyLength {
            table: TxBodies::NAME,
            expected: 8,
            got: bytes.len(),
        })
    }
}

/// Releases before the position-keyed hot index stored the position as
/// the value (its 8-byte key form, uncompressed).
impl Compress for TxPos {
    fn compress(&self, _level: i32) -> DbResult<Vec<u8>> {
        Ok(self.to_bytes().to_vec())
    }
    fn raw_len(&self) -> usize {
        8
    }
}

impl Decompress for TxPos {
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        TxPos::from_bytes(bytes).ok_or_else(|| DbError::Corrupt {
            what: "tx_hot_index value",
            detail: format!("expected 8 bytes, got {}", bytes.len()),
        })
    }
}

impl Encode for TxHash {
    type Encoded = [u8; 32];
    fn encode(&self) -> [u8; 32] {
        self.0
    }
}

impl Decode for TxHash {
    fn decode(bytes: &[u8]) -> DbResult<Self> {
        TxHash::from_slice(bytes).ok_or(DbError::KeyLength {
            table: TxData::NAME,
            expected: 32,
            got: bytes.len(),
        })
    }
}

/// The hot index stores the hash as its value, uncompressed.
impl Compress for TxHash {
    fn compress(&self, _level: i32) -> DbResult<Vec<u8>> {
        Ok(self.0.to_vec())
    }
    fn raw_len(&self) -> usize {
        32
    }
}

impl Decompress for TxHash {
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        TxHash::from_slice(bytes).ok_or_else(|| DbError::Corrupt {
            what: "tx_hot_index value",
            detail: format!("expected a 32-byte hash, got {} bytes", bytes.len()),
        })
    }
}

impl Encode for u32 {
    type Encoded = [u8; 4];
    fn encode(&self) -> [u8; 4] {
        self.to_be_bytes()
    }
}

impl Decode for u32 {
    fn decode(bytes: &[u8]) -> DbResult<Self> {
        <[u8; 4]>::try_from(bytes)
            .map(u32::from_be_bytes)
            .map_err(|_| DbError::KeyLength {
                table: Ledgers::NAME,
                expected: 4,
                got: bytes.len(),
            })
    }
}

/// The tx index stores the ledger seq as 4 big-endian bytes, uncompressed.
impl Compress for u32 {
    fn compress(&self, _level: i32) -> DbResult<Vec<u8>> {
        Ok(self.to_be_bytes().to_vec())
    }
    fn raw_len(&self) -> usize {
        4
    }
}

impl Decompress for u32 {
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        <[u8; 4]>::try_from(bytes)
            .map(u32::from_be_bytes)
            .map_err(|_| DbError::Corrupt {
                what: "tx_index value",
                detail: format!("expected 4 bytes, got {}", bytes.len()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_keys_sort_like_numbers() {
        let mut seqs = [5u32, 256, 1, 65_536, 70_000, u32::MAX, 0];
        let mut keys: Vec<[u8; 4]> = seqs.iter().map(Encode::encode).collect();
        seqs.sort_unstable();
        keys.sort_unstable();
        let decoded: Vec<u32> = keys
            .iter()
            .map(|k| u32::decode(k).expect("4 bytes"))
            .collect();
        assert_eq!(decoded, seqs);
    }

    #[test]
    fn positions_sort_in_ledger_then_apply_order() {
        let mut pos = [
            TxPos { seq: 2, index: 0 },
            TxPos { seq: 1, index: 300 },
            TxPos { seq: 1, index: 2 },
            TxPos {
                seq: 65_536,
                index: 0,
            },
        ];
        let mut keys: Vec<[u8; 8]> = pos.iter().map(Encode::encode).collect();
        pos.sort_unstable();
        keys.sort_unstable();
        let decoded: Vec<TxPos> = keys
            .iter()
            .map(|k| TxPos::decode(k).expect("8 bytes"))
            .collect();
        assert_eq!(decoded, pos);
        assert!(TxPos::decode(&[0; 9]).is_err());
        assert!(TxPos::decompress(&[0; 4]).is_err());
    }

    #[test]
    fn hash_hex_round_trip_and_length_errors() {
        let h = TxHash([0xab; 32]);
        assert_eq!(TxHash::from_hex(&h.to_hex()), Some(h));
        assert_eq!(TxHash::from_hex("abcd"), None);
        assert!(matches!(
            TxHash::decode(&[1, 2, 3]),
            Err(DbError::KeyLength {
                expected: 32,
                got: 3,
                ..
            })
        ));
        assert!(u32::decode(&[1]).is_err());
    }
}
