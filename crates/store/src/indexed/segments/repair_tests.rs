//! The offline repair and the wait for a writer's repairs, on real RocksDB
//! and MDBX: what is rebuilt and from what, what cannot be and why, and a
//! wait that ends repaired, failed, or with no builder to wait for.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Access, Layout, TableId};

use super::{RepairEvent, RepairWaitOutcome};
use crate::indexed::tests::{assert_all_readable, ingest_range, synth};
use crate::{IndexedOptions, Ledgerstore, StoreOptions};

/// Base ranges of 10 ledgers, no merging: each base range is a whole
/// top-level window, so no hash list is kept (merge_tests has ranges that
/// keep theirs).
fn opts(offline: bool) -> StoreOptions {
    StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: 10,
            merge_levels: 0,
            dict: None,
            ..IndexedOptions::default()
        },
        offline,
        engine_access: if offline {
            Access::ReadOnly
        } else {
            Access::ReadWrite
        },
        ..StoreOptions::default()
    }
}

fn open(dir: &Path, offline: bool) -> Ledgerstore {
    Ledgerstore::open(dir, opts(offline), &Backends::for_tests()).expect("open")
}

fn seg(dir: &Path, first: u32, last: u32) -> PathBuf {
    dir.join("segments")
        .join(ledgerstore_segment::file_name(first, last))
}

fn list(dir: &Path, first: u32, last: u32) -> PathBuf {
    dir.join("segments")
        .join(ledgerstore_segment::hashes::file_name(first, last))
}

/// 45 ledgers: segments 1..=9, 10..=19, 20..=29, 30..=39.
fn built(dir: &Path) -> ledgerstore_synth::Synth {
    let s = synth();
    let store = open(dir, false);
    ingest_range(&store, &s, 1, 45, 5);
    store.wait_for_segments().expect("segments");
    s
}

/// Deletes ledger 15's record (an offline store with writable engines).
fn lose_ledger_15(dir: &Path) {
    let store = Ledgerstore::open(
        dir,
        StoreOptions {
            engine_access: Access::ReadWrite,
            ..opts(true)
        },
        &Backends::for_tests(),
    )
    .expect("open");
    let mut w = store.table(TableId::Ledgers).begin_write().expect("write");
    w.delete(&15u32.to_be_bytes()).expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");
}

#[test]
fn an_offline_repair_rebuilds_from_the_ledgers_and_reports_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = built(tmp.path());
    for (a, b) in [(1, 9), (10, 19), (20, 29), (30, 39)] {
        assert!(
            !list(tmp.path(), a, b).exists(),
            "{a}..={b}: no merge reads it"
        );
    }
    std::fs::remove_file(seg(tmp.path(), 10, 19)).expect("lose");
    std::fs::remove_file(seg(tmp.path(), 20, 29)).expect("lose");
    let store = open(tmp.path(), true);
    assert_eq!(store.segments_repairing().names(), "10..=19, 20..=29");
    // No builder runs in an offline store: nothing to wait for.
    let w = store
        .wait_for_repairs(Duration::from_secs(5), &mut |_| {})
        .expect("wait");
    assert!(matches!(w, RepairWaitOutcome::NotRunning(_)), "{w:?}");
    let mut events = Vec::new();
    let r = store
        .repair_segments(&mut |e| events.push(e.clone()))
        .expect("repair");
    assert!(r.is_ok(), "{r:#?}");
    assert_eq!((r.segments, r.hash_lists), (4, 0));
    let got: Vec<(u32, u32, usize, usize)> = r
        .rebuilt
        .iter()
        .map(|x| (x.first, x.last, x.from_hash_lists, x.from_ledgers))
        .collect();
    assert_eq!(got, [(10, 19, 0, 1), (20, 29, 0, 1)]);
    assert!(r.rebuilt.iter().all(|x| x.keys == 80), "{r:#?}");
    assert!(
        r.rebuilt[0]
            .reason
            .contains("seg-0000000010-0000000019.idx"),
        "{r:#?}"
    );
    assert!(matches!(
        events[0],
        RepairEvent::Rebuilding { first: 10, .. }
    ));
    assert_eq!(events.len(), 4);
    assert!(store.segments_repairing().ranges.is_empty());
    assert_all_readable(&store, &s, 1, 45);
    let c = store.check().expect("check");
    assert!(c.is_ok(), "{:#?}", c.problems);
    // The lists the rebuilds wrote are deleted again once installed.
    assert!(!list(tmp.path(), 10, 19).exists() && !list(tmp.path(), 20, 29).exists());
    // A writer refuses it: its builder repairs on its own.
    drop(store);
    let store = open(tmp.path(), false);
    let e = store.repair_segments(&mut |_| {}).expect_err("a writer");
    assert!(e.to_string().contains("offline"), "{e}");
}

#[test]
fn a_range_with_nothing_left_to_rebuild_from_is_named_and_the_wait_gives_up() {
    let tmp = tempfile::tempdir().expect("tmp");
    built(tmp.path());
    std::fs::remove_file(seg(tmp.path(), 10, 19)).expect("lose");
    assert!(!list(tmp.path(), 10, 19).exists(), "no merge reads it");
    lose_ledger_15(tmp.path());
    {
        let store = open(tmp.path(), true);
        let r = store.repair_segments(&mut |_| {}).expect("repair");
        assert_eq!(r.failed.len(), 1, "{r:#?}");
        let f = &r.failed[0];
        assert_eq!((f.first, f.last), (10, 19));
        assert!(
            f.error.contains("hashes-0000000010-0000000019.bin"),
            "{}",
            f.error
        );
        assert!(
            f.error
                .contains("the record of ledger 15 is missing (the next one is ledger 16)"),
            "{}",
            f.error
        );
    }
    // A writer's builder fails the same way; the wait reports it once it
    // failed 3 times in a row (backoff from 20 ms in tests).
    let store = open(tmp.path(), false);
    let mut seen = 0;
    let w = store
        .wait_for_repairs(Duration::from_secs(60), &mut |_| seen += 1)
        .expect("wait");
    let RepairWaitOutcome::Failed(w) = w else {
        panic!("{w:?}")
    };
    assert_eq!(w.names(), "10..=19");
    assert!(w.failures >= 3, "{w:?}");
    assert!(
        w.last_error
            .as_deref()
            .is_some_and(|e| e.contains("the record of ledger 15 is missing")),
        "{w:?}"
    );
}

#[test]
fn a_writer_s_wait_ends_once_the_lost_segment_serves_again() {
    let tmp = tempfile::tempdir().expect("tmp");
    let s = built(tmp.path());
    std::fs::remove_file(seg(tmp.path(), 10, 19)).expect("lose");
    let store = open(tmp.path(), false);
    let w = store
        .wait_for_repairs(Duration::from_secs(60), &mut |_| {})
        .expect("wait");
    // Rebuilt by the builder, whether before the wait began or during it.
    let RepairWaitOutcome::Repaired(ranges) = w else {
        panic!("{w:?}")
    };
    assert!(ranges.is_empty() || ranges == [(10, 19)], "{ranges:?}");
    assert!(store.segments_repairing().ranges.is_empty());
    assert_all_readable(&store, &s, 1, 45);
    ingest_range(&store, &s, 46, 50, 5);
}

#[test]
fn a_wait_longer_than_a_clock_holds_is_a_wait_without_a_deadline() {
    // `ingest --repair-wait-seconds 18446744073709551615`: no panic on the
    // deadline's overflow; here, with no builder, it ends at once.
    let tmp = tempfile::tempdir().expect("tmp");
    built(tmp.path());
    std::fs::remove_file(seg(tmp.path(), 10, 19)).expect("lose");
    let store = open(tmp.path(), true);
    let w = store
        .wait_for_repairs(Duration::from_secs(u64::MAX), &mut |_| {})
        .expect("wait");
    let RepairWaitOutcome::NotRunning(w) = w else {
        panic!("{w:?}")
    };
    assert_eq!(w.names(), "10..=19");
}
