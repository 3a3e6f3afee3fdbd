//! Store tests on real RocksDB and real MDBX in temp dirs.

use std::path::Path;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{
    Compress, Layout, LedgerBytes, LedgerInput, LedgerRecordRef, TableId, TxHash,
};
use ledgerstore_synth::{Synth, SynthConfig};

use super::*;
use crate::test_engines::{Faults, FaultyEngines};

fn synth() -> Synth {
    Synth::new(SynthConfig::small(42, 8))
}

fn open(dir: &Path, layout: Layout) -> Ledgerstore {
    let opts = StoreOptions {
        layout: Some(layout),
        ..StoreOptions::default()
    };
    Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store")
}

fn ingest(store: &Ledgerstore, batch: &[LedgerInput]) -> IngestOutcome {
    store.ingest(batch, Duration::ZERO).expect("ingest")
}

fn hash(tx: &ledgerstore_db_api::TxInput) -> TxHash {
    TxHash::from_slice(&tx.hash).expect("32 bytes")
}

/// Raw presence of a key in an engine, bypassing the mark.
fn raw_has(store: &Ledgerstore, table: TableId, key: &[u8]) -> bool {
    store.table(table).get(key).expect("raw get").is_some()
}

fn assert_nothing_written(store: &Ledgerstore, batch: &[LedgerInput]) {
    for l in batch {
        assert!(
            !raw_has(store, TableId::Ledgers, &l.seq.to_be_bytes()),
            "ledger {}",
            l.seq
        );
        for (i, tx) in l.txs.iter().enumerate() {
            assert!(!raw_has(store, TableId::TxData, &tx.hash));
            assert!(!raw_has(store, TableId::TxIndex, &tx.hash));
            let pos = ledgerstore_db_api::TxPos {
                seq: l.seq,
                index: i as u32,
            };
            assert!(!raw_has(store, TableId::TxData, &pos.to_bytes()));
        }
    }
}

#[test]
fn every_layout_ingests_and_reads_back_exact_bytes() {
    let s = synth();
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = open(tmp.path(), layout);
        let b1 = s.batch(100, 5);
        let out = ingest(&store, &b1);
        assert_eq!((out.committed, out.skipped, out.mark), (5, 0, Some(104)));
        let report = out.report.expect("report");
        assert_eq!(report.stores.len(), 3, "{layout}");
        assert_eq!(report.txs, 40);
        ingest(&store, &s.batch(105, 3));
        assert_eq!(store.last_ledger(), Some(107));

        let l = s.ledger(106);
        let tx = &l.txs[3];
        let rec = store.get_tx(&hash(tx)).expect("get").expect("found");
        assert_eq!(
            (rec.ledger_seq, rec.index, rec.close_time),
            (106, 3, l.close_time)
        );
        assert_eq!(
            (&rec.envelope[..], &rec.result[..], &rec.meta[..]),
            (&tx.envelope[..], &tx.result[..], &tx.meta[..])
        );
        assert_eq!(store.get_tx_ledger(&hash(tx)).expect("ledger"), Some(106));
        let ledger = store.get_ledger(106).expect("get").expect("found");
        assert_eq!(ledger.raw, l.raw);
        assert_eq!(ledger.tx_hashes, l.txs.iter().map(hash).collect::<Vec<_>>());
        assert!(store.get_ledger(99).expect("get").is_none());
        assert!(store.get_tx(&TxHash([0; 32])).expect("get").is_none());

        let seqs: Vec<u32> = store
            .ledgers(98, 200, 2)
            .map(|r| r.expect("ledger").seq)
            .collect();
        assert_eq!(seqs, (100..=107).collect::<Vec<_>>(), "{layout}");

        let asked = [
            hash(&s.ledger(107).txs[0]),
            TxHash([7; 32]),
            hash(&s.ledger(100).txs[7]),
        ];
        let got = store.batch_get_txs(&asked).expect("batch");
        assert_eq!(got[0].as_ref().map(|r| r.ledger_seq), Some(107));
        assert!(got[1].is_none());
        assert_eq!(
            got[2].as_ref().map(|r| (r.ledger_seq, r.index)),
            Some((100, 7))
        );

        let stats = store.stats().expect("stats");
        assert_eq!((stats.ledgers, stats.txs, stats.batches), (8, 64, 2));
        let tx_data = &stats.tables[1];
        if layout == Layout::Indexed {
            // A new indexed dir hands raw bodies to RocksDB, which
            // compresses them in blocks: the savings are its files' (this
            // tiny table is smaller than RocksDB's own LOG and OPTIONS).
            assert_eq!(stats.bodies, Some("blocks"));
            assert_eq!(tx_data.raw_bytes, tx_data.stored_bytes, "{tx_data:?}");
        } else {
            assert!(
                tx_data.compression_savings_pct > 0.0,
                "{layout}: {tx_data:?}"
            );
        }
    }
}

#[test]
fn restart_continues_from_the_mark_and_resent_ledgers_write_nothing() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let store = open(tmp.path(), Layout::Hybrid);
        ingest(&store, &s.batch(1, 4));
        store.close().expect("close");
    }
    let store = open(tmp.path(), Layout::Hybrid);
    assert_eq!(store.last_ledger(), Some(4));
    let before = store.mark();
    let index_keys = store.table(TableId::TxIndex).stats().expect("stats").keys;
    let out = ingest(&store, &s.batch(2, 3));
    assert_eq!((out.skipped, out.committed, out.mark), (3, 0, Some(4)));
    assert!(out.report.is_none());
    assert_eq!(store.mark(), before, "a no-op advances nothing");
    assert_eq!(
        store.table(TableId::TxIndex).stats().expect("stats").keys,
        index_keys
    );
    // A straddling batch writes only the new part.
    let out = ingest(&store, &s.batch(3, 4));
    assert_eq!((out.skipped, out.committed, out.mark), (2, 2, Some(6)));
}

#[test]
fn gaps_and_malformed_batches_are_refused_whole() {
    let s = synth();
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = open(tmp.path(), layout);
        ingest(&store, &s.batch(10, 2));

        let gap = s.batch(13, 2);
        let e = store.ingest(&gap, Duration::ZERO).expect_err("gap");
        assert!(
            matches!(
                e,
                StoreError::Gap {
                    expected: 12,
                    got: 13
                }
            ),
            "{e}"
        );
        assert_nothing_written(&store, &gap);

        let mut dup = s.batch(12, 3);
        dup[2].txs[1].hash = dup[0].txs[4].hash.clone();
        let e = store.ingest(&dup, Duration::ZERO).expect_err("dup");
        assert!(
            e.to_string()
                .contains("ledgers[2].transactions[1].hash: duplicate"),
            "{e}"
        );
        assert_nothing_written(&store, &dup[..2]);

        let mut bad = s.batch(12, 3);
        bad[2].txs[0].hash.pop();
        assert!(store.ingest(&bad, Duration::ZERO).is_err());
        assert_nothing_written(&store, &bad[..2]);

        let mut empty = s.batch(12, 2);
        empty[1].txs[2].envelope.clear();
        assert!(store.ingest(&empty, Duration::ZERO).is_err());
        assert_nothing_written(&store, &empty[..1]);

        // A hash that a committed ledger already holds.
        let mut stolen = s.batch(12, 2);
        stolen[1].txs[0].hash = s.ledger(10).txs[0].hash.clone();
        let e = store
            .ingest(&stolen, Duration::ZERO)
            .expect_err("stored hash");
        assert!(
            matches!(e, StoreError::HashExists { ledger: 10, .. }),
            "{e}"
        );
        assert_nothing_written(&store, &stolen[..1]);
        let rec = store
            .get_tx(&hash(&s.ledger(10).txs[0]))
            .expect("get")
            .expect("intact");
        assert_eq!(rec.ledger_seq, 10);

        assert_eq!(store.last_ledger(), Some(11));
        ingest(&store, &s.batch(12, 2));
        assert_eq!(store.last_ledger(), Some(13), "{layout}");
    }
}

/// Leaves what a crash between the stores' commits and the mark would: a
/// durable ledger record and hash entries above the mark, for each ledger.
pub(crate) fn plant_residue(store: &Ledgerstore, ledgers: &[LedgerInput]) {
    let mut w = store.table(TableId::Ledgers).begin_write().expect("begin");
    for ledger in ledgers {
        let hashes: Vec<&[u8]> = ledger.txs.iter().map(|t| &t.hash[..]).collect();
        let rec = LedgerRecordRef {
            seq: ledger.seq,
            close_time: ledger.close_time,
            tx_hashes: &hashes,
            aliases: &[],
            bytes: LedgerBytes::Whole(&ledger.raw),
        };
        w.put(&ledger.seq.to_be_bytes(), &rec.compress(3).expect("c"))
            .expect("put");
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
    let indexed = store.layout().is_indexed();
    for table in [TableId::TxData, TableId::TxIndex] {
        let mut w = store.table(table).begin_write().expect("begin");
        for ledger in ledgers {
            for (i, tx) in ledger.txs.iter().enumerate() {
                let (key, v) = residue_entry(table, indexed, ledger, i, tx);
                w.put(&key, &v).expect("put");
            }
        }
        w.finish().expect("finish");
        w.commit().expect("commit");
    }
}

/// The key and value the `i`-th tx of `ledger` has in `table`.
fn residue_entry(
    table: TableId,
    indexed: bool,
    ledger: &LedgerInput,
    i: usize,
    tx: &ledgerstore_db_api::TxInput,
) -> (Vec<u8>, Vec<u8>) {
    let rec = ledgerstore_db_api::TxRecordRef {
        ledger_seq: ledger.seq,
        close_time: ledger.close_time,
        index: i as u32,
        envelope: &tx.envelope,
        result: &tx.result,
        meta: &tx.meta,
    };
    let pos = ledgerstore_db_api::TxPos {
        seq: ledger.seq,
        index: i as u32,
    };
    let v = match (table, indexed) {
        (TableId::TxIndex, false) => ledger.seq.to_be_bytes().to_vec(),
        (TableId::TxIndex, true) => tx.hash.clone(),
        (_, false) => rec.compress(3).expect("c"),
        (_, true) => ledgerstore_db_api::TxBody::compress_record(
            hash(tx),
            &rec.encode(),
            &ledgerstore_db_api::DictSet::default(),
            3,
        )
        .expect("c")
        .to_bytes(),
    };
    let key = match indexed {
        true => pos.to_bytes().to_vec(),
        false => tx.hash.clone(),
    };
    (key, v)
}

#[test]
fn nothing_above_the_mark_is_visible_and_open_rolls_it_back() {
    let s = synth();
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let residue = s.ledger(3);
        {
            let store = open(tmp.path(), layout);
            ingest(&store, &s.batch(1, 2));
            plant_residue(&store, std::slice::from_ref(&residue));
            assert!(raw_has(&store, TableId::Ledgers, &3u32.to_be_bytes()));
            assert!(store.get_ledger(3).expect("get").is_none(), "{layout}");
            assert!(store.get_tx(&hash(&residue.txs[0])).expect("get").is_none());
            assert!(
                store
                    .get_tx_ledger(&hash(&residue.txs[0]))
                    .expect("get")
                    .is_none()
            );
            let got = store
                .batch_get_txs(&[hash(&residue.txs[1])])
                .expect("batch");
            assert!(got[0].is_none());
            assert_eq!(store.ledgers(1, 10, 4).count(), 2);
        }
        let store = open(tmp.path(), layout);
        assert_nothing_written(&store, std::slice::from_ref(&residue));
        assert!(
            store
                .get_tx(&hash(&s.ledger(2).txs[0]))
                .expect("get")
                .is_some()
        );
        ingest(&store, &s.batch(3, 1));
        assert_eq!(store.last_ledger(), Some(3));
    }
}

/// A store of `layout` in `dir` on the real engines wrapped to inject
/// faults, and the switch for them.
fn open_faulty(dir: &Path, layout: Layout) -> (Ledgerstore, Faults) {
    let faults = Faults::default();
    let factory = FaultyEngines {
        inner: Backends::for_tests(),
        faults: faults.clone(),
    };
    let opts = StoreOptions {
        layout: Some(layout),
        ..Default::default()
    };
    let store = Ledgerstore::open(dir, opts, &factory).expect("open");
    (store, faults)
}

#[test]
fn a_failed_commit_rolls_back_in_process_and_the_batch_can_be_retried() {
    let s = synth();
    for layout in Layout::ALL {
        for table in TableId::ALL {
            let tmp = tempfile::tempdir().expect("tempdir");
            let (store, faults) = open_faulty(tmp.path(), layout);
            store
                .ingest(&s.batch(1, 2), Duration::ZERO)
                .expect("first batch");
            *faults.fail_commit.lock().expect("lock") = Some(table);
            let batch = s.batch(3, 3);
            let e = store
                .ingest(&batch, Duration::ZERO)
                .expect_err("injected failure");
            assert!(e.is_storage_full(), "{e}");
            assert_eq!(store.last_ledger(), Some(2));
            assert_nothing_written(&store, &batch);
            store
                .ingest(&batch, Duration::ZERO)
                .expect("retry succeeds");
            assert_eq!(store.last_ledger(), Some(5), "{layout} {table}");
            let rec = store.get_tx(&hash(&batch[2].txs[0])).expect("get");
            assert_eq!(rec.map(|r| r.ledger_seq), Some(5));
        }
    }
}

/// A batch whose bodies become SST files (past a 32 MiB chunk in a
/// `blocks` dir: 10 ledgers of 100 × 40 KB) rolls back like any other when
/// a commit fails, before RocksDB ingested the files or after, and at the
/// bodies' table or a later one; no part file is left, and the retry
/// succeeds.
#[test]
fn a_bulk_batch_of_sst_files_rolls_back_on_a_failed_commit_and_retries() {
    let s = Synth::new(SynthConfig::with_sizes(7, 100, 40_000, 2_000));
    for after in [false, true] {
        for table in [TableId::TxData, TableId::TxIndex] {
            let tmp = tempfile::tempdir().expect("tempdir");
            let (store, faults) = open_faulty(tmp.path(), Layout::Indexed);
            store.ingest(&s.batch(1, 1), Duration::ZERO).expect("first");
            let slot = if after {
                &faults.fail_after_commit
            } else {
                &faults.fail_commit
            };
            *slot.lock().expect("lock") = Some(table);
            let batch = s.batch(2, 10);
            let e = store
                .ingest(&batch, Duration::ZERO)
                .expect_err("injected failure");
            assert!(e.is_storage_full(), "{e}");
            assert_eq!(store.last_ledger(), Some(1));
            assert_nothing_written(&store, &batch);
            let bodies = tmp.path().join("rocksdb").join("tx_data");
            let parts = || {
                std::fs::read_dir(&bodies)
                    .expect("list")
                    .flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".sst.part"))
                    .count()
            };
            assert_eq!(parts(), 0, "after {after} {table}");
            // Bytes of SST files the bodies' engine ingested so far.
            let ingested = || {
                let stats = store.stats().expect("stats");
                let t = stats.tables.iter().find(|t| t.table == "tx_data");
                t.and_then(|t| t.engine_stats.ingested_bytes)
                    .expect("bodies on RocksDB")
            };
            let before = ingested();
            if !after && table == TableId::TxData {
                assert_eq!(before, 0, "the failed commit ingested nothing");
            } else {
                // The bodies' commit went through, and the rollback took
                // the ingested files' keys back out.
                assert!(before > 1 << 20, "ingested, then rolled back: {before}");
            }
            store
                .ingest(&batch, Duration::ZERO)
                .expect("retry succeeds");
            assert_eq!(store.last_ledger(), Some(11));
            assert_eq!(parts(), 0);
            assert!(
                ingested() > before + (1 << 20),
                "the retry's bodies were ingested as SST files too"
            );
            for seq in [2, 11] {
                let tx = &s.ledger(seq).txs[99];
                let rec = store.get_tx(&hash(tx)).expect("get").expect("found");
                assert_eq!(
                    (rec.ledger_seq, rec.index),
                    (seq, 99),
                    "after {after} {table}"
                );
            }
        }
    }
}

#[test]
fn a_dir_keeps_its_layout() {
    let tmp = tempfile::tempdir().expect("tempdir");
    drop(open(tmp.path(), Layout::RocksdbTuned));
    let e = Ledgerstore::open(
        tmp.path(),
        StoreOptions {
            layout: Some(Layout::Hybrid),
            ..Default::default()
        },
        &Backends::for_tests(),
    )
    .expect_err("layout mismatch");
    assert!(
        e.to_string().contains("created with layout rocksdb-tuned"),
        "{e}"
    );
}

#[test]
fn a_batch_that_would_cut_into_the_disk_reserve_is_refused_before_any_write() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = StoreOptions {
        layout: Some(Layout::Hybrid),
        limits: Limits {
            min_free_disk_bytes: u64::MAX / 4,
            ..Limits::default()
        },
        ..StoreOptions::default()
    };
    let store = Ledgerstore::open(tmp.path(), opts, &Backends::for_tests()).expect("open");
    let batch = s.batch(1, 3);
    let e = store.ingest(&batch, Duration::ZERO).expect_err("no room");
    assert!(matches!(e, StoreError::DiskFull { .. }), "{e}");
    assert!(e.is_storage_full());
    let msg = e.to_string();
    assert!(msg.contains(&tmp.path().display().to_string()), "{msg}");
    assert!(msg.contains("limits.min_free_disk_mb"), "{msg}");
    assert_eq!(store.last_ledger(), None);
    assert_nothing_written(&store, &batch);
}
