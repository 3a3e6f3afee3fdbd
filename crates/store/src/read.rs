//! Reads. Nothing above the mark is ever returned.

use std::collections::VecDeque;

use ledgerstore_db_api::{Decompress, LedgerRecord, TxHash, TxRecord};
use rayon::prelude::*;

use crate::Ledgerstore;
use crate::error::StoreResult;

/// Lookups at or above this count decompress in parallel.
const PARALLEL_DECOMPRESS: usize = 64;

impl Ledgerstore {
    /// A transaction by hash.
    pub fn get_tx(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        if self.indexed.is_some() {
            return self.get_tx_indexed(hash);
        }
        let Some(bytes) = self.tx_data.get(&hash.0)? else {
            return Ok(None);
        };
        let rec = TxRecord::decompress(&bytes)?;
        Ok(self.is_visible(rec.ledger_seq).then_some(rec))
    }

    /// The ledger that holds a transaction, from the tx index alone.
    pub fn get_tx_ledger(&self, hash: &TxHash) -> StoreResult<Option<u32>> {
        if self.indexed.is_some() {
            return self.get_tx_ledger_indexed(hash);
        }
        let Some(bytes) = self.tx_index.get(&hash.0)? else {
            return Ok(None);
        };
        let seq = u32::decompress(&bytes)?;
        Ok(self.is_visible(seq).then_some(seq))
    }

    /// Many transactions by hash. Lookups run in key order for locality;
    /// answers come back in the order of `hashes`.
    pub fn batch_get_txs(&self, hashes: &[TxHash]) -> StoreResult<Vec<Option<TxRecord>>> {
        if self.indexed.is_some() {
            return self.batch_get_indexed(hashes);
        }
        let mut order: Vec<usize> = (0..hashes.len()).collect();
        order.sort_unstable_by_key(|&i| hashes[i]);
        let keys: Vec<&[u8]> = order.iter().map(|&i| &hashes[i].0[..]).collect();
        let found = self.tx_data.multi_get(&keys)?;
        let decode = |v: Option<Vec<u8>>| -> StoreResult<Option<TxRecord>> {
            match v {
                Some(b) => {
                    let rec = TxRecord::decompress(&b)?;
                    Ok(self.is_visible(rec.ledger_seq).then_some(rec))
                }
                None => Ok(None),
            }
        };
        let decoded: Vec<Option<TxRecord>> = if found.len() >= PARALLEL_DECOMPRESS {
            found
                .into_par_iter()
                .map(decode)
                .collect::<StoreResult<_>>()?
        } else {
            found.into_iter().map(decode).collect::<StoreResult<_>>()?
        };
        let mut out = vec![None; hashes.len()];
        for (slot, rec) in order.into_iter().zip(decoded) {
            out[slot] = rec;
        }
        Ok(out)
    }

    /// A ledger by seq.
    pub fn get_ledger(&self, seq: u32) -> StoreResult<Option<LedgerRecord>> {
        if !self.is_visible(seq) {
            return Ok(None);
        }
        match self.ledgers.get(&seq.to_be_bytes())? {
            Some(b) => Ok(Some(LedgerRecord::decompress(&b)?)),
            None => Ok(None),
        }
    }

    /// Ledgers in `start..=end` that exist, ascending, clipped to the mark
    /// as it is now. Reads `chunk` ledgers at a time.
    pub fn ledgers(&self, start: u32, end: u32, chunk: usize) -> LedgerRange<'_> {
        let end = match self.last_ledger() {
            Some(last) => end.min(last),
            None => 0,
        };
        LedgerRange {
            store: self,
            next: (self.last_ledger().is_some() && start <= end).then_some(start),
            end,
            chunk: chunk.max(1),
            buf: VecDeque::new(),
        }
    }
}

/// Iterator over a range of ledgers; see [`Ledgerstore::ledgers`].
pub struct LedgerRange<'a> {
    store: &'a Ledgerstore,
    next: Option<u32>,
    end: u32,
    chunk: usize,
    buf: VecDeque<LedgerRecord>,
}

impl std::fmt::Debug for LedgerRange<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerRange")
            .field("next", &self.next)
            .field("end", &self.end)
            .finish()
    }
}

impl LedgerRange<'_> {
    fn fill(&mut self) -> StoreResult<()> {
        let Some(from) = self.next else { return Ok(()) };
        let rows = self.store.ledgers.scan(&from.to_be_bytes(), self.chunk)?;
        self.next = None;
        for (k, v) in rows {
            let seq = <u32 as ledgerstore_db_api::Decode>::decode(&k)?;
            if seq > self.end {
                return Ok(());
            }
            self.buf.push_back(LedgerRecord::decompress(&v)?);
            self.next = seq.checked_add(1).filter(|n| *n <= self.end);
        }
        Ok(())
    }
}

impl Iterator for LedgerRange<'_> {
    type Item = StoreResult<LedgerRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty()
            && let Err(e) = self.fill()
        {
            self.next = None;
            return Some(Err(e));
        }
        self.buf.pop_front().map(Ok)
    }
}
