//! The builder threads, one per [`Lane`]: base builds and hot drops on
//! one, merges, repairs and the scrub on the other, each one step at a
//! time, retried with backoff.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ledgerstore_db_api::{Decompress, StoredLedger, TxHash, TxPos};
use ledgerstore_segment::{SegmentBuilder, SegmentWriter, hashes};

use super::{Manifest, SegmentSet, Slot, remove_file, verified};
use crate::error::{StoreError, StoreResult};
use crate::indexed::hot;

/// Hot-index keys deleted per write transaction.
const CHUNK: usize = 16_384;

/// Ledger records read per scan when a range is rebuilt from them. A
/// format-3 dir's records arrive raw (a pubnet skeleton ~110 KB, a whole
/// record up to `limits.max_ledger_bytes`), so a scan holds 64.
const LEDGER_CHUNK: usize = 64;

/// Longest a hot-index drop waits for a batch being written before it takes
/// its next chunk anyway.
const INGEST_WAIT: Duration = Duration::from_secs(2);

/// The first retry's delay; each failure in a row doubles it, up to
/// [`RETRY_MAX`].
#[cfg(not(test))]
const RETRY_BASE: Duration = Duration::from_secs(1);
#[cfg(test)]
const RETRY_BASE: Duration = Duration::from_millis(20);
const RETRY_MAX: Duration = Duration::from_secs(60);

/// How often an idle builder thread looks for a scrub that came due.
const SCRUB_POLL: Duration = Duration::from_secs(3600);

/// `wait_idle` reports a failure once this many steps failed in a row.
pub(super) const WAIT_GIVES_UP_AFTER: u32 = 3;

/// A builder thread and the steps it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// Unfinished hot drops, then the next base range: the steps that
    /// keep the hot index (and its memory) one range deep.
    Base = 0,
    /// Repairs, merges, then the scrub: steps that may take minutes on a
    /// large window.
    Merge = 1,
}

impl Lane {
    pub(super) fn thread_name(self) -> &'static str {
        match self {
            Lane::Base => "segment-base",
            Lane::Merge => "segment-merge",
        }
    }
}

/// One step of the builder.
#[derive(Debug, Clone)]
pub(super) enum Work {
    /// Rebuild a broken listed range in place.
    Repair(u32, u32),
    /// Build the closed base range from the hot index.
    Base(u32, u32),
    /// Finish deleting an installed base range from the hot index.
    Drop(u32, u32),
    /// Build a larger range in place of the ranges it contains.
    Merge(u32, u32),
    /// Check a segment's checksum.
    Scrub(Arc<Slot>),
    /// Read the newest segments' index sections into the page cache (once
    /// after open).
    Warm,
}

impl SegmentSet {
    /// Test hook: the builder aborts the process at the named step
    /// (`LEDGERSTORE_FAILPOINT=segment-before-publish`,
    /// `segment-after-publish`, `merge-before-publish`,
    /// `merge-after-manifest`), to prove crash safety with a real crash.
    fn failpoint(&self, name: &'static str) -> StoreResult<()> {
        crate::failpoint::abort_at(name);
        #[cfg(test)]
        self.pause_at(name)?;
        #[cfg(test)]
        if let Ok(mut steps) = self.fail_once.lock()
            && let Some(i) = steps.iter().position(|s| *s == name)
        {
            steps.remove(i);
            return Err(StoreError::Corrupt(format!("injected failure at {name}")));
        }
        Ok(())
    }

    /// Test hook: waits while `name` is listed in `paused` (polling, so a
    /// stop ends the wait as a cancelled step).
    #[cfg(test)]
    fn pause_at(&self, name: &'static str) -> StoreResult<()> {
        loop {
            let listed = self.paused.lock().map(|p| p.contains(&name));
            if !listed.unwrap_or(false) {
                return Ok(());
            }
            if self.cancel.load(Ordering::Relaxed) {
                return Err(ledgerstore_segment::SegmentError::Cancelled.into());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The next step of `lane`, in priority order. Base: unfinished
    /// hot-index drops, then the next base range. Merge: repairs, merges,
    /// then (if `scrub`) one unverified segment.
    pub(super) fn next_work(
        &self,
        lane: Lane,
        first: Option<u32>,
        mark: Option<u32>,
        scrub: bool,
    ) -> Option<Work> {
        if lane == Lane::Base {
            if let Some(&(a, b)) = self.pending_drops.lock().ok()?.first() {
                return Some(Work::Drop(a, b));
            }
            let start = self.hot_from(first)?;
            let end = self.policy.base_end(start)?;
            return mark
                .is_some_and(|m| m >= end)
                .then_some(Work::Base(start, end));
        }
        let slots = self.slots();
        if let Some(s) = slots.iter().find(|s| s.seg.is_none()) {
            return Some(Work::Repair(s.first, s.last));
        }
        if self.warm_left.lock().ok()?.is_some() {
            return Some(Work::Warm);
        }
        if let (Some(a), Some(b)) = (slots.first(), slots.last()) {
            let listed: Vec<(u32, u32)> = slots.iter().map(|s| s.range()).collect();
            if let Some(&(x, y)) = self
                .policy
                .tiling(a.first, b.last)
                .iter()
                .find(|r| !listed.contains(r))
            {
                return Some(Work::Merge(x, y));
            }
        }
        if scrub {
            let now = verified::now_s();
            return slots
                .iter()
                .find(|s| {
                    s.seg.is_some()
                        && now.saturating_sub(s.verified_at.load(Ordering::Relaxed))
                            >= verified::SCRUB_EVERY_S
                })
                .cloned()
                .map(Work::Scrub);
        }
        None
    }

    pub(super) fn run(self: Arc<Self>, lane: Lane) {
        let i = lane as usize;
        loop {
            let work = {
                let Ok(mut s) = self.state.lock() else { return };
                loop {
                    if s.stop {
                        return;
                    }
                    let now = Instant::now();
                    match s.lanes[i].retry_at.filter(|t| *t > now) {
                        Some(t) => {
                            s = match self.cv.wait_timeout(s, t - now) {
                                Ok((s, _)) => s,
                                Err(_) => return,
                            };
                            continue;
                        }
                        None => s.lanes[i].retry_at = None,
                    }
                    if let Some(w) = self.next_work(lane, s.first, s.mark, true) {
                        s.lanes[i].busy = !matches!(w, Work::Scrub(_));
                        break w;
                    }
                    // Idle threads wake now and then: the merge lane for
                    // scrubs that came due (each segment is read again
                    // every week).
                    s = match self.cv.wait_timeout(s, SCRUB_POLL) {
                        Ok((s, _)) => s,
                        Err(_) => return,
                    };
                }
            };
            let result = self.step(&work);
            if let Ok(mut s) = self.state.lock() {
                let l = &mut s.lanes[i];
                l.busy = false;
                match result {
                    Ok(()) => l.failures = 0,
                    Err(StoreError::Segment(ledgerstore_segment::SegmentError::Cancelled)) => {
                        tracing::info!(step = ?work, "segment step stopped for shutdown");
                    }
                    Err(e) => {
                        l.failures += 1;
                        let delay = RETRY_BASE
                            .saturating_mul(1 << (l.failures - 1).min(16))
                            .min(RETRY_MAX);
                        tracing::error!(step = ?work, error = %e, failures = l.failures, retry_in_s = delay.as_secs_f64(), "segment step failed; the old ranges keep serving and it is retried");
                        l.last_error = Some(e.to_string());
                        l.retry_at = Some(Instant::now() + delay);
                    }
                }
            }
            self.cv.notify_all();
        }
    }

    fn step(&self, work: &Work) -> StoreResult<()> {
        match work {
            Work::Base(first, last) => self.build_base(*first, *last),
            Work::Drop(first, last) => self.finish_drop(*first, *last),
            Work::Repair(first, last) => self.rebuild(*first, *last, true),
            Work::Merge(first, last) => self.rebuild(*first, *last, false),
            Work::Scrub(slot) => {
                self.scrub(slot);
                Ok(())
            }
            Work::Warm => {
                self.warm();
                Ok(())
            }
        }
    }

    /// Reads the index sections of the newest segments that fit the
    /// budget into the page cache, once. A segment that cannot be read is
    /// skipped with a warning (its lookups read it, and the scrub checks
    /// it).
    fn warm(&self) {
        let Some(mut left) = self.warm_left.lock().ok().and_then(|mut w| w.take()) else {
            return;
        };
        let started = Instant::now();
        let (mut segments, mut bytes) = (0u32, 0u64);
        for seg in self.list().iter().rev() {
            if self.cancel.load(Ordering::Relaxed) {
                break;
            }
            let size = seg.index_bytes();
            if size > left {
                continue;
            }
            match seg.warm() {
                Ok(n) => {
                    segments += 1;
                    bytes += n;
                    left -= size;
                }
                Err(e) => tracing::warn!(error = %e, "could not read a segment's index ahead"),
            }
        }
        self.warmed.fetch_add(bytes, Ordering::Relaxed);
        tracing::info!(
            segments,
            mb = bytes as f64 / 1e6,
            took_s = started.elapsed().as_secs_f64(),
            "read the newest segments' index into the page cache"
        );
        self.keep_filters();
    }

    /// Loads the fingerprint filters of the newest segments while
    /// `segments.filter_mib` lasts (counting the ones already loaded). A
    /// loaded filter stays until its segment is replaced by a merge and
    /// dropped. Runs after the warm-up and after every install.
    pub(super) fn keep_filters(&self) {
        if self.filter_budget == 0 {
            return;
        }
        let _one = self.filters_lock.lock();
        let mut left = self.filter_budget;
        for seg in self.list().iter().rev() {
            let bytes = seg.filter_bytes();
            if bytes > left {
                continue;
            }
            seg.load_filter();
            left -= bytes;
        }
    }

    /// Checks a segment's checksum; a mismatch marks its range broken, and
    /// the next step repairs it.
    fn scrub(&self, slot: &Arc<Slot>) {
        let Some(seg) = &slot.seg else { return };
        self.scrubs.fetch_add(1, Ordering::Relaxed);
        match seg.verify() {
            Ok(()) => {
                slot.verified_at.store(verified::now_s(), Ordering::Relaxed);
                let _publish = self.publish.lock();
                verified::save(&self.dir, &self.slots());
            }
            Err(e) => {
                tracing::error!(first = slot.first, last = slot.last, error = %e, "the scrub found a damaged segment; lookups in its range answer UNAVAILABLE until it is rebuilt");
                let _publish = self.publish.lock();
                let next = self
                    .slots()
                    .iter()
                    .map(|s| {
                        if Arc::ptr_eq(s, slot) {
                            Slot::broken(s.first, s.last, e.to_string())
                        } else {
                            Arc::clone(s)
                        }
                    })
                    .collect();
                self.install(next);
            }
        }
    }

    /// Builds, publishes and installs the base range `first..=last` from
    /// the hot index, then drops the range from the hot index.
    fn build_base(&self, first: u32, last: u32) -> StoreResult<()> {
        let started = Instant::now();
        let mut b = SegmentBuilder::new(first, last)?;
        self.scan_hot(first, last, |hash, pos| {
            b.push(hash.0, pos)?;
            Ok(())
        })?;
        let keys = b.len();
        let tmp = self.dir.join(format!("tmp-{first}-{last}.idx"));
        let list = self.dir.join(hashes::file_name(first, last));
        let info = b.write_with_hashes(&tmp, &list)?;
        self.failpoint("segment-before-publish")?;
        crate::datadir::write_atomic(&self.dir, &self.marker(first, last), b"")?;
        let path = ledgerstore_segment::publish(&tmp, &self.dir, first, last)?;
        let seg = Arc::new(ledgerstore_segment::Segment::open(&path)?);
        let publish = self.publish.lock();
        let mut next: Vec<Arc<Slot>> = self.slots().iter().cloned().collect();
        next.push(Slot::serving(seg, verified::now_s()));
        self.record(&next)?;
        self.install(next);
        drop(publish);
        self.keep_filters();
        if let Ok(mut p) = self.pending_drops.lock() {
            p.push((first, last));
        }
        self.failpoint("segment-after-publish")?;
        self.finish_drop(first, last)?;
        self.drop_unread_lists();
        let took = started.elapsed();
        self.builds.fetch_add(1, Ordering::Relaxed);
        self.build_micros.fetch_add(micros(took), Ordering::Relaxed);
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

    /// Deletes an installed base range from the hot index, then its marker.
    fn finish_drop(&self, first: u32, last: u32) -> StoreResult<()> {
        self.drop_hot_range(first, last)?;
        self.remove_marker(first, last)?;
        if let Ok(mut p) = self.pending_drops.lock() {
            p.retain(|r| *r != (first, last));
        }
        Ok(())
    }

    /// Writes the manifest listing `slots`, then the record of their
    /// checks (a new segment counts as read whole: it was just written).
    fn record(&self, slots: &[Arc<Slot>]) -> StoreResult<()> {
        Manifest::new(self.policy, slots.iter().map(|s| s.range()).collect()).write(&self.dir)?;
        verified::save(&self.dir, slots);
        Ok(())
    }

    /// Builds `first..=last` from its base ranges' hash lists and swaps it
    /// in for the listed ranges it contains (a merge), or for itself (a
    /// `repair`). Their files are deleted only after the manifest no longer
    /// lists them.
    pub(super) fn rebuild(&self, first: u32, last: u32, repair: bool) -> StoreResult<()> {
        let started = Instant::now();
        let slots = self.slots();
        if let Some(s) = slots
            .iter()
            .find(|s| s.first <= last && first <= s.last && !(first <= s.first && s.last <= last))
        {
            return Err(StoreError::Corrupt(format!(
                "segment {}..={} straddles the range {first}..={last} being built",
                s.first, s.last
            )));
        }
        // The base ranges' hash lists, counted from their headers (a
        // missing or malformed one is rewritten from the ledger records
        // first), then streamed once into the partitioned writer, so memory
        // stays bounded whatever the window's size. A list whose checksum
        // fails during the stream is rewritten too, and the step fails: the
        // retry builds from the rewritten list.
        let bases = self.policy.base_ranges(first, last);
        let mut keys = 0u64;
        for &(a, b) in &bases {
            keys += self.ensure_list(a, b)?;
        }
        let tmp = self.dir.join(format!("tmp-{first}-{last}.idx"));
        let mut w = SegmentWriter::new(first, last, keys, &tmp)?;
        w.cancel_on(Arc::clone(&self.cancel));
        for &(a, b) in &bases {
            if self.cancel.load(Ordering::Relaxed) {
                return Err(ledgerstore_segment::SegmentError::Cancelled.into());
            }
            let list = self.dir.join(hashes::file_name(a, b));
            let pushed = hashes::scan(&list, a, b, |seq, hs| {
                self.rebuild_at.store(seq, Ordering::Relaxed);
                w.push_ledger(seq, hs)
            });
            if let Err(err) = pushed {
                if matches!(err, ledgerstore_segment::SegmentError::Corrupt { .. }) {
                    tracing::warn!(first = a, last = b, error = %err, "a hash list failed its checksum mid-merge");
                    self.rewrite_list(a, b)?;
                }
                return Err(err.into());
            }
        }
        w.finish(&tmp)?;
        self.failpoint("merge-before-publish")?;
        let path = ledgerstore_segment::publish(&tmp, &self.dir, first, last)?;
        let seg = Arc::new(ledgerstore_segment::Segment::open(&path)?);
        // The list as it is now: the base lane may have added ranges after
        // this one since the step began (it never touches ranges inside).
        let publish = self.publish.lock();
        let (inside, mut next): (Vec<Arc<Slot>>, Vec<Arc<Slot>>) = self
            .slots()
            .iter()
            .cloned()
            .partition(|s| first <= s.first && s.last <= last);
        next.push(Slot::serving(seg, verified::now_s()));
        next.sort_by_key(|s| s.first);
        self.record(&next)?;
        self.failpoint("merge-after-manifest")?;
        self.install(next);
        drop(publish);
        self.keep_filters();
        for s in inside.iter().filter(|s| s.range() != (first, last)) {
            remove_file(
                &self
                    .dir
                    .join(ledgerstore_segment::file_name(s.first, s.last)),
            )?;
        }
        self.drop_unread_lists();
        let took = started.elapsed();
        self.merges.fetch_add(1, Ordering::Relaxed);
        self.merge_micros.fetch_add(micros(took), Ordering::Relaxed);
        tracing::info!(
            first,
            last,
            keys,
            replaced = inside.len(),
            repair,
            total_s = took.as_secs_f64(),
            "segment {} and swapped in",
            if repair { "rebuilt" } else { "merged" }
        );
        Ok(())
    }

    /// The count of the base range `first..=last`'s hash list, from its
    /// header; a missing or malformed list is rewritten from the ledger
    /// records first. A failure names the list and what the ledger records
    /// lack.
    fn ensure_list(&self, first: u32, last: u32) -> StoreResult<u64> {
        let path = self.dir.join(hashes::file_name(first, last));
        match hashes::count(&path, first, last) {
            Ok(n) => Ok(n),
            Err(e) => {
                tracing::warn!(first, last, error = %e, "rewriting the range's hash list from the ledger records");
                self.rewrite_list(first, last).map_err(|again| {
                    let again = match again {
                        StoreError::Corrupt(m) => m,
                        other => other.to_string(),
                    };
                    StoreError::Corrupt(format!(
                        "the hash list {} is missing or damaged ({e}), and writing it again \
                         from the ledger records failed: {again}",
                        path.display()
                    ))
                })
            }
        }
    }

    /// Writes the base range's hash list from the ledger records; returns
    /// its count.
    pub(super) fn rewrite_list(&self, first: u32, last: u32) -> StoreResult<u64> {
        let v = self.hashes_in_ledgers(first, last)?;
        let path = self.dir.join(hashes::file_name(first, last));
        hashes::write_list(&path, first, last, &v)?;
        Ok(v.len() as u64)
    }

    /// The hashes that the ledger records of `first..=last` list
    /// (transactions and aliases), at their positions.
    fn hashes_in_ledgers(&self, first: u32, last: u32) -> StoreResult<Vec<([u8; 32], TxPos)>> {
        let mut out = Vec::new();
        let mut next = first;
        'scan: loop {
            let chunk = self.ledgers.scan(&next.to_be_bytes(), LEDGER_CHUNK)?;
            for (k, v) in &chunk {
                let rec = StoredLedger::decompress(v)?;
                if rec.seq > last {
                    break 'scan;
                }
                if k.as_slice() != rec.seq.to_be_bytes() {
                    return Err(StoreError::Corrupt(format!(
                        "ledgers: the record under key {} says ledger {}: ledgers \
                         {first}..={last} cannot be read whole",
                        hex::encode(k),
                        rec.seq
                    )));
                }
                if rec.seq != next {
                    return Err(StoreError::Corrupt(format!(
                        "ledgers: the record of ledger {next} is missing (the next one is \
                         ledger {}): ledgers {first}..={last} cannot be read whole",
                        rec.seq
                    )));
                }
                self.rebuild_at.store(rec.seq, Ordering::Relaxed);
                // Aliases at n + k, where ingest stored their bodies.
                for (index, h) in rec.lookup_hashes().enumerate() {
                    let index = u32::try_from(index).map_err(|_| {
                        StoreError::Corrupt(format!("ledger {} lists too many txs", rec.seq))
                    })?;
                    out.push((
                        h.0,
                        TxPos {
                            seq: rec.seq,
                            index,
                        },
                    ));
                }
                if rec.seq == last {
                    break 'scan;
                }
                next = rec.seq + 1;
            }
            if chunk.len() < LEDGER_CHUNK {
                return Err(StoreError::Corrupt(format!(
                    "ledgers: the record of ledger {next} is missing (no later one either): \
                     ledgers {first}..={last} cannot be read whole"
                )));
            }
        }
        Ok(out)
    }

    /// Calls `f` for every hot-index entry positioned in `first..=last`,
    /// in position order.
    fn scan_hot(
        &self,
        first: u32,
        last: u32,
        f: impl FnMut(TxHash, TxPos) -> StoreResult<()>,
    ) -> StoreResult<()> {
        hot::scan_range(self.hot.as_ref(), first, last, f)
    }

    /// Forgets `first..=last` in the hot map, then deletes its entries
    /// from the hot index, a chunk per write transaction.
    pub(super) fn drop_hot_range(&self, first: u32, last: u32) -> StoreResult<()> {
        self.hot_map.remove_range(first, last);
        let mut keys = Vec::new();
        self.scan_hot(first, last, |_, pos| {
            keys.push(pos.to_bytes());
            Ok(())
        })?;
        for chunk in keys.chunks(CHUNK) {
            self.wait_for_ingest();
            let mut w = self.hot.begin_write()?;
            for k in chunk {
                w.delete(k)?;
            }
            w.finish()?;
            w.commit()?;
        }
        Ok(())
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
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
