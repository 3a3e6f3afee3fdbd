//! A writer that hashes what it writes: segment files and hash lists
//! record the SHA-256 of their bytes as they are written. Below both
//! writers, so neither imports the other for it.

use std::io::Write;

/// A writer that hashes what passes through.
pub(crate) struct HashingWriter<W: Write> {
    inner: W,
    sha: sha2::Sha256,
}

impl<W: Write> HashingWriter<W> {
    pub(crate) fn new(inner: W) -> Self {
        Self {
            inner,
            sha: sha2::Sha256::default(),
        }
    }
    pub(crate) fn digest(&mut self) -> [u8; 32] {
        use sha2::Digest;
        std::mem::take(&mut self.sha).finalize().into()
    }
    pub(crate) fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n = self.inner.write(buf)?;
        self.sha.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}
