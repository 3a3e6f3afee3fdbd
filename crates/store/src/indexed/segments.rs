//! The cold tier of the `indexed` layout: immutable segment files, one per
//! closed ledger range, built in the background from the hot index.
//!
//! # Life of a range
//! 1. Ledgers `first..=end` are ingested; their hashes go to the hot index
//!    (`tx_hot_index`, libmdbx). `end` is the last ledger of an aligned
//!    window of `range_ledgers` ledgers.
//! 2. Once the mark reaches `end`, the builder thread scans the hot index
//!    for the range, builds a segment into `segments/tmp-…`, fsyncs it,
//!    writes the marker `segments/dropping-<first>-<end>`, and renames the
//!    segment into place (the atomic swap), then fsyncs the directory.
//! 3. The segment joins the in-memory list that lookups probe, and only then
//!    are the range's keys deleted from the hot index, in chunks. The marker
//!    goes last.
//!
//! A crash before the rename leaves a `tmp-` file (deleted at open) and the
//! hot index intact: the old state serves and the build runs again. A
//! crash after it leaves the segment and some hot keys: both answer the
//! same, and the marker makes the next open finish the deletion.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use ledgerstore_db_api::{Decompress, KvStore, TxHash, TxPos};
use ledgerstore_segment::{Segment, SegmentBuilder, SegmentInfo};
use serde::Serialize;

use crate::error::{StoreError, StoreResult};

/// Hot-index keys read per scan and deleted per write transaction.
const CHUNK: usize = 16_384;

/// Longest a hot-index drop waits for a batch being written before it takes
/// its next chunk anyway.
const INGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Test hook: the builder aborts the process at the named step
/// (`LEDGERSTORE_FAILPOINT=segment-before-publish` or
/// `segment-after-publish`), to prove crash safety with a real crash.
const FAILPOINT_ENV: &str = "LEDGERSTORE_FAILPOINT";

fn failpoint(name: &str) {
    if std::env::var(FAILPOINT_ENV).is_ok_and(|v| v == name) {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
}

/// The range of a `dropping-<first>-<last>` marker's name.
fn parse_marker(name: &str) -> Option<(u32, u32)> {
    let range = name.strip_prefix("dropping-")?;
    ledgerstore_segment::parse_file_name(&format!("seg-{range}.idx"))
}

/// What `stats` shows about the cold tier.
#[derive(Debug, Clone, Serialize, Default)]
pub struct SegmentStats {
    /// Ledgers per range (`segments.range_ledgers`).
    pub range_ledgers: u32,
    /// The open range's first ledger (covered by the hot index).
    pub hot_from: Option<u32>,
    /// Segments, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// Keys in all segments.
    pub keys: u64,
    /// Bytes of all segment files.
    pub file_bytes: u64,
    /// Segments built since open.
    pub builds: u64,
    /// Total build seconds since open (scan, MPH, write, swap, hot drop).
    pub build_total_s: f64,
    /// True while a build or a hot-index drop runs.
    pub building: bool,
    /// The last build failure since open, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

#[derive(Default)]
struct BuilderState {
    /// The durable mark the builder may build up to.
    mark: Option<u32>,
    /// The mark's first ledger.
    first: Option<u32>,
    busy: bool,
    stop: bool,
    last_error: Option<String>,
}

/// The segment list plus its builder.
pub(crate) struct SegmentSet {
    dir: PathBuf,
    range_ledgers: u32,
    hot: Arc<dyn KvStore>,
    list: RwLock<Arc<Vec<Arc<Segment>>>>,
    state: Mutex<BuilderState>,
    cv: Condvar,
    builds: AtomicU64,
    /// True while ingest writes a batch: see [`SegmentSet::ingest_writing`].
    ingest_writing: Mutex<bool>,
    ingest_done: Condvar,
    build_micros: AtomicU64,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl SegmentSet {
    /// Opens `dir` (creating it), loads and verifies every segment, and,
    /// when `writable`, removes unpublished builds and finishes an
    /// interrupted hot-index drop (an offline reader leaves both: a `tmp-`
    /// file is never read, and leftover hot keys answer as the segment does).
    pub(crate) fn open(
        dir: PathBuf,
        range_ledgers: u32,
        hot: Arc<dyn KvStore>,
        writable: bool,
    ) -> StoreResult<Arc<Self>> {
        if range_ledgers == 0 {
            return Err(StoreError::InvalidBatch {
                field: "segments.range_ledgers".into(),
                reason: "must be at least 1".into(),
            });
        }
        if writable {
            fs::create_dir_all(&dir)
                .map_err(StoreError::io(format!("creating {}", dir.display())))?;
        }
        let mut segs = Vec::new();
        let mut dropping = Vec::new();
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries.collect::<Result<Vec<_>, _>>(),
            Err(e) if !writable && e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(e),
        }
        .map_err(StoreError::io(format!("listing {}", dir.display())))?;
        for entry in entries {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("tmp-") && !writable {
                continue;
            }
            if name.starts_with("tmp-") {
                tracing::warn!(file = %name, "removing a segment build that a crash interrupted");
                fs::remove_file(entry.path()).map_err(StoreError::io(format!(
                    "removing {}",
                    entry.path().display()
                )))?;
            } else if let Some(range) = parse_marker(&name) {
                dropping.push(range);
            } else if ledgerstore_segment::parse_file_name(&name).is_some() {
                segs.push(Arc::new(Segment::open(&entry.path())?));
            }
        }
        segs.sort_by_key(|s| s.first());
        if let Some(w) = segs.windows(2).find(|w| w[0].last() >= w[1].first()) {
            return Err(StoreError::Corrupt(format!(
                "segments {}..={} and {}..={} overlap",
                w[0].first(),
                w[0].last(),
                w[1].first(),
                w[1].last()
            )));
        }
        let set = Arc::new(Self {
            dir,
            range_ledgers,
            hot,
            list: RwLock::new(Arc::new(segs)),
            state: Mutex::new(BuilderState::default()),
            cv: Condvar::new(),
            builds: AtomicU64::new(0),
            build_micros: AtomicU64::new(0),
            ingest_writing: Mutex::new(false),
            ingest_done: Condvar::new(),
            thread: Mutex::new(None),
        });
        for (first, last) in dropping.into_iter().filter(|_| writable) {
            if set.covers(first, last) {
                tracing::warn!(
                    first,
                    last,
                    "finishing an interrupted drop of a segment's range from the hot index"
                );
                set.drop_hot_range(first, last)?;
            }
            set.remove_marker(first, last)?;
        }
        Ok(set)
    }

    /// Starts the builder thread. `first`/`mark` are the store's mark.
    pub(crate) fn start(
        self: &Arc<Self>,
        first: Option<u32>,
        mark: Option<u32>,
    ) -> StoreResult<()> {
        let me = Arc::clone(self);
        let handle = std::thread::Builder::new()
            .name("segment-builder".into())
            .spawn(move || me.run())
            .map_err(StoreError::io("starting the segment builder thread"))?;
        if let Ok(mut t) = self.thread.lock() {
            *t = Some(handle);
        }
        self.notify(first, mark);
        Ok(())
    }

    /// Tells the builder the mark moved.
    pub(crate) fn notify(&self, first: Option<u32>, mark: Option<u32>) {
        if let Ok(mut s) = self.state.lock() {
            s.mark = mark;
            s.first = first;
        }
        self.cv.notify_all();
    }

    /// Blocks until every closed range has a segment (or a build failed).
    /// Returns at once when no builder runs (an offline reader, or stopped).
    pub(crate) fn wait_idle(&self) -> StoreResult<()> {
        if self.thread.lock().map_or(true, |t| t.is_none()) {
            return Ok(());
        }
        let Ok(mut s) = self.state.lock() else {
            return Err(StoreError::Corrupt("segment builder state poisoned".into()));
        };
        loop {
            if let Some(e) = &s.last_error {
                return Err(StoreError::Corrupt(format!("segment build failed: {e}")));
            }
            if !s.busy && self.next_range(s.first, s.mark).is_none() || s.stop {
                return Ok(());
            }
            s = self
                .cv
                .wait(s)
                .map_err(|_| StoreError::Corrupt("segment builder state poisoned".into()))?;
        }
    }

    /// Stops the builder after the step in progress and joins it.
    pub(crate) fn stop(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.stop = true;
        }
        self.cv.notify_all();
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(h) = handle {
            let _ = h.join();
        }
    }

    /// The segments, oldest first.
    pub(crate) fn list(&self) -> Arc<Vec<Arc<Segment>>> {
        match self.list.read() {
            Ok(l) => Arc::clone(&l),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    /// The directory of segment files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The open range's first ledger: after the newest segment, or the
    /// store's first ledger.
    fn hot_from(&self, first: Option<u32>) -> Option<u32> {
        match self.list().last() {
            Some(s) => s.last().checked_add(1),
            None => first,
        }
    }

    /// The next range to build, if the mark has closed it.
    fn next_range(&self, first: Option<u32>, mark: Option<u32>) -> Option<(u32, u32)> {
        let start = self.hot_from(first)?;
        let r = u64::from(self.range_ledgers);
        let end = u32::try_from((u64::from(start) / r + 1) * r - 1).ok()?;
        (mark? >= end).then_some((start, end))
    }

    fn covers(&self, first: u32, last: u32) -> bool {
        self.list()
            .iter()
            .any(|s| s.first() == first && s.last() == last)
    }

    /// Statistics.
    pub(crate) fn stats(&self, first: Option<u32>) -> SegmentStats {
        let list = self.list();
        let (busy, last_error) = self
            .state
            .lock()
            .map(|s| (s.busy, s.last_error.clone()))
            .unwrap_or((false, None));
        SegmentStats {
            range_ledgers: self.range_ledgers,
            hot_from: self.hot_from(first),
            keys: list.iter().map(|s| s.info().keys).sum(),
            file_bytes: list.iter().map(|s| s.info().file_bytes).sum(),
            segments: list.iter().map(|s| s.info().clone()).collect(),
            builds: self.builds.load(Ordering::Relaxed),
            build_total_s: self.build_micros.load(Ordering::Relaxed) as f64 / 1e6,
            building: busy,
            last_error,
        }
    }

    fn run(self: Arc<Self>) {
        loop {
            let range = {
                let Ok(mut s) = self.state.lock() else { return };
                loop {
                    if s.stop {
                        return;
                    }
                    if s.last_error.is_none()
                        && let Some(r) = self.next_range(s.first, s.mark)
                    {
                        s.busy = true;
                        break r;
                    }
                    s = match self.cv.wait(s) {
                        Ok(s) => s,
                        Err(_) => return,
                    };
                }
            };
            let result = self.build(range.0, range.1);
            if let Ok(mut s) = self.state.lock() {
                s.busy = false;
                if let Err(e) = result {
                    tracing::error!(first = range.0, last = range.1, error = %e, "segment build failed; the hot index keeps serving the range");
                    s.last_error = Some(e.to_string());
                }
            }
            self.cv.notify_all();
        }
    }

    /// Builds, publishes and installs the segment of `first..=last`, then
    /// drops the range from the hot index.
    fn build(&self, first: u32, last: u32) -> StoreResult<()> {
        let started = Instant::now();
        let mut b = SegmentBuilder::new(first, last)?;
        self.scan_hot(first, last, |hash, pos| {
            b.push(hash.0, pos)?;
            Ok(())
        })?;
        let keys = b.len();
        let tmp = self.dir.join(format!("tmp-{first}-{last}.idx"));
        let info = b.write(&tmp)?;
        failpoint("segment-before-publish");
        let marker = self.marker(first, last);
        crate::datadir::write_atomic(&self.dir, &marker, b"")?;
        let path = ledgerstore_segment::publish(&tmp, &self.dir, first, last)?;
        let seg = Arc::new(Segment::open(&path)?);
        if let Ok(mut l) = self.list.write() {
            let mut next = (**l).clone();
            next.push(seg);
            *l = Arc::new(next);
        }
        failpoint("segment-after-publish");
        self.drop_hot_range(first, last)?;
        self.remove_marker(first, last)?;
        let took = started.elapsed();
        self.builds.fetch_add(1, Ordering::Relaxed);
        self.build_micros.fetch_add(
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        tracing::info!(
            first,
            last,
            keys,
            bits_per_key = info.bits_per_key,
            mph_s = info.build_s,
            total_s = took.as_secs_f64(),
            "segment built and swapped in"
        );
        Ok(())
    }

    /// Calls `f` for every hot-index entry positioned in `first..=last`.
    fn scan_hot(
        &self,
        first: u32,
        last: u32,
        mut f: impl FnMut(TxHash, TxPos) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut from = vec![0u8; 32];
        loop {
            let chunk = self.hot.scan(&from, CHUNK)?;
            let Some((last_key, _)) = chunk.last() else {
                return Ok(());
            };
            from = last_key.clone();
            from.push(0);
            for (k, v) in &chunk {
                let pos = TxPos::decompress(v)?;
                if pos.seq >= first && pos.seq <= last {
                    let hash = TxHash::from_slice(k).ok_or_else(|| {
                        StoreError::Corrupt(format!("tx_hot_index: key of {} bytes", k.len()))
                    })?;
                    f(hash, pos)?;
                }
            }
            if chunk.len() < CHUNK {
                return Ok(());
            }
        }
    }

    /// Deletes the hot-index keys positioned in `first..=last`.
    fn drop_hot_range(&self, first: u32, last: u32) -> StoreResult<()> {
        let mut keys = Vec::new();
        self.scan_hot(first, last, |hash, _| {
            keys.push(hash);
            Ok(())
        })?;
        for chunk in keys.chunks(CHUNK) {
            self.wait_for_ingest();
            let mut w = self.hot.begin_write()?;
            for k in chunk {
                w.delete(&k.0)?;
            }
            w.finish()?;
            w.commit()?;
        }
        Ok(())
    }

    /// Ingest says it is writing a batch (`true`) or done (`false`). MDBX
    /// has one writer at a time and its lock is not fair: a drop that
    /// commits chunk after chunk can win it back every time. So the drop
    /// waits between chunks while ingest writes, and ingest waits for at
    /// most one chunk.
    pub(crate) fn ingest_writing(&self, writing: bool) {
        if let Ok(mut w) = self.ingest_writing.lock() {
            *w = writing;
        }
        if !writing {
            self.ingest_done.notify_all();
        }
    }

    /// Waits until ingest is not writing, for at most `INGEST_WAIT`, so
    /// that a drop still advances under back-to-back batches.
    fn wait_for_ingest(&self) {
        let Ok(w) = self.ingest_writing.lock() else {
            return;
        };
        let _ = self
            .ingest_done
            .wait_timeout_while(w, INGEST_WAIT, |writing| *writing);
    }

    /// The ranges whose `dropping-` marker exists now (none when an
    /// offline reader finds no segment directory).
    pub(crate) fn dropping_markers(&self) -> StoreResult<Vec<(u32, u32)>> {
        let listing = StoreError::io(format!("listing {}", self.dir.display()));
        let entries = match fs::read_dir(&self.dir) {
            Ok(d) => d.collect::<Result<Vec<_>, _>>().map_err(listing)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(listing(e)),
        };
        Ok(entries
            .iter()
            .filter_map(|e| parse_marker(&e.file_name().to_string_lossy()))
            .collect())
    }

    pub(crate) fn marker(&self, first: u32, last: u32) -> String {
        format!("dropping-{first:010}-{last:010}")
    }

    fn remove_marker(&self, first: u32, last: u32) -> StoreResult<()> {
        let p = self.dir.join(self.marker(first, last));
        match fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(StoreError::io(format!("removing {}", p.display()))(e)),
        }
    }
}
