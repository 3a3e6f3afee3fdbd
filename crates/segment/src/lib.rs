//! Immutable tx-hash index segments.
//!
//! A segment indexes every transaction of one closed ledger range
//! `first..=last`: it maps a 32-byte tx hash to the transaction's position
//! `(ledger seq, apply index)` with a minimal perfect hash (MPH), a 16-bit
//! fingerprint per key so that a hash not in the range is rejected without
//! reading any body, and a 4-byte ordinal per key. Segments are written
//! once, fsynced, and published by an atomic rename; they are never
//! modified afterwards.
//!
//! # File layout (`seg-<first>-<last>.idx`, all integers little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `LSIDXSEG` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | MPH kind: 1 = prefix (legacy, read only), 2 = full hash (see below) |
//! | 16 | 4 | first ledger |
//! | 20 | 4 | last ledger |
//! | 24 | 8 | keys `n` |
//! | 32 | 8 | MPH bytes `m` |
//! | 40 | 8 | build time, microseconds |
//! | 48 | 16 | kind 2: the salt, two `u64`; kind 1: reserved (zero) |
//! | 64 | `m` | the MPH, as `GOFunction::write` emits it |
//! | | `4 × (ledgers + 1)` | `offsets`: ordinal of each ledger's first tx; the last entry is `n` |
//! | | `2 × n` | `fingerprints[slot]`: bytes 16..18 of the hash at that slot |
//! | | `4 × n` | `ordinals[slot]`: the tx's ordinal in the range (ledger order, then apply order) |
//! | | 32 | SHA-256 of everything before it |
//!
//! # MPH kinds
//!
//! Both kinds are a `ph::fmph::GOFunction` with wyhash over a 128-bit key;
//! they differ in how the key is made from the tx hash.
//!
//! - Kind 1 (written by earlier releases, still read): the hash's first 16
//!   bytes. Tx hashes arrive from clients unverified, so two distinct
//!   hashes can share those bytes, and such a range could not be built.
//! - Kind 2 (written now): all 32 bytes, mixed under a random 128-bit salt
//!   drawn per segment and stored in the header (NH, the UMAC hash: two
//!   64×64→128-bit products of salted words, summed). Hashing the raw 32
//!   bytes with wyhash would not do: wyhash has collisions that do not
//!   depend on its seed (a 64-bit word equal to one of its constants zeroes
//!   a product, and the two factors of a product commute), so a client
//!   could send two hashes that every MPH level sends to the same bit, and
//!   the build would fail on every retry. NH under a salt the client cannot
//!   see makes any fixed pair of distinct hashes collide with probability
//!   at most 2^-64; the builder checks the salted keys for collisions and
//!   draws a fresh salt if one occurs, so any set of distinct hashes
//!   builds. Identical hashes are refused by name: no MPH separates them.
//!
//! A lookup computes the key (a match on the kind, then at most two
//! multiplications), `slot = mph(key)`, compares the fingerprint, and maps
//! the ordinal back to `(seq, index)` by binary search in `offsets`.
//!
//! The fingerprint has 16 bits and is hash bytes 16..18 in both kinds. For
//! real transactions hash bytes are uniformly random, and the slot a
//! missing hash lands on is decided by the salted mix of all 32 bytes, so a
//! hash that is not in the range passes with probability 2^-16. Crafted
//! hashes can do worse: a range whose hashes share bytes 16..18 stores one
//! fingerprint, and any lookup with those bytes passes it. That costs only
//! a body read, never a wrong answer: callers confirm every candidate
//! against the stored body, which records its hash.

use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ph::fmph::keyset::SliceSourceWithRefs;
use ph::fmph::{GOBuildConf, GOConf, GOFunction};
use ph::seeds::TwoToPowerBitsStatic;
use serde::Serialize;
use sha2::{Digest, Sha256};

mod error;
pub use error::{SegmentError, SegmentResult};

const MAGIC: &[u8; 8] = b"LSIDXSEG";
const VERSION: u32 = 1;
/// MPH kind 1: `GOFunction`, wyhash, over the hash's first 16 bytes.
const MPH_PREFIX: u32 = 1;
/// MPH kind 2: `GOFunction`, wyhash, over the salted NH of all 32 bytes.
const MPH_SALTED_NH: u32 = 2;
/// Salts a build tries before it gives up (each one fails with
/// probability about `n² × 2^-65`, so the second is already a rarity).
const MAX_SALTS: usize = 4;
const HEADER_BYTES: usize = 64;
const CHECKSUM_BYTES: usize = 32;
/// Bits of fingerprint stored per key.
pub const FINGERPRINT_BITS: u32 = 16;

type Mph =
    GOFunction<TwoToPowerBitsStatic<4>, TwoToPowerBitsStatic<2>, ph::seedable_hash::BuildWyHash>;

pub use ledgerstore_db_api::TxPos;

/// How a segment turns a tx hash into its MPH key (the MPH kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyScheme {
    /// Kind 1: the hash's first 16 bytes.
    Prefix,
    /// Kind 2: NH of all 32 bytes under these four salt words.
    Salted([u64; 4]),
}

impl KeyScheme {
    /// Kind 2 with the 128-bit `salt` stored in the header.
    fn salted(salt: [u64; 2]) -> Self {
        // NH wants one key word per message word: the salt itself, then
        // two words derived from it by a bijective mixer.
        Self::Salted([
            salt[0],
            salt[1],
            mix64(salt[0] ^ 0x243f_6a88_85a3_08d3),
            mix64(salt[1] ^ 0x1319_8a2e_0370_7344),
        ])
    }

    /// The kind number written at offset 12.
    fn kind(&self) -> u32 {
        match self {
            Self::Prefix => MPH_PREFIX,
            Self::Salted(_) => MPH_SALTED_NH,
        }
    }

    /// The 16 bytes written at offset 48.
    fn salt_bytes(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        if let Self::Salted(k) = self {
            b[..8].copy_from_slice(&k[0].to_le_bytes());
            b[8..].copy_from_slice(&k[1].to_le_bytes());
        }
        b
    }

    /// The MPH key of `hash`.
    #[inline]
    fn key(&self, hash: &[u8; 32]) -> u128 {
        match self {
            Self::Prefix => u128::from_le_bytes(word(hash, 0)),
            Self::Salted(k) => {
                let w = |i: usize| u64::from_le_bytes(word(hash, 8 * i));
                let a = u128::from(w(0).wrapping_add(k[0])) * u128::from(w(1).wrapping_add(k[1]));
                let b = u128::from(w(2).wrapping_add(k[2])) * u128::from(w(3).wrapping_add(k[3]));
                a.wrapping_add(b)
            }
        }
    }
}

/// `N` bytes of `hash` from `at`.
#[inline]
fn word<const N: usize>(hash: &[u8; 32], at: usize) -> [u8; N] {
    let mut b = [0u8; N];
    b.copy_from_slice(&hash[at..at + N]);
    b
}

/// The SplitMix64 finalizer: a bijection on `u64` that mixes every bit.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fresh salt that clients cannot predict: SipHash under std's
/// `RandomState` keys (drawn from the OS), over the clock.
fn fresh_salt() -> [u64; 2] {
    let s = RandomState::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    [s.hash_one((now, 0u8)), s.hash_one((now, 1u8))]
}

/// The fingerprint: hash bytes 16..18 (the kind 1 key does not use them;
/// see the module docs for kind 2).
fn fingerprint(hash: &[u8; 32]) -> u16 {
    u16::from_le_bytes([hash[16], hash[17]])
}

/// The file name of the segment for `first..=last`.
pub fn file_name(first: u32, last: u32) -> String {
    format!("seg-{first:010}-{last:010}.idx")
}

/// Parses a segment file name back into its range.
pub fn parse_file_name(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("seg-")?.strip_suffix(".idx")?;
    let (a, b) = rest.split_once('-')?;
    if a.len() != 10 || b.len() != 10 {
        return None;
    }
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// What `stats` shows about a segment.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SegmentInfo {
    /// First ledger of the range.
    pub first: u32,
    /// Last ledger of the range.
    pub last: u32,
    /// Transactions indexed.
    pub keys: u64,
    /// Bytes of the file.
    pub file_bytes: u64,
    /// Bits per key of the MPH alone.
    pub mph_bits_per_key: f64,
    /// Bits per key of the whole file (MPH, fingerprints, ordinals, offsets).
    pub bits_per_key: f64,
    /// Seconds the build took (MPH plus arrays, not the scan of the hot index).
    pub build_s: f64,
}

/// Builds a segment from `(hash, position)` pairs of one range.
#[derive(Debug)]
pub struct SegmentBuilder {
    first: u32,
    last: u32,
    entries: Vec<([u8; 32], TxPos)>,
}

impl SegmentBuilder {
    /// A builder for `first..=last`.
    pub fn new(first: u32, last: u32) -> SegmentResult<Self> {
        if first > last {
            return Err(SegmentError::Invalid(format!(
                "segment range {first}..={last} is empty"
            )));
        }
        Ok(Self {
            first,
            last,
            entries: Vec::new(),
        })
    }

    /// Adds one transaction. Positions must lie in the range.
    pub fn push(&mut self, hash: [u8; 32], pos: TxPos) -> SegmentResult<()> {
        if pos.seq < self.first || pos.seq > self.last {
            return Err(SegmentError::Invalid(format!(
                "tx {} at ledger {} lies outside the segment range {}..={}",
                hex(&hash),
                pos.seq,
                self.first,
                self.last
            )));
        }
        self.entries.push((hash, pos));
        Ok(())
    }

    /// Keys added so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Builds the segment and writes it to `path` (fsynced). The caller
    /// publishes it by renaming; see [`publish`]. Any set of distinct
    /// hashes builds; a hash pushed twice is refused by name.
    pub fn write(self, path: &Path) -> SegmentResult<SegmentInfo> {
        self.write_with(path, MPH_SALTED_NH, &mut fresh_salt)
    }

    /// [`write`](Self::write) with MPH `kind` and a source of salts (kind
    /// 2 draws one per attempt). Kind 1 is only written by tests, to check
    /// that such files still open.
    fn write_with(
        mut self,
        path: &Path,
        kind: u32,
        salts: &mut dyn FnMut() -> [u64; 2],
    ) -> SegmentResult<SegmentInfo> {
        let started = Instant::now();
        let ledgers = (self.last - self.first) as usize + 1;
        let n = self.entries.len();
        if u32::try_from(n).is_err() {
            return Err(SegmentError::Invalid(format!(
                "{n} keys exceed a segment's 2^32 limit: use a smaller range"
            )));
        }
        // Ordinals follow ledger order, then apply order; each position once.
        self.entries.sort_unstable_by_key(|e| e.1);
        let mut offsets = vec![0u32; ledgers + 1];
        for w in self.entries.windows(2) {
            if w[0].1 == w[1].1 {
                return Err(SegmentError::Invalid(format!(
                    "two hashes at ledger {} index {}",
                    w[0].1.seq, w[0].1.index
                )));
            }
        }
        let mut counts = vec![0u32; ledgers];
        for (_, pos) in &self.entries {
            let li = (pos.seq - self.first) as usize;
            counts[li] = counts[li].max(pos.index + 1);
        }
        for (li, c) in counts.iter().enumerate() {
            offsets[li + 1] = offsets[li] + c;
        }
        if offsets[ledgers] as usize != n {
            return Err(SegmentError::Invalid(format!(
                "apply indexes are not dense: {} positions for {n} keys (a ledger's txs must be 0..count)",
                offsets[ledgers]
            )));
        }
        // No MPH separates identical keys: refuse a repeated hash by name.
        // Sorting by the whole hash also makes shared prefixes adjacent.
        let mut sorted: Vec<&([u8; 32], TxPos)> = self.entries.iter().collect();
        sorted.sort_unstable_by_key(|e| e.0);
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(SegmentError::Invalid(format!(
                "tx hash {} appears twice, at ledger {} index {} and ledger {} index {}",
                hex(&w[0].0),
                w[0].1.seq,
                w[0].1.index,
                w[1].1.seq,
                w[1].1.index
            )));
        }
        if kind == MPH_PREFIX
            && let Some(w) = sorted.windows(2).find(|w| w[0].0[..16] == w[1].0[..16])
        {
            return Err(SegmentError::Invalid(format!(
                "two hashes share the 128-bit prefix {} (MPH kind 1)",
                hex(&w[0].0[..16])
            )));
        }
        drop(sorted);
        let mut attempt = 0;
        let (scheme, keys, mph) = loop {
            attempt += 1;
            let scheme = match kind {
                MPH_PREFIX => KeyScheme::Prefix,
                MPH_SALTED_NH => KeyScheme::salted(salts()),
                _ => {
                    return Err(SegmentError::Invalid(format!(
                        "cannot write MPH kind {kind}"
                    )));
                }
            };
            // Keys in ordinal order, so that `keys[ord]` is entry `ord`'s.
            let keys: Vec<u128> = self.entries.iter().map(|(h, _)| scheme.key(h)).collect();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            let collision = sorted.windows(2).any(|w| w[0] == w[1]);
            drop(sorted);
            let mph = if collision {
                None
            } else {
                let conf = GOBuildConf::with_mt(
                    GOConf {
                        hash_builder: ph::seedable_hash::BuildWyHash,
                        bits_per_seed: TwoToPowerBitsStatic::<2>,
                        bits_per_group: TwoToPowerBitsStatic::<4>,
                    },
                    n > 100_000,
                );
                Mph::try_with_conf_stats(SliceSourceWithRefs::<_, u8>::new(&keys), conf, &mut ())
            };
            match mph {
                Some(mph) => break (scheme, keys, mph),
                None if scheme != KeyScheme::Prefix && attempt < MAX_SALTS => continue,
                None => {
                    return Err(SegmentError::Invalid(format!(
                        "no MPH separates these {n} keys (MPH kind {kind}, {attempt} attempts; {})",
                        if collision {
                            "the last salt mixed two hashes to one key"
                        } else {
                            "the MPH build did not converge"
                        }
                    )));
                }
            }
        };
        let mut fps = vec![0u16; n];
        let mut ords = vec![0u32; n];
        for (ord, ((hash, _), key)) in self.entries.iter().zip(&keys).enumerate() {
            let slot = mph
                .get(key)
                .and_then(|s| usize::try_from(s).ok())
                .filter(|s| *s < n)
                .ok_or_else(|| {
                    SegmentError::Invalid(format!("the MPH did not place key {}", hex(hash)))
                })?;
            fps[slot] = fingerprint(hash);
            ords[slot] = ord as u32;
        }
        drop(keys);
        let build = started.elapsed();
        let mph_bytes = mph.write_bytes();
        let file = File::create(path).map_err(SegmentError::io(path, "creating"))?;
        let mut w = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
        let mut header = Vec::with_capacity(HEADER_BYTES);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&scheme.kind().to_le_bytes());
        header.extend_from_slice(&self.first.to_le_bytes());
        header.extend_from_slice(&self.last.to_le_bytes());
        header.extend_from_slice(&(n as u64).to_le_bytes());
        header.extend_from_slice(&(mph_bytes as u64).to_le_bytes());
        let micros = u64::try_from(build.as_micros()).unwrap_or(u64::MAX);
        header.extend_from_slice(&micros.to_le_bytes());
        header.extend_from_slice(&scheme.salt_bytes());
        debug_assert_eq!(header.len(), HEADER_BYTES);
        w.write_all(&header)
            .map_err(SegmentError::io(path, "writing"))?;
        mph.write(&mut w)
            .map_err(SegmentError::io(path, "writing"))?;
        for o in &offsets {
            w.write_all(&o.to_le_bytes())
                .map_err(SegmentError::io(path, "writing"))?;
        }
        for f in &fps {
            w.write_all(&f.to_le_bytes())
                .map_err(SegmentError::io(path, "writing"))?;
        }
        for o in &ords {
            w.write_all(&o.to_le_bytes())
                .map_err(SegmentError::io(path, "writing"))?;
        }
        let digest = w.digest();
        let mut inner = w.into_inner();
        inner
            .write_all(&digest)
            .map_err(SegmentError::io(path, "writing"))?;
        let file = inner
            .into_inner()
            .map_err(|e| SegmentError::io(path, "flushing")(e.into_error()))?;
        file.sync_all().map_err(SegmentError::io(path, "syncing"))?;
        let file_bytes =
            (HEADER_BYTES + mph_bytes + 4 * (ledgers + 1) + 6 * n + CHECKSUM_BYTES) as u64;
        Ok(info(
            self.first, self.last, n as u64, file_bytes, mph_bytes, build,
        ))
    }
}

fn info(
    first: u32,
    last: u32,
    keys: u64,
    file_bytes: u64,
    mph_bytes: usize,
    build: Duration,
) -> SegmentInfo {
    let per_key = |bytes: f64| {
        if keys == 0 {
            0.0
        } else {
            bytes * 8.0 / keys as f64
        }
    };
    SegmentInfo {
        first,
        last,
        keys,
        file_bytes,
        mph_bits_per_key: per_key(mph_bytes as f64),
        bits_per_key: per_key(file_bytes as f64),
        build_s: build.as_secs_f64(),
    }
}

/// Publishes a segment written to `tmp` as `dir/<file_name>`: an atomic
/// rename, then an fsync of the directory so the rename is durable.
pub fn publish(tmp: &Path, dir: &Path, first: u32, last: u32) -> SegmentResult<PathBuf> {
    let dest = dir.join(file_name(first, last));
    std::fs::rename(tmp, &dest).map_err(SegmentError::io(&dest, "renaming into place"))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(SegmentError::io(dir, "syncing"))?;
    Ok(dest)
}

/// An open segment, held in memory.
pub struct Segment {
    first: u32,
    last: u32,
    scheme: KeyScheme,
    mph: Mph,
    offsets: Vec<u32>,
    fingerprints: Vec<u16>,
    ordinals: Vec<u32>,
    info: SegmentInfo,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("first", &self.first)
            .field("last", &self.last)
            .field("kind", &self.scheme.kind())
            .field("keys", &self.ordinals.len())
            .finish()
    }
}

impl Segment {
    /// Opens and verifies a segment file (magic, version, sizes, checksum).
    pub fn open(path: &Path) -> SegmentResult<Self> {
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(SegmentError::io(path, "reading"))?;
        let corrupt = |detail: String| SegmentError::Corrupt {
            path: path.display().to_string(),
            detail,
        };
        if bytes.len() < HEADER_BYTES + CHECKSUM_BYTES || &bytes[..8] != MAGIC {
            return Err(corrupt(
                "not a segment file (bad magic or too short)".into(),
            ));
        }
        let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
        if Sha256::digest(body).as_slice() != sum {
            return Err(corrupt("checksum mismatch".into()));
        }
        let u32_at =
            |o: usize| u32::from_le_bytes([body[o], body[o + 1], body[o + 2], body[o + 3]]);
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&body[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let version = u32_at(8);
        if version != VERSION {
            return Err(corrupt(format!(
                "format version {version}, this build reads {VERSION}"
            )));
        }
        let kind = u32_at(12);
        let scheme = match kind {
            MPH_PREFIX => KeyScheme::Prefix,
            MPH_SALTED_NH => KeyScheme::salted([u64_at(48), u64_at(56)]),
            _ => {
                return Err(corrupt(format!(
                    "unknown MPH kind {kind}, this build reads {MPH_PREFIX} and {MPH_SALTED_NH}"
                )));
            }
        };
        let (first, last) = (u32_at(16), u32_at(20));
        if first > last {
            return Err(corrupt(format!("empty range {first}..={last}")));
        }
        let n = usize::try_from(u64_at(24)).map_err(|_| corrupt("key count".into()))?;
        let mph_bytes = usize::try_from(u64_at(32)).map_err(|_| corrupt("MPH size".into()))?;
        let build = Duration::from_micros(u64_at(40));
        let ledgers = (last - first) as usize + 1;
        let expected = HEADER_BYTES
            .checked_add(mph_bytes)
            .and_then(|x| x.checked_add(4 * (ledgers + 1)))
            .and_then(|x| x.checked_add(n.checked_mul(6)?));
        if expected != Some(body.len()) {
            return Err(corrupt(format!(
                "{} bytes do not match {n} keys, {ledgers} ledgers and a {mph_bytes}-byte MPH",
                body.len()
            )));
        }
        let mut mph_src = &body[HEADER_BYTES..HEADER_BYTES + mph_bytes];
        let mph = Mph::read_with_hasher(&mut mph_src, ph::seedable_hash::BuildWyHash)
            .map_err(|e| corrupt(format!("MPH: {e}")))?;
        let mut at = HEADER_BYTES + mph_bytes;
        let offsets: Vec<u32> = (0..=ledgers).map(|i| u32_at(at + 4 * i)).collect();
        at += 4 * (ledgers + 1);
        let fingerprints: Vec<u16> = (0..n)
            .map(|i| u16::from_le_bytes([body[at + 2 * i], body[at + 2 * i + 1]]))
            .collect();
        at += 2 * n;
        let ordinals: Vec<u32> = (0..n).map(|i| u32_at(at + 4 * i)).collect();
        if offsets.windows(2).any(|w| w[0] > w[1]) || offsets[ledgers] as usize != n {
            return Err(corrupt("ledger offsets are not a prefix sum of n".into()));
        }
        if ordinals.iter().any(|o| *o as usize >= n) {
            return Err(corrupt("an ordinal is out of range".into()));
        }
        let info = info(first, last, n as u64, bytes.len() as u64, mph_bytes, build);
        Ok(Self {
            first,
            last,
            scheme,
            mph,
            offsets,
            fingerprints,
            ordinals,
            info,
        })
    }

    /// First ledger of the range.
    pub fn first(&self) -> u32 {
        self.first
    }

    /// Last ledger of the range.
    pub fn last(&self) -> u32 {
        self.last
    }

    /// Size and build figures.
    pub fn info(&self) -> &SegmentInfo {
        &self.info
    }

    /// The position of `hash` if the range may hold it. `None` is certain;
    /// `Some` is a candidate that is wrong with probability 2^-16 for a
    /// random hash outside the range, more often for crafted ones (confirm
    /// it against the body). Touches memory only.
    pub fn lookup(&self, hash: &[u8; 32]) -> Option<TxPos> {
        let slot = usize::try_from(self.mph.get(&self.scheme.key(hash))?).ok()?;
        if *self.fingerprints.get(slot)? != fingerprint(hash) {
            return None;
        }
        let ord = *self.ordinals.get(slot)?;
        // The ledger is the last one whose first ordinal is <= ord.
        let li = self.offsets.partition_point(|&o| o <= ord).checked_sub(1)?;
        Some(TxPos {
            seq: self.first + li as u32,
            index: ord - self.offsets[li],
        })
    }
}

/// A writer that hashes what passes through.
struct HashingWriter<W: Write> {
    inner: W,
    sha: Sha256,
}

impl<W: Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        Self {
            inner,
            sha: Sha256::new(),
        }
    }
    fn digest(&mut self) -> [u8; 32] {
        std::mem::take(&mut self.sha).finalize().into()
    }
    fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
