//! Faults of the published tier, each against a real `indexed` store and
//! object_store's local-filesystem store behind [`Faulty`], a wrapper that
//! counts GETs and injects the faults a real S3 client meets. Damage is
//! made in the bucket's files, as a bad disk or a bad writer would.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Layout, TxHash};
use ledgerstore_pack::manifest::{dict_key, pack_key, segment_key};
use ledgerstore_pack::{Header, Manifest, Object};
use ledgerstore_store::{
    DictOptions, IndexedOptions, Ledgerstore, Reader, StoreError, StoreOptions,
};
use ledgerstore_synth::{Synth, SynthConfig};
use object_store::local::LocalFileSystem;

use crate::faulty::Faulty;
use crate::{ColdError, DiskCache, PackForm, Remote, Replica, publish, publish_as};

/// Where the tests say the store is: never to be shown to a client.
const LOCATION: &str = "s3://secret-bucket/prefix";

fn open(dir: &Path, dict_bytes: usize) -> Arc<Ledgerstore> {
    let opts = StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: 10,
            merge_fanout: 2,
            merge_levels: 1,
            dict: Some(DictOptions {
                train_after_txs: 60,
                samples: 60,
                max_bytes: dict_bytes,
                retrain_every_txs: 0,
            }),
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    };
    Arc::new(Ledgerstore::open(dir, opts, &Backends::for_tests()).expect("open store"))
}

/// Ledgers `first..=last`, whole or (`cut`) as skeletons and bodies.
fn ingest(store: &Ledgerstore, s: &Synth, first: u32, last: u32, cut: bool) {
    for seq in (first..=last).step_by(5) {
        let n = 5.min(last - seq + 1);
        let batch = if cut {
            s.cut_batch(seq, n)
        } else {
            s.batch(seq, n)
        };
        store.ingest(&batch, Duration::ZERO).expect("ingest");
    }
    store.wait_for_segments().expect("segments");
}

/// A writer's store, its bucket behind [`Faulty`], and a runtime.
struct World {
    tmp: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    s: Synth,
    store: Arc<Ledgerstore>,
    bucket: PathBuf,
    faulty: Arc<Faulty>,
    remote: Arc<Remote>,
}

impl World {
    /// Ledgers `1..=last` ingested and published.
    fn new(seed: u64, last: u32) -> Self {
        Self::with(seed, last, false)
    }

    /// [`Self::new`], the ledgers cut (skeletons and bodies) when `cut`.
    fn with(seed: u64, last: u32, cut: bool) -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let bucket = tmp.path().join("bucket");
        std::fs::create_dir_all(&bucket).expect("bucket");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let s = Synth::new(SynthConfig::small(seed, 8));
        let store = open(&tmp.path().join("data"), 4 << 10);
        ingest(&store, &s, 1, last, cut);
        let fs = LocalFileSystem::new_with_prefix(&bucket).expect("local store");
        let faulty = Faulty::new(Arc::new(fs));
        let remote = Arc::new(Remote::new(faulty.clone(), LOCATION));
        let w = Self {
            tmp,
            rt,
            s,
            store,
            bucket,
            faulty,
            remote,
        };
        w.publish().expect("publish");
        w
    }

    /// A round in pack version 2, whose layout (a body table, a frame a
    /// body) these faults are written against; packs of ledger frames
    /// have their own in `tests.rs` and `batch_tests.rs`.
    fn publish(&self) -> Result<crate::PublishReport, ColdError> {
        let work = self.tmp.path().join("work");
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        self.rt.block_on(publish_as(
            Arc::clone(&self.store),
            &self.remote,
            &work,
            None,
            stop,
            PackForm::Entries,
        ))
    }

    fn manifest(&self) -> Manifest {
        self.rt
            .block_on(self.remote.newest_manifest())
            .expect("read")
            .expect("published")
    }

    fn replica(&self, name: &str, bytes: u64) -> Arc<Replica> {
        let cache = DiskCache::open(&self.tmp.path().join(name), bytes).expect("cache");
        let rep = Replica::new(Arc::clone(&self.remote), cache, self.rt.handle().clone());
        self.rt.block_on(rep.refresh()).expect("refresh");
        rep
    }

    fn hash(&self, seq: u32, i: usize) -> TxHash {
        TxHash::from_slice(&self.s.ledger(seq).txs[i].hash).expect("hash")
    }

    /// Puts `bytes` in the bucket under `key`.
    fn put(&self, key: &str, bytes: &[u8]) -> Object {
        let path = self.bucket.join(key);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dir");
        std::fs::write(&path, bytes).expect("put");
        Object {
            key: key.into(),
            size: bytes.len() as u64,
            sha256: ledgerstore_pack::sha256(bytes),
        }
    }

    /// Publishes the newest manifest, edited, as the next version.
    fn republish(&self, edit: impl FnOnce(&mut Manifest)) -> Manifest {
        let mut m = self.manifest();
        m.version += 1;
        edit(&mut m);
        m.validate().expect("valid");
        self.rt
            .block_on(self.remote.create_manifest(&m))
            .expect("create");
        m
    }

    /// Replaces the pack holding `seq` with `bytes` in a new manifest.
    fn replace_pack(&self, seq: u32, bytes: &[u8]) -> String {
        let h = Header::parse(bytes).expect("header");
        let key = pack_key(h.first, h.last, &ledgerstore_pack::sha256(bytes));
        let object = self.put(&key, bytes);
        self.republish(|m| {
            let p = m.packs.iter_mut().find(|p| p.first <= seq && seq <= p.last);
            let p = p.expect("pack");
            p.object = object;
            p.bodies = h.bodies;
        });
        key
    }

    fn pack_bytes(&self, seq: u32) -> (String, Vec<u8>) {
        let m = self.manifest();
        let key = m.pack_of(seq).expect("pack").object.key.clone();
        let bytes = std::fs::read(self.bucket.join(&key)).expect("pack");
        (key, bytes)
    }
}

fn damaged(r: Result<impl std::fmt::Debug, StoreError>) -> (String, String) {
    match r {
        Err(StoreError::RemoteDamaged { object, detail }) => (object, detail),
        other => panic!("expected DATA_LOSS, got {other:?}"),
    }
}

// ---- item 7: pack tables are checked -------------------------------------

/// Ledger 12 is entry 2 of the pack of 10..=19 (the same place in pack
/// versions 1 and 2: the first table page).
fn ledger_12_field(bytes: &mut [u8], at: u64, value: &[u8]) {
    let h = Header::parse(bytes).expect("header");
    let start = (h.ledger_table + 24 * 2 + at) as usize;
    bytes[start..start + value.len()].copy_from_slice(value);
}

#[test]
fn damaged_ledger_table_fields_are_data_loss_naming_the_pack_never_not_found() {
    let w = World::new(21, 42);
    let (key, good) = w.pack_bytes(12);
    let n = w.s.ledger(12).txs.len();
    // Bodies 0: every transaction of ledger 12 would be a miss.
    let mut bad = good.clone();
    ledger_12_field(&mut bad, 20, &0u32.to_be_bytes());
    std::fs::write(w.bucket.join(&key), &bad).expect("damage");
    let rep = w.replica("c0", 1 << 30);
    for i in 0..n {
        let (object, detail) = damaged(Reader::get_tx(&*rep, &w.hash(12, i)));
        assert_eq!(object, key, "{detail}");
        assert!(detail.contains("ledgers 10..=19"), "{detail}");
    }
    // The first body far past the table: no panic, no read past the pack.
    let mut bad = good.clone();
    ledger_12_field(&mut bad, 16, &0xFFFF_FFF0u32.to_be_bytes());
    std::fs::write(w.bucket.join(&key), &bad).expect("damage");
    let rep = w.replica("c1", 1 << 30);
    let (object, _) = damaged(Reader::get_tx(&*rep, &w.hash(12, 0)));
    assert_eq!(object, key);
    // A record length of most of the pack: refused before it is read.
    let mut bad = good.clone();
    ledger_12_field(&mut bad, 8, &((good.len() as u32) / 2).to_be_bytes());
    std::fs::write(w.bucket.join(&key), &bad).expect("damage");
    let rep = w.replica("c2", 1 << 30);
    let (_, before) = w.remote.reads();
    let (object, _) = damaged(Reader::get_ledger(&*rep, 12));
    assert_eq!(object, key);
    let (_, after) = w.remote.reads();
    assert!(
        after - before < 16 << 10,
        "{} bytes read for a damaged entry of a {}-byte pack",
        after - before,
        good.len()
    );
    std::fs::write(w.bucket.join(&key), &good).expect("restore");
    let rep = w.replica("c3", 1 << 30);
    assert_eq!(
        Reader::get_ledger(&*rep, 12).expect("intact"),
        w.store.get_ledger(12).expect("store")
    );
}

/// The bytes of body `i` of ledger `seq` in a version-2 pack.
fn body_bytes(pack: &[u8], seq: u32, i: u32) -> std::ops::Range<usize> {
    let h = Header::parse(pack).expect("header");
    let at = |r: std::ops::Range<u64>| &pack[r.start as usize..r.end as usize];
    let (page, _) = h.ledger_page_of(seq).expect("ledger page");
    let le = h
        .ledger_entry(at(h.ledger_page(page).expect("page")), seq)
        .expect("ledger entry");
    let (page, _) = h.body_page_of(&le, i).expect("body page");
    let e = h
        .body_entry(at(h.body_page(page).expect("page")), &le, i)
        .expect("body entry");
    let r = h.data_range(&e).expect("data");
    r.start as usize..r.end as usize
}

#[test]
fn a_damaged_body_fails_its_ledger_but_not_the_ledgers_head() {
    let w = World::with(23, 42, true);
    let (key, mut bad) = w.pack_bytes(12);
    let r = body_bytes(&bad, 12, 1);
    bad[r.start + r.len() / 2] ^= 0xFF;
    std::fs::write(w.bucket.join(&key), &bad).expect("damage");
    let rep = w.replica("c", 1 << 30);
    let (object, detail) = damaged(Reader::get_ledger(&*rep, 12));
    assert_eq!(object, key, "{detail}");
    assert!(detail.contains("ledger 12 bodies: body 1"), "{detail}");
    damaged(Reader::ledger_chunk(&*rep, 11, 13, 10));
    // The heads read the ledgers' records alone, never their bodies.
    let want: Vec<_> = (11..=13)
        .map(|seq| w.store.ledger_head(seq).expect("store").expect("stored"))
        .collect();
    let head = Reader::ledger_head(&*rep, 12).expect("head");
    assert_eq!(head.as_ref(), Some(&want[1]));
    let heads = Reader::ledger_head_chunk(&*rep, 11, 13, 10).expect("heads");
    assert_eq!(heads, want);
    // So does a writer that evicted the range: from the pack's record.
    let evicted = w.rt.block_on(crate::evict(Arc::clone(&w.store), &rep, 1));
    assert!(evicted.expect("evict") >= 13);
    assert_eq!(w.store.ledger_head(12).expect("local"), None);
    let tiered = crate::Tiered {
        store: Arc::clone(&w.store),
        cold: Arc::clone(&rep),
    };
    damaged(Reader::get_ledger(&tiered, 12));
    let head = Reader::ledger_head(&tiered, 12).expect("head");
    assert_eq!(head.as_ref(), Some(&want[1]));
    let heads = Reader::ledger_head_chunk(&tiered, 11, 13, 10).expect("heads");
    assert_eq!(heads, want);
}

#[test]
fn a_record_stored_under_another_ledgers_entry_is_data_loss() {
    let w = World::new(22, 42);
    // The pack of 10..=19, with ledger 13's record (and bodies) in 12's
    // place: every CRC holds.
    let path = w.tmp.path().join("swapped.pack");
    let mut pw = ledgerstore_pack::PackWriter::create(&path, 10, 19).expect("create");
    for seq in 10..=19 {
        let from = if seq == 12 { 13 } else { seq };
        let (record, n) = w.store.stored_ledger(from).expect("read").expect("stored");
        let dicts = w.store.closed_ranges().expect("closed").pack_dicts;
        let bodies = w.store.stored_bodies(from, n, &dicts).expect("bodies");
        pw.push_ledger(seq, &record, &bodies).expect("push");
    }
    pw.finish().expect("finish");
    let key = w.replace_pack(12, &std::fs::read(&path).expect("pack"));
    let rep = w.replica("c", 1 << 30);
    let (object, detail) = damaged(Reader::get_ledger(&*rep, 12));
    assert_eq!(object, key);
    assert!(
        detail.contains("ledger 12: the table's entry holds ledger 13's record"),
        "{detail}"
    );
    assert_eq!(
        Reader::get_ledger(&*rep, 14).expect("others serve"),
        w.store.get_ledger(14).expect("store")
    );
}

/// The pack of 10..=19 rewritten in version 3 (ledger frames) with `edit`
/// applied to each ledger's parts, put in the manifest in place of the
/// version-2 one (a store may mix versions); its key.
fn frames_pack(w: &World, edit: impl Fn(u32, &mut ledgerstore_store::LedgerParts)) -> String {
    let path = w.tmp.path().join("frames.pack");
    let mut pw = ledgerstore_pack::PackWriter::create_frames(&path, 10, 19).expect("create");
    let dicts = w.store.closed_ranges().expect("closed").pack_dicts;
    for seq in 10..=19 {
        let mut parts = w
            .store
            .frame_ledger_parts(seq, &dicts)
            .expect("read")
            .expect("stored");
        edit(seq, &mut parts);
        let framed = ledgerstore_pack::frame_ledger(&parts.0, &parts.1, 3).expect("frame");
        pw.push_frame(seq, &framed).expect("push");
    }
    pw.finish().expect("finish");
    w.replace_pack(12, &std::fs::read(&path).expect("pack"))
}

/// A frame whose CRCs all hold, stored under another ledger's entry, is
/// DATA_LOSS for the ledger and for its transactions (whose positions
/// there hold another ledger's bodies), never a miss; a batch says so
/// as a lookup does.
#[test]
fn a_frame_stored_under_another_ledgers_entry_is_data_loss_for_its_transactions_too() {
    let w = World::new(22, 42);
    let dicts = w.store.closed_ranges().expect("closed").pack_dicts;
    let thirteen = w
        .store
        .frame_ledger_parts(13, &dicts)
        .expect("read")
        .expect("stored");
    let key = frames_pack(&w, |seq, parts| {
        if seq == 12 {
            *parts = thirteen.clone();
        }
    });
    let (object, detail) = damaged(Reader::get_ledger(&*w.replica("c", 1 << 30), 12));
    assert_eq!(object, key);
    assert!(
        detail.contains("ledger 12: the table's entry holds the frame of ledger 13"),
        "{detail}"
    );
    let tx = TxHash::from_slice(&w.s.ledger(12).txs[3].hash).expect("hash");
    let one = Reader::get_tx(&*w.replica("d", 1 << 30), &tx).map(|_| ());
    let batch = Reader::batch_get_txs(&*w.replica("e", 1 << 30), &[tx]).map(|_| ());
    assert_eq!(format!("{batch:?}"), format!("{one:?}"));
    let (object, detail) = damaged(one);
    assert_eq!(object, key);
    assert!(detail.contains("the frame of ledger 13"), "{detail}");
    assert_eq!(
        Reader::get_ledger(&*w.replica("f", 1 << 30), 14).expect("others serve"),
        w.store.get_ledger(14).expect("store")
    );
}

/// A body that does not parse, in a frame that opens and stays in
/// memory: a batch that finds the frame there fails as a lookup does,
/// naming the pack's ledgers.
#[test]
fn a_bad_body_in_a_frame_held_in_memory_fails_a_batch_as_a_lookup() {
    let w = World::new(24, 42);
    frames_pack(&w, |seq, parts| {
        if seq == 12 {
            parts.1[2].truncate(10);
        }
    });
    let tx = |i: usize| TxHash::from_slice(&w.s.ledger(12).txs[i].hash).expect("hash");
    let warm = w.replica("c", 1 << 30);
    let good = Reader::get_tx(&*warm, &tx(0))
        .expect("a good body")
        .expect("found");
    assert_eq!(Some(good), w.store.get_tx(&tx(0)).expect("store"));
    let batch = Reader::batch_get_txs(&*warm, &[tx(2)]).map(|_| ());
    let one = Reader::get_tx(&*w.replica("d", 1 << 30), &tx(2)).map(|_| ());
    assert_eq!(format!("{batch:?}"), format!("{one:?}"));
    let (_, detail) = damaged(one);
    assert!(
        detail.contains("ledgers 10..=19") && detail.contains("ledger 12 body 2"),
        "{detail}"
    );
}

/// A version-2 pack rewritten in the version-1 layout (no page CRCs), as
/// the writers before version 2 published it.
fn to_version_1(v2: &[u8]) -> Vec<u8> {
    let h = Header::parse(v2).expect("header");
    assert_eq!(h.version, 2);
    let mut out = v2[..h.ledger_table as usize].to_vec();
    let mut page = 0;
    while let Ok(r) = h.ledger_page(page) {
        out.extend_from_slice(&v2[r.start as usize..r.end as usize - 4]);
        page += 1;
    }
    let body_table = out.len() as u64;
    let mut page = 0;
    while let Ok(r) = h.body_page(page) {
        out.extend_from_slice(&v2[r.start as usize..r.end as usize - 4]);
        page += 1;
    }
    let v1 = Header {
        version: 1,
        max_entry: 0,
        body_table,
        size: out.len() as u64,
        ..h
    };
    out[..64].copy_from_slice(&v1.encode());
    out
}

#[test]
fn packs_published_in_format_version_1_still_serve_and_their_tables_are_bounded() {
    let w = World::new(23, 42);
    let (_, v2) = w.pack_bytes(15);
    let v1 = to_version_1(&v2);
    assert_eq!(Header::parse(&v1).expect("v1").version, 1);
    let key = w.replace_pack(15, &v1);
    let rep = w.replica("c0", 1 << 30);
    for seq in 10..=19 {
        assert_eq!(
            Reader::get_ledger(&*rep, seq).expect("ledger"),
            w.store.get_ledger(seq).expect("store")
        );
        for (i, _) in w.s.ledger(seq).txs.iter().enumerate() {
            let h = w.hash(seq, i);
            assert_eq!(
                Reader::get_tx(&*rep, &h).expect("tx"),
                w.store.get_tx(&h).expect("store")
            );
        }
    }
    // Without page CRCs, a first body past the body table is still
    // refused, by the header's bounds.
    let mut bad = v1.clone();
    ledger_12_field(&mut bad, 16, &0xFFFF_FFF0u32.to_be_bytes());
    std::fs::write(w.bucket.join(&key), &bad).expect("damage");
    let rep = w.replica("c1", 1 << 30);
    let (object, detail) = damaged(Reader::get_tx(&*rep, &w.hash(12, 0)));
    assert_eq!(object, key);
    assert!(detail.contains("lie outside the pack's"), "{detail}");
}

// ---- item 8: bounded reads, cache failures, what clients see -------------

#[test]
fn a_segment_longer_than_the_manifest_says_is_read_only_to_its_size() {
    let w = World::new(24, 42);
    let m = w.manifest();
    let seg = m.segments.last().expect("segment").object.clone();
    let mut bytes = std::fs::read(w.bucket.join(&seg.key)).expect("segment");
    bytes.resize(bytes.len() + (8 << 20), 0x5a);
    std::fs::write(w.bucket.join(&seg.key), &bytes).expect("grow");
    let rep = w.replica("c", 1 << 30);
    let (_, before) = w.remote.reads();
    let (object, detail) = damaged(Reader::get_tx(&*rep, &TxHash([0x42; 32])));
    assert_eq!(object, seg.key);
    assert!(
        detail.contains(&format!("more than the {} bytes", seg.size)),
        "{detail}"
    );
    let (_, after) = w.remote.reads();
    assert!(after - before < 1 << 20, "{} bytes read", after - before);
    let left: Vec<_> = std::fs::read_dir(w.tmp.path().join("c"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("part"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A sparse file: its size is what the store reports, at no disk cost.
fn sparse(path: &Path, len: u64) {
    let f = std::fs::File::create(path).expect("create");
    f.set_len(len).expect("set_len");
}

#[test]
fn oversized_manifests_and_dictionaries_are_refused_before_they_are_read() {
    let w = World::new(25, 42);
    let m = w.manifest();
    let d = m.dicts.first().expect("a dictionary").object.clone();
    // A dictionary object larger than the manifest lists.
    sparse(&w.bucket.join(&d.key), 100 << 20);
    let cache = DiskCache::open(&w.tmp.path().join("c"), 1 << 30).expect("cache");
    let rep = Replica::new(Arc::clone(&w.remote), cache, w.rt.handle().clone());
    let (_, before) = w.remote.reads();
    let e = w.rt.block_on(rep.refresh()).expect_err("dict").to_string();
    assert!(
        e.contains(&d.key) && e.contains("104857600 bytes or more"),
        "{e}"
    );
    // A manifest past the bound.
    let next = ledgerstore_pack::manifest::manifest_key(m.version + 1);
    sparse(&w.bucket.join(&next), crate::remote::MAX_MANIFEST_BYTES + 1);
    let e =
        w.rt.block_on(rep.refresh())
            .expect_err("manifest")
            .to_string();
    assert!(
        e.contains(&next) && e.contains("a manifest is at most"),
        "{e}"
    );
    let (_, after) = w.remote.reads();
    assert!(after - before < 1 << 20, "{} bytes read", after - before);
}

#[test]
fn a_failed_cache_write_serves_the_fetched_bytes_and_leaves_no_temp_file() {
    let w = World::new(26, 42);
    let rep = w.replica("c", 1 << 30);
    let m = w.manifest();
    let key = &m.pack_of(12).expect("pack").object.key;
    // Directories where the pieces' files go: every rename fails, even
    // for root.
    let cache = DiskCache::open(&w.tmp.path().join("probe"), 1).expect("names");
    for name in [format!("lt/{key}/0"), format!("l/{key}/12")] {
        let path = w.tmp.path().join("c").join(
            cache
                .path(&name)
                .file_name()
                .expect("name")
                .to_string_lossy()
                .as_ref(),
        );
        std::fs::create_dir_all(path.join("in-the-way")).expect("dir");
    }
    assert_eq!(
        Reader::get_ledger(&*rep, 12).expect("served from the fetched bytes"),
        w.store.get_ledger(12).expect("store")
    );
    let tmp: Vec<_> = std::fs::read_dir(w.tmp.path().join("c"))
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp"))
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
}

#[test]
fn clients_get_the_ledger_range_never_the_bucket_or_the_endpoint() {
    let w = World::new(27, 42);
    let rep = w.replica("c", 1 << 30);
    let m = w.manifest();
    let key = m.pack_of(15).expect("pack").object.key.clone();
    let endpoint = "http://10.1.2.3:9000/secret-bucket";
    w.faulty.fail_gets(
        &key,
        &format!("Error performing GET {endpoint}/prefix/{key}: connection refused"),
    );
    let e = Reader::get_ledger(&*rep, 15).expect_err("unreachable");
    assert!(matches!(e, StoreError::Remote { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        !text.contains("10.1.2.3") && !text.contains("secret-bucket"),
        "{text}"
    );
    assert!(
        text.contains("ledgers 10..=19") && text.contains(&key),
        "{text}"
    );
    let mark = Reader::mark_text(&*rep);
    assert!(!mark.contains("secret-bucket"), "{mark}");
    assert!(
        mark.contains(&format!("ledgers {}..={}", m.first, m.mark)),
        "{mark}"
    );
    // The operator still sees everything (the writer's own errors).
    let e =
        w.rt.block_on(w.remote.get_range(&key, 0..64))
            .expect_err("unreachable")
            .to_string();
    assert!(e.contains(LOCATION) && e.contains("10.1.2.3"), "{e}");
}

#[test]
fn a_retried_manifest_create_whose_first_attempt_succeeded_is_not_a_conflict() {
    let w = World::new(28, 32);
    ingest(&w.store, &w.s, 33, 45, false);
    w.faulty.create_then_refuse(true);
    let r = w.publish().expect("this writer's own manifest");
    assert_eq!(r.version, Some(2));
    assert_eq!(w.manifest().mark, 39);
    // Another writer's bytes under the same version still conflict.
    let mut other = w.manifest();
    other.writer = "another writer".into();
    let e =
        w.rt.block_on(w.remote.create_manifest(&other))
            .expect_err("conflict");
    assert!(matches!(e, ColdError::Conflict { .. }), "{e}");
}

// ---- item 5: dictionaries under inherited packs --------------------------

/// A second data dir with the same history and other dictionary bytes
/// under the same version (a rebuilt data dir).
fn rebuilt(w: &World, last: u32) -> Arc<Ledgerstore> {
    let store = open(&w.tmp.path().join("rebuilt"), 2 << 10);
    ingest(&store, &w.s, 1, last, false);
    store
}

#[test]
fn a_rebuilt_data_dirs_dictionary_is_never_published_over_the_packs_that_need_the_old_one() {
    let w = World::new(29, 45);
    let before = w.manifest();
    let b = rebuilt(&w, 62);
    let theirs = &before.dicts[0];
    let mine = b.closed_ranges().expect("closed").dicts;
    let mine = mine
        .iter()
        .find(|(v, _)| *v == theirs.version)
        .expect("the same version");
    let mine_sha = ledgerstore_pack::sha256(&mine.1);
    assert_ne!(
        mine_sha, theirs.object.sha256,
        "the rebuild trained other bytes"
    );
    let work = w.tmp.path().join("work-b");
    let e =
        w.rt.block_on(publish(Arc::clone(&b), &w.remote, &work))
            .expect_err("refused");
    let text = e.to_string();
    assert!(matches!(e, ColdError::DictReplaced { .. }), "{text}");
    assert!(
        text.contains(&format!("dictionary version {}", theirs.version))
            && text.contains(&mine_sha)
            && text.contains(&theirs.object.sha256)
            && text.contains("publish it to another location"),
        "{text}"
    );
    assert_eq!(w.manifest(), before, "nothing was published");
}

#[test]
fn replicas_agree_when_a_manifest_lists_other_bytes_for_a_dictionary_version() {
    let w = World::new(30, 45);
    let following = w.replica("c0", 1 << 30);
    let h = w.hash(35, 1);
    assert_eq!(
        Reader::get_tx(&*following, &h).expect("served"),
        w.store.get_tx(&h).expect("store")
    );
    // A manifest (an older writer's) lists the rebuilt dir's bytes under
    // the same version.
    let b = rebuilt(&w, 45);
    let m = w.manifest();
    let version = m.dicts[0].version;
    let dicts = b.closed_ranges().expect("closed").dicts;
    let (_, bytes) = dicts
        .iter()
        .find(|(v, _)| *v == version)
        .expect("same version");
    let key = dict_key(version, &ledgerstore_pack::sha256(bytes));
    let object = w.put(&key, bytes);
    w.republish(|m| m.dicts[0].object = object);
    assert!(
        w.rt.block_on(following.refresh())
            .expect("follow")
            .is_some()
    );
    assert_eq!(w.faulty.gets(&key), 1, "the listed bytes are fetched");
    let fresh = w.replica("c1", 1 << 30);
    for seq in [12, 25, 35] {
        let h = w.hash(seq, 1);
        let a = format!("{:?}", Reader::get_tx(&*following, &h));
        let b = format!("{:?}", Reader::get_tx(&*fresh, &h));
        assert_eq!(a, b, "ledger {seq}: two replicas of one manifest disagree");
    }
}

// ---- item 6: the disk cache --------------------------------------------

/// Bytes the cache dir takes on disk: its files, and files unlinked but
/// still mapped by this process (their space is not freed until they are
/// unmapped).
fn disk_bytes(dir: &Path) -> u64 {
    let files: u64 = std::fs::read_dir(dir)
        .expect("ls")
        .map(|e| e.expect("entry").metadata().expect("stat"))
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    files + unlinked_mapped(dir).values().sum::<u64>()
}

/// Files under `dir` unlinked but mapped, by inode: their mapped bytes.
fn unlinked_mapped(dir: &Path) -> HashMap<String, u64> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let prefix = format!("{}/", dir.display());
    let mut out: HashMap<String, u64> = HashMap::new();
    for line in maps.lines() {
        let Some(path_at) = line.find(&prefix) else {
            continue;
        };
        if !line.ends_with(" (deleted)") {
            continue;
        }
        let f: Vec<&str> = line[..path_at].split_whitespace().collect();
        let (range, inode) = (f[0], f[4]);
        let (a, b) = range.split_once('-').expect("range");
        let len =
            u64::from_str_radix(b, 16).expect("end") - u64::from_str_radix(a, 16).expect("start");
        *out.entry(inode.to_string()).or_default() += len;
    }
    out
}

/// Files under `dir` this process maps (deleted or not).
fn mapped_names(dir: &Path) -> HashSet<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let prefix = format!("{}/", dir.display());
    maps.lines()
        .filter_map(|l| l.find(&prefix).map(|at| &l[at + prefix.len()..]))
        .map(|n| n.trim_end_matches(" (deleted)").to_string())
        .collect()
}

#[test]
fn a_replica_following_merges_keeps_its_disk_under_cache_mb() {
    // Rounds of ten ledgers: each publishes a base range, and merges
    // supersede segments.
    let w = World::new(31, 22);
    let mut rounds = vec![w.manifest().version];
    for last in [32, 42, 52, 62, 72, 82] {
        ingest(&w.store, &w.s, last - 9, last, false);
        rounds.push(
            w.publish()
                .expect("publish")
                .version
                .expect("a new manifest"),
        );
    }
    let manifests: Vec<Manifest> = rounds
        .iter()
        .map(|v| w.rt.block_on(w.remote.manifest(*v)).expect("manifest"))
        .collect();
    let seg_bytes = |m: &Manifest| m.segments.iter().map(|s| s.object.size).sum::<u64>();
    let widest = manifests.iter().map(seg_bytes).max().expect("rounds");
    let all: HashMap<&str, u64> = manifests
        .iter()
        .flat_map(|m| &m.segments)
        .map(|s| (s.object.key.as_str(), s.object.size))
        .collect();
    let history: u64 = all.values().sum();
    // Each manifest's segments fit the segment budget (3/4 of the
    // bound); the history of them does not.
    let limit = (widest + widest / 10) * 4 / 3 + 4096;
    assert!(history > limit, "history {history} within {limit}");

    let dir = w.tmp.path().join("c");
    let cache = DiskCache::open(&dir, limit).expect("cache");
    let rep = Replica::new(Arc::clone(&w.remote), cache, w.rt.handle().clone());
    for m in &manifests {
        w.faulty.show_manifests_up_to(Some(m.version));
        w.rt.block_on(rep.refresh()).expect("follow");
        // A miss probes every segment; a page of ledgers fills pieces.
        assert_eq!(
            Reader::get_tx(&*rep, &TxHash([0x42; 32])).expect("miss"),
            None
        );
        Reader::ledger_chunk(&*rep, m.first, m.mark, 1000).expect("ledgers");
        let used = disk_bytes(&dir);
        assert!(
            used <= limit,
            "manifest {}: {used} bytes on disk, cache_mb is {limit} bytes (unlinked but \
             mapped: {:?})",
            m.version,
            unlinked_mapped(&dir)
        );
        // Only the served manifest's segments stay mapped.
        let live: HashSet<String> = m
            .segments
            .iter()
            .map(|s| format!("seg/{}", s.object.key).replace('/', "~"))
            .collect();
        let mapped = mapped_names(&dir);
        assert!(
            mapped.is_subset(&live),
            "{mapped:?} mapped, {live:?} served"
        );
    }
}

#[test]
fn paging_through_ledgers_never_evicts_a_segment() {
    let w = World::new(32, 62);
    let m = w.manifest();
    let segs: u64 = m.segments.iter().map(|s| s.object.size).sum();
    let limit = segs * 2;
    let packs: u64 = m.packs.iter().map(|p| p.object.size).sum();
    assert!(
        packs > limit,
        "the ledgers ({packs} bytes) overflow the cache ({limit})"
    );
    let rep = w.replica("c", limit);
    let miss = TxHash([0x42; 32]);
    assert_eq!(Reader::get_tx(&*rep, &miss).expect("miss"), None);
    let fetched = w.faulty.gets("segments/");
    assert_eq!(fetched, m.segments.len() as u64);
    for from in (m.first..=m.mark).step_by(10) {
        Reader::ledger_chunk(&*rep, from, from + 9, 10).expect("page");
        assert_eq!(Reader::get_tx(&*rep, &miss).expect("miss"), None);
    }
    assert_eq!(
        w.faulty.gets("segments/"),
        fetched,
        "a segment was fetched again"
    );
    assert!(rep.cache().evictions > 0, "the pages were evicted instead");
}

#[test]
fn a_damaged_segment_is_fetched_once_per_backoff_and_leaves_no_file() {
    let w = World::new(33, 42);
    let m = w.manifest();
    let seg = m.segments.last().expect("segment").clone();
    let path = w.bucket.join(&seg.object.key);
    let good = std::fs::read(&path).expect("segment");
    let mut bad = good.clone();
    bad[100] ^= 0x5a;
    std::fs::write(&path, &bad).expect("damage");
    let rep = w.replica("c0", 1 << 30);
    for _ in 0..5 {
        let (object, detail) = damaged(Reader::get_tx(&*rep, &TxHash([0x42; 32])));
        assert_eq!(object, seg.object.key);
        assert!(detail.contains("SHA-256"), "{detail}");
    }
    assert_eq!(
        w.faulty.gets(&seg.object.key),
        1,
        "fetched once per backoff"
    );
    // Other ranges keep answering.
    let h = w.hash(5, 0);
    assert_eq!(
        Reader::get_tx(&*rep, &h).expect("served"),
        w.store.get_tx(&h).expect("store")
    );

    // Bytes that match the manifest but are no segment: the file is
    // deleted, not left in the cache dir untracked.
    let junk = vec![0x33u8; 4096];
    let key = segment_key(seg.first, seg.last, &ledgerstore_pack::sha256(&junk));
    let object = w.put(&key, &junk);
    w.republish(|m| m.segments.last_mut().expect("segment").object = object);
    let rep = w.replica("c1", 1 << 30);
    let (object, _) = damaged(Reader::get_tx(&*rep, &TxHash([0x42; 32])));
    assert_eq!(object, key);
    let f = rep.cache();
    let on_disk = disk_bytes(&w.tmp.path().join("c1"));
    let marker = std::fs::metadata(w.tmp.path().join("c1/.ledgerstore-cache"))
        .expect("marker")
        .len();
    assert_eq!(
        on_disk - marker,
        f.bytes,
        "an untracked file in the cache dir"
    );
}
