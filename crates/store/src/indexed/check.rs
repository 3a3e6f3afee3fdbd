//! `ledgerstore check` for the `indexed` layout.
//!
//! Pass 1 (shared with the other layouts) reads the ledger records; for
//! each listed hash this module checks that the hot index (its table and
//! its in-memory map) or the segment covering its ledger maps it to its
//! exact position, and that the body there records the same hash and
//! decodes to the same ledger and index. Then the bodies table and the hot
//! index are scanned: no body or hot entry may lie above the mark or
//! outside what the ledgers list, and each segment must hold exactly the
//! txs its range lists.

use std::sync::Arc;

use ledgerstore_db_api::{Decompress, DictSet, Dictionary, TxBody, TxPos};
use ledgerstore_segment::Segment;

use super::hot::parse_entry;
use crate::Ledgerstore;
use crate::check::{CheckReport, Listed, Residue, scan_all};
use crate::error::StoreResult;

/// What checking listed hashes reads besides the tables, taken once a
/// chunk of ledgers rather than once a ledger.
pub(crate) struct ListedContext {
    segs: Vec<Arc<Segment>>,
    /// Ranges that cannot serve: reported once, by `check_segment_files`,
    /// not once per hash.
    broken: Vec<(u32, u32)>,
    dicts: Arc<DictSet>,
}

impl Ledgerstore {
    /// The context [`Self::check_listed_indexed`] checks against.
    pub(crate) fn listed_context(&self) -> StoreResult<ListedContext> {
        let tier = self.tier()?;
        Ok(ListedContext {
            segs: tier.segments.list(),
            broken: tier
                .segments
                .slots()
                .iter()
                .filter(|s| s.seg.is_none())
                .map(|s| s.range())
                .collect(),
            dicts: tier.dicts(),
        })
    }

    pub(crate) fn check_listed_indexed(
        &self,
        cx: &ListedContext,
        listed: &mut [Listed],
        r: &mut CheckReport,
    ) -> StoreResult<()> {
        let tier = self.tier()?;
        let (segs, broken, dicts) = (&cx.segs, &cx.broken, &cx.dicts);
        let hot_map = &tier.segments.hot_map;
        // Position order: the bodies and the hot index are read in key
        // order.
        listed.sort_unstable_by_key(|l| (l.seq, l.pos));
        for l in listed.iter() {
            let (h, seq, i) = (&l.hash, &l.seq, &l.pos);
            let at = l.at();
            let want = TxPos {
                seq: *seq,
                index: *i,
            };
            let seg = segs.iter().find(|s| s.first() <= *seq && *seq <= s.last());
            if let Some(seg) = seg {
                *r.segment_keys.get_or_insert(0) += 1;
                if seg.lookup(&h.0) != Some(want) {
                    r.problem(format!(
                        "segment {}..={}: {h} is not found at its position ({at})",
                        seg.first(),
                        seg.last()
                    ));
                }
            }
            let in_broken = broken.iter().any(|(a, b)| a <= seq && seq <= b);
            // An entry is read at its position, or (a dir a writer has not
            // yet converted from the earlier format) under its hash.
            let in_map = hot_map.candidates(&h.0).contains(&want);
            if seg.is_none() || in_map {
                let stored = match self.tx_index.get(&want.to_bytes())? {
                    Some(v) => Some(v == h.0),
                    None => (self.tx_index.get(&h.0)?).map(|v| v == want.to_bytes()),
                };
                match stored {
                    Some(false) => r.problem(format!(
                        "tx_hot_index: the entry of ledger {seq} index {i} is not {h} ({at})"
                    )),
                    Some(true) if !in_map => r.problem(format!(
                        "hot map: {h} is in tx_hot_index but not in memory ({at})"
                    )),
                    None if seg.is_none() && !in_broken => r.problem(format!(
                        "tx_hot_index: {h} is missing and no segment covers it ({at})"
                    )),
                    _ => {}
                }
            }
            match self.tx_data.get(&want.to_bytes())? {
                None => r.problem(format!(
                    "tx_bodies: no body at ledger {seq} index {i} ({h})"
                )),
                Some(b) => match TxBody::decompress(&b).and_then(|body| {
                    // An alias names its transaction's index; that body is
                    // checked as the ledger lists it.
                    Ok(match body.alias_of()? {
                        Some(index) => (body.hash, None, index),
                        None => {
                            let rec = body.record(dicts)?;
                            (body.hash, Some(rec.ledger_seq), rec.index)
                        }
                    })
                }) {
                    Err(e) => r.problem(format!("tx_bodies: ledger {seq} index {i}: {e}")),
                    Ok((bh, _, _)) if bh != *h => r.problem(format!(
                        "tx_bodies: ledger {seq} index {i} holds {bh}, the ledger lists {h}"
                    )),
                    Ok((_, ledger, index))
                        if ledger.is_some_and(|s| s != *seq) || index != l.index =>
                    {
                        r.problem(format!(
                            "tx_bodies: ledger {seq} index {i}: the body says ledger {} index \
                             {index} ({at})",
                            ledger.unwrap_or(*seq)
                        ))
                    }
                    Ok(_) => {}
                },
            }
        }
        Ok(())
    }

    /// Scans the bodies and the hot index, and checks the segment totals.
    pub(crate) fn check_indexed_tables(
        &self,
        residue: &Residue,
        r: &mut CheckReport,
    ) -> StoreResult<()> {
        let tier = self.tier()?;
        let mark = self.mark();
        let last = mark.last;
        let dict_in_use = tier.dict_version_in_use(&mark);
        let mut bodies = 0u64;
        let mut dict_keys = 0u64;
        let mut pending = 0u64;
        let mut problems = Vec::new();
        scan_all(self.tx_data.as_ref(), |k, _| match TxPos::from_bytes(k) {
            Some(p) if last.is_none_or(|l| p.seq > l) => {
                if residue.lists(p.seq, p.index) {
                    pending += 1;
                } else {
                    problems.push(format!(
                        "tx_bodies: ledger {} index {} is above the mark, and no ledger record \
                         lists it (rollback would not remove it)",
                        p.seq, p.index
                    ));
                }
            }
            Some(_) => bodies += 1,
            // A dictionary above the mark's version was trained for a batch
            // that did not commit.
            None if Dictionary::parse_key(k).is_some_and(|v| v > dict_in_use) => pending += 1,
            None if Dictionary::parse_key(k).is_some() => dict_keys += 1,
            None => problems.push(format!(
                "tx_bodies: key {} is neither a position nor a dictionary",
                hex::encode(k)
            )),
        })?;
        let mut hot = 0u64;
        scan_all(self.tx_index.as_ref(), |k, v| match parse_entry(k, v) {
            None => problems.push(format!(
                "tx_hot_index: key {} ({} bytes, value {} bytes) is not a position → hash entry",
                hex::encode(k),
                k.len(),
                v.len()
            )),
            Some((h, p, _)) if last.is_none_or(|l| p.seq > l) => {
                if residue.lists(p.seq, p.index) {
                    pending += 1;
                } else {
                    problems.push(format!(
                        "tx_hot_index: {h} at ledger {} index {} is above the mark, and no \
                         ledger record lists it",
                        p.seq, p.index
                    ));
                }
            }
            Some(_) => hot += 1,
        })?;
        for p in problems {
            r.problem(p);
        }
        r.above_mark += pending;
        r.tx_data_entries = bodies;
        r.tx_index_entries = hot;
        if bodies != r.txs + r.aliases {
            r.problem(format!(
                "tx_bodies: holds {bodies} bodies, the ledger records list {} transactions and \
                 {} aliases",
                r.txs, r.aliases
            ));
        }
        self.check_segment_files(r)?;
        // Evicted ranges list nothing locally: compare only segments wholly
        // above them, and the MARK's totals (which count them) not at all.
        let below = r.evicted_below.unwrap_or(0);
        let segs = tier.segments.list();
        let straddles = segs.iter().any(|s| s.first() < below && s.last() >= below);
        let in_segments: u64 = segs
            .iter()
            .filter(|s| s.first() >= below)
            .map(|s| s.info().keys)
            .sum();
        let broken = tier.segments.slots().iter().any(|s| s.seg.is_none());
        if !broken && !straddles && in_segments != r.segment_keys.unwrap_or(0) {
            r.problem(format!(
                "segments: hold {in_segments} keys, the ledgers of their ranges list {}",
                r.segment_keys.unwrap_or(0)
            ));
        }
        if r.evicted_below.is_some() {
            return Ok(());
        }
        if mark.txs != r.txs {
            r.problem(format!(
                "MARK: counts {} transactions, the ledger records list {}",
                mark.txs, r.txs
            ));
        }
        if let Some(t) = mark.tables.get("tx_data")
            && t.keys != bodies + dict_keys
        {
            r.problem(format!(
                "MARK: counts {} keys in tx_bodies, the table holds {bodies} bodies and {dict_keys} dictionaries",
                t.keys
            ));
        }
        if let Some(t) = mark.tables.get("ledgers")
            && t.keys != r.ledgers
        {
            r.problem(format!(
                "MARK: counts {} ledgers, the table holds {}",
                t.keys, r.ledgers
            ));
        }
        Ok(())
    }

    /// Reads every listed segment and hash list whole against its checksum,
    /// naming each file that fails, and each range that cannot serve.
    fn check_segment_files(&self, r: &mut CheckReport) -> StoreResult<()> {
        let set = &self.tier()?.segments;
        let slots = set.slots();
        for slot in slots.iter() {
            match (&slot.seg, &slot.broken) {
                (Some(seg), _) => {
                    if let Err(e) = seg.verify() {
                        r.problem(format!(
                            "segments: {e} (`ledgerstore repair`, or the daemon's scrub, rebuilds it from the \
                             hash lists or the ledger records)"
                        ));
                    }
                }
                (None, why) => r.problem(format!(
                    "segments: ledgers {}..={} have no usable segment: {} (`ledgerstore repair`, or the \
                     next writer, rebuilds it)",
                    slot.first,
                    slot.last,
                    why.as_deref().unwrap_or("unknown")
                )),
            }
        }
        let end = slots.last().map_or(0, |s| s.last);
        let lists = set.hash_lists()?;
        for &(first, last) in lists.iter().filter(|r| r.1 <= end) {
            let path = set
                .dir()
                .join(ledgerstore_segment::hashes::file_name(first, last));
            if let Err(e) = ledgerstore_segment::hashes::verify(&path, first, last) {
                r.problem(format!(
                    "segments: {e} (`ledgerstore repair` writes it again from the ledger records)"
                ));
            }
        }
        // An evicted range's bodies are gone: its list is what confirms a
        // lookup there, and nothing here can write it again.
        let below = r.evicted_below.unwrap_or(0);
        if let Some(store_first) = slots.first().map(|s| s.first)
            && below > store_first
        {
            for (first, last) in set.policy().base_ranges(store_first, below - 1) {
                if !lists.contains(&(first, last)) {
                    r.problem(format!(
                        "segments: ledgers {first}..={last} were evicted, and their hash list {} \
                         is missing: lookups there go to the published store's own segments, a \
                         request each (restore the data dir from a backup to have it again)",
                        ledgerstore_segment::hashes::file_name(first, last)
                    ));
                }
            }
        }
        Ok(())
    }
}
