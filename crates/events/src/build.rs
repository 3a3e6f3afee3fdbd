//! The builder thread: each round reads the store's range, builds every
//! missing level-0 file in ascending order (merging as windows complete),
//! then rebuilds the in-memory tail when new ledgers came.
//!
//! Memory: one level-0 window's [`EventIndexBuilder`] (its postings, ~4
//! bytes per event and topic) plus the tail's events kept as [`Item`]s
//! (at most `file_ledgers` ledgers' events with their topics' bytes, so
//! that each new ledger is read once); a merge holds what
//! [`ledgerstore_event_index::merge`] holds (the parts' dictionaries'
//! keys and one merged list, up to ~8 bytes per event of the merged
//! range).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ledgerstore_event_index::{EventIndex, EventIndexBuilder, merge};

use crate::error::{EventsError, EventsResult};
use crate::files::{IndexFile, TMP, file_name, publish, remove, sync_dir};
use crate::items::{Item, items_of};
use crate::state::{Shared, Tail};

/// The longest wait between retries after a failed round.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The served events of stored ledger `seq`, as index items: offered by
/// ingest ([`EventStore::offer`](crate::EventStore::offer)), else read
/// back from the store.
pub(crate) fn read_items(shared: &Shared, seq: u32) -> EventsResult<Vec<Item>> {
    if let Some(items) = shared.take_offered(seq) {
        shared.status().offered_used += 1;
        return Ok(items);
    }
    shared.status().read_back += 1;
    let rec = shared
        .reader
        .get_ledger(seq)
        .map_err(|source| EventsError::Store { seq, source })?
        .ok_or(EventsError::MissingLedger(seq))?;
    items_of(seq, &rec.raw)
}

/// The builder's memory across rounds: the tail's ledgers' items.
#[derive(Debug)]
pub(crate) struct Builder {
    cache: BTreeMap<u32, Vec<Item>>,
    /// Files found at open whose SHA-256 is not checked yet, newest last:
    /// the scrub checks one a round (files built here are trusted).
    unverified: Vec<(u32, u32)>,
}

impl Builder {
    /// A builder that will scrub the files `shared` holds now.
    pub(crate) fn new(shared: &Shared) -> Self {
        let mut unverified: Vec<(u32, u32)> = shared
            .snapshot()
            .files
            .values()
            .map(|f| (f.first, f.last))
            .collect();
        unverified.reverse();
        Builder {
            cache: BTreeMap::new(),
            unverified,
        }
    }

    /// Checks the SHA-256 of the oldest file not checked since open; a
    /// damaged one is dropped and rebuilt. A file merged away since is
    /// skipped.
    fn scrub_one(&mut self, shared: &Shared) {
        while let Some((first, last)) = self.unverified.pop() {
            let snap = shared.snapshot();
            let Some(f) = snap.files.get(&first).filter(|f| f.last == last) else {
                continue;
            };
            if let Err(e) = f.idx.verify() {
                drop_damaged(shared, f, &e);
            }
            return;
        }
    }
}

/// The builder thread's body: rounds until the store stops.
pub(crate) fn run(shared: Arc<Shared>, mut b: Builder) {
    let poll = shared.cfg.poll;
    let mut backoff = poll;
    // The error last logged: a failure that repeats (a dir of ledgers that
    // are not Stellar, a store that stays down) is logged once, not at
    // every retry; it stays in `stats` and the metrics.
    let mut logged: Option<String> = None;
    loop {
        let wait = match b.round(&shared) {
            Ok(()) => {
                if logged.take().is_some() {
                    tracing::info!("events: building the index works again");
                }
                shared.round_done(None);
                backoff = poll;
                poll
            }
            Err(e) => {
                let text = e.to_string();
                if logged.as_deref() != Some(text.as_str()) {
                    tracing::warn!(error = %e, retry_in = ?backoff, "events: building the index failed (retrying with backoff; logged again only if the error changes)");
                    logged = Some(text.clone());
                }
                shared.round_done(Some(text));
                let wait = backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                wait
            }
        };
        if !shared.sleep(wait) {
            return;
        }
    }
}

impl Builder {
    /// One round: missing level-0 files (oldest first, merging as windows
    /// complete), then the tail.
    pub(crate) fn round(&mut self, shared: &Shared) -> EventsResult<()> {
        let (Some(store_first), Some(mark)) =
            (shared.reader.first_ledger(), shared.reader.last_ledger())
        else {
            return Ok(());
        };
        self.merges(shared)?;
        loop {
            if shared.stopping() {
                return Ok(());
            }
            // Under the work lock from the choice to the swap: an adopted
            // file cannot land in the window meanwhile.
            let work = shared.work();
            let Some((ws, we)) = missing_window(shared, store_first, mark) else {
                break;
            };
            shared.status().building = true;
            self.build_window(shared, ws, we)?;
            drop(work);
            self.merges(shared)?;
        }
        self.update_tail(shared, store_first, mark)?;
        self.scrub_one(shared);
        Ok(())
    }

    fn build_window(&mut self, shared: &Shared, ws: u32, we: u32) -> EventsResult<()> {
        let name = file_name(ws, we);
        let tmp = shared.dir.join(format!("{TMP}{name}"));
        let mut b = EventIndexBuilder::new(ws, we).map_err(|e| EventsError::index(&tmp, e))?;
        for seq in ws..=we {
            if shared.stopping() {
                return Ok(());
            }
            let items = match self.cache.remove(&seq) {
                Some(items) => items,
                None => read_items(shared, seq)?,
            };
            for it in &items {
                let topics: Vec<&[u8]> = it.topics.iter().map(Vec::as_slice).collect();
                b.push(it.id, it.kind, it.contract.as_ref(), &topics)
                    .map_err(|e| EventsError::index(&tmp, e))?;
            }
        }
        let written = b.finish(&tmp).map_err(|e| EventsError::index(&tmp, e));
        if let Err(e) = written {
            remove(&tmp)?;
            return Err(e);
        }
        publish(&shared.dir, &tmp, &name)?;
        let file = IndexFile::open(shared.dir.join(&name), ws, we)?;
        tracing::debug!(file = %name, events = file.idx.events(), "events: built");
        shared.update(|s| s.files.insert(ws, file));
        shared.status().built += 1;
        self.cache.retain(|&seq, _| seq > we);
        Ok(())
    }

    /// Merges every complete group, lowest level first.
    fn merges(&mut self, shared: &Shared) -> EventsResult<()> {
        let mut k = 1;
        while shared.geo.size(k).is_some() {
            loop {
                if shared.stopping() {
                    return Ok(());
                }
                let _work = shared.work();
                let Some(group) = complete_group(shared, k) else {
                    break;
                };
                shared.status().building = true;
                merge_group(shared, &group)?;
            }
            k += 1;
        }
        Ok(())
    }

    /// Rebuilds the tail (the ledgers above the last file, fewer than a
    /// window) when the mark moved.
    fn update_tail(&mut self, shared: &Shared, store_first: u32, mark: u32) -> EventsResult<()> {
        let snap = shared.snapshot();
        let from = snap
            .files_end()
            .map_or(store_first, |e| e.saturating_add(1));
        self.cache.retain(|&seq, _| seq >= from);
        let current = snap.tail.as_ref().map(|t| (t.first, t.last));
        if from > mark {
            // The files reach the mark: a tail would be below their end.
            if current.is_some() {
                shared.update(|s| s.tail = None);
            }
            return Ok(());
        }
        if mark - from >= shared.cfg.file_ledgers {
            // A whole window is unbuilt (the round stopped early).
            return Ok(());
        }
        if current == Some((from, mark)) {
            return Ok(());
        }
        for seq in from..=mark {
            if let std::collections::btree_map::Entry::Vacant(v) = self.cache.entry(seq) {
                v.insert(read_items(shared, seq)?);
            }
        }
        let mut b = EventIndexBuilder::new(from, mark)
            .map_err(|e| EventsError::index(std::path::Path::new("tail"), e))?;
        for it in self.cache.range(from..=mark).flat_map(|(_, v)| v) {
            let topics: Vec<&[u8]> = it.topics.iter().map(Vec::as_slice).collect();
            b.push(it.id, it.kind, it.contract.as_ref(), &topics)
                .map_err(|e| EventsError::index(std::path::Path::new("tail"), e))?;
        }
        let idx = b
            .finish_to_vec()
            .and_then(EventIndex::from_bytes)
            .map_err(|e| EventsError::index(std::path::Path::new("tail"), e))?;
        let tail = Arc::new(Tail {
            first: from,
            last: mark,
            idx,
        });
        shared.update(|s| s.tail = Some(tail));
        Ok(())
    }
}

/// The first level-0 window at or above the store's first ledger, wholly
/// at or below the mark, that no file and no expected range covers;
/// clipped at the store's first ledger and the index's origin.
fn missing_window(shared: &Shared, store_first: u32, mark: u32) -> Option<(u32, u32)> {
    let snap = shared.snapshot();
    let expected = shared.expected();
    let origin = snap.lowest().map_or(store_first, |f| f.min(store_first));
    let mut seq = store_first;
    let covered = snap
        .files
        .values()
        .map(|f| (f.first, f.last))
        .chain(expected.iter().copied());
    // Ranges that cover `seq` push it past their end, in as many passes
    // as they chain (files are sorted; expected ranges may interleave).
    let ranges: Vec<(u32, u32)> = covered.collect();
    loop {
        let before = seq;
        for &(first, last) in &ranges {
            if first <= seq && last >= seq {
                seq = last.checked_add(1)?;
            }
        }
        if seq == before {
            break;
        }
    }
    if seq > mark {
        return None;
    }
    let (ws, we) = shared.geo.window(0, seq, origin)?;
    let ws = ws.max(seq);
    // A file above the gap starts a window, so the window ends before it.
    (we <= mark).then_some((ws, we))
}

/// Files of level below `k` that tile a level-`k` window (clipped at the
/// origin), two or more, with at most `max_file_events` events and
/// ledgers in all: the first such group.
fn complete_group(shared: &Shared, k: u32) -> Option<Vec<Arc<IndexFile>>> {
    let snap = shared.snapshot();
    // As `missing_window`'s: the store's first ledger when lower (a
    // replica whose first files are still on their way must not clip its
    // windows at its lowest file).
    let origin = match (snap.lowest(), shared.reader.first_ledger()) {
        (Some(l), Some(f)) => l.min(f),
        (l, _) => l?,
    };
    let mut group: Vec<Arc<IndexFile>> = Vec::new();
    let mut window = None;
    for f in snap.files.values() {
        let w = shared.geo.window(k, f.first, origin)?;
        if f.last > w.1 {
            // A file of level k or above.
            group.clear();
            window = None;
            continue;
        }
        if window != Some(w) {
            group.clear();
            window = Some(w);
        }
        let adjacent = group
            .last()
            .map_or(f.first == w.0, |g| g.last.checked_add(1) == Some(f.first));
        if !adjacent {
            group.clear();
            window = None;
            continue;
        }
        group.push(f.clone());
        if f.last == w.1 {
            // A merge holds ~8 B per event and 8 B per ledger (its
            // ledger table).
            let weight: u64 = group
                .iter()
                .map(|g| u64::from(g.idx.events()) + u64::from(g.last - g.first) + 1)
                .sum();
            if group.len() >= 2 && weight <= u64::from(shared.cfg.max_file_events) {
                return Some(group);
            }
            // Whole but too large to merge (or a lone file): left as is.
            group.clear();
            window = None;
        }
    }
    None
}

/// Merges `group` into one file, publishes it, swaps it in for the parts
/// and deletes them. Each part's SHA-256 is checked first: a damaged part
/// is deleted (the builder rebuilds it) and the merge fails naming it.
fn merge_group(shared: &Shared, group: &[Arc<IndexFile>]) -> EventsResult<()> {
    let (Some(a), Some(z)) = (group.first(), group.last()) else {
        return Ok(());
    };
    for p in group {
        if let Err(e) = p.idx.verify() {
            drop_file(shared, p)?;
            return Err(EventsError::index(&p.path, e));
        }
    }
    let name = file_name(a.first, z.last);
    let tmp = shared.dir.join(format!("{TMP}{name}"));
    let parts: Vec<&EventIndex> = group.iter().map(|p| &p.idx).collect();
    if let Err(e) = merge(&parts, &tmp) {
        remove(&tmp)?;
        return Err(EventsError::index(&tmp, e));
    }
    publish(&shared.dir, &tmp, &name)?;
    let file = IndexFile::open(shared.dir.join(&name), a.first, z.last)?;
    tracing::debug!(file = %name, parts = group.len(), "events: merged");
    shared.update(|s| {
        for p in group {
            s.files.remove(&p.first);
        }
        s.files.insert(a.first, file);
    });
    for p in group {
        remove(&p.path)?;
    }
    sync_dir(&shared.dir)
}

/// Forgets a file and deletes it (damaged or missing: the builder builds
/// its ledgers again).
/// Drops a file a query or the scrub found damaged (`why`): answers then
/// stop before its range until the builder has rebuilt it from the
/// stored ledgers (it is woken for that).
pub(crate) fn drop_damaged(shared: &Shared, f: &Arc<IndexFile>, why: &dyn std::fmt::Display) {
    tracing::warn!(file = %f.path.display(), %why, "events: damaged index file dropped, to be rebuilt from the stored ledgers");
    if let Err(e) = drop_file(shared, f) {
        tracing::warn!(file = %f.path.display(), error = %e, "events: dropping a damaged index file failed");
    }
    shared.wake();
}

pub(crate) fn drop_file(shared: &Shared, f: &Arc<IndexFile>) -> EventsResult<()> {
    shared.update(|s| {
        if s.files.get(&f.first).is_some_and(|g| Arc::ptr_eq(g, f)) {
            s.files.remove(&f.first);
        }
    });
    remove(&f.path)?;
    sync_dir(&shared.dir)
}
