//! The `indexed` layout on real RocksDB and real MDBX in temp dirs:
//! segment build and swap, lookups across hot and cold ranges, recovery
//! from a build interrupted before and after the swap, and dictionaries.

use std::path::Path;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{
    BodyForm, Decompress, Layout, LedgerInput, TableId, TxBody, TxHash, TxPos,
};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::{DictOptions, IndexedOptions, Ledgerstore, StoreError, StoreOptions};

const RANGE: u32 = 10;

pub(super) fn synth() -> Synth {
    Synth::new(SynthConfig::small(7, 8))
}

fn open_with(dir: &Path, dict: Option<DictOptions>) -> Ledgerstore {
    open_form(dir, dict, BodyForm::default())
}

/// A new dir gets `bodies` (an existing one keeps its own).
fn open_form(dir: &Path, dict: Option<DictOptions>, bodies: BodyForm) -> Ledgerstore {
    let opts = StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: RANGE,
            merge_levels: 0,
            dict,
            bodies,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    };
    Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store")
}

fn open(dir: &Path) -> Ledgerstore {
    open_with(dir, None)
}

pub(super) fn hash(tx: &ledgerstore_db_api::TxInput) -> TxHash {
    TxHash::from_slice(&tx.hash).expect("32 bytes")
}

pub(super) fn ingest_range(store: &Ledgerstore, s: &Synth, first: u32, last: u32, per_batch: u32) {
    let mut seq = first;
    while seq <= last {
        let n = per_batch.min(last - seq + 1);
        store
            .ingest(&s.batch(seq, n), Duration::ZERO)
            .expect("ingest");
        seq += n;
    }
}

/// Every tx of `first..=last` reads back exactly, one by one and batched.
pub(super) fn assert_all_readable(store: &Ledgerstore, s: &Synth, first: u32, last: u32) {
    let mut hashes = Vec::new();
    let mut want = Vec::new();
    for seq in first..=last {
        let l: LedgerInput = s.ledger(seq);
        for (i, tx) in l.txs.iter().enumerate() {
            let rec = store.get_tx(&hash(tx)).expect("get").expect("found");
            assert_eq!((rec.ledger_seq, rec.index), (seq, i as u32));
            assert_eq!(
                (&rec.envelope[..], &rec.result[..], &rec.meta[..]),
                (&tx.envelope[..], &tx.result[..], &tx.meta[..])
            );
            assert_eq!(store.get_tx_ledger(&hash(tx)).expect("ledger"), Some(seq));
            hashes.push(hash(tx));
            want.push((seq, i as u32));
        }
    }
    let got = store.batch_get_txs(&hashes).expect("batch");
    for (g, w) in got.iter().zip(&want) {
        let g = g.as_ref().expect("batched hit");
        assert_eq!((g.ledger_seq, g.index), *w);
    }
}

/// Makes the next `times` segment steps fail at `step` (a test hook).
pub(crate) fn fail_builds(store: &Ledgerstore, step: &'static str, times: usize) {
    let tier = store.indexed.as_ref().expect("layout indexed");
    let mut steps = tier.segments.fail_once.lock().expect("lock");
    steps.extend(std::iter::repeat_n(step, times));
}

fn segment_count(store: &Ledgerstore) -> usize {
    let stats = store.stats().expect("stats");
    stats.segments.expect("segment stats").segments.len()
}

fn hot_entries(store: &Ledgerstore) -> Vec<TxPos> {
    store
        .table(TableId::TxIndex)
        .scan(&[], 1 << 20)
        .expect("scan")
        .iter()
        .map(|(k, _)| TxPos::from_bytes(k).expect("position"))
        .collect()
}

#[test]
fn closed_ranges_become_segments_and_lookups_span_hot_and_cold() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path());
    // 103..=136: ranges 103..=109 (clipped at the first ledger), 110..=119,
    // 120..=129 close; 130..=136 stays hot.
    ingest_range(&store, &s, 103, 136, 4);
    store.wait_for_segments().expect("segments");
    let stats = store.stats().expect("stats");
    let seg = stats.segments.expect("segment stats");
    let ranges: Vec<(u32, u32)> = seg.segments.iter().map(|i| (i.first, i.last)).collect();
    assert_eq!(ranges, [(103, 109), (110, 119), (120, 129)]);
    assert_eq!(seg.hot_from, Some(130));
    assert_eq!(seg.keys, 27 * 8);
    assert!(
        seg.segments
            .iter()
            .all(|i| i.bits_per_key > 0.0 && i.keys == 8 * u64::from(i.last - i.first + 1))
    );
    // The swap dropped the closed ranges from the hot index.
    let hot = hot_entries(&store);
    assert_eq!(hot.len(), 7 * 8);
    assert!(hot.iter().all(|p| p.seq >= 130));
    assert_all_readable(&store, &s, 103, 136);
    // Misses in every tier.
    for probe in [[0u8; 32], [0xab; 32], [7; 32]] {
        assert!(store.get_tx(&TxHash(probe)).expect("miss").is_none());
    }
    assert!(stats.disk_bytes >= seg.file_bytes);
    let report = store.check().expect("check");
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.segment_keys, Some(27 * 8));
}

#[test]
fn segments_survive_a_restart_and_cold_hashes_still_refuse_duplicates() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 25, 5);
        store.wait_for_segments().expect("segments");
        store.close().expect("close");
    }
    let store = open(tmp.path());
    assert_eq!(segment_count(&store), 2);
    assert_all_readable(&store, &s, 1, 25);
    // A new ledger that repeats a hash now held only by a segment.
    let mut dup = s.ledger(26);
    dup.txs[2].hash = s.ledger(4).txs[1].hash.clone();
    let err = store.ingest(&[dup], Duration::ZERO).expect_err("duplicate");
    assert!(
        matches!(&err, StoreError::HashExists { ledger: 4, field, .. } if field == "ledgers[0].transactions[2].hash"),
        "{err}"
    );
    // Re-sent ledgers are acknowledged without writing.
    let out = store
        .ingest(&s.batch(20, 6), Duration::ZERO)
        .expect("resend");
    assert_eq!((out.skipped, out.committed), (6, 0));
    ingest_range(&store, &s, 26, 31, 3);
    store.wait_for_segments().expect("segments");
    assert_all_readable(&store, &s, 1, 31);
    assert!(store.check().expect("check").is_ok());
}

#[test]
fn a_build_interrupted_before_the_swap_leaves_the_hot_index_serving() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let segdir = tmp.path().join("segments");
    {
        // A crash before the rename: the range's keys are all hot, and a
        // partial tmp file is left.
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 8, 4);
        store.close().expect("close");
    }
    std::fs::write(segdir.join("tmp-1-9.idx"), b"partial build").expect("plant tmp");
    let store = open(tmp.path());
    assert!(
        !segdir.join("tmp-1-9.idx").exists(),
        "open removes unpublished builds"
    );
    assert_all_readable(&store, &s, 1, 8);
    ingest_range(&store, &s, 9, 12, 4);
    store.wait_for_segments().expect("segments");
    assert!(segdir.join(ledgerstore_segment::file_name(1, 9)).exists());
    assert_all_readable(&store, &s, 1, 12);
    assert!(store.check().expect("check").is_ok());
}

#[test]
fn a_build_interrupted_after_the_swap_finishes_dropping_the_hot_range_at_open() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let segdir = tmp.path().join("segments");
    let saved;
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 9, 3);
        saved = store
            .table(TableId::TxIndex)
            .scan(&[], 1 << 20)
            .expect("scan");
        assert_eq!(saved.len(), 9 * 8);
        store.wait_for_segments().expect("segments");
        assert!(hot_entries(&store).is_empty());
        // Put back what a crash right after the rename would have left:
        // the hot keys of the range, and the drop marker.
        let mut w = store.table(TableId::TxIndex).begin_write().expect("write");
        for (k, v) in &saved {
            w.put(k, v).expect("put");
        }
        w.finish().expect("finish");
        w.commit().expect("commit");
        store.close().expect("close");
    }
    std::fs::write(segdir.join("dropping-0000000001-0000000009"), b"").expect("marker");
    let store = open(tmp.path());
    assert!(hot_entries(&store).is_empty(), "open finished the drop");
    assert!(!segdir.join("dropping-0000000001-0000000009").exists());
    assert_all_readable(&store, &s, 1, 9);
    assert!(store.check().expect("check").is_ok());
}

/// A data dir from a release that keyed the hot index by hash: an offline
/// reader serves and checks it as it is, a writer's open converts every
/// entry to position → hash, and its range still becomes a segment.
#[test]
fn a_hash_keyed_hot_index_from_an_earlier_release_is_converted_at_open() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    {
        let store = open(tmp.path());
        ingest_range(&store, &s, 1, 6, 3);
        let table = store.table(TableId::TxIndex);
        let entries = table.scan(&[], 1 << 20).expect("scan");
        assert_eq!(entries.len(), 6 * 8);
        let mut w = table.begin_write().expect("write");
        for (pos, hash) in &entries {
            w.delete(pos).expect("delete");
            w.put(hash, pos).expect("put");
        }
        w.finish().expect("finish");
        w.commit().expect("commit");
        store.close().expect("close");
    }
    let keys = |store: &Ledgerstore| -> Vec<usize> {
        let all = store.table(TableId::TxIndex).scan(&[], 1 << 20);
        all.expect("scan").iter().map(|(k, _)| k.len()).collect()
    };
    {
        let opts = StoreOptions {
            offline: true,
            ..StoreOptions::default()
        };
        let store = Ledgerstore::open(tmp.path(), opts, &Backends::for_tests()).expect("open");
        assert_all_readable(&store, &s, 1, 6);
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{:#?}", r.problems);
        assert_eq!(
            keys(&store),
            vec![32; 6 * 8],
            "an offline reader converts nothing"
        );
    }
    let store = open(tmp.path());
    assert_eq!(keys(&store), vec![8; 6 * 8], "converted");
    assert_eq!(hot_entries(&store).len(), 6 * 8);
    assert_all_readable(&store, &s, 1, 6);
    assert!(store.check().expect("check").is_ok());
    ingest_range(&store, &s, 7, 12, 3);
    store.wait_for_segments().expect("segments");
    assert_eq!(segment_count(&store), 1);
    assert_eq!(hot_entries(&store).len(), 3 * 8, "ledgers 10 to 12");
    assert_all_readable(&store, &s, 1, 12);
}

/// Two hashes that share their first 8 bytes (the hot map's key) both
/// stay findable in the open range, exactly, and after their segment.
#[test]
fn hot_hashes_sharing_a_map_key_are_both_found() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path());
    let mut a: LedgerInput = s.ledger(1);
    let mut b: LedgerInput = s.ledger(2);
    let shared = a.txs[1].hash[..8].to_vec();
    b.txs[4].hash[..8].copy_from_slice(&shared);
    a.txs[6].hash[..8].copy_from_slice(&shared);
    store
        .ingest(&[a.clone(), b.clone()], Duration::ZERO)
        .expect("ingest");
    for (l, i) in [(&a, 1), (&a, 6), (&b, 4)] {
        let rec = store.get_tx(&hash(&l.txs[i])).expect("get").expect("found");
        assert_eq!((rec.ledger_seq, rec.index), (l.seq, i as u32));
        assert_eq!(
            store.get_tx_ledger(&hash(&l.txs[i])).expect("ledger"),
            Some(l.seq)
        );
    }
    let mut foreign = a.txs[1].hash.clone();
    foreign[31] ^= 1;
    assert!(
        store
            .get_tx(&TxHash::from_slice(&foreign).expect("32"))
            .expect("get")
            .is_none()
    );
    let again = store.ingest(&[s.ledger(3)], Duration::ZERO);
    assert!(again.is_ok(), "{again:?}");
    assert!(store.check().expect("check").is_ok());
    drop(store);
    let store = open(tmp.path());
    let rec = store
        .get_tx(&hash(&b.txs[4]))
        .expect("get")
        .expect("found after reopen");
    assert_eq!((rec.ledger_seq, rec.index), (2, 4));
}

/// Both body forms train versioned dictionaries (a `records` dir
/// compresses its bodies with them; a `blocks` dir keeps them for packs),
/// and every version stays readable after a reopen without training.
#[test]
fn dictionaries_are_versioned_and_old_records_stay_readable() {
    let s = synth();
    let dict = DictOptions {
        train_after_txs: 40,
        samples: 64,
        max_bytes: 8 << 10,
        retrain_every_txs: 80,
    };
    for form in [BodyForm::Records, BodyForm::Blocks] {
        let tmp = tempfile::tempdir().expect("tempdir");
        {
            let store = open_form(tmp.path(), Some(dict.clone()), form);
            // 8 txs per ledger, 2 ledgers per batch: v1 after 40 txs, then
            // a new version every 80.
            ingest_range(&store, &s, 1, 30, 2);
            let d = store
                .stats()
                .expect("stats")
                .dictionaries
                .expect("dict stats");
            assert!(d.current >= 2, "{form}: {d:?}");
            assert_eq!(d.versions.len() as u32, d.current);
            store.wait_for_segments().expect("segments");
            assert_all_readable(&store, &s, 1, 30);
            assert!(store.check().expect("check").is_ok());
            // Which versions the stored bodies name.
            let mut used = std::collections::BTreeSet::new();
            for seq in 1..=30u32 {
                for index in 0..8u32 {
                    let v = store
                        .table(TableId::TxData)
                        .get(&TxPos { seq, index }.to_bytes())
                        .expect("get")
                        .expect("stored");
                    used.insert(TxBody::decompress(&v).expect("body").dict_version);
                }
            }
            match form {
                BodyForm::Records => assert!(
                    used.iter()
                        .filter(|v| (1..ledgerstore_db_api::RAW_BODY).contains(*v))
                        .count()
                        >= 2,
                    "records: bodies use at least two trained versions: {used:?}"
                ),
                BodyForm::Blocks => assert_eq!(
                    used,
                    [ledgerstore_db_api::RAW_BODY].into(),
                    "blocks: every body is raw"
                ),
            }
        }
        // Without training on reopen, every version still decodes.
        let store = open_with(tmp.path(), None);
        assert_eq!(store.body_form(), form);
        assert_all_readable(&store, &s, 1, 30);
        let d = store
            .stats()
            .expect("stats")
            .dictionaries
            .expect("dict stats");
        assert!(d.current >= 2);
    }
}

#[test]
fn backup_carries_the_segments() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path());
    ingest_range(&store, &s, 1, 14, 7);
    store.wait_for_segments().expect("segments");
    let out = tempfile::tempdir().expect("tempdir");
    let dest = out.path().join("backup");
    store.backup(&dest).expect("backup");
    let restored = out.path().join("restored");
    crate::restore(&dest, &restored).expect("restore");
    drop(store);
    let store = open(&restored);
    assert_eq!(segment_count(&store), 1);
    assert_all_readable(&store, &s, 1, 14);
    assert!(store.check().expect("check").is_ok());
}

#[test]
fn check_names_damage_to_the_indexed_tables() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path());
    ingest_range(&store, &s, 10, 24, 5); // segment 10..=19; 20..=24 hot
    store.wait_for_segments().expect("segments");
    assert!(store.check().expect("check").is_ok());

    let victim = hash(&s.ledger(22).txs[3]);
    let mut w = store.table(TableId::TxIndex).begin_write().expect("w");
    w.delete(&TxPos { seq: 22, index: 3 }.to_bytes())
        .expect("delete");
    let orphan = TxHash([0xab; 32]);
    w.put(&TxPos { seq: 99, index: 0 }.to_bytes(), &orphan.0)
        .expect("put");
    let foreign = TxHash([0xcd; 32]);
    w.put(&TxPos { seq: 21, index: 2 }.to_bytes(), &foreign.0)
        .expect("put");
    w.put(b"junk", b"x").expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
    let mut w = store.table(TableId::TxData).begin_write().expect("w");
    w.put(&TxPos { seq: 12, index: 5 }.to_bytes(), b"short")
        .expect("put");
    w.delete(&TxPos { seq: 23, index: 0 }.to_bytes())
        .expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");

    let r = store.check().expect("check");
    let want = [
        format!(
            "tx_hot_index: {victim} is missing and no segment covers it (listed by ledgers[22] at index 3)"
        ),
        "tx_bodies: ledger 12 index 5: tx body: corrupt record".to_string(),
        format!("tx_hot_index: {orphan} at ledger 99 index 0 is above the mark"),
        format!(
            "tx_hot_index: the entry of ledger 21 index 2 is not {} (listed by ledgers[21] at index 2)",
            hash(&s.ledger(21).txs[2])
        ),
        "tx_hot_index: key 6a756e6b (4 bytes, value 1 bytes) is not a position → hash entry"
            .to_string(),
        "tx_bodies: no body at ledger 23 index 0".to_string(),
        "tx_bodies: holds 119 bodies, the ledger records list 120".to_string(),
    ];
    for w in &want {
        assert!(
            r.problems.iter().any(|p| p.contains(w.as_str())),
            "no {w:?} in {:#?}",
            r.problems
        );
    }
}

#[test]
fn an_offline_reader_never_builds_rolls_back_or_writes() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = |offline: bool| StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: RANGE,
            merge_levels: 0,
            dict: None,
            ..IndexedOptions::default()
        },
        offline,
        ..StoreOptions::default()
    };
    {
        // Every build fails before its publish while writing: the closed
        // ranges stay in the hot index, with a `tmp-` file left behind.
        let store =
            Ledgerstore::open(tmp.path(), opts(false), &Backends::for_tests()).expect("open");
        fail_builds(&store, "segment-before-publish", 1_000);
        ingest_range(&store, &s, 1, 25, 5);
        crate::tests::plant_residue(&store, &[s.ledger(26)]);
    }
    let files = |p: &Path| -> Vec<(String, u64)> {
        let mut v: Vec<_> = walk(p)
            .into_iter()
            .filter(|(n, _)| !n.ends_with("LOCK") && !n.contains("/rocksdb/"))
            .collect();
        v.sort();
        v
    };
    let before = files(tmp.path());
    {
        let store =
            Ledgerstore::open(tmp.path(), opts(true), &Backends::for_tests()).expect("open");
        store.wait_for_segments().expect("returns at once");
        assert_eq!(segment_count(&store), 0);
        assert_all_readable(&store, &s, 1, 25);
        let r = store.check().expect("check");
        assert!(r.is_ok(), "{:#?}", r.problems);
        assert!(r.above_mark > 0, "the residue is reported, not deleted");
        let e = store
            .ingest(&s.batch(26, 1), Duration::ZERO)
            .expect_err("an offline reader refuses ingest");
        assert!(matches!(e, StoreError::WritesRefused { .. }), "{e}");
        assert!(e.to_string().contains("offline reader"), "{e}");
    }
    assert_eq!(files(tmp.path()), before, "an offline open changed no file");
    // The next writer rolls the residue back and builds both closed ranges.
    let store = open(tmp.path());
    store.wait_for_segments().expect("segments");
    assert_eq!(segment_count(&store), 2);
    assert_all_readable(&store, &s, 1, 25);
    let r = store.check().expect("check");
    assert!(r.is_ok() && r.above_mark == 0, "{r:#?}");
}

/// Every file under `p` with its size (MDBX files by size and content hash
/// of their length only: a read must not grow them).
fn walk(p: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(p) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            let len = e.metadata().map_or(0, |m| m.len());
            out.push((path.display().to_string(), len));
        }
    }
    out
}
