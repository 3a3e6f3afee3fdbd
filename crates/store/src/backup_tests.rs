//! `check`, `backup` and `restore` on real engines, every layout.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Compress, Layout, TableId, TxHash};
use ledgerstore_synth::{Synth, SynthConfig};

use super::*;

fn open(dir: &Path, layout: Option<Layout>) -> Ledgerstore {
    let opts = StoreOptions {
        layout,
        ..StoreOptions::default()
    };
    Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store")
}

fn fill(store: &Ledgerstore, s: &Synth, from: u32, batches: u32, per: u32) {
    for b in 0..batches {
        let batch = s.batch(from + b * per, per);
        store.ingest(&batch, Duration::ZERO).expect("ingest");
    }
}

fn raw_put(store: &Ledgerstore, t: TableId, key: &[u8], value: &[u8]) {
    let mut w = store.table(t).begin_write().expect("begin");
    w.put(key, value).expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
}

fn raw_delete(store: &Ledgerstore, t: TableId, key: &[u8]) {
    let mut w = store.table(t).begin_write().expect("begin");
    w.delete(key).expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");
}

fn has(r: &CheckReport, needle: &str) -> bool {
    r.problems.iter().any(|p| p.contains(needle))
}

#[test]
fn check_passes_a_healthy_store_and_names_each_kind_of_damage() {
    let s = Synth::new(SynthConfig::small(5, 8));
    // The indexed layout's tables differ; indexed/tests.rs damages them.
    for layout in Layout::ALL.into_iter().filter(|l| !l.is_indexed()) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = open(tmp.path(), Some(layout));
        fill(&store, &s, 10, 3, 5); // ledgers 10..=24, 120 txs
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{layout:?}: {:?}", r.problems);
        assert_eq!((r.ledgers, r.txs), (15, 120));
        assert_eq!((r.tx_index_entries, r.tx_data_entries), (120, 120));
        assert_eq!(r.mark, Some(24));

        let l12 = s.ledger(12);
        let victim = TxHash::from_slice(&l12.txs[3].hash).expect("hash");
        raw_delete(&store, TableId::TxIndex, &victim.0);
        let other = TxHash::from_slice(&l12.txs[5].hash).expect("hash");
        raw_put(&store, TableId::TxData, &other.0, b"not zstd");
        let orphan = TxHash([0xab; 32]);
        raw_put(
            &store,
            TableId::TxIndex,
            &orphan.0,
            &13u32.compress(3).expect("u32"),
        );
        raw_delete(&store, TableId::Ledgers, &20u32.to_be_bytes());

        let r = store.check().expect("check");
        assert!(!r.is_ok());
        let want = [
            format!("tx_index: {victim} is missing (listed by ledgers[12] at index 3)"),
            format!("tx_data: {other}: record does not decode"),
            "ledgers: 20..=20 are missing (the next record is ledger 21)".to_string(),
            format!("tx_index: {orphan} belongs to ledger 13, which does not list it"),
            "tx_data: holds 120 entries, the ledger records list 112".to_string(),
        ];
        for w in &want {
            assert!(has(&r, w), "{layout:?}: no {w:?} in {:#?}", r.problems);
        }
        // Every tx of the deleted ledger 20 is now an orphan in both tables.
        let l20 = TxHash::from_slice(&s.ledger(20).txs[0].hash).expect("hash");
        assert!(
            has(&r, &format!("tx_data: {l20} belongs to ledger 20")),
            "{:#?}",
            r.problems
        );
    }
}

#[test]
fn backup_taken_during_ingest_restores_at_its_mark_and_checks_clean() {
    let s = Synth::new(SynthConfig::small(6, 10));
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = Arc::new(open(&tmp.path().join("live"), Some(layout)));
        fill(&store, &s, 1, 4, 5); // 1..=20
        let writer = {
            let (store, s) = (store.clone(), s.clone());
            std::thread::spawn(move || fill(&store, &s, 21, 20, 5)) // ..=120
        };
        let backup = tmp.path().join("backup");
        let info = store.backup(&backup).expect("backup");
        writer.join().expect("writer");
        let mark = info.mark.expect("non-empty");
        assert!((20..=120).contains(&mark), "{mark}");
        assert_eq!(mark % 5, 0, "cut between batches: {mark}");
        assert_eq!(info.layout, layout);
        assert_eq!(info.txs, u64::from(mark) * 10);
        assert!(info.bytes > 0);

        // Not over an existing backup; not from an incomplete one.
        let again = store.backup(&backup).expect_err("non-empty dest");
        assert!(
            again
                .to_string()
                .contains("already exists and is not empty"),
            "{again}"
        );
        let partial = tmp.path().join("partial");
        std::fs::create_dir_all(&partial).expect("mkdir");
        let e = restore(&partial, &tmp.path().join("x")).expect_err("incomplete");
        assert!(
            e.to_string().contains("not a complete ledgerstore backup"),
            "{e}"
        );

        let restored = tmp.path().join("restored");
        let got = restore(&backup, &restored).expect("restore");
        assert_eq!(got, info);
        let r = open(&restored, None);
        assert_eq!(r.layout(), layout);
        assert_eq!(r.last_ledger(), Some(mark));
        let report = r.check().expect("check");
        assert!(report.is_ok(), "{layout:?}: {:?}", report.problems);
        assert_eq!(report.txs, u64::from(mark) * 10);
        for seq in [1, mark / 2, mark] {
            let want = s.ledger(seq);
            assert_eq!(
                r.get_ledger(seq).expect("read").expect("present").raw,
                want.raw
            );
            for tx in &want.txs {
                let h = TxHash::from_slice(&tx.hash).expect("hash");
                let got = r.get_tx(&h).expect("read").expect("present");
                assert_eq!(got.meta, tx.meta);
            }
        }
        assert!(r.get_ledger(mark + 1).expect("read").is_none());
        // The restored store takes ingest from where the backup was cut.
        fill(&r, &s, mark + 1, 1, 5);
        assert!(r.check().expect("check").is_ok());
    }
}
