//! Reads of whole ledgers and ledger heads from packs: a skeleton record
//! joined with its ledger's bodies (checked against the record's SHA-256),
//! or the record alone for a caller that needs no raw bytes
//! ([`LedgerHead`]).

use std::collections::HashMap;

use ledgerstore_db_api::{Decompress, DictSet, LedgerRecord, StoredLedger, TxBody, TxRecord};
use ledgerstore_pack::{Header, LedgerEntry, Manifest, PackRef};

use super::{Replica, record_of};
use crate::error::{ColdError, ColdResult};

impl Replica {
    pub(super) fn ledger(
        &self,
        m: &Manifest,
        dicts: &DictSet,
        seq: u32,
    ) -> ColdResult<Option<LedgerRecord>> {
        let Some(p) = m.pack_of(seq) else {
            return Ok(None);
        };
        self.pack_ledger(p, dicts, seq)
            .map(Some)
            .map_err(|e| e.for_ledgers(p.first, p.last))
    }

    /// Ledger `seq` of pack `p`, with exactly the bytes ingested: a
    /// skeleton record is joined with the pack's bodies of the ledger and
    /// checked against its recorded SHA-256 (damage names the pack).
    fn pack_ledger(&self, p: &PackRef, dicts: &DictSet, seq: u32) -> ColdResult<LedgerRecord> {
        let key = &p.object.key;
        let h = self.header(p)?;
        let le = self.ledger_entry(p, &h, seq)?;
        if h.frames() {
            return self.frame_ledger(p, &h, &le, dicts, seq);
        }
        let stored = self.pack_record(p, &h, &le, seq)?;
        let damaged = |e: ledgerstore_db_api::DbError| ColdError::damaged(key, e.to_string());
        if !stored.needs_bodies() {
            return stored.into_whole().map_err(damaged);
        }
        let n = u32::try_from(stored.tx_hashes.len()).unwrap_or(u32::MAX);
        let records = self.pack_records(p, &h, &le, dicts, seq, n)?;
        stored.join_records(&records).map_err(damaged)
    }

    /// The records of ledger `seq`'s first `n` bodies (its transactions,
    /// in apply order), with one read: a ledger's bodies lie contiguous
    /// after its record. Each is checked against its entry's CRC-32.
    fn pack_records(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        dicts: &DictSet,
        seq: u32,
        n: u32,
    ) -> ColdResult<Vec<TxRecord>> {
        let key = &p.object.key;
        let damaged = |e: String| ColdError::damaged(key, format!("ledger {seq} bodies: {e}"));
        let mut pages: HashMap<u64, Vec<u8>> = HashMap::new();
        let mut entries = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (page, _) = h.body_page_of(le, i).map_err(|e| damaged(e.to_string()))?;
            let name = format!("bt/{key}/{page}");
            if let std::collections::hash_map::Entry::Vacant(slot) = pages.entry(page) {
                let range = h.body_page(page).map_err(|e| damaged(e.to_string()))?;
                slot.insert(self.piece(name.clone(), key, range)?);
            }
            let table = pages.get(&page).map_or(&[][..], Vec::as_slice);
            let e = self.checked(&name, || {
                h.body_entry(table, le, i)
                    .map_err(|e| damaged(e.to_string()))
            })?;
            let range = h.data_range(&e).map_err(|e| damaged(e.to_string()))?;
            entries.push((e, range));
        }
        let (Some((_, first)), Some((_, last))) = (entries.first(), entries.last()) else {
            return Ok(Vec::new());
        };
        let span = first.start..last.end;
        // A pack writes a ledger's bodies back to back: a gap would make
        // one read span more than the ledger's bodies.
        if entries.windows(2).any(|w| w[1].1.start != w[0].1.end) || span.end < span.start {
            return Err(damaged(
                "the body table's entries are not back to back".into(),
            ));
        }
        let name = format!("bs/{key}/{seq}");
        let bytes = self.piece(name.clone(), key, span.clone())?;
        self.checked(&name, || {
            entries
                .iter()
                .enumerate()
                .map(|(i, (e, r))| {
                    let at = (r.start - span.start) as usize..(r.end - span.start) as usize;
                    let b = bytes
                        .get(at)
                        .ok_or_else(|| damaged(format!("body {i} lies outside the read")))?;
                    e.check(b).map_err(|e| damaged(format!("body {i}: {e}")))?;
                    TxBody::decompress(b)
                        .and_then(|body| body.record(dicts))
                        .map_err(|e| damaged(format!("body {i}: {e}")))
                })
                .collect()
        })
    }

    /// Ledger `seq`'s stored record, as the pack holds it.
    pub(super) fn pack_record(
        &self,
        p: &PackRef,
        h: &Header,
        le: &LedgerEntry,
        seq: u32,
    ) -> ColdResult<StoredLedger> {
        let key = &p.object.key;
        let damaged = |e: String| ColdError::damaged(key, format!("ledger {seq}: {e}"));
        let range = h
            .data_range(&le.record)
            .map_err(|e| damaged(e.to_string()))?;
        let name = format!("l/{key}/{seq}");
        let bytes = self.piece(name.clone(), key, range)?;
        self.checked(&name, || {
            le.record
                .check(&bytes)
                .map_err(|e| damaged(e.to_string()))?;
            record_of(key, seq, &bytes)
        })
    }

    /// Ledger `seq`'s record, its transactions not put back: no body is
    /// read (in a pack of frames the frame holding the record is read and
    /// decompressed whole; its bodies are not parsed or joined).
    pub(super) fn head(&self, m: &Manifest, seq: u32) -> ColdResult<Option<StoredLedger>> {
        let Some(p) = m.pack_of(seq) else {
            return Ok(None);
        };
        self.pack_head(p, seq)
            .map(Some)
            .map_err(|e| e.for_ledgers(p.first, p.last))
    }

    fn pack_head(&self, p: &PackRef, seq: u32) -> ColdResult<StoredLedger> {
        let h = self.header(p)?;
        let le = self.ledger_entry(p, &h, seq)?;
        if h.frames() {
            let f = self.frame(p, &h, &le, seq)?;
            return record_of(&p.object.key, seq, f.record());
        }
        self.pack_record(p, &h, &le, seq)
    }
}
