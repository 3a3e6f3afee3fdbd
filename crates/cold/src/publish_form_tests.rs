//! One published location across ledger-record forms and levels: a
//! format-3 writer records its raw record's hash, goes on after its zstd
//! level changes, and goes on from a location a format-2 dir of the same
//! history published at another level (re-ingesting is how history moves
//! to a new form), and a format-2 dir goes on after it; another history
//! is still refused. Packs hold zstd frames; replicas read what each
//! wrote.

use std::path::Path;
use std::sync::Arc;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{BodyForm, Layout, is_zstd_frame};
use ledgerstore_pack::Header;
use ledgerstore_store::{IndexedOptions, Ledgerstore, StoreOptions};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::tests::{ingest, remote, replica};
use crate::{ColdError, Remote, publish};

/// A new dir (or an existing one) whose ledger records are `ledgers`
/// (blocks: format 3; records: format 2), compressed at `level`.
fn open(dir: &Path, ledgers: BodyForm, level: i32) -> Arc<Ledgerstore> {
    let opts = StoreOptions {
        layout: Some(Layout::Indexed),
        compression_level: level,
        indexed: IndexedOptions {
            range_ledgers: 10,
            merge_fanout: 2,
            merge_levels: 1,
            // The same history in two dirs publishes the same bodies.
            dict: None,
            ledgers,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    };
    Arc::new(Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store"))
}

fn round(
    rt: &tokio::runtime::Runtime,
    store: &Arc<Ledgerstore>,
    r: &Remote,
    work: &Path,
) -> Result<(), ColdError> {
    rt.block_on(publish(Arc::clone(store), r, work)).map(|_| ())
}

/// Ledger `seq`'s record bytes as the newest manifest's pack holds them,
/// read from the bucket's files.
fn pack_record(bucket: &Path, rt: &tokio::runtime::Runtime, r: &Remote, seq: u32) -> Vec<u8> {
    let m = rt
        .block_on(r.newest_manifest())
        .expect("manifest")
        .expect("published");
    let p = m.pack_of(seq).expect("a pack holds it");
    let pack = std::fs::read(bucket.join(&p.object.key)).expect("pack");
    let at = |range: std::ops::Range<u64>| &pack[range.start as usize..range.end as usize];
    let h = Header::parse(&pack).expect("header");
    let (page, _) = h.ledger_page_of(seq).expect("page");
    let le = h
        .ledger_entry(at(h.ledger_page(page).expect("range")), seq)
        .expect("entry");
    at(h.data_range(&le.record).expect("record")).to_vec()
}

/// The published mark and its record hash.
fn mark(rt: &tokio::runtime::Runtime, r: &Remote) -> (u32, String) {
    let m = rt
        .block_on(r.newest_manifest())
        .expect("manifest")
        .expect("published");
    (m.mark, m.mark_record_sha256)
}

#[test]
fn a_location_goes_on_across_forms_and_levels_of_one_history() {
    let tmp = tempfile::tempdir().expect("tmp");
    let bucket = tmp.path().join("bucket");
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let r = remote(&bucket);
    let s = Synth::new(SynthConfig::small(41, 6));

    // A format-2 dir at level 19 publishes first: its hash is of the
    // stored frame.
    let old = open(&tmp.path().join("old"), BodyForm::Records, 19);
    ingest(&old, &s, 1, 25);
    round(&rt, &old, &r, &tmp.path().join("w-old")).expect("format 2 publishes");
    let (at, sha) = mark(&rt, &r);
    let frame = old.stored_ledger_value(at).expect("read").expect("stored");
    assert!(is_zstd_frame(&frame));
    assert_eq!(sha, ledgerstore_pack::sha256(&frame));
    drop(old);

    // The same history re-ingested into a format-3 dir at level 3 goes on
    // there: neither hash matches, the pack's record does.
    let dir = tmp.path().join("new");
    let new = open(&dir, BodyForm::Blocks, 3);
    ingest(&new, &s, 1, 35);
    let raw = new.stored_ledger_value(at).expect("read").expect("stored");
    assert!(!is_zstd_frame(&raw), "a format-3 dir stores records raw");
    assert_ne!(sha, ledgerstore_pack::sha256(&raw));
    round(&rt, &new, &r, &tmp.path().join("w-new")).expect("format 3 goes on");
    let (at, sha) = mark(&rt, &r);
    assert_eq!(at, 29);
    let raw = new.stored_ledger_value(at).expect("read").expect("stored");
    assert_eq!(sha, ledgerstore_pack::sha256(&raw), "the raw record's hash");
    assert!(
        is_zstd_frame(&pack_record(&bucket, &rt, &r, at)),
        "packs hold frames"
    );
    drop(new);

    // Reopened at another level: its packs' frames change, its hash not.
    let new = open(&dir, BodyForm::Blocks, 9);
    ingest(&new, &s, 36, 45);
    round(&rt, &new, &r, &tmp.path().join("w-new")).expect("a new level goes on");
    assert_eq!(mark(&rt, &r).0, 39);
    let rep = replica(&rt, &r, &tmp.path().join("cache"), 1 << 30);
    for seq in [1, 19, 29, 39] {
        let want = new.get_ledger(seq).expect("store").expect("stored");
        let got = ledgerstore_store::Reader::get_ledger(rep.as_ref(), seq)
            .expect("replica")
            .expect("published");
        assert_eq!(got.raw, want.raw, "ledger {seq}");
    }
    drop(new);

    // A format-2 dir of the same history goes on after format-3 rounds.
    let back = open(&tmp.path().join("back"), BodyForm::Records, 3);
    ingest(&back, &s, 1, 55);
    round(&rt, &back, &r, &tmp.path().join("w-back")).expect("format 2 goes on");
    assert_eq!(mark(&rt, &r).0, 49);
    drop(back);

    // Another history at the same location is still refused by name.
    let other = open(&tmp.path().join("other"), BodyForm::Blocks, 3);
    ingest(&other, &Synth::new(SynthConfig::small(43, 6)), 1, 55);
    let e = round(&rt, &other, &r, &tmp.path().join("w-other")).expect_err("diverged");
    assert!(
        matches!(e, ColdError::Diverged(_)) && e.to_string().contains("another writer's history"),
        "{e}"
    );
}
