//! Aliases (a second hash a transaction is found by: a Stellar fee bump's
//! inner hash) in every layout, on real RocksDB and MDBX: lookups (one by
//! one, batched, the ledger of a hash), through `indexed`'s segments and
//! merges, rollback of a failed batch, `check`, backup and restore, and
//! the refusals of a duplicate.

use std::path::Path;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Layout, LedgerInput, TableId, TxHash};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::test_engines::{Faults, FaultyEngines};
use crate::{IndexedOptions, Ledgerstore, StoreError, StoreOptions};

const RANGE: u32 = 4;

fn opts(layout: Layout) -> StoreOptions {
    StoreOptions {
        layout: Some(layout),
        indexed: IndexedOptions {
            range_ledgers: RANGE,
            merge_fanout: 2,
            merge_levels: 1,
            dict: None,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    }
}

fn open(dir: &Path, layout: Layout) -> Ledgerstore {
    Ledgerstore::open(dir, opts(layout), &Backends::for_tests()).expect("open store")
}

/// A distinct 32-byte alias for `hash`.
fn alias_of(hash: &[u8]) -> Vec<u8> {
    hash.iter().map(|b| !b).collect()
}

/// Synthetic ledgers where every third transaction has an alias.
fn batch(s: &Synth, first: u32, n: u32) -> Vec<LedgerInput> {
    let mut b = s.batch(first, n);
    for l in &mut b {
        for (i, t) in l.txs.iter_mut().enumerate() {
            if i % 3 == 1 {
                t.alias = Some(alias_of(&t.hash));
            }
        }
    }
    b
}

fn h(bytes: &[u8]) -> TxHash {
    TxHash::from_slice(bytes).expect("32 bytes")
}

/// Every transaction of `ledgers` is found by its hash and, where it has
/// one, by its alias, with the same record.
fn assert_found(store: &Ledgerstore, ledgers: &[LedgerInput], at: &str) {
    let mut keys = Vec::new();
    let mut want = Vec::new();
    for l in ledgers {
        for (i, t) in l.txs.iter().enumerate() {
            for key in std::iter::once(&t.hash).chain(t.alias.as_ref()) {
                let rec = store
                    .get_tx(&h(key))
                    .expect("get")
                    .unwrap_or_else(|| panic!("{at}: {} not found", hex::encode(key)));
                assert_eq!((rec.ledger_seq, rec.index), (l.seq, i as u32), "{at}");
                assert_eq!(rec.envelope, t.envelope, "{at}");
                let ledger = store.get_tx_ledger(&h(key)).expect("ledger");
                assert_eq!(ledger, Some(l.seq), "{at}");
                keys.push(h(key));
                want.push((l.seq, i as u32));
            }
        }
    }
    let got = store.batch_get_txs(&keys).expect("batch");
    for (g, w) in got.iter().zip(&want) {
        let g = g.as_ref().unwrap_or_else(|| panic!("{at}: batched miss"));
        assert_eq!((g.ledger_seq, g.index), *w, "{at}");
    }
}

fn assert_clean(store: &Ledgerstore, txs: u64, aliases: u64, at: &str) {
    let r = store.check().expect("check");
    assert_eq!(r.problem_count, 0, "{at}: {:?}", r.problems);
    assert_eq!((r.txs, r.aliases), (txs, aliases), "{at}");
}

#[test]
fn aliases_resolve_in_every_layout_through_segments_check_and_backup() {
    let s = Synth::new(SynthConfig::small(5, 7));
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let all = batch(&s, 1, 18);
        let aliases = all
            .iter()
            .flat_map(|l| &l.txs)
            .filter(|t| t.alias.is_some())
            .count() as u64;
        {
            let store = open(&dir, layout);
            for chunk in all.chunks(3) {
                store.ingest(chunk, Duration::ZERO).expect("ingest");
            }
            if layout == Layout::Indexed {
                // Base ranges of 4 ledgers, merged in pairs: the aliases
                // are keys of the segments too.
                store.wait_for_segments().expect("segments");
                let (segs, _) = store.indexed_stats().expect("indexed");
                assert!(!segs.segments.is_empty(), "segments were built");
            }
            assert_found(&store, &all, &format!("{layout}"));
            if layout == Layout::Indexed {
                // An alias costs a 40-byte body, not a second record.
                let l = &all[0];
                let pos = ledgerstore_db_api::TxPos {
                    seq: l.seq,
                    index: l.txs.len() as u32,
                };
                let body = store.table(TableId::TxData).get(&pos.to_bytes());
                let body = body.expect("raw get").expect("the first alias's body");
                assert_eq!(body.len(), 40);
                assert_eq!(&body[..32], l.txs[1].alias.as_deref().expect("alias"));
            }
            assert_clean(&store, 18 * 7, aliases, &format!("{layout}"));
            store.backup(&tmp.path().join("backup")).expect("backup");
        }
        // Reopened: the hot map is rebuilt with the aliases.
        let store = open(&dir, layout);
        assert_found(&store, &all, &format!("{layout} reopened"));
        drop(store);
        crate::restore(&tmp.path().join("backup"), &tmp.path().join("restored")).expect("restore");
        let restored = open(&tmp.path().join("restored"), layout);
        assert_found(&restored, &all, &format!("{layout} restored"));
        assert_clean(&restored, 18 * 7, aliases, &format!("{layout} restored"));
    }
}

#[test]
fn a_failed_batch_leaves_no_alias_behind() {
    let s = Synth::new(SynthConfig::small(6, 5));
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let faults = Faults::default();
        let engines = FaultyEngines {
            inner: Backends::for_tests(),
            faults: faults.clone(),
        };
        let store = Ledgerstore::open(tmp.path(), opts(layout), &engines).expect("open");
        store
            .ingest(&batch(&s, 1, 2), Duration::ZERO)
            .expect("ingest");
        let failing = batch(&s, 3, 2);
        // The hash tables commit after the ledgers: the ledger records are
        // durable, the tx index's commit fails, and the batch rolls back.
        if let Ok(mut t) = faults.fail_commit.lock() {
            *t = Some(TableId::TxIndex);
        }
        assert!(store.ingest(&failing, Duration::ZERO).is_err(), "{layout}");
        for t in failing.iter().flat_map(|l| &l.txs) {
            if let Some(a) = &t.alias {
                assert!(store.get_tx(&h(a)).expect("get").is_none(), "{layout}");
                for table in [TableId::TxData, TableId::TxIndex] {
                    let raw = store.table(table).get(a).expect("raw get");
                    assert!(raw.is_none(), "{layout}: {table:?} kept an alias");
                }
            }
        }
        let r = store.check().expect("check");
        assert_eq!(r.problem_count, 0, "{layout}: {:?}", r.problems);
        // The same batch goes in once the fault is gone.
        store.ingest(&failing, Duration::ZERO).expect("retry");
        assert_found(&store, &failing, &format!("{layout} after retry"));
    }
}

#[test]
fn an_alias_that_repeats_a_hash_is_refused_naming_it() {
    let s = Synth::new(SynthConfig::small(8, 4));
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = open(tmp.path(), layout);
        let first = batch(&s, 1, 1);
        store.ingest(&first, Duration::ZERO).expect("ingest");

        // Inside one batch: an alias equal to another transaction's hash.
        let mut b = batch(&s, 2, 1);
        b[0].txs[2].alias = Some(b[0].txs[0].hash.clone());
        let e = store.ingest(&b, Duration::ZERO).expect_err("refused");
        let msg = e.to_string();
        assert!(
            msg.contains("ledgers[0].transactions[2].alias")
                && msg.contains("duplicate of ledgers[0].transactions[0].hash"),
            "{layout}: {msg}"
        );

        // Against the store: an alias equal to a committed hash, or a
        // committed alias.
        for key in [
            first[0].txs[0].hash.clone(),
            first[0].txs[1].alias.clone().expect("alias"),
        ] {
            let mut b = batch(&s, 2, 1);
            b[0].txs[0].alias = Some(key);
            match store.ingest(&b, Duration::ZERO) {
                Err(StoreError::HashExists { field, ledger, .. }) => {
                    assert_eq!(field, "ledgers[0].transactions[0].alias", "{layout}");
                    assert_eq!(ledger, 1, "{layout}");
                }
                other => panic!("{layout}: {other:?}"),
            }
        }
        let mut b = batch(&s, 2, 1);
        b[0].txs[0].alias = Some(vec![1; 31]);
        let e = store.ingest(&b, Duration::ZERO).expect_err("refused");
        assert!(
            e.to_string().contains("alias: must be 32 bytes, got 31"),
            "{layout}: {e}"
        );
        assert_eq!(store.last_ledger(), Some(1), "{layout}: nothing written");
    }
}
