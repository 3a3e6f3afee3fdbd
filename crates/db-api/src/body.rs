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
//!
//! A raw body ([`RAW_BODY`], written in [`BodyForm::Blocks`] dirs) holds
//! the encoded record itself, not compressed: the engine compresses the
//! table in blocks of consecutive bodies (zstd, a per-file dictionary optional),
//! so neighbouring transactions, across ledgers, share one frame's context.

use crate::codec::{Compress, Decompress};
use crate::dict::DictSet;
use crate::error::{DbError, DbResult};
use crate::hash::TxHash;
use crate::records::{TxRecord, TxRecordRef};

const HEADER: usize = 32 + 4;

pub use crate::dict::{ALIAS_BODY, RAW_BODY};

/// How an `indexed` dir stores its tx bodies. Recorded in the dir at
/// creation and kept for its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyForm {
    /// Each body a zstd frame of its own, with a trained dictionary
    /// (dirs made before format 2). The engine stores values as given.
    Records,
    /// Raw bodies ([`RAW_BODY`]); the engine compresses blocks of
    /// consecutive bodies. A hit decompresses one block.
    #[default]
    Blocks,
}

impl BodyForm {
    /// The name used in config and in `ledgerstore.json`.
    pub fn name(self) -> &'static str {
        match self {
            BodyForm::Records => "records",
            BodyForm::Blocks => "blocks",
        }
    }
}

impl std::fmt::Display for BodyForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BodyForm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "records" => Ok(BodyForm::Records),
            "blocks" => Ok(BodyForm::Blocks),
            other => Err(format!(
                "unknown body form {other:?}; expected \"records\" or \"blocks\""
            )),
        }
    }
}

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

    /// A raw body: `encoded_record` as it is, for a table the engine
    /// compresses in blocks.
    pub fn raw(hash: TxHash, encoded_record: Vec<u8>) -> Self {
        Self {
            hash,
            dict_version: RAW_BODY,
            frame: encoded_record,
        }
    }

    /// The stored bytes of `rec`'s raw body under `hash`: what
    /// `TxBody::raw(hash, rec.encode()).to_bytes()` gives, encoded once
    /// into one allocation (ingest writes every transaction of a `blocks`
    /// dir this way).
    pub fn raw_bytes(hash: TxHash, rec: &TxRecordRef<'_>) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + rec.raw_len());
        out.extend_from_slice(&hash.0);
        out.extend_from_slice(&RAW_BODY.to_be_bytes());
        rec.encode_into(&mut out);
        out
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

    /// The encoded record: the frame itself for a raw body, else the
    /// frame decompressed with its dictionary. An alias body has none.
    pub fn encoded_record(&self, dicts: &DictSet) -> DbResult<Vec<u8>> {
        match self.dict_version {
            RAW_BODY => Ok(self.frame.clone()),
            ALIAS_BODY => Err(DbError::Corrupt {
                what: "tx body",
                detail: "an alias body holds no record of its own".into(),
            }),
            v => dicts.decompress(v, &self.frame),
        }
    }

    /// Decompresses (unless raw) and decodes the record.
    pub fn record(&self, dicts: &DictSet) -> DbResult<TxRecord> {
        if self.dict_version == RAW_BODY {
            return TxRecord::decode(&self.frame);
        }
        TxRecord::decode(&self.encoded_record(dicts)?)
    }

    /// The same body in the per-record form: a raw body compressed with
    /// the current dictionary of `dicts` (what a pack publishes, so
    /// readers of every release read it); any other body as it is.
    pub fn to_record_form(self, dicts: &DictSet, level: i32) -> DbResult<Self> {
        if self.dict_version != RAW_BODY {
            return Ok(self);
        }
        Self::compress_record(self.hash, &self.frame, dicts, level)
    }

    /// The same body raw ([`RAW_BODY`]): a body compressed alone is
    /// decompressed with its dictionary of `dicts` (what a pack of ledger
    /// frames holds, compressed with its ledger); a raw or alias body as
    /// it is.
    pub fn to_raw_form(self, dicts: &DictSet) -> DbResult<Self> {
        if matches!(self.dict_version, RAW_BODY | ALIAS_BODY) {
            return Ok(self);
        }
        let encoded = self.encoded_record(dicts)?;
        Ok(Self::raw(self.hash, encoded))
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
        let raw = TxBody::raw(TxHash([6; 32]), rec.encode());
        assert_eq!(
            TxBody::raw_bytes(TxHash([6; 32]), &rec.view()),
            raw.to_bytes(),
            "one-step raw body"
        );
        let back = TxBody::decompress(&raw.to_bytes()).expect("raw parse");
        assert_eq!(back.dict_version, RAW_BODY);
        assert_eq!(back.record(&dicts).expect("raw record"), rec);
        let packed = back.to_record_form(&dicts, 3).expect("record form");
        assert_eq!(packed.dict_version, 0);
        assert_eq!(packed.record(&dicts).expect("packed record"), rec);
        let alias = TxBody::alias(TxHash([7; 32]), 1);
        let err = alias.encoded_record(&dicts).expect_err("alias");
        assert!(err.to_string().contains("alias"), "{err}");
        assert_eq!(
            "blocks".parse::<BodyForm>().expect("form"),
            BodyForm::Blocks
        );
        assert!("block".parse::<BodyForm>().is_err());
        let err = TxBody::decompress(&stored[..20]).expect_err("short");
        assert!(
            err.to_string().contains("shorter than the 36-byte header"),
            "{err}"
        );
    }
}
