//! The streaming, partitioned segment writer: bounded memory for any
//! number of keys.
//!
//! Hashes arrive ledger by ledger in position order. Each goes to one of
//! `P = ⌈n / part_keys⌉` partitions, chosen by the high bits of its salted
//! key, and waits there (in memory for one partition, else in a temporary
//! file per partition). `finish` then builds one MPH per partition, holding
//! only that partition's keys (~80 bytes each at peak), and streams the
//! packed records (fingerprint and ordinal) and MPHs to spool files that
//! are assembled, behind the header, into the segment file.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ph::fmph::keyset::SliceSourceWithRefs;
use ph::fmph::{GOBuildConf, GOConf};

use crate::hashing::HashingWriter;
use crate::repeat::{self, Repeat};
use crate::{
    CHECKSUM_BYTES, FINGERPRINT_BITS, HEADER_BYTES, KeyScheme, MAGIC, MPH_PREFIX, Mph,
    OFFSET_BLOCK, SegmentError, SegmentInfo, SegmentResult, VERSION, fingerprint, hex, info,
    ordinal_bits, page_align, partition,
};

/// Keys per partition at most: a partition's build holds ~80 bytes a key
/// (~340 MB), whatever the segment's size.
pub const PART_KEYS: u64 = 1 << 22;

/// Why a build must start over with another salt.
#[derive(Debug)]
pub(crate) enum Retry {
    /// Two distinct hashes mixed to one key under this salt.
    Collision,
    /// The MPH build did not converge.
    NoConverge,
}

/// Writes one segment from hashes pushed ledger by ledger.
pub struct SegmentWriter {
    first: u32,
    last: u32,
    keys: u64,
    scheme: KeyScheme,
    parts: usize,
    /// First ordinal of each ledger pushed so far.
    offsets: Vec<u32>,
    next_seq: u32,
    ord: u32,
    sink: Sink,
    started: Instant,
    /// Set by the owner to stop the build between partitions.
    cancel: Option<Arc<AtomicBool>>,
}

/// Where pushed `(hash, ordinal)` pairs wait for their partition's build.
enum Sink {
    Memory(Vec<([u8; 32], u32)>),
    Files(Vec<(PathBuf, BufWriter<File>)>),
}

impl std::fmt::Debug for SegmentWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SegmentWriter")
            .field("first", &self.first)
            .field("last", &self.last)
            .field("keys", &self.keys)
            .field("parts", &self.parts)
            .finish()
    }
}

impl SegmentWriter {
    /// A writer for `first..=last` that will receive exactly `keys` hashes.
    /// Partition files, if any, are `<tmp>.part-<p>`; `finish` removes them.
    pub fn new(first: u32, last: u32, keys: u64, tmp: &Path) -> SegmentResult<Self> {
        Self::with(
            first,
            last,
            keys,
            tmp,
            KeyScheme::salted(crate::fresh_salt()),
            PART_KEYS,
        )
    }

    pub(crate) fn with(
        first: u32,
        last: u32,
        keys: u64,
        tmp: &Path,
        scheme: KeyScheme,
        part_keys: u64,
    ) -> SegmentResult<Self> {
        if first > last {
            return Err(SegmentError::Invalid(format!(
                "segment range {first}..={last} is empty"
            )));
        }
        if u32::try_from(keys).is_err() {
            return Err(SegmentError::Invalid(format!(
                "{keys} keys exceed a segment's 2^32 limit: use a smaller range"
            )));
        }
        // Kind 1 keys cannot be spread over partitions by salted bits.
        let parts = if scheme == KeyScheme::Prefix {
            1
        } else {
            keys.div_ceil(part_keys.max(1)).max(1) as usize
        };
        let sink = if parts == 1 {
            Sink::Memory(Vec::with_capacity(keys as usize))
        } else {
            let mut files = Vec::with_capacity(parts);
            for p in 0..parts {
                let path = suffixed(tmp, &format!("part-{p}"));
                let f = File::create(&path).map_err(SegmentError::io(&path, "creating"))?;
                files.push((path, BufWriter::with_capacity(1 << 16, f)));
            }
            Sink::Files(files)
        };
        Ok(Self {
            first,
            last,
            keys,
            scheme,
            parts,
            offsets: vec![0],
            next_seq: first,
            ord: 0,
            sink,
            started: Instant::now(),
            cancel: None,
        })
    }

    /// Makes `finish` give up with [`SegmentError::Cancelled`] once `flag`
    /// is set, checked before each partition's build (a partition of 2^22
    /// keys builds in seconds), so an owner that stops does not wait for a
    /// whole window.
    pub fn cancel_on(&mut self, flag: Arc<AtomicBool>) {
        self.cancel = Some(flag);
    }

    /// Partitions the segment will have.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// Adds ledger `seq`'s hashes in apply order. Ledgers come in order;
    /// one not pushed holds no transactions.
    pub fn push_ledger(&mut self, seq: u32, hashes: &[[u8; 32]]) -> SegmentResult<()> {
        if seq < self.next_seq || seq > self.last {
            return Err(SegmentError::Invalid(format!(
                "ledger {seq} pushed out of order or outside {}..={} (next is {})",
                self.first, self.last, self.next_seq
            )));
        }
        if u64::from(self.ord) + hashes.len() as u64 > self.keys {
            return Err(SegmentError::Invalid(format!(
                "more than the {} keys announced for {}..={}",
                self.keys, self.first, self.last
            )));
        }
        while self.offsets.len() <= (seq - self.first) as usize {
            self.offsets.push(self.ord);
        }
        for h in hashes {
            let p = partition(self.scheme.key(h), self.parts);
            match &mut self.sink {
                Sink::Memory(v) => v.push((*h, self.ord)),
                Sink::Files(files) => {
                    let (path, w) = &mut files[p];
                    w.write_all(h)
                        .and_then(|()| w.write_all(&self.ord.to_le_bytes()))
                        .map_err(SegmentError::io(path, "writing"))?;
                }
            }
            self.ord += 1;
        }
        self.next_seq = seq + 1;
        Ok(())
    }

    /// Builds the partitions and writes the segment to `path` (fsynced).
    pub fn finish(self, path: &Path) -> SegmentResult<SegmentInfo> {
        let (first, last) = (self.first, self.last);
        match self.finish_or_retry(path)? {
            Ok(info) => Ok(info),
            Err(why) => Err(SegmentError::Invalid(format!(
                "segment {first}..={last}: {} (a retry draws a new salt)",
                match why {
                    Retry::Collision => "the salt mixed two hashes to one key",
                    Retry::NoConverge => "the MPH build did not converge",
                }
            ))),
        }
    }

    pub(crate) fn finish_or_retry(
        mut self,
        path: &Path,
    ) -> SegmentResult<Result<SegmentInfo, Retry>> {
        if u64::from(self.ord) != self.keys {
            return Err(SegmentError::Invalid(format!(
                "{} keys announced for {}..={}, {} pushed",
                self.keys, self.first, self.last, self.ord
            )));
        }
        let ledgers = (self.last - self.first) as usize + 1;
        while self.offsets.len() <= ledgers {
            self.offsets.push(self.ord);
        }
        let mut recs = BitSpool::new(Spool::new(path, "recs", self.parts)?);
        let mut mphs = Spool::new(path, "mph", self.parts)?;
        let mut dir = Vec::with_capacity(self.parts);
        let bits = FINGERPRINT_BITS + ordinal_bits(self.keys as usize);
        let sink = std::mem::replace(&mut self.sink, Sink::Memory(Vec::new()));
        let mut loaded = Loader::new(sink);
        for p in 0..self.parts {
            if self
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::Relaxed))
            {
                loaded.remove_files();
                return Err(SegmentError::Cancelled);
            }
            let entries = loaded.take(p)?;
            let built = match build_part(self.scheme, &entries)? {
                Ok(b) => b,
                Err(retry) => {
                    loaded.remove_files();
                    return Ok(Err(retry));
                }
            };
            for (f, o) in built.fps.iter().zip(&built.ords) {
                recs.push(u64::from(*f) | (u64::from(*o) << FINGERPRINT_BITS), bits)?;
            }
            let before = mphs.len;
            built
                .mph
                .write(&mut mphs)
                .map_err(SegmentError::io(path, "writing the MPH of"))?;
            dir.push((entries.len() as u64, mphs.len - before));
        }
        loaded.remove_files();
        let recs = recs.finish()?;
        let build = self.started.elapsed();
        let mph_section = 8 + 16 * dir.len() as u64 + mphs.len;
        let file_bytes = self.assemble(path, build, &dir, mph_section, [mphs, recs])?;
        Ok(Ok(info(
            self.first,
            self.last,
            self.keys,
            file_bytes,
            mph_section as usize,
            build,
        )))
    }

    /// Writes the header, the MPH section (partition directory, MPHs), the
    /// padding, the offsets and their sample, and the spooled records to
    /// `path`, then the checksum.
    fn assemble(
        &self,
        path: &Path,
        build: std::time::Duration,
        dir: &[(u64, u64)],
        mph_section: u64,
        spools: [Spool; 2],
    ) -> SegmentResult<u64> {
        let io = |action| SegmentError::io(path, action);
        let file = File::create(path).map_err(io("creating"))?;
        let mut w = HashingWriter::new(BufWriter::with_capacity(1 << 20, file));
        let mut header = Vec::with_capacity(HEADER_BYTES);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&self.scheme.kind().to_le_bytes());
        header.extend_from_slice(&self.first.to_le_bytes());
        header.extend_from_slice(&self.last.to_le_bytes());
        header.extend_from_slice(&self.keys.to_le_bytes());
        header.extend_from_slice(&mph_section.to_le_bytes());
        let micros = u64::try_from(build.as_micros()).unwrap_or(u64::MAX);
        header.extend_from_slice(&micros.to_le_bytes());
        header.extend_from_slice(&self.scheme.salt_bytes());
        debug_assert_eq!(header.len(), HEADER_BYTES);
        w.write_all(&header).map_err(io("writing"))?;
        w.write_all(&(dir.len() as u64).to_le_bytes())
            .map_err(io("writing"))?;
        for (keys, len) in dir {
            w.write_all(&keys.to_le_bytes())
                .and_then(|()| w.write_all(&len.to_le_bytes()))
                .map_err(io("writing"))?;
        }
        let [mphs, recs] = spools;
        mphs.copy_into(&mut w, path)?;
        let end = HEADER_BYTES as u64 + mph_section;
        let pad = usize::try_from(end)
            .ok()
            .and_then(|e| Some(page_align(e)? - e))
            .ok_or_else(|| {
                SegmentError::Invalid(format!("an MPH section of {mph_section} bytes"))
            })?;
        w.write_all(&vec![0u8; pad]).map_err(io("writing"))?;
        for o in &self.offsets {
            w.write_all(&o.to_le_bytes()).map_err(io("writing"))?;
        }
        for o in self.offsets.iter().step_by(OFFSET_BLOCK) {
            w.write_all(&o.to_le_bytes()).map_err(io("writing"))?;
        }
        recs.copy_into(&mut w, path)?;
        let digest = w.digest();
        let mut inner = w.into_inner();
        inner.write_all(&digest).map_err(io("writing"))?;
        let file = inner
            .into_inner()
            .map_err(|e| SegmentError::io(path, "flushing")(e.into_error()))?;
        file.sync_all().map_err(io("syncing"))?;
        file.metadata()
            .map(|m| m.len())
            .map_err(io("reading the size of"))
            .inspect(|len| debug_assert!(*len >= (HEADER_BYTES + CHECKSUM_BYTES) as u64))
    }
}

/// One partition's MPH and its slot arrays.
struct Part {
    mph: Mph,
    fps: Vec<u16>,
    ords: Vec<u32>,
}

/// Builds one partition: refuses a repeated hash by name, reports a salt
/// collision or a failed MPH build as a retry.
fn build_part(
    scheme: KeyScheme,
    entries: &[([u8; 32], u32)],
) -> SegmentResult<Result<Part, Retry>> {
    let n = entries.len();
    match repeat::find(n, |i| &entries[i].0, scheme == KeyScheme::Prefix) {
        Some(Repeat::Hash(a, b)) => {
            return Err(SegmentError::Invalid(format!(
                "tx hash {} appears twice (ordinals {} and {})",
                hex(&entries[a].0),
                entries[a].1,
                entries[b].1
            )));
        }
        Some(Repeat::Prefix(a, _)) => {
            return Err(SegmentError::Invalid(format!(
                "two hashes share the 128-bit prefix {} (MPH kind {MPH_PREFIX})",
                hex(&entries[a].0[..16])
            )));
        }
        None => {}
    }
    let keys: Vec<u128> = entries.iter().map(|(h, _)| scheme.key(h)).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Ok(Err(Retry::Collision));
    }
    drop(sorted);
    let conf = GOBuildConf::with_mt(
        GOConf {
            hash_builder: ph::seedable_hash::BuildWyHash,
            bits_per_seed: ph::seeds::TwoToPowerBitsStatic::<2>,
            bits_per_group: ph::seeds::TwoToPowerBitsStatic::<4>,
        },
        n > 100_000,
    );
    let Some(mph) =
        Mph::try_with_conf_stats(SliceSourceWithRefs::<_, u8>::new(&keys), conf, &mut ())
    else {
        return Ok(Err(Retry::NoConverge));
    };
    let mut fps = vec![0u16; n];
    let mut ords = vec![0u32; n];
    for ((hash, ord), key) in entries.iter().zip(&keys) {
        let slot = mph
            .get(key)
            .and_then(|s| usize::try_from(s).ok())
            .filter(|s| *s < n)
            .ok_or_else(|| {
                SegmentError::Invalid(format!("the MPH did not place key {}", hex(hash)))
            })?;
        fps[slot] = fingerprint(hash);
        ords[slot] = *ord;
    }
    Ok(Ok(Part { mph, fps, ords }))
}

/// Reads partitions back from the sink, one at a time.
struct Loader {
    sink: Sink,
}

impl Loader {
    fn new(sink: Sink) -> Self {
        Self { sink }
    }

    fn take(&mut self, p: usize) -> SegmentResult<Vec<([u8; 32], u32)>> {
        match &mut self.sink {
            Sink::Memory(v) => Ok(std::mem::take(v)),
            Sink::Files(files) => {
                let (path, w) = &mut files[p];
                w.flush().map_err(SegmentError::io(path, "writing"))?;
                let f = File::open(&*path).map_err(SegmentError::io(path, "opening"))?;
                let mut r = BufReader::with_capacity(1 << 16, f);
                let mut out = Vec::new();
                let mut rec = [0u8; 36];
                loop {
                    match r.read_exact(&mut rec) {
                        Ok(()) => {
                            let mut h = [0u8; 32];
                            h.copy_from_slice(&rec[..32]);
                            let o = u32::from_le_bytes([rec[32], rec[33], rec[34], rec[35]]);
                            out.push((h, o));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                        Err(e) => return Err(SegmentError::io(path, "reading")(e)),
                    }
                }
                let _ = std::fs::remove_file(&*path);
                Ok(out)
            }
        }
    }

    fn remove_files(&self) {
        if let Sink::Files(files) = &self.sink {
            for (path, _) in files {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// `<path>.<suffix>`, beside it.
fn suffixed(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}

/// Bytes spooled in memory (one partition) or to a temporary file.
struct Spool {
    len: u64,
    out: SpoolOut,
}

enum SpoolOut {
    Memory(Vec<u8>),
    File(PathBuf, BufWriter<File>),
}

impl Spool {
    fn new(path: &Path, what: &str, parts: usize) -> SegmentResult<Self> {
        let out = if parts == 1 {
            SpoolOut::Memory(Vec::new())
        } else {
            let p = suffixed(path, what);
            let f = File::create(&p).map_err(SegmentError::io(&p, "creating"))?;
            SpoolOut::File(p, BufWriter::with_capacity(1 << 20, f))
        };
        Ok(Self { len: 0, out })
    }

    fn write_all(&mut self, b: &[u8]) -> SegmentResult<()> {
        Write::write_all(self, b).map_err(|e| SegmentError::Io {
            action: "writing",
            path: "a segment spool file".into(),
            source: e,
        })
    }

    /// Appends the spooled bytes to `w`, then removes the file.
    fn copy_into(self, w: &mut impl Write, dest: &Path) -> SegmentResult<()> {
        match self.out {
            SpoolOut::Memory(v) => w.write_all(&v).map_err(SegmentError::io(dest, "writing")),
            SpoolOut::File(p, bw) => {
                let f = bw
                    .into_inner()
                    .map_err(|e| SegmentError::io(&p, "flushing")(e.into_error()))?;
                drop(f);
                let mut r = File::open(&p).map_err(SegmentError::io(&p, "opening"))?;
                std::io::copy(&mut r, w).map_err(SegmentError::io(dest, "writing"))?;
                let _ = std::fs::remove_file(&p);
                Ok(())
            }
        }
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = match &mut self.out {
            SpoolOut::Memory(v) => {
                v.extend_from_slice(buf);
                buf.len()
            }
            SpoolOut::File(_, w) => w.write(buf)?,
        };
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.out {
            SpoolOut::Memory(_) => Ok(()),
            SpoolOut::File(_, w) => w.flush(),
        }
    }
}

/// Packs values little-endian at a fixed bit width (at most 56) into a
/// spool; `finish`
/// pads with 8 zero bytes so a reader may load any value with one
/// unaligned 8-byte read.
struct BitSpool {
    spool: Spool,
    acc: u64,
    nbits: u32,
}

impl BitSpool {
    fn new(spool: Spool) -> Self {
        Self {
            spool,
            acc: 0,
            nbits: 0,
        }
    }

    fn push(&mut self, v: u64, bits: u32) -> SegmentResult<()> {
        debug_assert!(bits <= 56 && self.nbits < 8);
        self.acc |= (v & ((1u64 << bits) - 1)) << self.nbits;
        self.nbits += bits;
        while self.nbits >= 8 {
            self.spool.write_all(&[self.acc as u8])?;
            self.acc >>= 8;
            self.nbits -= 8;
        }
        Ok(())
    }

    fn finish(mut self) -> SegmentResult<Spool> {
        if self.nbits > 0 {
            self.spool.write_all(&[self.acc as u8])?;
        }
        self.spool.write_all(&[0u8; 8])?;
        Ok(self.spool)
    }
}
