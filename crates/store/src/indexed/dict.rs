//! Training tx-body dictionaries during ingest.
//!
//! Dictionaries live in the `tx_bodies` table under 9-byte keys that sort
//! below every position ([`Dictionary::key`]), so they are written, made durable, backed up and
//! restored with the bodies that use them. A dictionary's value is
//! `[trained through ledger: u32 BE][txs stored at training: u64 BE][bytes]`.
//!
//! The first version is trained once the store holds
//! `dict.train_after_txs` transactions, from the earliest stored bodies; a
//! retrain (when `dict.retrain_every_txs` > 0) samples the bodies stored
//! since the previous version. Training happens at the start of a batch
//! and the batch then uses the new version; its time is in the batch's
//! `compute` phase.

use std::sync::atomic::Ordering;

use ledgerstore_db_api::Decompress;
use ledgerstore_db_api::{DictSet, Dictionary, KvStore, TxBody, TxPos};

use crate::datadir::MarkState;
use crate::error::{StoreError, StoreResult};
use crate::indexed::{DictOptions, IndexedTier};

const SCAN_CHUNK: usize = 1024;

/// Splits a stored dictionary value into its header and bytes.
pub(crate) fn split_value(v: &[u8]) -> StoreResult<((u32, u64), &[u8])> {
    if v.len() < 12 {
        return Err(StoreError::Corrupt(format!(
            "tx_bodies: dictionary value of {} bytes is shorter than its 12-byte header",
            v.len()
        )));
    }
    let through = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
    let mut t = [0u8; 8];
    t.copy_from_slice(&v[4..12]);
    Ok(((through, u64::from_be_bytes(t)), &v[12..]))
}

fn value(through: u32, txs: u64, bytes: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + bytes.len());
    v.extend_from_slice(&through.to_be_bytes());
    v.extend_from_slice(&txs.to_be_bytes());
    v.extend_from_slice(bytes);
    v
}

/// A dictionary trained for the batch about to be written.
pub(crate) struct Trained {
    /// The set the batch compresses with (the new version current).
    pub dicts: DictSet,
    /// Key and value to store with the batch.
    pub key: [u8; 9],
    pub value: Vec<u8>,
}

impl IndexedTier {
    /// Trains the next dictionary version when the options call for it.
    pub(crate) fn maybe_train(
        &self,
        bodies: &dyn KvStore,
        mark: &MarkState,
        level: i32,
    ) -> StoreResult<Option<Trained>> {
        let Some(o) = &self.opts.dict else {
            return Ok(None);
        };
        if self.training_failed.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let current = self.dicts();
        let Some(from) = self.training_start(bodies, &current, mark, o)? else {
            return Ok(None);
        };
        let (samples, through) = sample(bodies, &current, from, o.samples)?;
        if samples.len() < 16 {
            return Ok(None);
        }
        let version = current.next_version();
        let started = std::time::Instant::now();
        match Dictionary::train(version, &samples, o.max_bytes, level) {
            Ok(d) => {
                tracing::info!(
                    version,
                    samples = samples.len(),
                    through,
                    bytes = d.bytes().len(),
                    seconds = started.elapsed().as_secs_f64(),
                    "trained a tx-body dictionary"
                );
                let key = Dictionary::key(version);
                let value = value(through, mark.txs, d.bytes());
                let mut dicts = (*current).clone();
                dicts.insert(d);
                Ok(Some(Trained { dicts, key, value }))
            }
            Err(e) => {
                tracing::warn!(error = %e, "dictionary training failed; bodies stay compressed without one");
                self.training_failed.store(true, Ordering::Relaxed);
                Ok(None)
            }
        }
    }

    /// Where the samples for the next version start, if one is due.
    fn training_start(
        &self,
        bodies: &dyn KvStore,
        current: &DictSet,
        mark: &MarkState,
        o: &DictOptions,
    ) -> StoreResult<Option<u32>> {
        let Some(first) = mark.first else {
            return Ok(None);
        };
        let Some(d) = current.current() else {
            return Ok((mark.txs >= o.train_after_txs).then_some(first));
        };
        if o.retrain_every_txs == 0 {
            return Ok(None);
        }
        let Some(v) = bodies.get(&Dictionary::key(d.version()))? else {
            return Ok(None);
        };
        let ((through, txs_then), _) = split_value(&v)?;
        let due = mark.txs.saturating_sub(txs_then) >= o.retrain_every_txs;
        Ok(due.then(|| through.saturating_add(1)))
    }
}

/// Up to `n` encoded records from ledger `from` on; returns them and the
/// last ledger sampled.
fn sample(
    bodies: &dyn KvStore,
    dicts: &DictSet,
    from: u32,
    n: usize,
) -> StoreResult<(Vec<Vec<u8>>, u32)> {
    let mut out = Vec::with_capacity(n);
    let mut through = from;
    let mut key = TxPos {
        seq: from,
        index: 0,
    }
    .to_bytes()
    .to_vec();
    while out.len() < n {
        let limit = SCAN_CHUNK.min(n - out.len());
        let chunk = bodies.scan(&key, limit)?;
        let Some((last, _)) = chunk.last() else { break };
        key = last.clone();
        key.push(0);
        for (k, v) in &chunk {
            let Some(pos) = TxPos::from_bytes(k) else {
                continue; // a dictionary key (they sort below ledger 1)
            };
            let body = TxBody::decompress(v)?;
            if body.alias_of()?.is_some() {
                continue; // an alias: no record of its own
            }
            out.push(body.encoded_record(dicts)?);
            through = pos.seq;
        }
        if chunk.len() < limit {
            break;
        }
    }
    Ok((out, through))
}
