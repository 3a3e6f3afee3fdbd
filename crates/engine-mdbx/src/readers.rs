//! Our MDBX read transactions, tracked and bounded.
//!
//! MDBX readers never block the writer, but a reader pins the snapshot it
//! started on: pages freed after it cannot be reused while it lives, so a
//! forgotten reader makes the file grow without bound. Every read here
//! (get, multi_get, scan) is one short transaction. A point read touches
//! one key and is not tracked; multi_get and scan are registered, check
//! their age as they go, and give up past `max_read_txn` with
//! [`DbError::ReadTimeout`]. The age of the oldest tracked read transaction
//! and the number of timeouts are in [`EngineStats`](ledgerstore_db_api::EngineStats)
//! (`ledgerstore_mdbx_oldest_read_seconds`, `ledgerstore_mdbx_read_timeouts`).
//! A backup's read transaction is tracked too, but is meant to be long and
//! is never timed out.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ledgerstore_db_api::{DbError, DbResult};

/// Checks a long read's age every this many keys.
pub(crate) const CHECK_EVERY: usize = 64;

#[derive(Debug)]
pub(crate) struct Readers {
    next: AtomicU64,
    open: Mutex<HashMap<u64, Instant>>,
    max: Duration,
    timeouts: AtomicU64,
}

impl Readers {
    pub(crate) fn new(max: Duration) -> Self {
        Self {
            next: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            max,
            timeouts: AtomicU64::new(0),
        }
    }

    /// Registers a read transaction that starts now.
    pub(crate) fn enter(&self) -> ReadGuard<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        if let Ok(mut m) = self.open.lock() {
            m.insert(id, started);
        }
        ReadGuard {
            readers: self,
            id,
            started,
        }
    }

    /// Age of the oldest read transaction open now.
    pub(crate) fn oldest(&self) -> Option<Duration> {
        let m = self.open.lock().ok()?;
        m.values().min().map(Instant::elapsed)
    }

    /// Reads that gave up at the bound since open.
    pub(crate) fn timeouts(&self) -> u64 {
        self.timeouts.load(Ordering::Relaxed)
    }
}

/// One registered read transaction; deregisters on drop.
pub(crate) struct ReadGuard<'a> {
    readers: &'a Readers,
    id: u64,
    started: Instant,
}

impl ReadGuard<'_> {
    /// Fails once the transaction is older than the bound.
    pub(crate) fn check(&self, table: &str) -> DbResult<()> {
        let held = self.started.elapsed();
        if held <= self.readers.max {
            return Ok(());
        }
        self.readers.timeouts.fetch_add(1, Ordering::Relaxed);
        Err(DbError::ReadTimeout {
            table: table.to_string(),
            held_ms: held.as_millis() as u64,
            max_ms: self.readers.max.as_millis() as u64,
        })
    }
}

impl Drop for ReadGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut m) = self.readers.open.lock() {
            m.remove(&self.id);
        }
    }
}
