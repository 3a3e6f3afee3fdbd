//! Property tests of the batch validator (its fuzzing): any batch a client
//! can send is accepted or refused with an error, never a panic; and what
//! it accepts keeps the store's invariants (contiguous from the mark,
//! 32-byte hashes, no hash twice, within every limit).
//!
//! `PROPTEST_CASES=N` sets the case count (256 by default).

use std::collections::HashSet;

use ledgerstore_db_api::{LedgerInput, TxInput};
use proptest::prelude::*;

use crate::validate::{Limits, validate};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(256)
}

fn tx() -> impl Strategy<Value = TxInput> {
    (
        prop_oneof![
            8 => prop::collection::vec(any::<u8>(), 32..=32),
            1 => prop::collection::vec(any::<u8>(), 0..40),
            1 => Just(vec![7u8; 32]), // a repeated hash
        ],
        prop::collection::vec(any::<u8>(), 0..64),
        prop::collection::vec(any::<u8>(), 0..16),
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(hash, envelope, result, meta)| TxInput {
            hash,
            envelope: envelope.into(),
            result: result.into(),
            meta: meta.into(),
            alias: None,
        })
}

fn batch() -> impl Strategy<Value = Vec<LedgerInput>> {
    (
        0u32..20,
        prop::collection::vec(
            (
                prop_oneof![8 => Just(1i64), 1 => -2i64..4],
                prop::collection::vec(any::<u8>(), 0..80),
                prop::collection::vec(tx(), 0..6),
            ),
            0..8,
        ),
    )
        .prop_map(|(start, ledgers)| {
            let mut seq = i64::from(start);
            ledgers
                .into_iter()
                .map(|(step, raw, txs)| {
                    seq = (seq + step).max(0);
                    LedgerInput {
                        seq: seq as u32,
                        close_time: 1,
                        raw: raw.into(),
                        txs,
                        cuts: Vec::new(),
                    }
                })
                .collect()
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn accepted_batches_keep_the_invariants(b in batch(), mark in prop::option::of(0u32..25)) {
        let limits = Limits {
            max_batch_ledgers: 6,
            max_txs_per_ledger: 4,
            max_ledger_bytes: 64,
            max_tx_bytes: 120,
            ..Limits::default()
        };
        let Ok(plan) = validate(&b, mark, &limits) else {
            return Ok(());
        };
        prop_assert!(plan.skipped <= b.len());
        prop_assert!(b.len() <= limits.max_batch_ledgers);
        let new = &b[plan.skipped..];
        let mut expect = mark.map(|m| m + 1);
        let mut seen = HashSet::new();
        let mut txs = 0;
        for l in new {
            if let Some(e) = expect {
                prop_assert_eq!(l.seq, e);
            }
            expect = Some(l.seq + 1);
            prop_assert!(l.raw.len() <= limits.max_ledger_bytes && !l.raw.is_empty());
            prop_assert!(l.txs.len() <= limits.max_txs_per_ledger);
            for t in &l.txs {
                prop_assert_eq!(t.hash.len(), 32);
                prop_assert!(seen.insert(t.hash.clone()), "a hash twice");
                prop_assert!(t.body_len() <= limits.max_tx_bytes);
                txs += 1;
            }
        }
        prop_assert_eq!(plan.txs, txs);
        for l in &b[..plan.skipped] {
            prop_assert!(mark.is_some_and(|m| l.seq <= m));
        }
    }
}
