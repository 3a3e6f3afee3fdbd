//! Local data as a cache (`[cold] keep_local_ranges`): once closed base
//! ranges are published to object storage, their ledgers and bodies may
//! leave the data dir. What stays: the segment files (lookups still find
//! positions locally) and the hash lists (so the duplicate check at ingest
//! and `GetTransactionLedger` stay exact). The daemon answers the rest of
//! an evicted range from the published store.
//!
//! `segments/EVICTED` (JSON: `{"below": X, "store": URL, "oldest":
//! {"seq": S, "close_time": T}}`) is written atomically *before* anything
//! is deleted: everything below ledger `X` may be missing locally, and is
//! published at `store`. A crash mid-delete leaves that true, and the next
//! eviction deletes the rest.
//!
//! `oldest` is what every Stellar RPC response needs of the oldest ledger
//! (`oldestLedgerCloseTime`), kept here so the writer answers those from
//! local state while its published store is down. (Responses take the
//! protocol version from the latest ledger only, which stays local.) A
//! file written before the field reads without it; the field is filled at
//! the next eviction while the oldest ledger is still local, or once the
//! published store serves it (`record_oldest`).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use ledgerstore_db_api::{TxHash, TxPos};
use serde::{Deserialize, Serialize};

use crate::Ledgerstore;
use crate::error::{StoreError, StoreResult};

/// `IndexedTier::evicted_deletes`: not looked at since open.
pub(crate) const DELETES_UNKNOWN: u8 = 0;
/// Everything below the recorded boundary is deleted.
pub(crate) const DELETES_DONE: u8 = 1;
/// A boundary is recorded and its deletes are not finished.
pub(crate) const DELETES_LEFT: u8 = 2;

/// The file's name, in `segments/`.
pub(crate) const FILE: &str = "EVICTED";
/// Ledgers deleted per write batch.
const CHUNK_LEDGERS: u32 = 64;

/// A step of [`Ledgerstore::evict_below_with`], where a test runs reads
/// while the range is half gone (from another thread: the evicting one
/// may hold write transactions there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvictStep {
    /// The new boundary is recorded (on disk, and for readers); nothing
    /// is deleted yet.
    Recorded,
    /// Some of ledger `seq`'s bodies are deleted and committed; the rest
    /// of the ledger is not yet.
    PartOfLedger {
        /// The ledger being deleted.
        seq: u32,
    },
    /// Everything below `seq` is deleted and committed.
    DeletedBelow {
        /// The first ledger not deleted yet.
        seq: u32,
    },
}

/// What `segments/EVICTED` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evicted {
    /// Ledgers below this one may be missing locally.
    pub below: u32,
    /// The store they are published to (`[cold] store`).
    pub store: String,
    /// The oldest ledger's figures the query APIs report (None in a file
    /// written before the field, until it is filled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oldest: Option<OldestLedger>,
}

/// What the query APIs report about the oldest ledger, kept for when its
/// record is only in the published store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OldestLedger {
    /// Its seq (the data dir's first ledger).
    pub seq: u32,
    /// Its close time, unix seconds.
    pub close_time: u64,
}

impl Evicted {
    /// Reads `dir/EVICTED` (None when absent).
    pub(crate) fn read(dir: &Path) -> StoreResult<Option<Self>> {
        let path = dir.join(FILE);
        match std::fs::read(&path) {
            Ok(b) => serde_json::from_slice(&b).map(Some).map_err(|e| {
                StoreError::Corrupt(format!("{}: not an eviction record: {e}", path.display()))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(StoreError::io(format!("reading {}", path.display()))(e)),
        }
    }
}

/// Writes `rec` to `segments/EVICTED` atomically (the caller holds the
/// record's lock, so two writers do not lose each other's fields).
fn write_record(tier: &crate::indexed::IndexedTier, rec: &Evicted) -> StoreResult<()> {
    rec.write_in(tier.segments.dir())
}

impl Evicted {
    /// Writes this record as `EVICTED` in the segments dir `dir`,
    /// atomically (a backup's copy too).
    pub(crate) fn write_in(&self, dir: &Path) -> StoreResult<()> {
        let bytes = serde_json::to_vec(self).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        crate::datadir::write_atomic(dir, FILE, &bytes)
    }
}

impl Ledgerstore {
    /// Where this dir's evicted ranges are published, if it evicted any.
    pub fn evicted(&self) -> Option<Evicted> {
        let tier = self.indexed.as_ref()?;
        tier.evicted
            .read()
            .map(|e| e.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// The oldest ledger's figures, from the eviction record, when that
    /// ledger was evicted (its record is then only in the published
    /// store) and the record holds them.
    pub fn evicted_oldest(&self) -> Option<OldestLedger> {
        let first = self.first_ledger()?;
        self.evicted()?
            .oldest
            .filter(|o| o.seq == first && o.seq < self.evicted_below())
    }

    /// Records the oldest ledger's figures in an eviction record that
    /// lacks them (one written before the field): `oldest` was read from
    /// the published store. Returns whether the record changed.
    pub fn record_oldest(&self, oldest: OldestLedger) -> StoreResult<bool> {
        let tier = self.tier()?;
        if self.first_ledger() != Some(oldest.seq) {
            return Ok(false);
        }
        let mut g = tier.evicted.write().unwrap_or_else(|p| p.into_inner());
        let Some(rec) = g.as_ref().filter(|r| r.oldest != Some(oldest)) else {
            return Ok(false);
        };
        let rec = Evicted {
            oldest: Some(oldest),
            ..rec.clone()
        };
        write_record(tier, &rec)?;
        *g = Some(rec);
        Ok(true)
    }

    /// The oldest ledger's figures for a new eviction record: the previous
    /// record's, or read locally while that ledger is still here.
    fn oldest_for_record(&self, prev: Option<&Evicted>) -> StoreResult<Option<OldestLedger>> {
        let Some(first) = self.first_ledger() else {
            return Ok(None);
        };
        if let Some(o) = prev.and_then(|p| p.oldest).filter(|o| o.seq == first) {
            return Ok(Some(o));
        }
        Ok(self.get_ledger(first)?.map(|l| OldestLedger {
            seq: first,
            close_time: l.close_time,
        }))
    }

    /// Ledgers below this one left the data dir (0: none did).
    pub fn evicted_below(&self) -> u32 {
        self.indexed.as_ref().map_or(0, |t| {
            t.evicted_below.load(std::sync::atomic::Ordering::Acquire)
        })
    }

    /// Evicts the ledgers and bodies below `below` (which must start a
    /// base range, after the ones already evicted, within the closed
    /// ranges), recording first that they are published at `store`.
    /// Returns the ledgers deleted.
    ///
    /// The boundary moves first, so a reader that finds a ledger or body
    /// missing below it reads it from `store` instead; a reader that read
    /// the boundary before it moved must read it again after a miss.
    pub fn evict_below(&self, below: u32, store: &str) -> StoreResult<u64> {
        self.evict_below_with(below, store, &mut |_| {})
    }

    /// [`Ledgerstore::evict_below`] that stops deleting at the next chunk
    /// of ledgers once `stop` is set (a daemon shutting down): the
    /// boundary is recorded first, so what is left below it is deleted by
    /// the next eviction (see [`Ledgerstore::evict_below_with`]). Returns
    /// the ledgers deleted.
    pub fn evict_below_until(
        &self,
        below: u32,
        store: &str,
        stop: &AtomicBool,
    ) -> StoreResult<u64> {
        self.evict_in_chunks(below, store, &mut |_| {}, stop)
    }

    /// [`Ledgerstore::evict_below`], calling `step` after the boundary is
    /// recorded and after each commit of the deletes (tests read there).
    pub fn evict_below_with(
        &self,
        below: u32,
        store: &str,
        step: &mut dyn FnMut(EvictStep),
    ) -> StoreResult<u64> {
        self.evict_in_chunks(below, store, step, &AtomicBool::new(false))
    }

    fn evict_in_chunks(
        &self,
        below: u32,
        store: &str,
        step: &mut dyn FnMut(EvictStep),
        stop: &AtomicBool,
    ) -> StoreResult<u64> {
        let tier = self.tier()?;
        let refuse = |why: String| StoreError::DataDir {
            dir: self.path().to_path_buf(),
            reason: format!("cannot evict below ledger {below}: {why}"),
        };
        let closed = self.closed_ranges()?;
        if !closed.base.iter().any(|r| r.0 == below)
            && closed.last().and_then(|l| l.checked_add(1)) != Some(below)
        {
            return Err(refuse("it does not start a closed base range".into()));
        }
        let prev = self.evicted();
        if let Some(p) = &prev
            && p.store != store
        {
            return Err(refuse(format!(
                "earlier ranges are published at {}, not {store}",
                p.store
            )));
        }
        let from = match (&prev, self.first_ledger()) {
            // A crash mid-delete left ledgers below the recorded boundary:
            // delete from the oldest still here.
            (Some(p), _) => self.oldest_stored_below(p.below)?.unwrap_or(p.below),
            (None, Some(f)) => f,
            (None, None) => return Ok(0),
        };
        if below <= from {
            return Ok(0);
        }
        let oldest = self.oldest_for_record(prev.as_ref())?;
        // Every evicted range answers from its hash list once its bodies
        // are gone: the lists are made sure of (and written from the
        // ledger records where merged windows had dropped them) before
        // the boundary is recorded, with no list being deleted meanwhile.
        let recorded = tier.segments.keep_lists_below(
            prev.as_ref().map_or(0, |p| p.below),
            below,
            stop,
            |below| {
                let mut g = tier.evicted.write().unwrap_or_else(|p| p.into_inner());
                // Never lowered (another eviction may have moved it on).
                if g.as_ref().is_some_and(|r| r.below >= below) {
                    return Ok(());
                }
                let rec = Evicted {
                    below,
                    store: store.to_string(),
                    // Filled meanwhile from the published store, if not here.
                    oldest: oldest.or_else(|| g.as_ref().and_then(|r| r.oldest)),
                };
                write_record(tier, &rec)?;
                *g = Some(rec);
                // Recorded before its deletes: they are left until the
                // loop below ends.
                tier.evicted_deletes.store(DELETES_LEFT, Ordering::Release);
                tier.evicted_below
                    .store(below, std::sync::atomic::Ordering::Release);
                Ok(())
            },
        )?;
        // Stopped while writing lists: a lower boundary, or none.
        let Some(below) = recorded else {
            return Ok(0);
        };
        if below <= from {
            return Ok(0);
        }
        tier.evicted_deletes.store(DELETES_LEFT, Ordering::Release);
        step(EvictStep::Recorded);
        let mut seq = from;
        while seq < below {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(u64::from(seq - from));
            }
            let end = seq.saturating_add(CHUNK_LEDGERS).min(below);
            self.delete_local(seq, end, step)?;
            step(EvictStep::DeletedBelow { seq: end });
            seq = end;
        }
        tier.evicted_deletes.store(DELETES_DONE, Ordering::Release);
        Ok(u64::from(below - from))
    }

    /// True when an eviction recorded its boundary but was cut short
    /// (a stop or a crash) before deleting everything below it: an
    /// eviction at the same boundary finishes it. Looked up (one seek in
    /// `ledgers`) once after open, then kept as evictions go.
    pub fn eviction_unfinished(&self) -> StoreResult<bool> {
        let tier = self.tier()?;
        match tier.evicted_deletes.load(Ordering::Acquire) {
            DELETES_DONE => return Ok(false),
            DELETES_LEFT => return Ok(true),
            _ => {}
        }
        let left = match self.evicted() {
            Some(p) => self.oldest_stored_below(p.below)?.is_some(),
            None => false,
        };
        // Unless an eviction moved it meanwhile (it sets its own).
        let seen = if left { DELETES_LEFT } else { DELETES_DONE };
        let _ = tier.evicted_deletes.compare_exchange(
            DELETES_UNKNOWN,
            seen,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        Ok(left)
    }

    /// The oldest ledger record still stored below `below`: one an
    /// eviction cut short left (a ledger's bodies go before its record).
    fn oldest_stored_below(&self, below: u32) -> StoreResult<Option<u32>> {
        let Some(first) = self.first_ledger() else {
            return Ok(None);
        };
        let rows = self.ledgers.scan(&first.to_be_bytes(), 1)?;
        Ok(rows
            .first()
            .and_then(|(k, _)| <[u8; 4]>::try_from(k.as_slice()).ok())
            .map(u32::from_be_bytes)
            .filter(|seq| *seq < below))
    }

    /// Deletes ledgers `from..end` and their bodies, under the ingest lock
    /// (one writer at a time per engine).
    fn delete_local(
        &self,
        from: u32,
        end: u32,
        step: &mut dyn FnMut(EvictStep),
    ) -> StoreResult<()> {
        let _guard = self.ingest_lock.lock();
        let mut bodies = self.tx_data.begin_write()?;
        let mut ledgers = self.ledgers.begin_write()?;
        for seq in from..end {
            let key = TxPos { seq, index: 0 }.to_bytes();
            loop {
                let rows = self.tx_data.scan(&key, 1024)?;
                let mine: Vec<Vec<u8>> = rows
                    .into_iter()
                    .map(|(k, _)| k)
                    .take_while(|k| TxPos::from_bytes(k).is_some_and(|p| p.seq == seq))
                    .collect();
                if mine.is_empty() {
                    break;
                }
                for k in &mine {
                    bodies.delete(k)?;
                }
                if mine.len() < 1024 {
                    break;
                }
                bodies.finish()?;
                // A scan sees only what is committed: commit this part.
                let done = std::mem::replace(&mut bodies, self.tx_data.begin_write()?);
                done.commit()?;
                step(EvictStep::PartOfLedger { seq });
            }
            ledgers.delete(&seq.to_be_bytes())?;
        }
        bodies.finish()?;
        ledgers.finish()?;
        bodies.commit()?;
        ledgers.commit()?;
        Ok(())
    }

    /// The exact position of `hash` in a range evicted now (the boundary
    /// is read here, after any local miss the caller had): the segments'
    /// candidates below the boundary, confirmed against their range's
    /// hash list. No body is read; nothing leaves the machine. For a fee
    /// bump's inner hash, the position of its alias body.
    pub fn evicted_position(&self, hash: &TxHash) -> StoreResult<Option<TxPos>> {
        let tier = self.tier()?;
        let cold = tier.segments.lookup(&hash.0);
        if let Some(pos) = self.evicted_match(hash, &cold.candidates)? {
            return Ok(Some(pos));
        }
        match cold.repairing {
            Some((first, last, reason)) if first < self.evicted_below() => {
                Err(StoreError::Repairing {
                    first,
                    last,
                    reason,
                })
            }
            _ => Ok(None),
        }
    }

    /// The candidate in an evicted range whose hash list entry is `hash`
    /// (its body left the data dir). Reads the boundary now: call it after
    /// the local reads it backs up.
    pub(crate) fn evicted_match(
        &self,
        hash: &TxHash,
        candidates: &[TxPos],
    ) -> StoreResult<Option<TxPos>> {
        let below = self.evicted_below();
        for pos in candidates.iter().filter(|p| p.seq < below) {
            if self.evicted_hash(*pos)? == Some(hash.0) {
                return Ok(Some(*pos));
            }
        }
        Ok(None)
    }

    /// The hash at an evicted position, from its base range's hash list,
    /// once that file matched its checksum (see `list_check`): damage is
    /// an error, never a "not found".
    pub(crate) fn evicted_hash(&self, pos: TxPos) -> StoreResult<Option<[u8; 32]>> {
        let tier = self.tier()?;
        let policy = tier.segments.policy();
        let Some(first) = self.first_ledger() else {
            return Ok(None);
        };
        let Some(end) = policy.base_end(pos.seq) else {
            return Ok(None);
        };
        let start = policy.base_ranges(first, end).last().map_or(first, |r| r.0);
        let path = tier
            .segments
            .dir()
            .join(ledgerstore_segment::hashes::file_name(start, end));
        // Its body is gone: only a list that matched its checksum may say
        // "not this hash".
        tier.list_checks.check(&path, start, end)?;
        Ok(ledgerstore_segment::hashes::hash_at(
            &path, start, end, pos,
        )?)
    }
}
