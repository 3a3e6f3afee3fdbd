//! The stored form of a transaction in the `indexed` layout's `tx_bodies`
//! table: `[hash: 32][dictionary version: u32 BE][zstd frame]`.
//!
//! The hash lets a lookup confirm a candidate position from a segment's
//! fingerprint (a 2^-16 false positive is caught here, not served). The
//! dictionary version names the trained zstd dictionary the frame was
//! compressed with; 0 means none. Dictionaries are never deleted, so
//! every record stays readable after retraining.
//!
//! An alias body (a second hash a transaction is found by: a Stellar fee
//! bump's inner hash) has dictionary version [`ALIAS_BODY`] and, as its
//! frame, the 4-byte BE apply index of the transaction it names in the
//! same ledger: 40 bytes instead of a second copy of the record.

use crate::codec::{Compress, Decompress};
use crate::dict::DictSet;
use crate::error::{DbError, DbResult};
use crate::records::TxRecord;
use crate::table::TxHash;

const HEADER: usize = 32 + 4;

/// The dictionary version of an alias body. Trained versions count up
/// from 1 and never reach it.
pub const ALIAS_BODY: u32 = u32::MAX;

/// A stored transaction body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxBody {
    /// The transaction's hash.
    pub hash: TxHash,
    /// Dictionary version of `frame` (0: none).
    pub dict_version: u32,
    /// The encoded [`TxRecord`], as one zstd frame.
    pub frame: Vec<u8>,
}

impl TxBody {
    /// Compresses `record` with the current dictionary of `dicts` (or
    /// without one when none is trained yet).
    pub fn compress_record(
        hash: TxHash,
        encoded_record: &[u8],
        dicts: &DictSet,
        level: i32,
    ) -> DbResult<Self> {
        let (dict_version, frame) = dicts.compress(encoded_record, level)?;
        Ok(Self {
            hash,
            dict_version,
            frame,
        })
    }

    /// The body of an alias `hash` naming the `index`-th transaction of
    /// the same ledger.
    pub fn alias(hash: TxHash, index: u32) -> Self {
        Self {
            hash,
            dict_version: ALIAS_BODY,
            frame: index.to_be_bytes().to_vec(),
        }
    }

    /// The apply index an alias body names; None for a transaction's own
    /// body.
    pub fn alias_of(&self) -> DbResult<Option<u32>> {
        if self.dict_version != ALIAS_BODY {
            return Ok(None);
        }
        let index: [u8; 4] = self
            .frame
            .as_slice()
            .try_into()
            .map_err(|_| DbError::Corrupt {
                what: "tx body",
                detail: format!(
                    "an alias body holds {} bytes, not a 4-byte index",
                    self.frame.len()
                ),
            })?;
        Ok(Some(u32::from_be_bytes(index)))
    }

    /// Decompresses and decodes the record.
    pub fn record(&self, dicts: &DictSet) -> DbResult<TxRecord> {
        TxRecord::decode(&dicts.decompress(self.dict_version, &self.frame)?)
    }

    /// The stored bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.frame.len());
        out.extend_from_slice(&self.hash.0);
        out.extend_from_slice(&self.dict_version.to_be_bytes());
        out.extend_from_slice(&self.frame);
        out
    }

    /// Only the hash of stored bytes (no copy of the frame).
    pub fn hash_of(stored: &[u8]) -> DbResult<TxHash> {
        stored
            .get(..32)
            .and_then(TxHash::from_slice)
            .ok_or_else(|| short(stored.len()))
    }
}

fn short(len: usize) -> DbError {
    DbError::Corrupt {
        what: "tx body",
        detail: format!("{len} bytes, shorter than the {HEADER}-byte header"),
    }
}

impl Compress for TxBody {
    /// The frame is already compressed; this only frames it.
    fn compress(&self, _level: i32) -> DbResult<Vec<u8>> {
        Ok(self.to_bytes())
    }
    fn raw_len(&self) -> usize {
        HEADER + self.frame.len()
    }
}

impl Decompress for TxBody {
    /// Parses the framing; [`TxBody::record`] decompresses the frame.
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        if bytes.len() < HEADER {
            return Err(short(bytes.len()));
        }
        let hash = TxBody::hash_of(bytes)?;
        let v = [bytes[32], bytes[33], bytes[34], bytes[35]];
        Ok(Self {
            hash,
            dict_version: u32::from_be_bytes(v),
            frame: bytes[HEADER..].to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trips_and_names_short_input() {
        let rec = TxRecord {
            ledger_seq: 7,
            close_time: 9,
            index: 2,
            envelope: vec![1; 50],
            result: vec![2; 10],
            meta: vec![3; 300],
        };
        let dicts = DictSet::default();
        let body =
            TxBody::compress_record(TxHash([5; 32]), &rec.encode(), &dicts, 3).expect("compress");
        assert_eq!(body.dict_version, 0);
        let stored = body.compress(3).expect("frame");
        assert_eq!(TxBody::hash_of(&stored).expect("hash"), TxHash([5; 32]));
        let back = TxBody::decompress(&stored).expect("parse");
        assert_eq!(back, body);
        assert_eq!(back.record(&dicts).expect("record"), rec);
        let err = TxBody::decompress(&stored[..20]).expect_err("short");
        assert!(
            err.to_string().contains("shorter than the 36-byte header"),
            "{err}"
        );
    }
}
