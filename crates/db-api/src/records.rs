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
//!
//! `LedgerRecord` v2, written when a ledger has aliases (second hashes its
//! transactions are found by: a Stellar fee bump's inner hash):
//! `[2u8][seq u32][close_time u64][tx_count u32][tx_count × 32-byte hash]
//! [alias_count u32][alias_count × (index u32, 32-byte hash)][raw]`, the
//! aliases in ascending `index`.

use crate::codec::{Compress, Decompress, Reader, put_bytes, zstd_compress, zstd_decompress};
use crate::error::{DbError, DbResult};
use crate::table::TxHash;

const TX_RECORD_V1: u8 = 1;
const LEDGER_RECORD_V1: u8 = 1;
const LEDGER_RECORD_V2: u8 = 2;

/// A second hash a transaction is found by (Stellar: the inner
/// transaction's hash of a fee bump), naming the transaction by its apply
/// index in the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias<H> {
    /// Apply index of the transaction it names.
    pub index: u32,
    /// The alias hash.
    pub hash: H,
}

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
    /// Second hashes of some of them, in ascending index.
    pub aliases: Vec<Alias<TxHash>>,
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
    /// Aliases, in ascending index.
    pub aliases: &'a [Alias<H>],
    /// Raw ledger bytes.
    pub raw: &'a [u8],
}

impl<H: AsRef<[u8]>> LedgerRecordRef<'_, H> {
    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw_len());
        let v2 = !self.aliases.is_empty();
        out.push(if v2 {
            LEDGER_RECORD_V2
        } else {
            LEDGER_RECORD_V1
        });
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.close_time.to_be_bytes());
        out.extend_from_slice(&(self.tx_hashes.len() as u32).to_be_bytes());
        for h in self.tx_hashes {
            out.extend_from_slice(h.as_ref());
        }
        if v2 {
            out.extend_from_slice(&(self.aliases.len() as u32).to_be_bytes());
            for a in self.aliases {
                out.extend_from_slice(&a.index.to_be_bytes());
                out.extend_from_slice(a.hash.as_ref());
            }
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
        let aliases = match self.aliases.len() {
            0 => 0,
            n => 4 + 36 * n,
        };
        1 + 4 + 8 + 4 + 32 * self.tx_hashes.len() + aliases + 4 + self.raw.len()
    }
}

impl LedgerRecord {
    /// The borrowed view.
    pub fn view(&self) -> LedgerRecordRef<'_, TxHash> {
        LedgerRecordRef {
            seq: self.seq,
            close_time: self.close_time,
            tx_hashes: &self.tx_hashes,
            aliases: &self.aliases,
            raw: &self.raw,
        }
    }

    /// Every hash the ledger's transactions are found by, in position
    /// order: the apply-order hashes, then the aliases (layout `indexed`
    /// stores the `k`-th alias at index `tx_hashes.len() + k`).
    pub fn lookup_hashes(&self) -> impl Iterator<Item = &TxHash> {
        self.tx_hashes
            .iter()
            .chain(self.aliases.iter().map(|a| &a.hash))
    }

    /// How many hashes [`Self::lookup_hashes`] yields.
    pub fn lookup_count(&self) -> usize {
        self.tx_hashes.len() + self.aliases.len()
    }

    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        self.view().encode()
    }

    /// Decodes an uncompressed record.
    pub fn decode(bytes: &[u8]) -> DbResult<Self> {
        let mut r = Reader::new("ledger record", bytes);
        let v2 = match r.u8()? {
            LEDGER_RECORD_V1 => false,
            LEDGER_RECORD_V2 => true,
            version => {
                return Err(DbError::UnsupportedVersion {
                    what: "ledger record",
                    version,
                    supported: "1, 2",
                });
            }
        };
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
        let aliases = if v2 {
            decode_aliases(&mut r, count)?
        } else {
            Vec::new()
        };
        let raw = r.bytes()?;
        r.finish()?;
        Ok(LedgerRecord {
            seq,
            close_time,
            tx_hashes,
            aliases,
            raw,
        })
    }
}

/// The alias list of a v2 record: at least one, ascending index, each
/// naming one of the `txs` transactions.
fn decode_aliases(r: &mut Reader<'_>, txs: usize) -> DbResult<Vec<Alias<TxHash>>> {
    let corrupt = |detail: String| DbError::Corrupt {
        what: "ledger record",
        detail,
    };
    let count = r.u32()? as usize;
    if count == 0 || count > txs {
        return Err(corrupt(format!(
            "{count} aliases for {txs} transactions (expected 1 to {txs})"
        )));
    }
    let mut out: Vec<Alias<TxHash>> = Vec::with_capacity(count);
    for _ in 0..count {
        let index = r.u32()?;
        let hash = TxHash::from_slice(r.take(32)?)
            .ok_or_else(|| corrupt("alias hash is not 32 bytes".into()))?;
        if index as usize >= txs || out.last().is_some_and(|a| a.index >= index) {
            return Err(corrupt(format!(
                "alias index {index} is out of order or not below {txs}"
            )));
        }
        out.push(Alias { index, hash });
    }
    Ok(out)
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
            aliases: Vec::new(),
            raw: vec![5; 4096],
        };
        assert_eq!(rec.encode().len(), rec.raw_len());
        assert_eq!(rec.encode()[0], 1, "no aliases: still v1");
        let back = LedgerRecord::decompress(&rec.compress(1).expect("c")).expect("d");
        assert_eq!(back, rec);
    }

    fn alias(index: u32, byte: u8) -> Alias<TxHash> {
        Alias {
            index,
            hash: TxHash([byte; 32]),
        }
    }

    #[test]
    fn ledger_record_with_aliases_is_v2_and_round_trips() {
        let rec = LedgerRecord {
            seq: 42,
            close_time: 9,
            tx_hashes: vec![TxHash([9; 32]), TxHash([1; 32]), TxHash([3; 32])],
            aliases: vec![alias(0, 7), alias(2, 8)],
            raw: vec![5; 100],
        };
        let bytes = rec.encode();
        assert_eq!(bytes[0], 2);
        assert_eq!(bytes.len(), rec.raw_len());
        assert_eq!(LedgerRecord::decode(&bytes).expect("decode"), rec);
        let keys: Vec<u8> = rec.lookup_hashes().map(|h| h.0[0]).collect();
        assert_eq!(keys, [9, 1, 3, 7, 8]);
        // Out of order, or naming no transaction: corrupt, never misread.
        for bad in [vec![alias(2, 7), alias(0, 8)], vec![alias(3, 7)]] {
            let r = LedgerRecord {
                aliases: bad,
                ..rec.clone()
            };
            assert!(LedgerRecord::decode(&r.encode()).is_err());
        }
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
            aliases: Vec::new(),
            raw: vec![1],
        }
        .encode();
        assert!(LedgerRecord::decode(&lbytes[..lbytes.len() - 1]).is_err());
    }
}
