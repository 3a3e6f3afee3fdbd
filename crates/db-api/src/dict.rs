//! Trained zstd dictionaries, versioned.
//!
//! Small records compress poorly alone: a 5 KB transaction shares most of
//! its structure (XDR discriminants, account and asset encodings) with its
//! neighbours, but a lone zstd frame cannot see them. A dictionary trained
//! on a sample of early records supplies that shared context.
//!
//! Each dictionary has a version (1, 2, …). A record names the version it
//! was compressed with ([`crate::body`]); version 0 means no dictionary.
//! Dictionaries are stored with the data they compress and never deleted,
//! so retraining only changes what new records use.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use zstd::zstd_safe::{self, CCtx, CDict, DDict};

use crate::codec::{decompress_frame, zstd_compress, zstd_decompress};
use crate::error::{DbError, DbResult};

/// The dictionary version of an alias body. Trained versions count up
/// from 1 and never reach it.
pub const ALIAS_BODY: u32 = u32::MAX;

/// The dictionary version of a raw body: the frame is the encoded
/// `TxRecord`, not compressed (the engine compresses the table's
/// blocks). Trained versions stop below it ([`DictSet::next_version`]).
pub const RAW_BODY: u32 = u32::MAX - 1;

/// The first bytes of a dictionary's key: ledger seq 0, then `D`. In the
/// table that holds dictionaries, record keys are 8-byte positions of
/// ledgers >= 1 (or of ledger 0 with apply indexes far below 0x4400_0000),
/// so dictionary keys sort before every record. Placing them at the low end
/// matters: a key above every position would widen the key range of the
/// SST that holds it to the end of the key space, and every later flush
/// would overlap it and be merged instead of trivially moved down the LSM.
const KEY_TAG: &[u8; 5] = b"\x00\x00\x00\x00D";

thread_local! {
    static CCTX: RefCell<CCtx<'static>> = RefCell::new(CCtx::create());
}

/// One trained dictionary, prepared for compression at one level.
pub struct Dictionary {
    version: u32,
    bytes: Vec<u8>,
    cdict: CDict<'static>,
    ddict: DDict<'static>,
}

impl std::fmt::Debug for Dictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dictionary")
            .field("version", &self.version)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

fn zstd_err(code: usize) -> DbError {
    DbError::Compression(std::io::Error::other(zstd_safe::get_error_name(code)))
}

impl Dictionary {
    /// Trains a dictionary of at most `max_bytes` from `samples`.
    pub fn train(
        version: u32,
        samples: &[Vec<u8>],
        max_bytes: usize,
        level: i32,
    ) -> DbResult<Self> {
        if version == 0 {
            return Err(DbError::Corrupt {
                what: "dictionary",
                detail: "version 0 means \"no dictionary\"".into(),
            });
        }
        if version >= RAW_BODY {
            return Err(DbError::Corrupt {
                what: "dictionary",
                detail: format!(
                    "version {version} is reserved for raw and alias bodies; versions stop at {}",
                    RAW_BODY - 1
                ),
            });
        }
        let bytes = zstd::dict::from_samples(samples, max_bytes).map_err(DbError::Compression)?;
        Ok(Self::from_bytes(version, bytes, level))
    }

    /// A dictionary from its stored bytes.
    pub fn from_bytes(version: u32, bytes: Vec<u8>, level: i32) -> Self {
        let cdict = CDict::create(&bytes, level);
        let ddict = DDict::create(&bytes);
        Self {
            version,
            bytes,
            cdict,
            ddict,
        }
    }

    /// The version.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The dictionary's bytes, as stored.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The key a dictionary is stored under: `00 00 00 00 'D'` then the
    /// version as u32 BE (9 bytes, so it never equals an 8-byte position
    /// key; see `KEY_TAG` for why it sorts low).
    pub fn key(version: u32) -> [u8; 9] {
        let mut k = [0u8; 9];
        k[..5].copy_from_slice(KEY_TAG);
        k[5..].copy_from_slice(&version.to_be_bytes());
        k
    }

    /// The smallest dictionary key, to scan them all.
    pub fn first_key() -> [u8; 9] {
        Self::key(0)
    }

    /// The version of a dictionary key (None for any other key).
    pub fn parse_key(key: &[u8]) -> Option<u32> {
        let rest = key.strip_prefix(&KEY_TAG[..])?;
        <[u8; 4]>::try_from(rest).ok().map(u32::from_be_bytes)
    }

    /// Compresses `raw` as one frame with this dictionary.
    pub fn compress(&self, raw: &[u8]) -> DbResult<Vec<u8>> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        CCTX.with(|c| {
            c.borrow_mut()
                .compress_using_cdict(&mut out, raw, &self.cdict)
                .map_err(zstd_err)
        })?;
        Ok(out)
    }

    /// Decompresses a frame made by [`Dictionary::compress`].
    pub fn decompress(&self, frame: &[u8]) -> DbResult<Vec<u8>> {
        decompress_frame(frame, Some(&self.ddict))
    }
}

/// Every dictionary of one record kind; the newest compresses new records.
#[derive(Debug, Clone, Default)]
pub struct DictSet {
    dicts: BTreeMap<u32, Arc<Dictionary>>,
}

impl DictSet {
    /// Adds a dictionary (the newest version becomes current).
    pub fn insert(&mut self, d: Dictionary) {
        self.dicts.insert(d.version, Arc::new(d));
    }

    /// The dictionary new records use.
    pub fn current(&self) -> Option<&Arc<Dictionary>> {
        self.dicts.values().next_back()
    }

    /// The version the next trained dictionary gets.
    /// Saturates at [`RAW_BODY`], which
    /// [`Dictionary::train`] refuses, so no version means something else.
    pub fn next_version(&self) -> u32 {
        self.dicts
            .keys()
            .next_back()
            .map_or(1, |v| v.saturating_add(1))
            .min(RAW_BODY)
    }

    /// The dictionaries up to `version` (the newest of them current).
    pub fn up_to(&self, version: u32) -> DictSet {
        DictSet {
            dicts: self
                .dicts
                .range(..=version)
                .map(|(v, d)| (*v, Arc::clone(d)))
                .collect(),
        }
    }

    /// Every dictionary, oldest first.
    pub fn all(&self) -> impl Iterator<Item = &Arc<Dictionary>> {
        self.dicts.values()
    }

    /// Every version with its size in bytes, oldest first.
    pub fn versions(&self) -> Vec<(u32, usize)> {
        self.dicts
            .values()
            .map(|d| (d.version, d.bytes.len()))
            .collect()
    }

    /// Compresses with the current dictionary; returns its version (0 and
    /// a plain frame when there is none).
    pub fn compress(&self, raw: &[u8], level: i32) -> DbResult<(u32, Vec<u8>)> {
        match self.current() {
            Some(d) => Ok((d.version, d.compress(raw)?)),
            None => Ok((0, zstd_compress(raw, level)?)),
        }
    }

    /// Decompresses a frame made with dictionary `version` (0: none).
    pub fn decompress(&self, version: u32, frame: &[u8]) -> DbResult<Vec<u8>> {
        if version == 0 {
            return zstd_decompress(frame);
        }
        match self.dicts.get(&version) {
            Some(d) => d.decompress(frame),
            None => Err(DbError::Corrupt {
                what: "tx body",
                detail: format!(
                    "compressed with dictionary v{version}, which this store does not hold (has {:?})",
                    self.dicts.keys().collect::<Vec<_>>()
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records that share structure, as transactions do: one 2 KB template
    /// of non-repeating bytes with a few fields that differ per record.
    fn samples(n: usize, salt: u8) -> Vec<Vec<u8>> {
        let mut x = 0x9e37_79b9_u32 ^ u32::from(salt);
        let template: Vec<u8> = (0..2048)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 24) as u8
            })
            .collect();
        (0..n)
            .map(|i| {
                let mut r = template.clone();
                for f in 0..8usize {
                    let v = (i as u32)
                        .wrapping_mul(2_654_435_761)
                        .rotate_left(f as u32 * 4);
                    r[f * 250..f * 250 + 4].copy_from_slice(&v.to_be_bytes());
                }
                r
            })
            .collect()
    }

    #[test]
    fn a_trained_dictionary_beats_plain_frames_and_old_versions_stay_readable() {
        let train = samples(500, 1);
        let v1 = Dictionary::train(1, &train, 16 << 10, 3).expect("train");
        let mut set = DictSet::default();
        let plain = samples(1, 9).remove(0);
        let (v, old_frame) = set.compress(&plain, 3).expect("plain");
        assert_eq!(v, 0);
        set.insert(v1);
        let test = samples(50, 1);
        let with: usize = test
            .iter()
            .map(|r| set.compress(r, 3).expect("dict").1.len())
            .sum();
        let without: usize = test
            .iter()
            .map(|r| zstd_compress(r, 3).expect("plain").len())
            .sum();
        assert!(
            with * 2 < without,
            "dictionary {with} B vs plain {without} B"
        );
        let (v, f1) = set.compress(&test[0], 3).expect("v1");
        assert_eq!(v, 1);
        // Retrain: v2 becomes current; v1 and v0 frames still decode.
        set.insert(
            Dictionary::train(set.next_version(), &samples(500, 2), 16 << 10, 3).expect("v2"),
        );
        assert_eq!(set.current().map(|d| d.version()), Some(2));
        assert_eq!(set.decompress(1, &f1).expect("v1 frame"), test[0]);
        assert_eq!(set.decompress(0, &old_frame).expect("v0 frame"), plain);
        let err = set.decompress(7, &f1).expect_err("unknown version");
        assert!(err.to_string().contains("dictionary v7"), "{err}");
    }

    #[test]
    fn dictionary_keys_round_trip_and_never_look_like_positions() {
        assert_eq!(Dictionary::parse_key(&Dictionary::key(42)), Some(42));
        assert_eq!(Dictionary::parse_key(&[0xff; 8]), None);
        // Below the first position of ledger 1, so never inside the range
        // of keys that later batches append.
        let first_position = [0, 0, 0, 1, 0, 0, 0, 0];
        assert!(Dictionary::key(u32::MAX)[..] < first_position[..]);
        assert_eq!(Dictionary::key(1).len(), 9);
        assert!(Dictionary::train(0, &samples(10, 0), 1024, 3).is_err());
    }
}
