//! A writer that evicts published ranges ([`Tiered`]) on a real `indexed`
//! store (RocksDB + MDBX in a temp dir), its published store on
//! object_store's local filesystem behind a fault-injecting wrapper that
//! records every request, can stop answering, and can hold a GET until the
//! test releases it.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Layout, LedgerInput, TxHash};
use ledgerstore_pack::Manifest;
use ledgerstore_store::{
    DictOptions, EvictStep, IndexedOptions, Ledgerstore, OldestLedger, Reader, StoreError,
    StoreOptions,
};
use ledgerstore_synth::{Synth, SynthConfig};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjPath;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};
use tokio::sync::oneshot;

use crate::{DiskCache, Remote, Replica, Tiered, publish};

/// One request the object store received.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    op: &'static str,
    key: String,
    ranged: bool,
}

/// A GET held until the test releases it.
struct Gate {
    reached: oneshot::Sender<()>,
    release: oneshot::Receiver<()>,
}

#[derive(Default)]
struct Faults {
    log: Mutex<Vec<Request>>,
    down: AtomicBool,
    gate: Mutex<Option<Gate>>,
}

impl Faults {
    fn record(&self, op: &'static str, key: &ObjPath, ranged: bool) -> object_store::Result<()> {
        self.log.lock().expect("log").push(Request {
            op,
            key: key.to_string(),
            ranged,
        });
        if self.down.load(Ordering::SeqCst) {
            return Err(object_store::Error::Generic {
                store: "faulty",
                source: "connection refused (the test stopped the object store)".into(),
            });
        }
        Ok(())
    }

    fn take_log(&self) -> Vec<Request> {
        std::mem::take(&mut *self.log.lock().expect("log"))
    }

    /// Holds the next GET: returns when it is reached, and a sender that
    /// releases it.
    fn arm(&self) -> (oneshot::Receiver<()>, oneshot::Sender<()>) {
        let (reached, reached_rx) = oneshot::channel();
        let (release_tx, release) = oneshot::channel();
        *self.gate.lock().expect("gate") = Some(Gate { reached, release });
        (reached_rx, release_tx)
    }
}

/// The local filesystem, through [`Faults`].
struct Faulty {
    inner: LocalFileSystem,
    faults: Arc<Faults>,
}

impl fmt::Debug for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

impl fmt::Display for Faulty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

fn failed_stream(e: object_store::Error) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
    futures::stream::once(async move { Err(e) }).boxed()
}

#[async_trait]
impl ObjectStore for Faulty {
    async fn put_opts(
        &self,
        location: &ObjPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.faults.record("put", location, false)?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &ObjPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.faults.record("put", location, false)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &ObjPath,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        let op = if options.head { "head" } else { "get" };
        self.faults.record(op, location, options.range.is_some())?;
        let gate = self.faults.gate.lock().expect("gate").take();
        if let Some(g) = gate {
            let _ = g.reached.send(());
            let _ = g.release.await;
        }
        self.inner.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &ObjPath,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        self.faults.record("get", location, true)?;
        self.inner.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<ObjPath>>,
    ) -> BoxStream<'static, object_store::Result<ObjPath>> {
        self.inner.delete_stream(locations)
    }

    fn list(
        &self,
        prefix: Option<&ObjPath>,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let key = prefix.cloned().unwrap_or_default();
        match self.faults.record("list", &key, false) {
            Ok(()) => self.inner.list(prefix),
            Err(e) => failed_stream(e),
        }
    }

    fn list_with_offset(
        &self,
        prefix: Option<&ObjPath>,
        offset: &ObjPath,
    ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        let key = prefix.cloned().unwrap_or_default();
        match self.faults.record("list", &key, false) {
            Ok(()) => self.inner.list_with_offset(prefix, offset),
            Err(e) => failed_stream(e),
        }
    }

    async fn list_with_delimiter(
        &self,
        prefix: Option<&ObjPath>,
    ) -> object_store::Result<ListResult> {
        let key = prefix.cloned().unwrap_or_default();
        self.faults.record("list", &key, false)?;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &ObjPath,
        to: &ObjPath,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.faults.record("copy", from, false)?;
        self.inner.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &ObjPath,
        to: &ObjPath,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        self.faults.record("rename", from, false)?;
        self.inner.rename_opts(from, to, options).await
    }
}

/// A writer's store, its published store and the faults in front of it.
struct Fixture {
    tmp: tempfile::TempDir,
    rt: tokio::runtime::Runtime,
    synth: Synth,
    store: Arc<Ledgerstore>,
    remote: Arc<Remote>,
    faults: Arc<Faults>,
}

fn options(range_ledgers: u32, dict: bool) -> StoreOptions {
    StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers,
            merge_fanout: 2,
            merge_levels: 1,
            dict: dict.then_some(DictOptions {
                train_after_txs: 60,
                samples: 60,
                max_bytes: 4 << 10,
                retrain_every_txs: 0,
            }),
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    }
}

/// A distinct 32-byte alias (a fee bump's inner hash) for `hash`.
fn alias_of(hash: &[u8]) -> Vec<u8> {
    hash.iter().map(|b| !b).collect()
}

/// Ledger `seq`, where every third transaction has an alias.
fn ledger(s: &Synth, seq: u32) -> LedgerInput {
    let mut l = s.ledger(seq);
    for (i, t) in l.txs.iter_mut().enumerate() {
        if i % 3 == 1 {
            t.alias = Some(alias_of(&t.hash));
        }
    }
    l
}

fn h(bytes: &[u8]) -> TxHash {
    TxHash::from_slice(bytes).expect("32 bytes")
}

impl Fixture {
    /// Ledgers `1..=last` of `tx` transactions each in base ranges of
    /// `range_ledgers`, the closed ranges published.
    fn new(range_ledgers: u32, tx: u32, last: u32, dict: bool) -> Self {
        let tmp = tempfile::tempdir().expect("tmp");
        let (data, bucket) = (tmp.path().join("data"), tmp.path().join("bucket"));
        std::fs::create_dir_all(&bucket).expect("bucket");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let synth = Synth::new(SynthConfig::small(31, tx));
        let store = Arc::new(
            Ledgerstore::open(&data, options(range_ledgers, dict), &Backends::for_tests())
                .expect("open store"),
        );
        for first in (1..=last).step_by(5) {
            let batch: Vec<_> = (first..=last.min(first + 4))
                .map(|seq| ledger(&synth, seq))
                .collect();
            store.ingest(&batch, Duration::ZERO).expect("ingest");
        }
        store.wait_for_segments().expect("segments");
        let faults = Arc::new(Faults::default());
        let fs = Faulty {
            inner: LocalFileSystem::new_with_prefix(&bucket).expect("local store"),
            faults: Arc::clone(&faults),
        };
        let remote = Arc::new(Remote::new(Arc::new(fs), bucket.display().to_string()));
        rt.block_on(publish(Arc::clone(&store), &remote, &data.join("publish")))
            .expect("publish");
        Self {
            tmp,
            rt,
            synth,
            store,
            remote,
            faults,
        }
    }

    /// Closes the store and opens its data dir again (range 10, no
    /// dictionary): the temp dir and the reopened store.
    fn reopen(self) -> (tempfile::TempDir, Ledgerstore) {
        let Fixture { tmp, store, .. } = self;
        drop(store);
        let store = Ledgerstore::open(
            &tmp.path().join("data"),
            options(10, false),
            &Backends::for_tests(),
        )
        .expect("reopen");
        (tmp, store)
    }

    /// A replica of the published store with a fresh cache of `bytes`,
    /// its manifest read if the store answers.
    fn replica(&self, name: &str, bytes: u64) -> Arc<Replica> {
        let cache = DiskCache::open(&self.tmp.path().join(name), bytes).expect("cache");
        let rep = Replica::new(Arc::clone(&self.remote), cache, self.rt.handle().clone());
        let _ = self.rt.block_on(rep.refresh());
        rep
    }

    fn tiered(&self, cold: &Arc<Replica>) -> Arc<Tiered> {
        Arc::new(Tiered {
            store: Arc::clone(&self.store),
            cold: Arc::clone(cold),
        })
    }

    fn evict_below(&self, below: u32) {
        self.store
            .evict_below(below, self.remote.location())
            .expect("evict");
    }

    fn tx(&self, seq: u32, i: usize) -> TxHash {
        h(&self.synth.ledger(seq).txs[i].hash)
    }

    fn inner(&self, seq: u32, i: usize) -> TxHash {
        h(&alias_of(&self.synth.ledger(seq).txs[i].hash))
    }

    fn manifest(&self) -> Manifest {
        self.rt
            .block_on(self.remote.newest_manifest())
            .expect("read")
            .expect("published")
    }
}

/// A hash that is stored nowhere.
fn absent(n: u8) -> TxHash {
    TxHash([n; 32])
}

fn seqs(chunk: &[ledgerstore_db_api::LedgerRecord]) -> Vec<u32> {
    chunk.iter().map(|l| l.seq).collect()
}

#[test]
fn an_evicting_writer_resolves_hashes_locally_and_fetches_only_a_hits_pack_ranges() {
    let f = Fixture::new(10, 6, 45, true);
    let before: Vec<_> = [(15, 2), (3, 1), (22, 4), (40, 1)]
        .iter()
        .map(|&(seq, i)| {
            let hash = f.tx(seq, i);
            (hash, f.store.get_tx(&hash).expect("get").expect("stored"))
        })
        .collect();
    let inner = f.inner(15, 1);
    let want_inner = f.store.get_tx(&inner).expect("get").expect("alias");
    assert_eq!(want_inner.index, 1);

    // A cache far smaller than the segments, as when the index outgrows
    // replica.cache_mb.
    let cold = f.replica("cache", 4 << 10);
    f.evict_below(30);
    let tiered = f.tiered(&cold);
    let m = f.manifest();
    let packs: Vec<&str> = m.packs.iter().map(|p| p.object.key.as_str()).collect();
    f.faults.take_log();

    // Hashes that exist nowhere: no request at all, every time.
    for n in 0..20 {
        assert_eq!(Reader::get_tx(&*tiered, &absent(n)).expect("absent"), None);
    }
    let batch = Reader::batch_get_txs(&*tiered, &[absent(1), absent(2)]).expect("batch");
    assert_eq!(batch, vec![None, None]);
    assert_eq!(
        Reader::get_tx_ledger(&*tiered, &absent(3)).expect("ledger"),
        None
    );
    assert_eq!(
        f.faults.take_log(),
        Vec::<Request>::new(),
        "absent hashes cost no request"
    );

    // Hits in evicted ranges (a transaction, a fee bump's inner hash, in
    // a batch with a local one and an absent one): pack ranges only.
    for (hash, want) in &before {
        assert_eq!(
            Reader::get_tx(&*tiered, hash).expect("hit").as_ref(),
            Some(want)
        );
    }
    assert_eq!(
        Reader::get_tx(&*tiered, &inner).expect("inner hash"),
        Some(want_inner.clone())
    );
    let got = Reader::batch_get_txs(
        &*tiered,
        &[before[1].0, inner, absent(9), before[3].0, before[2].0],
    )
    .expect("batch");
    assert_eq!(
        got,
        vec![
            Some(before[1].1.clone()),
            Some(want_inner),
            None,
            Some(before[3].1.clone()),
            Some(before[2].1.clone()),
        ]
    );
    let log = f.faults.take_log();
    assert!(!log.is_empty(), "evicted bodies are read from the packs");
    for r in &log {
        assert!(
            r.op == "get" && r.ranged && packs.contains(&r.key.as_str()),
            "only ranged reads of packs, never a segment: {r:?} (all: {log:?})"
        );
    }
}

#[test]
fn without_a_manifest_evicted_reads_are_unavailable_never_empty() {
    let f = Fixture::new(10, 6, 45, true);
    f.evict_below(30);
    // The object store stops answering before the writer reads a manifest.
    f.faults.down.store(true, Ordering::SeqCst);
    let cold = f.replica("cache", 1 << 30);
    assert!(cold.manifest().is_none());
    let tiered = f.tiered(&cold);

    let unavailable = |r: Result<_, StoreError>, what: &str| match r {
        Err(e @ StoreError::Unavailable { .. }) => {
            assert!(e.to_string().contains(what), "{e}");
        }
        other => panic!("{what}: want UNAVAILABLE, got {other:?}"),
    };
    unavailable(
        Reader::get_tx(&*tiered, &f.tx(15, 2)).map(|_| ()),
        "(ledger 15) left this data dir",
    );
    unavailable(
        Reader::get_tx(&*tiered, &f.inner(15, 1)).map(|_| ()),
        "(ledger 15)",
    );
    unavailable(
        Reader::batch_get_txs(&*tiered, &[f.tx(40, 0), f.tx(3, 0)]).map(|_| ()),
        "(ledger 3)",
    );
    unavailable(Reader::get_ledger(&*tiered, 15).map(|_| ()), "ledger 15 ");
    unavailable(Reader::ledger_head(&*tiered, 15).map(|_| ()), "ledger 15 ");
    unavailable(
        Reader::ledger_chunk(&*tiered, 25, 35, 100).map(|_| ()),
        "ledgers 25..=29",
    );
    unavailable(
        Reader::ledger_head_chunk(&*tiered, 25, 35, 100).map(|_| ()),
        "ledgers 25..=29",
    );
    let streamed: Result<Vec<_>, _> = ledgerstore_store::ledger_iter(&*tiered, 1, 45, 4).collect();
    unavailable(streamed.map(|_| ()), "ledgers 1..=29");

    // What is local, or exists nowhere, still answers.
    f.faults.take_log();
    assert_eq!(Reader::get_tx(&*tiered, &absent(7)).expect("absent"), None);
    let local = Reader::get_tx(&*tiered, &f.tx(40, 0)).expect("local");
    assert_eq!(local.map(|r| r.ledger_seq), Some(40));
    assert_eq!(
        Reader::get_tx_ledger(&*tiered, &f.tx(15, 2)).expect("exact locally"),
        Some(15)
    );
    assert_eq!(
        seqs(&Reader::ledger_chunk(&*tiered, 30, 35, 100).expect("local chunk")),
        (30..=35).collect::<Vec<_>>()
    );
    assert_eq!(
        Reader::get_ledger(&*tiered, 0).expect("before the first"),
        None
    );
    assert_eq!(f.faults.take_log(), Vec::<Request>::new());

    // Once the store answers and the manifest is read, they serve.
    f.faults.down.store(false, Ordering::SeqCst);
    f.rt.block_on(cold.refresh()).expect("refresh");
    let got = Reader::get_tx(&*tiered, &f.tx(15, 2)).expect("served");
    assert_eq!(got.map(|r| r.ledger_seq), Some(15));
    assert_eq!(
        seqs(&Reader::ledger_chunk(&*tiered, 25, 35, 100).expect("chunk")),
        (25..=35).collect::<Vec<_>>()
    );
}

#[test]
fn a_chunk_read_while_an_eviction_moves_the_boundary_skips_no_ledger() {
    for heads in [false, true] {
        let f = Fixture::new(10, 4, 45, false);
        f.evict_below(10);
        let cold = f.replica("cache", 1 << 30);
        let tiered = f.tiered(&cold);

        // The chunk reads 5..=9 from the published store with the
        // boundary at 10; its first GET is held while 10..=29 are evicted.
        let (reached, release) = f.faults.arm();
        let reader = {
            let t = Arc::clone(&tiered);
            std::thread::spawn(move || match heads {
                false => Reader::ledger_chunk(&*t, 5, 35, 100).map(|c| seqs(&c)),
                true => Reader::ledger_head_chunk(&*t, 5, 35, 100)
                    .map(|c| c.iter().map(|h| h.seq).collect()),
            })
        };
        reached.blocking_recv().expect("the chunk's first GET");
        f.evict_below(30);
        assert_eq!(f.store.get_ledger(20).expect("local"), None);
        assert_eq!(f.store.ledger_head(20).expect("local"), None);
        release.send(()).expect("release");
        let chunk = reader.join().expect("reader").expect("chunk");
        assert_eq!(chunk, (5..=35).collect::<Vec<_>>(), "heads: {heads}");
    }
}

#[test]
fn reads_inside_a_half_done_eviction_answer_exactly() {
    // Ledgers of more bodies than one delete commit takes (1024), so the
    // eviction commits part of a ledger: the transactions go first, the
    // alias bodies (after them) stay a moment longer.
    let f = Fixture::new(2, 1030, 8, false);
    let cold = f.replica("cache", 1 << 30);
    let tiered = f.tiered(&cold);
    let want: Vec<_> = [
        f.tx(1, 5),
        f.inner(1, 1),
        f.inner(2, 1024),
        f.tx(1, 1029),
        f.tx(3, 7),
    ]
    .iter()
    .map(|hash| (*hash, f.store.get_tx(hash).expect("get").expect("stored")))
    .collect();
    let ledgers: Vec<_> = (1..=5)
        .map(|seq| f.store.get_ledger(seq).expect("ledger").expect("stored"))
        .collect();

    let check = |step: EvictStep| {
        for (hash, rec) in &want {
            let got = Reader::get_tx(&*tiered, hash);
            let ledger = Reader::get_tx_ledger(&*tiered, hash);
            let batch = Reader::batch_get_txs(&*tiered, &[*hash]);
            match (got, ledger, batch) {
                (Ok(Some(got)), Ok(Some(seq)), Ok(batch)) => {
                    assert_eq!(&got, rec, "{step:?}");
                    assert_eq!(seq, rec.ledger_seq, "{step:?}");
                    assert_eq!(batch, vec![Some(got)], "{step:?}");
                }
                other => panic!("{step:?}: {hash}: {other:?}"),
            }
        }
        let chunk = Reader::ledger_chunk(&*tiered, 1, 5, 100).expect("chunk");
        assert_eq!(chunk, ledgers, "{step:?}");
        let heads = Reader::ledger_head_chunk(&*tiered, 1, 5, 100).expect("heads");
        assert_eq!(heads.len(), ledgers.len(), "{step:?}");
        for (h, l) in heads.iter().zip(&ledgers) {
            let fields = (h.seq, h.close_time, &h.tx_hashes, &h.aliases);
            let want = (l.seq, l.close_time, &l.tx_hashes, &l.aliases);
            assert_eq!(fields, want, "{step:?}");
        }
        for l in &ledgers {
            crate::tests::assert_head(&*tiered, l);
            assert_eq!(
                Reader::get_ledger(&*tiered, l.seq)
                    .expect("ledger")
                    .as_ref(),
                Some(l),
                "{step:?}"
            );
        }
    };
    let mut seen = Vec::new();
    let mut read = |step: EvictStep| {
        let part = matches!(step, EvictStep::PartOfLedger { seq: 1 });
        if !(part || step == EvictStep::Recorded || step == (EvictStep::DeletedBelow { seq: 4 })) {
            return;
        }
        // From another thread: the evicting one may hold write
        // transactions here.
        std::thread::scope(|sc| {
            sc.spawn(|| check(step)).join().expect("reads");
        });
        seen.push(step);
    };
    let n = f
        .store
        .evict_below_with(4, f.remote.location(), &mut read)
        .expect("evict");
    assert_eq!(n, 3);
    assert_eq!(
        seen,
        vec![
            EvictStep::Recorded,
            EvictStep::PartOfLedger { seq: 1 },
            EvictStep::DeletedBelow { seq: 4 },
        ]
    );
}

/// A hash list of an evicted range is lost (deleted, or unreadable): the
/// transactions it listed still exist in the published store, whose own
/// segments find them.
#[test]
fn a_lost_hash_list_of_an_evicted_range_loses_no_transaction() {
    let f = Fixture::new(10, 6, 45, false);
    let (hash, inner) = (f.tx(15, 2), f.inner(15, 1));
    let want = f.store.get_tx(&hash).expect("get").expect("stored");
    let want_inner = f.store.get_tx(&inner).expect("get").expect("alias");
    let cold = f.replica("cache", 1 << 30);
    f.evict_below(30);
    let tiered = f.tiered(&cold);
    let list = f
        .tmp
        .path()
        .join("data/segments")
        .join(ledgerstore_segment::hashes::file_name(10, 19));
    std::fs::remove_file(&list).expect("remove the hash list");
    let r = f.store.check().expect("check");
    assert!(
        r.problems
            .iter()
            .any(|p| p.contains("ledgers 10..=19 were evicted")
                && p.contains("hashes-0000000010-0000000019.bin")
                && p.contains("is missing")),
        "check names the lost list: {:#?}",
        r.problems
    );

    assert_eq!(
        Reader::get_tx(&*tiered, &hash).expect("from the published store"),
        Some(want.clone())
    );
    assert_eq!(
        Reader::get_tx(&*tiered, &inner).expect("inner hash"),
        Some(want_inner.clone())
    );
    assert_eq!(
        Reader::batch_get_txs(&*tiered, &[hash, absent(4), inner]).expect("batch"),
        vec![Some(want), None, Some(want_inner)]
    );
    assert_eq!(
        Reader::get_tx_ledger(&*tiered, &hash).expect("ledger of"),
        Some(15)
    );
}

/// The process dies after an eviction recorded its boundary and before it
/// deleted everything below it: the next eviction deletes the rest (the
/// module's promise), so the data dir does not keep those ledgers forever.
#[test]
fn an_eviction_cut_short_is_finished_by_the_next_one() {
    let f = Fixture::new(10, 4, 45, false);
    let loc = f.remote.location().to_string();
    let hash = f.tx(5, 1);
    let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        f.store.evict_below_with(30, &loc, &mut |step| {
            assert_ne!(step, EvictStep::Recorded, "the process dies here");
        })
    }));
    assert!(crashed.is_err(), "the eviction was cut short");
    let (_tmp, store) = f.reopen();
    assert_eq!(store.evicted().map(|e| e.below), Some(30));
    assert!(store.get_ledger(5).expect("read").is_some(), "left over");

    store.evict_below(40, &loc).expect("the next eviction");
    for seq in 1..40 {
        assert_eq!(
            store.get_ledger(seq).expect("read").map(|l| l.seq),
            None,
            "ledger {seq} is still in the data dir"
        );
    }
    assert_eq!(store.get_tx(&hash).expect("read"), None, "its bodies too");
    assert!(store.get_ledger(40).expect("read").is_some());
}

/// Whether an eviction was cut short survives a reopen (looked up once,
/// from the oldest ledger still stored), and a finished one is known
/// finished.
#[test]
fn an_eviction_cut_short_is_known_after_a_reopen() {
    let f = Fixture::new(10, 4, 35, false);
    let loc = f.remote.location().to_string();
    assert!(!f.store.eviction_unfinished().expect("nothing evicted"));
    f.store
        .evict_below_until(20, &loc, &AtomicBool::new(false))
        .expect("eviction");
    assert!(!f.store.eviction_unfinished().expect("read"));
    let deleted = f
        .store
        .evict_below_until(30, &loc, &AtomicBool::new(true))
        .expect("stopped eviction");
    assert_eq!(deleted, 0);
    assert!(f.store.eviction_unfinished().expect("read"));
    let (_tmp, store) = f.reopen();
    assert_eq!(store.evicted().map(|e| e.below), Some(30));
    assert!(store.eviction_unfinished().expect("after a reopen"));
    let deleted = store
        .evict_below_until(30, &loc, &AtomicBool::new(false))
        .expect("finished");
    assert_eq!(deleted, 10);
    assert!(!store.eviction_unfinished().expect("read"));
}

/// An eviction told to stop (a daemon shutting down) records its boundary
/// and deletes no further than its current chunk; the next eviction
/// deletes the rest, and reads below the boundary meanwhile come from the
/// published store. A stop before a hash list the eviction needs is
/// written records the boundary only as far as the lists go: none here.
#[test]
fn a_stopped_eviction_records_its_boundary_and_the_next_one_deletes_the_rest() {
    // Top windows of 20: 1..=19 is whole (no lists), 20..=29 keeps its list.
    let f = Fixture::new(10, 4, 35, false);
    let loc = f.remote.location().to_string();
    assert!(!hash_list(&f, 1, 9).exists() && hash_list(&f, 20, 29).exists());
    let stop = AtomicBool::new(true);
    let deleted = f
        .store
        .evict_below_until(20, &loc, &stop)
        .expect("stopped eviction");
    assert_eq!(deleted, 0);
    assert_eq!(f.store.evicted(), None, "its lists were not written");
    assert!(!hash_list(&f, 1, 9).exists());
    let deleted = f
        .store
        .evict_below_until(20, &loc, &AtomicBool::new(false))
        .expect("eviction");
    assert_eq!(deleted, 19);
    assert!(hash_list(&f, 1, 9).exists() && hash_list(&f, 10, 19).exists());
    // The list of 20..=29 is there: the boundary is recorded, nothing
    // more is deleted.
    let deleted = f
        .store
        .evict_below_until(30, &loc, &stop)
        .expect("stopped eviction");
    assert_eq!(deleted, 0, "stopped before its first chunk");
    assert_eq!(f.store.evicted().map(|e| e.below), Some(30));
    assert!(f.store.get_ledger(25).expect("read").is_some(), "left over");
    let cold = f.replica("c", 1 << 30);
    let tiered = f.tiered(&cold);
    assert_eq!(
        Reader::get_ledger(&*tiered, 25)
            .expect("tiered")
            .map(|l| l.seq),
        Some(25)
    );
    // The next round's eviction, whose policy (keep the newest range)
    // asks for no boundary past the one recorded, finishes it.
    assert!(f.store.eviction_unfinished().expect("read"));
    let next = crate::evict_until(
        Arc::clone(&f.store),
        &cold,
        1,
        Arc::new(AtomicBool::new(false)),
    );
    let deleted = f.rt.block_on(next).expect("the next eviction");
    assert_eq!(deleted, 10, "ledgers 20..30");
    assert!(!f.store.eviction_unfinished().expect("read"));
    let again = crate::evict_until(
        Arc::clone(&f.store),
        &cold,
        1,
        Arc::new(AtomicBool::new(false)),
    );
    assert_eq!(f.rt.block_on(again).expect("nothing left"), 0);
    for seq in 1..30 {
        assert_eq!(
            f.store.get_ledger(seq).expect("read").map(|l| l.seq),
            None,
            "ledger {seq} is still in the data dir"
        );
    }
    assert_eq!(
        Reader::get_ledger(&*tiered, 25)
            .expect("tiered")
            .map(|l| l.seq),
        Some(25),
        "served from the published store"
    );
    let r = f.store.check().expect("check");
    assert!(r.is_ok(), "{:#?}", r.problems);
}

/// An eviction that cannot write a list it needs (a ledger record of that
/// range is lost) stops there, naming the range, and keeps what it did:
/// the boundary is recorded past the ranges whose lists it wrote, so the
/// next open does not delete them and the next eviction starts there.
#[test]
fn an_eviction_that_cannot_write_a_list_keeps_the_ones_it_wrote() {
    // Top windows of 20: 1..=19 and 20..=39 are whole, so no lists.
    let f = Fixture::new(10, 4, 45, false);
    let loc = f.remote.location().to_string();
    assert!(!hash_list(&f, 1, 9).exists());
    let mut w = f
        .store
        .table(ledgerstore_db_api::TableId::Ledgers)
        .begin_write()
        .expect("write");
    w.delete(&15u32.to_be_bytes()).expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");
    let e = f
        .store
        .evict_below(30, &loc)
        .expect_err("10..=19 has no list");
    let msg = e.to_string();
    assert!(msg.contains("ledgers 10..=19 cannot be evicted"), "{msg}");
    assert!(msg.contains("the record of ledger 15 is missing"), "{msg}");
    assert_eq!(f.store.evicted().map(|e| e.below), Some(10));
    assert!(hash_list(&f, 1, 9).exists() && !hash_list(&f, 10, 19).exists());
    assert!(
        f.store.get_ledger(5).expect("read").is_some(),
        "nothing deleted yet"
    );
    let (tmp, store) = f.reopen();
    assert_eq!(store.evicted().map(|e| e.below), Some(10));
    assert!(
        tmp.path()
            .join("data/segments")
            .join(ledgerstore_segment::hashes::file_name(1, 9))
            .exists(),
        "a writer's open keeps the list below the recorded boundary"
    );
    assert_eq!(store.evict_below(10, &loc).expect("the rest below 10"), 9);
    assert_eq!(store.get_ledger(5).expect("read"), None);
}

/// The hash list at `first..=last` of the fixture's data dir.
fn hash_list(f: &Fixture, first: u32, last: u32) -> std::path::PathBuf {
    f.tmp
        .path()
        .join("data/segments")
        .join(ledgerstore_segment::hashes::file_name(first, last))
}

/// A hash list of an evicted range whose bytes are damaged but which still
/// opens (same length, header intact): the body is gone, so nothing else
/// checks the hash it records. The list is checked whole before a lookup
/// trusts it; the damaged one is reported, and its transactions come from
/// the published store's segments, never a silent NOT_FOUND.
#[test]
fn a_damaged_hash_list_of_an_evicted_range_is_reported_and_loses_no_transaction() {
    let f = Fixture::new(10, 6, 45, false);
    let (hash, other) = (f.tx(15, 2), f.tx(12, 0));
    let want = f.store.get_tx(&hash).expect("get").expect("stored");
    let want_other = f.store.get_tx(&other).expect("get").expect("stored");
    let cold = f.replica("cache", 1 << 30);
    f.evict_below(30);
    let tiered = f.tiered(&cold);
    let list = hash_list(&f, 10, 19);
    let mut bytes = std::fs::read(&list).expect("read the hash list");
    let at = bytes
        .windows(32)
        .position(|w| w == hash.0)
        .expect("the list records the hash");
    bytes[at + 7] ^= 0x10;
    std::fs::write(&list, &bytes).expect("damage the hash list");

    assert_eq!(
        Reader::get_tx(&*tiered, &hash).expect("from the published store"),
        Some(want.clone()),
        "a damaged hash list must not answer NOT_FOUND"
    );
    assert_eq!(
        Reader::get_tx_ledger(&*tiered, &hash).expect("ledger of"),
        Some(15)
    );
    assert_eq!(
        Reader::batch_get_txs(&*tiered, &[other, absent(5), hash]).expect("batch"),
        vec![Some(want_other), None, Some(want)]
    );
    let damaged = f.store.damaged_hash_lists();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert_eq!((damaged[0].first, damaged[0].last), (10, 19));
    assert!(damaged[0].detail.contains("checksum"), "{damaged:?}");

    // The intact lists still answer locally, with no request.
    f.faults.take_log();
    let kept = f.tx(25, 1);
    assert_eq!(
        Reader::get_tx_ledger(&*tiered, &kept).expect("ledger of"),
        Some(25)
    );
    assert_eq!(f.faults.take_log(), Vec::<Request>::new());
}

/// `segments/EVICTED` as a build before the `oldest` field wrote it.
fn write_old_record(tmp: &std::path::Path, below: u32, store: &str) {
    let rec = format!("{{\"below\":{below},\"store\":{store:?}}}");
    std::fs::write(tmp.join("data/segments/EVICTED"), rec).expect("old record");
}

/// The `oldest` field as `segments/EVICTED` holds it on disk.
fn recorded_oldest(tmp: &std::path::Path) -> String {
    let text = std::fs::read_to_string(tmp.join("data/segments/EVICTED")).expect("EVICTED");
    text.split_once("\"oldest\":")
        .map_or(String::new(), |(_, o)| {
            o.trim_end_matches('}').to_string() + "}"
        })
}

/// The writer's oldest ledger is evicted and its published store is down
/// at start: the oldest ledger's close time, which every Stellar RPC
/// response carries, comes from the eviction record with no request. A
/// record written before it kept that still reads, and gets it once the
/// store serves the ledger (at a read, or at the next eviction round).
#[test]
fn the_oldest_ledgers_close_time_is_served_locally_while_the_store_is_down() {
    let f = Fixture::new(10, 4, 45, false);
    let want = f
        .store
        .get_ledger(1)
        .expect("read")
        .expect("ledger 1")
        .close_time;
    f.evict_below(30);
    assert_eq!(
        f.store.evicted().and_then(|e| e.oldest),
        Some(OldestLedger {
            seq: 1,
            close_time: want
        })
    );
    f.faults.down.store(true, Ordering::SeqCst);
    let cold = f.replica("cache", 1 << 30);
    assert!(cold.manifest().is_none());
    let tiered = f.tiered(&cold);
    f.faults.take_log();
    assert_eq!(
        Reader::close_time(&*tiered, 1).expect("from EVICTED"),
        Some(want)
    );
    let newest = f
        .store
        .get_ledger(40)
        .expect("read")
        .expect("40")
        .close_time;
    assert_eq!(
        Reader::close_time(&*tiered, 40).expect("local"),
        Some(newest)
    );
    assert_eq!(f.faults.take_log(), Vec::<Request>::new(), "no request");
    // The ledger itself is still not served from nowhere.
    assert!(matches!(
        Reader::get_ledger(&*tiered, 1),
        Err(StoreError::Unavailable { .. })
    ));

    // A record without the field (an older build's), the store down: the
    // close time is unavailable, never made up.
    let Fixture {
        tmp,
        rt,
        store,
        remote,
        faults,
        ..
    } = f;
    let loc = remote.location().to_string();
    drop(tiered);
    drop(store);
    write_old_record(tmp.path(), 30, &loc);
    let store = Arc::new(
        Ledgerstore::open(
            &tmp.path().join("data"),
            options(10, false),
            &Backends::for_tests(),
        )
        .expect("reopen"),
    );
    assert_eq!(
        store.evicted().map(|e| (e.below, e.oldest)),
        Some((30, None))
    );
    let tiered = Tiered {
        store: Arc::clone(&store),
        cold: Arc::clone(&cold),
    };
    assert!(matches!(
        Reader::close_time(&tiered, 1),
        Err(StoreError::Unavailable { .. })
    ));

    // The store answers: a read derives it and records it.
    faults.down.store(false, Ordering::SeqCst);
    rt.block_on(cold.refresh()).expect("refresh");
    assert_eq!(Reader::close_time(&tiered, 1).expect("derived"), Some(want));
    assert_eq!(
        recorded_oldest(tmp.path()),
        format!("{{\"seq\":1,\"close_time\":{want}}}")
    );

    // The next eviction round fills it too, with no read before it.
    write_old_record(tmp.path(), 30, &loc);
    drop(tiered);
    drop(store);
    let store = Arc::new(
        Ledgerstore::open(
            &tmp.path().join("data"),
            options(10, false),
            &Backends::for_tests(),
        )
        .expect("reopen"),
    );
    rt.block_on(crate::evict(Arc::clone(&store), &cold, 1))
        .expect("evict");
    assert_eq!(
        recorded_oldest(tmp.path()),
        format!("{{\"seq\":1,\"close_time\":{want}}}")
    );
    assert_eq!(
        store.evicted_oldest(),
        Some(OldestLedger {
            seq: 1,
            close_time: want
        })
    );
}
