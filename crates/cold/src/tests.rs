//! Publish and replica reads on a real `indexed` store (RocksDB + MDBX in a
//! temp dir) against object_store's local-filesystem store. The same flows
//! against a real S3 server, across processes and with SIGKILLs, are in
//! `crates/ledgerstore/tests/replica.rs`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{BodyForm, Decompress, Layout, LedgerRecord, RAW_BODY, TxBody, TxHash};
use ledgerstore_store::{
    DictOptions, IndexedOptions, Ledgerstore, Reader, StoreError, StoreOptions,
};
use ledgerstore_synth::{Synth, SynthConfig};
use object_store::local::LocalFileSystem;

use crate::{ColdError, DiskCache, Remote, Replica, publish};

pub(crate) fn open(dir: &Path) -> Arc<Ledgerstore> {
    open_form(dir, BodyForm::default())
}

/// [`open`], a new dir storing its bodies as `bodies` says.
fn open_form(dir: &Path, bodies: BodyForm) -> Arc<Ledgerstore> {
    open_forms(dir, bodies, BodyForm::default())
}

/// [`open`], a new dir storing its bodies and (with blocks bodies) its
/// ledger records as said: blocks and records make a format-2 dir.
fn open_forms(dir: &Path, bodies: BodyForm, ledgers: BodyForm) -> Arc<Ledgerstore> {
    let opts = StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: 10,
            merge_fanout: 2,
            merge_levels: 1,
            dict: Some(DictOptions {
                train_after_txs: 60,
                samples: 60,
                max_bytes: 4 << 10,
                retrain_every_txs: 0,
            }),
            bodies,
            ledgers,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    };
    Arc::new(Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store"))
}

pub(crate) fn ingest(store: &Ledgerstore, s: &Synth, first: u32, last: u32) {
    for seq in (first..=last).step_by(5) {
        let n = 5.min(last - seq + 1);
        store
            .ingest(&s.batch(seq, n), Duration::ZERO)
            .expect("ingest");
    }
    store.wait_for_segments().expect("segments");
}

pub(crate) fn remote(dir: &Path) -> Arc<Remote> {
    let fs = LocalFileSystem::new_with_prefix(dir).expect("local store");
    Arc::new(Remote::new(Arc::new(fs), dir.display().to_string()))
}

pub(crate) fn replica(
    rt: &tokio::runtime::Runtime,
    r: &Arc<Remote>,
    cache: &Path,
    bytes: u64,
) -> Arc<Replica> {
    let cache = DiskCache::open(cache, bytes).expect("cache");
    let rep = Replica::new(Arc::clone(r), cache, rt.handle().clone());
    rt.block_on(rep.refresh()).expect("refresh");
    rep
}

/// `r`'s head of ledger `l.seq`, alone and in a chunk, carries the whole
/// ledger's hashes, aliases and close time, and its bytes begin the
/// ledger's.
pub(crate) fn assert_head(r: &dyn Reader, l: &LedgerRecord) {
    let seq = l.seq;
    let one = r.ledger_head(seq).expect("head").expect("held");
    let chunk = r.ledger_head_chunk(seq, seq, 1).expect("head chunk");
    assert_eq!(chunk, vec![one.clone()], "ledger {seq}");
    assert_eq!(
        (one.seq, one.close_time, &one.tx_hashes, &one.aliases),
        (seq, l.close_time, &l.tx_hashes, &l.aliases),
        "ledger {seq}"
    );
    assert!(
        !one.head.is_empty() && l.raw.starts_with(&one.head),
        "ledger {seq}"
    );
}

/// Every transaction and ledger of `first..=last` reads back from the
/// replica exactly as from the store, its heads too.
fn assert_same(store: &Ledgerstore, rep: &Replica, s: &Synth, first: u32, last: u32) {
    for seq in first..=last {
        let l = s.ledger(seq);
        for tx in &l.txs {
            let h = TxHash::from_slice(&tx.hash).expect("hash");
            let want = store.get_tx(&h).expect("store").expect("in store");
            assert_eq!(
                Reader::get_tx(rep, &h).expect("replica"),
                Some(want),
                "ledger {seq}"
            );
            assert_eq!(Reader::get_tx_ledger(rep, &h).expect("ledger"), Some(seq));
        }
        let want = store.get_ledger(seq).expect("store ledger");
        assert_eq!(Reader::get_ledger(rep, seq).expect("replica ledger"), want);
        assert_head(rep, &want.expect("stored"));
    }
}

#[test]
fn published_ranges_read_back_exactly_through_a_replica_and_follow_new_manifests() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let s = Synth::new(SynthConfig::small(11, 8));
    let store = open(&data);
    ingest(&store, &s, 1, 45);
    let r = remote(&bucket);
    let work = data.join("publish");

    let rep = replica(&rt, &r, &tmp.path().join("c0"), 1 << 30);
    assert_eq!(Reader::last_ledger(&*rep), None);
    assert!(Reader::mark_text(&*rep).contains("nothing is published"));

    let first = rt
        .block_on(publish(Arc::clone(&store), &r, &work))
        .expect("publish");
    assert_eq!(first.version, Some(1));
    assert_eq!(first.packs, vec![(1, 9), (10, 19), (20, 29), (30, 39)]);
    assert_eq!(first.mark, Some(39));
    let again = rt
        .block_on(publish(Arc::clone(&store), &r, &work))
        .expect("again");
    assert_eq!((again.version, again.uploaded), (None, 0));

    assert_eq!(rt.block_on(rep.refresh()).expect("follow"), Some(1));
    let m = rep.manifest().expect("manifest");
    assert!(
        !m.dicts.is_empty(),
        "the synthetic history trains a dictionary"
    );
    assert_eq!(
        (Reader::first_ledger(&*rep), Reader::last_ledger(&*rep)),
        (Some(1), Some(39))
    );
    assert_same(&store, &rep, &s, 1, 39);
    let newer = TxHash::from_slice(&s.ledger(40).txs[0].hash).expect("hash");
    assert_eq!(Reader::get_tx(&*rep, &newer).expect("newer"), None);
    assert!(Reader::mark_text(&*rep).contains("published mark: ledger 39 (manifest 1)"));
    assert_eq!(Reader::get_ledger(&*rep, 40).expect("ledger 40"), None);
    let chunk = Reader::ledger_chunk(&*rep, 35, 60, 100).expect("chunk");
    assert_eq!(
        chunk.iter().map(|l| l.seq).collect::<Vec<_>>(),
        (35..=39).collect::<Vec<_>>()
    );

    // A warm lookup fetches nothing.
    let h = TxHash::from_slice(&s.ledger(12).txs[3].hash).expect("hash");
    let before = r.reads();
    Reader::get_tx(&*rep, &h).expect("warm").expect("found");
    assert_eq!(r.reads(), before);

    ingest(&store, &s, 46, 62);
    let second = rt
        .block_on(publish(Arc::clone(&store), &r, &work))
        .expect("second");
    assert_eq!(
        (second.version, second.packs.clone()),
        (Some(2), vec![(40, 49), (50, 59)])
    );
    assert_eq!(rt.block_on(rep.refresh()).expect("follow"), Some(2));
    assert_same(&store, &rep, &s, 1, 59);
    let m = rep.manifest().expect("manifest");
    assert!(
        m.segments.iter().any(|seg| seg.last - seg.first + 1 == 20),
        "a merged window is published: {:?}",
        m.segments
            .iter()
            .map(|s| (s.first, s.last))
            .collect::<Vec<_>>()
    );

    // A tiny cache evicts all the time; answers stay exact.
    let tiny = replica(&rt, &r, &tmp.path().join("c1"), 4 << 10);
    assert_same(&store, &tiny, &s, 1, 59);
    let f = tiny.cache();
    assert!(f.evictions > 0 && f.bytes <= 4 << 10, "{f:?}");

    // One writer: a second writer's manifest of the same version conflicts
    // (the same bytes would be this writer's own create, retried).
    let mut other = m.clone();
    other.writer = "another writer".into();
    let e = rt.block_on(r.create_manifest(&other)).expect_err("exists");
    assert!(matches!(e, ColdError::Conflict { .. }), "{e}");
}

/// A `records` writer publishes its bodies as stored; a `blocks` writer
/// compresses its raw bodies with a published dictionary. Either way the
/// packs hold per-record frames only, and a replica answers exactly as
/// its writer.
#[test]
fn packs_hold_per_record_bodies_from_either_body_form() {
    // Formats 1, 2 and 3 (ledger records in blocks need blocks bodies).
    for (form, ledgers) in [
        (BodyForm::Records, BodyForm::Records),
        (BodyForm::Blocks, BodyForm::Records),
        (BodyForm::Blocks, BodyForm::Blocks),
    ] {
        let tmp = tempfile::tempdir().expect("tmp");
        let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
        std::fs::create_dir_all(&bucket).expect("bucket");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let s = Synth::new(SynthConfig::small(17, 8));
        let store = open_forms(&data, form, ledgers);
        assert_eq!((store.body_form(), store.ledger_form()), (form, ledgers));
        ingest(&store, &s, 1, 25);
        let r = remote(&bucket);
        let published = rt
            .block_on(publish(Arc::clone(&store), &r, &data.join("publish")))
            .expect("publish");
        assert_eq!(published.packs, vec![(1, 9), (10, 19)], "{form}");
        let closed = store.closed_ranges().expect("closed");
        assert!(
            !closed.dicts.is_empty(),
            "{form}: a dictionary is published"
        );
        let mut versions = std::collections::BTreeSet::new();
        for seq in 1..=19 {
            let (_, n) = store.stored_ledger(seq).expect("read").expect("stored");
            for b in store
                .stored_bodies(seq, n, &closed.pack_dicts)
                .expect("bodies")
            {
                versions.insert(TxBody::decompress(&b).expect("body").dict_version);
            }
        }
        assert!(!versions.contains(&RAW_BODY), "{form}: {versions:?}");
        assert!(
            versions.iter().any(|v| *v >= 1 && *v < RAW_BODY),
            "{form}: bodies after training use the dictionary: {versions:?}"
        );
        let rep = replica(&rt, &r, &tmp.path().join("c"), 1 << 30);
        assert_same(&store, &rep, &s, 1, 19);
    }
}

/// A pack's bytes do not depend on how many ledgers its write reads at
/// once (in parallel): one at a time (the sequential reference), chunks
/// that split the range unevenly, and the production chunk, in either
/// form. A missing ledger is named the same way whatever the chunk: the
/// first in order.
#[test]
fn a_pack_is_the_same_bytes_whatever_its_read_chunk() {
    use ledgerstore_pack::PackForm;
    let tmp = tempfile::tempdir().expect("tmp");
    let s = Synth::new(SynthConfig::small(17, 8));
    let store = open(&tmp.path().join("data"));
    ingest(&store, &s, 1, 25);
    let closed = store.closed_ranges().expect("closed");
    let write = |first: u32, last: u32, form: PackForm, chunk: u32| {
        let path = tmp
            .path()
            .join(format!("pack-{first}-{last}-{form:?}-{chunk}"));
        let go = std::sync::atomic::AtomicBool::new(false);
        let dicts = &closed.pack_dicts;
        crate::publish::write_pack(&store, &path, first, last, dicts, form, chunk, &go)
            .map(|info| (info.sha256, std::fs::read(&path).expect("read pack")))
    };
    // 0: the default, twice the pool's threads.
    let chunks = [1, 3, 4, 0, 64];
    let forms = [
        (PackForm::Entries, 2),
        (
            PackForm::Frames {
                level: 3,
                dict_kib: 0,
            },
            3,
        ),
        (
            PackForm::Frames {
                level: 3,
                dict_kib: 64,
            },
            4,
        ),
    ];
    for (form, want_version) in forms {
        let want = write(10, 19, form, 1).expect("pack");
        assert!(want.1.len() > 10 * 8 * 16, "a pack of 10 ledgers");
        let version = ledgerstore_pack::Header::parse(&want.1)
            .expect("header")
            .version;
        assert_eq!(version, want_version);
        for chunk in chunks {
            assert!(
                write(10, 19, form, chunk).expect("pack") == want,
                "chunk {chunk}"
            );
        }
        for chunk in chunks {
            let err = write(20, 30, form, chunk).expect_err("ledgers 26..=30 are not stored");
            assert!(
                err.to_string()
                    .contains("ledger 26 of the closed range 20..=30"),
                "{form:?} chunk {chunk}: {err}"
            );
        }
    }
}

/// A stopped round (a daemon shutting down) ends before its pack is
/// written, names what it did not finish, leaves the store's manifest as
/// it was, and the next round publishes everything.
#[test]
fn a_stopped_round_publishes_nothing_and_the_next_one_everything() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let tmp = tempfile::tempdir().expect("tmp");
    let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let s = Synth::new(SynthConfig::small(12, 6));
    let store = open(&data);
    ingest(&store, &s, 1, 25);
    let closed = store.closed_ranges().expect("closed");
    let stop = AtomicBool::new(true);
    let path = tmp.path().join("stopped.pack");
    let form = ledgerstore_pack::PackForm::default();
    let err = crate::publish::write_pack(&store, &path, 10, 19, &closed.pack_dicts, form, 3, &stop)
        .expect_err("stopped");
    assert!(
        matches!(err, ColdError::Stopped(_))
            && err
                .to_string()
                .contains("ledgers 10..=19 was finished (0 of 10 ledgers written)"),
        "{err}"
    );
    let r = remote(&bucket);
    let work = data.join("publish");
    let stop = Arc::new(AtomicBool::new(true));
    let err = rt
        .block_on(crate::publish_until(
            Arc::clone(&store),
            &r,
            &work,
            None,
            Arc::clone(&stop),
        ))
        .expect_err("stopped round");
    assert!(matches!(err, ColdError::Stopped(_)), "{err}");
    assert!(
        rt.block_on(r.newest_manifest()).expect("read").is_none(),
        "a stopped round publishes no manifest"
    );
    stop.store(false, Ordering::Relaxed);
    let rep = rt
        .block_on(crate::publish_until(
            Arc::clone(&store),
            &r,
            &work,
            None,
            stop,
        ))
        .expect("publish");
    assert!(rep.version.is_some() && !rep.packs.is_empty(), "{rep:?}");
}

#[test]
fn a_damaged_or_missing_object_fails_only_the_lookups_that_need_it_naming_it() {
    damage_fails_only_what_needs_it(crate::PackForm::Entries);
}

#[test]
fn a_damaged_ledger_frame_fails_only_the_lookups_of_its_ledger() {
    damage_fails_only_what_needs_it(crate::PackForm::Frames {
        level: 3,
        dict_kib: 0,
    });
    damage_fails_only_what_needs_it(crate::PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
}

/// A version-4 pack whose dictionary is damaged fails every lookup and
/// ledger read of that pack (DATA_LOSS naming it and its dictionary), and
/// only them; it is not read again during the backoff (the error says
/// so), and a new replica serves the repaired object (the same
/// content-addressed key).
#[test]
fn a_damaged_pack_dictionary_fails_its_pack_only_until_repaired() {
    let Published {
        tmp,
        bucket,
        rt,
        s,
        store,
        r,
        m,
    } = published_42(crate::PackForm::Frames {
        level: 3,
        dict_kib: 64,
    });
    let pack = m.pack_of(15).expect("pack").object.key.clone();
    let path = bucket.join(&pack);
    let good = std::fs::read(&path).expect("pack");
    let h = ledgerstore_pack::Header::parse(&good).expect("header");
    assert_eq!(h.version, 4);
    let dict = h.dict_range().expect("a dictionary");
    let mut bad = good.clone();
    bad[dict.start as usize + 9] ^= 0x5a;
    std::fs::write(&path, &bad).expect("damage");

    let rep = replica(&rt, &r, &tmp.path().join("c"), 1 << 30);
    let mut first = true;
    for seq in 10..=19 {
        for tx in &s.ledger(seq).txs {
            let h = TxHash::from_slice(&tx.hash).expect("hash");
            match Reader::get_tx(&*rep, &h) {
                Err(StoreError::RemoteDamaged { object, detail }) => {
                    assert_eq!(object, pack, "{detail}");
                    assert!(
                        detail.contains("the pack's dictionary: fails its CRC-32"),
                        "{detail}"
                    );
                    // The first lookup read it; the others are told of
                    // the backoff.
                    assert_eq!(!first, detail.contains("found 1 time(s)"), "{detail}");
                    first = false;
                }
                other => panic!("ledger {seq}: {other:?}"),
            }
        }
        match Reader::get_ledger(&*rep, seq) {
            Err(StoreError::RemoteDamaged { object, .. }) => assert_eq!(object, pack),
            other => panic!("ledger {seq}: {other:?}"),
        }
    }
    assert_same(&store, &rep, &s, 1, 9);
    assert_same(&store, &rep, &s, 20, 31);
    // A batch: its dictionary is read in the frames' phase, and it fails
    // as its first lookup in that pack would; one without that pack
    // answers.
    let hashes = |seqs: std::ops::RangeInclusive<u32>| -> Vec<TxHash> {
        seqs.flat_map(|q| s.ledger(q).txs.clone())
            .map(|tx| TxHash::from_slice(&tx.hash).expect("hash"))
            .collect()
    };
    let fresh = replica(&rt, &r, &tmp.path().join("c3"), 1 << 30);
    match Reader::batch_get_txs(&*fresh, &hashes(18..=21)) {
        Err(StoreError::RemoteDamaged { object, detail }) => {
            assert_eq!(object, pack, "{detail}");
            assert!(detail.contains("the pack's dictionary"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    let others = hashes(20..=31);
    let got = Reader::batch_get_txs(&*fresh, &others).expect("other packs");
    for (h, g) in others.iter().zip(got) {
        assert_eq!(g, store.get_tx(h).expect("store"));
    }
    std::fs::write(&path, &good).expect("repair");
    let fresh = replica(&rt, &r, &tmp.path().join("c2"), 1 << 30);
    assert_same(&store, &fresh, &s, 10, 19);
    let all = hashes(1..=31);
    let got = Reader::batch_get_txs(&*fresh, &all).expect("repaired");
    for (h, g) in all.iter().zip(got) {
        assert_eq!(g, store.get_tx(h).expect("store"));
    }
}

/// Ledgers 1..=42 of a small synthetic chain in a data dir, published in
/// `form` to a directory store, and the manifest that lists them.
struct Published {
    tmp: tempfile::TempDir,
    bucket: std::path::PathBuf,
    rt: tokio::runtime::Runtime,
    s: Synth,
    store: Arc<Ledgerstore>,
    r: Arc<Remote>,
    m: ledgerstore_pack::Manifest,
}

fn published_42(form: crate::PackForm) -> Published {
    let tmp = tempfile::tempdir().expect("tmp");
    let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let s = Synth::new(SynthConfig::small(12, 6));
    let store = open(&data);
    ingest(&store, &s, 1, 42);
    let r = remote(&bucket);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    rt.block_on(crate::publish_as(
        Arc::clone(&store),
        &r,
        &data.join("publish"),
        None,
        stop,
        form,
    ))
    .expect("publish");
    let m = rt
        .block_on(r.newest_manifest())
        .expect("read")
        .expect("published");
    Published {
        tmp,
        bucket,
        rt,
        s,
        store,
        r,
        m,
    }
}

fn damage_fails_only_what_needs_it(form: crate::PackForm) {
    let Published {
        tmp,
        bucket,
        rt,
        s,
        store,
        r,
        m,
    } = published_42(form);

    // In the pack of 10..=19, flip a byte of one body and of ledger 12's
    // record (their entries, in the first table pages, name them); in a
    // pack of frames, a byte of ledger 12's frame.
    let pack = &m.pack_of(15).expect("pack").object.key;
    let path = bucket.join(pack);
    let mut bytes = std::fs::read(&path).expect("pack");
    let h = ledgerstore_pack::Header::parse(&bytes).expect("header");
    let offset = |at: u64| {
        let at = at as usize;
        u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes")) as usize
    };
    let record = offset(h.ledger_table + 24 * 2);
    let damaged_bodies = if h.frames() {
        s.ledger(12).txs.len()
    } else {
        let body = offset(h.body_table + 16 * 7);
        bytes[body + 3] ^= 0x5a;
        1
    };
    bytes[record + 3] ^= 0x5a;
    std::fs::write(&path, &bytes).expect("damage");
    // Remove the pack of 20..=29.
    let gone = m.pack_of(25).expect("pack").object.key.clone();
    std::fs::remove_file(bucket.join(&gone)).expect("remove");

    let rep = replica(&rt, &r, &tmp.path().join("c"), 1 << 30);
    let mut damaged = 0;
    for seq in 10..=19 {
        for tx in &s.ledger(seq).txs {
            let h = TxHash::from_slice(&tx.hash).expect("hash");
            match Reader::get_tx(&*rep, &h) {
                Ok(Some(rec)) => assert_eq!(Some(rec), store.get_tx(&h).expect("store")),
                Err(StoreError::RemoteDamaged { object, detail }) => {
                    assert_eq!(&object, pack, "{detail}");
                    damaged += 1;
                }
                other => panic!("ledger {seq}: {other:?}"),
            }
        }
    }
    assert_eq!(
        damaged, damaged_bodies,
        "the flipped byte fails its body (its ledger's, in a frame), and only it"
    );
    match Reader::get_ledger(&*rep, 12) {
        Err(StoreError::RemoteDamaged { object, detail }) => {
            assert_eq!(&object, pack);
            assert!(
                detail.contains("ledger 12: ") && detail.contains("CRC-32"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    let h = TxHash::from_slice(&s.ledger(25).txs[0].hash).expect("hash");
    match Reader::get_tx(&*rep, &h) {
        Err(StoreError::RemoteDamaged { object, detail }) => {
            assert_eq!(object, gone);
            assert!(detail.contains("not found"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // Other ranges keep serving.
    assert_same(&store, &rep, &s, 1, 9);
    assert_same(&store, &rep, &s, 30, 31);
}

/// The hash lists in data dir `data`, by name.
fn hash_lists(data: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(data.join("segments"))
        .expect("segments")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hashes-"))
        .collect();
    v.sort();
    v
}

#[test]
fn evicted_ranges_leave_the_data_dir_and_are_served_through_the_published_store() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let s = Synth::new(SynthConfig::small(13, 6));
    let store = open(&data);
    ingest(&store, &s, 1, 45);
    let r = remote(&bucket);
    rt.block_on(publish(Arc::clone(&store), &r, &data.join("publish")))
        .expect("publish");
    let hash = |seq: u32, i: usize| TxHash::from_slice(&s.ledger(seq).txs[i].hash).expect("hash");
    let before: Vec<_> = (1..=45)
        .map(|seq| {
            (
                store.get_tx(&hash(seq, 2)).expect("get"),
                store.get_ledger(seq).expect("ledger"),
            )
        })
        .collect();

    // Top windows of 20 ledgers: 1..=19 and 20..=39 are whole, so no
    // merge reads their base ranges' hash lists and none is kept.
    let lists = || hash_lists(&data);
    assert_eq!(lists(), Vec::<String>::new());
    let cold = replica(&rt, &r, &tmp.path().join("c"), 1 << 30);
    let n = rt
        .block_on(crate::evict(Arc::clone(&store), &cold, 1))
        .expect("evict");
    assert_eq!(
        n, 29,
        "ledgers 1..=29 leave; the newest published range 30..=39 stays"
    );
    // The eviction wrote the evicted ranges' lists from their records
    // first: they confirm lookups once the bodies are gone.
    let evicted_lists: Vec<String> = [(1, 9), (10, 19), (20, 29)]
        .iter()
        .map(|&(a, b)| ledgerstore_segment::hashes::file_name(a, b))
        .collect();
    assert_eq!(lists(), evicted_lists);
    assert_eq!(store.evicted().map(|e| e.below), Some(30));
    assert_eq!(store.get_tx(&hash(15, 2)).expect("local"), None);
    assert_eq!(store.get_ledger(15).expect("local"), None);
    // Exact without the bodies: the hash lists stay.
    assert_eq!(
        store.get_tx_ledger(&hash(15, 2)).expect("ledger of"),
        Some(15)
    );
    let dup = s.batch(46, 1);
    let mut dup = dup;
    dup[0].txs[0].hash = s.ledger(7).txs[1].hash.clone();
    match store.ingest(&dup, Duration::ZERO) {
        Err(StoreError::HashExists { ledger, .. }) => assert_eq!(ledger, 7),
        other => panic!("a hash of an evicted range is still refused: {other:?}"),
    }

    let tiered = crate::Tiered {
        store: Arc::clone(&store),
        cold: Arc::clone(&cold),
    };
    for (seq, (tx, ledger)) in (1..=45).zip(&before) {
        assert_eq!(
            &Reader::get_tx(&tiered, &hash(seq, 2)).expect("tiered"),
            tx,
            "ledger {seq}"
        );
        assert_eq!(
            &Reader::get_ledger(&tiered, seq).expect("tiered"),
            ledger,
            "ledger {seq}"
        );
    }
    let chunk = Reader::ledger_chunk(&tiered, 27, 33, 100).expect("chunk");
    assert_eq!(
        chunk.iter().map(|l| l.seq).collect::<Vec<_>>(),
        (27..=33).collect::<Vec<_>>()
    );
    let batch =
        Reader::batch_get_txs(&tiered, &[hash(3, 0), hash(40, 1), hash(33, 4)]).expect("batch");
    assert!(batch.iter().all(Option::is_some));

    let report = store.check().expect("check");
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.evicted_below, Some(30));
    drop((tiered, store));
    let store = open(&data);
    assert_eq!(
        lists(),
        evicted_lists,
        "a writer's open keeps evicted lists"
    );
    assert_eq!(store.evicted().map(|e| e.below), Some(30));
    assert_eq!(
        store.get_tx_ledger(&hash(15, 2)).expect("after reopen"),
        Some(15)
    );
    // A backup keeps the boundary: the restored dir knows what it lacks,
    // and its first writer keeps the evicted ranges' lists (their only
    // local copy).
    let bk = tmp.path().join("bk");
    store.backup(&bk).expect("backup");
    let restored = tmp.path().join("restored");
    ledgerstore_store::restore(&bk, &restored).expect("restore");
    {
        let again = open(&restored);
        assert_eq!(again.evicted().map(|e| e.below), Some(30));
        assert_eq!(
            again.get_tx_ledger(&hash(15, 2)).expect("restored"),
            Some(15)
        );
        let r = again.check().expect("check");
        assert!(r.is_ok(), "{:?}", r.problems);
    }
    assert_eq!(hash_lists(&restored), evicted_lists);
    // A dir that lost its record (a backup from before backups copied
    // it) still keeps the lists of the ranges whose records it lacks.
    std::fs::remove_file(restored.join("segments/EVICTED")).expect("lose EVICTED");
    drop(open(&restored));
    assert_eq!(
        hash_lists(&restored),
        evicted_lists,
        "below the oldest record here"
    );
    let e = store
        .evict_below(35, "elsewhere")
        .expect_err("not a range start");
    assert!(
        e.to_string().contains("does not start a closed base range"),
        "{e}"
    );
    let e = store
        .evict_below(40, "elsewhere")
        .expect_err("another store");
    assert!(
        e.to_string()
            .contains(&format!("published at {}", bucket.display())),
        "{e}"
    );
}

/// Skeleton ledger records (v3) are published as the store holds them; a
/// replica puts each ledger back with its pack's bodies, byte for byte,
/// through every ledger read (one ledger, chunks, the iterator the query
/// APIs use).
#[test]
fn skeleton_ledgers_read_back_whole_through_a_replica() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
    std::fs::create_dir_all(&bucket).expect("bucket");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let s = Synth::new(SynthConfig::small(11, 8));
    let store = open(&data);
    for seq in (1..=25).step_by(5) {
        store
            .ingest(&s.cut_batch(seq, 5), Duration::ZERO)
            .expect("ingest");
    }
    store.wait_for_segments().expect("segments");
    let r = remote(&bucket);
    let published = rt
        .block_on(publish(Arc::clone(&store), &r, &data.join("publish")))
        .expect("publish");
    assert_eq!(published.mark, Some(19));
    // A cold replica, then the same one warm.
    let rep = replica(&rt, &r, &tmp.path().join("c"), 1 << 30);
    for _ in 0..2 {
        for seq in 1..=19 {
            let want = s.cut_ledger(seq);
            let got = Reader::get_ledger(&*rep, seq)
                .expect("replica ledger")
                .expect("published");
            assert_eq!(got.raw, want.raw, "ledger {seq}");
            assert_eq!(Some(&got), store.get_ledger(seq).expect("store").as_ref());
            assert_head(&*rep, &got);
        }
    }
    let chunk = Reader::ledger_chunk(&*rep, 3, 19, 7).expect("chunk");
    assert_eq!(chunk.len(), 7);
    for l in &chunk {
        assert_eq!(l.raw, s.cut_ledger(l.seq).raw);
    }
    let all: Vec<_> = ledgerstore_store::ledger_iter(&*rep, 1, 19, 4)
        .collect::<Result<_, _>>()
        .expect("iter");
    assert_eq!(all.len(), 19);
    for l in &all {
        assert_eq!(l.raw, s.cut_ledger(l.seq).raw, "ledger {}", l.seq);
    }
    // A writer that evicted its oldest published range reads those
    // ledgers through the packs, the rest locally: all whole.
    let n = rt
        .block_on(crate::evict(Arc::clone(&store), &rep, 1))
        .expect("evict");
    assert_eq!(n, 9);
    assert_eq!(store.get_ledger(5).expect("local"), None);
    let tiered = crate::Tiered {
        store: Arc::clone(&store),
        cold: Arc::clone(&rep),
    };
    for seq in 1..=25 {
        let got = Reader::get_ledger(&tiered, seq)
            .expect("tiered")
            .expect("held");
        assert_eq!(got.raw, s.cut_ledger(seq).raw, "ledger {seq}");
        assert_head(&tiered, &got);
    }
    let chunk = Reader::ledger_chunk(&tiered, 5, 15, 100).expect("chunk");
    assert_eq!(chunk.len(), 11);
    for l in &chunk {
        assert_eq!(l.raw, s.cut_ledger(l.seq).raw, "ledger {}", l.seq);
    }
    // Heads across the boundary: the evicted ones from the packs.
    let heads = Reader::ledger_head_chunk(&tiered, 5, 15, 100).expect("heads");
    let seqs: Vec<u32> = heads.iter().map(|h| h.seq).collect();
    assert_eq!(seqs, (5..=15).collect::<Vec<_>>());
    for (h, l) in heads.iter().zip(&chunk) {
        let fields = (h.close_time, &h.tx_hashes, &h.aliases);
        assert_eq!(fields, (l.close_time, &l.tx_hashes, &l.aliases));
    }
    let report = store.check().expect("check");
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.reassembled, 16, "the local ledgers 10..=25");
}
