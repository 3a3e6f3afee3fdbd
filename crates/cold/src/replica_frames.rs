//! Reads of packs of ledger frames (pack version 3): a body or a ledger
//! is read by reading its ledger's frame (the ledger table page, then the
//! frame: one ranged GET), checked against its CRC-32 and decompressed no
//! further than the pack's largest frame.
//!
//! Opened frames are kept in memory ([`Frames`], up to [`FRAME_MEMORY`]
//! bytes, the most recently used), so an alias and the body it names, or
//! lookups of one busy ledger, decompress its frame once. The disk cache
//! holds the compressed frames, as it holds any other piece.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ledgerstore_db_api::{
    Decompress, DictSet, LedgerRecord, StoredLedger, TxBody, TxPos, TxRecord,
};
use ledgerstore_pack::{Header, LedgerEntry, LedgerFrame, PackRef};

use super::Replica;
use crate::error::{ColdError, ColdResult};

/// Bytes of decompressed frames a replica keeps in memory.
pub const FRAME_MEMORY: usize = 32 << 20;

/// Opened ledger frames by piece name, most recently used first, up to
/// [`FRAME_MEMORY`] bytes (a frame larger than that is not kept).
#[derive(Default)]
pub(super) struct Frames {
    held: Mutex<VecDeque<(String, Arc<LedgerFrame>)>>,
}

impl Frames {
    pub(super) fn get(&self, name: &str) -> Option<Arc<LedgerFrame>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let i = held.iter().position(|(n, _)| n == name)?;
        let hit = held.remove(i)?;
        let f = Arc::clone(&hit.1);
        held.push_front(hit);
        Some(f)
    }

    fn put(&self, name: String, f: Arc<LedgerFrame>) {
        if f.raw_len() > FRAME_MEMORY {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.iter().any(|(n, _)| *n == name) {
            return;
        }
        held.push_front((name, f));
        let mut total = 0;
        let keep = held
            .iter()
            .take_while(|(_, f)| {
                total += f.raw_len();
                total <= FRAME_MEMORY
            })
            .count();
        held.truncate(keep);
    }
}

/// The cache name of ledger `seq`'s frame in pack `key`.
pub(super) fn frame_name(key: &str, seq: u32) -> String {
    format!("f/{key}/{seq}")
}

impl Replica {
    /// Ledger `seq`'s frame in pack `p` (version 3), from memory, the
    /// disk cache, or one ranged GET.
    pub(super) fn frame(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        seq: u32,
    ) -> ColdResult<Arc<LedgerFrame>> {
        let key = &p.object.key;
        let name = frame_name(key, seq);
        if let Some(f) = self.frames.get(&name) {
            return Ok(f);
        }
        let range = h
            .data_range(&le.record)
            .map_err(|e| ColdError::damaged(key, format!("ledger {seq}: {e}")))?;
        let bytes = self.piece(name.clone(), key, range)?;
        self.opened_frame(p, h, le, seq, name, &bytes)
    }

    /// Fetched frame `bytes` (piece `name`) of ledger `seq` opened and
    /// checked, and kept in memory; a frame that fails leaves the disk
    /// cache.
    pub(super) fn opened_frame(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        seq: u32,
        name: String,
        bytes: &[u8],
    ) -> ColdResult<Arc<LedgerFrame>> {
        if let Some(f) = self.frames.get(&name) {
            return Ok(f);
        }
        let key = &p.object.key;
        let f = self.checked(&name, || {
            LedgerFrame::open(h, le, bytes)
                .map(Arc::new)
                .map_err(|e| ColdError::damaged(key, format!("ledger {seq}: {e}")))
        })?;
        self.frames.put(name, Arc::clone(&f));
        Ok(f)
    }

    /// The stored body at `pos` from its ledger's frame.
    pub(super) fn frame_body(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        pos: TxPos,
    ) -> ColdResult<TxBody> {
        let f = self.frame(p, h, le, pos.seq)?;
        body_of(p, &f, pos)
    }

    /// Ledger `seq` of a pack of frames, with exactly the bytes ingested
    /// (a skeleton record joined with its bodies, checked against its
    /// SHA-256).
    pub(super) fn frame_ledger(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        dicts: &DictSet,
        seq: u32,
    ) -> ColdResult<LedgerRecord> {
        let key = &p.object.key;
        let damaged = |e: String| ColdError::damaged(key, format!("ledger {seq}: {e}"));
        let f = self.frame(p, h, le, seq)?;
        let stored = StoredLedger::decompress(f.record()).map_err(|e| damaged(e.to_string()))?;
        if stored.seq != seq {
            return Err(damaged(format!(
                "the table's entry holds ledger {}'s record",
                stored.seq
            )));
        }
        if !stored.needs_bodies() {
            return stored.into_whole().map_err(|e| damaged(e.to_string()));
        }
        let n = u32::try_from(stored.tx_hashes.len()).unwrap_or(u32::MAX);
        let records: Vec<TxRecord> = (0..n)
            .map(|i| {
                body_of(p, &f, TxPos { seq, index: i }).and_then(|body| {
                    body.record(dicts)
                        .map_err(|e| damaged(format!("body {i}: {e}")))
                })
            })
            .collect::<ColdResult<_>>()?;
        stored
            .join_records(&records)
            .map_err(|e| damaged(e.to_string()))
    }
}

/// Body `pos.index` of ledger frame `f` of pack `p`, parsed.
pub(super) fn body_of(p: &PackRef, f: &LedgerFrame, pos: TxPos) -> ColdResult<TxBody> {
    let damaged = |e: String| {
        ColdError::damaged(
            &p.object.key,
            format!("ledger {} body {}: {e}", pos.seq, pos.index),
        )
    };
    let b = f.body(pos.index).map_err(|e| damaged(e.to_string()))?;
    TxBody::decompress(b).map_err(|e| damaged(e.to_string()))
}
