//! Key encoding and value compression, kept apart (as in reth: `Encode` vs
//! `Compress`). Keys are fixed-width and big-endian so that the engines'
//! byte order is the logical order. Values are encoded by the record codecs
//! and then compressed with zstd in the application.

use std::cell::RefCell;

use zstd::zstd_safe::{self, DCtx, DDict};

use crate::error::{DbError, DbResult};

/// Encodes a key into order-preserving bytes.
pub trait Encode {
    /// The encoded form.
    type Encoded: AsRef<[u8]>;
    /// Encodes the key.
    fn encode(&self) -> Self::Encoded;
}

/// Decodes a key from its encoded bytes.
pub trait Decode: Sized {
    /// Decodes a key, checking its length.
    fn decode(bytes: &[u8]) -> DbResult<Self>;
}

/// Turns a value into the bytes stored by the engine.
pub trait Compress {
    /// Encodes and compresses the value. `level` is the zstd level for
    /// compressed tables; uncompressed values ignore it.
    fn compress(&self, level: i32) -> DbResult<Vec<u8>>;
    /// Size of the value before compression, for ratio statistics.
    fn raw_len(&self) -> usize;
}

/// Turns stored bytes back into a value.
pub trait Decompress: Sized {
    /// Decompresses and decodes the value.
    fn decompress(bytes: &[u8]) -> DbResult<Self>;
}

/// Compresses `raw` as one zstd frame.
pub fn zstd_compress(raw: &[u8], level: i32) -> DbResult<Vec<u8>> {
    zstd::bulk::compress(raw, level).map_err(DbError::Compression)
}

/// Upper bound on a decompressed value: refuses zstd bombs.
pub const MAX_DECOMPRESSED_BYTES: usize = 1 << 30;

/// Decompresses one zstd frame, refusing frames that would exceed
/// [`MAX_DECOMPRESSED_BYTES`].
pub fn zstd_decompress(stored: &[u8]) -> DbResult<Vec<u8>> {
    decompress_frame(stored, None)
}

thread_local! {
    /// One decompression context per thread, reused by every read: making
    /// one per record (what `zstd::bulk::decompress` does) allocated and
    /// initialised ~100 KB a lookup (`ZSTD_createDCtx` and malloc were ~5%
    /// of the daemon's CPU in a GetTransaction profile).
    static DCTX: RefCell<DCtx<'static>> = RefCell::new(DCtx::create());
}

/// Decompresses `frame` (with `ddict` when it was compressed with a
/// dictionary) into a buffer of exactly the content size it records, with
/// this thread's context; a frame that fills less than it says is corrupt.
pub(crate) fn decompress_frame(frame: &[u8], ddict: Option<&DDict<'_>>) -> DbResult<Vec<u8>> {
    let size = frame_content_size(frame)?;
    let mut out = Vec::with_capacity(size);
    DCTX.with(|d| {
        let mut d = d.borrow_mut();
        match ddict {
            Some(dict) => d.decompress_using_ddict(&mut out, frame, dict),
            None => d.decompress(&mut out, frame),
        }
        .map_err(|code| {
            DbError::Compression(std::io::Error::other(zstd_safe::get_error_name(code)))
        })
    })?;
    if out.len() != size {
        return Err(DbError::Corrupt {
            what: "zstd frame",
            detail: format!("{} bytes decompressed, the frame says {size}", out.len()),
        });
    }
    Ok(out)
}

/// The content size a zstd frame records, refusing frames without one or
/// above [`MAX_DECOMPRESSED_BYTES`].
pub fn frame_content_size(stored: &[u8]) -> DbResult<usize> {
    let size = zstd::zstd_safe::get_frame_content_size(stored)
        .map_err(|_| DbError::Corrupt {
            what: "zstd frame",
            detail: "not a zstd frame".into(),
        })?
        .ok_or_else(|| DbError::Corrupt {
            what: "zstd frame",
            detail: "frame does not record its content size".into(),
        })?;
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    if size > MAX_DECOMPRESSED_BYTES {
        return Err(DbError::Corrupt {
            what: "zstd frame",
            detail: format!("content size {size} exceeds {MAX_DECOMPRESSED_BYTES}"),
        });
    }
    Ok(size)
}

/// Reads big-endian fixed-width integers and length-prefixed byte strings
/// from a record, turning every short read into [`DbError::Corrupt`].
pub(crate) struct Reader<'a> {
    what: &'static str,
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(what: &'static str, buf: &'a [u8]) -> Self {
        Self { what, buf }
    }

    fn corrupt(&self, detail: impl Into<String>) -> DbError {
        DbError::Corrupt {
            what: self.what,
            detail: detail.into(),
        }
    }

    pub(crate) fn take(&mut self, n: usize) -> DbResult<&'a [u8]> {
        if self.buf.len() < n {
            return Err(self.corrupt(format!("needs {n} more bytes, {} left", self.buf.len())));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> DbResult<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> DbResult<u8> {
        Ok(self.array::<1>()?[0])
    }

    pub(crate) fn u32(&mut self) -> DbResult<u32> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub(crate) fn u64(&mut self) -> DbResult<u64> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub(crate) fn bytes(&mut self) -> DbResult<Vec<u8>> {
        let len = self.u32()? as usize;
        Ok(self.take(len)?.to_vec())
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len()
    }

    pub(crate) fn finish(self) -> DbResult<()> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(self.corrupt(format!("{} trailing bytes", self.buf.len())))
        }
    }
}

/// Appends a u32 length prefix and the bytes.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    // Record sizes are bounded far below 4 GiB by the ingest validator.
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_round_trip_and_bomb_guard() {
        let raw = vec![7u8; 10_000];
        let c = zstd_compress(&raw, 3).expect("compress");
        assert!(c.len() < raw.len());
        assert_eq!(zstd_decompress(&c).expect("decompress"), raw);
        assert!(matches!(
            zstd_decompress(b"not zstd at all"),
            Err(DbError::Corrupt { .. })
        ));
    }

    #[test]
    fn reader_reports_short_reads_and_trailing_bytes() {
        let mut r = Reader::new("t", &[0, 0, 0, 5, 1, 2]);
        assert!(r.bytes().is_err());
        let mut r = Reader::new("t", &[0, 0, 0, 1, 9, 3]);
        assert_eq!(r.bytes().expect("bytes"), vec![9]);
        assert!(r.finish().is_err());
    }
}
