//! Rolls back whatever an interrupted batch left above the mark.
//!
//! The ledgers table is durable before any hash-table write of the same
//! batch can be, so every orphan hash entry is listed by a ledger record
//! above the mark. We delete those hashes (unless the tx index says the
//! hash belongs to a committed ledger), then the ledger records. In layout
//! `indexed` both other tables are keyed by position, so the orphans are
//! exactly the positions those records list.

use ledgerstore_db_api::{Decompress, Dictionary, KvStore, StoredLedger, TableId, TxPos};

use crate::Ledgerstore;
use crate::error::{StoreError, StoreResult};

/// What a rollback removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RolledBack {
    pub ledgers: usize,
    pub txs: usize,
}

/// Ledger records read per scan: raw in a format-3 dir (a pubnet
/// skeleton ~110 KB, a whole record up to `limits.max_ledger_bytes`).
const SCAN_CHUNK: usize = 64;

impl Ledgerstore {
    pub(crate) fn rollback_above_mark(&self) -> StoreResult<RolledBack> {
        let last = self.mark().last;
        let Some(mut from) = last.map_or(Some(0), |l| l.checked_add(1)) else {
            return Ok(RolledBack::default());
        };
        let mut ledger_keys = Vec::new();
        let mut hashes = Vec::new();
        // Layout `indexed`: body keys are positions.
        let mut body_keys: Vec<Vec<u8>> = Vec::new();
        loop {
            let chunk = self.ledgers.scan(&from.to_be_bytes(), SCAN_CHUNK)?;
            let Some((last_key, _)) = chunk.last() else {
                break;
            };
            let last_seq = <u32 as ledgerstore_db_api::Decode>::decode(last_key)?;
            for (key, value) in chunk {
                let rec = StoredLedger::decompress(&value).map_err(|e| {
                    StoreError::Corrupt(format!(
                        "ledger record above the mark cannot be read for rollback: {e}"
                    ))
                })?;
                // Aliases too: hash keys in the hash tables, positions after
                // the transactions' in `indexed`.
                if self.indexed.is_some() {
                    body_keys.extend((0..rec.lookup_count()).map(|i| {
                        TxPos {
                            seq: rec.seq,
                            index: i as u32,
                        }
                        .to_bytes()
                        .to_vec()
                    }));
                }
                hashes.extend(rec.lookup_hashes().copied());
                ledger_keys.push(key);
            }
            match last_seq.checked_add(1) {
                Some(next) => from = next,
                None => break,
            }
        }
        if let Some(tier) = &self.indexed {
            let txs = body_keys.len();
            let positions: Vec<&[u8]> = body_keys.iter().map(Vec::as_slice).collect();
            delete_keys(self.tx_index.as_ref(), &positions)?;
            tier.segments.hot_map.remove_above(last);
            // Dictionaries trained for a batch that did not commit.
            let in_use = tier.dict_version_in_use(&self.mark());
            for (k, _) in self.tx_data.scan(&Dictionary::first_key(), 1024)? {
                if Dictionary::parse_key(&k).is_some_and(|v| v > in_use) {
                    body_keys.push(k);
                }
            }
            let refs: Vec<&[u8]> = body_keys.iter().map(Vec::as_slice).collect();
            delete_keys(self.tx_data.as_ref(), &refs)?;
            let ledger_refs: Vec<&[u8]> = ledger_keys.iter().map(Vec::as_slice).collect();
            delete_keys(self.ledgers.as_ref(), &ledger_refs)?;
            return Ok(RolledBack {
                ledgers: ledger_keys.len(),
                txs,
            });
        }
        if ledger_keys.is_empty() {
            return Ok(RolledBack::default());
        }
        hashes.sort_unstable();
        let keys: Vec<&[u8]> = hashes.iter().map(|h| &h.0[..]).collect();
        let mut orphans: Vec<&[u8]> = Vec::with_capacity(keys.len());
        // Each chunk is its own short read transaction: a crash in a large
        // batch leaves hundreds of thousands of hashes, and one read of all
        // of them on a cold cache would outlive the read bound.
        for chunk in keys.chunks(crate::MAINTENANCE_READ_KEYS) {
            for (key, owner) in chunk.iter().zip(self.tx_index.multi_get(chunk)?) {
                let Some(v) = owner else {
                    orphans.push(key);
                    continue;
                };
                let seq = u32::decompress(&v).map_err(|e| {
                    StoreError::Corrupt(format!(
                        "{}: the value of {} does not decode ({e}), so rollback cannot tell \
                         whether it belongs to a committed ledger; nothing was deleted. Run \
                         `ledgerstore check`, and restore from a backup",
                        self.tx_index.table(),
                        hex::encode(key)
                    ))
                })?;
                if last.is_none_or(|l| seq > l) {
                    orphans.push(key);
                }
            }
        }
        for table in [TableId::TxData, TableId::TxIndex] {
            delete_keys(self.table(table), &orphans)?;
        }
        let ledger_refs: Vec<&[u8]> = ledger_keys.iter().map(Vec::as_slice).collect();
        delete_keys(self.ledgers.as_ref(), &ledger_refs)?;
        Ok(RolledBack {
            ledgers: ledger_keys.len(),
            txs: orphans.len(),
        })
    }
}

fn delete_keys(store: &dyn KvStore, keys: &[&[u8]]) -> StoreResult<()> {
    if keys.is_empty() {
        return Ok(());
    }
    let mut w = store.begin_write()?;
    for k in keys {
        w.delete(k)?;
    }
    w.finish()?;
    w.commit()?;
    Ok(())
}
