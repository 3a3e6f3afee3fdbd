//! What a publisher reads from an `indexed` store: the closed ranges (the
//! ranges `segments/SEGMENTS` lists), their segment files, the
//! dictionaries, and the stored bytes of ledgers and bodies in the
//! per-record form packs hold: as they are on disk where the application
//! compressed them, compressed here where the engine compresses them in
//! blocks (a `blocks` dir's bodies, a format-3 dir's ledger records).

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use ledgerstore_db_api::codec::zstd_compress;
use ledgerstore_db_api::{
    Decompress, DictSet, RAW_BODY, StoredLedger, TxBody, TxPos, ledger_record_bytes,
};

use super::MergePolicy;
use crate::Ledgerstore;
use crate::error::{StoreError, StoreResult};

/// The closed part of an `indexed` store, as it is now.
#[derive(Debug, Clone)]
pub struct ClosedRanges {
    /// The merge policy recorded in the dir.
    pub policy: MergePolicy,
    /// The base ranges the listed segments cover, oldest first (the first
    /// one starts at the store's first ledger).
    pub base: Vec<(u32, u32)>,
    /// The listed segments, oldest first.
    pub segments: Vec<ClosedSegment>,
    /// Every dictionary version committed data may use: (version, bytes).
    pub dicts: Vec<(u32, Vec<u8>)>,
    /// The same dictionaries, ready to compress: what
    /// [`Ledgerstore::stored_bodies`] compresses a `blocks` dir's raw
    /// bodies with for a pack (the newest of them), so a pack only uses
    /// dictionaries its manifest lists.
    pub pack_dicts: Arc<DictSet>,
}

/// A ledger's record and bodies as stored values (record, bodies in
/// position order).
pub type LedgerParts = (Vec<u8>, Vec<Vec<u8>>);

/// One listed range.
#[derive(Debug, Clone)]
pub struct ClosedSegment {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// Its segment file, or why it cannot serve now (being repaired).
    pub file: Result<PathBuf, String>,
}

impl ClosedRanges {
    /// The last closed ledger (None: no range is closed yet).
    pub fn last(&self) -> Option<u32> {
        self.segments.last().map(|s| s.last)
    }
}

impl Ledgerstore {
    /// The closed ranges of an `indexed` store (an error names the layout
    /// otherwise: only `indexed` has immutable ranges to publish).
    pub fn closed_ranges(&self) -> StoreResult<ClosedRanges> {
        let tier = self.indexed.as_ref().ok_or_else(|| StoreError::DataDir {
            dir: self.path().to_path_buf(),
            reason: format!(
                "layout {} has no closed ranges to publish; only layout indexed does",
                self.layout
            ),
        })?;
        let policy = tier.segments.policy();
        let slots = tier.segments.slots();
        let segments: Vec<ClosedSegment> = slots
            .iter()
            .map(|s| ClosedSegment {
                first: s.first,
                last: s.last,
                file: match &s.seg {
                    Some(seg) => Ok(seg.path().to_path_buf()),
                    None => Err(s.broken.clone().unwrap_or_default()),
                },
            })
            .collect();
        let base = match (self.first_ledger(), segments.last()) {
            (Some(first), Some(last)) => policy.base_ranges(first, last.last),
            _ => Vec::new(),
        };
        let in_use = tier.dict_version_in_use(&self.mark());
        let pack_dicts = Arc::new(tier.dicts().up_to(in_use));
        let dicts = pack_dicts
            .all()
            .map(|d| (d.version(), d.bytes().to_vec()))
            .collect();
        Ok(ClosedRanges {
            policy,
            base,
            segments,
            dicts,
            pack_dicts,
        })
    }

    /// A committed ledger's record in the form packs hold (zstd of its
    /// `StoredLedger`: the stored value itself, or in a format-3 dir, whose
    /// records are raw, the record compressed at the dir's level), and the
    /// number of bodies it has (transactions plus aliases).
    pub fn stored_ledger(&self, seq: u32) -> StoreResult<Option<(Vec<u8>, u32)>> {
        let Some(bytes) = self.stored_ledger_value(seq)? else {
            return Ok(None);
        };
        // Decompressed (a frame) or borrowed (raw) once.
        let plain = ledger_record_bytes(&bytes)?;
        let rec = StoredLedger::decode(&plain)?;
        let n = u32::try_from(rec.lookup_count())
            .map_err(|_| StoreError::Corrupt(format!("ledger {seq}: too many transactions")))?;
        let packed = match plain {
            // Raw: readers of every release expect a zstd frame in a pack.
            Cow::Borrowed(raw) => zstd_compress(raw, self.level)?,
            Cow::Owned(_) => bytes,
        };
        Ok(Some((packed, n)))
    }

    /// A committed ledger's `ledgers` value exactly as stored (a zstd
    /// frame, or a format-3 dir's raw record): what a publisher's
    /// `mark_record_sha256` is taken of. Not the pack's bytes, which a
    /// format-3 dir compresses at publish time, at a level the config may
    /// change.
    pub fn stored_ledger_value(&self, seq: u32) -> StoreResult<Option<Vec<u8>>> {
        if !self.is_visible(seq) {
            return Ok(None);
        }
        Ok(self.ledgers.get(&seq.to_be_bytes())?)
    }

    /// A committed ledger's record and bodies in the form a pack of
    /// ledger frames holds them (pack version 3): the record as stored (a
    /// format-3 dir's raw record, or a zstd frame, so the manifest's
    /// `mark_record_sha256` names it either way), and every body raw (one
    /// compressed alone is decompressed with its dictionary of `dicts`;
    /// aliases as stored). The frame compresses them together.
    pub fn frame_ledger_parts(
        &self,
        seq: u32,
        dicts: &DictSet,
    ) -> StoreResult<Option<LedgerParts>> {
        let Some(record) = self.stored_ledger_value(seq)? else {
            return Ok(None);
        };
        let n = StoredLedger::decode(&ledger_record_bytes(&record)?)?.lookup_count();
        let n = u32::try_from(n)
            .map_err(|_| StoreError::Corrupt(format!("ledger {seq}: too many transactions")))?;
        let bodies = self.stored_bodies_as(seq, n, |v| {
            if v.get(32..36) == Some(&RAW_BODY.to_be_bytes()[..]) {
                return Ok(v);
            }
            Ok(TxBody::decompress(&v)?.to_raw_form(dicts)?.to_bytes())
        })?;
        Ok(Some((record, bodies)))
    }

    /// The stored bodies of a committed ledger of `count` bodies
    /// (`tx_bodies` values, positions `0..count`), in position order, in
    /// the per-record form packs hold: a `blocks` dir's raw bodies are
    /// compressed with the newest of `pack_dicts` (from
    /// [`ClosedRanges::pack_dicts`]), so readers of every release read
    /// them; other bodies are returned as stored.
    pub fn stored_bodies(
        &self,
        seq: u32,
        count: u32,
        pack_dicts: &DictSet,
    ) -> StoreResult<Vec<Vec<u8>>> {
        self.stored_bodies_as(seq, count, |v| {
            // Only a raw body is parsed and recompressed; every other one
            // goes out as its stored bytes, uncopied.
            if v.get(32..36) != Some(&RAW_BODY.to_be_bytes()[..]) {
                return Ok(v);
            }
            Ok(TxBody::decompress(&v)?
                .to_record_form(pack_dicts, self.level)?
                .to_bytes())
        })
    }

    /// The stored values of a committed ledger's `count` bodies, checked
    /// to be positions `0..count`, each passed through `form`.
    fn stored_bodies_as(
        &self,
        seq: u32,
        count: u32,
        form: impl Fn(Vec<u8>) -> StoreResult<Vec<u8>>,
    ) -> StoreResult<Vec<Vec<u8>>> {
        self.tier()?;
        let from = TxPos { seq, index: 0 }.to_bytes();
        let rows = if count == 0 {
            Vec::new()
        } else {
            self.tx_data.scan(&from, count as usize)?
        };
        let mut out = Vec::with_capacity(rows.len());
        for (i, (k, v)) in rows.into_iter().enumerate() {
            let want = TxPos {
                seq,
                index: i as u32,
            };
            if TxPos::from_bytes(&k) != Some(want) {
                return Err(StoreError::Corrupt(format!(
                    "tx_bodies: ledger {seq} lists {count} bodies, but position {} holds none",
                    i
                )));
            }
            out.push(form(v)?);
        }
        if out.len() != count as usize {
            return Err(StoreError::Corrupt(format!(
                "tx_bodies: ledger {seq} lists {count} bodies, but {} are stored",
                out.len()
            )));
        }
        Ok(out)
    }
}
