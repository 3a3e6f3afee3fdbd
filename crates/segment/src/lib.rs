//! Immutable tx-hash index segments.
//!
//! A segment indexes every transaction of one closed ledger range
//! `first..=last`: it maps a 32-byte tx hash to the transaction's position
//! `(ledger seq, apply index)` with a minimal perfect hash (MPH), a 16-bit
//! fingerprint per key so that a hash not in the range is rejected without
//! reading any body, and a bit-packed ordinal per key (the two packed
//! together in one record per slot). Segments are written
//! once, fsynced, and published by an atomic rename; they are never
//! modified afterwards. An open segment is memory-mapped ([`Segment`]):
//! only its MPH is copied to the heap.
//!
//! A base range's hash list ([`hashes`]) keeps the range's tx hashes in
//! position order: merges and repairs rebuild segments from it.
//!
//! # File layout (`seg-<first>-<last>.idx`, all integers little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `LSIDXSEG` |
//! | 8 | 4 | format version: 3 (written now), 2 or 1 (earlier releases, read) |
//! | 12 | 4 | MPH kind: 1 = prefix (legacy, read only), 2 = full hash (see below) |
//! | 16 | 4 | first ledger |
//! | 20 | 4 | last ledger |
//! | 24 | 8 | keys `n` |
//! | 32 | 8 | MPH section bytes `m` |
//! | 40 | 8 | build time, microseconds |
//! | 48 | 16 | kind 2: the salt, two `u64`; kind 1: reserved (zero) |
//! | 64 | `m` | version 2: the MPH section: partitions `P` (`u64`), then per partition its keys and MPH bytes (`u64` each), then each partition's MPH as `GOFunction::write` emits it. Version 1: one MPH |
//! | | `< 4096` | version 3: zero bytes up to the next multiple of 4096, so that each 1,024-entry block of `offsets` is one page |
//! | | `4 × (ledgers + 1)` | `offsets`: ordinal of each ledger's first tx; the last entry is `n` |
//! | | `4 × ⌈(ledgers + 1) / 1024⌉` | version 3: `sample`, `offsets[1024 k]` for each `k`, read onto the heap at open (~4 KB per million ledgers) |
//! | | `⌈(16 + b) × n / 8⌉ + 8` | version 3: `records[slot]`: the fingerprint (bytes 16..18 of the hash at that slot, 16 bits) and above it the tx's ordinal in the range (ledger order, then apply order, `b = ⌈log2 n⌉` bits, at least 1), packed little-endian at `16 + b` bits, then 8 zero bytes so any record is one unaligned 8-byte read |
//! | | `2 × n` | versions 1 and 2 instead: `fingerprints[slot]`, then the ordinals: |
//! | | `⌈b × n / 8⌉ + 8` | version 2: `ordinals[slot]` packed at `b` bits, then 8 zero bytes |
//! | | `4 × n` | version 1: `ordinals[slot]` as `u32` |
//! | | 32 | SHA-256 of everything before it |
//!
//! So a version 3 lookup that finds a key reads one record (one page,
//! unless the 6-or-so bytes straddle two) and one page of `offsets`;
//! versions 1 and 2 read a fingerprint, an ordinal and a binary search
//! over the whole `offsets` array.
//!
//! Opening a segment checks the header and that the sizes add up to the
//! file's length (constant work), and that each MPH's own fields (level
//! sizes, bit array, seeds) fill its bytes exactly before `ph`, which
//! trusts what it reads, deserializes it; [`Segment::verify`] checks the
//! SHA-256.
//!
//! # Partitions
//!
//! A version 2 segment of `n` keys has `P = ⌈n / PART_KEYS⌉` partitions
//! (2^22 keys at most each). A key's partition is the high 64 bits of its
//! salted kind 2 key scaled to `0..P`; partition `p`'s MPH maps its keys to
//! slots `base_p..base_p + keys_p`, where `base_p` sums the earlier
//! partitions' keys, and the fingerprint and ordinal arrays are shared. So
//! a lookup still evaluates one MPH, and [`SegmentWriter`] builds a segment
//! of any size one partition at a time, spilling the others to temporary
//! files: ~80 bytes a key of one partition at peak, never of the whole
//! segment.
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
use std::path::{Path, PathBuf};
use std::time::Duration;

use ph::fmph::GOFunction;
use ph::seeds::TwoToPowerBitsStatic;
use serde::Serialize;

mod build;
mod error;
pub mod hashes;
mod hashing;
mod read;
mod repeat;
mod writer;
pub use build::SegmentBuilder;
pub use error::{SegmentError, SegmentResult};
pub use read::Segment;
pub use writer::{PART_KEYS, SegmentWriter};

const MAGIC: &[u8; 8] = b"LSIDXSEG";
/// The format written now: one packed record (fingerprint, ordinal) per
/// slot, page-aligned offsets and their sample.
const VERSION: u32 = 3;
/// The second format (still read): fingerprints, then bit-packed ordinals.
const VERSION_SPLIT: u32 = 2;
/// The first format (still read): `u32` ordinals.
const VERSION_U32_ORDINALS: u32 = 1;
/// Version 3: ledgers per `offsets` block (one 4 KiB page) and per sample.
const OFFSET_BLOCK: usize = 1024;
/// Version 3: `offsets` starts at a multiple of this.
const PAGE: usize = 4096;
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

/// Bits per packed ordinal in a segment of `n` keys: `⌈log2 n⌉`, at
/// least 1.
fn ordinal_bits(n: usize) -> u32 {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).max(1)
}

/// `at` rounded up to a multiple of [`PAGE`] (None past `usize::MAX`).
fn page_align(at: usize) -> Option<usize> {
    at.div_ceil(PAGE).checked_mul(PAGE)
}

/// The partition of `key` among `parts`: its high 64 bits scaled to
/// `0..parts` (for kind 2 keys, salted and uniform).
#[inline]
fn partition(key: u128, parts: usize) -> usize {
    ((u128::from((key >> 64) as u64) * parts as u128) >> 64) as usize
}

/// The file name of the segment for `first..=last`.
pub fn file_name(first: u32, last: u32) -> String {
    format!("seg-{first:010}-{last:010}.idx")
}

/// Parses a segment file name back into its range.
pub fn parse_file_name(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("seg-")?.strip_suffix(".idx")?;
    let (a, b) = rest.split_once('-')?;
    // Ten digits each, as `file_name` writes them (`parse` alone would
    // take a sign: `+000000001`).
    let digits = |s: &str| s.len() == 10 && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) {
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests;
