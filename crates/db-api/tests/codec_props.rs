//! Property tests (the fuzzing of the record codecs): whatever bytes come
//! back from an engine, decoding is an error or a record, never a panic or
//! an unbounded allocation; and every record round-trips exactly.
//!
//! `PROPTEST_CASES=N` sets the case count (256 by default; the long run in
//! docs/reliability.md used 100,000).

use ledgerstore_db_api::{
    Compress, Decompress, LedgerRecord, TxHash, TxRecord,
    codec::{zstd_compress, zstd_decompress},
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

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn tx_records_round_trip(rec in tx_record(), level in 1i32..6) {
        let stored = rec.compress(level).expect("compress");
        prop_assert_eq!(TxRecord::decompress(&stored).expect("decompress"), rec);
    }

    #[test]
    fn ledger_records_round_trip(rec in ledger_record()) {
        let stored = rec.compress(1).expect("compress");
        prop_assert_eq!(LedgerRecord::decompress(&stored).expect("decompress"), rec);
    }

    #[test]
    fn arbitrary_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = TxRecord::decode(&b);
        let _ = LedgerRecord::decode(&b);
        let _ = TxRecord::decompress(&b);
        let _ = LedgerRecord::decompress(&b);
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
