//! The cold tier of the `indexed` layout: immutable, memory-mapped segment
//! files, listed by the manifest `segments/SEGMENTS`, built by one
//! background thread (base builds and hot drops) and merged, scrubbed and
//! repaired by another, so a long merge never holds back the base builds
//! that keep the hot index one range deep.
//!
//! # Life of a range
//! 1. Ledgers `first..=end` are ingested; their hashes go to the hot index
//!    (`tx_hot_index` in libmdbx, keyed by position, plus its in-memory
//!    map: see [`super::hot`]). `end` closes an aligned base range of
//!    `range_ledgers` ledgers.
//! 2. Once the mark reaches `end`, the builder reads the range from the hot
//!    index (in position order), writes its hash list (`hashes-<first>-<end>.bin`) and its
//!    segment (`tmp-…`, fsynced), writes the marker
//!    `dropping-<first>-<end>`, renames the segment into place, records it
//!    in the manifest, installs it, deletes the range from the hot index in
//!    chunks, and removes the marker.
//! 3. Merges keep the number of segments, and so the probes per lookup,
//!    bounded (see [`MergePolicy::tiling`]): the builder rebuilds a larger
//!    range from its base ranges' hash lists, renames it into place,
//!    records it in the manifest in place of the ranges it contains, and
//!    only then deletes their files. Once a whole top-level window is
//!    listed, no merge reads its base ranges' hash lists again, and they
//!    are deleted unless the range was evicted (see [`lists`]).
//! 4. A segment whose file is missing, fails its header checks at open, or
//!    fails its checksum in the background scrub is *broken*: lookups that
//!    find nothing elsewhere answer "being repaired" (never a wrong "not
//!    found"), and the builder rebuilds it from the hash lists, or from the
//!    ledger records where a hash list is missing or damaged.
//! 5. A failed step is retried with exponential backoff (1 s to 60 s)
//!    without a restart; `stats` shows the error and the failure count.
//!
//! Crash safety: a file the manifest does not list is garbage and is
//! deleted at open (a build or merge interrupted before it was recorded,
//! or parts a merge replaced); a `tmp-` file likewise. The old ranges
//! serve until the manifest changes, and the manifest changes atomically.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Instant;

use ledgerstore_db_api::{KvStore, TxPos};
use ledgerstore_segment::{Segment, SegmentInfo};
use serde::Serialize;

use super::hot::{self, HotMap};
use crate::error::{StoreError, StoreResult};

mod build;
mod lists;
pub(crate) mod manifest;
mod repair;
mod verified;

pub(crate) use manifest::Manifest;
pub use manifest::MergePolicy;
pub use repair::{
    RepairEvent, RepairFailure, RepairReport, RepairWait, RepairWaitOutcome, RepairedRange,
    RewrittenList,
};

/// One range the manifest lists: its segment, or why it has none.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) seg: Option<Arc<Segment>>,
    /// Why the range has no usable segment (then `seg` is `None`).
    pub(crate) broken: Option<String>,
    /// Unix seconds when the file was last read whole (the scrub, or its
    /// build), 0 if not since it was written or since open: see
    /// [`verified`].
    verified_at: AtomicU64,
}

impl Slot {
    fn serving(seg: Arc<Segment>, verified_at: u64) -> Arc<Self> {
        Arc::new(Self {
            first: seg.first(),
            last: seg.last(),
            seg: Some(seg),
            broken: None,
            verified_at: AtomicU64::new(verified_at),
        })
    }

    fn broken(first: u32, last: u32, why: String) -> Arc<Self> {
        Arc::new(Self {
            first,
            last,
            seg: None,
            broken: Some(why),
            verified_at: AtomicU64::new(0),
        })
    }

    pub(crate) fn range(&self) -> (u32, u32) {
        (self.first, self.last)
    }
}

/// What the cold tier says about a hash.
#[derive(Debug, Default)]
pub(crate) struct Cold {
    /// Candidate positions, newest range first (each to be confirmed).
    pub(crate) candidates: Vec<TxPos>,
    /// A broken range that may hold the hash: if no candidate confirms,
    /// the answer is "being repaired", not "not found".
    pub(crate) repairing: Option<(u32, u32, String)>,
}

impl Cold {
    /// Just these candidates.
    pub(crate) fn only(candidates: Vec<TxPos>) -> Self {
        Self {
            candidates,
            repairing: None,
        }
    }
}

/// What `stats` shows about the cold tier.
#[derive(Debug, Clone, Serialize, Default)]
pub struct SegmentStats {
    /// Ledgers per base range (`segments.range_ledgers`, as recorded).
    pub range_ledgers: u32,
    /// Merge fan-out and levels (as recorded).
    pub merge_fanout: u32,
    /// Levels above the base range (0: no merging).
    pub merge_levels: u32,
    /// The open range's first ledger (covered by the hot index).
    pub hot_from: Option<u32>,
    /// Transactions in the hot index's in-memory map.
    pub hot_keys: u64,
    /// Approximate heap bytes of that map.
    pub hot_map_bytes: u64,
    /// Most probes a lookup makes: the hot index plus one per segment.
    pub probes: usize,
    /// Segments, oldest first.
    pub segments: Vec<SegmentInfo>,
    /// Ranges being repaired, with the reason.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub repairing: Vec<String>,
    /// Keys in all segments.
    pub keys: u64,
    /// Bytes of all segment files.
    pub file_bytes: u64,
    /// Base segments built since open.
    pub builds: u64,
    /// Merges (and repairs) since open.
    pub merges: u64,
    /// Segment files the scrub read whole since open (each is read again
    /// when its file changed, and at least weekly: `segments/VERIFIED`).
    pub scrubs: u64,
    /// Index bytes the warm-up read into the page cache after open
    /// (`segments.warm_mib`).
    pub warmed_bytes: u64,
    /// Heap bytes of the fingerprint filters loaded (`segments.filter_mib`).
    pub filter_bytes: u64,
    /// Total build seconds since open (scan, MPH, write, swap, hot drop).
    pub build_total_s: f64,
    /// Total merge and repair seconds since open.
    pub merge_total_s: f64,
    /// True while a build, merge, repair or hot-index drop runs.
    pub building: bool,
    /// Consecutive failed steps (retried with backoff; 0 when healthy).
    pub failures: u32,
    /// The last failure since open, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Ledgers below this one left the data dir for the published store
    /// (`[cold] keep_local_ranges`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evicted_below: Option<u32>,
}

#[derive(Default)]
struct BuilderState {
    /// The durable mark the builder may build up to.
    mark: Option<u32>,
    /// The mark's first ledger.
    first: Option<u32>,
    stop: bool,
    /// Per lane (see [`build::Lane`]).
    lanes: [LaneState; 2],
}

#[derive(Default)]
struct LaneState {
    busy: bool,
    failures: u32,
    /// No step before this instant (backoff after a failure).
    retry_at: Option<Instant>,
    last_error: Option<String>,
}

/// How [`SegmentSet::open`] opens the tier.
pub(crate) struct SetOpen {
    pub(crate) dir: PathBuf,
    /// The policy of the options; a recorded one wins.
    pub(crate) policy: MergePolicy,
    pub(crate) hot: Arc<dyn KvStore>,
    pub(crate) ledgers: Arc<dyn KvStore>,
    /// False for an offline reader: nothing on disk changes.
    pub(crate) writable: bool,
    /// Index bytes to read into the page cache after open (writers only).
    pub(crate) warm_bytes: u64,
    /// Heap bytes for fingerprint filters (writers only).
    pub(crate) filter_bytes: u64,
    /// Ledgers below this one left the data dir (`segments/EVICTED`; 0:
    /// none did): their ranges keep their hash lists.
    pub(crate) evicted_below: u32,
}

/// The segment list plus its builder.
pub(crate) struct SegmentSet {
    dir: PathBuf,
    policy: MergePolicy,
    hot: Arc<dyn KvStore>,
    /// The hot index in memory (see [`super::hot`]).
    pub(crate) hot_map: HotMap,
    ledgers: Arc<dyn KvStore>,
    slots: RwLock<Arc<Vec<Arc<Slot>>>>,
    state: Mutex<BuilderState>,
    cv: Condvar,
    builds: AtomicU64,
    merges: AtomicU64,
    scrubs: AtomicU64,
    build_micros: AtomicU64,
    merge_micros: AtomicU64,
    /// The ledger a rebuild (merge or repair) streamed last: its progress.
    rebuild_at: AtomicU32,
    /// True while ingest writes a batch: see [`SegmentSet::ingest_writing`].
    ingest_writing: Mutex<bool>,
    ingest_done: Condvar,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Held while a step reads the list and records and installs the next
    /// one, so the two lanes never install from a stale list.
    publish: Mutex<()>,
    /// Set by [`SegmentSet::stop`]: a merge stops between partitions.
    cancel: Arc<AtomicBool>,
    /// The warm-up's budget until it has run (see [`SetOpen::warm_bytes`]).
    warm_left: Mutex<Option<u64>>,
    warmed: AtomicU64,
    /// The fingerprint filters' heap budget (0 for offline readers).
    filter_budget: u64,
    /// One thread loads filters at a time (the two lanes both install).
    filters_lock: Mutex<()>,
    /// Installed base ranges whose hot-index drop has not finished (a
    /// failed drop is retried like any step).
    pending_drops: Mutex<Vec<(u32, u32)>>,
    /// The boundary hash-list deletion respects: ranges below it keep
    /// their lists. The recorded eviction boundary at open; an eviction
    /// raises it to its target before it touches a list. Held while lists
    /// are deleted (see [`lists`]).
    lists: Mutex<u32>,
    /// Test hook: steps that fail once each, by name.
    #[cfg(test)]
    pub(crate) fail_once: Mutex<Vec<&'static str>>,
    /// Test hook: failpoints a step waits at while they are listed.
    #[cfg(test)]
    pub(crate) paused: Mutex<Vec<&'static str>>,
}

/// The policy `segments/SEGMENTS` in `dir` records, if any.
pub(crate) fn recorded_policy(dir: &Path) -> StoreResult<Option<MergePolicy>> {
    Ok(Manifest::read(dir)?.map(|m| m.policy))
}

/// Refuses a policy setting given explicitly that differs from the one
/// recorded in `dir` (run before any engine opens, so a refused open
/// changes nothing). A dir with no recorded policy accepts any.
pub(crate) fn check_explicit_policy(
    data_dir: &Path,
    recorded: Option<MergePolicy>,
    explicit: &super::ExplicitPolicy,
) -> StoreResult<()> {
    let Some(r) = recorded else {
        return Ok(());
    };
    for (setting, given, was) in [
        (
            "segments.range_ledgers",
            explicit.range_ledgers,
            r.range_ledgers,
        ),
        ("segments.merge_fanout", explicit.merge_fanout, r.fanout),
        ("segments.merge_levels", explicit.merge_levels, r.levels),
    ] {
        if let Some(v) = given
            && v != was
        {
            return Err(StoreError::SettingMismatch {
                dir: data_dir.to_path_buf(),
                setting,
                recorded: was.to_string(),
                requested: v.to_string(),
            });
        }
    }
    Ok(())
}

impl SegmentSet {
    /// Opens `dir` (creating it when writable): reads the manifest (or,
    /// in a dir from an earlier release, lists the segment files), maps
    /// every listed segment (header checks only) and, when `writable`,
    /// deletes unlisted files and finishes interrupted hot-index drops. An
    /// offline reader changes nothing.
    pub(crate) fn open(how: SetOpen) -> StoreResult<Arc<Self>> {
        let SetOpen {
            dir,
            policy,
            hot,
            ledgers,
            writable,
            warm_bytes,
            filter_bytes,
            evicted_below,
        } = how;
        if policy.range_ledgers == 0 {
            return Err(StoreError::InvalidBatch {
                field: "segments.range_ledgers".into(),
                reason: "must be at least 1".into(),
            });
        }
        if writable {
            fs::create_dir_all(&dir)
                .map_err(StoreError::io(format!("creating {}", dir.display())))?;
        }
        let names = list_dir(&dir)?;
        let (manifest, recorded) = match Manifest::read(&dir)? {
            Some(m) => (m, true),
            None => {
                let ranges = legacy_ranges(&names)?;
                (Manifest::new(legacy_policy(policy, &ranges), ranges), false)
            }
        };
        let checked = verified::load(&dir);
        let slots = manifest
            .ranges
            .iter()
            .map(|&(first, last)| open_slot(&dir, first, last, &checked))
            .collect();
        let set = Arc::new(Self {
            dir,
            policy: manifest.policy,
            hot_map: HotMap::new(manifest.policy.range_ledgers),
            hot,
            ledgers,
            slots: RwLock::new(Arc::new(slots)),
            state: Mutex::new(BuilderState::default()),
            cv: Condvar::new(),
            builds: AtomicU64::new(0),
            merges: AtomicU64::new(0),
            scrubs: AtomicU64::new(0),
            build_micros: AtomicU64::new(0),
            merge_micros: AtomicU64::new(0),
            rebuild_at: AtomicU32::new(0),
            ingest_writing: Mutex::new(false),
            ingest_done: Condvar::new(),
            threads: Mutex::new(Vec::new()),
            publish: Mutex::new(()),
            cancel: Arc::new(AtomicBool::new(false)),
            warm_left: Mutex::new(
                (writable && (warm_bytes > 0 || filter_bytes > 0)).then_some(warm_bytes),
            ),
            warmed: AtomicU64::new(0),
            filter_budget: if writable { filter_bytes } else { 0 },
            filters_lock: Mutex::new(()),
            pending_drops: Mutex::new(Vec::new()),
            lists: Mutex::new(evicted_below),
            #[cfg(test)]
            fail_once: Mutex::new(Vec::new()),
            #[cfg(test)]
            paused: Mutex::new(Vec::new()),
        });
        // One scan of the hot table at open: the map takes both formats,
        // and a writer converts hash-keyed entries only when there are any.
        if set.hot_map.load(set.hot.as_ref())? > 0 && writable {
            hot::convert_legacy(set.hot.as_ref())?;
        }
        if writable {
            if !recorded {
                manifest.write(&set.dir)?;
            }
            set.remove_unlisted(&names, &manifest.ranges)?;
            set.finish_drops(&names, &manifest.ranges)?;
            set.drop_unread_lists();
        }
        Ok(set)
    }

    /// Deletes `tmp-` files and segment files the manifest does not list.
    fn remove_unlisted(&self, names: &[String], ranges: &[(u32, u32)]) -> StoreResult<()> {
        for name in names {
            let unlisted =
                ledgerstore_segment::parse_file_name(name).is_some_and(|r| !ranges.contains(&r));
            if name.starts_with("tmp-") || unlisted {
                tracing::warn!(file = %name, "removing a segment file the manifest does not list (an interrupted build or merge, or a merged part)");
                remove_file(&self.dir.join(name))?;
            }
        }
        Ok(())
    }

    /// Finishes the hot-index drops that `dropping-` markers record, for
    /// the ranges the manifest lists, and removes every marker.
    fn finish_drops(&self, names: &[String], ranges: &[(u32, u32)]) -> StoreResult<()> {
        for (first, last) in names.iter().filter_map(|n| parse_marker(n)) {
            if ranges.contains(&(first, last)) {
                tracing::warn!(
                    first,
                    last,
                    "finishing an interrupted drop of a segment's range from the hot index"
                );
                self.drop_hot_range(first, last)?;
            }
            self.remove_marker(first, last)?;
        }
        Ok(())
    }

    /// Starts the builder threads, one per lane. `first`/`mark` are the
    /// store's mark.
    pub(crate) fn start(
        self: &Arc<Self>,
        first: Option<u32>,
        mark: Option<u32>,
    ) -> StoreResult<()> {
        for lane in [build::Lane::Base, build::Lane::Merge] {
            let me = Arc::clone(self);
            let handle = std::thread::Builder::new()
                .name(lane.thread_name().into())
                .spawn(move || me.run(lane))
                .map_err(StoreError::io("starting a segment builder thread"))?;
            if let Ok(mut t) = self.threads.lock() {
                t.push(handle);
            }
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

    /// Blocks until every closed range has its segment, merges are done,
    /// no range is being repaired and the warm-up after open has run. Fails once a step has failed
    /// [`build::WAIT_GIVES_UP_AFTER`] times in a row (the builder keeps
    /// retrying). Returns at once when no builder runs.
    pub(crate) fn wait_idle(&self) -> StoreResult<()> {
        if self.threads.lock().map_or(true, |t| t.is_empty()) {
            return Ok(());
        }
        let poisoned = || StoreError::Corrupt("segment builder state poisoned".into());
        let mut s = self.state.lock().map_err(|_| poisoned())?;
        loop {
            for l in &s.lanes {
                if l.failures >= build::WAIT_GIVES_UP_AFTER
                    && let Some(e) = &l.last_error
                {
                    return Err(StoreError::Corrupt(format!(
                        "segment build failed {} times in a row (still retrying): {e}",
                        l.failures
                    )));
                }
            }
            let idle = |lane: build::Lane| {
                !s.lanes[lane as usize].busy
                    && self.next_work(lane, s.first, s.mark, false).is_none()
            };
            if s.stop || idle(build::Lane::Base) && idle(build::Lane::Merge) {
                return Ok(());
            }
            s = self.cv.wait(s).map_err(|_| poisoned())?;
        }
    }

    /// Stops the builder threads and joins them: a base build or drop in
    /// progress finishes; a merge or repair stops before its next
    /// partition (its `tmp-` files are removed at the next open).
    pub(crate) fn stop(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.stop = true;
        }
        self.cancel.store(true, Ordering::Relaxed);
        self.cv.notify_all();
        let handles = self
            .threads
            .lock()
            .map(|mut t| std::mem::take(&mut *t))
            .unwrap_or_default();
        for h in handles {
            let _ = h.join();
        }
    }

    /// The listed ranges, oldest first.
    pub(crate) fn slots(&self) -> Arc<Vec<Arc<Slot>>> {
        match self.slots.read() {
            Ok(l) => Arc::clone(&l),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    fn install(&self, next: Vec<Arc<Slot>>) {
        match self.slots.write() {
            Ok(mut l) => *l = Arc::new(next),
            Err(p) => *p.into_inner() = Arc::new(next),
        }
    }

    /// The serving segments, oldest first.
    pub(crate) fn list(&self) -> Vec<Arc<Segment>> {
        self.slots().iter().filter_map(|s| s.seg.clone()).collect()
    }

    /// What the segments say about `hash`, newest range first.
    pub(crate) fn lookup(&self, hash: &[u8; 32]) -> Cold {
        let mut cold = Cold::default();
        for slot in self.slots().iter().rev() {
            match (&slot.seg, &slot.broken) {
                (Some(seg), _) => cold.candidates.extend(seg.lookup(hash)),
                (None, why) if cold.repairing.is_none() => {
                    cold.repairing = Some((slot.first, slot.last, why.clone().unwrap_or_default()));
                }
                (None, _) => {}
            }
        }
        cold
    }

    /// The directory of segment files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The recorded policy.
    pub(crate) fn policy(&self) -> MergePolicy {
        self.policy
    }

    /// The open range's first ledger: after the newest listed range, or
    /// the store's first ledger.
    fn hot_from(&self, first: Option<u32>) -> Option<u32> {
        match self.slots().last() {
            Some(s) => s.last.checked_add(1),
            None => first,
        }
    }

    /// Statistics.
    pub(crate) fn stats(&self, first: Option<u32>) -> SegmentStats {
        let slots = self.slots();
        let segs: Vec<&Arc<Segment>> = slots.iter().filter_map(|s| s.seg.as_ref()).collect();
        let hot = self.hot_map.figures();
        let (busy, failures, last_error) = self
            .state
            .lock()
            .map(|s| {
                let worst = s.lanes.iter().max_by_key(|l| l.failures);
                (
                    s.lanes.iter().any(|l| l.busy),
                    worst.map_or(0, |l| l.failures),
                    worst
                        .and_then(|l| l.last_error.clone())
                        .or_else(|| s.lanes.iter().find_map(|l| l.last_error.clone())),
                )
            })
            .unwrap_or((false, 0, None));
        SegmentStats {
            range_ledgers: self.policy.range_ledgers,
            merge_fanout: self.policy.fanout,
            merge_levels: self.policy.levels,
            hot_from: self.hot_from(first),
            hot_keys: hot.keys,
            hot_map_bytes: hot.bytes,
            probes: slots.len() + 1,
            keys: segs.iter().map(|s| s.info().keys).sum(),
            file_bytes: segs.iter().map(|s| s.info().file_bytes).sum(),
            segments: segs.iter().map(|s| s.info().clone()).collect(),
            repairing: slots
                .iter()
                .filter_map(|s| {
                    let why = s.broken.as_ref()?;
                    Some(format!("{}..={}: {why}", s.first, s.last))
                })
                .collect(),
            builds: self.builds.load(Ordering::Relaxed),
            merges: self.merges.load(Ordering::Relaxed),
            scrubs: self.scrubs.load(Ordering::Relaxed),
            warmed_bytes: self.warmed.load(Ordering::Relaxed),
            filter_bytes: segs
                .iter()
                .filter(|s| s.filter_loaded())
                .map(|s| s.filter_bytes())
                .sum(),
            build_total_s: self.build_micros.load(Ordering::Relaxed) as f64 / 1e6,
            merge_total_s: self.merge_micros.load(Ordering::Relaxed) as f64 / 1e6,
            building: busy,
            failures,
            last_error,
            evicted_below: None,
        }
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

    /// The ranges whose `dropping-` marker exists now (none when an
    /// offline reader finds no segment directory).
    pub(crate) fn dropping_markers(&self) -> StoreResult<Vec<(u32, u32)>> {
        Ok(list_dir(&self.dir)?
            .iter()
            .filter_map(|n| parse_marker(n))
            .collect())
    }

    /// The hash lists present now, by range.
    pub(crate) fn hash_lists(&self) -> StoreResult<Vec<(u32, u32)>> {
        Ok(list_dir(&self.dir)?
            .iter()
            .filter_map(|n| ledgerstore_segment::hashes::parse_file_name(n))
            .collect())
    }

    pub(crate) fn marker(&self, first: u32, last: u32) -> String {
        format!("dropping-{first:010}-{last:010}")
    }

    fn remove_marker(&self, first: u32, last: u32) -> StoreResult<()> {
        remove_file(&self.dir.join(self.marker(first, last)))
    }
}

/// Maps the segment of `first..=last`, or records why it cannot serve.
fn open_slot(
    dir: &Path,
    first: u32,
    last: u32,
    checked: &std::collections::BTreeMap<String, verified::Entry>,
) -> Arc<Slot> {
    let name = ledgerstore_segment::file_name(first, last);
    let path = dir.join(&name);
    match Segment::open(&path) {
        Ok(seg) if (seg.first(), seg.last()) == (first, last) => {
            Slot::serving(Arc::new(seg), verified::verified_at(checked, dir, &name))
        }
        Ok(seg) => Slot::broken(
            first,
            last,
            format!(
                "{} holds ledgers {}..={}",
                path.display(),
                seg.first(),
                seg.last()
            ),
        ),
        Err(e) => {
            tracing::error!(first, last, error = %e, "a listed segment cannot serve; it will be rebuilt");
            Slot::broken(first, last, e.to_string())
        }
    }
}

/// The ranges of the segment files of a dir from an earlier release
/// (no manifest): every `seg-` file, which must not overlap.
fn legacy_ranges(names: &[String]) -> StoreResult<Vec<(u32, u32)>> {
    let mut ranges: Vec<(u32, u32)> = names
        .iter()
        .filter_map(|n| ledgerstore_segment::parse_file_name(n))
        .collect();
    ranges.sort_unstable();
    if let Some(w) = ranges.windows(2).find(|w| w[0].1 >= w[1].0) {
        return Err(StoreError::Corrupt(format!(
            "segments {}..={} and {}..={} overlap",
            w[0].0, w[0].1, w[1].0, w[1].1
        )));
    }
    Ok(ranges)
}

/// The policy for a dir from an earlier release: the configured one, unless
/// its segments were built with another base range; then that range (the
/// longest segment's length: only the first can be clipped), so that
/// merges tile the ranges it has.
pub(super) fn legacy_policy(policy: MergePolicy, ranges: &[(u32, u32)]) -> MergePolicy {
    let fits = |r: u32| {
        let r = u64::from(r);
        ranges
            .iter()
            .enumerate()
            .all(|(i, &(a, b))| (u64::from(b) + 1) % r == 0 && (i == 0 || u64::from(a) % r == 0))
    };
    if fits(policy.range_ledgers) {
        return policy;
    }
    match ranges.iter().map(|(a, b)| b - a + 1).max() {
        Some(r) if fits(r) => {
            tracing::warn!(
                configured = policy.range_ledgers,
                built = r,
                "this data dir's segments were built with another base range; it is kept"
            );
            MergePolicy {
                range_ledgers: r,
                ..policy
            }
        }
        _ => {
            tracing::warn!(
                "this data dir's segments are not aligned to one base range; they are not merged"
            );
            MergePolicy {
                levels: 0,
                ..policy
            }
        }
    }
}

/// The file names in `dir` (none if it does not exist).
fn list_dir(dir: &Path) -> StoreResult<Vec<String>> {
    let listing = StoreError::io(format!("listing {}", dir.display()));
    match fs::read_dir(dir) {
        Ok(d) => d
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()
            .map_err(listing),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(listing(e)),
    }
}

/// The range of a `dropping-<first>-<last>` marker's name.
fn parse_marker(name: &str) -> Option<(u32, u32)> {
    let range = name.strip_prefix("dropping-")?;
    ledgerstore_segment::parse_file_name(&format!("seg-{range}.idx"))
}

fn remove_file(p: &Path) -> StoreResult<()> {
    match fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(format!("removing {}", p.display()))(e)),
    }
}
