//! The `indexed` layout: transactions stored in ledger order under their
//! position, found through a hot index (the open ledger range: a
//! position-keyed table in the `tx_index` slot, answered from an in-memory
//! map, see [`hot`]) and immutable minimal-perfect-hash segments (closed
//! ranges, in `segments/`).
//!
//! A lookup probes the hot map, then the segments newest first, and
//! reads the body at the position found. The body records its hash, which
//! confirms the candidate: a segment's 16-bit fingerprint lets a foreign
//! hash through with probability 2^-16, and that case costs one body read
//! and moves on, never a wrong answer. Merges keep the segment count, and
//! so the probes, bounded (see `segments::MergePolicy`). When nothing
//! confirms and a range's segment is being repaired, the answer is
//! [`StoreError::Repairing`], never a wrong "not found".

use std::sync::{Arc, RwLock};

use ledgerstore_db_api::{
    ALIAS_BODY, BlockDict, BodyForm, DictSet, KvStore, TxBody, TxHash, TxPos, TxRecord,
};
use ledgerstore_db_api::{Decompress, Dictionary};
use serde::Serialize;

use crate::Ledgerstore;
use crate::error::{StoreError, StoreResult};

pub(crate) mod check;
mod closed;
pub(crate) mod dict;
mod evict;
pub(crate) mod hot;
mod list_check;
#[cfg(test)]
mod merge_tests;
pub(crate) mod segments;
#[cfg(test)]
mod tests;

pub use closed::{ClosedRanges, ClosedSegment, LedgerParts};
pub use evict::{EvictStep, Evicted, OldestLedger};
pub use list_check::DamagedList;
use segments::{Cold, SegmentSet, SetOpen};
pub use segments::{MergePolicy, SegmentStats};
pub(crate) use segments::{check_explicit_policy, recorded_policy};

/// Dictionary entries read per scan at open.
const DICT_SCAN: usize = 4;

/// Options of the `indexed` layout.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedOptions {
    /// Ledgers per base segment range (the hot index's window); ranges
    /// are aligned to multiples of it.
    pub range_ledgers: u32,
    /// Merge fan-out: a level-`k` window holds `range_ledgers ×
    /// merge_fanout^k` ledgers.
    pub merge_fanout: u32,
    /// Merge levels above the base range (0: no merging).
    pub merge_levels: u32,
    /// Bytes of the newest segments' index sections a writer's open reads
    /// into the page cache in the background (0: none).
    pub warm_bytes: u64,
    /// Heap bytes for the newest segments' fingerprint filters (0: none).
    pub filter_bytes: u64,
    /// Dictionary training; None disables dictionaries. In a `blocks` dir
    /// dictionaries compress only what packs publish.
    pub dict: Option<DictOptions>,
    /// How a new dir stores tx bodies (an existing dir keeps the form it
    /// recorded; `explicit_policy.bodies` must match it).
    pub bodies: BodyForm,
    /// How a new `blocks` dir stores its ledger records: `blocks` (the
    /// default, format 3: raw, compressed by the engine in the bodies'
    /// block sizes and levels) or `records` (format 2: each a zstd frame,
    /// as releases before it wrote; kept to make such dirs in tests). An
    /// existing dir keeps the form it recorded.
    pub ledgers: BodyForm,
    /// `blocks` bodies: the engine's block size before compression. Not
    /// recorded: files written under another size stay readable.
    pub block_bytes: usize,
    /// `blocks` bodies written in bulk (a backfill's batches, sorted and
    /// handed to the engine whole): the block size before compression.
    /// History is read rarely, so its blocks are larger than the live
    /// tail's (docs/benchmarks.md, "History in larger blocks"). Not
    /// recorded.
    pub bulk_block_bytes: usize,
    /// `blocks` bodies written in bulk: the zstd level (None: the dir's
    /// `compression_level`). Not recorded.
    pub bulk_level: Option<i32>,
    /// `blocks` bodies: the largest dictionary the engine makes per file
    /// (0: none). Not recorded.
    pub block_dict_bytes: usize,
    /// `blocks` bodies: how the engine makes a file's dictionary. Not
    /// recorded.
    pub block_dict_form: BlockDict,
    /// The policy fields the operator set explicitly. The three fields
    /// above apply to a new dir only; an existing dir uses the policy it
    /// recorded, and an explicit value that differs from it is an error.
    pub explicit_policy: ExplicitPolicy,
}

/// `blocks` bodies: the default block size before compression (see
/// docs/benchmarks.md, "Block-compressed bodies (issue 31 item 2)").
pub const DEFAULT_BLOCK_BYTES: usize = 64 << 10;

/// `blocks` bodies written in bulk: the default block size before
/// compression (docs/benchmarks.md, "History in larger blocks").
pub const DEFAULT_BULK_BLOCK_BYTES: usize = 1 << 20;

/// `blocks` bodies: the default largest dictionary per engine file (none:
/// RocksDB's training cost more ingest CPU than the bytes it saved were
/// worth; docs/benchmarks.md).
pub const DEFAULT_BLOCK_DICT_BYTES: usize = 0;

/// Merge-policy settings given explicitly (None: not given).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExplicitPolicy {
    /// `segments.range_ledgers`.
    pub range_ledgers: Option<u32>,
    /// `segments.merge_fanout`.
    pub merge_fanout: Option<u32>,
    /// `segments.merge_levels`.
    pub merge_levels: Option<u32>,
    /// `segments.bodies`.
    pub bodies: Option<BodyForm>,
}

impl Default for IndexedOptions {
    fn default() -> Self {
        Self {
            range_ledgers: 10_000,
            merge_fanout: 10,
            merge_levels: 3,
            warm_bytes: 1 << 30,
            filter_bytes: 256 << 20,
            dict: Some(DictOptions::default()),
            bodies: BodyForm::default(),
            ledgers: BodyForm::default(),
            block_bytes: DEFAULT_BLOCK_BYTES,
            bulk_block_bytes: DEFAULT_BULK_BLOCK_BYTES,
            bulk_level: None,
            block_dict_bytes: DEFAULT_BLOCK_DICT_BYTES,
            block_dict_form: BlockDict::default(),
            explicit_policy: ExplicitPolicy::default(),
        }
    }
}

/// When and how tx-body dictionaries are trained.
#[derive(Debug, Clone, PartialEq)]
pub struct DictOptions {
    /// Train the first dictionary once the store holds this many txs.
    pub train_after_txs: u64,
    /// Records sampled for training (the earliest ones not yet covered).
    pub samples: usize,
    /// Maximum dictionary size.
    pub max_bytes: usize,
    /// Train a new version after this many more txs (0: never retrain).
    pub retrain_every_txs: u64,
}

impl Default for DictOptions {
    fn default() -> Self {
        Self {
            train_after_txs: 20_000,
            samples: 4_000,
            max_bytes: 110 << 10,
            retrain_every_txs: 0,
        }
    }
}

/// Dictionary figures for `stats`.
#[derive(Debug, Clone, Serialize)]
pub struct DictStats {
    /// The version new records use (0: none yet).
    pub current: u32,
    /// Every version with its size in bytes, oldest first.
    pub versions: Vec<(u32, usize)>,
}

/// The parts of the store only the `indexed` layout has.
pub(crate) struct IndexedTier {
    pub(crate) segments: Arc<SegmentSet>,
    pub(crate) dicts: RwLock<Arc<DictSet>>,
    pub(crate) opts: IndexedOptions,
    /// Set after a training failure, so later batches do not retry it
    /// until the store is reopened.
    pub(crate) training_failed: std::sync::atomic::AtomicBool,
    /// Ledgers below `below` left the data dir: they are published (see
    /// [`evict`]).
    pub(crate) evicted: RwLock<Option<Evicted>>,
    /// `evicted`'s `below` (0: nothing evicted), read on every lookup.
    pub(crate) evicted_below: std::sync::atomic::AtomicU32,
    /// Whether everything below `evicted_below` is deleted, as far as
    /// this process knows: [`evict::DELETES_UNKNOWN`] (not looked at since
    /// open), `DELETES_DONE`, or `DELETES_LEFT` (a boundary recorded and
    /// its deletes not finished). What a publish round asks every time
    /// (`Ledgerstore::eviction_unfinished`) without a seek each time.
    pub(crate) evicted_deletes: std::sync::atomic::AtomicU8,
    /// Verdicts on the evicted ranges' hash lists (see [`list_check`]).
    pub(crate) list_checks: list_check::ListChecks,
}

/// How [`IndexedTier::open`] opens the tier.
pub(crate) struct TierOpen {
    pub(crate) opts: IndexedOptions,
    pub(crate) level: i32,
    /// The mark's dictionary version (None: a MARK from before the field).
    pub(crate) dict_version: Option<u32>,
    /// False for an offline reader: leave interrupted builds and drops as
    /// they are.
    pub(crate) writable: bool,
}

impl IndexedTier {
    pub(crate) fn open(
        dir: &std::path::Path,
        how: &TierOpen,
        hot: Arc<dyn KvStore>,
        ledgers: Arc<dyn KvStore>,
        bodies: &dyn KvStore,
    ) -> StoreResult<Self> {
        let evicted = Evicted::read(&dir.join("segments"))?;
        let segments = SegmentSet::open(SetOpen {
            dir: dir.join("segments"),
            policy: MergePolicy {
                range_ledgers: how.opts.range_ledgers,
                fanout: how.opts.merge_fanout,
                levels: how.opts.merge_levels,
            },
            hot,
            ledgers,
            writable: how.writable,
            warm_bytes: how.opts.warm_bytes,
            filter_bytes: how.opts.filter_bytes,
            evicted_below: evicted.as_ref().map_or(0, |e| e.below),
        })?;
        let mut dicts = DictSet::default();
        // Dictionaries sort before every body: read them a few at a time
        // and stop at the first body, so open reads no tx body.
        let mut from = Dictionary::first_key().to_vec();
        'scan: loop {
            let chunk = bodies.scan(&from, DICT_SCAN)?;
            for (k, v) in &chunk {
                let Some(version) = Dictionary::parse_key(k) else {
                    break 'scan;
                };
                // A version above the mark's was trained for a batch that
                // did not commit: no committed body uses it, and rollback
                // deletes it.
                if how.dict_version.is_none_or(|in_use| version <= in_use) {
                    let (_, bytes) = dict::split_value(v)?;
                    dicts.insert(Dictionary::from_bytes(version, bytes.to_vec(), how.level));
                }
            }
            match chunk.last() {
                Some((k, _)) if chunk.len() == DICT_SCAN => {
                    from = k.clone();
                    from.push(0);
                }
                _ => break,
            }
        }
        Ok(Self {
            segments,
            dicts: RwLock::new(Arc::new(dicts)),
            opts: how.opts.clone(),
            training_failed: std::sync::atomic::AtomicBool::new(false),
            evicted_below: std::sync::atomic::AtomicU32::new(
                evicted.as_ref().map_or(0, |e| e.below),
            ),
            evicted: RwLock::new(evicted),
            evicted_deletes: std::sync::atomic::AtomicU8::new(evict::DELETES_UNKNOWN),
            list_checks: list_check::ListChecks::default(),
        })
    }

    /// The newest dictionary version committed data may use: the mark's,
    /// or for a MARK written before it recorded one, the newest loaded.
    pub(crate) fn dict_version_in_use(&self, mark: &crate::MarkState) -> u32 {
        mark.dict_version
            .unwrap_or_else(|| self.dicts().current().map_or(0, |d| d.version()))
    }

    pub(crate) fn dicts(&self) -> Arc<DictSet> {
        match self.dicts.read() {
            Ok(d) => Arc::clone(&d),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }
}

impl Ledgerstore {
    pub(crate) fn tier(&self) -> StoreResult<&IndexedTier> {
        self.indexed
            .as_ref()
            .ok_or_else(|| StoreError::Corrupt(format!("layout {} has no segments", self.layout)))
    }

    /// The confirmed position and stored body of `hash` (visible ones
    /// only): the hot map's candidates, then the segments'.
    pub(crate) fn find_body(&self, hash: &TxHash) -> StoreResult<Option<(TxPos, TxBody)>> {
        let segments = &self.tier()?.segments;
        let hot = segments.hot_map.candidates(&hash.0);
        if !hot.is_empty()
            && let Some(found) = self.confirm(hash, Cold::only(hot))?
        {
            return Ok(Some(found));
        }
        self.confirm(hash, segments.lookup(&hash.0))
    }

    /// The hot index's position of `hash`, exact: the map's candidates
    /// confirmed against the table (position → hash). Positions above the
    /// mark are returned too; callers decide.
    fn hot_position(&self, hash: &TxHash) -> StoreResult<Option<TxPos>> {
        for pos in self.tier()?.segments.hot_map.candidates(&hash.0) {
            let found = match self.tx_index.get(&pos.to_bytes())? {
                Some(h) => h == hash.0,
                // An offline reader of a dir still in the earlier,
                // hash-keyed format.
                None => self.tx_index.get(&hash.0)?.as_deref() == Some(&pos.to_bytes()[..]),
            };
            if found {
                return Ok(Some(pos));
            }
        }
        Ok(None)
    }

    /// The first candidate that is visible and whose body records `hash`;
    /// if none does and a range that may hold it is being repaired, that
    /// error.
    fn confirm(&self, hash: &TxHash, cold: Cold) -> StoreResult<Option<(TxPos, TxBody)>> {
        for pos in cold.candidates {
            if !self.is_visible(pos.seq) {
                continue;
            }
            if let Some(bytes) = self.tx_data.get(&pos.to_bytes())? {
                let body = TxBody::decompress(&bytes)?;
                if body.hash == *hash {
                    match body.alias_of()? {
                        None => return Ok(Some((pos, body))),
                        Some(index) => match self.aliased_body(pos, index)? {
                            Some(found) => return Ok(Some(found)),
                            // Being evicted: the caller reads it from the
                            // published store.
                            None => continue,
                        },
                    }
                }
            }
        }
        match cold.repairing {
            Some((first, last, reason)) => Err(StoreError::Repairing {
                first,
                last,
                reason,
            }),
            None => Ok(None),
        }
    }

    /// The body an alias body at `at` names: the `index`-th transaction of
    /// the same ledger. None when the ledger is being evicted (its bodies
    /// are deleted in parts, so the alias may outlive its transaction for
    /// a moment).
    fn aliased_body(&self, at: TxPos, index: u32) -> StoreResult<Option<(TxPos, TxBody)>> {
        let pos = TxPos { seq: at.seq, index };
        let body = match self.tx_data.get(&pos.to_bytes())? {
            Some(bytes) => TxBody::decompress(&bytes)?,
            // The boundary moves before anything is deleted: read it now.
            None if at.seq < self.evicted_below() => return Ok(None),
            None => {
                return Err(StoreError::Corrupt(format!(
                    "tx_bodies: the alias at ledger {} index {} names index {index}, which \
                     holds no body",
                    at.seq, at.index
                )));
            }
        };
        if body.alias_of()?.is_some() {
            return Err(StoreError::Corrupt(format!(
                "tx_bodies: the alias at ledger {} index {} names another alias",
                at.seq, at.index
            )));
        }
        Ok(Some((pos, body)))
    }

    /// Refuses hashes already committed (layout `indexed`): the hot map
    /// and the segments in memory, and a read only to confirm a candidate.
    /// `hashes` are `(hash, ledger i, tx i)`.
    pub(crate) fn check_hashes_not_indexed(
        &self,
        hashes: &[(&[u8], usize, usize, &'static str)],
    ) -> StoreResult<()> {
        let tier = self.tier()?;
        let exists = |hash: &[u8], field: String, seq: u32| StoreError::HashExists {
            field,
            hash: hex::encode(hash),
            ledger: seq,
        };
        for &(hash, li, ti, key) in hashes {
            let field = || format!("ledgers[{li}].transactions[{ti}].{key}");
            let h = TxHash::from_slice(hash).ok_or_else(|| StoreError::InvalidBatch {
                field: field(),
                reason: "must be 32 bytes".into(),
            })?;
            if let Some(pos) = self.hot_position(&h)? {
                // The hot index is exact; an entry above the mark is
                // residue that the rollback before this batch removed or
                // will remove.
                if self.is_visible(pos.seq) {
                    return Err(exists(hash, field(), pos.seq));
                }
                continue;
            }
            let cold = tier.segments.lookup(&h.0);
            let candidates = cold.candidates.clone();
            if let Some((pos, _)) = self.confirm(&h, cold)? {
                return Err(exists(hash, field(), pos.seq));
            }
            // After the bodies are read: a body deleted meanwhile was
            // evicted, and the boundary read now says so.
            if let Some(pos) = self.evicted_match(&h, &candidates)? {
                return Err(exists(hash, field(), pos.seq));
            }
        }
        Ok(())
    }

    /// The ledger of `hash`: a hot entry (confirmed against the table)
    /// answers alone; a segment candidate is confirmed against its body.
    pub(crate) fn get_tx_ledger_indexed(&self, hash: &TxHash) -> StoreResult<Option<u32>> {
        if let Some(pos) = self.hot_position(hash)? {
            return Ok(self.is_visible(pos.seq).then_some(pos.seq));
        }
        let cold = self.tier()?.segments.lookup(&hash.0);
        let candidates = cold.candidates.clone();
        if let Some((pos, _)) = self.confirm(hash, cold)? {
            return Ok(Some(pos.seq));
        }
        // After the bodies are read, with the boundary as it is now: a body
        // deleted meanwhile was evicted.
        Ok(self.evicted_match(hash, &candidates)?.map(|p| p.seq))
    }

    pub(crate) fn get_tx_indexed(&self, hash: &TxHash) -> StoreResult<Option<TxRecord>> {
        match self.find_body(hash)? {
            Some((_, body)) => Ok(Some(body.record(&self.tier()?.dicts())?)),
            None => Ok(None),
        }
    }

    /// Many lookups: the hot map and the segments in memory, then the
    /// bodies in one multi-get in position order (which is ledger order, so
    /// neighbours share blocks).
    pub(crate) fn batch_get_indexed(
        &self,
        hashes: &[TxHash],
    ) -> StoreResult<Vec<Option<TxRecord>>> {
        let tier = self.tier()?;
        let mut first: Vec<(TxPos, usize)> = Vec::with_capacity(hashes.len());
        let mut slow = Vec::new();
        for (i, hash) in hashes.iter().enumerate() {
            let pos = match tier.segments.hot_map.candidates(&hash.0).first() {
                Some(p) => Some(*p),
                None => {
                    let cold = tier.segments.lookup(&hash.0);
                    if cold.repairing.is_some() {
                        // The slow path answers "being repaired" if it must.
                        slow.push(i);
                        continue;
                    }
                    cold.candidates.first().copied()
                }
            };
            if let Some(pos) = pos.filter(|p| self.is_visible(p.seq)) {
                first.push((pos, i));
            }
        }
        first.sort_unstable();
        let body_keys: Vec<[u8; 8]> = first.iter().map(|(p, _)| p.to_bytes()).collect();
        let refs: Vec<&[u8]> = body_keys.iter().map(|k| &k[..]).collect();
        let bodies = self.tx_data.multi_get(&refs)?;
        let dicts = tier.dicts();
        let mut out = vec![None; hashes.len()];
        for ((_, i), stored) in first.iter().zip(bodies) {
            let body = stored.map(|b| TxBody::decompress(&b)).transpose()?;
            out[*i] = match body {
                Some(b) if b.hash == hashes[*i] && b.dict_version != ALIAS_BODY => {
                    Some(b.record(&dicts)?)
                }
                // A fingerprint false positive (or an older segment), or an
                // alias: the slow path tries every candidate and follows an
                // alias to its transaction.
                _ => self.get_tx_indexed(&hashes[*i])?,
            };
        }
        for i in slow {
            out[i] = self.get_tx_indexed(&hashes[i])?;
        }
        Ok(out)
    }

    /// Cold-tier and dictionary figures for `stats`.
    pub(crate) fn indexed_stats(&self) -> Option<(SegmentStats, DictStats)> {
        let tier = self.indexed.as_ref()?;
        let dicts = tier.dicts();
        let mut seg = tier.segments.stats(self.mark().first);
        seg.evicted_below = self.evicted().map(|e| e.below);
        Some((
            seg,
            DictStats {
                current: dicts.current().map_or(0, |d| d.version()),
                versions: dicts.versions(),
            },
        ))
    }

    /// Blocks until every closed ledger range has its segment. Benches call
    /// it so that build work is charged to the layout; tests call it to
    /// observe the swap.
    pub fn wait_for_segments(&self) -> StoreResult<()> {
        match &self.indexed {
            Some(t) => t.segments.wait_idle(),
            None => Ok(()),
        }
    }
}
