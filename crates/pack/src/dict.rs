//! A version-4 pack's dictionary: raw bytes that every frame of the pack
//! was compressed against, as zstd's "raw content" dictionary, sampled
//! from the pack's own ledgers ([`dict_samples`]).
//!
//! It has two forms. A writer makes a [`FrameDict`]: the raw bytes (what
//! compression tables are built from and the fingerprint is taken of)
//! and their stored form. A reader opens a [`DictReader`] from the stored
//! form: zstd's decompression dictionary alone, which holds its own copy
//! of the bytes, so a reader that keeps many (a replica) keeps each once.
//! A reader that opens one again and again keeps it on its own disk
//! [`DictReader::unpacked`] (raw, with a CRC-32), which opens without
//! decompressing.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};
use zstd::dict::DecoderDictionary;

use crate::error::{PackError, PackResult};
use crate::format::{Header, MAX_DICT};

/// Slots of a range a dictionary's samples are taken from (31 of them,
/// the odd ones last).
const DICT_SLOTS: u64 = 32;

/// The ledgers of `first..=last` a pack's dictionary is sampled from, in
/// the order they are taken: the middle of the range first, then its
/// quarters, then its eighths, sixteenths and thirty-seconds, so that
/// whatever the budget holds is spread across the range. At most 31, each
/// once.
pub fn dict_samples(first: u32, last: u32) -> Vec<u32> {
    let n = u64::from(last.saturating_sub(first)) + 1;
    let mut out: Vec<u32> = Vec::new();
    // Slot j of DICT_SLOTS: the middle is slot 16, the quarters 8 and 24,
    // and so on (odd slots last).
    for step in [16u64, 8, 4, 2, 1] {
        let mut j = step;
        while j < DICT_SLOTS {
            if (j / step) % 2 == 1 {
                let seq = u64::from(first) + n * j / DICT_SLOTS;
                let seq = u32::try_from(seq.min(u64::from(last))).unwrap_or(last);
                if !out.contains(&seq) {
                    out.push(seq);
                }
            }
            j += step;
        }
    }
    out
}

/// The first bytes of a zstd-format dictionary (0xEC30A437, little
/// endian). zstd would parse raw bytes that begin so as its own format,
/// so a raw dictionary must not (a frame's content begins with its part
/// count, which is never this large).
const ZSTD_DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];

/// A version-4 pack's dictionary as its writer makes it: raw bytes that
/// every frame of the pack is compressed against, as zstd's "raw content"
/// dictionary (sampled frames' contents, [`FrameDict::sampled`]), and the
/// form the pack stores them in.
pub struct FrameDict {
    raw: Vec<u8>,
    /// The stored form: a zstd frame of `raw`.
    stored: Vec<u8>,
    /// [`FrameDict::fingerprint`], made when first asked.
    fingerprint: OnceLock<u64>,
}

impl std::fmt::Debug for FrameDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameDict")
            .field("raw", &self.raw.len())
            .field("stored", &self.stored.len())
            .finish()
    }
}

/// A version-4 pack's dictionary as a reader holds it
/// ([`DictReader::open`]): zstd's decompression dictionary, which keeps
/// the only copy of the raw bytes, and their length. What
/// [`crate::LedgerFrame::open`] decompresses a version-4 frame with.
pub struct DictReader {
    decoder: DecoderDictionary<'static>,
    raw_len: usize,
}

impl std::fmt::Debug for DictReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DictReader")
            .field("raw_len", &self.raw_len)
            .finish()
    }
}

impl FrameDict {
    /// The dictionary of the frame contents `samples` ([`crate::frame_content`]
    /// of the ledgers of [`dict_samples`], in that order of priority), up
    /// to `budget` bytes (at most [`MAX_DICT`]): each whole while it fits,
    /// the beginning of the one that does not, laid out with the first
    /// sample **last**, since zstd's compressor indexes only a
    /// dictionary's last `1 << max(hashLog + 3, chainLog + 1)` bytes (128
    /// KiB at level 1, 512 KiB at 2, 1 MiB at 3, 2 MiB at 4, 4 MiB at 6)
    /// and finds those nearest cheapest.
    /// It is stored compressed at zstd `level`.
    pub fn sampled<I: IntoIterator<Item = Vec<u8>>>(
        samples: I,
        budget: usize,
        level: i32,
    ) -> PackResult<Self> {
        let budget = budget.min(MAX_DICT as usize);
        let mut taken: Vec<Vec<u8>> = Vec::new();
        let mut len = 0;
        for mut s in samples {
            s.truncate(budget - len);
            len += s.len();
            taken.push(s);
            if len == budget {
                break;
            }
        }
        let raw: Vec<u8> = taken.into_iter().rev().flatten().collect();
        if raw.is_empty() {
            return Err(PackError::Format("a dictionary of no bytes".into()));
        }
        if raw.starts_with(&ZSTD_DICT_MAGIC) {
            return Err(PackError::Format(
                "a dictionary that begins with zstd's dictionary magic".into(),
            ));
        }
        let stored = zstd::bulk::compress(&raw, level)
            .map_err(|e| PackError::Format(format!("compressing a dictionary: {e}")))?;
        Ok(Self {
            raw,
            stored,
            fingerprint: OnceLock::new(),
        })
    }

    /// Pack `first..=last`'s dictionary from its own ledgers: the frame
    /// contents ([`crate::frame_content`]) `content` gives for the ledgers of
    /// [`dict_samples`], in that order, read no further than `budget`
    /// bytes hold (a ledger it gives none for, one not stored, is
    /// skipped), made into [`FrameDict::sampled`]; `None` if it gives
    /// none.
    pub fn of_ledgers<E: From<PackError>>(
        first: u32,
        last: u32,
        budget: usize,
        level: i32,
        mut content: impl FnMut(u32) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<Option<Self>, E> {
        let mut samples = Vec::new();
        let mut bytes = 0;
        for seq in dict_samples(first, last) {
            if bytes >= budget {
                break;
            }
            let Some(c) = content(seq)? else {
                continue;
            };
            bytes += c.len();
            samples.push(c);
        }
        if samples.is_empty() {
            return Ok(None);
        }
        Ok(Some(Self::sampled(samples, budget, level)?))
    }

    /// The first 8 bytes of the SHA-256 of its bytes: what tells it from
    /// another dictionary. A pack writer checks with it that each frame
    /// was compressed with the pack's own dictionary. Made once, when
    /// first asked (~1 ms for 1 MiB, once a pack).
    pub fn fingerprint(&self) -> u64 {
        *self.fingerprint.get_or_init(|| {
            let digest = Sha256::digest(&self.raw);
            let mut first = [0u8; 8];
            first.copy_from_slice(&digest[..8]);
            u64::from_be_bytes(first)
        })
    }

    /// The dictionary's raw bytes.
    pub fn raw(&self) -> &[u8] {
        &self.raw
    }

    /// The dictionary as the pack stores it (a zstd frame; its CRC-32
    /// follows it in the pack).
    pub fn stored(&self) -> &[u8] {
        &self.stored
    }
}

/// `bytes` (at least 4) without their last 4, a big-endian CRC-32 of the
/// rest, which is checked.
fn without_crc(bytes: &[u8]) -> Result<&[u8], String> {
    let (body, crc) = bytes.split_at(bytes.len().saturating_sub(4));
    let got = crc32fast::hash(body);
    let want = crc
        .try_into()
        .map(u32::from_be_bytes)
        .map_err(|_| format!("{} bytes, fewer than its CRC-32's 4", bytes.len()))?;
    if got != want {
        return Err(format!("fails its CRC-32 ({got:08x}, expected {want:08x})"));
    }
    Ok(body)
}

impl DictReader {
    /// The dictionary read back from a version-4 pack's bytes at
    /// [`Header::dict_range`]: its CRC-32, a zstd frame declaring at most
    /// [`MAX_DICT`] bytes, only that much allocated.
    pub fn open(h: &Header, bytes: &[u8]) -> PackResult<Self> {
        Self::of_raw(&Self::raw_of(h, bytes)?)
    }

    /// The raw bytes of the dictionary a version-4 pack stores at
    /// [`Header::dict_range`] (`bytes`), checked as [`Self::open`] checks
    /// them: what a reader keeps to open it again without decompressing
    /// ([`Self::unpacked`]).
    pub fn raw_of(h: &Header, bytes: &[u8]) -> PackResult<Vec<u8>> {
        let bad = |what: String| PackError::Format(format!("the pack's dictionary: {what}"));
        let want = h
            .dict_range()
            .ok_or_else(|| bad(format!("asked of a version-{} pack", h.version)))?;
        if bytes.len() as u64 != want.end - want.start || bytes.len() < 5 {
            return Err(bad(format!(
                "{} bytes, expected {}",
                bytes.len(),
                want.end - want.start
            )));
        }
        let stored = without_crc(bytes).map_err(bad)?;
        let declared = match zstd::zstd_safe::get_frame_content_size(stored) {
            Ok(Some(n)) if (1..=MAX_DICT).contains(&n) => n as usize,
            Ok(Some(n)) => return Err(bad(format!("declares {n} bytes, not 1..={MAX_DICT}"))),
            Ok(None) => return Err(bad("declares no size".into())),
            Err(e) => return Err(bad(format!("is not a zstd frame: {e:?}"))),
        };
        let raw = zstd::bulk::decompress(stored, declared)
            .map_err(|e| bad(format!("does not decompress: {e}")))?;
        if raw.len() != declared {
            return Err(bad(format!(
                "decompresses to {} bytes; it declares {declared}",
                raw.len()
            )));
        }
        Ok(raw)
    }

    /// zstd's dictionary of `raw` ([`Self::raw_of`]): 1..=[`MAX_DICT`]
    /// bytes, not beginning with zstd's own dictionary magic.
    pub fn of_raw(raw: &[u8]) -> PackResult<Self> {
        let bad = |what: String| PackError::Format(format!("the dictionary: {what}"));
        if raw.is_empty() || raw.len() as u64 > MAX_DICT {
            return Err(bad(format!("{} bytes raw, not 1..={MAX_DICT}", raw.len())));
        }
        // zstd would parse it as its own format (and refuse it with a
        // null, which its Rust binding does not survive).
        if raw.starts_with(&ZSTD_DICT_MAGIC) {
            return Err(bad("begins with zstd's dictionary magic".into()));
        }
        // zstd copies the bytes into its dictionary; `raw` is not kept.
        Ok(Self {
            decoder: DecoderDictionary::copy(raw),
            raw_len: raw.len(),
        })
    }

    /// The form a reader keeps a dictionary in on its own disk, to open it
    /// again without decompressing it ([`Self::of_unpacked`]): `raw`, then
    /// its CRC-32 (big-endian), which is all a read of it checks. About 6×
    /// the stored form's bytes (~1 MiB at the default budget, against
    /// ~160–180 KB), for ~0.3 ms less CPU an open.
    pub fn unpacked(raw: &[u8]) -> Vec<u8> {
        [raw, &Self::unpacked_crc(raw)].concat()
    }

    /// The last 4 bytes of [`Self::unpacked`] of `raw`, for a writer that
    /// writes `raw` and them without copying `raw`.
    pub fn unpacked_crc(raw: &[u8]) -> [u8; 4] {
        crc32fast::hash(raw).to_be_bytes()
    }

    /// The dictionary from its [`Self::unpacked`] form, its CRC-32 checked.
    pub fn of_unpacked(bytes: &[u8]) -> PackResult<Self> {
        let raw = without_crc(bytes)
            .map_err(|e| PackError::Format(format!("an unpacked dictionary: {e}")))?;
        Self::of_raw(raw)
    }

    /// The dictionary's length in bytes, raw.
    pub fn raw_len(&self) -> usize {
        self.raw_len
    }

    /// What holding it costs in memory: zstd's dictionary, as zstd
    /// counts it (the raw bytes, which it holds the only copy of, and
    /// its tables, ~27 KiB).
    pub fn memory(&self) -> usize {
        self.decoder.as_ddict().sizeof()
    }

    /// zstd's dictionary, for decompressing a frame.
    pub(crate) fn decoder(&self) -> &DecoderDictionary<'static> {
        &self.decoder
    }
}
