//! An open segment: the file memory-mapped, the MPH deserialized.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use memmap2::Mmap;
use sha2::{Digest, Sha256};

use crate::{
    CHECKSUM_BYTES, FINGERPRINT_BITS, HEADER_BYTES, KeyScheme, MAGIC, MPH_PREFIX, MPH_SALTED_NH,
    Mph, OFFSET_BLOCK, PAGE, SegmentError, SegmentInfo, SegmentResult, TxPos, VERSION,
    VERSION_SPLIT, VERSION_U32_ORDINALS, fingerprint, info, ordinal_bits, page_align,
};

/// An open segment. The arrays stay in the file's memory map, so they live
/// in the page cache (the kernel evicts cold segments) rather than on the
/// heap; only the MPH (about 2.2 bits a key) is deserialized.
pub struct Segment {
    first: u32,
    last: u32,
    pub(crate) scheme: KeyScheme,
    /// One MPH per partition, with the partition's first slot.
    mphs: Vec<(usize, Mph)>,
    map: Mmap,
    path: PathBuf,
    n: usize,
    offsets_at: usize,
    slots: Slots,
    /// Version 3: `offsets[1024 k]` for every `k` (empty before).
    sample: Vec<u32>,
    /// The fingerprints copied to the heap, once loaded (see
    /// [`Segment::load_filter`]): a miss then reads nothing from the map.
    filter: std::sync::OnceLock<Box<[u16]>>,
    info: SegmentInfo,
}

/// Where a slot's fingerprint and ordinal are.
#[derive(Debug, Clone, Copy)]
enum Slots {
    /// Version 3: one record of `16 + ord_bits` bits per slot.
    Records { at: usize, ord_bits: u32 },
    /// Versions 1 and 2: a `u16` array, then the ordinals (`u32`s in
    /// version 1, `ord_bits` wide in version 2).
    Split {
        fps_at: usize,
        ords_at: usize,
        ord_bits: u32,
    },
}

/// The sections of a segment file, from its header's figures.
struct Geometry {
    offsets_at: usize,
    sample_at: Option<usize>,
    slots: Slots,
    file_bytes: usize,
}

impl Geometry {
    /// None when the figures overflow.
    fn of(version: u32, n: usize, ledgers: usize, mph_bytes: usize, ord_bits: u32) -> Option<Self> {
        let packed = |bits: u32| -> Option<usize> {
            usize::try_from((n as u64).checked_mul(u64::from(bits))?.div_ceil(8) + 8).ok()
        };
        let mph_end = HEADER_BYTES.checked_add(mph_bytes)?;
        let offsets_bytes = ledgers.checked_add(1)?.checked_mul(4)?;
        let (offsets_at, sample_at, slots, end) = if version == VERSION {
            let offsets_at = page_align(mph_end)?;
            let sample_at = offsets_at.checked_add(offsets_bytes)?;
            let at = sample_at.checked_add(4 * (ledgers + 1).div_ceil(OFFSET_BLOCK))?;
            let end = at.checked_add(packed(FINGERPRINT_BITS + ord_bits)?)?;
            (
                offsets_at,
                Some(sample_at),
                Slots::Records { at, ord_bits },
                end,
            )
        } else {
            let fps_at = mph_end.checked_add(offsets_bytes)?;
            let ords_at = fps_at.checked_add(n.checked_mul(2)?)?;
            let ords = match version {
                VERSION_U32_ORDINALS => n.checked_mul(4)?,
                _ => packed(ord_bits)?,
            };
            let slots = Slots::Split {
                fps_at,
                ords_at,
                ord_bits,
            };
            (mph_end, None, slots, ords_at.checked_add(ords)?)
        };
        Some(Self {
            offsets_at,
            sample_at,
            slots,
            file_bytes: end.checked_add(CHECKSUM_BYTES)?,
        })
    }
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path)
            .field("first", &self.first)
            .field("last", &self.last)
            .field("kind", &self.scheme.kind())
            .field("keys", &self.n)
            .finish()
    }
}

impl Segment {
    /// Opens a segment file: maps it and checks its header and sizes. The
    /// cost does not grow with the file (beyond reading the MPH); the
    /// checksum is left to [`verify`](Self::verify), which `check` and
    /// the background scrub run.
    pub fn open(path: &Path) -> SegmentResult<Self> {
        let file = File::open(path).map_err(SegmentError::io(path, "opening"))?;
        // SAFETY: segment files are immutable once published (written to a
        // temporary name, fsynced, renamed) and only ever unlinked, never
        // truncated or rewritten in place, so the mapping cannot change
        // under us.
        #[allow(unsafe_code)]
        let map = unsafe { Mmap::map(&file) }.map_err(SegmentError::io(path, "mapping"))?;
        let _ = map.advise(memmap2::Advice::Random);
        let corrupt = |detail: String| SegmentError::Corrupt {
            path: path.display().to_string(),
            detail,
        };
        if map.len() < HEADER_BYTES + CHECKSUM_BYTES || &map[..8] != MAGIC {
            return Err(corrupt(
                "not a segment file (bad magic or too short)".into(),
            ));
        }
        let version = u32_at(&map, 8);
        let ord_bits_of = |n: usize| match version {
            VERSION_U32_ORDINALS => Ok(32),
            VERSION_SPLIT | VERSION => Ok(ordinal_bits(n)),
            _ => Err(corrupt(format!(
                "format version {version}, this build reads {VERSION_U32_ORDINALS} to {VERSION}"
            ))),
        };
        let kind = u32_at(&map, 12);
        let scheme = match kind {
            MPH_PREFIX => KeyScheme::Prefix,
            MPH_SALTED_NH => KeyScheme::salted([u64_at(&map, 48), u64_at(&map, 56)]),
            _ => {
                return Err(corrupt(format!(
                    "unknown MPH kind {kind}, this build reads {MPH_PREFIX} and {MPH_SALTED_NH}"
                )));
            }
        };
        let (first, last) = (u32_at(&map, 16), u32_at(&map, 20));
        if first > last {
            return Err(corrupt(format!("empty range {first}..={last}")));
        }
        let n = usize::try_from(u64_at(&map, 24)).map_err(|_| corrupt("key count".into()))?;
        let ord_bits = ord_bits_of(n)?;
        let mph_bytes =
            usize::try_from(u64_at(&map, 32)).map_err(|_| corrupt("MPH size".into()))?;
        let build = Duration::from_micros(u64_at(&map, 40));
        let ledgers = (last - first) as usize + 1;
        let Geometry {
            offsets_at,
            sample_at,
            slots,
            ..
        } = Geometry::of(version, n, ledgers, mph_bytes, ord_bits)
            .filter(|g| g.file_bytes == map.len())
            .ok_or_else(|| {
                corrupt(format!(
                    "{} bytes do not match {n} keys, {ledgers} ledgers and a {mph_bytes}-byte MPH",
                    map.len()
                ))
            })?;
        let mphs = read_mphs(&map[HEADER_BYTES..HEADER_BYTES + mph_bytes], version, n)
            .map_err(|e| corrupt(format!("MPH section: {e}")))?;
        if u32_at(&map, offsets_at + 4 * ledgers) as usize != n {
            return Err(corrupt(format!(
                "the last ledger offset is not the key count {n}"
            )));
        }
        let sample = match sample_at {
            Some(at) => (0..(ledgers + 1).div_ceil(OFFSET_BLOCK))
                .map(|k| u32_at(&map, at + 4 * k))
                .collect(),
            None => Vec::new(),
        };
        let info = info(first, last, n as u64, map.len() as u64, mph_bytes, build);
        Ok(Self {
            first,
            last,
            scheme,
            mphs,
            map,
            path: path.to_path_buf(),
            n,
            offsets_at,
            slots,
            sample,
            filter: std::sync::OnceLock::new(),
            info,
        })
    }

    /// Checks the whole file against its SHA-256 (reads every byte).
    pub fn verify(&self) -> SegmentResult<()> {
        let (body, sum) = self.map.split_at(self.map.len() - CHECKSUM_BYTES);
        if Sha256::digest(body).as_slice() != sum {
            return Err(SegmentError::Corrupt {
                path: self.path.display().to_string(),
                detail: "checksum mismatch".into(),
            });
        }
        Ok(())
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the index sections a lookup reads (ledger offsets,
    /// fingerprints and ordinals or records): the file without its header,
    /// MPH section and checksum.
    pub fn index_bytes(&self) -> u64 {
        (self.map.len() - CHECKSUM_BYTES - self.offsets_at) as u64
    }

    /// Heap bytes the fingerprint filter takes once loaded (2 per key).
    pub fn filter_bytes(&self) -> u64 {
        2 * self.n as u64
    }

    /// True once [`load_filter`](Self::load_filter) has run.
    pub fn filter_loaded(&self) -> bool {
        self.filter.get().is_some()
    }

    /// Copies every slot's 16-bit fingerprint to the heap (2 bytes a key),
    /// so a miss is decided without touching the file, however cold the
    /// page cache. Reads the slot section sequentially (advised `WillNeed`
    /// for the read, `Random` again after).
    pub fn load_filter(&self) {
        if self.filter_loaded() {
            return;
        }
        let (start, end) = match self.slots {
            Slots::Records { at, .. } => (at, self.map.len() - CHECKSUM_BYTES),
            Slots::Split {
                fps_at, ords_at, ..
            } => (fps_at, ords_at),
        };
        let aligned = start / PAGE * PAGE;
        let _ = self
            .map
            .advise_range(memmap2::Advice::WillNeed, aligned, end - aligned);
        let fps: Box<[u16]> = (0..self.n).map(|slot| self.slot(slot).0).collect();
        let _ = self
            .map
            .advise_range(memmap2::Advice::Random, aligned, end - aligned);
        let _ = self.filter.set(fps);
    }

    /// Reads the index sections into the page cache (one sequential read
    /// through a file handle: the map is advised random, which would read
    /// it a page at a time), so later lookups find them in memory. Returns
    /// the bytes read.
    pub fn warm(&self) -> SegmentResult<u64> {
        use std::io::{Read, Seek, SeekFrom};
        let io = |action| SegmentError::io(&self.path, action);
        let mut f = File::open(&self.path).map_err(io("opening"))?;
        f.seek(SeekFrom::Start(self.offsets_at as u64))
            .map_err(io("seeking in"))?;
        let mut left = self.index_bytes();
        let mut buf = vec![0u8; 1 << 20];
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            let n = f.read(&mut buf[..want]).map_err(io("reading"))?;
            if n == 0 {
                break;
            }
            left -= n as u64;
        }
        Ok(self.index_bytes() - left)
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

    /// Partitions (one MPH each).
    pub fn parts(&self) -> usize {
        self.mphs.len()
    }

    /// The position of `hash` if the range may hold it. `None` is certain
    /// for an intact file; `Some` is a candidate that is wrong with
    /// probability 2^-16 for a random hash outside the range, more often
    /// for crafted ones (confirm it against the body). Reads the MPH (on
    /// the heap), then in version 3 one record and one page of offsets.
    pub fn lookup(&self, hash: &[u8; 32]) -> Option<TxPos> {
        let key = self.scheme.key(hash);
        let (base, mph) = &self.mphs[crate::partition(key, self.mphs.len())];
        let slot = base + usize::try_from(mph.get(&key)?).ok()?;
        if slot >= self.n {
            return None;
        }
        if let Some(f) = self.filter.get()
            && f[slot] != fingerprint(hash)
        {
            return None;
        }
        let (fp, ord) = self.slot(slot);
        if fp != fingerprint(hash) {
            return None;
        }
        // The ledger is the last one whose first ordinal is <= ord: first
        // its 1,024-ledger block by the sample (version 3), then within it.
        let ends = (self.last - self.first) as usize + 1;
        let (mut lo, mut hi) = if self.sample.is_empty() {
            (0, ends)
        } else {
            let k = self.sample.partition_point(|&o| o <= ord).checked_sub(1)?;
            (k * OFFSET_BLOCK, ((k + 1) * OFFSET_BLOCK).min(ends))
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.offset(mid) <= ord {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let li = lo.checked_sub(1)?;
        Some(TxPos {
            seq: self.first + li as u32,
            index: ord.checked_sub(self.offset(li))?,
        })
    }

    fn offset(&self, li: usize) -> u32 {
        u32_at(&self.map, self.offsets_at + 4 * li)
    }

    /// The fingerprint and ordinal at `slot`.
    fn slot(&self, slot: usize) -> (u16, u32) {
        match self.slots {
            Slots::Records { at, ord_bits } => {
                let rec = bits_at(&self.map, at, slot, FINGERPRINT_BITS + ord_bits);
                (rec as u16, (rec >> FINGERPRINT_BITS) as u32)
            }
            Slots::Split {
                fps_at,
                ords_at,
                ord_bits,
            } => {
                let at = fps_at + 2 * slot;
                let fp = u16::from_le_bytes([self.map[at], self.map[at + 1]]);
                let ord = if ord_bits == 32 {
                    u32_at(&self.map, ords_at + 4 * slot)
                } else {
                    bits_at(&self.map, ords_at, slot, ord_bits) as u32
                };
                (fp, ord)
            }
        }
    }
}

/// The `i`-th value of `bits` bits (at most 56) packed little-endian from
/// byte `at` (the packing's 8 trailing zero bytes make the read safe).
fn bits_at(map: &[u8], at: usize, i: usize, bits: u32) -> u64 {
    let bit = i as u64 * u64::from(bits);
    let word = u64_at(map, at + (bit / 8) as usize);
    (word >> (bit % 8)) & ((1u64 << bits) - 1)
}

/// The MPHs of a segment's MPH section, each with its first slot. Version
/// 1: one serialized MPH. Version 2: the partition count (`u64`), then per
/// partition its keys and MPH bytes (`u64` each), then the MPHs in order.
fn read_mphs(section: &[u8], version: u32, n: usize) -> Result<Vec<(usize, Mph)>, String> {
    let read = |blob: &[u8]| -> Result<Mph, String> {
        let levels = mph_levels(blob)?;
        let mut src = blob;
        let mph = Mph::read_with_hasher(&mut src, ph::seedable_hash::BuildWyHash)
            .map_err(|e| e.to_string())?;
        if !src.is_empty() || mph.level_sizes() != levels.as_slice() {
            return Err("the MPH does not read back as its sizes say".into());
        }
        Ok(mph)
    };
    if version == VERSION_U32_ORDINALS {
        return Ok(vec![(0, read(section)?)]);
    }
    let word = |i: usize| -> Result<u64, String> {
        section
            .get(8 * i..8 * i + 8)
            .map(|b| u64_at(b, 0))
            .ok_or_else(|| "truncated partition directory".to_string())
    };
    let parts = usize::try_from(word(0)?).map_err(|e| e.to_string())?;
    if parts == 0 || parts > n.max(1) {
        return Err(format!("{parts} partitions for {n} keys"));
    }
    let mut at = 8 + 16 * parts;
    let (mut base, mut out) = (0usize, Vec::with_capacity(parts));
    for p in 0..parts {
        let keys = usize::try_from(word(1 + 2 * p)?).map_err(|e| e.to_string())?;
        let len = usize::try_from(word(2 + 2 * p)?).map_err(|e| e.to_string())?;
        let blob = at
            .checked_add(len)
            .and_then(|end| section.get(at..end))
            .ok_or_else(|| format!("partition {p}'s MPH runs past the section"))?;
        out.push((base, read(blob)?));
        base = base
            .checked_add(keys)
            .ok_or_else(|| "partition sizes overflow".to_string())?;
        at += len;
    }
    if base != n || at != section.len() {
        return Err(format!(
            "partitions hold {base} keys in {at} bytes, the header says {n} keys in {}",
            section.len()
        ));
    }
    Ok(out)
}

/// Bits per group and per group seed of [`Mph`] (`TwoToPowerBitsStatic`
/// 4 and 2).
const MPH_GROUP_BITS: usize = 16;
const MPH_SEED_BITS: usize = 4;

/// The level sizes (in groups) of a serialized [`Mph`], once its fields
/// add up to exactly `blob.len()` and no level is empty. `ph` trusts what
/// it reads: it sizes allocations from these fields, and its lookups index
/// the arrays with unchecked reads, so a damaged or crafted MPH must be
/// refused here, before it is deserialized. The layout (`GOFunction::write`):
/// the group size (one byte, which `ph` checks), the level count and each
/// level's size (binout `VByte`), the bit array (`16 × groups` bits as
/// `u64`s), the seed size (one byte, checked by `ph`), and the group seeds
/// (`4 × groups` bits as `u64`s).
fn mph_levels(blob: &[u8]) -> Result<Vec<usize>, String> {
    let mut at = 1;
    let count = vbyte(blob, &mut at)?;
    if count > blob.len() {
        return Err(format!("{count} MPH levels in {} bytes", blob.len()));
    }
    let mut levels = Vec::with_capacity(count);
    let mut groups = 0usize;
    for level in 0..count {
        let size = vbyte(blob, &mut at)?;
        if size == 0 {
            return Err(format!("MPH level {level} is empty"));
        }
        groups = groups
            .checked_add(size)
            .ok_or_else(|| "MPH level sizes overflow".to_string())?;
        levels.push(size);
    }
    let words = |bits: usize| groups.checked_mul(bits).map(|b| b.div_ceil(64) * 8);
    let need = words(MPH_GROUP_BITS)
        .zip(words(MPH_SEED_BITS))
        .and_then(|(array, seeds)| at.checked_add(array)?.checked_add(1)?.checked_add(seeds));
    if need != Some(blob.len()) {
        return Err(format!(
            "an MPH of {count} levels and {groups} groups does not fill its {} bytes",
            blob.len()
        ));
    }
    Ok(levels)
}

/// One binout `VByte` integer at `*at`: 7 bits a byte, low first, while
/// the high bit is set; a 9th byte holds its 8 bits whole.
fn vbyte(blob: &[u8], at: &mut usize) -> Result<usize, String> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let byte = *blob.get(*at).ok_or_else(|| "truncated MPH".to_string())?;
        *at += 1;
        if shift == 56 {
            value |= u64::from(byte) << 56;
            break;
        }
        value |= u64::from(byte & 0x7F) << shift;
        if byte < 0x80 {
            break;
        }
        shift += 7;
    }
    usize::try_from(value).map_err(|e| e.to_string())
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(w)
}
