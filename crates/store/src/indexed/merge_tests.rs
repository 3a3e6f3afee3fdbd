//! Merges, repairs and retries of the cold tier, on real RocksDB and MDBX:
//! the tiling that bounds the probes, a merge interrupted at each step, a
//! deleted or damaged segment (rebuilt from its hash lists, or from the
//! ledger records when those are gone too), lookups that answer
//! "being repaired" meanwhile, and a failed build retried without a
//! restart.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ledgerstore_backends::Backends;
use ledgerstore_db_api::Layout;

use super::tests::{assert_all_readable, fail_builds, hash, ingest_range, synth};
use crate::{IndexedOptions, Ledgerstore, StoreError, StoreOptions};

/// Base ranges of 10 ledgers, fan-out 2, 2 levels: windows of 10, 20, 40.
fn opts(offline: bool) -> StoreOptions {
    StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: 10,
            merge_fanout: 2,
            merge_levels: 2,
            warm_bytes: 1 << 20,
            filter_bytes: 1 << 20,
            dict: None,
            ..IndexedOptions::default()
        },
        offline,
        ..StoreOptions::default()
    }
}

fn open(dir: &Path) -> Ledgerstore {
    Ledgerstore::open(dir, opts(false), &Backends::for_tests()).expect("open")
}

fn ranges(store: &Ledgerstore) -> Vec<(u32, u32)> {
    let seg = store.stats().expect("stats").segments.expect("segments");
    seg.segments.iter().map(|s| (s.first, s.last)).collect()
}

fn segdir(dir: &Path) -> PathBuf {
    dir.join("segments")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(segdir(dir))
        .expect("segments dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Polls `stats` (bounded) until `done` holds.
fn wait_until(store: &Ledgerstore, what: &str, done: impl Fn(&crate::SegmentStats) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let seg = store.stats().expect("stats").segments.expect("segments");
        if done(&seg) {
            return;
        }
        assert!(Instant::now() < deadline, "{what} after 30 s: {seg:#?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The end state of 95 ledgers: closed windows of 40 whole, then the base
/// range 80..=89; 90..=95 stay hot.
const MERGED: [(u32, u32); 3] = [(1, 39), (40, 79), (80, 89)];

#[test]
fn merges_bound_the_probes_and_every_hash_still_resolves() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 95, 5);
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), MERGED);
        let seg = store.stats().expect("stats").segments.expect("segments");
        assert_eq!(seg.probes, 4, "the hot index and three segments");
        assert_eq!(seg.builds, 9);
        assert!(seg.merges >= 2, "{seg:#?}");
        assert_eq!(seg.keys, 89 * 8);
        assert_all_readable(&store, &s, 1, 95);
        let miss = ledgerstore_db_api::TxHash([0xEE; 32]);
        assert_eq!(store.get_tx(&miss).expect("miss"), None);
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{:#?}", r.problems);
        assert_eq!(r.segment_keys, Some(89 * 8));
    }
    // Only listed segments, the hash list of the base range no whole
    // top-level window holds yet (a merge reads it), the manifest.
    let mut want: Vec<String> = MERGED
        .iter()
        .map(|&(a, b)| ledgerstore_segment::file_name(a, b))
        .collect();
    want.push(ledgerstore_segment::hashes::file_name(80, 89));
    want.push("SEGMENTS".into());
    want.push("VERIFIED".into());
    want.sort();
    assert_eq!(names(tmp.path()), want);
    let store = open(tmp.path());
    assert_eq!(ranges(&store), MERGED);
    assert_all_readable(&store, &s, 1, 95);
}

/// A merge that stops at either step (the in-process equivalent of a
/// crash: the files are left exactly as a crash leaves them) changes
/// nothing a reader sees; the next open cleans up and the merge completes.
#[test]
fn a_merge_interrupted_at_any_step_leaves_the_old_segments_serving() {
    for step in ["merge-before-publish", "merge-after-manifest"] {
        let s = synth();
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let store = open(tmp.path());
            fail_builds(&store, step, 1_000);
            ingest_range(&store, &s, 1, 45, 5);
            wait_until(&store, "a failed merge", |seg| seg.failures > 0);
            // Base builds ran; every merge failed at `step`.
            assert_all_readable(&store, &s, 1, 45);
            let seg = store.stats().expect("stats").segments.expect("segments");
            assert!(
                seg.last_error.as_deref().is_some_and(|e| e.contains(step)),
                "{seg:#?}"
            );
        }
        let store = open(tmp.path());
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), [(1, 39)], "{step}");
        assert_all_readable(&store, &s, 1, 45);
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{step}: {:#?}", r.problems);
        let left = names(tmp.path());
        assert!(
            left.iter().all(|n| n == "SEGMENTS"
                || n == "VERIFIED"
                || n == "seg-0000000001-0000000039.idx"),
            "{step}: {left:?}"
        );
    }
}

/// Builds 1..=45 (segment 1..=39, 40..=45 hot) and closes the store.
fn built(dir: &Path) -> synth_ledgers::Synth {
    let s = synth();
    let store = open(dir);
    ingest_range(&store, &s, 1, 45, 5);
    store.wait_for_segments().expect("segments");
    assert_eq!(ranges(&store), [(1, 39)]);
    s
}

mod synth_ledgers {
    pub(super) use ledgerstore_synth::Synth;
}

/// A hash of ledger `seq` (its first tx).
fn tx_of(s: &synth_ledgers::Synth, seq: u32) -> ledgerstore_db_api::TxHash {
    hash(&s.ledger(seq).txs[0])
}

#[test]
fn a_deleted_segment_answers_being_repaired_then_is_rebuilt() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let s = built(tmp.path());
    let seg = segdir(tmp.path()).join(ledgerstore_segment::file_name(1, 39));
    std::fs::remove_file(&seg).expect("delete the segment");
    {
        // An offline reader repairs nothing: a lookup that the hot index
        // cannot answer says the range is being repaired, never "not
        // found"; hot hashes still answer; check names the range.
        let store =
            Ledgerstore::open(tmp.path(), opts(true), &Backends::for_tests()).expect("open");
        let e = store.get_tx(&tx_of(&s, 5)).expect_err("unknown meanwhile");
        assert!(
            matches!(
                e,
                StoreError::Repairing {
                    first: 1,
                    last: 39,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("being repaired"), "{e}");
        let e = store
            .get_tx(&ledgerstore_db_api::TxHash([0xEE; 32]))
            .expect_err("a miss is unknown too");
        assert!(matches!(e, StoreError::Repairing { .. }), "{e}");
        assert!(store.get_tx(&tx_of(&s, 42)).expect("hot").is_some());
        let batch = store.batch_get_txs(&[tx_of(&s, 42), tx_of(&s, 5)]);
        assert!(
            matches!(batch, Err(StoreError::Repairing { .. })),
            "{batch:?}"
        );
        let seg = store.stats().expect("stats").segments.expect("segments");
        assert_eq!(seg.repairing.len(), 1, "{seg:#?}");
        let r = store.check().expect("check");
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains("1..=39") && p.contains("no usable segment")),
            "{:#?}",
            r.problems
        );
    }
    // A writer rebuilds it from the ledger records (a whole top-level
    // window keeps no hash list).
    let store = open(tmp.path());
    store.wait_for_segments().expect("repaired");
    assert!(seg.exists());
    assert_eq!(ranges(&store), [(1, 39)]);
    assert_all_readable(&store, &s, 1, 45);
    let r = store.check().expect("check");
    assert!(r.is_ok(), "{:#?}", r.problems);
}

/// A flipped byte deep in a segment passes open's header checks; the
/// scrub finds it and the range is rebuilt. A whole top-level window has
/// no hash lists, so the rebuild reads the ledger records, and the lists
/// it writes are deleted again once the rebuilt segment is installed.
#[test]
fn a_damaged_segment_is_found_by_the_scrub_and_rebuilt_from_the_ledgers() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let s = built(tmp.path());
    let seg = segdir(tmp.path()).join(ledgerstore_segment::file_name(1, 39));
    let mut bytes = std::fs::read(&seg).expect("read");
    let at = bytes.len() - 40;
    bytes[at] ^= 0x10;
    std::fs::write(&seg, &bytes).expect("damage");
    let lists = || -> Vec<String> {
        names(tmp.path())
            .into_iter()
            .filter(|n| n.starts_with("hashes-"))
            .collect()
    };
    assert_eq!(lists(), Vec::<String>::new());
    {
        let store =
            Ledgerstore::open(tmp.path(), opts(true), &Backends::for_tests()).expect("open");
        let r = store.check().expect("check");
        assert!(
            r.problems
                .iter()
                .any(|p| p.contains("checksum mismatch")
                    && p.contains("seg-0000000001-0000000039.idx")),
            "{:#?}",
            r.problems
        );
    }
    let store = open(tmp.path());
    wait_until(&store, "the repair", |seg| {
        seg.merges >= 1 && seg.repairing.is_empty()
    });
    store.wait_for_segments().expect("segments");
    assert_all_readable(&store, &s, 1, 45);
    let r = store.check().expect("check");
    assert!(r.is_ok(), "{:#?}", r.problems);
    assert_eq!(lists(), Vec::<String>::new());
}

#[test]
fn a_failed_build_is_retried_with_backoff_without_a_restart() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path());
    // Two failures: wait_for_segments rides them out.
    fail_builds(&store, "segment-before-publish", 2);
    ingest_range(&store, &s, 1, 12, 4);
    store.wait_for_segments().expect("retried");
    let seg = store.stats().expect("stats").segments.expect("segments");
    assert_eq!((seg.builds, seg.failures), (1, 0), "{seg:#?}");
    assert!(
        seg.last_error
            .as_deref()
            .is_some_and(|e| e.contains("injected failure at segment-before-publish")),
        "{seg:#?}"
    );
    // Three in a row: wait_for_segments reports it, and the builder keeps
    // retrying until the step succeeds.
    fail_builds(&store, "merge-before-publish", 3);
    ingest_range(&store, &s, 13, 22, 5);
    let e = store.wait_for_segments().expect_err("reported");
    assert!(
        e.to_string().contains("3 times in a row (still retrying)"),
        "{e}"
    );
    wait_until(&store, "the retry", |seg| seg.failures == 0);
    store.wait_for_segments().expect("done");
    assert_eq!(ranges(&store), [(1, 19)]);
    assert_all_readable(&store, &s, 1, 22);
    let r = store.check().expect("check");
    assert!(r.is_ok(), "{:#?}", r.problems);
}

/// A hash list whose checksum fails while a merge streams it is rewritten
/// from the ledger records; the failed merge is retried and builds from it.
#[test]
fn a_damaged_hash_list_fails_one_merge_and_is_rewritten() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 15, 5);
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), [(1, 9)]);
    }
    let list = segdir(tmp.path()).join(ledgerstore_segment::hashes::file_name(1, 9));
    let mut bytes = std::fs::read(&list).expect("read");
    let at = bytes.len() - 40;
    bytes[at] ^= 0x01;
    std::fs::write(&list, &bytes).expect("damage");
    let store = open(tmp.path());
    ingest_range(&store, &s, 16, 22, 7);
    store.wait_for_segments().expect("merged on the retry");
    assert_eq!(ranges(&store), [(1, 19)]);
    let seg = store.stats().expect("stats").segments.expect("segments");
    assert!(
        seg.last_error
            .as_deref()
            .is_some_and(|e| e.contains("checksum mismatch")),
        "{seg:#?}"
    );
    assert_ne!(std::fs::read(&list).expect("read"), bytes, "rewritten");
    assert_all_readable(&store, &s, 1, 22);
    let r = store.check().expect("check");
    assert!(r.is_ok(), "{:#?}", r.problems);
}

/// Lists `step` as a failpoint the builder waits at (a test hook).
fn pause(store: &Ledgerstore, step: &'static str) {
    let tier = store.indexed.as_ref().expect("layout indexed");
    tier.segments.paused.lock().expect("lock").push(step);
}

/// A merge in progress holds back neither base builds nor hot drops (they
/// run on their own thread, so the hot map stays one range deep), and a
/// stop interrupts the merge instead of waiting for it; the next open
/// removes what it left and merges again.
#[test]
fn base_builds_go_on_while_a_merge_waits_and_a_stop_interrupts_it() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let store = open(tmp.path());
        pause(&store, "merge-before-publish");
        // Bases 1..=9 and 10..=19 close: the merge of 1..=19 starts and
        // waits before its publish.
        ingest_range(&store, &s, 1, 25, 5);
        ingest_range(&store, &s, 26, 45, 5);
        // The fourth range's hot drop runs just after its install.
        wait_until(&store, "four base segments while the merge waits", |seg| {
            seg.hot_from == Some(40) && seg.building && seg.hot_keys == 6 * 8
        });
        let seg = store.stats().expect("stats").segments.expect("segments");
        assert_eq!(seg.merges, 0, "the merge is still waiting");
        assert_eq!(seg.hot_keys, 6 * 8, "only ledgers 40..=45 are hot");
        assert_eq!(ranges(&store), [(1, 9), (10, 19), (20, 29), (30, 39)]);
        assert_all_readable(&store, &s, 1, 45);
        let t = Instant::now();
        store.close().expect("close");
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the stop waited {:?} for the merge",
            t.elapsed()
        );
        assert!(
            names(tmp.path()).iter().any(|n| n.starts_with("tmp-")),
            "the interrupted merge left its file: {:?}",
            names(tmp.path())
        );
    }
    let store = open(tmp.path());
    store.wait_for_segments().expect("segments");
    assert_eq!(ranges(&store), [(1, 39)]);
    assert!(!names(tmp.path()).iter().any(|n| n.starts_with("tmp-")));
    assert_all_readable(&store, &s, 1, 45);
    assert!(store.check().expect("check").is_ok());
}

/// The scrub's checks are recorded in `segments/VERIFIED`: a restart reads
/// no segment whole again unless its file changed since.
#[test]
fn a_restart_scrubs_only_segment_files_that_changed() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let scrubs = |store: &Ledgerstore| {
        let seg = store.stats().expect("stats").segments.expect("segments");
        seg.scrubs
    };
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 45, 5);
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), [(1, 39)]);
        store.close().expect("close");
    }
    assert!(names(tmp.path()).contains(&"VERIFIED".to_string()));
    {
        let store = open(tmp.path());
        store.wait_for_segments().expect("segments");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(scrubs(&store), 0, "a segment just built counts as read");
        let seg = store.stats().expect("stats").segments.expect("segments");
        assert!(
            seg.warmed_bytes > 0 && seg.warmed_bytes <= seg.file_bytes,
            "the warm-up read the index: {seg:#?}"
        );
        assert_eq!(
            seg.filter_bytes,
            2 * seg.keys,
            "the newest segment's filter is loaded"
        );
        store.close().expect("close");
    }
    // The same bytes written again: the file's modification time changes.
    let file = segdir(tmp.path()).join(ledgerstore_segment::file_name(1, 39));
    let bytes = std::fs::read(&file).expect("read");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&file, &bytes).expect("write");
    let store = open(tmp.path());
    wait_until(&store, "the rewritten file scrubbed", |seg| seg.scrubs == 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(scrubs(&store), 1);
    assert_all_readable(&store, &s, 1, 45);
}

/// Ingests 1..=35 (segments 1..=19 and 20..=29, the top window 1..=39
/// still open) and returns the names and bytes of its base ranges' lists.
fn ingest_35_saving_lists(
    s: &synth_ledgers::Synth,
    dir: &Path,
) -> ([String; 3], Vec<(String, Vec<u8>)>) {
    {
        let store = open(dir);
        ingest_range(&store, s, 1, 35, 5);
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), [(1, 19), (20, 29)]);
    }
    let names =
        [(1, 9), (10, 19), (20, 29)].map(|(a, b)| ledgerstore_segment::hashes::file_name(a, b));
    let saved = names
        .iter()
        .map(|n| (n.clone(), std::fs::read(segdir(dir).join(n)).expect("read")))
        .collect();
    (names, saved)
}

/// A base range keeps its hash list while a merge may read it: the ranges
/// of the open top-level window keep theirs (and a repair rebuilds from
/// them). Once their window is whole and listed, no merge reads them
/// again and they are deleted: at that install, or at a writer's open (a
/// dir from a release that kept every list).
#[test]
fn hash_lists_stay_only_while_a_merge_may_read_them() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let lists = || -> Vec<String> {
        names(tmp.path())
            .into_iter()
            .filter(|n| n.starts_with("hashes-"))
            .collect()
    };
    let (open_window, saved) = ingest_35_saving_lists(&s, tmp.path());
    assert_eq!(lists(), open_window);
    std::fs::remove_file(segdir(tmp.path()).join(ledgerstore_segment::file_name(1, 19)))
        .expect("lose a segment");
    {
        let store =
            Ledgerstore::open(tmp.path(), opts(true), &Backends::for_tests()).expect("open");
        let r = store.repair_segments(&mut |_| {}).expect("repair");
        let got: Vec<(u32, u32, usize, usize)> = r
            .rebuilt
            .iter()
            .map(|x| (x.first, x.last, x.from_hash_lists, x.from_ledgers))
            .collect();
        assert_eq!(got, [(1, 19, 2, 0)], "{r:#?}");
    }
    assert_eq!(lists(), open_window, "the window is still open");
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 36, 45, 5);
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), [(1, 39)]);
        assert_eq!(lists(), Vec::<String>::new(), "the window 1..=39 is whole");
        assert_all_readable(&store, &s, 1, 45);
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{:#?}", r.problems);
    }
    for (n, bytes) in &saved {
        std::fs::write(segdir(tmp.path()).join(n), bytes).expect("put back");
    }
    let offline = Ledgerstore::open(tmp.path(), opts(true), &Backends::for_tests()).expect("open");
    assert_eq!(lists().len(), 3, "an offline reader deletes nothing");
    drop(offline);
    let store = open(tmp.path());
    assert_eq!(
        lists(),
        Vec::<String>::new(),
        "a writer's open deletes them"
    );
    assert_all_readable(&store, &s, 1, 45);
}

/// A whole top-level window whose segment is broken keeps its hash lists
/// (here, lists an earlier release kept): a writer's open does not delete
/// them, so its repair reads them, even where a ledger record is gone, and
/// they are deleted once the window serves again.
#[test]
fn a_broken_top_window_keeps_its_lists_for_its_repair() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let (_, saved) = ingest_35_saving_lists(&s, tmp.path());
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 36, 45, 5);
        store.wait_for_segments().expect("segments");
        assert_eq!(ranges(&store), [(1, 39)]);
    }
    for (n, bytes) in &saved {
        std::fs::write(segdir(tmp.path()).join(n), bytes).expect("put back");
    }
    std::fs::remove_file(segdir(tmp.path()).join(ledgerstore_segment::file_name(1, 39)))
        .expect("lose the window's segment");
    {
        // Ledger 15's record is gone: only its list can rebuild 10..=19.
        let store = Ledgerstore::open(
            tmp.path(),
            StoreOptions {
                engine_access: ledgerstore_db_api::Access::ReadWrite,
                ..opts(true)
            },
            &Backends::for_tests(),
        )
        .expect("open");
        let mut w = store
            .table(ledgerstore_db_api::TableId::Ledgers)
            .begin_write()
            .expect("write");
        w.delete(&15u32.to_be_bytes()).expect("delete");
        w.finish().expect("finish");
        w.commit().expect("commit");
    }
    let store = open(tmp.path());
    store.wait_for_segments().expect("repaired from the lists");
    assert_eq!(ranges(&store), [(1, 39)]);
    let seg = store.stats().expect("stats").segments.expect("segments");
    assert!(seg.repairing.is_empty(), "{seg:#?}");
    for seq in [5, 15, 25, 35] {
        assert!(
            store.get_tx(&tx_of(&s, seq)).expect("get").is_some(),
            "ledger {seq}"
        );
    }
    let lists: Vec<String> = names(tmp.path())
        .into_iter()
        .filter(|n| n.starts_with("hashes-"))
        .collect();
    assert_eq!(lists, Vec::<String>::new(), "deleted once it serves");
}
