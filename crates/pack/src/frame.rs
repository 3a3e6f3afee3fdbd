//! A ledger frame (pack versions 3 and 4): one ledger's stored record and
//! bodies in one zstd frame, so that they compress together as the lake's
//! per-ledger objects do. In version 4 every frame of a pack is compressed
//! with the pack's dictionary ([`FrameDict`]): the raw contents of a few of
//! its own ledgers' frames, spread across its range ([`crate::dict_samples`]), so
//! a ledger compresses against its neighbours' structure, accounts and
//! contracts, and a read still decompresses one ledger.
//!
//! ```text
//! the frame decompresses to (integers big-endian):
//!   u32 parts: 1 + the ledger's bodies
//!   u32 length of each part, in order: the record, then each body
//!   the parts' bytes, back to back
//! ```
//!
//! The parts are the store's values as they are (a record raw or a zstd
//! frame; bodies raw, since the publisher decompresses one a `records`
//! dir compressed alone), so a reader decodes them as it decodes the
//! store's own. The ledger table entry's CRC-32 covers the frame's
//! compressed bytes; [`LedgerFrame::open`] checks it, allocates only the
//! size the frame declares and refuses one above the header's `max_raw`
//! or [`MAX_FRAME_RAW`], and checks that the parts fill the frame exactly
//! and that there are as many bodies as the ledger table says.

use std::ops::Range;

use zstd::dict::EncoderDictionary;

use crate::dict::{DictReader, FrameDict};
use crate::error::{PackError, PackResult};
use crate::format::{Header, LedgerEntry};

/// The zstd level of ledger frames unless configured (`[cold]
/// pack_zstd_level`).
pub const DEFAULT_FRAME_LEVEL: i32 = 3;

/// The most a ledger frame may decompress to, whatever its pack's header
/// says: the store's own bound on any decompression (1 GiB, db-api's
/// `MAX_DECOMPRESSED_BYTES`), so a damaged or hostile pack cannot make a
/// reader allocate more.
pub const MAX_FRAME_RAW: u64 = 1 << 30;

/// The dictionary budget unless configured (`[cold] pack_dict_kib`)
/// (docs/benchmarks.md, "Packs with their own dictionary").
pub const DEFAULT_DICT_KIB: u32 = 1024;

/// The form a publisher writes packs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackForm {
    /// Version 2: a record or body a frame of its own (what builds before
    /// version 3 read).
    Entries,
    /// Version 3 (`dict_kib` 0): a ledger's record and bodies one zstd
    /// frame at `level`; version 4: compressed with a dictionary of up to
    /// `dict_kib` KiB sampled from the pack's own ledgers.
    Frames {
        /// The zstd level.
        level: i32,
        /// The dictionary's budget, KiB (0: none, version 3).
        dict_kib: u32,
    },
}

impl PackForm {
    /// The pack format version this form writes: 2, 3 or 4.
    pub fn version(self) -> u32 {
        match self {
            Self::Entries => crate::format::VERSION,
            Self::Frames { dict_kib: 0, .. } => crate::format::VERSION_3,
            Self::Frames { .. } => crate::format::VERSION_4,
        }
    }
}

/// Version 2, which every build reads: what the cold crate's publish
/// functions write unless given a form. (The binary's default, `[cold]
/// pack_version` unset, goes on in the version of a store's newest pack,
/// and writes version 4 into a store with none.)
impl Default for PackForm {
    fn default() -> Self {
        Self::Entries
    }
}

/// A ledger's frame, ready for [`crate::PackWriter::push_frame`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Framed {
    /// The zstd frame.
    pub frame: Vec<u8>,
    /// Its bytes decompressed.
    pub raw_len: u32,
    /// Bodies in it.
    pub bodies: u32,
    /// The [`FrameDict::fingerprint`] of the dictionary it was compressed with
    /// (version 4), or none (version 3).
    pub dict: Option<u64>,
}

/// Compresses a ledger's stored record and bodies (position order) into
/// one frame at zstd `level`, without a dictionary (version 3); a ledger
/// past [`MAX_FRAME_RAW`] is refused.
pub fn frame_ledger<B: AsRef<[u8]>>(record: &[u8], bodies: &[B], level: i32) -> PackResult<Framed> {
    FrameEncoder::new(level, None).frame(record, bodies)
}

/// What a ledger's frame decompresses to: the part count, the parts'
/// lengths, then the parts (the module's layout). A ledger past
/// [`MAX_FRAME_RAW`] is refused.
pub fn frame_content<B: AsRef<[u8]>>(record: &[u8], bodies: &[B]) -> PackResult<Vec<u8>> {
    let too_big = |what: &str| PackError::Format(format!("a ledger frame: {what} exceeds 4 GiB"));
    let n = u32::try_from(bodies.len()).map_err(|_| too_big("the body count"))?;
    let parts = n.checked_add(1).ok_or_else(|| too_big("the body count"))?;
    let body_bytes: usize = bodies.iter().map(|b| b.as_ref().len()).sum();
    let len = 4 + 4 * (parts as usize) + record.len() + body_bytes;
    if len as u64 > MAX_FRAME_RAW {
        return Err(PackError::Format(format!(
            "a ledger frame of {len} bytes exceeds the {MAX_FRAME_RAW} a reader allows"
        )));
    }
    let mut raw = Vec::with_capacity(len);
    raw.extend_from_slice(&parts.to_be_bytes());
    let part_len = |b: &[u8]| u32::try_from(b.len()).map_err(|_| too_big("a part"));
    raw.extend_from_slice(&part_len(record)?.to_be_bytes());
    for b in bodies {
        raw.extend_from_slice(&part_len(b.as_ref())?.to_be_bytes());
    }
    raw.extend_from_slice(record);
    for b in bodies {
        raw.extend_from_slice(b.as_ref());
    }
    Ok(raw)
}

/// Compresses ledger frames at one zstd level, with or without a pack's
/// dictionary (its compression tables built once, shared by threads).
pub struct FrameEncoder {
    level: i32,
    dict: Option<EncoderDictionary<'static>>,
    dict_id: Option<u64>,
}

impl std::fmt::Debug for FrameEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameEncoder")
            .field("level", &self.level)
            .field("dict", &self.dict.is_some())
            .finish()
    }
}

impl FrameEncoder {
    /// An encoder at zstd `level`, with the raw dictionary `dict` (version
    /// 4) or without one (version 3).
    pub fn new(level: i32, dict: Option<&FrameDict>) -> Self {
        Self {
            level,
            dict: dict.map(|d| EncoderDictionary::copy(d.raw(), level)),
            dict_id: dict.map(FrameDict::fingerprint),
        }
    }

    /// A ledger's stored record and bodies (position order) as one frame.
    pub fn frame<B: AsRef<[u8]>>(&self, record: &[u8], bodies: &[B]) -> PackResult<Framed> {
        let raw = frame_content(record, bodies)?;
        let raw_len = u32::try_from(raw.len())
            .map_err(|_| PackError::Format(format!("a ledger frame of {} bytes", raw.len())))?;
        let failed =
            |e: std::io::Error| PackError::Format(format!("compressing a ledger frame: {e}"));
        let mut frame = match &self.dict {
            None => zstd::bulk::compress(&raw, self.level).map_err(failed)?,
            // With zstd's checksum of the content (4 bytes; ~7% of a
            // lookup's CPU, docs/benchmarks.md): a frame decompressed with
            // another dictionary fails (but for a 2^-32 chance). Without
            // it, it yields other bytes whose parts may well add up.
            Some(d) => zstd::bulk::Compressor::with_prepared_dictionary(d)
                .and_then(|mut c| {
                    c.set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))?;
                    c.compress(&raw)
                })
                .map_err(failed)?,
        };
        // zstd's buffer is sized for the raw bytes; a chunk holds frames.
        frame.shrink_to_fit();
        Ok(Framed {
            frame,
            raw_len,
            bodies: u32::try_from(bodies.len()).unwrap_or(u32::MAX),
            dict: self.dict_id,
        })
    }
}

/// A ledger frame read back and checked.
#[derive(Debug, Clone)]
pub struct LedgerFrame {
    raw: Vec<u8>,
    parts: Vec<Range<usize>>,
}

impl LedgerFrame {
    /// Opens the frame `bytes` of ledger entry `le` of a version-3 pack
    /// with header `h` (version 4: with its dictionary `dict`): its
    /// CRC-32, a decompression of the size it declares, at most
    /// `h.max_raw` and [`MAX_FRAME_RAW`] bytes, and parts that fill it,
    /// one record and `le.bodies` bodies.
    pub fn open(
        h: &Header,
        le: &LedgerEntry,
        bytes: &[u8],
        dict: Option<&DictReader>,
    ) -> PackResult<Self> {
        if !h.frames() {
            return Err(PackError::Format(format!(
                "a ledger frame read from a version-{} pack",
                h.version
            )));
        }
        if h.dict_range().is_some() != dict.is_some() {
            return Err(PackError::Format(format!(
                "a ledger frame of a version-{} pack opened {} a dictionary",
                h.version,
                if dict.is_some() { "with" } else { "without" }
            )));
        }
        le.record.check(bytes)?;
        let bad = |what: String| PackError::Format(format!("the ledger frame: {what}"));
        // The size the frame declares (the writer always declares it),
        // no larger than the pack's largest: all that is allocated.
        let declared = match zstd::zstd_safe::get_frame_content_size(bytes) {
            Ok(Some(n)) if n <= u64::from(h.max_raw) && n <= MAX_FRAME_RAW => n as usize,
            Ok(Some(n)) => {
                return Err(bad(format!(
                    "declares {n} bytes, more than the pack's largest frame ({} bytes) or \
                     {MAX_FRAME_RAW}",
                    h.max_raw
                )));
            }
            Ok(None) => return Err(bad("declares no size".into())),
            Err(e) => return Err(bad(format!("is not a zstd frame: {e:?}"))),
        };
        let raw = match dict {
            None => zstd::bulk::decompress(bytes, declared),
            Some(d) => zstd::bulk::Decompressor::with_prepared_dictionary(d.decoder())
                .and_then(|mut z| z.decompress(bytes, declared)),
        }
        .map_err(|e| bad(format!("does not decompress: {e}")))?;
        if raw.len() != declared {
            return Err(bad(format!(
                "decompresses to {} bytes; it declares {declared}",
                raw.len()
            )));
        }
        let word = |i: usize| -> Option<usize> {
            let b = raw.get(i * 4..i * 4 + 4)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
        };
        let parts = word(0).ok_or_else(|| bad(format!("{} bytes, no part count", raw.len())))?;
        if parts as u64 != u64::from(le.bodies) + 1 {
            return Err(bad(format!(
                "{parts} parts, expected the record and {} bodies",
                le.bodies
            )));
        }
        // Checked before anything is allocated for them: every part has
        // its length word.
        let mut at = 4 + 4 * parts;
        if at > raw.len() {
            return Err(bad(format!(
                "{} bytes, too few for the lengths of its {parts} parts",
                raw.len()
            )));
        }
        let mut ranges = Vec::with_capacity(parts);
        for i in 0..parts {
            let len = word(1 + i).ok_or_else(|| bad(format!("part {i}'s length is missing")))?;
            let end = at
                .checked_add(len)
                .filter(|e| *e <= raw.len())
                .ok_or_else(|| {
                    bad(format!(
                        "part {i} ({len} bytes at {at}) lies past its end ({} bytes)",
                        raw.len()
                    ))
                })?;
            ranges.push(at..end);
            at = end;
        }
        if at != raw.len() {
            return Err(bad(format!(
                "its parts end at {at} of its {} bytes",
                raw.len()
            )));
        }
        Ok(Self { raw, parts: ranges })
    }

    /// The ledger's stored record.
    pub fn record(&self) -> &[u8] {
        &self.raw[self.parts[0].clone()]
    }

    /// Body `index` of the ledger (position order).
    pub fn body(&self, index: u32) -> PackResult<&[u8]> {
        self.parts
            .get(1 + index as usize)
            .map(|r| &self.raw[r.clone()])
            .ok_or_else(|| {
                PackError::Format(format!(
                    "body {index} asked of a ledger frame of {} bodies",
                    self.parts.len() - 1
                ))
            })
    }

    /// The ledger's bodies (position order).
    pub fn bodies(&self) -> impl Iterator<Item = &[u8]> {
        self.parts[1..].iter().map(|r| &self.raw[r.clone()])
    }

    /// Bytes decompressed.
    pub fn raw_len(&self) -> usize {
        self.raw.len()
    }
}
