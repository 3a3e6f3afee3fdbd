//! The writer's reads once it evicts published ranges
//! (`[cold] keep_local_ranges`): the local store first, then, for what
//! left the data dir, a replica of its own published store.

use std::sync::Arc;

use ledgerstore_db_api::{LedgerRecord, TxHash, TxRecord};
use ledgerstore_store::{Ledgerstore, Reader, ReaderStatus, StoreResult};

use crate::error::{ColdError, ColdResult};
use crate::replica::Replica;

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
}

impl Reader for Tiered {
    fn get_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        match self.store.get_tx(hash)? {
            Some(r) => Ok(Some(r)),
            None if self.below() > 0 => self.cold.get_tx(hash),
            None => Ok(None),
        }
    }

    fn get_tx_ledger(&self, hash: &TxHash) -> StoreResult<Option<u32>> {
        // Exact locally: evicted ranges keep their hash lists.
        self.store.get_tx_ledger(hash)
    }

    fn batch_get_txs(&self, hashes: &[TxHash]) -> StoreResult<Vec<Option<TxRecord>>> {
        let mut out = self.store.batch_get_txs(hashes)?;
        if self.below() > 0 {
            for (slot, h) in out.iter_mut().zip(hashes) {
                if slot.is_none() {
                    *slot = self.cold.get_tx(h)?;
                }
            }
        }
        Ok(out)
    }

    fn get_ledger(&self, seq: u32) -> StoreResult<Option<LedgerRecord>> {
        if seq < self.below() {
            return self.cold.get_ledger(seq);
        }
        self.store.get_ledger(seq)
    }

    fn ledger_chunk(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerRecord>> {
        let below = self.below();
        let mut out = Vec::new();
        if from < below {
            out = self.cold.ledger_chunk(from, end.min(below - 1), max)?;
        }
        if out.len() < max && end >= below {
            let rest = self
                .store
                .ledger_chunk(from.max(below), end, max - out.len())?;
            out.extend(rest);
        }
        Ok(out)
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
pub async fn evict(store: Arc<Ledgerstore>, cold: &Replica, keep: u32) -> ColdResult<u64> {
    cold.refresh().await?;
    let Some(m) = cold.manifest() else {
        return Ok(0);
    };
    let keep = keep.max(1) as usize;
    if m.packs.len() <= keep {
        return Ok(0);
    }
    let below = m.packs[m.packs.len() - keep].first;
    if store.evicted().is_some_and(|e| e.below >= below) {
        return Ok(0);
    }
    let location = cold.location().to_string();
    tokio::task::spawn_blocking(move || store.evict_below(below, &location))
        .await
        .map_err(|e| ColdError::Task(e.to_string()))?
        .map_err(ColdError::from)
}
