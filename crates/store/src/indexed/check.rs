//! `ledgerstore check` for the `indexed` layout.
//!
//! Pass 1 (shared with the other layouts) reads the ledger records; for
//! each listed hash this module checks that the hot index or the segment
//! covering its ledger maps it to its exact position, and that the body
//! there records the same hash and decodes to the same ledger and index.
//! Then the bodies table and the hot index are scanned: no body or hot
//! entry may lie above the mark or outside what the ledgers list, and each
//! segment must hold exactly the txs its range lists.

use ledgerstore_db_api::{Decompress, Dictionary, TxBody, TxHash, TxPos};

use crate::Ledgerstore;
use crate::check::{CheckReport, Residue, scan_all};
use crate::error::StoreResult;

impl Ledgerstore {
    pub(crate) fn check_listed_indexed(
        &self,
        listed: &mut [(TxHash, u32, u32)],
        r: &mut CheckReport,
    ) -> StoreResult<()> {
        let tier = self.tier()?;
        let segs = tier.segments.list();
        // Ranges that cannot serve are reported once, by
        // `check_segment_files`, not once per hash.
        let broken: Vec<(u32, u32)> = tier
            .segments
            .slots()
            .iter()
            .filter(|s| s.seg.is_none())
            .map(|s| s.range())
            .collect();
        let dicts = tier.dicts();
        listed.sort_unstable_by_key(|(h, _, _)| *h);
        let keys: Vec<&[u8]> = listed.iter().map(|(h, _, _)| &h.0[..]).collect();
        let hot = self.tx_index.multi_get(&keys)?;
        for ((h, seq, i), hot) in listed.iter().zip(hot) {
            let at = format!("listed by ledgers[{seq}] at index {i}");
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
            match hot.as_deref().map(TxPos::decompress) {
                None if in_broken => {}
                Some(Ok(p)) if p != want => r.problem(format!(
                    "tx_hot_index: {h} points at ledger {} index {} ({at})",
                    p.seq, p.index
                )),
                Some(Err(e)) => r.problem(format!("tx_hot_index: {h}: {e}")),
                None if seg.is_none() => r.problem(format!(
                    "tx_hot_index: {h} is missing and no segment covers it ({at})"
                )),
                _ => {}
            }
            match self.tx_data.get(&want.to_bytes())? {
                None => r.problem(format!(
                    "tx_bodies: no body at ledger {seq} index {i} ({h})"
                )),
                Some(b) => match TxBody::decompress(&b)
                    .and_then(|body| Ok((body.hash, body.record(&dicts)?)))
                {
                    Err(e) => r.problem(format!("tx_bodies: ledger {seq} index {i}: {e}")),
                    Ok((bh, _)) if bh != *h => r.problem(format!(
                        "tx_bodies: ledger {seq} index {i} holds {bh}, the ledger lists {h}"
                    )),
                    Ok((_, rec)) if rec.ledger_seq != *seq || rec.index != *i => {
                        r.problem(format!(
                            "tx_bodies: ledger {seq} index {i}: record says ledger {} index {}",
                            rec.ledger_seq, rec.index
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
        scan_all(self.tx_index.as_ref(), |k, v| {
            if TxHash::from_slice(k).is_none() {
                problems.push(format!(
                    "tx_hot_index: key {} is not a 32-byte hash",
                    hex::encode(k)
                ));
            }
            match TxPos::decompress(v) {
                Ok(p) if last.is_none_or(|l| p.seq > l) => {
                    if TxHash::from_slice(k).is_some_and(|h| residue.hashes.contains(&h)) {
                        pending += 1;
                        return;
                    }
                    problems.push(format!(
                        "tx_hot_index: {} points above the mark (ledger {}), and no ledger \
                         record lists it",
                        hex::encode(k),
                        p.seq
                    ));
                }
                Ok(_) => {}
                Err(e) => problems.push(format!("tx_hot_index: {}: {e}", hex::encode(k))),
            }
            hot += 1;
        })?;
        for p in problems {
            r.problem(p);
        }
        r.above_mark += pending;
        r.tx_data_entries = bodies;
        r.tx_index_entries = hot;
        if bodies != r.txs {
            r.problem(format!(
                "tx_bodies: holds {bodies} bodies, the ledger records list {}",
                r.txs
            ));
        }
        self.check_segment_files(r)?;
        let in_segments: u64 = tier.segments.list().iter().map(|s| s.info().keys).sum();
        let broken = tier.segments.slots().iter().any(|s| s.seg.is_none());
        if !broken && in_segments != r.segment_keys.unwrap_or(0) {
            r.problem(format!(
                "segments: hold {in_segments} keys, the ledgers of their ranges list {}",
                r.segment_keys.unwrap_or(0)
            ));
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
                            "segments: {e} (the daemon's scrub rebuilds it from the hash lists)"
                        ));
                    }
                }
                (None, why) => r.problem(format!(
                    "segments: ledgers {}..={} have no usable segment: {} (the next writer rebuilds it)",
                    slot.first,
                    slot.last,
                    why.as_deref().unwrap_or("unknown")
                )),
            }
        }
        let end = slots.last().map_or(0, |s| s.last);
        for (first, last) in set.hash_lists()?.into_iter().filter(|r| r.1 <= end) {
            let path = set
                .dir()
                .join(ledgerstore_segment::hashes::file_name(first, last));
            if let Err(e) = ledgerstore_segment::hashes::verify(&path, first, last) {
                r.problem(format!(
                    "segments: {e} (a rebuild falls back to the ledger records and rewrites it)"
                ));
            }
        }
        Ok(())
    }
}
