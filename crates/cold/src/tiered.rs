//! The writer's reads once it evicts published ranges
//! (`[cold] keep_local_ranges`): the local store first, then, for what
//! left the data dir, a replica of its own published store.
//!
//! - Positions stay local: the segments and hash lists of an evicted range
//!   stay in the data dir, so a hash is resolved without a request, and a
//!   hash that exists nowhere costs none. Only a hit's body is read from
//!   its range's pack (ranged GETs), never a segment.
//! - Local absence is not taken as an answer below the boundary: an
//!   evicted ledger or body the published store cannot serve (its manifest
//!   unread, or not listing it) is [`StoreError::Unavailable`], never "not
//!   found" or a short chunk.
//! - Eviction moves the boundary, then deletes. A read that misses locally
//!   reads the boundary again and, if the miss is below it now, reads the
//!   published store; a chunk read while the boundary moved is read again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ledgerstore_db_api::{LedgerRecord, TxHash, TxPos, TxRecord};
use ledgerstore_store::{
    LedgerHead, Ledgerstore, OldestLedger, Reader, ReaderStatus, StoreError, StoreResult,
};

use crate::error::{ColdError, ColdResult};
use crate::replica::Replica;

/// Times a chunk is read again because an eviction moved the boundary
/// while it was read (each eviction moves it once).
const CHUNK_ATTEMPTS: usize = 4;

/// What the published store is asked for a transaction the local store
/// did not find.
enum Evicted {
    /// Answered without a request.
    Done(StoreResult<Option<TxRecord>>),
    /// Evicted at `pos`: its body is read from the pack of the manifest
    /// published up to `mark`.
    At { pos: TxPos, mark: u32 },
}

/// Local data as a cache of the published store.
pub struct Tiered {
    /// The writer's store.
    pub store: Arc<Ledgerstore>,
    /// Its published ranges.
    pub cold: Arc<Replica>,
}

impl Tiered {
    fn below(&self) -> u32 {
        self.store.evicted_below()
    }

    /// The answer for evicted data the published store cannot serve now.
    /// It names the ledgers, never the store: clients are not told the
    /// bucket or its endpoint (the start log and `[cold] store` have them).
    fn unavailable(&self, what: String, reason: impl Into<String>) -> StoreError {
        StoreError::Unavailable {
            what,
            reason: reason.into(),
        }
    }

    /// Keeps the oldest ledger's close time, read from the published
    /// store, in an eviction record written before it kept it, so the
    /// next answers need no request (and survive the store being down).
    fn remember_oldest(&self, seq: u32, close_time: u64) {
        if seq >= self.below() || self.store.first_ledger() != Some(seq) {
            return;
        }
        if let Err(e) = self.store.record_oldest(OldestLedger { seq, close_time }) {
            tracing::warn!(error = %e, "recording the oldest ledger's close time in segments/EVICTED failed; it is read from the published store until it is recorded");
        }
    }

    /// The published ledgers (first, mark), or why there are none to read.
    fn published(&self, what: impl FnOnce() -> String) -> StoreResult<(u32, u32)> {
        match (
            Reader::first_ledger(&*self.cold),
            Reader::last_ledger(&*self.cold),
        ) {
            (Some(first), Some(mark)) => Ok((first, mark)),
            _ => Err(self.unavailable(what(), "no manifest of it has been read yet")),
        }
    }

    /// Why the published store does not answer for ledger `seq`, which the
    /// data dir evicted.
    fn not_listed(&self, what: String, seq: u32, mark: u32) -> StoreError {
        if seq > mark {
            return self.unavailable(
                what,
                format!("the manifest held ends at ledger {mark} (a newer one is not read yet)"),
            );
        }
        self.unavailable(
            what,
            format!("the manifest held lists no pack for ledger {seq}"),
        )
    }

    /// A transaction the local store did not find: if the data dir
    /// evicted it (its position is in the local segments and hash lists),
    /// its body from the pack; else not found, with no request made.
    fn evicted_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        match self.evicted_plan(hash) {
            Evicted::Done(r) => r,
            Evicted::At { pos, mark } => {
                let got = self.cold.get_tx_at(hash, pos)?;
                self.evicted_found(hash, pos, mark, got)
            }
        }
    }

    /// Where the published store holds a transaction the local store did
    /// not find, or the answer without a request.
    fn evicted_plan(&self, hash: &TxHash) -> Evicted {
        if self.below() == 0 {
            return Evicted::Done(Ok(None));
        }
        let pos = match self.store.evicted_position(hash) {
            Ok(Some(pos)) => pos,
            Ok(None) => return Evicted::Done(Ok(None)),
            Err(e @ StoreError::Segment(_)) => {
                return Evicted::Done(self.without_hash_list(hash, &e, |c| c.get_tx(hash)));
            }
            Err(e) => return Evicted::Done(Err(e)),
        };
        let what = || format!("transaction {hash} (ledger {})", pos.seq);
        match self.published(what) {
            Ok((_, mark)) => Evicted::At { pos, mark },
            Err(e) => Evicted::Done(Err(e)),
        }
    }

    /// The answer for `hash`, evicted at `pos`, from what the published
    /// store's pack holds there (`got`).
    fn evicted_found(
        &self,
        hash: &TxHash,
        pos: TxPos,
        mark: u32,
        got: Option<TxRecord>,
    ) -> StoreResult<Option<TxRecord>> {
        match got {
            Some(r) => Ok(Some(r)),
            None => {
                let what = format!("transaction {hash} (ledger {})", pos.seq);
                Err(self.mismatch(hash, pos, mark, what))
            }
        }
    }

    /// Many transactions: the local store's, then the evicted ones' bodies
    /// read together from the published store (as one
    /// [`Self::evicted_tx`] each would answer; the first failure, in the
    /// order asked, fails the batch). With a `deadline`, the published
    /// store's reads stop once it passes.
    fn batch(
        &self,
        hashes: &[TxHash],
        deadline: Option<Instant>,
    ) -> StoreResult<Vec<Option<TxRecord>>> {
        let mut out = self.store.batch_get_txs(hashes)?;
        let mut plans = Vec::new();
        for (i, (slot, h)) in out.iter().zip(hashes).enumerate() {
            if slot.is_some() {
                continue;
            }
            // A damaged hash list sends a plan to the published store
            // hash by hash: no new one past the deadline.
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(StoreError::DeadlinePassed {
                    what: "a batch of transactions".into(),
                });
            }
            let plan = self.evicted_plan(h);
            // Nothing after a failure is answered.
            let failed = matches!(plan, Evicted::Done(Err(_)));
            plans.push((i, plan));
            if failed {
                break;
            }
        }
        let wants: Vec<(TxHash, TxPos)> = plans
            .iter()
            .filter_map(|(i, p)| match p {
                Evicted::At { pos, .. } => Some((hashes[*i], *pos)),
                Evicted::Done(_) => None,
            })
            .collect();
        let mut got = self.cold.get_txs_at(&wants, deadline)?.into_iter();
        for (i, plan) in plans {
            out[i] = match plan {
                Evicted::Done(r) => r?,
                Evicted::At { pos, mark } => {
                    let found = got
                        .next()
                        .ok_or_else(|| StoreError::Corrupt("a batch lookup was lost".into()))??;
                    self.evicted_found(&hashes[i], pos, mark, found)?
                }
            };
        }
        Ok(out)
    }

    /// A hash list of an evicted range could not be read (`local`, e.g.
    /// deleted): the published store's own segments resolve `hash`
    /// instead, as on a replica (they are fetched), rather than failing or
    /// losing what the list recorded.
    fn without_hash_list<T>(
        &self,
        hash: &TxHash,
        local: &StoreError,
        read: impl FnOnce(&Replica) -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<T>> {
        tracing::warn!(error = %local, %hash, "a hash list of an evicted range cannot be read: looking the hash up in the published store");
        self.published(|| format!("transaction {hash}"))?;
        read(&self.cold)
    }

    /// The pack at `pos` did not confirm `hash`, which this data dir's
    /// hash list records there.
    fn mismatch(&self, hash: &TxHash, pos: TxPos, mark: u32, what: String) -> StoreError {
        let pack = self
            .cold
            .manifest()
            .and_then(|m| m.pack_of(pos.seq).map(|p| p.object.key.clone()));
        match pack {
            Some(object) if pos.seq <= mark => StoreError::RemoteDamaged {
                object,
                detail: format!(
                    "ledger {} index {} does not hold transaction {hash}, which this data dir's \
                     hash list records there",
                    pos.seq, pos.index
                ),
            },
            _ => self.not_listed(what, pos.seq, mark),
        }
    }

    /// Ledger `seq` (whole, or its head: `read`), evicted: from the
    /// published store, or unavailable.
    fn evicted<T>(
        &self,
        seq: u32,
        read: impl FnOnce(&Replica) -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<T>> {
        let what = || format!("ledger {seq}");
        let (first, mark) = self.published(what)?;
        if seq < first {
            return Ok(None);
        }
        match read(&self.cold)? {
            Some(l) => Ok(Some(l)),
            None => Err(self.not_listed(what(), seq, mark)),
        }
    }

    /// Ledger `seq` from the local store while it is held, else from the
    /// published store (`local` and `cold` read it whole or its head).
    fn held_or_evicted<T>(
        &self,
        seq: u32,
        local: impl FnOnce(&Ledgerstore) -> StoreResult<Option<T>>,
        cold: impl FnOnce(&Replica) -> StoreResult<Option<T>>,
    ) -> StoreResult<Option<T>> {
        if self.store.first_ledger().is_none_or(|f| seq < f) {
            return Ok(None);
        }
        if seq >= self.below() {
            if let Some(l) = local(&self.store)? {
                return Ok(Some(l));
            }
            // Missing locally: evicted meanwhile, or not there at all.
            if seq >= self.below() {
                return Ok(None);
            }
        }
        self.evicted(seq, cold)
    }

    /// Up to `max` ledgers of `from..=end` with the boundary at `below`:
    /// the evicted part from the published store (all of it, or
    /// unavailable), the rest locally.
    fn chunk_at<T: Chunk>(
        &self,
        below: u32,
        from: u32,
        end: u32,
        max: usize,
    ) -> StoreResult<Vec<T>> {
        let mut out = Vec::new();
        let start = from.max(self.store.first_ledger().unwrap_or(from));
        let to = end.min(below.saturating_sub(1));
        if start < below && start <= to && max > 0 {
            let what = || format!("ledgers {start}..={to}");
            let (first, mark) = self.published(what)?;
            let start = start.max(first);
            if start <= to {
                if mark < to {
                    return Err(self.not_listed(what(), to, mark));
                }
                out = T::read(&*self.cold, start, to, max)?;
                let want = ((to - start) as usize + 1).min(max);
                if out.len() < want || out.iter().zip(start..).any(|(l, s)| l.seq() != s) {
                    let missing = out
                        .iter()
                        .zip(start..)
                        .find(|(l, s)| l.seq() != *s)
                        .map_or(start + out.len() as u32, |(_, s)| s);
                    return Err(self.not_listed(what(), missing, mark));
                }
            }
        }
        if out.len() < max && end >= below {
            let rest = T::read(&*self.store, from.max(below), end, max - out.len())?;
            out.extend(rest);
        }
        Ok(out)
    }

    /// Up to `max` ledgers of `from..=end`, read again while evictions
    /// move the boundary under the read.
    fn chunk<T: Chunk>(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<T>> {
        for _ in 0..CHUNK_ATTEMPTS {
            let below = self.below();
            let out = self.chunk_at(below, from, end, max)?;
            // The local part was read with this boundary: if it moved
            // meanwhile, ledgers above it may have been deleted mid-read.
            if self.below() == below {
                return Ok(out);
            }
        }
        Err(self.unavailable(
            format!("ledgers {from}..={end}"),
            "evictions kept moving the boundary while they were read",
        ))
    }
}

/// What a chunk of ledgers holds: whole ledgers, or their heads.
trait Chunk: Sized {
    fn seq(&self) -> u32;
    /// [`Reader::ledger_chunk`] or [`Reader::ledger_head_chunk`].
    fn read(r: &dyn Reader, from: u32, end: u32, max: usize) -> StoreResult<Vec<Self>>;
}

impl Chunk for LedgerRecord {
    fn seq(&self) -> u32 {
        self.seq
    }
    fn read(r: &dyn Reader, from: u32, end: u32, max: usize) -> StoreResult<Vec<Self>> {
        r.ledger_chunk(from, end, max)
    }
}

impl Chunk for LedgerHead {
    fn seq(&self) -> u32 {
        self.seq
    }
    fn read(r: &dyn Reader, from: u32, end: u32, max: usize) -> StoreResult<Vec<Self>> {
        r.ledger_head_chunk(from, end, max)
    }
}

impl Reader for Tiered {
    fn get_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        match self.store.get_tx(hash)? {
            Some(r) => Ok(Some(r)),
            None => self.evicted_tx(hash),
        }
    }

    fn get_tx_ledger(&self, hash: &TxHash) -> StoreResult<Option<u32>> {
        // Exact locally: evicted ranges keep their hash lists.
        match self.store.get_tx_ledger(hash) {
            Err(e @ StoreError::Segment(_)) if self.below() > 0 => {
                self.without_hash_list(hash, &e, |c| c.get_tx_ledger(hash))
            }
            r => r,
        }
    }

    fn batch_get_txs(&self, hashes: &[TxHash]) -> StoreResult<Vec<Option<TxRecord>>> {
        self.batch(hashes, None)
    }

    fn batch_get_txs_until(
        &self,
        hashes: &[TxHash],
        deadline: Instant,
    ) -> StoreResult<Vec<Option<TxRecord>>> {
        self.batch(hashes, Some(deadline))
    }

    fn get_ledger(&self, seq: u32) -> StoreResult<Option<LedgerRecord>> {
        self.held_or_evicted(seq, |s| s.get_ledger(seq), |c| c.get_ledger(seq))
    }

    /// From the ledger's record, local or published: nothing reassembled.
    fn ledger_head(&self, seq: u32) -> StoreResult<Option<LedgerHead>> {
        let local = |s: &Ledgerstore| s.ledger_head(seq);
        self.held_or_evicted(seq, local, |c| c.ledger_head(seq))
    }

    /// The oldest ledger's, once evicted, from the eviction record: the
    /// figures every Stellar RPC response carries do not depend on the
    /// published store.
    fn close_time(&self, seq: u32) -> StoreResult<Option<u64>> {
        if let Some(o) = self.store.evicted_oldest().filter(|o| o.seq == seq) {
            return Ok(Some(o.close_time));
        }
        let t = Reader::ledger_head(self, seq)?.map(|h| h.close_time);
        if let Some(close_time) = t {
            self.remember_oldest(seq, close_time);
        }
        Ok(t)
    }

    fn ledger_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerRecord>> {
        self.chunk(from, end, max)
    }

    fn ledger_head_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerHead>> {
        self.chunk(from, end, max)
    }

    fn first_ledger(&self) -> Option<u32> {
        self.store.first_ledger()
    }

    fn last_ledger(&self) -> Option<u32> {
        Reader::last_ledger(&*self.store)
    }

    fn mark_text(&self) -> String {
        self.store.mark_text()
    }

    fn reads_may_block(&self) -> bool {
        self.below() > 0
    }

    fn status(&self) -> StoreResult<ReaderStatus> {
        self.store.status()
    }
}

/// Evicts the published base ranges older than the newest `keep` (at
/// least one stays: the next round checks its mark against it), once
/// `cold` serves a manifest that lists them. Returns the ledgers evicted.
/// An eviction record written before it kept the oldest ledger's close
/// time gets it here, from `cold`.
pub async fn evict(store: Arc<Ledgerstore>, cold: &Arc<Replica>, keep: u32) -> ColdResult<u64> {
    evict_until(store, cold, keep, Arc::new(AtomicBool::new(false))).await
}

/// [`evict`], deleting no further than the next chunk of ledgers once
/// `stop` is set (a daemon shutting down): the next eviction deletes the
/// rest.
pub async fn evict_until(
    store: Arc<Ledgerstore>,
    cold: &Arc<Replica>,
    keep: u32,
    stop: Arc<AtomicBool>,
) -> ColdResult<u64> {
    cold.refresh().await?;
    fill_oldest(&store, cold).await;
    let Some(m) = cold.manifest() else {
        return Ok(0);
    };
    let keep = keep.max(1) as usize;
    if m.packs.len() <= keep {
        return Ok(0);
    }
    let mut below = m.packs[m.packs.len() - keep].first;
    if let Some(e) = store.evicted()
        && e.below >= below
    {
        // Nothing new to evict; but an eviction cut short (a stop or a
        // crash after its boundary was recorded) is finished at its own
        // boundary, or its ledgers would stay until the next range moves
        // it.
        let s = Arc::clone(&store);
        let unfinished = tokio::task::spawn_blocking(move || s.eviction_unfinished())
            .await
            .map_err(|e| ColdError::Task(e.to_string()))?
            .map_err(ColdError::from)?;
        if !unfinished {
            return Ok(0);
        }
        below = e.below;
    }
    let location = cold.location().to_string();
    if stop.load(Ordering::Relaxed) {
        return Ok(0);
    }
    tokio::task::spawn_blocking(move || store.evict_below_until(below, &location, &stop))
        .await
        .map_err(|e| ColdError::Task(e.to_string()))?
        .map_err(ColdError::from)
}

/// Fills the oldest ledger's close time into an eviction record that
/// lacks it, reading that ledger from `cold` (failures are logged: the
/// next round tries again, and reads fill it too).
async fn fill_oldest(store: &Arc<Ledgerstore>, cold: &Arc<Replica>) {
    let Some(first) = store.first_ledger() else {
        return;
    };
    let lacks = store
        .evicted()
        .is_some_and(|e| e.oldest.is_none() && first < e.below);
    if !lacks {
        return;
    }
    let tiered = Tiered {
        store: Arc::clone(store),
        cold: Arc::clone(cold),
    };
    match tokio::task::spawn_blocking(move || tiered.close_time(first)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "reading the oldest ledger's close time from the published store failed; retrying next round")
        }
        Err(e) => tracing::warn!(error = %e, "reading the oldest ledger's close time failed"),
    }
}

#[cfg(test)]
#[path = "tiered_tests.rs"]
mod tests;
