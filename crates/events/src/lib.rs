//! The full-history contract-event index for getEvents, kept in a dir
//! beside a store's data (the daemon's `<data dir>/events/`), and the
//! queries over it.
//!
//! The index is a set of immutable [`ledgerstore_event_index`] files, each
//! of one closed ledger range, plus an in-memory index of the newest
//! ledgers (the tail). A builder thread follows the store's mark
//! ([`Reader::last_ledger`], polled every `poll` and on [`EventStore::notify`]);
//! a query ([`EventStore::query`]) walks the files' posting lists and
//! reads each hit's event from the store (never scanning ledgers).
//!
//! # On-disk layout
//!
//! | name | what |
//! |---|---|
//! | `EVENTS` | marker: `ledgerstore-events 1`, `file_ledgers N`, `fan_out M` (one a line), written at creation |
//! | `ev-<first:010>-<last:010>.idx` | the index of ledgers `first..=last` ([`ledgerstore_event_index`]'s format, SHA-256 trailer) |
//! | `tmp-…` | a file being written; deleted at open |
//!
//! # Geometry
//!
//! A level-k window is `file_ledgers × fan_out^k` ledgers aligned to a
//! multiple of that size, clipped below at the origin (the first ledger
//! indexed: the store's first ledger when the index began, so the first
//! windows may start unaligned). The builder writes level-0 files, one
//! per window wholly at or below the mark, in ascending order; when the
//! files of a level-k window tile it (two or more), they are merged
//! ([`ledgerstore_event_index::merge`], byte-identical to a direct
//! build) into the window's file, which is renamed in before the parts
//! are deleted. So a query touches at most `fan_out − 1` files per level
//! plus the tail. A group over [`EventsConfig::max_file_events`] events
//! and ledgers is not merged (a merge holds ~8 bytes of each in memory):
//! its files stay, and a long query reads more of them.
//!
//! # Threads and memory
//!
//! One builder thread; it holds one level-0 window's builder, the tail's
//! events (fewer than `file_ledgers` ledgers'), or one merge. Queries run
//! on the caller's thread and read the store ([`Reader`]; run them off
//! async workers when [`Reader::reads_may_block`]). [`EventStore::close`]
//! (or drop) stops the builder between ledgers and merges.
//!
//! # Invariants
//!
//! - Every file is published by writing `tmp-<name>`, syncing it,
//!   renaming it and syncing the dir; a published file never changes.
//! - Every file ends a level-0 window (`(last + 1) % file_ledgers == 0`);
//!   the tail (fewer than `file_ledgers` ledgers above the last file) is
//!   never written.
//! - A file that does not open (damaged header or sections) is deleted at
//!   open, and one whose SHA-256 fails is deleted by
//!   [`EventStore::verify`] or before it is merged; the builder rebuilds
//!   its ledgers from the store.
//! - Published files are disjoint. A crash between a merge's rename and
//!   its deletes leaves files covered by the merged one: open deletes
//!   them. Files that overlap otherwise, or names that are not ours,
//!   refuse the open, naming the file.
//! - The geometry is the marker's: reopening with other settings keeps
//!   the recorded ones (and logs it).
//! - [`EventStore::indexed_through`] is the last ledger such that every
//!   ledger from [`EventStore::first_ledger`] up to it is searchable; a
//!   query never reads past it, so a hole (a damaged file deleted by
//!   [`EventStore::verify`], until the builder rebuilds it from the
//!   stored ledgers) shortens answers rather than silently skipping
//!   events.
//! - A ledger whose events cannot be read stops the builder at that
//!   ledger (its error is in [`EventStats::last_error`], retried with
//!   backoff): nothing is skipped. Open the store only for Stellar
//!   networks: a synthetic ledger never indexes.
//! - The store's first ledger is assumed never to decrease.

mod adopt;
#[cfg(test)]
mod adopt_tests;
#[cfg(test)]
mod backpressure_tests;
mod build;
mod config;
mod describe;
mod durable;
mod error;
mod files;
mod items;
#[cfg(test)]
mod offer_tests;
mod query;
mod state;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use ledgerstore_db_api::LedgerInput;
use ledgerstore_event_index::Query;
use ledgerstore_stellar::events::EventId;
use ledgerstore_store::Reader;
use rayon::prelude::*;

pub use adopt::{FileInfo, local_files};
pub use config::{EventsConfig, FAN_OUT_MAX, FILE_LEDGERS_MAX, LOCK, MARKER, SOURCE};
pub use describe::{DirSummary, describe};
pub use error::{EventsError, EventsResult};
pub use query::{Page, PageLimits, ServedEvent, Stop};

use files::{Geometry, IndexFile, file_name};
use state::{Shared, Snapshot, Status};

/// Files of one level ([`EventStats::levels`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelStats {
    /// The level: its files cover `file_ledgers × fan_out^level` ledgers.
    pub level: u32,
    /// Files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
}

/// Figures of the events store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventStats {
    /// Index files.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Events indexed (files and tail).
    pub events: u64,
    /// The first searchable ledger.
    pub first_ledger: Option<u32>,
    /// See [`EventStore::indexed_through`].
    pub indexed_through: Option<u32>,
    /// The builder is building or merging files now.
    pub building: bool,
    /// Why the builder's latest round failed (it retries).
    pub last_error: Option<String>,
    /// Level-0 files built from the stored ledgers since open.
    pub built_files: u64,
    /// Published files adopted since open (a replica's fetched files).
    pub adopted_files: u64,
    /// Ledgers indexed from the bytes ingest offered since open.
    pub ledgers_offered: u64,
    /// Ledgers read back from the store to be indexed since open.
    pub ledgers_read_back: u64,
    /// How long offers waited for the builder to make room since open
    /// ([`EventStore::offer`]): ingest's time held back by the index.
    pub ingest_waited: Duration,
    /// Per level, lowest first.
    pub levels: Vec<LevelStats>,
    /// The settings in force (the marker's geometry).
    pub config: EventsConfig,
}

/// What [`EventStore::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Files whose SHA-256 was checked.
    pub checked: usize,
    /// Damaged or missing files, with why; each was deleted and will be
    /// rebuilt from the stored ledgers.
    pub damaged: Vec<(String, String)>,
}

/// The events store: the index files of a dir, the builder thread that
/// keeps them, and queries.
pub struct EventStore {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The dir's `LOCK`, locked while open.
    _lock: std::fs::File,
}

/// How many level-0 windows past its files the builder keeps offered
/// ledgers for ([`EventStore::offer`]): 4 × 64 ledgers by default.
pub const OFFER_WINDOWS: u64 = 4;

/// How far behind its files, in level-0 windows, a builder that keeps
/// pace with offers is still waited for ([`EventStore::offer`]): 64 × 64
/// ledgers by default, what it reads back in about half a minute. A
/// builder further behind (after a long failure) is left to read back
/// while ingest goes on.
pub const CATCH_UP_WINDOWS: u64 = 64;

/// The most bytes of offered events kept (topics and ~64 bytes an
/// event): pubnet's ~650 events a ledger take ~100–160 KB, so the
/// default 256 ledgers fit.
pub const OFFER_BYTES: usize = 64 << 20;

/// Ranges whose files are on their way, asked for at each builder round
/// with the end of the index's files (a replica derives them from the
/// manifest it serves).
pub type ExpectedRanges = Arc<dyn Fn(Option<u32>) -> Vec<(u32, u32)> + Send + Sync>;

impl std::fmt::Debug for EventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EventStore({})", self.shared.dir.display())
    }
}

impl EventStore {
    /// Opens (creating it and its marker if needed) the events dir and
    /// starts the builder thread. Deletes temporary files and files a
    /// merged file covers; refuses foreign names.
    pub fn open(dir: &Path, reader: Arc<dyn Reader>, cfg: EventsConfig) -> EventsResult<Self> {
        Self::open_expecting(dir, reader, cfg, None)
    }

    /// [`open`](Self::open), with the ranges whose files are on their way
    /// asked of `expected` at every builder round (the first one
    /// included): a replica derives them from the manifest it serves, so
    /// its builder never indexes them from the packs.
    pub fn open_expecting(
        dir: &Path,
        reader: Arc<dyn Reader>,
        cfg: EventsConfig,
        expected: Option<ExpectedRanges>,
    ) -> EventsResult<Self> {
        cfg.validate()?;
        std::fs::create_dir_all(dir).map_err(EventsError::io(dir, "creating"))?;
        let lock = lock_dir(dir)?;
        let pre = files::scan(dir, None)?;
        let cfg = config::settle(dir, cfg, !pre.ranges.is_empty())?;
        let geo = Geometry {
            file_ledgers: cfg.file_ledgers,
            fan_out: cfg.fan_out,
        };
        let listing = files::scan(dir, Some(geo))?;
        for name in pre.removed.iter().chain(&listing.removed) {
            tracing::info!(dir = %dir.display(), file = %name, "events: deleted a leftover file");
        }
        let mut snap = Snapshot::default();
        for (first, last) in listing.ranges {
            let path = dir.join(file_name(first, last));
            match IndexFile::open(path.clone(), first, last) {
                Ok(f) => {
                    snap.files.insert(first, f);
                }
                Err(e @ EventsError::Index { .. }) => {
                    // Damaged: the builder builds its ledgers again.
                    tracing::warn!(error = %e, "events: deleted a damaged index file, to be rebuilt");
                    files::remove(&path)?;
                    files::sync_dir(dir)?;
                }
                Err(e) => return Err(e),
            }
        }
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            reader,
            cfg,
            geo,
            index: RwLock::new(snap),
            status: Mutex::new(Status::default()),
            cond: Condvar::new(),
            stop: AtomicBool::new(false),
            work: Mutex::new(()),
            expected: Mutex::new(expected),
            offered: Mutex::new(state::Offered::default()),
            offered_cond: Condvar::new(),
            offer_stall: Mutex::new(state::OFFER_STALL),
        });
        let mut builder = build::Builder::new(&shared);
        // A restart of an index that had caught up (files and a tail): the
        // tail, and a window that closed meanwhile, are rebuilt before the
        // index answers, so `indexed_through` never goes back behind what
        // was served before the restart. A longer gap (a dir indexed from
        // scratch) is left to the thread.
        let caught_up = match (shared.reader.last_ledger(), shared.snapshot().files_end()) {
            (Some(mark), Some(end)) => {
                mark.saturating_sub(end) < cfg.file_ledgers.saturating_mul(2)
            }
            _ => false,
        };
        if caught_up && let Err(e) = builder.round(&shared) {
            tracing::warn!(dir = %dir.display(), error = %e, "events: the first round failed; the builder retries");
        }
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("events-builder".into())
            .spawn(move || build::run(s, builder))
            .map_err(EventsError::io(dir, "starting the builder thread of"))?;
        Ok(EventStore {
            shared,
            thread: Mutex::new(Some(thread)),
            _lock: lock,
        })
    }

    /// A page of the events matching `q` (its `start` and `end` are
    /// ignored) with ids from `from` (inclusive) in ledgers below
    /// `end_ledger`, capped at [`indexed_through`](Self::indexed_through)
    /// `+ 1`, and at or above the store's first ledger.
    pub fn query(
        &self,
        q: &Query,
        from: EventId,
        end_ledger: u32,
        limits: &PageLimits,
    ) -> EventsResult<Page> {
        query::query(&self.shared, q, from, end_ledger, limits)
    }

    /// The last ledger such that every ledger from
    /// [`first_ledger`](Self::first_ledger) up to it is searchable.
    pub fn indexed_through(&self) -> Option<u32> {
        self.shared.indexed_through()
    }

    /// The first searchable ledger: the store's first, once it is
    /// indexed.
    pub fn first_ledger(&self) -> Option<u32> {
        self.shared
            .indexed_through()
            .and(self.shared.reader.first_ledger())
    }

    /// Wakes the builder.
    pub fn notify(&self) {
        self.shared.wake();
    }

    /// Hands the builder the raw bytes of ledgers just committed to the
    /// store (ingest holds them), so it indexes them without reading them
    /// back: their events are extracted here (on rayon's pool, while the
    /// caller waits), and kept for the builder if it will want them soon
    /// (within [`OFFER_WINDOWS`] level-0 windows past its files, and
    /// [`OFFER_BYTES`] in all; others are read back when their turn
    /// comes). Once the builder keeps pace with offers, a window past
    /// that room (and within [`CATCH_UP_WINDOWS`]) waits for the builder
    /// to make room, at most 30 s: a builder held by a long merge slows
    /// ingest down instead of falling behind for good (the wait is in
    /// [`EventStats::ingest_waited`]; see `Shared::wait_room`).
    /// Ledgers that are not Stellar are left to the builder, which
    /// reports them. Wakes the builder.
    pub fn offer(&self, ledgers: &[LedgerInput]) {
        let (Some(a), Some(z)) = (ledgers.first(), ledgers.last()) else {
            return;
        };
        // The builder waits for a ledger still to come rather than read
        // it back (`read_items`); cleared however this returns.
        let _in_flight = state::InFlight::start(&self.shared, a.seq, z.seq);
        // A window at a time, so the builder has each one as soon as it
        // is extracted.
        let room = self.shared.offer_room();
        for chunk in ledgers.chunks(self.shared.cfg.file_ledgers.max(1) as usize) {
            // Backpressure: a builder held by a merge makes ingest wait
            // rather than read these ledgers back later.
            if let Some(last) = chunk.last() {
                self.shared.wait_room(last.seq, || self.builder_alive());
            }
            let from = self.shared.next_wanted();
            let wanted =
                |l: &&LedgerInput| l.seq >= from && u64::from(l.seq) < u64::from(from) + room;
            let extract = |l: &LedgerInput| Some((l.seq, items::items_of_input(l).ok()?));
            // Several ledgers (a bulk batch) are extracted on rayon's pool,
            // in order, a ledger a job (~1 ms, so a lookup's job sharing the
            // pool waits no longer): on the caller's thread alone (ingest's
            // writer) this was ~0.9 ms of CPU a dense ledger with the other
            // cores idle (docs/benchmarks.md, "Batches by bytes, and
            // decoding while a batch commits"). One ledger (live mode) is
            // extracted here.
            let kept: Vec<_> = if chunk.len() > 1 {
                chunk
                    .par_iter()
                    .with_max_len(1)
                    .filter(wanted)
                    .filter_map(extract)
                    .collect()
            } else {
                chunk.iter().filter(wanted).filter_map(extract).collect()
            };
            let past = chunk.last().map_or(0, |l| l.seq.saturating_add(1));
            self.shared
                .offered(kept, || self.shared.next_wanted(), past);
            self.shared.wake();
        }
    }

    /// The builder thread is running (not stopped, not panicked).
    fn builder_alive(&self) -> bool {
        self.thread
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .is_some_and(|t| !t.is_finished())
    }

    /// Waits until [`indexed_through`](Self::indexed_through) reaches
    /// `seq` and no file is left to build or merge at the builder's latest
    /// round, or `timeout` passes; true if it did.
    pub fn wait_indexed_through(&self, seq: u32, timeout: Duration) -> bool {
        self.shared
            .wait_for(timeout, |t| t.is_some_and(|t| t >= seq))
    }

    /// Waits for the builder to finish a round that starts after this
    /// call, or `timeout`; true if it did (tests, and callers that want
    /// the effect of a [`notify`](Self::notify)).
    pub fn wait_round(&self, timeout: Duration) -> bool {
        let start = self.shared.status().rounds;
        self.shared.wake();
        // Two rounds: the one running now may have begun before the call.
        self.shared
            .wait_status(timeout, |st| st.rounds >= start + 2)
    }

    /// Figures.
    pub fn stats(&self) -> EventStats {
        let snap = self.shared.snapshot();
        let st = self.shared.status().clone();
        let mut levels: Vec<LevelStats> = Vec::new();
        for f in snap.files.values() {
            let level = self.shared.geo.level(f.first, f.last);
            match levels.iter_mut().find(|l| l.level == level) {
                Some(l) => {
                    l.files += 1;
                    l.bytes += f.bytes;
                }
                None => levels.push(LevelStats {
                    level,
                    files: 1,
                    bytes: f.bytes,
                }),
            }
        }
        levels.sort_by_key(|l| l.level);
        let files_events: u64 = snap.files.values().map(|f| u64::from(f.idx.events())).sum();
        EventStats {
            files: snap.files.len(),
            bytes: snap.files.values().map(|f| f.bytes).sum(),
            events: files_events + snap.tail.as_ref().map_or(0, |t| u64::from(t.idx.events())),
            first_ledger: self.first_ledger(),
            indexed_through: self.indexed_through(),
            building: st.building,
            last_error: st.last_error,
            built_files: st.built,
            adopted_files: st.adopted,
            ledgers_offered: st.offered_used,
            ledgers_read_back: st.read_back,
            ingest_waited: st.ingest_waited,
            levels,
            config: self.shared.cfg,
        }
    }

    /// Scrubs the files: checks each one's SHA-256 (and that it is still
    /// there); a damaged or missing file is deleted, named in the report,
    /// and rebuilt by the builder from the stored ledgers.
    pub fn verify(&self) -> EventsResult<VerifyReport> {
        let snap = self.shared.snapshot();
        let mut report = VerifyReport::default();
        for f in snap.files.values() {
            if self.shared.stopping() {
                break;
            }
            report.checked += 1;
            let held = |s: &Snapshot| s.files.get(&f.first).is_some_and(|g| Arc::ptr_eq(g, f));
            let problem = if !f.path.exists() {
                // Merged away since the snapshot was taken: not a loss.
                held(&self.shared.snapshot()).then(|| "missing".to_string())
            } else {
                f.idx.verify().err().map(|e| e.to_string())
            };
            if let Some(why) = problem {
                tracing::warn!(file = %f.path.display(), %why, "events: damaged index file deleted, to be rebuilt");
                build::drop_file(&self.shared, f)?;
                report.damaged.push((f.name(), why));
            }
        }
        if !report.damaged.is_empty() {
            self.shared.wake();
        }
        Ok(report)
    }

    /// Stops the builder thread and waits for it.
    pub fn close(self) {
        self.stop();
    }

    /// Offers stop waiting for the builder to make room (one waiting
    /// returns), for good; the builder goes on. The daemon calls it as
    /// shutdown begins, so its last commits do not wait for the builder.
    pub fn release_offers(&self) {
        self.shared.release_offers();
    }

    /// Stops the builder thread and waits for it, through a shared
    /// handle: the daemon calls it before it closes the store the builder
    /// reads. Queries still answer from the files afterwards.
    pub fn stop(&self) {
        self.shared.halt();
        let thread = match self.thread.lock() {
            Ok(mut t) => t.take(),
            Err(p) => p.into_inner().take(),
        };
        if let Some(t) = thread
            && t.join().is_err()
        {
            tracing::error!("events: the builder thread panicked");
        }
    }
}

/// Takes an events dir's exclusive lock (its `LOCK` file, held while the
/// returned file is open), or says that another process holds it.
pub fn lock_dir(dir: &Path) -> EventsResult<std::fs::File> {
    let path = dir.join(LOCK);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(EventsError::io(&path, "opening"))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(EventsError::dir(
            dir,
            "in use by another process (its LOCK is held): one daemon per events dir",
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(EventsError::io(&path, "locking")(e)),
    }
}

impl Drop for EventStore {
    fn drop(&mut self) {
        self.stop();
    }
}
