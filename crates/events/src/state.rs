//! What the builder thread and the queries share: the published files and
//! the tail (swapped under a lock, read as a snapshot of `Arc`s), the
//! builder's status, and the condvar that wakes the builder and the
//! waiters.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use ledgerstore_event_index::EventIndex;
use ledgerstore_store::Reader;

use crate::config::EventsConfig;
use crate::files::{Geometry, IndexFile};
use crate::items::Item;

/// The in-memory index of the ledgers above the last file.
#[derive(Debug)]
pub(crate) struct Tail {
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) idx: EventIndex,
}

/// The files (by first ledger, disjoint) and the tail. The tail may
/// start at or below the last file's end for a moment (a level-0 file was
/// just published from the tail's ledgers): its ledgers up to that end
/// are ignored ([`Snapshot::tail_from`]).
#[derive(Debug, Default, Clone)]
pub(crate) struct Snapshot {
    pub(crate) files: BTreeMap<u32, Arc<IndexFile>>,
    pub(crate) tail: Option<Arc<Tail>>,
}

impl Snapshot {
    /// The end of the last file.
    pub(crate) fn files_end(&self) -> Option<u32> {
        self.files.values().next_back().map(|f| f.last)
    }

    /// The first tail ledger a query reads.
    pub(crate) fn tail_from(&self) -> u32 {
        self.files_end().map_or(0, |e| e.saturating_add(1))
    }

    /// The lowest ledger indexed (by a file or the tail).
    pub(crate) fn lowest(&self) -> Option<u32> {
        match (self.files.values().next(), &self.tail) {
            (Some(f), _) => Some(f.first),
            (None, Some(t)) => Some(t.first),
            (None, None) => None,
        }
    }

    /// The last ledger such that every ledger from `from` up to it is
    /// searchable (a hole left by a deleted file stops it); None when
    /// `from` is not.
    pub(crate) fn covered_through(&self, from: u32) -> Option<u32> {
        let mut pos = u64::from(from);
        let tail = self.tail.as_ref().map(|t| (t.first, t.last));
        for (first, last) in self.files.values().map(|f| (f.first, f.last)).chain(tail) {
            if u64::from(last) < pos {
                continue;
            }
            if u64::from(first) > pos {
                break;
            }
            pos = u64::from(last) + 1;
        }
        (pos > u64::from(from)).then(|| (pos - 1) as u32)
    }
}

/// The builder's status, behind the mutex the condvar waits on.
#[derive(Debug, Default, Clone)]
pub(crate) struct Status {
    /// A wake-up asked for ([`EventStore::notify`](crate::EventStore::notify)).
    pub(crate) wake: bool,
    /// The builder is building or merging files.
    pub(crate) building: bool,
    /// Why the latest round failed; cleared by a round that succeeds.
    pub(crate) last_error: Option<String>,
    /// Rounds finished (waiters watch it).
    pub(crate) rounds: u64,
    /// Level-0 files built from the store since open.
    pub(crate) built: u64,
    /// Files adopted since open ([`EventStore::adopt`](crate::EventStore::adopt)).
    pub(crate) adopted: u64,
    /// Ledgers indexed from ingest's bytes since open.
    pub(crate) offered_used: u64,
    /// Ledgers read back from the store to be indexed since open.
    pub(crate) read_back: u64,
    /// What offers waited for the builder since open
    /// ([`Shared::wait_room`]).
    pub(crate) ingest_waited: Duration,
}

pub(crate) struct Shared {
    pub(crate) dir: PathBuf,
    pub(crate) reader: Arc<dyn Reader>,
    pub(crate) cfg: EventsConfig,
    pub(crate) geo: Geometry,
    pub(crate) index: RwLock<Snapshot>,
    pub(crate) status: Mutex<Status>,
    pub(crate) cond: Condvar,
    pub(crate) stop: AtomicBool,
    /// Held while a file is built, merged or adopted, so the files change
    /// one way at a time.
    pub(crate) work: Mutex<()>,
    /// Ranges whose files are on their way
    /// ([`EventStore::expect`](crate::EventStore::expect)): not built here.
    pub(crate) expected: Mutex<Option<crate::ExpectedRanges>>,
    /// Ledgers' items ingest offered, by ledger, for the builder to take
    /// instead of reading them back ([`EventStore::offer`](crate::EventStore::offer)).
    pub(crate) offered: Mutex<Offered>,
    /// Signalled when offered items land or an offer ends.
    pub(crate) offered_cond: Condvar,
    /// [`OFFER_STALL`] (tests shorten it).
    pub(crate) offer_stall: Mutex<Duration>,
}

/// The longest the builder waits for a ledger an offer under way has yet
/// to hand over, before it reads it back.
const OFFER_WAIT: Duration = Duration::from_secs(2);

/// The longest an offer waits for the builder to make room
/// ([`Shared::wait_room`]) before it gives up on keeping its ledgers.
pub(crate) const OFFER_STALL: Duration = Duration::from_secs(30);

/// Offered items by ledger, and their bytes.
#[derive(Debug, Default)]
pub(crate) struct Offered {
    pub(crate) items: BTreeMap<u32, (Vec<Item>, usize)>,
    pub(crate) bytes: usize,
    /// An offer under way: the next ledger it has yet to hand over (or
    /// skip), and its last.
    pub(crate) in_flight: Option<(u32, u32)>,
    /// The builder's next ledger when an offer last gave up waiting for
    /// room ([`Shared::wait_room`]): no offer waits again until the
    /// builder moves past it, so a builder that stalls costs ingest one
    /// [`OFFER_STALL`], not one per window offered.
    pub(crate) gave_up_at: Option<u32>,
    /// Offers no longer wait ([`EventStore::release_offers`](crate::EventStore::release_offers):
    /// shutdown began).
    pub(crate) released: bool,
}

/// Marks an offer under way for its lifetime.
pub(crate) struct InFlight<'a>(&'a Shared);

impl<'a> InFlight<'a> {
    pub(crate) fn start(shared: &'a Shared, first: u32, last: u32) -> Self {
        shared.offered_lock().in_flight = Some((first, last));
        InFlight(shared)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.offered_lock().in_flight = None;
        self.0.offered_cond.notify_all();
    }
}

impl Status {
    /// Its latest round failed and no round is building now: a round
    /// that recovers builds with the old error still set (a round's end
    /// clears it), and offers wait for it, so it catches up.
    pub(crate) fn failing(&self) -> bool {
        self.last_error.is_some() && !self.building
    }
}

impl Offered {
    fn remove(&mut self, seq: u32) -> Option<Vec<Item>> {
        let (items, bytes) = self.items.remove(&seq)?;
        self.bytes -= bytes;
        Some(items)
    }

    /// Forgets the ledgers below `from`.
    fn forget_below(&mut self, from: u32) {
        while let Some((&seq, _)) = self.items.first_key_value() {
            if seq >= from {
                break;
            }
            self.remove(seq);
        }
    }
}

impl Shared {
    pub(crate) fn snapshot(&self) -> Snapshot {
        self.index.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the files or the tail, then wakes an offer waiting for room
    /// ([`Self::wait_room`]).
    pub(crate) fn update<T>(&self, f: impl FnOnce(&mut Snapshot) -> T) -> T {
        let out = {
            let mut s = self.index.write().unwrap_or_else(|p| p.into_inner());
            f(&mut s)
        };
        // Under the waiter's lock (taken after the index's is released:
        // `offered` calls `next_wanted` under it), so a waiter between its
        // check and its wait does not miss the change.
        drop(self.offered_lock());
        self.offered_cond.notify_all();
        out
    }

    /// How many ledgers past its files the builder keeps offers for
    /// ([`OFFER_WINDOWS`](crate::OFFER_WINDOWS) level-0 windows).
    pub(crate) fn offer_room(&self) -> u64 {
        u64::from(self.cfg.file_ledgers) * crate::OFFER_WINDOWS
    }

    /// The first ledger the builder has yet to index: past its files
    /// (the store's first ledger when it has none).
    pub(crate) fn next_wanted(&self) -> u32 {
        match self.snapshot().files_end() {
            Some(e) => e.saturating_add(1),
            None => self.reader.first_ledger().unwrap_or(0),
        }
    }

    /// Backpressure on ingest: while ledger `last`, just committed, lies
    /// past the ledgers the builder keeps offers for
    /// ([`Self::offer_room`] past its files), waits for the builder to
    /// publish files, so that the ledgers are offered rather than read
    /// back from the store later (reading one back costs several times
    /// indexing it from ingest's bytes, and a builder that fell behind during a long merge never
    /// caught up: docs/benchmarks.md, "The event index's builder fell
    /// behind for good"). Only once the builder keeps pace with offers
    /// (it has indexed an offered ledger since open): one indexing
    /// history from the store is not waited for. Nor one further behind
    /// than [`CATCH_UP_WINDOWS`](crate::CATCH_UP_WINDOWS) windows (a
    /// long failure's backlog is read back while ingest goes on, so a
    /// catch-up never holds ingest for longer than reading that many
    /// windows back takes), stopped, not `alive`, or failing (its latest
    /// round's error, and no round building now); nor after [`release`](crate::EventStore::release_offers);
    /// nor longer than [`OFFER_STALL`], nor again at the builder's
    /// position where an offer gave up (a builder that moves on after a
    /// stall is waited for again, so it catches up). Returns how long it
    /// waited.
    pub(crate) fn wait_room(&self, last: u32, alive: impl Fn() -> bool) -> Duration {
        let room = self.offer_room();
        let start = Instant::now();
        let mut waited = false;
        loop {
            let from = self.next_wanted();
            let lag = (u64::from(last) + 1).saturating_sub(u64::from(from));
            let catch_up = u64::from(self.cfg.file_ledgers) * crate::CATCH_UP_WINDOWS;
            let (in_step, failing) = {
                let st = self.status();
                (st.offered_used > 0, st.failing())
            };
            if lag <= room || lag > catch_up || !in_step || failing || self.stopping() || !alive() {
                break;
            }
            let mut o = self.offered_lock();
            if o.released || o.gave_up_at == Some(from) {
                break;
            }
            let stall = *self.offer_stall.lock().unwrap_or_else(|p| p.into_inner());
            if start.elapsed() >= stall {
                o.gave_up_at = Some(from);
                drop(o);
                tracing::warn!(
                    ledger = last,
                    builder_at = from,
                    waited = ?stall,
                    "events: the builder made no room for an offer; ingest goes on, and the ledgers it could not keep are read back from the store (offers wait again once the builder moves)"
                );
                break;
            }
            if self.next_wanted() != from {
                continue;
            }
            // Bounded, so a missed wake-up costs at most this.
            waited = true;
            drop(
                self.offered_cond
                    .wait_timeout(o, Duration::from_millis(100))
                    .unwrap_or_else(|p| p.into_inner()),
            );
        }
        if !waited {
            return Duration::ZERO;
        }
        let waited = start.elapsed();
        self.status().ingest_waited += waited;
        waited
    }

    pub(crate) fn work(&self) -> MutexGuard<'_, ()> {
        self.work.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn expected(&self) -> Vec<(u32, u32)> {
        let source = self
            .expected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        source
            .map(|f| f(self.snapshot().files_end()))
            .unwrap_or_default()
    }

    /// Keeps offered items, but those below `from()` (asked under the
    /// lock: the builder may have gone past them meanwhile) and those
    /// past the byte budget.
    /// Keeps offered items, but those below `from()` (asked under the
    /// lock: the builder may have gone past them meanwhile) and those
    /// past the byte budget; the offer under way has handed over (or
    /// skipped) every ledger below `past`.
    pub(crate) fn offered(&self, items: Vec<(u32, Vec<Item>)>, from: impl Fn() -> u32, past: u32) {
        let mut o = self.offered_lock();
        let from = from();
        o.forget_below(from);
        for (seq, items) in items.into_iter().filter(|(seq, _)| *seq >= from) {
            let bytes = items
                .iter()
                .map(|i| {
                    std::mem::size_of::<Item>()
                        + i.topics.iter().map(|t| t.len() + 24).sum::<usize>()
                })
                .sum::<usize>();
            o.remove(seq);
            if o.bytes + bytes > crate::OFFER_BYTES {
                break;
            }
            o.bytes += bytes;
            o.items.insert(seq, (items, bytes));
        }
        if let Some(f) = o.in_flight.as_mut() {
            f.0 = f.0.max(past);
        }
        drop(o);
        self.offered_cond.notify_all();
    }

    /// See [`EventStore::release_offers`](crate::EventStore::release_offers).
    pub(crate) fn release_offers(&self) {
        self.offered_lock().released = true;
        self.offered_cond.notify_all();
    }

    fn offered_lock(&self) -> MutexGuard<'_, Offered> {
        self.offered.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The items ingest offered for `seq`, taken; waits (at most
    /// [`OFFER_WAIT`]) while an offer under way has yet to hand it over,
    /// rather than have the caller read it back.
    pub(crate) fn take_offered(&self, seq: u32) -> Option<Vec<Item>> {
        let until = Instant::now() + OFFER_WAIT;
        let mut o = self.offered_lock();
        loop {
            if let Some(items) = o.remove(seq) {
                // What lies below is built (the builder goes in order).
                o.forget_below(seq);
                return Some(items);
            }
            let coming = o
                .in_flight
                .is_some_and(|(next, last)| next <= seq && seq <= last);
            let now = Instant::now();
            if !coming || now >= until || self.stopping() {
                o.forget_below(seq);
                return None;
            }
            o = self
                .offered_cond
                .wait_timeout(o, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    pub(crate) fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Wakes the builder.
    pub(crate) fn wake(&self) {
        self.status().wake = true;
        self.cond.notify_all();
    }

    /// Asks the builder to stop.
    pub(crate) fn halt(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake();
    }

    /// The builder's wait between rounds: until `wait` passes, a wake-up
    /// or a stop. False once stopping.
    pub(crate) fn sleep(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        let mut st = self.status();
        while !st.wake && !self.stopping() {
            let now = Instant::now();
            if now >= until {
                break;
            }
            st = self
                .cond
                .wait_timeout(st, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        st.wake = false;
        !self.stopping()
    }

    /// Records a round's end and wakes the waiters.
    pub(crate) fn round_done(&self, error: Option<String>) {
        let mut st = self.status();
        st.rounds += 1;
        st.building = false;
        st.last_error = error;
        drop(st);
        self.cond.notify_all();
    }

    /// See [`EventStore::indexed_through`](crate::EventStore::indexed_through).
    pub(crate) fn indexed_through(&self) -> Option<u32> {
        let first = self.reader.first_ledger()?;
        self.snapshot().covered_through(first)
    }

    /// Waits until `done` holds for [`Self::indexed_through`], or
    /// `timeout` passes.
    pub(crate) fn wait_for(&self, timeout: Duration, done: impl Fn(Option<u32>) -> bool) -> bool {
        let until = Instant::now() + timeout;
        let mut st = self.status();
        loop {
            if done(self.indexed_through()) {
                return true;
            }
            let now = Instant::now();
            if now >= until || self.stopping() {
                return false;
            }
            st = self
                .cond
                .wait_timeout(st, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Waits until `done` holds for the builder's status, or `timeout`.
    pub(crate) fn wait_status(&self, timeout: Duration, done: impl Fn(&Status) -> bool) -> bool {
        let until = Instant::now() + timeout;
        let mut st = self.status();
        loop {
            if done(&st) {
                return true;
            }
            let now = Instant::now();
            if now >= until || self.stopping() {
                return false;
            }
            st = self
                .cond
                .wait_timeout(st, until - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}
