//! Which base ranges keep their hash list.
//!
//! A hash list (`hashes-<first>-<last>.bin`) holds the same 32-byte hashes
//! as the range's ledger records, ~32 bytes a transaction. It is read by
//! merges (their input), by lookups and the duplicate check in an evicted
//! range (whose bodies left the dir), and by repairs (which fall back to
//! the ledger records). So a list is kept while a merge may still read
//! it, and once its range is evicted:
//! - a base range inside a whole top-level window that the manifest lists
//!   and that serves (no merge reads it again; a broken one's repair
//!   does) loses its list, unless it starts below the eviction boundary
//!   or below the oldest ledger record stored
//!   ([`SegmentSet::drop_unread_lists`], after every install and at a
//!   writer's open);
//! - an eviction makes sure every range it evicts has a list that matches
//!   its checksum, writing it from the ledger records where it is missing
//!   or damaged, and records its boundary past each range it wrote
//!   ([`SegmentSet::keep_lists_below`]).
//!
//! `lists` holds the boundary deletion respects. An eviction raises it to
//! its target under the lock before it reads or writes any list (it may
//! stay above the recorded boundary until the next open: that only keeps
//! files longer), so a list being deleted is never one an eviction counts
//! on.

use std::sync::atomic::{AtomicBool, Ordering};

use ledgerstore_segment::hashes;

use super::{SegmentSet, remove_file};
use crate::error::{StoreError, StoreResult};

impl SegmentSet {
    /// Deletes the hash lists no merge reads again: those of base ranges
    /// inside a listed whole top-level window that serves (a broken one
    /// is rebuilt from them), at or above the eviction boundary. Best
    /// effort: a list that cannot be deleted is only bytes, so a failure
    /// is logged, never a failed step. Returns how many it deleted.
    pub(crate) fn drop_unread_lists(&self) -> usize {
        // Under `publish`, so a window is not found broken (and its repair
        // started, reading its lists) while they are being deleted.
        let Ok(_publish) = self.publish.lock() else {
            return 0;
        };
        let Ok(kept_below) = self.lists.lock() else {
            return 0;
        };
        // Never a range whose ledger records are not all here: their
        // hashes would be nowhere else locally (a dir whose EVICTED record
        // was lost, as in a backup from before backups copied it).
        let oldest = match self.ledgers.scan(&0u32.to_be_bytes(), 1) {
            Ok(first) => match first
                .first()
                .and_then(|(k, _)| <[u8; 4]>::try_from(k.as_slice()).ok())
            {
                Some(k) => u32::from_be_bytes(k),
                None => return 0,
            },
            Err(e) => {
                tracing::warn!(error = %e, "could not read the oldest ledger record to delete the unread hash lists");
                return 0;
            }
        };
        let keep_below = (*kept_below).max(oldest);
        let slots = self.slots();
        let Some(store_first) = slots.first().map(|s| s.first) else {
            return 0;
        };
        let present = match self.hash_lists() {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "could not list the hash lists to delete the unread ones");
                return 0;
            }
        };
        let mut dropped = 0;
        for slot in slots
            .iter()
            .filter(|s| s.seg.is_some() && self.policy.is_top_window(s.first, s.last, store_first))
        {
            for &(a, b) in present
                .iter()
                .filter(|&&(a, b)| slot.first <= a && b <= slot.last && a >= keep_below)
            {
                match remove_file(&self.dir.join(hashes::file_name(a, b))) {
                    Ok(()) => dropped += 1,
                    Err(e) => {
                        tracing::warn!(first = a, last = b, error = %e, "could not delete a hash list no merge reads")
                    }
                }
            }
        }
        if dropped > 0 {
            tracing::info!(
                lists = dropped,
                "deleted the hash lists of merged top-level windows (their ledger records hold the same hashes)"
            );
        }
        dropped
    }

    /// Makes sure every base range from the recorded eviction boundary
    /// `evicted_below` up to `below` has a hash list matching its
    /// checksum (written from the ledger records where it is missing or
    /// damaged), calling `record` with each boundary to record. The
    /// boundary is raised for the lists first, so no list below it is
    /// deleted from then on, and the lock is not held while lists are
    /// read and written (the first eviction of an older dir writes the
    /// lists of all it evicts). Each list written moves the recorded
    /// boundary past its range, so a crash, an error or a stop keeps what
    /// was done; a stop before a write ends it there. Returns the
    /// boundary in force afterwards (None: no range is evicted).
    pub(crate) fn keep_lists_below(
        &self,
        evicted_below: u32,
        below: u32,
        stop: &AtomicBool,
        mut record: impl FnMut(u32) -> StoreResult<()>,
    ) -> StoreResult<Option<u32>> {
        let from = evicted_below;
        {
            let mut kept_below = self.lists.lock().map_err(|_| poisoned())?;
            *kept_below = (*kept_below).max(below);
        }
        let mut upto = below;
        let mut recorded = from;
        let slots = self.slots();
        if let Some(store_first) = slots.first().map(|s| s.first)
            && below > store_first
        {
            for (a, b) in self.policy.base_ranges(store_first, below - 1) {
                if b < from {
                    continue;
                }
                let path = self.dir.join(hashes::file_name(a, b));
                let Err(e) = hashes::verify(&path, a, b) else {
                    continue;
                };
                if stop.load(Ordering::Relaxed) {
                    upto = a;
                    break;
                }
                tracing::info!(first = a, last = b, reason = %e, "writing the hash list of a range being evicted from its ledger records");
                let written = self
                    .rewrite_list(a, b)
                    .and_then(|_| Ok(hashes::verify(&path, a, b)?));
                if let Err(again) = written {
                    // What was done so far stays done: the ranges below
                    // `a` have their lists.
                    if a > recorded.max(store_first) {
                        record(a)?;
                    }
                    return Err(StoreError::Corrupt(format!(
                        "ledgers {a}..={b} cannot be evicted: their hash list {} is needed \
                         once their bodies leave ({e}), and writing it from the ledger \
                         records failed: {again}",
                        path.display()
                    )));
                }
                // Progress survives a crash: the next open would delete
                // lists above the recorded boundary again.
                if let Some(next) = b.checked_add(1)
                    && next < below
                {
                    record(next)?;
                    recorded = next;
                }
            }
        }
        if upto <= slots.first().map_or(0, |s| s.first) {
            return Ok(None);
        }
        // Never below the recorded boundary; at it, nothing to record (an
        // eviction cut short still deletes what it left).
        if upto > recorded {
            record(upto)?;
        }
        Ok(Some(upto.max(recorded)))
    }
}

fn poisoned() -> StoreError {
    StoreError::Corrupt("the hash lists' lock was poisoned by a panic".into())
}
