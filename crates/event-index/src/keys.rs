//! Keys of posting lists, and references to lists.

use sha2::{Digest, Sha256};

/// Topic positions indexed: getEvents filters match at most 4 segments
/// (go-stellar-sdk `MaxTopicCount`) before a trailing `**`.
pub const TOPIC_POSITIONS: usize = 4;

/// The fixed lists, in the fixed section's order: type `system`, type
/// `contract`, then events with exactly 0, 1, 2, 3 and 4 topics, then
/// events with more than 4.
pub(crate) const FIXED: usize = 8;
pub(crate) const FIXED_SYSTEM: usize = 0;
pub(crate) const FIXED_CONTRACT: usize = 1;

/// The fixed list of events with `count` topics (5 and more share one).
pub(crate) fn fixed_count(count: usize) -> usize {
    2 + count.min(TOPIC_POSITIONS + 1)
}

/// A topic value's key at a position: the first 8 bytes (big-endian) of
/// SHA-256 over `b'T'`, the position and the `SCVal`'s XDR bytes. Distinct
/// values can share a key, so a list found by it holds candidates that the
/// reader confirms against the event's real topics.
pub fn topic_key(position: usize, value: &[u8]) -> u64 {
    let mut h = Sha256::new();
    h.update([b'T', position as u8]);
    h.update(value);
    let d = h.finalize();
    let mut k = [0u8; 8];
    k.copy_from_slice(&d[..8]);
    u64::from_be_bytes(k)
}

/// Where a list is: inline (one ordinal), empty, or at an offset of the
/// postings section. Stored as a `u64`: bit 63 set means inline (the
/// ordinal in the low 32 bits), `u64::MAX` means empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListRef {
    Empty,
    Single(u32),
    At(u64),
}

const INLINE: u64 = 1 << 63;

impl ListRef {
    pub(crate) fn to_u64(self) -> u64 {
        match self {
            ListRef::Empty => u64::MAX,
            ListRef::Single(v) => INLINE | u64::from(v),
            ListRef::At(off) => off,
        }
    }

    pub(crate) fn from_u64(v: u64) -> Option<Self> {
        if v == u64::MAX {
            Some(ListRef::Empty)
        } else if v & INLINE != 0 {
            u32::try_from(v & !INLINE).ok().map(ListRef::Single)
        } else {
            Some(ListRef::At(v))
        }
    }
}

/// Reads a little-endian `u64` at `at` (zero past the end: callers
/// bounds-check first).
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    if let Some(s) = b.get(at..at + 8) {
        w.copy_from_slice(s);
    }
    u64::from_le_bytes(w)
}

/// Reads a little-endian `u32` at `at` (zero past the end).
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}
