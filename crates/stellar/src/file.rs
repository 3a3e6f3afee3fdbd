//! Files of Stellar ledgers, in the two shapes stellar tooling writes:
//!
//! - a **batch file** (Galexie / SEP-54): XDR `LedgerCloseMetaBatch`
//!   `{startSequence, endSequence, ledgerCloseMetas<>}`;
//! - a **stream**: `LedgerCloseMeta` records back to back, each behind an
//!   RFC 5531 record mark (4 bytes big-endian: the last-fragment bit, then
//!   the length), as stellar-core's meta stream and captive-core write.
//!
//! Either may be zstd-compressed (detected by the zstd magic). A batch
//! starts with its start sequence, whose top bit is never set, while a
//! stream starts with a record mark, whose top bit is always set: that is
//! how [`Shape`] tells them apart.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use ledgerstore_db_api::{Bytes, LedgerInput};
use stellar_xdr::{LedgerCloseMetaBatch, Limits, ReadXdr, WriteXdr};

use crate::error::{StellarError, StellarResult};
use crate::extract::{extract, from_slices, ledger_seq, limits};
use crate::network::Network;
use crate::walk::walk_batch;

/// The first bytes of a zstd frame.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Size limits for untrusted files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// A whole batch file, after decompression.
    pub max_file_bytes: u64,
    /// One record-marked frame (one `LedgerCloseMeta`).
    pub max_frame_bytes: u32,
}

impl Default for ReadLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 1 << 30,
            max_frame_bytes: 256 << 20,
        }
    }
}

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One `LedgerCloseMetaBatch`.
    Batch,
    /// Record-marked `LedgerCloseMeta` frames.
    Stream,
}

impl Shape {
    /// Tells the shapes apart from the first 4 (decompressed) bytes.
    pub fn sniff(first: &[u8]) -> Option<Shape> {
        let head: [u8; 4] = first.get(..4)?.try_into().ok()?;
        Some(if u32::from_be_bytes(head) >> 31 == 1 {
            Shape::Stream
        } else {
            Shape::Batch
        })
    }
}

/// Decompresses `bytes` when they are zstd, refusing more than `max` bytes
/// of output (a zstd bomb stops there).
pub fn maybe_decompress(bytes: &[u8], at: &str, max: u64) -> StellarResult<Vec<u8>> {
    if !bytes.starts_with(&ZSTD_MAGIC) {
        return Ok(bytes.to_vec());
    }
    if let Some(plain) = one_call(bytes, max) {
        return Ok(plain);
    }
    let decoder = zstd::stream::read::Decoder::new(bytes).map_err(|e| StellarError::Zstd {
        at: at.to_string(),
        detail: e.to_string(),
    })?;
    // A single-ledger object of 2026 pubnet compresses ~7.8× at the public
    // lake's level 19 (~6.8× at level 3; the 2024 object here, 5.1×):
    // room for 10× up front saves growing the buffer, and copying it,
    // several times a file. Address space only, and at most 64 MiB (a
    // larger file grows from there), so a big file never asks for a
    // reservation a strict-overcommit host refuses.
    let hint = (bytes.len() as u64)
        .saturating_mul(10)
        .min(max.saturating_add(1))
        .min(HINT_MAX);
    read_capped_into(decoder, at, max, usize::try_from(hint).unwrap_or(0))
}

/// The most a streamed file's buffer reserves before its first byte.
const HINT_MAX: u64 = 64 << 20;

/// The largest window the stream decoder accepts (zstd's default
/// `ZSTD_WINDOWLOG_LIMIT_DEFAULT`, 2^27).
const STREAM_WINDOW_MAX: u64 = 1 << 27;

/// A frame that declares its size (some writers' do; the 2024 SEP-54
/// object in `../shared/data/stellar` does not) decompressed in one call
/// straight into a buffer of that size: no stream buffer to copy out of,
/// no growing. Only for frames the stream would take as they are: a
/// declared size within `max` and the stream's window limit (so the
/// buffer reserved is what the stream could have grown to), and a window
/// within that limit (one-call decompression does not check it). None
/// for anything else (several frames, no size, a large window, corrupt
/// input): the stream then decides, and words the errors.
fn one_call(bytes: &[u8], max: u64) -> Option<Vec<u8>> {
    let size = zstd::zstd_safe::get_frame_content_size(bytes).ok()??;
    if size > max.min(STREAM_WINDOW_MAX) {
        return None;
    }
    // Frame header: magic (4), descriptor (1), then the window descriptor
    // unless the frame is a single segment, whose window is its size.
    let descriptor = *bytes.get(4)?;
    if descriptor & 0x20 == 0 {
        let wd = *bytes.get(5)?;
        let base = 1u64 << (10 + (wd >> 3));
        if base + base / 8 * u64::from(wd & 7) > STREAM_WINDOW_MAX {
            return None;
        }
    }
    zstd::bulk::decompress(bytes, usize::try_from(size).ok()?).ok()
}

/// Reads `r` (a zstd decoder, or plain bytes) to its end, refusing more
/// than `max` bytes: a zstd bomb or an oversize file stops there.
pub fn read_capped(r: impl Read, at: &str, max: u64) -> StellarResult<Vec<u8>> {
    read_capped_into(r, at, max, 0)
}

/// [`read_capped`] into a buffer with room for `capacity` bytes at first.
fn read_capped_into(r: impl Read, at: &str, max: u64, capacity: usize) -> StellarResult<Vec<u8>> {
    let zstd_err = |detail: String| StellarError::Zstd {
        at: at.to_string(),
        detail,
    };
    let mut out = Vec::with_capacity(capacity);
    r.take(max + 1)
        .read_to_end(&mut out)
        .map_err(|e| zstd_err(format!("{e} (corrupt or truncated)")))?;
    if out.len() as u64 > max {
        return Err(zstd_err(format!(
            "decompresses to more than {max} bytes (the file limit)"
        )));
    }
    // The ledgers extracted from this buffer are slices of it and keep it
    // whole while any lives (read-ahead holds several files): room left
    // over from growing or from the hint is handed back (in place, for an
    // allocation this size).
    if out.capacity() - out.len() > out.len() / 8 {
        out.shrink_to_fit();
    }
    Ok(out)
}

/// Decodes a whole file held in memory (compressed or not, either shape),
/// extracting each ledger with the walker ([`crate::walk`]).
pub fn decode_file(
    bytes: &[u8],
    at: &str,
    network: &Network,
    lim: ReadLimits,
) -> StellarResult<Vec<LedgerInput>> {
    decode_file_as(bytes, at, network, lim, false)
}

/// [`decode_file`] with the reference extraction (a full `stellar-xdr`
/// decode), which tests and the fuzz target compare the walker with.
pub fn decode_file_reference(
    bytes: &[u8],
    at: &str,
    network: &Network,
    lim: ReadLimits,
) -> StellarResult<Vec<LedgerInput>> {
    decode_file_as(bytes, at, network, lim, true)
}

fn decode_file_as(
    bytes: &[u8],
    at: &str,
    network: &Network,
    lim: ReadLimits,
    reference: bool,
) -> StellarResult<Vec<LedgerInput>> {
    let plain = Bytes::from(maybe_decompress(bytes, at, lim.max_file_bytes)?);
    match Shape::sniff(&plain) {
        None => Err(StellarError::format(
            at,
            format!("{} bytes: too short to hold any ledger", plain.len()),
        )),
        Some(Shape::Batch) if reference => decode_batch_reference(&plain, at, network),
        Some(Shape::Batch) => decode_batch(&plain, at, network),
        Some(Shape::Stream) => {
            let mut frames = FrameReader::new(&plain[..], at, lim.max_frame_bytes);
            let mut out = Vec::new();
            for frame in frames.by_ref() {
                let (label, bytes) = frame?;
                out.push(if reference {
                    crate::extract::reference(bytes, network, &label)?
                } else {
                    crate::extract::ledger_from_xdr(bytes, network, &label)?
                });
            }
            Ok(out)
        }
    }
}

/// Walks an (uncompressed) `LedgerCloseMetaBatch`, checks that its
/// ledgers are exactly `startSequence..=endSequence`, in order, and
/// extracts each; a ledger's `raw` is its bytes in the batch.
pub fn decode_batch(plain: &Bytes, at: &str, network: &Network) -> StellarResult<Vec<LedgerInput>> {
    let batch = walk_batch(plain).map_err(|f| StellarError::walk(at, "LedgerCloseMetaBatch", f))?;
    let seqs: Vec<u32> = batch.ledgers.iter().map(|(_, s)| s.seq).collect();
    check_batch(at, batch.start, batch.end, &seqs)?;
    let mut out = Vec::with_capacity(batch.ledgers.len());
    for (span, slices) in &batch.ledgers {
        out.push(from_slices(slices, span.slice_of(plain), network)?);
    }
    Ok(out)
}

/// The reference for [`decode_batch`]: a full decode, each ledger
/// re-encoded as its `raw`.
pub fn decode_batch_reference(
    plain: &[u8],
    at: &str,
    network: &Network,
) -> StellarResult<Vec<LedgerInput>> {
    let batch = LedgerCloseMetaBatch::from_xdr(plain, limits(plain.len()))
        .map_err(|e| StellarError::xdr(at, "LedgerCloseMetaBatch", e))?;
    let seqs: Vec<u32> = batch.ledger_close_metas.iter().map(ledger_seq).collect();
    check_batch(at, batch.start_sequence, batch.end_sequence, &seqs)?;
    let mut out = Vec::with_capacity(batch.ledger_close_metas.len());
    for lcm in batch.ledger_close_metas.iter() {
        let seq = ledger_seq(lcm);
        let raw = lcm
            .to_xdr(Limits::none())
            .map_err(|e| StellarError::xdr(format!("{at} ledger {seq}"), "LedgerCloseMeta", e))?;
        out.push(extract(lcm, raw, network)?);
    }
    Ok(out)
}

/// A batch holds exactly `start..=end`, in order.
fn check_batch(at: &str, start: u32, end: u32, seqs: &[u32]) -> StellarResult<()> {
    let expected = u64::from(end).checked_sub(u64::from(start)).map(|d| d + 1);
    if expected != Some(seqs.len() as u64) {
        return Err(StellarError::format(
            at,
            format!(
                "the batch says ledgers {start}..={end} but holds {} LedgerCloseMeta",
                seqs.len()
            ),
        ));
    }
    for (i, &seq) in seqs.iter().enumerate() {
        let want = start + i as u32;
        if seq != want {
            return Err(StellarError::format(
                at,
                format!("ledgerCloseMetas[{i}] is ledger {seq}, expected {want}"),
            ));
        }
    }
    Ok(())
}

/// Reads record-marked frames one at a time; memory is one frame.
pub struct FrameReader<R> {
    r: R,
    at: String,
    index: usize,
    offset: u64,
    max: u32,
    done: bool,
}

impl<R: Read> FrameReader<R> {
    /// Frames of `r`; `at` names the source in errors.
    pub fn new(r: R, at: &str, max_frame_bytes: u32) -> Self {
        Self {
            r,
            at: at.to_string(),
            index: 0,
            offset: 0,
            max: max_frame_bytes,
            done: false,
        }
    }

    fn read_frame(&mut self) -> StellarResult<Option<(String, Vec<u8>)>> {
        let label = format!("{} frame {} (byte {})", self.at, self.index, self.offset);
        let mut mark = [0u8; 4];
        let got = read_full(&mut self.r, &mut mark).map_err(|e| io(&self.at, e))?;
        if got == 0 {
            return Ok(None);
        }
        if got < 4 {
            return Err(StellarError::format(
                label,
                format!("truncated: {got} of the 4 bytes of a record mark"),
            ));
        }
        let mark = u32::from_be_bytes(mark);
        if mark >> 31 == 0 {
            return Err(StellarError::format(
                label,
                "a record mark without the last-fragment bit: not a record-marked \
                 LedgerCloseMeta stream, or a multi-fragment record (unsupported)",
            ));
        }
        let len = mark & 0x7fff_ffff;
        if len > self.max {
            return Err(StellarError::format(
                label,
                format!("a frame of {len} bytes, over the limit of {}", self.max),
            ));
        }
        let mut buf = vec![0u8; len as usize];
        let got = read_full(&mut self.r, &mut buf).map_err(|e| io(&self.at, e))?;
        if got < buf.len() {
            return Err(StellarError::format(
                label,
                format!("truncated: the record mark says {len} bytes, only {got} follow"),
            ));
        }
        self.index += 1;
        self.offset += 4 + u64::from(len);
        Ok(Some((label, buf)))
    }
}

impl<R: Read> Iterator for FrameReader<R> {
    /// A frame's label for errors, and its bytes.
    type Item = StellarResult<(String, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let r = self.read_frame().transpose();
        if !matches!(r, Some(Ok(_))) {
            self.done = true;
        }
        r
    }
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn io(at: &str, source: std::io::Error) -> StellarError {
    StellarError::Io {
        path: at.to_string(),
        source,
    }
}

/// A local file opened for reading: decompressed on the fly when it is
/// zstd, with its shape sniffed.
pub struct OpenFile {
    /// The decompressed bytes.
    pub reader: Box<dyn BufRead + Send>,
    /// What the file holds.
    pub shape: Shape,
    /// Whether it was zstd.
    pub compressed: bool,
}

/// Opens `path` for streaming reads.
pub fn open_file(path: &Path) -> StellarResult<OpenFile> {
    let at = path.display().to_string();
    let mut f = BufReader::new(File::open(path).map_err(|e| io(&at, e))?);
    let compressed = f
        .fill_buf()
        .map_err(|e| io(&at, e))?
        .starts_with(&ZSTD_MAGIC);
    let mut reader: Box<dyn BufRead + Send> = if compressed {
        let d = zstd::stream::read::Decoder::with_buffer(f).map_err(|e| StellarError::Zstd {
            at: at.clone(),
            detail: e.to_string(),
        })?;
        Box::new(BufReader::new(d))
    } else {
        Box::new(f)
    };
    let head = reader.fill_buf().map_err(|e| match e.kind() {
        std::io::ErrorKind::Other => StellarError::Zstd {
            at: at.clone(),
            detail: format!("{e} (corrupt or truncated)"),
        },
        _ => io(&at, e),
    })?;
    let shape = Shape::sniff(head)
        .ok_or_else(|| StellarError::format(&at, "empty, or too short to hold any ledger"))?;
    Ok(OpenFile {
        reader,
        shape,
        compressed,
    })
}

/// Holds the walker's refusal of a ledger file to account, where the
/// reference decoded it to `reference` (tests and the `xdr` fuzz target).
/// The one excuse is a bool other than 0 or 1
/// ([`check_refusal`](crate::extract::check_refusal)), checked where the
/// walker stopped: for a batch, the whole batch against its re-encoding,
/// then each ledger's re-encoding must walk to the reference's ledger and
/// the re-encoded batch must decode to the reference's ledgers; for a
/// stream, every frame the walker refuses is checked on its own
/// ([`check_refused_ledger`](crate::extract::check_refused_ledger), the
/// re-encoding walked as a ledger, not through a frame limit), and every
/// frame it takes must extract to the reference's ledger.
pub fn check_refused_file(
    bytes: &[u8],
    network: &Network,
    lim: ReadLimits,
    reference: &[LedgerInput],
) -> Result<(), String> {
    use crate::extract::{check_refusal, check_refused_ledger, ledger_from_xdr};
    let plain = maybe_decompress(bytes, "file", lim.max_file_bytes).map_err(|e| e.to_string())?;
    match Shape::sniff(&plain) {
        None => Err("not a ledger file, yet the reference took it".into()),
        Some(Shape::Batch) => {
            let refusal = match walk_batch(&plain) {
                Ok(_) => return Err("the walk takes the batch: the refusal came after it".into()),
                Err(f) => f,
            };
            let canonical = LedgerCloseMetaBatch::from_xdr(&plain, limits(plain.len()))
                .map_err(|e| format!("the reference refuses the batch too: {e}"))?
                .to_xdr(Limits::none())
                .map_err(|e| format!("the batch does not re-encode: {e}"))?;
            check_refusal(&plain, &canonical, &refusal)?;
            for l in reference {
                // The reference's raw is the ledger re-encoded on its own.
                let walked = ledger_from_xdr(l.raw.clone(), network, "re-encoded")
                    .map_err(|e| format!("ledger {}: re-encoded, the walker: {e}", l.seq))?;
                // The reference names no cuts; everything else must agree.
                if walked.without_cuts() != *l {
                    return Err(format!(
                        "ledger {}: re-encoded, extracts differently",
                        l.seq
                    ));
                }
            }
            let again = decode_batch(&Bytes::from(canonical), "re-encoded", network)
                .map_err(|e| format!("the re-encoded batch, the walker: {e}"))?;
            if !again
                .iter()
                .map(LedgerInput::without_cuts)
                .eq(reference.iter().cloned())
            {
                return Err("the re-encoded batch extracts differently".into());
            }
            Ok(())
        }
        Some(Shape::Stream) => {
            let frames = FrameReader::new(&plain[..], "file", lim.max_frame_bytes);
            let mut refused = 0;
            let mut n = 0;
            for (i, frame) in frames.enumerate() {
                let (_, frame) = frame.map_err(|e| format!("frame {i}: {e}"))?;
                let want = reference
                    .get(i)
                    .ok_or_else(|| format!("frame {i}: the reference has no ledger for it"))?;
                n += 1;
                match crate::walk::walk(&frame) {
                    Ok(_) => {
                        let got = ledger_from_xdr(frame, network, "frame")
                            .map_err(|e| format!("frame {i}: {e}"))?;
                        if got.without_cuts() != *want {
                            return Err(format!("frame {i}: extracts differently"));
                        }
                    }
                    Err(refusal) => {
                        refused += 1;
                        let got = check_refused_ledger(&frame, &refusal, network)
                            .map_err(|e| format!("frame {i}: {e}"))?;
                        if got.txs != want.txs
                            || (got.seq, got.close_time) != (want.seq, want.close_time)
                        {
                            return Err(format!("frame {i}: re-encoded, extracts differently"));
                        }
                    }
                }
            }
            if n != reference.len() {
                return Err(format!(
                    "{n} frames, the reference has {} ledgers",
                    reference.len()
                ));
            }
            if refused == 0 {
                return Err("the walker takes every frame: the refusal is not a ledger's".into());
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::maybe_decompress;

    fn plain() -> Vec<u8> {
        (0..300_000u32)
            .flat_map(|i| (i % 251).to_be_bytes())
            .collect()
    }

    /// A frame with no declared size (the stream encoder's, unpledged).
    fn unsized_frame(data: &[u8]) -> Vec<u8> {
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).expect("encoder");
        e.include_contentsize(false).expect("no size");
        e.write_all(data).expect("write");
        e.finish().expect("finish")
    }

    /// `frame` (a single segment, no dictionary) re-headed as a frame of
    /// window 2^`log` that declares its size in 4 bytes: the same blocks.
    fn with_window(frame: &[u8], log: u8) -> Vec<u8> {
        let fhd = frame[4];
        assert!(
            fhd & 0x20 != 0 && fhd & 0x03 == 0,
            "single segment, no dict id"
        );
        let fcs_len = [1, 2, 4, 8][usize::from(fhd >> 6)];
        let size = zstd::zstd_safe::get_frame_content_size(frame)
            .expect("header")
            .expect("size");
        let mut out = frame[..4].to_vec();
        out.push(0x80 | (fhd & 0x04));
        out.push((log - 10) << 3);
        out.extend_from_slice(&u32::try_from(size).expect("small").to_le_bytes());
        out.extend_from_slice(&frame[5 + fcs_len..]);
        out
    }

    #[test]
    fn one_call_takes_only_what_the_stream_would() {
        let data = plain();
        let sized = zstd::bulk::compress(&data, 3).expect("compress");
        assert_eq!(super::one_call(&sized, 1 << 30), Some(data.clone()));
        assert_eq!(super::one_call(&sized, data.len() as u64 - 1), None);
        assert_eq!(super::one_call(&unsized_frame(&data), 1 << 30), None);
        let mut two = sized.clone();
        two.extend_from_slice(&sized);
        assert_eq!(super::one_call(&two, 1 << 30), None);
        // A window of 2^27 is the stream's limit; 2^28 is past it. Both
        // frames are valid (one-call decompression of the blocks works);
        // only the first may take the one call, and the stream refuses the
        // second whichever path is tried.
        let stream = |frame: &[u8]| {
            super::read_capped(
                zstd::stream::read::Decoder::new(frame).expect("decoder"),
                "f",
                1 << 30,
            )
        };
        let ok = with_window(&sized, 27);
        assert_eq!(
            zstd::bulk::decompress(&ok, data.len()).expect("valid"),
            data
        );
        assert_eq!(stream(&ok).expect("the stream takes 2^27"), data);
        assert_eq!(super::one_call(&ok, 1 << 30), Some(data.clone()));
        let large = with_window(&sized, 28);
        assert_eq!(
            zstd::bulk::decompress(&large, data.len()).expect("valid"),
            data
        );
        let refused = |e: crate::StellarError| {
            let e = e.to_string();
            assert!(e.contains("Frame requires too much memory"), "{e}");
        };
        refused(stream(&large).expect_err("the stream refuses 2^28"));
        assert_eq!(super::one_call(&large, 1 << 30), None);
        refused(maybe_decompress(&large, "f", 1 << 30).expect_err("window"));
        // A lone good frame, then a frame the stream refuses: not one
        // call's to judge.
        let mut then_large = sized.clone();
        then_large.extend_from_slice(&large);
        assert_eq!(super::one_call(&then_large, 1 << 30), None);
        refused(maybe_decompress(&then_large, "f", 1 << 30).expect_err("second window"));
        // A small frame that declares more than the stream's window: no
        // reservation of what it declares (the stream decides).
        let big = zstd::bulk::compress(&vec![0u8; (1 << 27) + 1], 1).expect("compress");
        assert!(big.len() < 1 << 20);
        assert_eq!(super::one_call(&big, 1 << 30), None);
    }

    #[test]
    fn every_frame_shape_decompresses_whole() {
        let data = plain();
        let sized = zstd::bulk::compress(&data, 3).expect("compress");
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&sized).expect("header"),
            Some(data.len() as u64)
        );
        assert_eq!(maybe_decompress(&sized, "f", 1 << 30).expect("sized"), data);
        let no_size = unsized_frame(&data);
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(&no_size).expect("header"),
            None
        );
        assert_eq!(
            maybe_decompress(&no_size, "f", 1 << 30).expect("unsized"),
            data
        );
        // Two frames: the first's size is not the whole, so the stream
        // reads both.
        let mut two = sized.clone();
        two.extend_from_slice(&sized);
        let mut both = data.clone();
        both.extend_from_slice(&data);
        assert_eq!(maybe_decompress(&two, "f", 1 << 30).expect("two"), both);
        assert_eq!(maybe_decompress(&data, "f", 1 << 30).expect("plain"), data);
    }

    #[test]
    fn the_limit_holds_on_every_path() {
        let data = plain();
        let max = data.len() as u64 - 1;
        for (what, frame) in [
            ("sized", zstd::bulk::compress(&data, 3).expect("compress")),
            ("unsized", unsized_frame(&data)),
        ] {
            let e = maybe_decompress(&frame, "f", max).expect_err(what);
            assert!(e.to_string().contains("the file limit"), "{what}: {e}");
        }
        let mut corrupt = zstd::bulk::compress(&data, 3).expect("compress");
        let n = corrupt.len();
        corrupt.truncate(n - 10);
        let e = maybe_decompress(&corrupt, "f", 1 << 30).expect_err("truncated");
        assert!(e.to_string().contains("corrupt or truncated"), "{e}");
    }
}
