//! Record formats. Each is a versioned binary encoding (first byte = format
//! version), then compressed as one zstd frame by [`Compress`].
//!
//! `TxRecord` v1:
//! `[1u8][ledger_seq u32][close_time u64][index u32][envelope][result][meta]`
//! where each byte string is a u32 length then the bytes; integers are
//! big-endian.
//!
//! `LedgerRecord` v1:
//! `[1u8][seq u32][close_time u64][tx_count u32][tx_count × 32-byte hash][raw]`.

use crate::codec::{Compress, Decompress, Reader, put_bytes, zstd_compress, zstd_decompress};
use crate::error::{DbError, DbResult};
use crate::table::TxHash;

const TX_RECORD_V1: u8 = 1;
const LEDGER_RECORD_V1: u8 = 1;

/// A transaction as stored in `tx_data`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxRecord {
    /// Ledger that holds the transaction.
    pub ledger_seq: u32,
    /// Ledger close time, unix seconds.
    pub close_time: u64,
    /// Apply index within the ledger.
    pub index: u32,
    /// Envelope bytes, exactly as ingested.
    pub envelope: Vec<u8>,
    /// Result bytes, exactly as ingested.
    pub result: Vec<u8>,
    /// Meta bytes, exactly as ingested.
    pub meta: Vec<u8>,
}

/// A borrowed view of a [`TxRecord`], so ingest encodes without copying.
#[derive(Debug, Clone, Copy)]
pub struct TxRecordRef<'a> {
    /// Ledger that holds the transaction.
    pub ledger_seq: u32,
    /// Ledger close time, unix seconds.
    pub close_time: u64,
    /// Apply index within the ledger.
    pub index: u32,
    /// Envelope bytes.
    pub envelope: &'a [u8],
    /// Result bytes.
    pub result: &'a [u8],
    /// Meta bytes.
    pub meta: &'a [u8],
}

impl<'a> TxRecordRef<'a> {
    /// The record of `tx`, the `index`-th transaction of `ledger`.
    pub fn of(ledger: &'a crate::LedgerInput, index: u32, tx: &'a crate::TxInput) -> Self {
        Self {
            ledger_seq: ledger.seq,
            close_time: ledger.close_time,
            index,
            envelope: &tx.envelope,
            result: &tx.result,
            meta: &tx.meta,
        }
    }

    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw_len());
        out.push(TX_RECORD_V1);
        out.extend_from_slice(&self.ledger_seq.to_be_bytes());
        out.extend_from_slice(&self.close_time.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        put_bytes(&mut out, self.envelope);
        put_bytes(&mut out, self.result);
        put_bytes(&mut out, self.meta);
        out
    }
}

impl Compress for TxRecordRef<'_> {
    fn compress(&self, level: i32) -> DbResult<Vec<u8>> {
        zstd_compress(&self.encode(), level)
    }
    fn raw_len(&self) -> usize {
        1 + 4 + 8 + 4 + 12 + self.envelope.len() + self.result.len() + self.meta.len()
    }
}

impl TxRecord {
    /// The borrowed view.
    pub fn view(&self) -> TxRecordRef<'_> {
        TxRecordRef {
            ledger_seq: self.ledger_seq,
            close_time: self.close_time,
            index: self.index,
            envelope: &self.envelope,
            result: &self.result,
            meta: &self.meta,
        }
    }

    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        self.view().encode()
    }

    /// Decodes an uncompressed record.
    pub fn decode(bytes: &[u8]) -> DbResult<Self> {
        let mut r = Reader::new("tx record", bytes);
        match r.u8()? {
            TX_RECORD_V1 => {}
            version => {
                return Err(DbError::UnsupportedVersion {
                    what: "tx record",
                    version,
                    supported: "1",
                });
            }
        }
        let rec = TxRecord {
            ledger_seq: r.u32()?,
            close_time: r.u64()?,
            index: r.u32()?,
            envelope: r.bytes()?,
            result: r.bytes()?,
            meta: r.bytes()?,
        };
        r.finish()?;
        Ok(rec)
    }
}

impl Compress for TxRecord {
    fn compress(&self, level: i32) -> DbResult<Vec<u8>> {
        self.view().compress(level)
    }
    fn raw_len(&self) -> usize {
        self.view().raw_len()
    }
}

impl Decompress for TxRecord {
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        TxRecord::decode(&zstd_decompress(bytes)?)
    }
}

/// A ledger as stored in `ledgers`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerRecord {
    /// Ledger sequence.
    pub seq: u32,
    /// Close time, unix seconds.
    pub close_time: u64,
    /// Hashes of the ledger's transactions, in apply order.
    pub tx_hashes: Vec<TxHash>,
    /// Raw ledger bytes, exactly as ingested.
    pub raw: Vec<u8>,
}

/// A borrowed view of a [`LedgerRecord`]: hashes as raw 32-byte slices.
#[derive(Debug, Clone, Copy)]
pub struct LedgerRecordRef<'a, H> {
    /// Ledger sequence.
    pub seq: u32,
    /// Close time, unix seconds.
    pub close_time: u64,
    /// Hashes, in apply order (each 32 bytes; the validator checks).
    pub tx_hashes: &'a [H],
    /// Raw ledger bytes.
    pub raw: &'a [u8],
}

impl<H: AsRef<[u8]>> LedgerRecordRef<'_, H> {
    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw_len());
        out.push(LEDGER_RECORD_V1);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.close_time.to_be_bytes());
        out.extend_from_slice(&(self.tx_hashes.len() as u32).to_be_bytes());
        for h in self.tx_hashes {
            out.extend_from_slice(h.as_ref());
        }
        put_bytes(&mut out, self.raw);
        out
    }
}

impl<H: AsRef<[u8]>> Compress for LedgerRecordRef<'_, H> {
    fn compress(&self, level: i32) -> DbResult<Vec<u8>> {
        zstd_compress(&self.encode(), level)
    }
    fn raw_len(&self) -> usize {
        1 + 4 + 8 + 4 + 32 * self.tx_hashes.len() + 4 + self.raw.len()
    }
}

impl LedgerRecord {
    /// The borrowed view.
    pub fn view(&self) -> LedgerRecordRef<'_, TxHash> {
        LedgerRecordRef {
            seq: self.seq,
            close_time: self.close_time,
            tx_hashes: &self.tx_hashes,
            raw: &self.raw,
        }
    }

    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        self.view().encode()
    }

    /// Decodes an uncompressed record.
    pub fn decode(bytes: &[u8]) -> DbResult<Self> {
        let mut r = Reader::new("ledger record", bytes);
        match r.u8()? {
            LEDGER_RECORD_V1 => {}
            version => {
                return Err(DbError::UnsupportedVersion {
                    what: "ledger record",
                    version,
                    supported: "1",
                });
            }
        }
        let seq = r.u32()?;
        let close_time = r.u64()?;
        let count = r.u32()? as usize;
        let hashes = r.take(count.checked_mul(32).ok_or(DbError::Corrupt {
            what: "ledger record",
            detail: "tx count overflows".into(),
        })?)?;
        let tx_hashes = hashes
            .chunks_exact(32)
            .filter_map(TxHash::from_slice)
            .collect();
        let raw = r.bytes()?;
        r.finish()?;
        Ok(LedgerRecord {
            seq,
            close_time,
            tx_hashes,
            raw,
        })
    }
}

impl Compress for LedgerRecord {
    fn compress(&self, level: i32) -> DbResult<Vec<u8>> {
        self.view().compress(level)
    }
    fn raw_len(&self) -> usize {
        self.view().raw_len()
    }
}

impl Decompress for LedgerRecord {
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        LedgerRecord::decode(&zstd_decompress(bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx() -> TxRecord {
        TxRecord {
            ledger_seq: 7,
            close_time: 1_700_000_000,
            index: 3,
            envelope: vec![1; 100],
            result: vec![2; 10],
            meta: vec![3; 1000],
        }
    }

    #[test]
    fn tx_record_round_trips_through_zstd() {
        let rec = tx();
        assert_eq!(rec.encode().len(), rec.raw_len());
        let stored = rec.compress(3).expect("compress");
        assert_eq!(TxRecord::decompress(&stored).expect("decompress"), rec);
    }

    #[test]
    fn ledger_record_round_trips_and_keeps_hash_order() {
        let rec = LedgerRecord {
            seq: 42,
            close_time: 9,
            tx_hashes: vec![TxHash([9; 32]), TxHash([1; 32])],
            raw: vec![5; 4096],
        };
        assert_eq!(rec.encode().len(), rec.raw_len());
        let back = LedgerRecord::decompress(&rec.compress(1).expect("c")).expect("d");
        assert_eq!(back, rec);
    }

    #[test]
    fn unknown_version_and_truncation_are_errors() {
        let mut bytes = tx().encode();
        bytes[0] = 9;
        assert!(matches!(
            TxRecord::decode(&bytes),
            Err(DbError::UnsupportedVersion { version: 9, .. })
        ));
        let bytes = tx().encode();
        for cut in [0, 1, 10, bytes.len() - 1] {
            assert!(TxRecord::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let lbytes = LedgerRecord {
            seq: 1,
            close_time: 1,
            tx_hashes: vec![TxHash([1; 32])],
            raw: vec![1],
        }
        .encode();
        assert!(LedgerRecord::decode(&lbytes[..lbytes.len() - 1]).is_err());
    }
}
