//! The hash list of a base range: every tx hash of `first..=last` in
//! position order, the source that merges and repairs rebuild segments
//! from (a segment's MPH cannot list its keys).
//!
//! # File layout (`hashes-<first>-<last>.bin`, integers little-endian)
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `LSHASHES` |
//! | 8 | 4 | format version (1) |
//! | 12 | 4 | reserved (zero) |
//! | 16 | 4 | first ledger |
//! | 20 | 4 | last ledger |
//! | 24 | 8 | hashes `n` |
//! | 32 | `4 × (ledgers + 1)` | ordinal of each ledger's first tx; the last entry is `n` |
//! | | `32 × n` | the hashes, in ordinal order (ledger order, then apply order) |
//! | | 32 | SHA-256 of everything before it |
//!
//! Written to a temporary name, fsynced and renamed into place like a
//! segment. Read sequentially; the checksum is checked before a reader
//! returns, so a torn or flipped file never feeds a build.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::hashing::HashingWriter;
use crate::{SegmentError, SegmentResult, TxPos};

const MAGIC: &[u8; 8] = b"LSHASHES";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 32;

/// The file name of the hash list of `first..=last`.
pub fn file_name(first: u32, last: u32) -> String {
    format!("hashes-{first:010}-{last:010}.bin")
}

/// Parses a hash-list file name back into its range.
pub fn parse_file_name(name: &str) -> Option<(u32, u32)> {
    let range = name.strip_prefix("hashes-")?.strip_suffix(".bin")?;
    crate::parse_file_name(&format!("seg-{range}.idx"))
}

/// Writes the hash list of `first..=last` to `path` through a temporary
/// file in the same directory, fsyncs it and renames it into place.
pub(crate) fn write<'a>(
    path: &Path,
    first: u32,
    last: u32,
    offsets: &[u32],
    hashes: impl ExactSizeIterator<Item = &'a [u8; 32]>,
) -> SegmentResult<()> {
    let tmp = tmp_path(path);
    let written = write_at(&tmp, path, first, last, offsets, hashes);
    if written.is_err() {
        // Its name is this write's own: nobody else removes it before the
        // next writable open.
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn write_at<'a>(
    tmp: &Path,
    path: &Path,
    first: u32,
    last: u32,
    offsets: &[u32],
    hashes: impl ExactSizeIterator<Item = &'a [u8; 32]>,
) -> SegmentResult<()> {
    let io = |action| SegmentError::io(tmp, action);
    let file = File::create(tmp).map_err(io("creating"))?;
    let mut w = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&0u32.to_le_bytes());
    header.extend_from_slice(&first.to_le_bytes());
    header.extend_from_slice(&last.to_le_bytes());
    header.extend_from_slice(&(hashes.len() as u64).to_le_bytes());
    w.write_all(&header).map_err(io("writing"))?;
    for o in offsets {
        w.write_all(&o.to_le_bytes()).map_err(io("writing"))?;
    }
    for h in hashes {
        w.write_all(h).map_err(io("writing"))?;
    }
    let digest = w.digest();
    let mut inner = w.into_inner();
    inner.write_all(&digest).map_err(io("writing"))?;
    let file = inner
        .into_inner()
        .map_err(|e| SegmentError::io(tmp, "flushing")(e.into_error()))?;
    file.sync_all().map_err(io("syncing"))?;
    std::fs::rename(tmp, path).map_err(SegmentError::io(path, "renaming into place"))?;
    if let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(SegmentError::io(dir, "syncing"))?;
    }
    Ok(())
}

/// Writes the hash list of `first..=last` from `(hash, position)` pairs in
/// position order with dense apply indexes (as [`read`] returns them and
/// ledger records list them).
pub fn write_list(
    path: &Path,
    first: u32,
    last: u32,
    entries: &[([u8; 32], TxPos)],
) -> SegmentResult<()> {
    let ledgers = (last - first) as usize + 1;
    let mut counts = vec![0u32; ledgers];
    let mut prev: Option<TxPos> = None;
    for (i, (_, pos)) in entries.iter().enumerate() {
        let li = pos
            .seq
            .checked_sub(first)
            .map(|l| l as usize)
            .filter(|l| *l < ledgers);
        match li {
            Some(li) if counts[li] == pos.index && prev.is_none_or(|p| p < *pos) => {
                counts[li] += 1;
            }
            _ => {
                return Err(SegmentError::Invalid(format!(
                    "hash list of {first}..={last}: entry {i} at ledger {} index {} is out of position order",
                    pos.seq, pos.index
                )));
            }
        }
        prev = Some(*pos);
    }
    let mut offsets = vec![0u32; ledgers + 1];
    for (li, c) in counts.iter().enumerate() {
        offsets[li + 1] = offsets[li] + c;
    }
    write(path, first, last, &offsets, entries.iter().map(|e| &e.0))
}

/// A temporary name of its own for each write (`tmp-<pid>-<n>-<name>`):
/// two threads writing the same list (an eviction and a repair) each
/// rename a whole file into place, never one truncated by the other.
fn tmp_path(path: &Path) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    path.with_file_name(format!("tmp-{}-{n}-{name}", std::process::id()))
}

/// Reads the hash list at `path`, which must cover `first..=last`, and
/// returns its `(hash, position)` pairs in position order once the whole
/// file has matched its checksum.
pub fn read(path: &Path, first: u32, last: u32) -> SegmentResult<Vec<([u8; 32], TxPos)>> {
    let mut out = Vec::new();
    scan(path, first, last, |seq, hashes| {
        out.extend(hashes.iter().enumerate().map(|(i, h)| {
            (
                *h,
                TxPos {
                    seq,
                    index: i as u32,
                },
            )
        }));
        Ok(())
    })?;
    Ok(out)
}

/// The count of the hash list at `path` from its header, once the header
/// names `first..=last` and the file's length matches it (reads 32 bytes;
/// [`scan`] checks the checksum).
pub fn count(path: &Path, first: u32, last: u32) -> SegmentResult<u64> {
    open_checked(path, first, last).map(|(_, _, n)| n)
}

/// Opens the hash list at `path` and checks its header (magic, version,
/// range) and that the file's length matches its count; returns the file,
/// positioned after the header, the header, and the count.
fn open_checked(
    path: &Path,
    first: u32,
    last: u32,
) -> SegmentResult<(File, [u8; HEADER_BYTES], u64)> {
    let corrupt = |detail: String| SegmentError::Corrupt {
        path: path.display().to_string(),
        detail,
    };
    let mut file = File::open(path).map_err(SegmentError::io(path, "opening"))?;
    let len = file
        .metadata()
        .map_err(SegmentError::io(path, "reading the size of"))?
        .len();
    if len < (HEADER_BYTES + 32) as u64 {
        return Err(corrupt("not a hash list (too short)".into()));
    }
    let mut header = [0u8; HEADER_BYTES];
    file.read_exact(&mut header)
        .map_err(SegmentError::io(path, "reading"))?;
    let u32_at =
        |o: usize| u32::from_le_bytes([header[o], header[o + 1], header[o + 2], header[o + 3]]);
    if &header[..8] != MAGIC || u32_at(8) != VERSION {
        return Err(corrupt("not a hash list (bad magic or version)".into()));
    }
    if (u32_at(16), u32_at(20)) != (first, last) {
        return Err(corrupt(format!(
            "holds ledgers {}..={}, expected {first}..={last}",
            u32_at(16),
            u32_at(20)
        )));
    }
    let mut n8 = [0u8; 8];
    n8.copy_from_slice(&header[24..32]);
    let n = u64::from_le_bytes(n8);
    // The range is the caller's (from a file name or the manifest), so it
    // may be empty; `n` is the file's, so it may be anything.
    let Some(ledgers) = last.checked_sub(first).map(|d| u64::from(d) + 1) else {
        return Err(corrupt(format!(
            "asked for the empty range {first}..={last}"
        )));
    };
    let expected = n
        .checked_mul(32)
        .and_then(|h| h.checked_add(HEADER_BYTES as u64 + 4 * (ledgers + 1) + 32));
    if expected != Some(len) {
        return Err(corrupt(format!(
            "{len} bytes do not match {n} hashes over {ledgers} ledgers ({} expected)",
            expected.map_or("more than 2^64".to_string(), |e| e.to_string())
        )));
    }
    Ok((file, header, n))
}

/// Reads the whole hash list against its checksum and returns its count.
pub fn verify(path: &Path, first: u32, last: u32) -> SegmentResult<u64> {
    scan(path, first, last, |_, _| Ok(()))
}

/// Calls `f` with each ledger's hashes in order (ledgers without
/// transactions are skipped), then checks the checksum; returns the count.
/// An error after `f` saw data means the file changed or is damaged:
/// discard what `f` built.
pub fn scan(
    path: &Path,
    first: u32,
    last: u32,
    mut f: impl FnMut(u32, &[[u8; 32]]) -> SegmentResult<()>,
) -> SegmentResult<u64> {
    let corrupt = |detail: String| SegmentError::Corrupt {
        path: path.display().to_string(),
        detail,
    };
    let (file, header, n) = open_checked(path, first, last)?;
    let ledgers = u64::from(last - first) + 1;
    let mut r = BufReader::with_capacity(1 << 20, file);
    let mut sha = Sha256::new();
    sha.update(header);
    // The error (and its path string) only when a read fails: made for
    // every read, it was ~1% of a backfill's CPU.
    let mut read_exact = |buf: &mut [u8]| -> SegmentResult<()> {
        r.read_exact(buf)
            .map_err(|e| SegmentError::io(path, "reading")(e))?;
        sha.update(&*buf);
        Ok(())
    };
    let mut offsets = Vec::with_capacity(ledgers as usize + 1);
    let mut b4 = [0u8; 4];
    for _ in 0..=ledgers {
        read_exact(&mut b4)?;
        offsets.push(u32::from_le_bytes(b4));
    }
    if offsets.windows(2).any(|w| w[0] > w[1]) || u64::from(offsets[ledgers as usize]) != n {
        return Err(corrupt("ledger offsets are not a prefix sum of n".into()));
    }
    let mut hashes = Vec::new();
    for (li, w) in offsets.windows(2).enumerate() {
        let count = (w[1] - w[0]) as usize;
        if count == 0 {
            continue;
        }
        hashes.resize(count, [0u8; 32]);
        read_exact(hashes.as_flattened_mut())?;
        f(first + li as u32, &hashes)?;
    }
    let mut sum = [0u8; 32];
    r.read_exact(&mut sum)
        .map_err(SegmentError::io(path, "reading"))?;
    if sha.finalize().as_slice() != sum {
        return Err(corrupt("checksum mismatch".into()));
    }
    Ok(n)
}

/// The hash at `pos` in the hash list at `path` (covering `first..=last`),
/// or None if its ledger has no transaction there: three small reads, no
/// checksum (a confirmation of a segment candidate, like a body's hash;
/// [`verify`] and the scrub check the whole file).
pub fn hash_at(path: &Path, first: u32, last: u32, pos: TxPos) -> SegmentResult<Option<[u8; 32]>> {
    use std::os::unix::fs::FileExt;
    if pos.seq < first || pos.seq > last {
        return Ok(None);
    }
    let (file, _, n) = open_checked(path, first, last)?;
    let io = SegmentError::io(path, "reading");
    let ledgers = u64::from(last - first) + 1;
    let mut b = [0u8; 8];
    let at = HEADER_BYTES as u64 + 4 * u64::from(pos.seq - first);
    file.read_exact_at(&mut b, at).map_err(io)?;
    let start = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let end = u64::from(u32::from_le_bytes([b[4], b[5], b[6], b[7]]));
    let ordinal = start + u64::from(pos.index);
    if ordinal >= end || end > n {
        return Ok(None);
    }
    let mut h = [0u8; 32];
    let at = HEADER_BYTES as u64 + 4 * (ledgers + 1) + 32 * ordinal;
    file.read_exact_at(&mut h, at)
        .map_err(SegmentError::io(path, "reading"))?;
    Ok(Some(h))
}
