//! Repairs of the cold tier that a caller waits for: the offline repair of
//! `ledgerstore repair` (every segment and hash list read against its
//! checksum, and every one that cannot serve rebuilt on the caller's
//! thread), and a writer's wait for its builder's repairs (what a batch
//! tool does before it ingests into a dir with a lost segment).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use ledgerstore_segment::hashes;
use serde::Serialize;

use super::{SegmentSet, build};
use crate::Ledgerstore;
use crate::error::{StoreError, StoreResult};

/// A range an offline repair rebuilt.
#[derive(Debug, Clone, Serialize)]
pub struct RepairedRange {
    /// First ledger of the range.
    pub first: u32,
    /// Last ledger of the range.
    pub last: u32,
    /// Why its segment could not serve.
    pub reason: String,
    /// Keys in the rebuilt segment.
    pub keys: u64,
    /// Base ranges rebuilt from their hash lists.
    pub from_hash_lists: usize,
    /// Base ranges whose hash list was missing or damaged, written again
    /// from the ledger records first.
    pub from_ledgers: usize,
    /// Seconds the rebuild took.
    pub seconds: f64,
}

/// A hash list an offline repair wrote again from the ledger records.
#[derive(Debug, Clone, Serialize)]
pub struct RewrittenList {
    /// First ledger of the base range.
    pub first: u32,
    /// Last ledger of the base range.
    pub last: u32,
    /// What was wrong with it.
    pub reason: String,
    /// Hashes it holds now.
    pub keys: u64,
}

/// Something an offline repair could not rebuild.
#[derive(Debug, Clone, Serialize)]
pub struct RepairFailure {
    /// First ledger of the range.
    pub first: u32,
    /// Last ledger of the range.
    pub last: u32,
    /// What is damaged or missing, and why it could not be rebuilt.
    pub error: String,
}

/// What [`Ledgerstore::repair_segments`] found and did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepairReport {
    /// Listed segments (each read whole against its checksum, or rebuilt).
    pub segments: usize,
    /// Hash lists read whole against their checksum.
    pub hash_lists: usize,
    /// Ranges whose segment was rebuilt.
    pub rebuilt: Vec<RepairedRange>,
    /// Hash lists written again from the ledger records.
    pub rewritten_lists: Vec<RewrittenList>,
    /// What could not be rebuilt.
    pub failed: Vec<RepairFailure>,
}

impl RepairReport {
    /// True when everything damaged was rebuilt.
    pub fn is_ok(&self) -> bool {
        self.failed.is_empty()
    }
}

/// One step of an offline repair, as it happens.
#[derive(Debug, Clone)]
pub enum RepairEvent {
    /// A range's segment is being rebuilt.
    Rebuilding {
        /// First ledger.
        first: u32,
        /// Last ledger.
        last: u32,
        /// Why its segment cannot serve.
        reason: String,
    },
    /// A range's segment was rebuilt.
    Rebuilt(RepairedRange),
    /// A hash list was written again.
    Rewritten(RewrittenList),
    /// Something could not be rebuilt.
    Failed(RepairFailure),
}

/// Where a writer's repairs stand, for [`Ledgerstore::wait_for_repairs`].
#[derive(Debug, Clone, Default)]
pub struct RepairWait {
    /// Ranges whose segment cannot serve yet, with the reason.
    pub ranges: Vec<(u32, u32, String)>,
    /// Ledgers of those ranges.
    pub ledgers: u64,
    /// Ledgers of the rebuild in progress that were streamed so far.
    pub done: u64,
    /// The repair's failures in a row (it is retried with backoff).
    pub failures: u32,
    /// The last failure, if any.
    pub last_error: Option<String>,
}

impl RepairWait {
    /// The ranges as `a..=b, c..=d`.
    pub fn names(&self) -> String {
        self.ranges
            .iter()
            .map(|(a, b, _)| format!("{a}..={b}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How [`Ledgerstore::wait_for_repairs`] ended.
#[derive(Debug, Clone)]
pub enum RepairWaitOutcome {
    /// Every listed range serves; the ranges that were waited for.
    Repaired(Vec<(u32, u32)>),
    /// The repair failed [`build::WAIT_GIVES_UP_AFTER`] times in a row (the
    /// builder keeps retrying): the state at that point.
    Failed(RepairWait),
    /// The time given ran out first.
    TimedOut(RepairWait),
    /// No builder runs in this process (an offline store, or a layout
    /// without segments) and ranges cannot serve: see
    /// [`Ledgerstore::repair_segments`].
    NotRunning(RepairWait),
}

/// How often the wait reports its progress.
const TICK: Duration = Duration::from_millis(200);

impl SegmentSet {
    fn builder_runs(&self) -> bool {
        self.threads.lock().is_ok_and(|t| !t.is_empty())
    }

    /// The ranges that cannot serve, and how far their rebuild is.
    fn repair_wait(&self) -> RepairWait {
        let ranges: Vec<(u32, u32, String)> = self
            .slots()
            .iter()
            .filter(|s| s.seg.is_none())
            .map(|s| (s.first, s.last, s.broken.clone().unwrap_or_default()))
            .collect();
        let ledgers = ranges
            .iter()
            .map(|(a, b, _)| u64::from(b - a) + 1)
            .sum::<u64>();
        let at = self.rebuild_at.load(Ordering::Relaxed);
        let done = ranges
            .iter()
            .find(|(a, b, _)| *a <= at && at <= *b)
            .map_or(0, |(a, _, _)| u64::from(at - a) + 1);
        RepairWait {
            ranges,
            ledgers,
            done,
            ..RepairWait::default()
        }
    }

    /// Waits until no listed range needs a repair, the repair has failed
    /// [`build::WAIT_GIVES_UP_AFTER`] times in a row, or `timeout` passed;
    /// `on` sees the state every [`TICK`] meanwhile.
    pub(crate) fn wait_repaired(
        &self,
        timeout: Duration,
        on: &mut dyn FnMut(&RepairWait),
    ) -> StoreResult<RepairWaitOutcome> {
        // A timeout past what an `Instant` holds is a wait without deadline.
        let deadline = Instant::now().checked_add(timeout);
        let waited: Vec<(u32, u32)> = self
            .repair_wait()
            .ranges
            .iter()
            .map(|(a, b, _)| (*a, *b))
            .collect();
        let poisoned = || StoreError::Corrupt("segment builder state poisoned".into());
        // The slots are read with the state locked: the builder installs a
        // repaired range before it takes the lock to finish its step and
        // notify, so no wake-up is lost.
        let mut s = self.state.lock().map_err(|_| poisoned())?;
        loop {
            let mut now = self.repair_wait();
            if now.ranges.is_empty() {
                return Ok(RepairWaitOutcome::Repaired(waited));
            }
            let lane = &s.lanes[build::Lane::Merge as usize];
            now.failures = lane.failures;
            now.last_error = lane.last_error.clone();
            if !self.builder_runs() || s.stop {
                return Ok(RepairWaitOutcome::NotRunning(now));
            }
            if lane.failures >= build::WAIT_GIVES_UP_AFTER {
                return Ok(RepairWaitOutcome::Failed(now));
            }
            let left = deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Ok(RepairWaitOutcome::TimedOut(now));
            }
            on(&now);
            s = self
                .cv
                .wait_timeout(s, left.min(TICK))
                .map_err(|_| poisoned())?
                .0;
        }
    }

    /// The offline repair: rewrites every damaged hash list of a listed
    /// range from the ledger records, then rebuilds every listed range
    /// whose segment is missing, fails its header checks or its checksum.
    /// Refused while this process's builder runs (it repairs on its own).
    pub(crate) fn repair_offline(
        &self,
        evicted_below: u32,
        on: &mut dyn FnMut(&RepairEvent),
    ) -> StoreResult<RepairReport> {
        if self.builder_runs() {
            return Err(StoreError::DataDir {
                dir: self.dir.clone(),
                reason: "an offline repair needs a store opened offline: a writer's segment \
                         builder repairs in the background (wait_for_repairs)"
                    .into(),
            });
        }
        let mut report = RepairReport::default();
        let slots = self.slots();
        report.segments = slots.len();
        let end = slots.last().map_or(0, |s| s.last);
        let evicted = |first: u32| {
            if first < evicted_below {
                format!(
                    "; ledgers below {evicted_below} were evicted to the published store \
                     ([cold] keep_local_ranges), so their records are not here to rebuild \
                     from: restore the data dir from a backup"
                )
            } else {
                String::new()
            }
        };
        for (first, last) in self.hash_lists()?.into_iter().filter(|r| r.1 <= end) {
            report.hash_lists += 1;
            let path = self.dir.join(hashes::file_name(first, last));
            let Err(damage) = hashes::verify(&path, first, last) else {
                continue;
            };
            match self.rewrite_list(first, last) {
                Ok(keys) => {
                    let r = RewrittenList {
                        first,
                        last,
                        reason: damage.to_string(),
                        keys,
                    };
                    on(&RepairEvent::Rewritten(r.clone()));
                    report.rewritten_lists.push(r);
                }
                Err(e) => {
                    let f = RepairFailure {
                        first,
                        last,
                        error: format!(
                            "the hash list {} is damaged ({damage}), and writing it again from \
                             the ledger records failed: {e}{}",
                            path.display(),
                            evicted(first)
                        ),
                    };
                    on(&RepairEvent::Failed(f.clone()));
                    report.failed.push(f);
                }
            }
        }
        for slot in slots.iter() {
            let reason = match (&slot.seg, &slot.broken) {
                (Some(seg), _) => match seg.verify() {
                    Ok(()) => continue,
                    Err(e) => e.to_string(),
                },
                (None, why) => why.clone().unwrap_or_else(|| "no usable segment".into()),
            };
            let (first, last) = slot.range();
            on(&RepairEvent::Rebuilding {
                first,
                last,
                reason: reason.clone(),
            });
            match self.rebuild_now(first, last, &reason) {
                Ok(r) => {
                    on(&RepairEvent::Rebuilt(r.clone()));
                    report.rebuilt.push(r);
                }
                Err(e) => {
                    let f = RepairFailure {
                        first,
                        last,
                        error: format!(
                            "the segment cannot serve ({reason}), and rebuilding it failed: \
                             {e}{}",
                            evicted(first)
                        ),
                    };
                    on(&RepairEvent::Failed(f.clone()));
                    report.failed.push(f);
                }
            }
        }
        Ok(report)
    }

    /// Rebuilds `first..=last` in place on this thread; a hash list found
    /// damaged mid-stream is written again and the rebuild tried once more.
    fn rebuild_now(&self, first: u32, last: u32, reason: &str) -> StoreResult<RepairedRange> {
        let started = Instant::now();
        let bases = self.policy.base_ranges(first, last);
        let from_ledgers = bases
            .iter()
            .filter(|&&(a, b)| {
                hashes::count(&self.dir.join(hashes::file_name(a, b)), a, b).is_err()
            })
            .count();
        if let Err(e) = self.rebuild(first, last, true) {
            tracing::warn!(first, last, error = %e, "the rebuild failed; trying once more");
            self.rebuild(first, last, true)?;
        }
        let keys = self
            .slots()
            .iter()
            .find(|s| s.range() == (first, last))
            .and_then(|s| s.seg.as_ref().map(|seg| seg.info().keys))
            .unwrap_or(0);
        Ok(RepairedRange {
            first,
            last,
            reason: reason.to_string(),
            keys,
            from_hash_lists: bases.len() - from_ledgers,
            from_ledgers,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

impl Ledgerstore {
    /// The offline repair (`ledgerstore repair`): reads every listed
    /// segment and hash list whole against its checksum, writes every
    /// damaged hash list again from the ledger records, and rebuilds every
    /// range whose segment is missing or damaged, on this thread, calling
    /// `on` as it goes. Changes only files under `segments/`, so a store
    /// opened offline with read-only engines can run it. A layout without
    /// segments has nothing to repair. What could not be rebuilt is listed
    /// in [`RepairReport::failed`], naming what is missing.
    pub fn repair_segments(&self, on: &mut dyn FnMut(&RepairEvent)) -> StoreResult<RepairReport> {
        match &self.indexed {
            Some(tier) => tier.segments.repair_offline(self.evicted_below(), on),
            None => Ok(RepairReport::default()),
        }
    }

    /// Blocks until every listed range's segment serves again (a writer's
    /// builder repairs lost and damaged ones in the background), the repair
    /// has failed several times in a row, or `timeout` passed. `on` sees the
    /// progress every 200 ms meanwhile. Returns at once when nothing needs
    /// a repair.
    pub fn wait_for_repairs(
        &self,
        timeout: Duration,
        on: &mut dyn FnMut(&RepairWait),
    ) -> StoreResult<RepairWaitOutcome> {
        match &self.indexed {
            Some(tier) => tier.segments.wait_repaired(timeout, on),
            None => Ok(RepairWaitOutcome::Repaired(Vec::new())),
        }
    }

    /// The ranges whose segment cannot serve now (being repaired by a
    /// writer, or waiting for one).
    pub fn segments_repairing(&self) -> RepairWait {
        match &self.indexed {
            Some(tier) => tier.segments.repair_wait(),
            None => RepairWait::default(),
        }
    }
}

#[cfg(test)]
#[path = "repair_tests.rs"]
mod tests;
