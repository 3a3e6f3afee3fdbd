//! Body forms on real engines: a new `indexed` dir stores raw bodies that
//! RocksDB compresses in blocks (format 4, with its ledger records:
//! `ledger_form_tests.rs`), a `records` dir keeps its
//! per-record frames across reopens with any config, an explicit form
//! that differs from the recorded one is refused before anything opens,
//! backups keep the form, and packs get per-record bodies from either.

use std::path::Path;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{
    BodyForm, Decompress, DictSet, Layout, LedgerInput, RAW_BODY, TableId, TxBody, TxHash, TxPos,
};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::{ExplicitPolicy, IndexedOptions, Ledgerstore, StoreError, StoreOptions, restore};

fn options(bodies: BodyForm, explicit: Option<BodyForm>) -> StoreOptions {
    StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: 4,
            merge_levels: 0,
            bodies,
            explicit_policy: ExplicitPolicy {
                bodies: explicit,
                ..ExplicitPolicy::default()
            },
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    }
}

/// The error an open with `opts` is refused with.
fn refused(dir: &Path, opts: StoreOptions) -> StoreError {
    match Ledgerstore::open(dir, opts, &Backends::for_tests()) {
        Ok(_) => panic!("the open of {} was not refused", dir.display()),
        Err(e) => e,
    }
}

fn open(dir: &Path, bodies: BodyForm, explicit: Option<BodyForm>) -> Ledgerstore {
    Ledgerstore::open(dir, options(bodies, explicit), &Backends::for_tests()).expect("open")
}

fn ledgers(from: u32, to: u32) -> Vec<LedgerInput> {
    let s = Synth::new(SynthConfig::small(23, 7));
    (from..=to).map(|seq| s.cut_ledger(seq)).collect()
}

fn ingest(store: &Ledgerstore, ledgers: &[LedgerInput]) {
    for batch in ledgers.chunks(3) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
    }
}

/// The dictionary version of every stored body of `ls` (aliases aside).
fn stored_versions(store: &Ledgerstore, ls: &[LedgerInput]) -> Vec<u32> {
    let mut out = Vec::new();
    for l in ls {
        for i in 0..l.txs.len() {
            let pos = TxPos {
                seq: l.seq,
                index: i as u32,
            };
            let v = store
                .table(TableId::TxData)
                .get(&pos.to_bytes())
                .expect("get")
                .expect("stored");
            out.push(TxBody::decompress(&v).expect("body").dict_version);
        }
    }
    out
}

/// Every transaction and every ledger of `ls` reads back exactly, and
/// `check` finds nothing.
fn assert_reads(store: &Ledgerstore, ls: &[LedgerInput]) {
    for l in ls {
        let got = store.get_ledger(l.seq).expect("read").expect("present");
        assert_eq!(got.raw, l.raw, "ledger {}", l.seq);
        for (i, t) in l.txs.iter().enumerate() {
            let hash = TxHash::from_slice(&t.hash).expect("32");
            let rec = store.get_tx(&hash).expect("get").expect("found");
            assert_eq!(
                (rec.ledger_seq, rec.index, &rec.envelope[..], &rec.meta[..]),
                (l.seq, i as u32, &t.envelope[..], &t.meta[..])
            );
        }
    }
    let report = store.check().expect("check");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("ledgerstore.json")).expect("manifest"))
        .expect("json")
}

#[test]
fn a_new_dir_stores_raw_bodies_in_format_4_and_keeps_the_form() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ls = ledgers(1, 9);
    {
        let store = open(tmp.path(), BodyForm::default(), None);
        assert_eq!(store.body_form(), BodyForm::Blocks);
        ingest(&store, &ls);
        store.wait_for_segments().expect("segments");
        assert!(
            stored_versions(&store, &ls).iter().all(|v| *v == RAW_BODY),
            "every body is raw"
        );
        assert_reads(&store, &ls);
        assert_eq!(store.stats().expect("stats").bodies, Some("blocks"));
    }
    let m = manifest(tmp.path());
    assert_eq!(
        (m["format"].as_u64(), m["bodies"].as_str()),
        (Some(4), Some("blocks"))
    );
    // Asked for the other form explicitly: refused by name, nothing opened.
    let before = std::fs::read(tmp.path().join("MARK")).expect("mark");
    let e = refused(
        tmp.path(),
        options(BodyForm::Records, Some(BodyForm::Records)),
    );
    assert!(
        matches!(
            &e,
            StoreError::SettingMismatch {
                setting: "segments.bodies",
                ..
            }
        ),
        "{e}"
    );
    assert!(
        e.to_string().contains("blocks") && e.to_string().contains("records"),
        "{e}"
    );
    assert_eq!(
        std::fs::read(tmp.path().join("MARK")).expect("mark"),
        before
    );
    // The default for new dirs changed nothing in an existing one.
    let store = open(tmp.path(), BodyForm::Records, None);
    assert_eq!(store.body_form(), BodyForm::Blocks);
    let more = ledgers(10, 12);
    ingest(&store, &more);
    assert!(
        stored_versions(&store, &more)
            .iter()
            .all(|v| *v == RAW_BODY)
    );
    assert_reads(&store, &[ls, more].concat());
}

#[test]
fn a_records_dir_keeps_per_record_bodies_and_the_format_earlier_builds_read() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ls = ledgers(1, 6);
    {
        let store = open(tmp.path(), BodyForm::Records, Some(BodyForm::Records));
        assert_eq!(store.body_form(), BodyForm::Records);
        ingest(&store, &ls);
        assert!(stored_versions(&store, &ls).iter().all(|v| *v != RAW_BODY));
        assert_eq!(store.stats().expect("stats").bodies, Some("records"));
    }
    let m = manifest(tmp.path());
    assert_eq!(m["format"].as_u64(), Some(1));
    assert!(
        m.get("bodies").is_none(),
        "format 1 manifests stay as they were: {m}"
    );
    // Reopened with the defaults of this build (blocks for new dirs).
    let store = open(tmp.path(), BodyForm::Blocks, None);
    assert_eq!(store.body_form(), BodyForm::Records);
    let more = ledgers(7, 9);
    ingest(&store, &more);
    assert!(
        stored_versions(&store, &more)
            .iter()
            .all(|v| *v != RAW_BODY)
    );
    assert_reads(&store, &[ls, more].concat());
    drop(store);
    let e = refused(
        tmp.path(),
        options(BodyForm::Blocks, Some(BodyForm::Blocks)),
    );
    assert!(
        e.to_string().contains("segments.bodies"),
        "the setting is named: {e}"
    );
}

#[test]
fn a_manifest_whose_format_and_form_disagree_is_refused_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    drop(open(tmp.path(), BodyForm::Blocks, None));
    let path = tmp.path().join("ledgerstore.json");
    let mut m = manifest(tmp.path());
    // A new blocks dir is format 4, its block tables sharded: relabelled
    // format 3, its tables are refused (an earlier build would read their
    // `default` column family alone); a format-3 dir whose tables were
    // made before shards opens.
    assert_eq!(m["format"], 4);
    m["format"] = 3.into();
    std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write");
    let e = refused(tmp.path(), options(BodyForm::Blocks, None));
    assert!(e.to_string().contains("does not record shards"), "{e}");
    std::fs::remove_dir_all(tmp.path().join("rocksdb")).expect("tables");
    let store = open(tmp.path(), BodyForm::Blocks, None);
    assert_eq!(manifest(tmp.path())["format"], 3);
    // Its backup is format 3 too (the tables are the source's, in one
    // column family), and opens and reads.
    let ls = ledgers(1, 4);
    ingest(&store, &ls);
    let copy = tempfile::tempdir().expect("tempdir");
    let copy = copy.path().join("backup");
    store.backup(&copy).expect("backup");
    drop(store);
    assert_eq!(manifest(&copy)["format"], 3);
    assert_reads(&open(&copy, BodyForm::Blocks, None), &ls);
    m["format"] = 1.into();
    std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write");
    let e = refused(tmp.path(), options(BodyForm::Blocks, None));
    let msg = e.to_string();
    assert!(
        msg.contains("format 1 with blocks bodies and blocks ledger records is not supported"),
        "{msg}"
    );
    m["format"] = 5.into();
    std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write");
    let e = refused(tmp.path(), options(BodyForm::Blocks, None));
    assert!(e.to_string().contains("on-disk format 5"), "{e}");
    // Ledger records in blocks without blocks bodies: no format has that.
    m["format"] = 3.into();
    m.as_object_mut().expect("object").remove("bodies");
    std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write");
    let e = refused(tmp.path(), options(BodyForm::Blocks, None));
    assert!(
        e.to_string()
            .contains("ledger records in blocks with per-record bodies"),
        "{e}"
    );
    // Format 2 is blocks bodies with per-record ledger records.
    m["format"] = 2.into();
    m["bodies"] = "blocks".into();
    std::fs::write(&path, serde_json::to_vec(&m).expect("json")).expect("write");
    let e = refused(tmp.path(), options(BodyForm::Blocks, None));
    assert!(
        e.to_string()
            .contains("format 2 with blocks bodies and blocks ledger records"),
        "{e}"
    );
}

#[test]
fn backups_keep_the_form_and_packs_get_per_record_bodies_from_either() {
    for form in [BodyForm::Blocks, BodyForm::Records] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ls = ledgers(1, 8);
        let store = open(&tmp.path().join("src"), form, Some(form));
        ingest(&store, &ls);
        store.wait_for_segments().expect("segments");
        let closed = store.closed_ranges().expect("closed");
        for l in &ls[..4] {
            let (_, n) = store.stored_ledger(l.seq).expect("read").expect("stored");
            let bodies = store
                .stored_bodies(l.seq, n, &closed.pack_dicts)
                .expect("bodies");
            assert_eq!(bodies.len(), n as usize);
            for (i, b) in bodies.iter().enumerate().take(l.txs.len()) {
                let body = TxBody::decompress(b).expect("body");
                assert_ne!(body.dict_version, RAW_BODY, "{form}: packs hold frames");
                let rec = body.record(&DictSet::default()).expect("record");
                assert_eq!((rec.index, &rec.meta[..]), (i as u32, &l.txs[i].meta[..]));
            }
        }
        let backup = tmp.path().join("backup");
        store.backup(&backup).expect("backup");
        drop(store);
        let dest = tmp.path().join("restored");
        restore(&backup, &dest).expect("restore");
        let restored = open(&dest, BodyForm::default(), None);
        assert_eq!(restored.body_form(), form);
        assert_reads(&restored, &ls);
    }
}

#[test]
fn a_body_form_with_another_layout_is_refused_before_the_dir_is_made() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("new");
    let mut opts = options(BodyForm::Blocks, Some(BodyForm::Blocks));
    opts.layout = Some(Layout::Hybrid);
    let e = refused(&dir, opts);
    assert!(
        e.to_string()
            .contains("segments.bodies = blocks applies to layout indexed only, not hybrid"),
        "{e}"
    );
    assert!(!dir.exists(), "a refused open makes no dir");
    // An offline reader takes the dir as recorded, whatever was asked.
    let indexed = tmp.path().join("indexed");
    drop(open(&indexed, BodyForm::Records, Some(BodyForm::Records)));
    let offline = StoreOptions {
        offline: true,
        engine_access: ledgerstore_db_api::Access::ReadOnly,
        create: false,
        ..options(BodyForm::Blocks, Some(BodyForm::Blocks))
    };
    let store = Ledgerstore::open(&indexed, offline, &Backends::for_tests()).expect("offline");
    assert_eq!(store.body_form(), BodyForm::Records);
}
