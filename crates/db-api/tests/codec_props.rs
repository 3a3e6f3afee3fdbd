//! Property tests (the fuzzing of the record codecs): whatever bytes come
//! back from an engine, decoding is an error or a record, never a panic or
//! an unbounded allocation; and every record round-trips exactly.
//!
//! `PROPTEST_CASES=N` sets the case count (256 by default; the long run in
//! docs/reliability.md used 100,000).

use ledgerstore_db_api::{
    Bytes, Compress, Cut, Decompress, LedgerBytes, LedgerRecord, LedgerRecordRef, Part,
    StoredLedger, TxHash, TxInput, TxRecord,
    codec::{zstd_compress, zstd_decompress},
    split,
};
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256)
}

fn tx_record() -> impl Strategy<Value = TxRecord> {
    (
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 0..600),
        prop::collection::vec(any::<u8>(), 0..200),
        prop::collection::vec(any::<u8>(), 0..2000),
    )
        .prop_map(
            |(ledger_seq, close_time, index, envelope, result, meta)| TxRecord {
                ledger_seq,
                close_time,
                index,
                envelope,
                result,
                meta,
            },
        )
}

fn ledger_record() -> impl Strategy<Value = LedgerRecord> {
    (
        any::<u32>(),
        any::<u64>(),
        prop::collection::vec(any::<[u8; 32]>(), 0..40),
        prop::collection::vec(any::<u8>(), 0..4000),
    )
        .prop_map(|(seq, close_time, hashes, raw)| LedgerRecord {
            seq,
            close_time,
            tx_hashes: hashes.into_iter().map(TxHash).collect(),
            aliases: Vec::new(),
            raw,
        })
}

/// A random raw ledger and random cuts into it: `picks` are (gap before,
/// length, tx, part) in raw order; each range becomes that part of that
/// tx (a later pick of the same (tx, part) replaces the earlier one's
/// bytes, so it is left uncut). A part is a slice of `raw` (as Stellar
/// extraction gives it) or a copy of its bytes (as a gRPC client does),
/// by the gap's parity, so `check_cuts` takes both of its paths.
fn cut_ledger() -> impl Strategy<Value = (Bytes, Vec<TxInput>, Vec<Cut>)> {
    (
        prop::collection::vec(any::<u8>(), 0..3000),
        prop::collection::vec((0usize..200, 1usize..300, 0u32..6, 0u32..3), 0..30),
    )
        .prop_map(|(raw, picks)| {
            let raw = Bytes::from(raw);
            let mut txs: Vec<TxInput> = (0..6)
                .map(|i| TxInput {
                    hash: vec![i; 32],
                    envelope: Bytes::new(),
                    result: Bytes::new(),
                    meta: Bytes::new(),
                    alias: None,
                })
                .collect();
            let mut cuts: Vec<Cut> = Vec::new();
            let mut at = 0usize;
            for (gap, len, tx, part) in picks {
                let start = at + gap;
                if start + len > raw.len() {
                    break;
                }
                let bytes = if gap % 2 == 0 {
                    raw.slice(start..start + len)
                } else {
                    Bytes::copy_from_slice(&raw[start..start + len])
                };
                let part = Part::from_code(part).expect("0..3");
                let t = &mut txs[tx as usize];
                let slot = match part {
                    Part::Envelope => &mut t.envelope,
                    Part::Result => &mut t.result,
                    Part::Meta => &mut t.meta,
                };
                *slot = bytes;
                cuts.retain(|c| (c.tx, c.part) != (tx, part));
                cuts.push(Cut {
                    offset: start as u32,
                    tx,
                    part,
                });
                at = start + len;
            }
            // Given in any order: the reverse of raw order.
            cuts.reverse();
            (raw, txs, cuts)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// split → v3 record → zstd → decode → join gives back raw exactly,
    /// and the skeleton is raw minus the cut bytes.
    #[test]
    fn skeletons_join_back_to_raw((raw, txs, cuts) in cut_ledger()) {
        let s = split(&raw, &cuts, &txs).expect("split");
        let cut: usize = cuts.iter().map(|c| txs[c.tx as usize].part(c.part).len()).sum();
        prop_assert_eq!(s.bytes.len(), raw.len() - cut);
        let hashes: Vec<TxHash> = txs.iter().map(|t| TxHash([t.hash[0]; 32])).collect();
        let rec = LedgerRecordRef {
            seq: 7,
            close_time: 1,
            tx_hashes: &hashes,
            aliases: &[],
            bytes: LedgerBytes::Split(&s),
        };
        let encoded = rec.encode();
        prop_assert!(encoded.len() <= rec.raw_len());
        let stored = StoredLedger::decompress(&rec.compress(1).expect("c")).expect("d");
        prop_assert!(stored.needs_bodies());
        // A format-3 dir stores the record raw: the same record.
        prop_assert_eq!(&StoredLedger::decompress(&encoded).expect("raw"), &stored);
        prop_assert!(LedgerRecord::decode(&encoded).is_err(), "a skeleton is never whole");
        let back = stored
            .join(|tx, p| txs.get(tx as usize).map(|t| t.part(p)))
            .expect("join");
        prop_assert_eq!(back.raw, raw);
        prop_assert_eq!(back.tx_hashes, hashes);
    }

    #[test]
    fn tx_records_round_trip(rec in tx_record(), level in 1i32..6) {
        let stored = rec.compress(level).expect("compress");
        prop_assert_eq!(TxRecord::decompress(&stored).expect("decompress"), rec);
    }

    #[test]
    fn ledger_records_round_trip(rec in ledger_record()) {
        let stored = rec.compress(1).expect("compress");
        prop_assert_eq!(&LedgerRecord::decompress(&stored).expect("decompress"), &rec);
        // Raw, as a format-3 dir stores it.
        prop_assert_eq!(LedgerRecord::decompress(&rec.encode()).expect("raw"), rec);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = TxRecord::decode(&b);
        let _ = LedgerRecord::decode(&b);
        let _ = TxRecord::decompress(&b);
        let _ = LedgerRecord::decompress(&b);
        let _ = StoredLedger::decode(&b);
        let _ = zstd_decompress(&b);
    }

    #[test]
    fn corrupted_records_are_errors_or_records(rec in tx_record(), flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6)) {
        let mut raw = rec.encode();
        let n = raw.len();
        for (i, x) in flips {
            raw[i.index(n)] ^= x;
        }
        // Either a clean error, or a record that re-encodes to these bytes.
        if let Ok(back) = TxRecord::decode(&raw) {
            prop_assert_eq!(&back.encode(), &raw);
        }
        let z = zstd_compress(&raw, 1).expect("zstd");
        let mut z2 = z.clone();
        let m = z2.len();
        z2[m / 2] ^= 0x40;
        let _ = TxRecord::decompress(&z2);
    }

    #[test]
    fn truncated_records_are_errors(rec in tx_record(), cut in any::<prop::sample::Index>()) {
        let raw = rec.encode();
        let cut = cut.index(raw.len());
        prop_assert!(TxRecord::decode(&raw[..cut]).is_err());
    }
}
