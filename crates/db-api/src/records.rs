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
//!
//! `LedgerRecord` v3, a skeleton (written by the `indexed` layout when the
//! source says where the transactions' parts sit in raw): v2's fields,
//! with zero aliases allowed, then in place of `raw`
//! `[raw_len u32][sha256 32][cut_count u32][cut_count × (varint at-delta,
//! varint tx × 3 + part)][skeleton]` (see [`crate::skeleton`]). Only
//! [`StoredLedger`] reads it; a whole ledger comes back through
//! [`StoredLedger::join`] with the bodies.

use std::borrow::Cow;

use crate::codec::{Compress, Decompress, Reader, put_bytes, zstd_compress, zstd_decompress};
use crate::error::{DbError, DbResult};
use crate::hash::TxHash;
use crate::input::Part;
use crate::skeleton::Skeleton;

const TX_RECORD_V1: u8 = 1;
const LEDGER_RECORD_V1: u8 = 1;
const LEDGER_RECORD_V2: u8 = 2;
const LEDGER_RECORD_V3: u8 = 3;

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
        self.encode_into(&mut out);
        out
    }

    /// Appends the encoded record to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(TX_RECORD_V1);
        out.extend_from_slice(&self.ledger_seq.to_be_bytes());
        out.extend_from_slice(&self.close_time.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        put_bytes(out, self.envelope);
        put_bytes(out, self.result);
        put_bytes(out, self.meta);
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
    /// The bytes of one part.
    pub fn part(&self, part: Part) -> &[u8] {
        match part {
            Part::Envelope => &self.envelope,
            Part::Result => &self.result,
            Part::Meta => &self.meta,
        }
    }

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

/// A ledger's bytes as a record stores them.
#[derive(Debug, Clone, Copy)]
pub enum LedgerBytes<'a> {
    /// The whole raw ledger (v1, v2).
    Whole(&'a [u8]),
    /// Its skeleton; the bodies hold the rest (v3).
    Split(&'a Skeleton),
}

/// A borrowed view of a [`LedgerRecord`] or [`StoredLedger`]: hashes as
/// raw 32-byte slices.
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
    /// The ledger's bytes: whole, or a skeleton.
    pub bytes: LedgerBytes<'a>,
}

impl<H: AsRef<[u8]>> LedgerRecordRef<'_, H> {
    fn version(&self) -> u8 {
        match self.bytes {
            LedgerBytes::Split(_) => LEDGER_RECORD_V3,
            LedgerBytes::Whole(_) if self.aliases.is_empty() => LEDGER_RECORD_V1,
            LedgerBytes::Whole(_) => LEDGER_RECORD_V2,
        }
    }

    /// Encodes the record (uncompressed).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.raw_len());
        let version = self.version();
        out.push(version);
        out.extend_from_slice(&self.seq.to_be_bytes());
        out.extend_from_slice(&self.close_time.to_be_bytes());
        out.extend_from_slice(&(self.tx_hashes.len() as u32).to_be_bytes());
        for h in self.tx_hashes {
            out.extend_from_slice(h.as_ref());
        }
        if version != LEDGER_RECORD_V1 {
            out.extend_from_slice(&(self.aliases.len() as u32).to_be_bytes());
            for a in self.aliases {
                out.extend_from_slice(&a.index.to_be_bytes());
                out.extend_from_slice(a.hash.as_ref());
            }
        }
        match self.bytes {
            LedgerBytes::Whole(raw) => put_bytes(&mut out, raw),
            LedgerBytes::Split(s) => s.encode_into(&mut out),
        }
        out
    }
}

impl<H: AsRef<[u8]>> Compress for LedgerRecordRef<'_, H> {
    fn compress(&self, level: i32) -> DbResult<Vec<u8>> {
        zstd_compress(&self.encode(), level)
    }
    /// Exact for v1 and v2; an upper bound for v3 (varints).
    fn raw_len(&self) -> usize {
        let aliases = match (self.version(), self.aliases.len()) {
            (LEDGER_RECORD_V1, _) => 0,
            (_, n) => 4 + 36 * n,
        };
        let bytes = match self.bytes {
            LedgerBytes::Whole(raw) => 4 + raw.len(),
            LedgerBytes::Split(s) => s.encoded_len(),
        };
        1 + 4 + 8 + 4 + 32 * self.tx_hashes.len() + aliases + bytes
    }
}

/// A `ledgers` value as stored: a whole ledger (v1, v2) or a skeleton
/// (v3). Readers that return a ledger turn it into a [`LedgerRecord`]
/// with [`Self::join`] (the bodies put back) or [`Self::into_whole`];
/// readers that need only its hashes (rollback, check, segment builds)
/// read them here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredLedger {
    /// Ledger sequence.
    pub seq: u32,
    /// Close time, unix seconds.
    pub close_time: u64,
    /// Hashes of the ledger's transactions, in apply order.
    pub tx_hashes: Vec<TxHash>,
    /// Second hashes of some of them, in ascending index.
    pub aliases: Vec<Alias<TxHash>>,
    /// The bytes.
    pub content: LedgerContent,
}

/// What a [`StoredLedger`] holds of the ledger's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerContent {
    /// The whole raw ledger.
    Whole(Vec<u8>),
    /// The skeleton: the raw without its transactions' parts.
    Split(Skeleton),
}

impl StoredLedger {
    /// The borrowed view.
    pub fn view(&self) -> LedgerRecordRef<'_, TxHash> {
        LedgerRecordRef {
            seq: self.seq,
            close_time: self.close_time,
            tx_hashes: &self.tx_hashes,
            aliases: &self.aliases,
            bytes: match &self.content {
                LedgerContent::Whole(raw) => LedgerBytes::Whole(raw),
                LedgerContent::Split(s) => LedgerBytes::Split(s),
            },
        }
    }

    /// True when the record holds a skeleton: the ledger needs its bodies.
    pub fn needs_bodies(&self) -> bool {
        matches!(self.content, LedgerContent::Split(_))
    }

    /// Every hash the ledger's transactions are found by, in position
    /// order (see [`LedgerRecord::lookup_hashes`]).
    pub fn lookup_hashes(&self) -> impl Iterator<Item = &TxHash> {
        self.tx_hashes
            .iter()
            .chain(self.aliases.iter().map(|a| &a.hash))
    }

    /// How many hashes [`Self::lookup_hashes`] yields.
    pub fn lookup_count(&self) -> usize {
        self.tx_hashes.len() + self.aliases.len()
    }

    fn with_raw(self, raw: Vec<u8>) -> LedgerRecord {
        LedgerRecord {
            seq: self.seq,
            close_time: self.close_time,
            tx_hashes: self.tx_hashes,
            aliases: self.aliases,
            raw,
        }
    }

    /// The whole ledger of a v1 or v2 record; a skeleton is
    /// [`DbError::NeedsBodies`].
    pub fn into_whole(self) -> DbResult<LedgerRecord> {
        match self.content {
            LedgerContent::Whole(raw) => Ok(LedgerRecord {
                seq: self.seq,
                close_time: self.close_time,
                tx_hashes: self.tx_hashes,
                aliases: self.aliases,
                raw,
            }),
            LedgerContent::Split(_) => Err(DbError::NeedsBodies { seq: self.seq }),
        }
    }

    /// The whole ledger: a skeleton with `part(tx, part)` put back and
    /// checked against its recorded SHA-256 ([`DbError::Reassembly`]
    /// otherwise); a whole record as it is.
    pub fn join<'a>(self, part: impl Fn(u32, Part) -> Option<&'a [u8]>) -> DbResult<LedgerRecord> {
        match &self.content {
            LedgerContent::Whole(_) => self.into_whole(),
            LedgerContent::Split(s) => {
                let raw = s.join(self.seq, part)?;
                Ok(self.with_raw(raw))
            }
        }
    }

    /// [`Self::join`] with the ledger's transaction records in apply
    /// order; each must be this ledger's, at its index.
    pub fn join_records(self, records: &[TxRecord]) -> DbResult<LedgerRecord> {
        let seq = self.seq;
        if let Some((i, r)) = records
            .iter()
            .enumerate()
            .find(|(i, r)| r.ledger_seq != seq || r.index as usize != *i)
        {
            return Err(DbError::Reassembly {
                seq,
                detail: format!("body {i} says ledger {} index {}", r.ledger_seq, r.index),
            });
        }
        self.join(|tx, p| records.get(tx as usize).map(|r| r.part(p)))
    }

    /// Decodes an uncompressed record of any version.
    pub fn decode(bytes: &[u8]) -> DbResult<Self> {
        let mut r = Reader::new("ledger record", bytes);
        let version = r.u8()?;
        if !(LEDGER_RECORD_V1..=LEDGER_RECORD_V3).contains(&version) {
            return Err(DbError::UnsupportedVersion {
                what: "ledger record",
                version,
                supported: "1, 2, 3",
            });
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
        let aliases = match version {
            LEDGER_RECORD_V1 => Vec::new(),
            LEDGER_RECORD_V2 => decode_aliases(&mut r, count, 1)?,
            _ => decode_aliases(&mut r, count, 0)?,
        };
        let content = match version {
            LEDGER_RECORD_V3 => LedgerContent::Split(Skeleton::decode(&mut r, count)?),
            _ => LedgerContent::Whole(r.bytes()?),
        };
        r.finish()?;
        Ok(StoredLedger {
            seq,
            close_time,
            tx_hashes,
            aliases,
            content,
        })
    }
}

impl Compress for StoredLedger {
    fn compress(&self, level: i32) -> DbResult<Vec<u8>> {
        self.view().compress(level)
    }
    fn raw_len(&self) -> usize {
        self.view().raw_len()
    }
}

/// The first bytes of every zstd frame (RFC 8878, 3.1.1).
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// True when `stored` begins with zstd's magic number: a `ledgers` value
/// the application compressed, not a raw record ([`ledger_record_bytes`]).
pub fn is_zstd_frame(stored: &[u8]) -> bool {
    stored.starts_with(&ZSTD_MAGIC)
}

/// A `ledgers` value's encoded record: the value itself where the engine
/// compresses the table in blocks (a format-3 `indexed` dir), or the zstd
/// frame's content where the application compressed the record. The two
/// never look alike: a record begins with its version (1 to 3), a frame
/// with zstd's magic number (`28 B5 2F FD`).
pub fn ledger_record_bytes(stored: &[u8]) -> DbResult<Cow<'_, [u8]>> {
    if is_zstd_frame(stored) {
        Ok(Cow::Owned(zstd_decompress(stored)?))
    } else {
        Ok(Cow::Borrowed(stored))
    }
}

/// The ledger sequence a `ledgers` value of either form holds (bytes 1..5
/// of every record version, after its version byte), reading no more of
/// a zstd frame than those five bytes take: what checks a value is the
/// ledger it is stored for without decompressing the whole record.
pub fn ledger_record_seq(stored: &[u8]) -> DbResult<u32> {
    let corrupt = |detail: String| DbError::Corrupt {
        what: "ledger record",
        detail,
    };
    let mut head = [0u8; 5];
    if is_zstd_frame(stored) {
        let mut d = zstd::stream::read::Decoder::with_buffer(stored)
            .map_err(|e| corrupt(format!("a zstd frame that does not open: {e}")))?;
        std::io::Read::read_exact(&mut d, &mut head)
            .map_err(|e| corrupt(format!("no sequence in its first bytes: {e}")))?;
    } else {
        head.copy_from_slice(
            stored
                .get(..5)
                .ok_or_else(|| corrupt(format!("{} bytes, no sequence", stored.len())))?,
        );
    }
    Ok(u32::from_be_bytes([head[1], head[2], head[3], head[4]]))
}

impl Decompress for StoredLedger {
    /// A value in either form ([`ledger_record_bytes`]).
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        StoredLedger::decode(&ledger_record_bytes(bytes)?)
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
            bytes: LedgerBytes::Whole(&self.raw),
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

    /// Decodes an uncompressed v1 or v2 record; a skeleton (v3) is
    /// [`DbError::NeedsBodies`] (read it as a [`StoredLedger`]).
    pub fn decode(bytes: &[u8]) -> DbResult<Self> {
        StoredLedger::decode(bytes)?.into_whole()
    }
}

/// The alias list of a v2 or v3 record: at least `min`, ascending index,
/// each naming one of the `txs` transactions.
fn decode_aliases(r: &mut Reader<'_>, txs: usize, min: usize) -> DbResult<Vec<Alias<TxHash>>> {
    let corrupt = |detail: String| DbError::Corrupt {
        what: "ledger record",
        detail,
    };
    let count = r.u32()? as usize;
    if count < min || count > txs {
        return Err(corrupt(format!(
            "{count} aliases for {txs} transactions (expected {min} to {txs})"
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
    /// A value in either form ([`ledger_record_bytes`]).
    fn decompress(bytes: &[u8]) -> DbResult<Self> {
        LedgerRecord::decode(&ledger_record_bytes(bytes)?)
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

    #[test]
    fn a_ledgers_value_is_read_raw_or_as_a_zstd_frame() {
        let rec = LedgerRecord {
            seq: 42,
            close_time: 9,
            tx_hashes: vec![TxHash([9; 32])],
            aliases: vec![alias(0, 7)],
            raw: vec![5; 300],
        };
        let raw = rec.encode();
        let frame = rec.compress(3).expect("c");
        assert!(matches!(ledger_record_bytes(&raw), Ok(Cow::Borrowed(_))));
        assert_eq!(ledger_record_bytes(&frame).expect("frame").as_ref(), raw);
        // Its sequence, from five bytes of either form.
        assert_eq!(ledger_record_seq(&raw).expect("raw"), 42);
        assert_eq!(ledger_record_seq(&frame).expect("frame"), 42);
        assert!(ledger_record_seq(&raw[..4]).is_err());
        assert!(ledger_record_seq(&frame[..6]).is_err());
        for v in [&raw, &frame] {
            assert_eq!(LedgerRecord::decompress(v).expect("d"), rec);
            assert_eq!(StoredLedger::decompress(v).expect("d").seq, 42);
        }
        // An unknown version raw is refused by it; a damaged frame is
        // refused as a frame: neither is misread.
        let mut bad = raw.clone();
        bad[0] = 7;
        let e = StoredLedger::decompress(&bad).expect_err("v7");
        assert!(e.to_string().contains('7'), "{e}");
        let mut torn = frame.clone();
        torn.truncate(frame.len() - 3);
        assert!(StoredLedger::decompress(&torn).is_err());
        assert!(StoredLedger::decompress(&ZSTD_MAGIC).is_err());
        assert!(StoredLedger::decompress(&[]).is_err());
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
    fn skeleton_record_is_v3_and_joins_only_with_its_bodies() {
        use crate::input::{Cut, TxInput};
        let raw = b"headEEEErrMMMMtail".to_vec();
        let txs = vec![TxInput {
            hash: vec![1; 32],
            envelope: b"EEEE".to_vec().into(),
            result: b"rr".to_vec().into(),
            meta: b"MMMM".to_vec().into(),
            alias: Some(vec![2; 32]),
        }];
        let cuts: Vec<Cut> = [(4, Part::Envelope), (8, Part::Result), (10, Part::Meta)]
            .map(|(offset, part)| Cut {
                offset,
                tx: 0,
                part,
            })
            .to_vec();
        let skel = crate::skeleton::split(&raw, &cuts, &txs).expect("split");
        let hashes = [TxHash([1; 32])];
        for aliases in [vec![], vec![alias(0, 2)]] {
            let rec = LedgerRecordRef {
                seq: 5,
                close_time: 9,
                tx_hashes: &hashes,
                aliases: &aliases,
                bytes: LedgerBytes::Split(&skel),
            };
            let bytes = rec.encode();
            assert_eq!(bytes[0], 3);
            assert!(bytes.len() <= rec.raw_len());
            // Only the stored form reads it; a whole ledger needs bodies.
            assert!(matches!(
                LedgerRecord::decode(&bytes),
                Err(DbError::NeedsBodies { seq: 5 })
            ));
            let stored = StoredLedger::decode(&bytes).expect("decode");
            assert_eq!(stored.aliases, aliases);
            assert_eq!(stored.lookup_count(), 1 + aliases.len());
            let body = TxRecord {
                ledger_seq: 5,
                close_time: 9,
                index: 0,
                envelope: txs[0].envelope.to_vec(),
                result: txs[0].result.to_vec(),
                meta: txs[0].meta.to_vec(),
            };
            let whole = stored
                .clone()
                .join_records(std::slice::from_ref(&body))
                .expect("join");
            assert_eq!(whole.raw, raw);
            assert_eq!(whole.aliases, aliases);
            // Another ledger's body, or a damaged one: refused, naming 5.
            for bad in [
                TxRecord {
                    ledger_seq: 6,
                    ..body.clone()
                },
                TxRecord {
                    meta: b"MMMN".to_vec(),
                    ..body.clone()
                },
            ] {
                assert!(matches!(
                    stored.clone().join_records(&[bad]),
                    Err(DbError::Reassembly { seq: 5, .. })
                ));
            }
            for cut in [1, 20, bytes.len() - 1] {
                assert!(StoredLedger::decode(&bytes[..cut]).is_err(), "cut at {cut}");
            }
        }
        // A whole record reads the same through both types.
        let whole = LedgerRecord {
            seq: 5,
            close_time: 9,
            tx_hashes: hashes.to_vec(),
            aliases: Vec::new(),
            raw: raw.clone(),
        };
        let stored = StoredLedger::decode(&whole.encode()).expect("decode");
        assert!(!stored.needs_bodies());
        assert_eq!(stored.into_whole().expect("whole"), whole);
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
