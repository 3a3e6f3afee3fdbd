//! Merging the files of adjacent ledger ranges into one: ordinals of part
//! `i` are shifted by the events of the parts before it, ledger tables and
//! runs concatenated, each key's lists concatenated in part order. Memory
//! holds the dictionaries' keys and one key's merged list at a time (4 B
//! an ordinal, plus its encoding): for the largest list, the `contract`
//! type's, that is up to 4 B per event of the merged range (~8 B with its
//! encoding). Streaming each list's blocks out as they are merged, with
//! its skip table patched afterwards, would bound it by a block; not done.

use std::path::Path;

use crate::error::{EventIndexError, EventIndexResult};
use crate::ids::IdsBuilder;
use crate::keys::{FIXED, ListRef, u32_at};
use crate::read::EventIndex;
use crate::write::Writer;

fn bad_ref() -> EventIndexError {
    EventIndexError::corrupt("bad ref")
}

/// Merges `parts` (adjacent ranges, in ledger order) into a new file at
/// `path`; returns its size in bytes. Each part's SHA-256 should have been
/// verified; structural damage met on the way is an error.
pub fn merge(parts: &[&EventIndex], path: &Path) -> EventIndexResult<u64> {
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else {
        return Err(EventIndexError::Invalid("nothing to merge".into()));
    };
    let mut bases = Vec::with_capacity(parts.len());
    let mut total = 0u64;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 && parts[i - 1].last_ledger().checked_add(1) != Some(p.first_ledger()) {
            return Err(EventIndexError::Invalid(
                "merge parts are not adjacent".into(),
            ));
        }
        bases.push(total as u32);
        total += u64::from(p.events());
    }
    let n = u32::try_from(total)
        .ok()
        .filter(|&n| n < u32::MAX)
        .ok_or_else(|| EventIndexError::Invalid("more than 2^32 - 1 events".into()))?;
    // Ledger tables and runs, concatenated.
    let mut ids = IdsBuilder::new(first.first_ledger(), last.last_ledger());
    for (p, &base) in parts.iter().zip(&bases) {
        let (table, runs) = p.id_sections();
        let shift = ids.runs.len() as u64;
        for e in table[..table.len() - 8].chunks_exact(8) {
            let off = u64::from(u32_at(e, 4)) + shift;
            let off = u32::try_from(off)
                .map_err(|_| EventIndexError::Invalid("runs over 4 GiB".into()))?;
            let ord = u32_at(e, 0)
                .checked_add(base)
                .ok_or_else(|| EventIndexError::corrupt("ledger table out of range"))?;
            ids.table.extend_from_slice(&ord.to_le_bytes());
            ids.table.extend_from_slice(&off.to_le_bytes());
        }
        ids.runs.extend_from_slice(runs);
    }
    let end = u32::try_from(ids.runs.len())
        .map_err(|_| EventIndexError::Invalid("runs over 4 GiB".into()))?;
    ids.table.extend_from_slice(&n.to_le_bytes());
    ids.table.extend_from_slice(&end.to_le_bytes());

    let mut w = Writer::create(path)?;
    let mut vals = Vec::new();
    let mut concat = |w: &mut Writer, refs: &[(usize, u64)]| -> EventIndexResult<ListRef> {
        vals.clear();
        for &(i, r) in refs {
            let r = ListRef::from_u64(r).ok_or_else(bad_ref)?;
            parts[i].decode(r, bases[i], &mut vals)?;
        }
        w.list(&vals)
    };
    // Contract ids: every part's entries, grouped by id in part order.
    let mut entries: Vec<([u8; 32], usize, u64)> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        entries.extend(p.contract_entries().map(|(id, r)| (id, i, r)));
    }
    entries.sort_by_key(|e| (e.0, e.1));
    let mut contracts = Vec::new();
    for group in entries.chunk_by(|a, b| a.0 == b.0) {
        let refs: Vec<_> = group.iter().map(|e| (e.1, e.2)).collect();
        contracts.push((group[0].0, concat(&mut w, &refs)?));
    }
    drop(entries);
    let mut entries: Vec<(u64, usize, u64)> = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        entries.extend(p.topic_entries().map(|(k, r)| (k, i, r)));
    }
    entries.sort_unstable_by_key(|e| (e.0, e.1));
    let mut topics = Vec::new();
    for group in entries.chunk_by(|a, b| a.0 == b.0) {
        let refs: Vec<_> = group.iter().map(|e| (e.1, e.2)).collect();
        topics.push((group[0].0, concat(&mut w, &refs)?));
    }
    drop(entries);
    let mut fixed = [ListRef::Empty; FIXED];
    for (k, f) in fixed.iter_mut().enumerate() {
        let mut refs = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            refs.push((i, p.fixed(k)?.to_u64()));
        }
        *f = concat(&mut w, &refs)?;
    }
    w.finish(
        (first.first_ledger(), last.last_ledger(), n),
        &ids,
        &fixed,
        &contracts,
        &topics,
    )
    .map(|(size, _)| size)
}
