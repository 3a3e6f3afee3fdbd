//! Skeleton ledger records (v3) on real engines: every reader of a whole
//! ledger gets the ingested bytes back; a dir of whole records takes
//! skeletons after them; hash-keyed layouts keep the whole raw; `check`
//! and reads name a damaged skeleton or body; backup and restore carry
//! both. Real Stellar ledgers go through the same path in
//! `crates/ledgerstore/tests/corpora.rs` and the daemon's tests.

use std::path::Path;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{
    Compress, DbError, Decompress, DictSet, Layout, LedgerInput, StoredLedger, TableId, TxBody,
    TxHash, TxPos, TxRecord,
};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::{IndexedOptions, Ledgerstore, StoreError, StoreOptions, restore};

fn synth() -> Synth {
    Synth::new(SynthConfig::small(11, 6))
}

fn open(dir: &Path, layout: Layout) -> Ledgerstore {
    let opts = StoreOptions {
        layout: Some(layout),
        indexed: IndexedOptions {
            range_ledgers: 4,
            merge_levels: 0,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    };
    Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store")
}

fn cut_ledger(s: &Synth, seq: u32) -> LedgerInput {
    s.cut_ledger(seq)
}

fn ingest(store: &Ledgerstore, ledgers: &[LedgerInput]) {
    for batch in ledgers.chunks(3) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
    }
}

/// The record format version of ledger `seq` as the table holds it.
fn stored(store: &Ledgerstore, seq: u32) -> (u8, usize, StoredLedger) {
    let v = store
        .table(TableId::Ledgers)
        .get(&seq.to_be_bytes())
        .expect("get")
        .expect("stored");
    // A zstd frame, or a format-3 dir's raw record.
    let plain = ledgerstore_db_api::ledger_record_bytes(&v).expect("zstd");
    (
        plain[0],
        plain.len(),
        StoredLedger::decode(&plain).expect("decode"),
    )
}

/// Every ledger of `want` comes back exactly through get_ledger and the
/// range reader, and `check` verifies every skeleton.
fn assert_whole(store: &Ledgerstore, want: &[LedgerInput], skeletons: u64) {
    for l in want {
        let got = store.get_ledger(l.seq).expect("read").expect("present");
        assert_eq!(got.raw, l.raw, "ledger {}", l.seq);
        assert_eq!(got.tx_hashes.len(), l.txs.len());
    }
    let (first, last) = (want[0].seq, want[want.len() - 1].seq);
    for chunk in [1, 2, 5, 64] {
        let got: Vec<_> = store
            .ledgers(first, last, chunk)
            .collect::<Result<_, _>>()
            .expect("range");
        assert_eq!(got.len(), want.len(), "chunk {chunk}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.seq, &g.raw[..]), (w.seq, &w.raw[..]), "chunk {chunk}");
        }
    }
    let report = store.check().expect("check");
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.reassembled, skeletons);
}

#[test]
fn skeletons_are_stored_once_and_read_back_whole() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), Layout::Indexed);
    let ledgers: Vec<LedgerInput> = (1..=10).map(|seq| cut_ledger(&s, seq)).collect();
    ingest(&store, &ledgers);
    store.wait_for_segments().expect("segments");
    for l in &ledgers {
        let (version, len, rec) = stored(&store, l.seq);
        assert_eq!(version, 3, "ledger {}", l.seq);
        // The parts are in the bodies only: the record holds the rest.
        let parts: usize = l.txs.iter().map(|t| t.body_len()).sum();
        assert!(len < l.raw.len() - parts + 32 * l.txs.len() + 200 + 4 * l.cuts.len());
        assert!(rec.needs_bodies());
    }
    assert_whole(&store, &ledgers, 10);
    // Transactions read as before.
    for l in &ledgers {
        let h = TxHash::from_slice(&l.txs[1].hash).expect("32");
        let rec = store.get_tx(&h).expect("get").expect("found");
        assert_eq!(rec.meta, l.txs[1].meta);
    }
    // After a restart, and through a backup and its restore.
    store.close().expect("close");
    drop(store);
    let store = open(tmp.path(), Layout::Indexed);
    assert_whole(&store, &ledgers, 10);
    let backup = tmp.path().join("backup");
    store.backup(&backup).expect("backup");
    let restored = tmp.path().join("restored");
    restore(&backup, &restored).expect("restore");
    let r = open(&restored, Layout::Indexed);
    assert_whole(&r, &ledgers, 10);
}

/// A dir written before skeletons (whole records, v1 and v2) keeps
/// reading, and new ledgers written into it are skeletons: no migration.
#[test]
fn a_dir_of_whole_records_takes_skeletons_after_them() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), Layout::Indexed);
    // Whole: ledgers without cuts, as every ledger was before.
    let old: Vec<LedgerInput> = (1..=5).map(|seq| s.ledger(seq)).collect();
    ingest(&store, &old);
    store.close().expect("close");
    drop(store);
    let store = open(tmp.path(), Layout::Indexed);
    let new: Vec<LedgerInput> = (6..=12).map(|seq| cut_ledger(&s, seq)).collect();
    ingest(&store, &new);
    let all: Vec<LedgerInput> = old.iter().chain(&new).cloned().collect();
    for l in &all {
        let want = if l.cuts.is_empty() { 1 } else { 3 };
        assert_eq!(stored(&store, l.seq).0, want, "ledger {}", l.seq);
    }
    assert_whole(&store, &all, 7);
}

/// Bodies keyed by hash would cost a point read per transaction to put a
/// ledger back: those layouts keep the whole raw, cuts or not.
#[test]
fn hash_keyed_layouts_keep_the_whole_raw() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), Layout::Hybrid);
    let ledgers: Vec<LedgerInput> = (1..=4).map(|seq| cut_ledger(&s, seq)).collect();
    ingest(&store, &ledgers);
    for l in &ledgers {
        assert_eq!(stored(&store, l.seq).0, 1);
    }
    assert_whole(&store, &ledgers, 0);
}

fn raw_put(store: &Ledgerstore, t: TableId, key: &[u8], value: &[u8]) {
    let mut w = store.table(t).begin_write().expect("begin");
    w.put(key, value).expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
}

/// Deletes the body at position `(seq, index)`, bypassing the store.
fn delete_body(store: &Ledgerstore, seq: u32, index: u32) {
    let mut w = store.table(TableId::TxData).begin_write().expect("begin");
    w.delete(&TxPos { seq, index }.to_bytes()).expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");
}

fn is_reassembly(e: &StoreError, seq: u32) -> bool {
    matches!(e, StoreError::Db(DbError::Reassembly { seq: s, .. }) if *s == seq)
}

/// A damaged skeleton, a body whose bytes changed, and a missing body:
/// each read of the ledger fails naming it, and `check` names it.
#[test]
fn damage_to_a_skeleton_or_a_body_is_named_never_served() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), Layout::Indexed);
    let ledgers: Vec<LedgerInput> = (1..=6).map(|seq| cut_ledger(&s, seq)).collect();
    ingest(&store, &ledgers);
    store.wait_for_segments().expect("segments");

    // Ledger 2: one skeleton byte flipped (its record still decodes).
    let (_, _, mut rec) = stored(&store, 2);
    if let ledgerstore_db_api::LedgerContent::Split(sk) = &mut rec.content {
        sk.bytes[3] ^= 0x20;
    }
    raw_put(
        &store,
        TableId::Ledgers,
        &2u32.to_be_bytes(),
        &rec.compress(3).expect("c"),
    );

    // Ledger 4: tx 1's meta holds other bytes of the same length.
    let l4 = &ledgers[3];
    let t = &l4.txs[1];
    let mut meta = t.meta.to_vec();
    meta[0] ^= 1;
    let body = TxRecord {
        ledger_seq: 4,
        close_time: l4.close_time,
        index: 1,
        envelope: t.envelope.to_vec(),
        result: t.result.to_vec(),
        meta,
    };
    let hash = TxHash::from_slice(&t.hash).expect("32");
    let stored_body = TxBody::compress_record(hash, &body.encode(), &DictSet::default(), 3)
        .expect("body")
        .to_bytes();
    let pos = TxPos { seq: 4, index: 1 }.to_bytes();
    raw_put(&store, TableId::TxData, &pos, &stored_body);
    assert_eq!(
        TxBody::decompress(&stored_body).expect("body").hash,
        hash,
        "the body still names its hash: only the reassembly sees it"
    );

    for seq in [2, 4] {
        let e = store.get_ledger(seq).expect_err("damaged");
        assert!(is_reassembly(&e, seq), "{e}");
        assert!(e.to_string().contains(&format!("ledger {seq}")), "{e}");
        let e = store
            .ledgers(1, 6, 10)
            .collect::<Result<Vec<_>, _>>()
            .expect_err("a range through it");
        assert!(is_reassembly(&e, 2), "{e}");
    }
    assert_eq!(
        store.get_ledger(3).expect("read").expect("intact").raw,
        ledgers[2].raw
    );
    let report = store.check().expect("check");
    assert_eq!(report.reassembled, 4);
    for seq in [2, 4] {
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.starts_with(&format!("ledgers[{seq}]: ledger {seq}"))
                    && p.contains("do not reassemble")),
            "{:?}",
            report.problems
        );
    }
}

/// `check` verifies ledgers on every core and reports exactly what one
/// thread would, in the same order: each record's problems and its
/// reassembly's first, then the listed hashes; at most
/// [`crate::MAX_LISTED_PROBLEMS`] named, every one counted (one ledger
/// alone here has more than that).
#[test]
fn check_on_many_threads_reports_what_one_thread_does() {
    let s = Synth::new(SynthConfig::small(11, 120));
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), Layout::Indexed);
    let ledgers: Vec<LedgerInput> = (1..=40).map(|seq| cut_ledger(&s, seq)).collect();
    ingest(&store, &ledgers);
    store.wait_for_segments().expect("segments");
    // Ledger 5 loses all its 120 bodies, ledgers 10..=30 one each.
    for index in 0..120 {
        delete_body(&store, 5, index);
    }
    for seq in 10..=30 {
        delete_body(&store, seq, seq % 7);
    }
    let one = check_on(&store, 1);
    // Each of the 22 ledgers fails its reassembly, each of the 141 bodies
    // is missing at its listed position, and the bodies table holds 141
    // fewer than the records list and than the MARK counts.
    assert_eq!(one.problem_count, 22 + 141 + 2, "{:#?}", one.problems);
    assert_eq!(one.problems.len(), crate::MAX_LISTED_PROBLEMS);
    assert_eq!(one.reassembled, 40 - 22);
    for (i, seq) in [5].into_iter().chain(10..=30).enumerate() {
        assert!(
            one.problems[i].starts_with(&format!("ledgers[{seq}]: ledger {seq}")),
            "{i}: {}",
            one.problems[i]
        );
    }
    assert!(
        one.problems[22].contains("no body at ledger 5 index 0"),
        "{}",
        one.problems[22]
    );
    assert_same_on_many_threads(&store, &one);
}

/// `check` on a pool of `threads`.
fn check_on(store: &Ledgerstore, threads: usize) -> crate::CheckReport {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool")
        .install(|| store.check())
        .expect("check")
}

fn assert_same_on_many_threads(store: &Ledgerstore, one: &crate::CheckReport) {
    for threads in [2, 4] {
        let many = check_on(store, threads);
        assert_eq!(many.problems, one.problems, "{threads} threads");
        assert_eq!(
            (
                many.problem_count,
                many.reassembled,
                many.segment_keys,
                many.txs
            ),
            (
                one.problem_count,
                one.reassembled,
                one.segment_keys,
                one.txs
            ),
            "{threads} threads"
        );
    }
}

/// A record's own problem keeps its place among the reassemblies around
/// it, as before ledgers were verified on several cores: each record's
/// problems, then its reassembly's, in seq order; then the listed hashes.
#[test]
fn check_names_a_records_problem_between_the_reassemblies_around_it() {
    let s = synth();
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), Layout::Indexed);
    let ledgers: Vec<LedgerInput> = (1..=12).map(|seq| cut_ledger(&s, seq)).collect();
    ingest(&store, &ledgers);
    store.wait_for_segments().expect("segments");
    for (seq, index) in [(3, 1), (6, 0), (9, 2)] {
        delete_body(&store, seq, index);
    }
    raw_put(
        &store,
        TableId::Ledgers,
        &7u32.to_be_bytes(),
        b"not a record",
    );
    // Key 5 holds ledger 6's record: its own problem, then its
    // reassembly's, both named by the key.
    let six = store
        .table(TableId::Ledgers)
        .get(&6u32.to_be_bytes())
        .expect("get")
        .expect("stored");
    raw_put(&store, TableId::Ledgers, &5u32.to_be_bytes(), &six);
    let one = check_on(&store, 1);
    let want = [
        "ledgers[3]: ledger 3",
        "ledgers[5]: record says seq 6",
        "ledgers[5]: ledger 6",
        "ledgers[6]: ledger 6",
        "ledgers[7]: record does not decode",
        "ledgers[9]: ledger 9",
        "tx_bodies: no body at ledger 3 index 1",
    ];
    for (i, w) in want.iter().enumerate() {
        assert!(one.problems[i].starts_with(w), "{i}: {:#?}", one.problems);
    }
    assert_same_on_many_threads(&store, &one);
}
