//! The open ranges' index: `tx_hot_index` on disk, a hash map in memory.
//!
//! On disk the hot index is keyed by position (see
//! [`ledgerstore_db_api::TxHotIndex`]): every batch appends at the end of
//! the B-tree, so a commit writes about the bytes it adds. (Keyed by hash,
//! as in earlier releases, every batch dirtied pages all over the tree: the
//! 50M-tx scale run measured 40 bytes written per logical byte.)
//!
//! In memory, [`HotMap`] maps the first 8 bytes of each hash to its
//! position, one map per base range, rebuilt from the table at open. The
//! map answers *candidates*: a caller confirms one against the body (which
//! records its hash) or against the table (position → hash). Two hashes
//! that share 8 bytes are both kept (the second in a small exact map), so
//! nothing is lost however the hashes were chosen. The map's hasher is
//! keyed at random per process, so chosen hashes cannot pile into one
//! bucket.
//!
//! Memory: about 26 bytes per hot transaction (16 per entry at the map's
//! load factor), i.e. ~80 MB for a 10,000-ledger range of 300-tx ledgers.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::sync::RwLock;

use ledgerstore_db_api::{KvStore, TxHash, TxPos};

use crate::error::{StoreError, StoreResult};

/// Entries inserted per hold of the write lock (~1–2 ms).
const INSERT_CHUNK: usize = 16_384;

/// Entries read per scan when the map is rebuilt or a range is dropped.
pub(crate) const SCAN_CHUNK: usize = 16_384;

/// The in-memory index of the hot ranges.
#[derive(Debug)]
pub(crate) struct HotMap {
    /// Ledgers per bucket (the base range); buckets are `seq / range`.
    range: u32,
    buckets: RwLock<BTreeMap<u32, Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    /// Hash bytes 0..8 → packed position.
    by_prefix: HashMap<u64, u64, RandomState>,
    /// Entries whose prefix another hash in the bucket already holds.
    collided: HashMap<[u8; 32], u64, RandomState>,
    /// Highest ledger in the bucket (for `remove_above`).
    max_seq: u32,
}

impl Bucket {
    fn new(state: &RandomState) -> Self {
        Self {
            by_prefix: HashMap::with_hasher(state.clone()),
            collided: HashMap::with_hasher(state.clone()),
            max_seq: 0,
        }
    }

    fn retain(&mut self, keep: impl Fn(TxPos) -> bool) {
        self.by_prefix.retain(|_, p| keep(unpack(*p)));
        self.collided.retain(|_, p| keep(unpack(*p)));
        self.max_seq = (self.by_prefix.values().chain(self.collided.values()))
            .map(|p| unpack(*p).seq)
            .max()
            .unwrap_or(0);
    }

    fn len(&self) -> usize {
        self.by_prefix.len() + self.collided.len()
    }

    fn bytes(&self) -> usize {
        // Key, value and one control byte per slot.
        self.by_prefix.capacity() * 17 + self.collided.capacity() * 41
    }
}

/// What the hot map holds, for `stats`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct HotFigures {
    pub(crate) keys: u64,
    pub(crate) bytes: u64,
}

fn prefix(hash: &[u8; 32]) -> u64 {
    let mut p = [0u8; 8];
    p.copy_from_slice(&hash[..8]);
    u64::from_le_bytes(p)
}

fn pack(p: TxPos) -> u64 {
    (u64::from(p.seq) << 32) | u64::from(p.index)
}

fn unpack(v: u64) -> TxPos {
    TxPos {
        seq: (v >> 32) as u32,
        index: v as u32,
    }
}

/// One `tx_hot_index` entry, in either key format: position → hash, or
/// (releases before it) hash → position. None for anything else.
pub(crate) fn parse_entry(k: &[u8], v: &[u8]) -> Option<(TxHash, TxPos, bool)> {
    match (k.len(), v.len()) {
        (8, 32) => Some((TxHash::from_slice(v)?, TxPos::from_bytes(k)?, false)),
        (32, 8) => Some((TxHash::from_slice(k)?, TxPos::from_bytes(v)?, true)),
        _ => None,
    }
}

impl HotMap {
    /// An empty map bucketed by `range` ledgers.
    pub(crate) fn new(range: u32) -> Self {
        Self {
            range: range.max(1),
            buckets: RwLock::new(BTreeMap::new()),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<u32, Bucket>> {
        self.buckets.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<u32, Bucket>> {
        self.buckets.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds entries (a batch that is durable in the table). The write lock
    /// is taken per chunk of `INSERT_CHUNK` entries, so a bulk batch (500K
    /// entries) does not hold readers, which may run on the daemon's async
    /// workers, for its whole insert.
    pub(crate) fn insert<'a>(&self, entries: impl IntoIterator<Item = (&'a [u8; 32], TxPos)>) {
        let state = RandomState::new();
        let mut entries = entries.into_iter().peekable();
        while entries.peek().is_some() {
            self.insert_chunk(&state, entries.by_ref().take(INSERT_CHUNK));
        }
    }

    fn insert_chunk<'a>(
        &self,
        state: &RandomState,
        entries: impl Iterator<Item = (&'a [u8; 32], TxPos)>,
    ) {
        let mut buckets = self.write();
        for (hash, pos) in entries {
            let b = buckets
                .entry(pos.seq / self.range)
                .or_insert_with(|| Bucket::new(state));
            b.max_seq = b.max_seq.max(pos.seq);
            let packed = pack(pos);
            match b.by_prefix.entry(prefix(hash)) {
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(packed);
                }
                std::collections::hash_map::Entry::Occupied(e) if *e.get() != packed => {
                    b.collided.insert(*hash, packed);
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
            }
        }
    }

    /// Positions that may hold `hash`, to be confirmed (usually none or
    /// one).
    pub(crate) fn candidates(&self, hash: &[u8; 32]) -> Vec<TxPos> {
        let key = prefix(hash);
        let mut out = Vec::new();
        for b in self.read().values().rev() {
            if let Some(&p) = b.by_prefix.get(&key) {
                out.push(unpack(p));
            }
            if !b.collided.is_empty()
                && let Some(&p) = b.collided.get(hash)
            {
                out.push(unpack(p));
            }
        }
        out
    }

    /// Forgets the entries of `first..=last` (a range a segment now serves).
    pub(crate) fn remove_range(&self, first: u32, last: u32) {
        let mut buckets = self.write();
        let ids: Vec<u32> = buckets
            .range(first / self.range..=last / self.range)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            let start = u64::from(id) * u64::from(self.range);
            let end = start + u64::from(self.range) - 1;
            if u64::from(first) <= start && end <= u64::from(last) {
                buckets.remove(&id);
            } else if let Some(b) = buckets.get_mut(&id) {
                b.retain(|p| p.seq < first || p.seq > last);
                if b.len() == 0 {
                    buckets.remove(&id);
                }
            }
        }
    }

    /// Forgets the entries above `mark` (a batch rolled back).
    pub(crate) fn remove_above(&self, mark: Option<u32>) {
        let mut buckets = self.write();
        let Some(m) = mark else {
            buckets.clear();
            return;
        };
        for b in buckets.values_mut().filter(|b| b.max_seq > m) {
            b.retain(|p| p.seq <= m);
        }
        buckets.retain(|_, b| b.len() > 0);
    }

    /// Entries and approximate heap bytes.
    pub(crate) fn figures(&self) -> HotFigures {
        let buckets = self.read();
        HotFigures {
            keys: buckets.values().map(|b| b.len() as u64).sum(),
            bytes: buckets.values().map(|b| b.bytes() as u64).sum(),
        }
    }

    /// Rebuilds the map from `table`. An entry that is neither format is
    /// skipped with an error in the log (`check` names it). Returns how
    /// many entries are in the earlier, hash-keyed format.
    pub(crate) fn load(&self, table: &dyn KvStore) -> StoreResult<u64> {
        let mut legacy = 0u64;
        let mut bad = 0u64;
        for_each_chunk(table, Vec::new(), |chunk| {
            let mut parsed = Vec::with_capacity(chunk.len());
            for (k, v) in chunk {
                match parse_entry(k, v) {
                    Some((h, p, old)) => {
                        legacy += u64::from(old);
                        parsed.push((h.0, p));
                    }
                    None => bad += 1,
                }
            }
            self.insert(parsed.iter().map(|(h, p)| (h, *p)));
            Ok(true)
        })?;
        if bad > 0 {
            tracing::error!(
                entries = bad,
                "tx_hot_index holds entries that are neither position → hash nor hash → position; they are skipped (run `ledgerstore check`)"
            );
        }
        Ok(legacy)
    }
}

/// Calls `f` with the entries of `table` from `from` on, a chunk of
/// [`SCAN_CHUNK`] at a time, in key order, until the table ends or `f`
/// returns false.
fn for_each_chunk(
    table: &dyn KvStore,
    mut from: Vec<u8>,
    mut f: impl FnMut(&[(Vec<u8>, Vec<u8>)]) -> StoreResult<bool>,
) -> StoreResult<()> {
    loop {
        let chunk = table.scan(&from, SCAN_CHUNK)?;
        let Some((last, _)) = chunk.last() else {
            return Ok(());
        };
        from = last.clone();
        from.push(0);
        if !f(&chunk)? || chunk.len() < SCAN_CHUNK {
            return Ok(());
        }
    }
}

/// Rewrites hash-keyed entries (releases before the position-keyed hot
/// index) as position → hash, a chunk per write transaction. Idempotent:
/// a crash midway leaves both formats, and the next open converts the
/// rest.
pub(crate) fn convert_legacy(table: &dyn KvStore) -> StoreResult<u64> {
    let mut converted = 0u64;
    for_each_chunk(table, Vec::new(), |chunk| {
        let old: Vec<(TxHash, TxPos)> = chunk
            .iter()
            .filter_map(|(k, v)| parse_entry(k, v).filter(|e| e.2).map(|e| (e.0, e.1)))
            .collect();
        if !old.is_empty() {
            let mut w = table.begin_write()?;
            for (h, p) in &old {
                w.put(&p.to_bytes(), &h.0)?;
                w.delete(&h.0)?;
            }
            w.finish()?;
            w.commit()?;
            converted += old.len() as u64;
        }
        Ok(true)
    })?;
    if converted > 0 {
        tracing::warn!(
            entries = converted,
            "converted the hot index from hash → position to position → hash (once per data dir)"
        );
    }
    Ok(converted)
}

/// Calls `f` for every entry of `table` positioned in `first..=last`, in
/// position order.
pub(crate) fn scan_range(
    table: &dyn KvStore,
    first: u32,
    last: u32,
    mut f: impl FnMut(TxHash, TxPos) -> StoreResult<()>,
) -> StoreResult<()> {
    let from = TxPos {
        seq: first,
        index: 0,
    }
    .to_bytes()
    .to_vec();
    for_each_chunk(table, from, |chunk| {
        for (k, v) in chunk {
            let Some(pos) = TxPos::from_bytes(k) else {
                // A hash-keyed entry sorts among the positions; open
                // converts those, and `check` names any other.
                continue;
            };
            if pos.seq > last {
                return Ok(false);
            }
            let hash = TxHash::from_slice(v).ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "tx_hot_index: ledger {} index {} holds {} bytes, not a 32-byte hash",
                    pos.seq,
                    pos.index,
                    v.len()
                ))
            })?;
            f(hash, pos)?;
        }
        Ok(true)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(first8: u64, rest: u8) -> [u8; 32] {
        let mut x = [rest; 32];
        x[..8].copy_from_slice(&first8.to_le_bytes());
        x
    }

    fn pos(seq: u32, index: u32) -> TxPos {
        TxPos { seq, index }
    }

    #[test]
    fn shared_prefixes_keep_both_entries() {
        let m = HotMap::new(10);
        let (a, b) = (h(7, 1), h(7, 2));
        m.insert([(&a, pos(3, 0)), (&b, pos(4, 1))]);
        assert_eq!(m.candidates(&a), vec![pos(3, 0)]);
        assert_eq!(m.candidates(&b), vec![pos(3, 0), pos(4, 1)]);
        assert_eq!(m.candidates(&h(8, 1)), vec![]);
        assert_eq!(m.figures().keys, 2);
    }

    #[test]
    fn ranges_and_rollbacks_forget_their_entries() {
        let m = HotMap::new(10);
        let hs: Vec<[u8; 32]> = (0..40u64).map(|i| h(i, 0)).collect();
        m.insert(hs.iter().enumerate().map(|(i, x)| (x, pos(i as u32, 0))));
        // A whole bucket, then part of one.
        m.remove_range(10, 19);
        m.remove_range(3, 5);
        m.remove_above(Some(34));
        let left: Vec<u32> = (0..40)
            .filter(|&i| !m.candidates(&hs[i as usize]).is_empty())
            .collect();
        let want: Vec<u32> = (0..3).chain(6..10).chain(20..35).collect();
        assert_eq!(left, want);
        m.remove_above(None);
        assert_eq!(m.figures(), HotFigures::default());
    }

    #[test]
    fn entries_parse_in_both_formats_and_nothing_else() {
        let (hash, p) = (h(1, 9), pos(5, 6));
        assert_eq!(
            parse_entry(&p.to_bytes(), &hash),
            Some((TxHash(hash), p, false))
        );
        assert_eq!(
            parse_entry(&hash, &p.to_bytes()),
            Some((TxHash(hash), p, true))
        );
        assert_eq!(parse_entry(&hash, &hash), None);
        assert_eq!(parse_entry(&[0; 4], &p.to_bytes()), None);
    }
}
