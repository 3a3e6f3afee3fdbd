//! A replica's segments (`replica.rs`): each fetched whole into the disk
//! cache once, checked and memory-mapped, one fetch at a time (lookups
//! that miss the same one wait for it, no later than their deadline);
//! and the backoff of objects found damaged (segments, and pack
//! dictionaries by piece name), shared with `replica_frames.rs`.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use ledgerstore_pack::SegmentRef;
use ledgerstore_segment::Segment;
use ledgerstore_store::StoreError;

use super::{DAMAGED_FIRST, DAMAGED_MAX, Damage, Replica, segment_name};
use crate::cache::Kind;
use crate::error::{ColdError, ColdResult};

impl Replica {
    /// The mapped segment of `r`, fetched whole into the cache if needed,
    /// waiting for another lookup's fetch no later than the read's deadline
    /// ([`ledgerstore_store::read_deadline`]), and starting none past it.
    pub(super) fn segment(&self, r: &SegmentRef) -> ColdResult<Arc<Segment>> {
        self.segment_until(r, ledgerstore_store::read_deadline())
    }

    /// [`Self::segment`], waiting for another lookup's fetch (one at a
    /// time) no later than `deadline`: past it, `DeadlinePassed`, and no
    /// fetch starts. A fetch this call starts runs to its end (its file
    /// serves the next lookups).
    pub(crate) fn segment_until(
        &self,
        r: &SegmentRef,
        deadline: Option<Instant>,
    ) -> ColdResult<Arc<Segment>> {
        let key = &r.object.key;
        let name = segment_name(key);
        if let Some(seg) = self.mapped(key, &name) {
            return Ok(seg);
        }
        self.still_damaged(key)?;
        let _one = match deadline {
            None => self.fetching.lock(),
            Some(d) => self.fetching.try_lock_until(d).ok_or_else(|| {
                ColdError::Store(StoreError::DeadlinePassed {
                    what: format!(
                        "a lookup waiting for the index of ledgers {}..={}",
                        r.first, r.last
                    ),
                })
            })?,
        };
        if let Some(seg) = self.mapped(key, &name) {
            return Ok(seg);
        }
        self.still_damaged(key)?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(ColdError::Store(StoreError::DeadlinePassed {
                what: format!("a lookup in ledgers {}..={}", r.first, r.last),
            }));
        }
        let got = self.fetch_segment(r, &name);
        if let Err(ColdError::Damaged { detail, .. }) = &got {
            self.found_damaged(key, key, detail);
        }
        got.map_err(|e| e.for_ledgers(r.first, r.last))
    }

    /// The error a segment (or a pack's dictionary, by its piece name) was
    /// found damaged with, while its backoff runs.
    pub(super) fn still_damaged(&self, key: &str) -> ColdResult<()> {
        let damaged = self.damaged.lock().unwrap_or_else(|p| p.into_inner());
        match damaged.get(key) {
            Some(d) if Instant::now() < d.until => Err(ColdError::damaged(
                key,
                format!(
                    "{} (found {} time(s); fetched again in {} s)",
                    d.detail,
                    d.failures,
                    d.until.saturating_duration_since(Instant::now()).as_secs()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Forgets what `key` was found damaged with (it opened since).
    pub(super) fn clear_damage(&self, key: &str) {
        self.damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// Remembers a damaged segment (or dictionary), by `key` (a segment's
    /// key, a dictionary's piece name): not fetched again for a backoff
    /// that doubles with each failure. The warning names `object`, the
    /// object it is read from.
    pub(super) fn found_damaged(&self, key: &str, object: &str, detail: &str) {
        let mut damaged = self.damaged.lock().unwrap_or_else(|p| p.into_inner());
        let failures = damaged.get(key).map_or(0, |d| d.failures) + 1;
        let wait = DAMAGED_FIRST
            .saturating_mul(1 << (failures - 1).min(10))
            .min(DAMAGED_MAX);
        tracing::warn!(
            object,
            failures,
            wait_s = wait.as_secs(),
            detail,
            "object damaged; not fetched again until the backoff ends"
        );
        damaged.insert(
            key.to_string(),
            Damage {
                detail: detail.to_string(),
                failures,
                until: Instant::now() + wait,
            },
        );
    }

    /// The mapped segment `key`, if its file is still cached.
    fn mapped(&self, key: &str, name: &str) -> Option<Arc<Segment>> {
        let held = self.cache.touch(name);
        let mut segs = self.segments.lock().unwrap_or_else(|p| p.into_inner());
        match segs.get(key) {
            Some(s) if held => Some(Arc::clone(s)),
            Some(_) => {
                segs.remove(key);
                None
            }
            None => None,
        }
    }

    fn fetch_segment(&self, r: &SegmentRef, name: &str) -> ColdResult<Arc<Segment>> {
        let key = &r.object.key;
        let path = self.cache.path(name);
        let n = self.downloads.fetch_add(1, Ordering::Relaxed);
        let part = path.with_extension(format!("part{n}"));
        let (remote, o, p) = (Arc::clone(&self.remote), r.object.clone(), part.clone());
        let fetched =
            self.block(async move { remote.download(&o.key, o.size, &o.sha256, &p).await });
        if let Err(e) = fetched {
            let _ = std::fs::remove_file(&part);
            return Err(e);
        }
        if let Err(e) = std::fs::rename(&part, &path) {
            let _ = std::fs::remove_file(&part);
            return Err(ColdError::io(format!("rename {}", path.display()))(e));
        }
        // A local failure (EMFILE, ENOMEM on the map) is I/O, not damage:
        // no backoff, and the next lookup fetches it again.
        let opened = Segment::open(&path).map_err(|e| match e {
            ledgerstore_segment::SegmentError::Io { source, .. } => {
                ColdError::io(format!("opening {}", path.display()))(source)
            }
            other => ColdError::damaged(key, other.to_string()),
        });
        let checked = opened.and_then(|seg| self.check_segment(r, seg));
        let seg = match checked {
            Ok(seg) => Arc::new(seg),
            Err(e) => {
                // Not cached: no file may stay behind untracked.
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        self.damaged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
        self.segments
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), Arc::clone(&seg));
        let evicted = self.cache.adopt(Kind::Segment, name, r.object.size);
        if !evicted.is_empty() {
            let mut segs = self.segments.lock().unwrap_or_else(|p| p.into_inner());
            for name in &evicted {
                if let Some(k) = name.strip_prefix("seg/") {
                    segs.remove(k);
                }
            }
        }
        Ok(seg)
    }

    /// A fetched segment must cover the range the manifest lists it for.
    fn check_segment(&self, r: &SegmentRef, seg: Segment) -> ColdResult<Segment> {
        let key = &r.object.key;
        if (seg.first(), seg.last()) != (r.first, r.last) {
            return Err(ColdError::damaged(
                key,
                format!(
                    "a segment of ledgers {}..={}; the manifest lists it for {}..={}",
                    seg.first(),
                    seg.last(),
                    r.first,
                    r.last
                ),
            ));
        }
        Ok(seg)
    }
}
