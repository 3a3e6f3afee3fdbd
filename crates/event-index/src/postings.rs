//! Posting lists: strictly increasing event ordinals, in blocks of 128
//! deltas bit-packed by `bitpacking` (`BitPacker4x`), with a skip table so
//! that a seek decodes one block, and above it, for long lists, an upper
//! table so that a cold first seek reads one page of the skip table.
//!
//! A list of `n` ordinals (`n ≥ 2`; a list of one is inlined in its
//! [`ListRef`](crate::keys::ListRef)) is:
//!
//! - `n`, a varint;
//! - if there are full blocks (`b = ⌊n / 128⌋ > 0`), their packed bytes'
//!   length, a varint;
//! - if `b > 512`, the upper table: for each run of 512 blocks (4 KiB of
//!   skip table), the last ordinal of its last block, `u32` each
//!   (`⌈b / 512⌉` of them);
//! - for each full block, its last ordinal and the end of its packed bytes
//!   (relative to the first block), `u32` each (the skip table);
//! - the blocks: block `i` packs the deltas of its 128 ordinals from the
//!   previous block's last (0 before the first) at `w` bits, `16 w` bytes,
//!   `w` given by the difference of the block's end and its start;
//! - the `n mod 128` remaining ordinals, as varint deltas from the last
//!   full block's last ordinal (0 if none).

use bitpacking::{BitPacker, BitPacker4x};

use crate::error::{EventIndexError, EventIndexResult};
use crate::search::{gallop, partition};
use crate::varint;

/// Ordinals per packed block.
pub const BLOCK: usize = BitPacker4x::BLOCK_LEN;

/// Skip entries per upper table entry (4 KiB of skip table).
pub(crate) const UPPER: usize = 512;

/// Appends the encoding of `vals` (strictly increasing, at least 2).
pub(crate) fn encode(vals: &[u32], out: &mut Vec<u8>) {
    let packer = BitPacker4x::new();
    varint::put(out, vals.len() as u64);
    let full = vals.len() / BLOCK;
    let mut bits = Vec::with_capacity(full);
    let mut base = 0u32;
    for block in vals.chunks_exact(BLOCK) {
        bits.push(packer.num_bits_sorted(base, block));
        base = block[BLOCK - 1];
    }
    if full > 0 {
        let len: u64 = bits.iter().map(|&b| 16 * u64::from(b)).sum();
        varint::put(out, len);
    }
    if full > UPPER {
        for k in 0..full.div_ceil(UPPER) {
            let last = (UPPER * k + UPPER - 1).min(full - 1);
            out.extend_from_slice(&vals[BLOCK * last + BLOCK - 1].to_le_bytes());
        }
    }
    let skip_at = out.len();
    out.resize(skip_at + 8 * full, 0);
    let blocks_at = out.len();
    let mut base = 0u32;
    for (i, (block, &bits)) in vals.chunks_exact(BLOCK).zip(&bits).enumerate() {
        let start = out.len();
        out.resize(start + 16 * usize::from(bits), 0);
        packer.compress_sorted(base, block, &mut out[start..], bits);
        base = block[BLOCK - 1];
        let end = (out.len() - blocks_at) as u32;
        let e = skip_at + 8 * i;
        out[e..e + 4].copy_from_slice(&base.to_le_bytes());
        out[e + 4..e + 8].copy_from_slice(&end.to_le_bytes());
    }
    for &v in &vals[full * BLOCK..] {
        varint::put(out, u64::from(v - base));
        base = v;
    }
}

/// A parsed list header: bounds checked, blocks not yet decoded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct List<'a> {
    n: usize,
    upper: &'a [u8],
    skip: &'a [u8],
    blocks: &'a [u8],
    tail: &'a [u8],
}

fn corrupt(what: &str) -> EventIndexError {
    EventIndexError::corrupt(format!("posting list: {what}"))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        w.copy_from_slice(s);
    }
    u32::from_le_bytes(w)
}

impl<'a> List<'a> {
    /// Parses the list starting at `buf[0]` (`buf` runs to the end of the
    /// postings section); `universe` bounds its length.
    pub(crate) fn parse(buf: &'a [u8], universe: u32) -> EventIndexResult<Self> {
        let mut pos = 0;
        let n = varint::get(buf, &mut pos).ok_or_else(|| corrupt("bad length"))?;
        if n < 2 || n > u64::from(universe) {
            return Err(corrupt("length out of range"));
        }
        let n = n as usize;
        let full = n / BLOCK;
        let blocks_len = if full == 0 {
            0
        } else {
            varint::get(buf, &mut pos)
                .and_then(|l| usize::try_from(l).ok())
                .ok_or_else(|| corrupt("bad blocks length"))?
        };
        let uppers = if full > UPPER {
            full.div_ceil(UPPER)
        } else {
            0
        };
        let upper = buf
            .get(pos..pos + 4 * uppers)
            .ok_or_else(|| corrupt("upper table past the end"))?;
        pos += 4 * uppers;
        let skip = buf
            .get(pos..pos + 8 * full)
            .ok_or_else(|| corrupt("skip table past the end"))?;
        let at = pos + 8 * full;
        let blocks = buf
            .get(at..at.saturating_add(blocks_len))
            .ok_or_else(|| corrupt("blocks past the end"))?;
        let tail = &buf[at + blocks_len..];
        Ok(List {
            n,
            upper,
            skip,
            blocks,
            tail,
        })
    }

    /// The first full block whose last ordinal is `≥ target` (`full()` if
    /// none): through the upper table when there is one, so that a cold
    /// search reads one page of the skip table.
    fn first_block(&self, target: u32) -> usize {
        let full = self.full();
        let uppers = self.upper.len() / 4;
        if uppers == 0 {
            return partition(0, full, |b| self.last_of(b) < target);
        }
        let k = partition(0, uppers, |k| u32_at(self.upper, 4 * k) < target);
        if k == uppers {
            return full;
        }
        partition(UPPER * k, (UPPER * k + UPPER).min(full), |b| {
            self.last_of(b) < target
        })
    }

    /// Its length.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    fn full(&self) -> usize {
        self.n / BLOCK
    }

    fn last_of(&self, block: usize) -> u32 {
        u32_at(self.skip, 8 * block)
    }

    fn end_of(&self, block: usize) -> usize {
        u32_at(self.skip, 8 * block + 4) as usize
    }

    /// Decodes block `i` (`full()` is the tail) into `out`; checks that its
    /// ordinals increase strictly, stay below `universe` and end where the
    /// skip table says.
    fn decode(&self, i: usize, universe: u32, out: &mut [u32; BLOCK]) -> EventIndexResult<usize> {
        let base = if i == 0 { 0 } else { self.last_of(i - 1) };
        let len = if i < self.full() {
            let start = if i == 0 { 0 } else { self.end_of(i - 1) };
            let end = self.end_of(i);
            let bytes = end
                .checked_sub(start)
                .filter(|b| b % 16 == 0 && b / 16 <= 32)
                .ok_or_else(|| corrupt("bad block size"))?;
            let packed = self
                .blocks
                .get(start..end)
                .ok_or_else(|| corrupt("block past the end"))?;
            BitPacker4x::new().decompress_sorted(base, packed, out, (bytes / 16) as u8);
            if out[BLOCK - 1] != self.last_of(i) {
                return Err(corrupt("block does not end at its skip entry"));
            }
            BLOCK
        } else {
            let len = self.n % BLOCK;
            let mut pos = 0;
            let mut v = base;
            for slot in out.iter_mut().take(len) {
                let d = varint::get_u32(self.tail, &mut pos).ok_or_else(|| corrupt("bad tail"))?;
                v = v.checked_add(d).ok_or_else(|| corrupt("tail overflows"))?;
                *slot = v;
            }
            len
        };
        let vals = &out[..len];
        let first_ok = i == 0 || vals.first().is_some_and(|&v| v > base);
        if !first_ok
            || vals.windows(2).any(|w| w[0] >= w[1])
            || vals.last().is_some_and(|&v| v >= universe)
        {
            return Err(corrupt("ordinals not increasing or out of range"));
        }
        Ok(len)
    }
}

impl<'a> Cursor<'a> {
    /// The bytes a first seek to `target` reads next, for prefetching:
    /// at `step` 0 its page of the skip table (found through the upper
    /// table, which is in the list's head), at `step` 1 its block (found
    /// through that page). None once the cursor has moved, for a list of
    /// one, or where the tail holds the answer.
    pub(crate) fn first_seek_bytes(&self, target: u32, step: u8) -> Option<&'a [u8]> {
        let list = self.list?;
        if self.block != usize::MAX {
            return None;
        }
        let full = list.full();
        if step == 0 {
            let uppers = list.upper.len() / 4;
            if uppers == 0 {
                return Some(list.skip);
            }
            let k = partition(0, uppers, |k| u32_at(list.upper, 4 * k) < target);
            return list
                .skip
                .get(8 * UPPER * k..(8 * UPPER * (k + 1)).min(list.skip.len()));
        }
        let b = list.first_block(target);
        if b >= full {
            return None;
        }
        let start = if b == 0 { 0 } else { list.end_of(b - 1) };
        list.blocks.get(start..list.end_of(b).max(start))
    }
}

/// A forward cursor over one list: `seek(t)` gives its least ordinal
/// `≥ t`. Holds one decoded block (512 bytes), whatever the list's length.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    list: Option<List<'a>>,
    universe: u32,
    buf: Box<[u32; BLOCK]>,
    len: usize,
    pos: usize,
    block: usize,
    done: bool,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(list: List<'a>, universe: u32) -> Self {
        Cursor {
            list: Some(list),
            universe,
            buf: Box::new([0; BLOCK]),
            len: 0,
            pos: 0,
            block: usize::MAX,
            done: false,
        }
    }

    /// A list of one ordinal (an inline ref).
    pub(crate) fn single(v: u32) -> Self {
        let mut buf = Box::new([0; BLOCK]);
        buf[0] = v;
        Cursor {
            list: None,
            universe: v.saturating_add(1),
            buf,
            len: 1,
            pos: 0,
            block: 0,
            done: false,
        }
    }

    /// The least ordinal `≥ target`, or None when the list has none.
    pub(crate) fn seek(&mut self, target: u32) -> EventIndexResult<Option<u32>> {
        loop {
            if self.done {
                return Ok(None);
            }
            if self.len > 0 && self.buf[self.len - 1] >= target {
                let rest = &self.buf[self.pos..self.len];
                self.pos += rest.partition_point(|&v| v < target);
                return Ok(Some(self.buf[self.pos]));
            }
            let Some(list) = self.list else {
                self.done = true;
                return Ok(None);
            };
            // The first block after the loaded one whose last is ≥ target.
            // The first seek searches the upper and skip tables; later ones
            // gallop from the loaded block, so that walking a long list
            // touches the skip table's pages in order, not all over it.
            let from = self.block.wrapping_add(1);
            let full = list.full();
            let tail = list.n % BLOCK > 0;
            let mut next = from;
            if from < full {
                next = if from == 0 {
                    list.first_block(target)
                } else {
                    gallop(from, full, |b| list.last_of(b) < target)
                };
            }
            if next > full || (next == full && !tail) {
                self.done = true;
                return Ok(None);
            }
            self.len = list.decode(next, self.universe, &mut self.buf)?;
            self.block = next;
            self.pos = 0;
            if next == full && self.buf[self.len - 1] < target {
                self.done = true;
                return Ok(None);
            }
        }
    }
}
