//! Reads. Nothing above the mark is ever returned.

use std::collections::VecDeque;

use ledgerstore_db_api::{
    DbError, Decompress, LedgerRecord, StoredLedger, TxBody, TxHash, TxPos, TxRecord,
};
use rayon::prelude::*;

use crate::error::{StoreError, StoreResult};
use crate::{LedgerHead, Ledgerstore};

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
            Some(b) => self.whole_ledger(StoredLedger::decompress(&b)?),
            None => Ok(None),
        }
    }

    /// Ledger `seq` as its record holds it, its transactions not put back
    /// ([`LedgerHead`]: hashes, close time, header).
    pub fn ledger_head(&self, seq: u32) -> StoreResult<Option<LedgerHead>> {
        if !self.is_visible(seq) {
            return Ok(None);
        }
        let Some(b) = self.ledgers.get(&seq.to_be_bytes())? else {
            return Ok(None);
        };
        let head = LedgerHead::from(StoredLedger::decompress(&b)?);
        if head.seq != seq {
            return Err(misfiled(seq, head.seq));
        }
        Ok(Some(head))
    }

    /// Up to `max` ledgers of `from..=end` as [`LedgerHead`]s, ascending,
    /// clipped to the mark: one range read, nothing reassembled.
    pub fn ledger_heads(&self, from: u32, end: u32, max: usize) -> StoreResult<Vec<LedgerHead>> {
        let Some(end) = self.last_ledger().map(|last| end.min(last)) else {
            return Ok(Vec::new());
        };
        if from > end || max == 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for (k, v) in self.ledgers.scan(&from.to_be_bytes(), max)? {
            let seq = <u32 as ledgerstore_db_api::Decode>::decode(&k)?;
            if seq > end {
                break;
            }
            let head = LedgerHead::from(StoredLedger::decompress(&v)?);
            if head.seq != seq {
                return Err(misfiled(seq, head.seq));
            }
            out.push(head);
        }
        Ok(out)
    }

    /// The ledger a stored record describes, with exactly the bytes
    /// ingested: a whole record as it is; a skeleton (layout `indexed`)
    /// joined with its transactions' bodies and checked against its
    /// recorded SHA-256 ([`DbError::Reassembly`], naming the ledger, when
    /// anything is damaged or missing). None when the bodies were evicted
    /// to the published store meanwhile: the caller reads it there.
    pub(crate) fn whole_ledger(&self, stored: StoredLedger) -> StoreResult<Option<LedgerRecord>> {
        if !stored.needs_bodies() {
            return Ok(Some(stored.into_whole()?));
        }
        let seq = stored.seq;
        match self.ledger_bodies(seq, stored.tx_hashes.len())? {
            Some(records) => Ok(Some(stored.join_records(&records)?)),
            None => Ok(None),
        }
    }

    /// The `n` transaction records of ledger `seq` (positions `0..n`), in
    /// one range read. None when some are missing because the ledger is
    /// being evicted; any other absence or damage is a reassembly error.
    fn ledger_bodies(&self, seq: u32, n: usize) -> StoreResult<Option<Vec<TxRecord>>> {
        let damaged = |detail: String| DbError::Reassembly { seq, detail };
        // Only `indexed` writes skeletons: elsewhere one is damage.
        let Some(tier) = self.indexed.as_ref() else {
            return Err(DbError::NeedsBodies { seq }.into());
        };
        let dicts = tier.dicts();
        let mut out: Vec<TxRecord> = Vec::with_capacity(n);
        while out.len() < n {
            let want = TxPos {
                seq,
                index: out.len() as u32,
            };
            let rows = self.tx_data.scan(&want.to_bytes(), n - out.len())?;
            let before = out.len();
            for (k, v) in rows {
                let at = out.len() as u32;
                if TxPos::from_bytes(&k) != Some(TxPos { seq, index: at }) {
                    break;
                }
                let rec = TxBody::decompress(&v)
                    .and_then(|b| b.record(&dicts))
                    .map_err(|e| damaged(format!("the body at index {at}: {e}")))?;
                out.push(rec);
            }
            if out.len() == before {
                break;
            }
        }
        if out.len() < n {
            // Eviction deletes the bodies first; the boundary moved before.
            if seq < self.evicted_below() {
                return Ok(None);
            }
            return Err(damaged(format!(
                "tx_bodies holds the bodies of {} of its {n} transactions",
                out.len()
            ))
            .into());
        }
        Ok(Some(out))
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
            match self.store.whole_ledger(StoredLedger::decompress(&v)?)? {
                Some(l) => self.buf.push_back(l),
                // Being evicted: the range ends here (a tiered reader sees
                // the boundary move and reads again).
                None => return Ok(()),
            }
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

/// A ledger record stored under another ledger's key.
fn misfiled(seq: u32, says: u32) -> StoreError {
    StoreError::Corrupt(format!("ledgers[{seq}]: its record says ledger {says}"))
}
