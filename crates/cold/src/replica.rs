//! A stateless read replica: it follows the newest manifest of a store
//! and answers lookups for the published ranges from the objects, through
//! a bounded disk cache ([`DiskCache`]).
//!
//! A transaction lookup probes the manifest's segments newest first (each
//! segment file is fetched whole once, checked against its SHA-256, and
//! memory-mapped from the cache), then reads the candidate's body from its
//! range's pack: the ledger table page, the body table page, and the body
//! (in a pack of ledger frames, versions 3 and 4, the ledger table page and the
//! ledger's frame: `replica_frames.rs`), each one ranged GET on a miss,
//! each entry checked against its CRC-32.
//! The body records its hash, which confirms the candidate, as in the
//! writer's own store.
//!
//! A damaged or missing object fails only the lookups that need it, with
//! an error naming it and its ledgers; a lookup that finds its answer in
//! another range is answered. A segment found damaged is not fetched
//! again for a while ([`DAMAGED_FIRST`], doubling up to [`DAMAGED_MAX`]):
//! the lookups that probe it get the error it was found with.
//!
//! Segments a new manifest no longer lists (merged into a wider window)
//! are let go of at once: their mapping is dropped and their file
//! deleted, so their disk space returns (a mapped file's space is freed
//! only once it is unmapped). So are those the cache evicts.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ledgerstore_db_api::TxRecord;
use ledgerstore_db_api::{
    Decompress, DictSet, Dictionary, LedgerRecord, StoredLedger, TxBody, TxHash, TxPos,
};
use ledgerstore_pack::format::HEADER;
use ledgerstore_pack::{Header, LedgerEntry, Manifest, PackRef};
use ledgerstore_segment::Segment;
use ledgerstore_store::{LedgerHead, Reader, ReaderStatus, ReplicaStatus, StoreError, StoreResult};
use tokio::sync::watch;

use crate::cache::{CacheFigures, DiskCache, Kind};
use crate::error::{ColdError, ColdResult};
use crate::remote::{MAX_DICT_BYTES, Remote};

#[path = "replica_batch.rs"]
mod batch;
#[path = "replica_ledgers.rs"]
mod ledgers;

/// Ledger `seq`'s stored record from its bytes in pack `key` (a value of
/// either form), which must be that ledger's.
fn record_of(key: &str, seq: u32, bytes: &[u8]) -> ColdResult<StoredLedger> {
    let damaged = |e: String| ColdError::damaged(key, format!("ledger {seq}: {e}"));
    let rec = StoredLedger::decompress(bytes).map_err(|e| damaged(e.to_string()))?;
    if rec.seq != seq {
        return Err(damaged(format!(
            "the table's entry holds ledger {}'s record",
            rec.seq
        )));
    }
    Ok(rec)
}
#[path = "replica_frames.rs"]
mod frames;
#[cfg(test)]
#[path = "replica_probes.rs"]
mod probes;
#[path = "replica_segments.rs"]
mod segments;

/// The zstd level dictionaries are prepared with: a replica only
/// decompresses, so any level does.
const DICT_LEVEL: i32 = 3;
/// How long a segment found damaged is not fetched again, the first time.
pub const DAMAGED_FIRST: Duration = Duration::from_secs(30);
/// The longest wait before a damaged segment is fetched again.
pub const DAMAGED_MAX: Duration = Duration::from_secs(15 * 60);

/// The manifest a replica serves, with its dictionaries.
#[derive(Default)]
struct View {
    manifest: Option<Manifest>,
    dicts: Arc<DictSet>,
    /// SHA-256 of each dictionary held, by version.
    dict_sha256: HashMap<u32, String>,
}

/// A segment found damaged: not fetched again until `until`.
struct Damage {
    detail: String,
    failures: u32,
    until: Instant,
}

/// The cache entry of segment `key`.
fn segment_name(key: &str) -> String {
    format!("seg/{key}")
}

/// Readers of one dictionary at once: the first opens it and leaves it
/// here for the others.
type DictGate = Arc<parking_lot::Mutex<Option<Arc<ledgerstore_pack::DictReader>>>>;

/// A read replica.
pub struct Replica {
    remote: Arc<Remote>,
    cache: DiskCache,
    rt: tokio::runtime::Handle,
    view: RwLock<Arc<View>>,
    /// Pack headers by key (keys are content-addressed: never stale).
    headers: Mutex<HashMap<String, Header>>,
    /// Ledger frames decompressed, most recently used (pack versions 3
    /// and 4).
    frames: frames::Frames,
    /// Pack dictionaries, most recently used (pack version 4).
    dicts: frames::Dicts,
    /// Dictionaries being read, by name, each with the lock its readers
    /// hold and what the first of them opened: lookups that miss one at
    /// once wait for one read of it.
    dict_loading: Mutex<HashMap<String, DictGate>>,
    /// Mapped segments by key, while the cache holds their files.
    segments: Mutex<HashMap<String, Arc<Segment>>>,
    /// Held while a segment is fetched, so lookups that miss it at once
    /// wait for one download instead of each making their own.
    fetching: parking_lot::Mutex<()>,
    /// Segments found damaged, by key, and pack dictionaries, by piece
    /// name (`d/<key>`), with their backoff.
    damaged: Mutex<HashMap<String, Damage>>,
    lookups: AtomicU64,
    /// Pack dictionaries opened (read and decoded) since start.
    pack_dict_opens: AtomicU64,
    /// The forms dictionaries were cached in (bits: 1 unpacked, 2
    /// stored), so the first of each is logged once.
    dict_forms_logged: AtomicU8,
    /// [`HeldMemory::batch`].
    batch_memory: usize,
    /// GETs a batch keeps in flight (`HeldMemory::batch_gets`).
    batch_gets: usize,
    /// The most any batch held fetched at once, bytes.
    batch_peak: AtomicU64,
    /// What batches fetched in all, bytes (a piece counted each time it is
    /// fetched or read from the disk cache).
    batch_fetched: AtomicU64,
    /// The most opened frames and dictionaries a batch kept in hand, while
    /// a round's GETs ran, that the round does not read (none: each is
    /// let go of before). Counted in this crate's tests only.
    batch_carried: AtomicU64,
    /// Names downloads in progress apart (two lookups may fetch the same
    /// segment at once).
    downloads: AtomicU64,
    follow_error: Mutex<Option<String>>,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replica")
            .field("store", &self.remote.location())
            .field("cache", &self.cache)
            .finish()
    }
}

/// What a replica keeps in memory, in bytes (`[replica]
/// frame_memory_mb`, `dict_memory_mb` and `batch_memory_mb`), and the
/// GETs a batch keeps in flight (`batch_gets_in_flight`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldMemory {
    /// Opened ledger frames (pack versions 3 and 4), decompressed, the
    /// most recently used. 0 keeps none: every read opens its frame again.
    pub frames: usize,
    /// Pack dictionaries (version 4), decoded, the most recently used. 0
    /// keeps none.
    pub dicts: usize,
    /// What one batch holds fetched and not yet opened (frames and
    /// dictionaries of packs of ledger frames): a batch needing more reads
    /// them in rounds, a ledger at least a round.
    pub batch: usize,
    /// Object-store GETs one batch keeps in flight (at least 1), nearby
    /// ranges merged up to 1 MiB a GET.
    pub batch_gets: usize,
}

impl Default for HeldMemory {
    fn default() -> Self {
        Self {
            frames: frames::FRAME_MEMORY,
            dicts: frames::DICT_MEMORY,
            batch: BATCH_MEMORY,
            batch_gets: BATCH_GETS,
        }
    }
}

/// What one batch holds fetched at once by default (`replica.
/// batch_memory_mb`): as much as its GETs in flight can bring at once
/// (32 merged GETs of up to 1 MiB).
pub const BATCH_MEMORY: usize = 32 << 20;

/// Object-store GETs one batch keeps in flight by default (`replica.
/// batch_gets_in_flight`).
pub const BATCH_GETS: usize = 32;

impl Replica {
    /// A replica of `remote` with `cache` and the default [`HeldMemory`].
    /// Its blocking reads run their requests on `rt`, the runtime that
    /// must also drive [`Replica::follow`].
    pub fn new(remote: Arc<Remote>, cache: DiskCache, rt: tokio::runtime::Handle) -> Arc<Self> {
        Self::with_memory(remote, cache, rt, HeldMemory::default())
    }

    /// [`Replica::new`], keeping `held` in memory.
    pub fn with_memory(
        remote: Arc<Remote>,
        cache: DiskCache,
        rt: tokio::runtime::Handle,
        held: HeldMemory,
    ) -> Arc<Self> {
        Arc::new(Self {
            remote,
            cache,
            rt,
            view: RwLock::new(Arc::new(View::default())),
            headers: Mutex::new(HashMap::new()),
            frames: frames::Frames::new(held.frames),
            dicts: frames::Dicts::new(held.dicts),
            batch_memory: held.batch,
            batch_gets: held.batch_gets.max(1),
            batch_peak: AtomicU64::new(0),
            batch_fetched: AtomicU64::new(0),
            batch_carried: AtomicU64::new(0),
            dict_loading: Mutex::new(HashMap::new()),
            segments: Mutex::new(HashMap::new()),
            fetching: parking_lot::Mutex::new(()),
            damaged: Mutex::new(HashMap::new()),
            lookups: AtomicU64::new(0),
            pack_dict_opens: AtomicU64::new(0),
            dict_forms_logged: AtomicU8::new(0),
            downloads: AtomicU64::new(0),
            follow_error: Mutex::new(None),
        })
    }

    fn view(&self) -> Arc<View> {
        match self.view.read() {
            Ok(v) => Arc::clone(&v),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// The location it follows.
    pub fn location(&self) -> &str {
        self.remote.location()
    }

    /// Streams a published object whole into `dest`, checking the size
    /// and SHA-256 its manifest records (event files, which the replica's
    /// event index adopts; see [`Remote::download`]).
    pub async fn download(
        &self,
        key: &str,
        size: u64,
        sha256: &str,
        dest: &std::path::Path,
    ) -> ColdResult<()> {
        self.remote.download(key, size, sha256, dest).await
    }

    /// The version of the manifest served now (no copy of it).
    pub fn manifest_version(&self) -> Option<u64> {
        self.view().manifest.as_ref().map(|m| m.version)
    }

    /// The manifest served now.
    pub fn manifest(&self) -> Option<Manifest> {
        self.view().manifest.clone()
    }

    /// Loads the newest manifest if it is newer than the one served.
    /// Returns its version when it changed.
    pub async fn refresh(&self) -> ColdResult<Option<u64>> {
        let held = self.view();
        let current = held.manifest.as_ref().map(|m| m.version);
        let Some(v) = self.remote.newest(current).await? else {
            return Ok(None);
        };
        let m = self.remote.manifest(v).await?;
        let mut dicts = DictSet::default();
        let mut dict_sha256 = HashMap::new();
        for d in &m.dicts {
            dict_sha256.insert(d.version, d.object.sha256.clone());
            let same = held.dict_sha256.get(&d.version) == Some(&d.object.sha256);
            let have = held.dicts.all().find(|h| h.version() == d.version);
            if let Some(have) = have.filter(|_| same) {
                dicts.insert(Dictionary::from_bytes(
                    d.version,
                    have.bytes().to_vec(),
                    DICT_LEVEL,
                ));
                continue;
            }
            if let Some(old) = held.dict_sha256.get(&d.version) {
                tracing::warn!(
                    version = d.version,
                    held = %old,
                    listed = %d.object.sha256,
                    manifest = v,
                    "the manifest lists other bytes for a dictionary version held: fetching them \
                     (packs compressed with the other bytes will not decode)"
                );
            }
            if d.object.size > MAX_DICT_BYTES {
                return Err(ColdError::damaged(
                    &d.object.key,
                    format!(
                        "the manifest lists {} bytes; a dictionary is at most {MAX_DICT_BYTES}",
                        d.object.size
                    ),
                ));
            }
            let bytes = self
                .remote
                .get_at_most(
                    &d.object.key,
                    d.object.size,
                    "this dictionary (per the manifest)",
                )
                .await?;
            let sha = ledgerstore_pack::sha256(&bytes);
            if bytes.len() as u64 != d.object.size || sha != d.object.sha256 {
                return Err(ColdError::damaged(
                    &d.object.key,
                    format!(
                        "{} bytes with SHA-256 {sha}; the manifest records {} bytes with SHA-256 {}",
                        bytes.len(),
                        d.object.size,
                        d.object.sha256
                    ),
                ));
            }
            dicts.insert(Dictionary::from_bytes(
                d.version,
                bytes.to_vec(),
                DICT_LEVEL,
            ));
        }
        tracing::info!(version = v, mark = m.mark, "serving manifest");
        // The damage backoff outlives a manifest for what it still lists:
        // its segments, and its packs' dictionaries (by piece name).
        let live: HashSet<String> = m
            .segments
            .iter()
            .map(|s| s.object.key.clone())
            .chain(m.packs.iter().map(|p| frames::dict_name(&p.object.key)))
            .collect();
        let next = Arc::new(View {
            manifest: Some(m),
            dicts: Arc::new(dicts),
            dict_sha256,
        });
        match self.view.write() {
            Ok(mut g) => *g = next,
            Err(p) => *p.into_inner() = next,
        }
        self.release_superseded(&live);
        Ok(Some(v))
    }

    /// Lets go of the segments the served manifest no longer lists: their
    /// mappings (once the lookups using them finish) and their files.
    fn release_superseded(&self, live: &HashSet<String>) {
        let gone: Vec<String> = {
            let mut segs = self.segments.lock().unwrap_or_else(|p| p.into_inner());
            let gone: Vec<String> = segs
                .keys()
                .filter(|k| !live.contains(*k))
                .cloned()
                .collect();
            for k in &gone {
                segs.remove(k);
            }
            gone
        };
        for k in &gone {
            self.cache.remove(Kind::Segment, &segment_name(k));
        }
        self.damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| live.contains(k));
        if !gone.is_empty() {
            tracing::info!(segments = gone.len(), "released superseded segments");
        }
    }

    /// Polls for newer manifests every `poll` until `shutdown` turns true.
    /// A failed poll is logged and shown in `stats`; the manifest held
    /// keeps serving.
    pub async fn follow(self: Arc<Self>, poll: Duration, mut shutdown: watch::Receiver<bool>) {
        loop {
            let r = self.refresh().await;
            if let Ok(Some(_)) = r {
                Arc::clone(&self).prefetch();
            }
            let err = r.err().map(|e| {
                tracing::warn!(error = %e, "following the manifest failed; serving the one held");
                e.client_text()
            });
            *self.follow_error.lock().unwrap_or_else(|p| p.into_inner()) = err;
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                return;
            }
        }
    }

    /// Fetches the served manifest's segment files in the background,
    /// newest first, when they fit in the cache together, so the first
    /// lookups after a start or a new manifest do not wait for them.
    pub fn prefetch(self: Arc<Self>) {
        let Some(m) = self.manifest() else { return };
        let total: u64 = m.segments.iter().map(|s| s.object.size).sum();
        let limit = self.cache.figures().segment_limit;
        if total > limit {
            tracing::warn!(
                segments_bytes = total,
                cache_bytes = limit,
                "the segments do not fit in the cache's segment budget (3/4 of \
                 replica.cache_mb): lookups fetch them as they probe"
            );
            return;
        }
        let rt = self.rt.clone();
        rt.spawn_blocking(move || {
            for r in m.segments.iter().rev() {
                if let Err(e) = self.segment(r) {
                    tracing::warn!(error = %e, "prefetching a segment failed; lookups retry it");
                }
            }
        });
    }

    /// Cache figures.
    pub fn cache(&self) -> CacheFigures {
        self.cache.figures()
    }

    /// Runs an object-store request on the replica's runtime and waits for
    /// it (called from blocking threads only: see [`Reader::reads_may_block`]).
    /// It runs to its end whatever the read's deadline: what it fetches is
    /// cached for the lookups after it, a client's retry among them.
    fn block<T: Send + 'static>(
        &self,
        f: impl Future<Output = ColdResult<T>> + Send + 'static,
    ) -> ColdResult<T> {
        futures::executor::block_on(self.rt.spawn(f)).map_err(|e| ColdError::Task(e.to_string()))?
    }

    /// Bytes `range` of object `key`, through the cache entry `name`.
    fn piece(&self, name: String, key: &str, range: Range<u64>) -> ColdResult<Vec<u8>> {
        if let Some(b) = self.cache.get(&name) {
            return Ok(b);
        }
        let (remote, k) = (Arc::clone(&self.remote), key.to_string());
        let bytes = self.block(async move { remote.get_range(&k, range).await })?;
        if let Err(e) = self.cache.put(&name, &bytes) {
            tracing::warn!(entry = %name, error = %e, "caching a piece failed; serving it uncached");
        }
        Ok(bytes.to_vec())
    }

    /// `check`s piece `name` (fetched by [`Self::piece`]); a piece that
    /// fails its check leaves the cache, so a repaired object (same
    /// content-addressed key) is fetched again rather than failed from the
    /// cache until a restart.
    fn checked<T>(&self, name: &str, check: impl FnOnce() -> ColdResult<T>) -> ColdResult<T> {
        let r = check();
        if r.is_err() {
            self.cache.remove(Kind::Piece, name);
        }
        r
    }

    fn header(&self, p: &PackRef) -> ColdResult<Header> {
        if let Some(h) = self.known_header(&p.object.key) {
            return Ok(h);
        }
        let (remote, k) = (Arc::clone(&self.remote), p.object.key.clone());
        let bytes = self.block(async move { remote.get_range(&k, 0..HEADER).await })?;
        self.parsed_header(p, &bytes)
    }

    /// Pack `key`'s header, if it was read before.
    fn known_header(&self, key: &str) -> Option<Header> {
        self.headers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .copied()
    }

    /// Pack `p`'s header from its first [`HEADER`] bytes, checked against
    /// the manifest, and remembered.
    fn parsed_header(&self, p: &PackRef, bytes: &[u8]) -> ColdResult<Header> {
        let key = &p.object.key;
        let h = p.header(bytes).map_err(|e| ColdError::damaged(key, e))?;
        self.headers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.clone(), h);
        Ok(h)
    }

    /// Ledger `seq`'s table entry, checked against its page's CRC and the
    /// header's bounds.
    fn ledger_entry(&self, p: &PackRef, h: &Header, seq: u32) -> ColdResult<LedgerEntry> {
        let key = &p.object.key;
        let damaged =
            |e: ledgerstore_pack::PackError| ColdError::damaged(key, format!("ledger {seq}: {e}"));
        let (page, _) = h.ledger_page_of(seq).map_err(damaged)?;
        let range = h.ledger_page(page).map_err(damaged)?;
        let name = format!("lt/{key}/{page}");
        let bytes = self.piece(name.clone(), key, range)?;
        self.checked(&name, || h.ledger_entry(&bytes, seq).map_err(damaged))
    }

    /// The stored body at `pos`. A position the segment gave and the
    /// pack does not hold is damage (segments are checked whole against
    /// their SHA-256), never a miss.
    fn body(&self, m: &Manifest, pos: TxPos) -> ColdResult<Option<TxBody>> {
        let Some(p) = m.pack_of(pos.seq) else {
            return Ok(None);
        };
        self.pack_body(p, pos)
            .map(Some)
            .map_err(|e| e.for_ledgers(p.first, p.last))
    }

    fn pack_body(&self, p: &PackRef, pos: TxPos) -> ColdResult<TxBody> {
        let key = &p.object.key;
        let h = self.header(p)?;
        let le = self.ledger_entry(p, &h, pos.seq)?;
        if h.frames() {
            return self.frame_body(p, &h, &le, pos);
        }
        let damaged = |e: String| {
            ColdError::damaged(key, format!("ledger {} body {}: {e}", pos.seq, pos.index))
        };
        let (page, _) = h
            .body_page_of(&le, pos.index)
            .map_err(|e| damaged(e.to_string()))?;
        let range = h.body_page(page).map_err(|e| damaged(e.to_string()))?;
        let name = format!("bt/{key}/{page}");
        let table = self.piece(name.clone(), key, range)?;
        let e = self.checked(&name, || {
            h.body_entry(&table, &le, pos.index)
                .map_err(|e| damaged(e.to_string()))
        })?;
        let range = h.data_range(&e).map_err(|e| damaged(e.to_string()))?;
        let o = u64::from(le.first_body) + u64::from(pos.index);
        let name = format!("b/{key}/{o}");
        let bytes = self.piece(name.clone(), key, range)?;
        self.checked(&name, || {
            e.check(&bytes).map_err(|e| damaged(e.to_string()))?;
            TxBody::decompress(&bytes).map_err(|e| damaged(e.to_string()))
        })
    }

    /// The confirmed position and body of `hash`: every segment that
    /// yields a candidate, newest first. A failure is answered only if no
    /// other range confirms the hash.
    fn find(&self, hash: &TxHash) -> ColdResult<Option<(TxPos, TxBody, Arc<DictSet>)>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let view = self.view();
        let Some(m) = &view.manifest else {
            return Ok(None);
        };
        let mut failed = None;
        for r in m.segments.iter().rev() {
            let found = self.segment(r).and_then(|seg| match seg.lookup(&hash.0) {
                Some(pos) => self.confirm(m, hash, pos),
                None => Ok(None),
            });
            match found {
                Ok(Some((pos, body))) => return Ok(Some((pos, body, Arc::clone(&view.dicts)))),
                Ok(None) => {}
                // Past its deadline a lookup answers that, not an older
                // range's failure, and probes no further.
                Err(e @ ColdError::Store(StoreError::DeadlinePassed { .. })) => return Err(e),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(None), Err)
    }

    fn confirm(
        &self,
        m: &Manifest,
        hash: &TxHash,
        pos: TxPos,
    ) -> ColdResult<Option<(TxPos, TxBody)>> {
        let Some(body) = self.body(m, pos)? else {
            return Ok(None);
        };
        if body.hash != *hash {
            return Ok(None);
        }
        let key = || {
            m.pack_of(pos.seq)
                .map(|p| p.object.key.clone())
                .unwrap_or_default()
        };
        let Some(index) = body
            .alias_of()
            .map_err(|e| ColdError::damaged(&key(), e.to_string()))?
        else {
            return Ok(Some((pos, body)));
        };
        let at = TxPos {
            seq: pos.seq,
            index,
        };
        match self.body(m, at)? {
            Some(b) if b.dict_version != ledgerstore_db_api::ALIAS_BODY => Ok(Some((at, b))),
            _ => Err(ColdError::damaged(
                &key(),
                format!(
                    "the alias at ledger {} index {} names index {index}, which holds no \
                     transaction",
                    pos.seq, pos.index
                ),
            )),
        }
    }

    /// Up to `max` ledgers of `from..=end` that the newest manifest
    /// lists, ascending, each read by `read` (a lookup each).
    fn each_ledger<T>(
        &self,
        from: u32,
        end: u32,
        max: usize,
        read: impl Fn(&Manifest, &DictSet, u32) -> ColdResult<Option<T>>,
    ) -> StoreResult<Vec<T>> {
        let view = self.view();
        let Some(m) = &view.manifest else {
            return Ok(Vec::new());
        };
        let (from, end) = (from.max(m.first), end.min(m.mark));
        let mut out = Vec::new();
        let mut seq = from;
        while seq <= end && out.len() < max {
            self.lookups.fetch_add(1, Ordering::Relaxed);
            out.extend(read(m, &view.dicts, seq)?);
            seq += 1;
        }
        Ok(out)
    }

    /// Figures for GetStatus and `/metrics`.
    pub fn figures(&self) -> ReplicaStatus {
        let view = self.view();
        let m = view.manifest.as_ref();
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let c = self.cache.figures();
        let (gets, get_bytes) = self.remote.reads();
        ReplicaStatus {
            manifest_version: m.map_or(0, |m| m.version),
            manifest_age_s: m.map_or(0.0, |m| {
                now_ms.saturating_sub(m.created_unix_ms) as f64 / 1000.0
            }),
            first_ledger: m.map(|m| m.first),
            published_mark: m.map(|m| m.mark),
            txs: m.map_or(0, Manifest::bodies),
            packs: m.map_or(0, |m| m.packs.len() as u64),
            segments: m.map_or(0, |m| m.segments.len() as u64),
            cache_bytes: c.bytes,
            cache_limit_bytes: c.limit,
            cache_hits: c.hits,
            cache_misses: c.misses,
            cache_evictions: c.evictions,
            object_gets: gets,
            object_get_bytes: get_bytes,
            lookups: self.lookups.load(Ordering::Relaxed),
            pack_dict_bytes: self.dicts.bytes() as u64,
            pack_dict_limit_bytes: self.dicts.cap() as u64,
            pack_dict_opens: self.pack_dict_opens.load(Ordering::Relaxed),
            follow_error: self
                .follow_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }

    /// The transaction `hash` at `pos`, a position the caller found in its
    /// own segments (a writer that evicted the range): read from the
    /// range's pack alone, no segment probed or fetched. None when no
    /// manifest is held, it does not list ledger `pos.seq`, or the body
    /// there is not `hash`.
    pub fn get_tx_at(&self, hash: &TxHash, pos: TxPos) -> StoreResult<Option<TxRecord>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let view = self.view();
        let Some(m) = &view.manifest else {
            return Ok(None);
        };
        match self.confirm(m, hash, pos)? {
            Some((at, body)) => body.record(&view.dicts).map(Some).map_err(|e| {
                let key = m.pack_of(at.seq).map(|p| p.object.key.clone());
                ColdError::damaged(&key.unwrap_or_default(), format!("ledger {}: {e}", at.seq))
                    .into()
            }),
            None => Ok(None),
        }
    }
}

impl Reader for Replica {
    fn get_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        match self.find(hash)? {
            Some((pos, body, dicts)) => body.record(&dicts).map(Some).map_err(|e| {
                // The manifest is read again only to name the object.
                let key = self
                    .manifest()
                    .and_then(|m| m.pack_of(pos.seq).map(|p| p.object.key.clone()))
                    .unwrap_or_default();
                ColdError::damaged(&key, format!("ledger {}: {e}", pos.seq)).into()
            }),
            None => Ok(None),
        }
    }

    fn get_tx_ledger(&self, hash: &TxHash) -> StoreResult<Option<u32>> {
        Ok(self.find(hash)?.map(|(pos, _, _)| pos.seq))
    }

    /// One batch reads its bodies together (see `replica_batch`): far
    /// fewer sequential object-store round trips than one lookup per hash,
    /// with the same answers.
    fn batch_get_txs(&self, hashes: &[TxHash]) -> StoreResult<Vec<Option<TxRecord>>> {
        self.batch(hashes, None)
    }

    fn batch_get_txs_until(
        &self,
        hashes: &[TxHash],
        deadline: Instant,
    ) -> StoreResult<Vec<Option<TxRecord>>> {
        self.batch(hashes, Some(deadline))
    }

    fn get_ledger(&self, seq: u32) -> StoreResult<Option<LedgerRecord>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let view = self.view();
        match &view.manifest {
            Some(m) => Ok(self.ledger(m, &view.dicts, seq)?),
            None => Ok(None),
        }
    }

    fn ledger_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerRecord>> {
        self.each_ledger(from, end, max, |m, dicts, seq| self.ledger(m, dicts, seq))
    }

    /// From the ledger's record in its pack alone: nothing reassembled.
    fn ledger_head(&self, seq: u32) -> StoreResult<Option<LedgerHead>> {
        self.lookups.fetch_add(1, Ordering::Relaxed);
        let view = self.view();
        match &view.manifest {
            Some(m) => Ok(self.head(m, seq)?.map(LedgerHead::from)),
            None => Ok(None),
        }
    }

    fn ledger_head_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerHead>> {
        self.each_ledger(from, end, max, |m, _, seq| {
            Ok(self.head(m, seq)?.map(LedgerHead::from))
        })
    }

    fn first_ledger(&self) -> Option<u32> {
        self.view().manifest.as_ref().map(|m| m.first)
    }

    fn last_ledger(&self) -> Option<u32> {
        self.view().manifest.as_ref().map(|m| m.mark)
    }

    /// Names the published ledgers, never the store's location (clients
    /// need not be told the bucket or its endpoint: the log has them).
    fn mark_text(&self) -> String {
        match &self.view().manifest {
            Some(m) => format!(
                "published mark: ledger {} (manifest {}); this replica serves ledgers {}..={}, \
                 newer ledgers are on the writer",
                m.mark, m.version, m.first, m.mark
            ),
            None => {
                let failed = self
                    .follow_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .is_some();
                if failed {
                    "the published store's manifest could not be read yet (the cause is in the \
                     server's log); this replica serves no ledgers yet: ask the writer"
                        .into()
                } else {
                    "nothing is published yet: this replica serves no ledgers; ask the writer"
                        .into()
                }
            }
        }
    }

    fn reads_may_block(&self) -> bool {
        true
    }

    fn status(&self) -> StoreResult<ReaderStatus> {
        Ok(ReaderStatus::Replica(self.figures()))
    }
}
