//! Regression tests for the durability review (issue 20): each one fails
//! on the code before its fix. Real RocksDB and MDBX in temp dirs, with
//! faults injected by a wrapping engine factory or the `MARK` test hook.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{DbError, EngineFactory, Layout, LedgerInput, TableId, TxHash};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::datadir::MarkFault;
use crate::test_engines::{Faults, FaultyEngines};
use crate::tests::plant_residue;
use crate::{DictOptions, IndexedOptions, Ledgerstore, StoreError, StoreOptions};

fn synth() -> Synth {
    Synth::new(SynthConfig::small(20, 8))
}

fn opts(layout: Layout) -> StoreOptions {
    StoreOptions {
        layout: Some(layout),
        indexed: IndexedOptions {
            range_ledgers: 10,
            dict: None,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    }
}

/// Layout `indexed` with a dictionary after 40 txs, retrained every
/// `retrain_every_txs` (0: never), and ranges too long to close.
fn with_dictionaries(retrain_every_txs: u64) -> StoreOptions {
    StoreOptions {
        indexed: IndexedOptions {
            range_ledgers: 1_000,
            dict: Some(DictOptions {
                train_after_txs: 40,
                samples: 64,
                max_bytes: 8 << 10,
                retrain_every_txs,
            }),
            ..IndexedOptions::default()
        },
        ..opts(Layout::Indexed)
    }
}

fn open_with(dir: &Path, o: StoreOptions, engines: &dyn EngineFactory) -> Ledgerstore {
    Ledgerstore::open(dir, o, engines).expect("open store")
}

fn hash(tx: &ledgerstore_db_api::TxInput) -> TxHash {
    TxHash::from_slice(&tx.hash).expect("32 bytes")
}

/// The next `MARK` writes of `store` fail as `faults` say, in order.
fn arm_mark_faults(store: &Ledgerstore, faults: Vec<MarkFault>) {
    *store.dir.mark_faults.lock().expect("lock") = faults;
}

/// Every ledger and tx of `first..=last` reads back.
fn assert_readable(store: &Ledgerstore, s: &Synth, first: u32, last: u32) {
    for seq in first..=last {
        let l = s.ledger(seq);
        assert!(
            store.get_ledger(seq).expect("get").is_some(),
            "ledger {seq} lost"
        );
        for tx in &l.txs {
            let rec = store.get_tx(&hash(tx)).expect("get").expect("tx lost");
            assert_eq!(rec.ledger_seq, seq);
        }
    }
}

/// Defect 1: the new MARK is renamed into place but the directory fsync
/// fails, then (before the fix) writing the old MARK back fails too. The
/// store must not roll back above the old mark, which would delete ledgers
/// the MARK on disk calls committed. (The second fault is the old code's
/// write-back; the fixed code never writes one.)
#[test]
fn a_failed_mark_write_refuses_writes_until_reopen_and_deletes_nothing() {
    let s = synth();
    for layout in [Layout::Hybrid, Layout::Indexed] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let backups = tempfile::tempdir().expect("tempdir");
        {
            let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
            store
                .ingest(&s.batch(1, 4), Duration::ZERO)
                .expect("ingest");
            arm_mark_faults(
                &store,
                vec![MarkFault::AfterRename, MarkFault::BeforeRename],
            );
            let e = store
                .ingest(&s.batch(5, 4), Duration::ZERO)
                .expect_err("the MARK write fails");
            assert!(e.to_string().contains("injected"), "{e}");
            assert_eq!(store.last_ledger(), Some(4), "nothing new is visible");
            let refused = store
                .ingest(&s.batch(5, 4), Duration::ZERO)
                .expect_err("writes are refused");
            assert!(
                matches!(refused, StoreError::WritesRefused { .. }),
                "{refused}"
            );
            assert!(refused.to_string().contains("ledgers 5..=8"), "{refused}");
            assert!(store.writes_refused().is_some());
            // A backup (which rolled back before the fix) is cut at the
            // visible mark and changes nothing in the source.
            let info = store
                .backup(&backups.path().join("b"))
                .expect("backup still works");
            assert_eq!(info.mark, Some(4));
            assert_readable(&store, &s, 1, 4);
        }
        // The MARK on disk says 8: everything up to it is there.
        let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
        assert_eq!(store.last_ledger(), Some(8), "{layout}");
        assert_readable(&store, &s, 1, 8);
        assert!(store.check().expect("check").is_ok(), "{layout}");
        let out = store
            .ingest(&s.batch(5, 6), Duration::ZERO)
            .expect("resend");
        assert_eq!((out.skipped, out.committed), (4, 2));
    }
}

/// Defect 1, the other outcome: the MARK write fails before its rename, so
/// the file still holds the old, durable mark. The batch rolls back in
/// process and ingest goes on without a restart.
#[test]
fn a_mark_write_that_failed_before_its_rename_rolls_back_and_ingest_goes_on() {
    let s = synth();
    for layout in [Layout::Hybrid, Layout::Indexed] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
        store
            .ingest(&s.batch(1, 4), Duration::ZERO)
            .expect("ingest");
        arm_mark_faults(&store, vec![MarkFault::BeforeRename]);
        let batch = s.batch(5, 4);
        store
            .ingest(&batch, Duration::ZERO)
            .expect_err("the MARK write fails");
        assert!(store.writes_refused().is_none(), "{layout}");
        assert_eq!(store.last_ledger(), Some(4));
        let raw = store.table(TableId::Ledgers).get(&5u32.to_be_bytes());
        assert!(
            raw.expect("raw").is_none(),
            "{layout}: rolled back in process"
        );
        store.ingest(&batch, Duration::ZERO).expect("resend");
        assert_readable(&store, &s, 1, 8);
        drop(store);
        let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
        assert_eq!(store.last_ledger(), Some(8));
        assert!(store.check().expect("check").is_ok(), "{layout}");
    }
}

/// Defect 2: a dir whose MARK is missing while its tables hold data is
/// refused by every opener (offline readers too), and nothing is deleted.
#[test]
fn a_missing_mark_is_refused_by_name_and_nothing_is_deleted() {
    let s = synth();
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mark = tmp.path().join("MARK");
        {
            let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
            store
                .ingest(&s.batch(1, 12), Duration::ZERO)
                .expect("ingest");
            store.wait_for_segments().expect("segments");
        }
        let saved = std::fs::read(&mark).expect("MARK");
        std::fs::remove_file(&mark).expect("remove MARK");
        for offline in [true, false] {
            let o = StoreOptions {
                offline,
                ..opts(layout)
            };
            let e = Ledgerstore::open(tmp.path(), o, &Backends::for_tests())
                .expect_err("a missing MARK is refused");
            let msg = e.to_string();
            assert!(msg.contains(&mark.display().to_string()), "{msg}");
            assert!(msg.contains("is missing but"), "{msg}");
            assert!(msg.contains("ledgerstore restore"), "{msg}");
        }
        std::fs::write(&mark, saved).expect("put MARK back");
        let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
        assert_readable(&store, &s, 1, 12);
        assert!(store.check().expect("check").is_ok(), "{layout}");
    }
}

/// A new dir gets its MARK at once; a dir without one and without data (a
/// build that wrote none until the first commit) still opens empty.
#[test]
fn an_empty_dir_without_a_mark_opens_empty() {
    let tmp = tempfile::tempdir().expect("tempdir");
    drop(open_with(
        tmp.path(),
        opts(Layout::Hybrid),
        &Backends::for_tests(),
    ));
    assert!(
        tmp.path().join("MARK").exists(),
        "created with the manifest"
    );
    std::fs::remove_file(tmp.path().join("MARK")).expect("remove");
    let store = open_with(tmp.path(), opts(Layout::Hybrid), &Backends::for_tests());
    assert_eq!(store.last_ledger(), None);
}

/// Defect 3: the store's own multi-key reads (rollback at open, the
/// duplicate-hash check) stay inside one read bound each, however large the
/// batch. 1,500 ledgers of 8 txs: 12,000 hashes.
#[test]
fn rollback_and_duplicate_checks_read_in_bounded_transactions() {
    let s = synth();
    let faults = Faults {
        max_keys_per_read: Some(5_000),
        ..Faults::default()
    };
    let engines = FaultyEngines {
        inner: Backends::for_tests(),
        faults,
    };
    for layout in [Layout::Hybrid, Layout::Indexed] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let o = StoreOptions {
            indexed: IndexedOptions {
                range_ledgers: 100_000,
                dict: None,
                ..IndexedOptions::default()
            },
            ..opts(layout)
        };
        let big = s.batch(2, 1_500);
        {
            let store = open_with(tmp.path(), o.clone(), &engines);
            store
                .ingest(&s.batch(1, 1), Duration::ZERO)
                .expect("ingest");
            // What a crash in the middle of a large batch leaves.
            plant_residue(&store, &big);
        }
        let store = Ledgerstore::open(tmp.path(), o, &engines)
            .unwrap_or_else(|e| panic!("{layout}: open rolls back in bounded reads: {e}"));
        assert_eq!(store.last_ledger(), Some(1));
        assert!(store.get_ledger(2).expect("get").is_none());
        let out = store
            .ingest(&big, Duration::ZERO)
            .unwrap_or_else(|e| panic!("{layout}: duplicate check in bounded reads: {e}"));
        assert_eq!(out.committed, 1_500);
        assert!(store.check().expect("check").is_ok(), "{layout}");
    }
}

/// Defect 4: a reader that sees a batch's mark finds the dictionary that
/// batch trained.
#[test]
fn a_new_dictionary_is_installed_before_the_mark_that_needs_it() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = with_dictionaries(40);
    let store = open_with(tmp.path(), o, &Backends::for_tests());
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = Arc::clone(&failures);
    if let Ok(mut hook) = store.after_publish.lock() {
        *hook = Some(Box::new(move |st: &Ledgerstore| {
            let Some(last) = st.last_ledger() else { return };
            let hashes = match st.get_ledger(last) {
                Ok(Some(l)) => l.tx_hashes,
                other => {
                    seen.lock().expect("lock").push(format!("{other:?}"));
                    return;
                }
            };
            for h in hashes {
                if let Err(e) = st.get_tx(&h) {
                    seen.lock()
                        .expect("lock")
                        .push(format!("ledger {last}: {e}"));
                }
            }
        }));
    }
    for first in (1..=24).step_by(2) {
        store
            .ingest(&s.batch(first, 2), Duration::ZERO)
            .expect("ingest");
    }
    let versions = store.indexed_stats().expect("indexed").1.current;
    assert!(versions >= 2, "training ran: v{versions}");
    let failures = failures.lock().expect("lock");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Defect 6: a crash during a batch that trained a dictionary leaves it on
/// disk; `check` must not call that corruption, and the next writer's open
/// removes it (the mark records the version in use).
#[test]
fn a_dictionary_left_by_an_interrupted_batch_is_not_corruption() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let o = with_dictionaries(0);
    {
        let store = open_with(tmp.path(), o.clone(), &Backends::for_tests());
        store
            .ingest(&s.batch(1, 6), Duration::ZERO)
            .expect("48 txs");
        let before = store.mark();
        // The next batch trains v1 and commits; then the MARK of the batch
        // before goes back: what a crash after the stores' commits and
        // before the MARK's rename leaves.
        store
            .ingest(&s.batch(7, 2), Duration::ZERO)
            .expect("trains v1");
        assert_eq!(store.indexed_stats().expect("indexed").1.current, 1);
        drop(store);
        let old = serde_json::to_vec(&before).expect("encode");
        std::fs::write(tmp.path().join("MARK"), old).expect("old MARK");
    }
    let offline = StoreOptions {
        offline: true,
        ..o.clone()
    };
    {
        let store = open_with(tmp.path(), offline, &Backends::for_tests());
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{:#?}", r.problems);
        assert!(r.above_mark > 0, "{r:?}");
        assert_eq!(store.indexed_stats().expect("indexed").1.current, 0);
    }
    let store = open_with(tmp.path(), o, &Backends::for_tests());
    let r = store.check().expect("check");
    assert!(r.is_ok() && r.above_mark == 0, "{r:#?}");
    store
        .ingest(&s.batch(7, 2), Duration::ZERO)
        .expect("resend");
    assert_eq!(store.indexed_stats().expect("indexed").1.current, 1);
    drop(store);
    let store = open_with(
        tmp.path(),
        StoreOptions {
            offline: true,
            ..opts(Layout::Indexed)
        },
        &Backends::for_tests(),
    );
    assert_readable(&store, &s, 1, 8);
    assert!(store.check().expect("check").is_ok());
}

/// Defect 7: a panic in the ledgers writer fails the batch instead of
/// leaving the other writers waiting forever under the ingest lock.
#[test]
fn a_panicking_ledgers_writer_fails_the_batch_instead_of_deadlocking() {
    let s = synth();
    for layout in [Layout::Hybrid, Layout::Indexed] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let faults = Faults::default();
        let engines = FaultyEngines {
            inner: Backends::for_tests(),
            faults: faults.clone(),
        };
        let store = Arc::new(open_with(tmp.path(), opts(layout), &engines));
        store
            .ingest(&s.batch(1, 2), Duration::ZERO)
            .expect("ingest");
        *faults.panic_put.lock().expect("lock") = Some(TableId::Ledgers);
        let (tx, rx) = std::sync::mpsc::channel();
        let st = Arc::clone(&store);
        let batch = s.batch(3, 2);
        std::thread::spawn(move || {
            let _ = tx.send(st.ingest(&batch, Duration::ZERO).map(|o| o.committed));
        });
        let r = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("ingest returned instead of deadlocking");
        let e = r.expect_err("the batch fails");
        assert!(e.to_string().contains("panicked"), "{e}");
        assert_eq!(store.last_ledger(), Some(2));
        store.ingest(&s.batch(3, 2), Duration::ZERO).expect("retry");
        assert_readable(&store, &s, 1, 4);
    }
}

/// Defect 8: a `tx_index` value that does not decode stops the rollback
/// (naming the hash) instead of deleting the entry as an orphan. (Layout
/// `indexed` keys its hot index by position: the entries a rollback
/// deletes are the positions above the mark, with no owner to decode.)
#[test]
fn rollback_refuses_an_undecodable_owner_instead_of_deleting_it() {
    let s = synth();
    {
        let layout = Layout::Hybrid;
        let tmp = tempfile::tempdir().expect("tempdir");
        let residue: LedgerInput = s.ledger(3);
        let victim = residue.txs[2].hash.clone();
        {
            let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
            store
                .ingest(&s.batch(1, 2), Duration::ZERO)
                .expect("ingest");
            plant_residue(&store, std::slice::from_ref(&residue));
            let mut w = store.table(TableId::TxIndex).begin_write().expect("write");
            w.put(&victim, b"\x01\x02\x03").expect("put");
            w.finish().expect("finish");
            w.commit().expect("commit");
        }
        let e = Ledgerstore::open(tmp.path(), opts(layout), &Backends::for_tests())
            .expect_err("rollback refuses");
        let msg = e.to_string();
        assert!(msg.contains(&hex::encode(&victim)), "{msg}");
        assert!(msg.contains("nothing was deleted"), "{msg}");
        let store = open_with(
            tmp.path(),
            StoreOptions {
                offline: true,
                ..opts(layout)
            },
            &Backends::for_tests(),
        );
        let kept = store.table(TableId::TxIndex).get(&victim).expect("get");
        assert_eq!(kept.as_deref(), Some(&b"\x01\x02\x03"[..]), "{layout}");
        assert!(
            store.get_ledger(3).expect("get").is_none(),
            "still hidden by the mark"
        );
    }
}

/// Defect 5: hashes are not verified at ingest, so two may share their
/// first 16 bytes (or 18: the fingerprint too). Their range's segment must
/// still build, or no later range ever would.
#[test]
fn hashes_sharing_a_long_prefix_still_build_segments() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open_with(tmp.path(), opts(Layout::Indexed), &Backends::for_tests());
    let mut ledgers = s.batch(1, 25);
    for (li, l) in ledgers.iter_mut().enumerate() {
        for (ti, tx) in l.txs.iter_mut().enumerate() {
            // Shared 18-byte prefix per pair of ledgers; the rest unique.
            let mut h = vec![0xAB; 18];
            h[0] = (li / 2) as u8;
            h.extend_from_slice(&[li as u8, ti as u8]);
            h.resize(32, 0x5A);
            tx.hash = h;
        }
    }
    for chunk in ledgers.chunks(5) {
        store.ingest(chunk, Duration::ZERO).expect("ingest");
    }
    store
        .wait_for_segments()
        .expect("the colliding ranges build");
    let stats = store.stats().expect("stats").segments.expect("segments");
    // Two base ranges of 10 ledgers, merged into one (fan-out 10).
    assert_eq!(stats.segments.len(), 1);
    assert_eq!((stats.builds, stats.merges), (2, 1));
    for l in &ledgers {
        for (i, tx) in l.txs.iter().enumerate() {
            let rec = store.get_tx(&hash(tx)).expect("get").expect("found");
            assert_eq!((rec.ledger_seq, rec.index), (l.seq, i as u32));
        }
    }
    assert!(store.check().expect("check").is_ok());
}

/// Suspicion 3: a backup taken while a segment's hot range is still being
/// dropped carries the `dropping-` marker, so the restored dir finishes the
/// drop instead of keeping the range's hot keys for good.
#[test]
fn a_backup_taken_mid_drop_carries_the_drop_marker() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tempfile::tempdir().expect("tempdir");
    let store = open_with(tmp.path(), opts(Layout::Indexed), &Backends::for_tests());
    let hot_keys = |st: &Ledgerstore| st.table(TableId::TxIndex).scan(&[], 1 << 20).expect("scan");
    store
        .ingest(&s.batch(1, 9), Duration::ZERO)
        .expect("ingest");
    let saved = hot_keys(&store);
    store
        .ingest(&s.batch(10, 3), Duration::ZERO)
        .expect("ingest");
    store.wait_for_segments().expect("segments");
    assert_eq!(hot_keys(&store).len(), 3 * 8, "ledgers 10 to 12");
    // Where a drop of 1..=9 (ranges align to multiples of 10) stands midway: its marker, and some hot keys.
    let mut w = store.table(TableId::TxIndex).begin_write().expect("write");
    for (k, v) in &saved {
        w.put(k, v).expect("put");
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
    std::fs::write(
        tmp.path().join("segments/dropping-0000000001-0000000009"),
        b"",
    )
    .expect("marker");
    let dest = out.path().join("backup");
    store.backup(&dest).expect("backup");
    assert!(
        dest.join("segments/dropping-0000000001-0000000009")
            .exists()
    );
    let restored = out.path().join("restored");
    crate::restore(&dest, &restored).expect("restore");
    drop(store);
    let store = open_with(&restored, opts(Layout::Indexed), &Backends::for_tests());
    assert_eq!(hot_keys(&store).len(), 3 * 8, "the drop was finished");
    assert_readable(&store, &s, 1, 12);
    assert!(store.check().expect("check").is_ok());
}

/// Guards the wrapper itself: the read bound it emulates does refuse an
/// oversized read, so the bounded-read test above can fail.
#[test]
fn the_emulated_read_bound_refuses_a_large_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let engines = FaultyEngines {
        inner: Backends::for_tests(),
        faults: Faults {
            max_keys_per_read: Some(2),
            ..Faults::default()
        },
    };
    let kv = engines
        .open_table(
            Layout::Hybrid,
            TableId::TxIndex,
            tmp.path(),
            ledgerstore_db_api::Access::ReadWrite,
            ledgerstore_db_api::ValueCompression::App,
        )
        .expect("open");
    assert!(kv.multi_get(&[b"a", b"b"]).is_ok());
    let e = kv
        .multi_get(&[b"a", b"b", b"c"])
        .expect_err("over the bound");
    assert!(matches!(e, DbError::ReadTimeout { .. }), "{e}");
}

/// Issue 30 item 1: a creation killed between an older build's manifest
/// and its `MARK` left an empty dir without a `MARK`; the next open went
/// on without one, so a kill in its first batch's `MARK` write left data
/// with no `MARK`, which every later open refused. Now the first
/// writable open writes the empty `MARK` before anything else.
#[test]
fn an_empty_dir_without_its_mark_gets_one_before_the_first_batch() {
    let s = synth();
    for layout in Layout::ALL {
        let tmp = tempfile::tempdir().expect("tempdir");
        let mark = tmp.path().join("MARK");
        drop(open_with(tmp.path(), opts(layout), &Backends::for_tests()));
        // What the kill between the manifest and the MARK left.
        std::fs::remove_file(&mark).expect("remove MARK");
        let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
        assert!(mark.exists(), "{layout}: the open wrote the empty MARK");
        // The first batch's MARK write is cut short: its data is above
        // the (empty) mark.
        arm_mark_faults(&store, vec![MarkFault::BeforeRename]);
        store
            .ingest(&s.batch(1, 5), Duration::ZERO)
            .expect_err("the MARK write fails");
        drop(store);
        let store = open_with(tmp.path(), opts(layout), &Backends::for_tests());
        assert_eq!(store.last_ledger(), None, "{layout}: rolled back");
        store
            .ingest(&s.batch(1, 5), Duration::ZERO)
            .expect("ingest after the rollback");
        store.wait_for_segments().expect("segments");
        assert_eq!(store.last_ledger(), Some(5), "{layout}");
        assert!(store.check().expect("check").is_ok(), "{layout}");
    }
}

/// An offline reader of an empty dir without its `MARK` writes nothing.
#[test]
fn an_offline_open_of_an_empty_dir_without_its_mark_writes_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mark = tmp.path().join("MARK");
    drop(open_with(
        tmp.path(),
        opts(Layout::Rocksdb),
        &Backends::for_tests(),
    ));
    std::fs::remove_file(&mark).expect("remove MARK");
    let o = StoreOptions {
        offline: true,
        ..opts(Layout::Rocksdb)
    };
    let store = open_with(tmp.path(), o, &Backends::for_tests());
    assert_eq!(store.last_ledger(), None);
    assert!(!mark.exists());
}
