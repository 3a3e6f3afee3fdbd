//! Building a segment file (and, for a base range, its hash list).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use ph::fmph::keyset::SliceSourceWithRefs;
use ph::fmph::{GOBuildConf, GOConf};

use crate::{
    CHECKSUM_BYTES, HEADER_BYTES, KeyScheme, MAGIC, MAX_SALTS, MPH_PREFIX, MPH_SALTED_NH, Mph,
    SegmentError, SegmentInfo, SegmentResult, TxPos, VERSION, fingerprint, fresh_salt, hex, info,
    ordinal_bits,
};

/// Builds a segment from `(hash, position)` pairs of one range.
#[derive(Debug)]
pub struct SegmentBuilder {
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) entries: Vec<([u8; 32], TxPos)>,
}

impl SegmentBuilder {
    /// A builder for `first..=last`.
    pub fn new(first: u32, last: u32) -> SegmentResult<Self> {
        if first > last {
            return Err(SegmentError::Invalid(format!(
                "segment range {first}..={last} is empty"
            )));
        }
        Ok(Self {
            first,
            last,
            entries: Vec::new(),
        })
    }

    /// Adds one transaction. Positions must lie in the range.
    pub fn push(&mut self, hash: [u8; 32], pos: TxPos) -> SegmentResult<()> {
        if pos.seq < self.first || pos.seq > self.last {
            return Err(SegmentError::Invalid(format!(
                "tx {} at ledger {} lies outside the segment range {}..={}",
                hex(&hash),
                pos.seq,
                self.first,
                self.last
            )));
        }
        self.entries.push((hash, pos));
        Ok(())
    }

    /// Keys added so far.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no key was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Builds the segment and writes it to `path` (fsynced). The caller
    /// publishes it by renaming; see [`publish`](crate::publish). Any set
    /// of distinct hashes builds; a hash pushed twice is refused by name.
    pub fn write(self, path: &Path) -> SegmentResult<SegmentInfo> {
        self.write_with(path, None, MPH_SALTED_NH, &mut fresh_salt)
    }

    /// [`write`](Self::write), and also the range's hash list to
    /// `hashes` (fsynced; see [`crate::hashes`]), the source later merges
    /// and repairs rebuild from.
    pub fn write_with_hashes(self, path: &Path, hashes: &Path) -> SegmentResult<SegmentInfo> {
        self.write_with(path, Some(hashes), MPH_SALTED_NH, &mut fresh_salt)
    }

    /// Sorts the entries into ordinal order (ledger, then apply order) and
    /// returns the per-ledger first ordinals, refusing repeated positions,
    /// non-dense apply indexes and repeated hashes by name.
    fn order(&mut self, kind: u32) -> SegmentResult<Vec<u32>> {
        let ledgers = (self.last - self.first) as usize + 1;
        let n = self.entries.len();
        if u32::try_from(n).is_err() {
            return Err(SegmentError::Invalid(format!(
                "{n} keys exceed a segment's 2^32 limit: use a smaller range"
            )));
        }
        self.entries.sort_unstable_by_key(|e| e.1);
        if let Some(w) = self.entries.windows(2).find(|w| w[0].1 == w[1].1) {
            return Err(SegmentError::Invalid(format!(
                "two hashes at ledger {} index {}",
                w[0].1.seq, w[0].1.index
            )));
        }
        let mut counts = vec![0u32; ledgers];
        for (_, pos) in &self.entries {
            let li = (pos.seq - self.first) as usize;
            counts[li] = counts[li].max(pos.index + 1);
        }
        let mut offsets = vec![0u32; ledgers + 1];
        for (li, c) in counts.iter().enumerate() {
            offsets[li + 1] = offsets[li] + c;
        }
        if offsets[ledgers] as usize != n {
            return Err(SegmentError::Invalid(format!(
                "apply indexes are not dense: {} positions for {n} keys (a ledger's txs must be 0..count)",
                offsets[ledgers]
            )));
        }
        // No MPH separates identical keys: refuse a repeated hash by name.
        // Sorting by the whole hash also makes shared prefixes adjacent.
        let mut sorted: Vec<&([u8; 32], TxPos)> = self.entries.iter().collect();
        sorted.sort_unstable_by_key(|e| e.0);
        if let Some(w) = sorted.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(SegmentError::Invalid(format!(
                "tx hash {} appears twice, at ledger {} index {} and ledger {} index {}",
                hex(&w[0].0),
                w[0].1.seq,
                w[0].1.index,
                w[1].1.seq,
                w[1].1.index
            )));
        }
        if kind == MPH_PREFIX
            && let Some(w) = sorted.windows(2).find(|w| w[0].0[..16] == w[1].0[..16])
        {
            return Err(SegmentError::Invalid(format!(
                "two hashes share the 128-bit prefix {} (MPH kind 1)",
                hex(&w[0].0[..16])
            )));
        }
        Ok(offsets)
    }

    /// The MPH over the entries' keys, drawing a fresh salt after a
    /// collision or a build that did not converge.
    fn mph(
        &self,
        kind: u32,
        salts: &mut dyn FnMut() -> [u64; 2],
    ) -> SegmentResult<(KeyScheme, Vec<u128>, Mph)> {
        let n = self.entries.len();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let scheme = match kind {
                MPH_PREFIX => KeyScheme::Prefix,
                MPH_SALTED_NH => KeyScheme::salted(salts()),
                _ => {
                    return Err(SegmentError::Invalid(format!(
                        "cannot write MPH kind {kind}"
                    )));
                }
            };
            // Keys in ordinal order, so that `keys[ord]` is entry `ord`'s.
            let keys: Vec<u128> = self.entries.iter().map(|(h, _)| scheme.key(h)).collect();
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            let collision = sorted.windows(2).any(|w| w[0] == w[1]);
            drop(sorted);
            let mph = if collision {
                None
            } else {
                let conf = GOBuildConf::with_mt(
                    GOConf {
                        hash_builder: ph::seedable_hash::BuildWyHash,
                        bits_per_seed: ph::seeds::TwoToPowerBitsStatic::<2>,
                        bits_per_group: ph::seeds::TwoToPowerBitsStatic::<4>,
                    },
                    n > 100_000,
                );
                Mph::try_with_conf_stats(SliceSourceWithRefs::<_, u8>::new(&keys), conf, &mut ())
            };
            match mph {
                Some(mph) => return Ok((scheme, keys, mph)),
                None if scheme != KeyScheme::Prefix && attempt < MAX_SALTS => continue,
                None => {
                    return Err(SegmentError::Invalid(format!(
                        "no MPH separates these {n} keys (MPH kind {kind}, {attempt} attempts; {})",
                        if collision {
                            "the last salt mixed two hashes to one key"
                        } else {
                            "the MPH build did not converge"
                        }
                    )));
                }
            }
        }
    }

    /// [`write`](Self::write) with an optional hash list, MPH `kind` and a
    /// source of salts (kind 2 draws one per attempt). Kind 1 is only
    /// written by tests, to check that such files still open.
    pub(crate) fn write_with(
        mut self,
        path: &Path,
        hashes: Option<&Path>,
        kind: u32,
        salts: &mut dyn FnMut() -> [u64; 2],
    ) -> SegmentResult<SegmentInfo> {
        let started = Instant::now();
        let offsets = self.order(kind)?;
        if let Some(hashes) = hashes {
            crate::hashes::write(
                hashes,
                self.first,
                self.last,
                &offsets,
                self.entries.iter().map(|e| &e.0),
            )?;
        }
        let (scheme, keys, mph) = self.mph(kind, salts)?;
        let n = self.entries.len();
        let mut fps = vec![0u16; n];
        let mut ords = vec![0u32; n];
        for (ord, ((hash, _), key)) in self.entries.iter().zip(&keys).enumerate() {
            let slot = mph
                .get(key)
                .and_then(|s| usize::try_from(s).ok())
                .filter(|s| *s < n)
                .ok_or_else(|| {
                    SegmentError::Invalid(format!("the MPH did not place key {}", hex(hash)))
                })?;
            fps[slot] = fingerprint(hash);
            ords[slot] = ord as u32;
        }
        drop(keys);
        let build = started.elapsed();
        let out = Output {
            first: self.first,
            last: self.last,
            scheme,
            mph: &mph,
            offsets: &offsets,
            fps: &fps,
            ords: &ords,
        };
        let file_bytes = out.write(path, build)?;
        Ok(info(
            self.first,
            self.last,
            n as u64,
            file_bytes,
            mph.write_bytes(),
            build,
        ))
    }
}

/// The parts of a segment file, written in order.
struct Output<'a> {
    first: u32,
    last: u32,
    scheme: KeyScheme,
    mph: &'a Mph,
    offsets: &'a [u32],
    fps: &'a [u16],
    ords: &'a [u32],
}

impl Output<'_> {
    /// Writes the file (fsynced) and returns its size.
    fn write(&self, path: &Path, build: std::time::Duration) -> SegmentResult<u64> {
        let io = |action| SegmentError::io(path, action);
        let n = self.fps.len();
        let mph_bytes = self.mph.write_bytes();
        let file = File::create(path).map_err(io("creating"))?;
        let mut w = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
        let mut header = Vec::with_capacity(HEADER_BYTES);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&self.scheme.kind().to_le_bytes());
        header.extend_from_slice(&self.first.to_le_bytes());
        header.extend_from_slice(&self.last.to_le_bytes());
        header.extend_from_slice(&(n as u64).to_le_bytes());
        header.extend_from_slice(&(mph_bytes as u64).to_le_bytes());
        let micros = u64::try_from(build.as_micros()).unwrap_or(u64::MAX);
        header.extend_from_slice(&micros.to_le_bytes());
        header.extend_from_slice(&self.scheme.salt_bytes());
        debug_assert_eq!(header.len(), HEADER_BYTES);
        w.write_all(&header).map_err(io("writing"))?;
        self.mph.write(&mut w).map_err(io("writing"))?;
        for o in self.offsets {
            w.write_all(&o.to_le_bytes()).map_err(io("writing"))?;
        }
        for f in self.fps {
            w.write_all(&f.to_le_bytes()).map_err(io("writing"))?;
        }
        let packed = pack(self.ords, ordinal_bits(n));
        w.write_all(&packed).map_err(io("writing"))?;
        let digest = w.digest();
        let mut inner = w.into_inner();
        inner.write_all(&digest).map_err(io("writing"))?;
        let file = inner
            .into_inner()
            .map_err(|e| SegmentError::io(path, "flushing")(e.into_error()))?;
        file.sync_all().map_err(io("syncing"))?;
        Ok((HEADER_BYTES
            + mph_bytes
            + 4 * self.offsets.len()
            + 2 * n
            + packed.len()
            + CHECKSUM_BYTES) as u64)
    }
}

/// `values` packed little-endian at `bits` each, then 8 zero bytes so that
/// a reader may load any value with one unaligned 8-byte read.
pub(crate) fn pack(values: &[u32], bits: u32) -> Vec<u8> {
    let total = (values.len() as u64 * u64::from(bits)).div_ceil(8) as usize;
    let mut out = vec![0u8; total + 8];
    for (i, &v) in values.iter().enumerate() {
        let bit = i as u64 * u64::from(bits);
        let at = (bit / 8) as usize;
        let mut word = [0u8; 8];
        word.copy_from_slice(&out[at..at + 8]);
        let merged = u64::from_le_bytes(word) | (u64::from(v) << (bit % 8));
        out[at..at + 8].copy_from_slice(&merged.to_le_bytes());
    }
    out
}

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
