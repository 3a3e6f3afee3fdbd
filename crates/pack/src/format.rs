//! The pack file: one closed base range's ledgers and tx bodies, in
//! position order, as the store holds them (already compressed), with
//! offset tables so that any one ledger or body is one ranged read.
//!
//! ```text
//! 0      header, 64 B (all integers big-endian):
//!          0  magic "LSPACK01"
//!          8  u32 version (1)
//!         12  u32 first ledger, 16 u32 last ledger
//!         20  u32 reserved (0)
//!         24  u64 bodies (transactions plus aliases)
//!         32  u64 ledger table offset
//!         40  u64 body table offset
//!         48  u64 file size
//!         56  u32 CRC-32 of bytes 0..56, 60 u32 reserved (0)
//! 64     for each ledger first..=last: its stored record (the `ledgers`
//!        value: zstd of a LedgerRecord), then its bodies in position
//!        order (the `tx_bodies` values)
//! LT     ledger table: one 24-byte entry per ledger, in seq order:
//!        u64 offset, u32 length, u32 CRC-32 of the record,
//!        u32 ordinal of the ledger's first body, u32 bodies
//! BT     body table: one 16-byte entry per body, in position order:
//!        u64 offset, u32 length, u32 CRC-32 of the body
//! size   end of file
//! ```
//!
//! A reader fetches the header once, then table pages ([`LEDGER_PAGE`]
//! entries, [`BODY_PAGE`] entries), then the entry itself, and checks each
//! entry against its CRC; the manifest's SHA-256 covers the whole file.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{PackError, PackResult};

/// The pack's magic bytes.
pub const MAGIC: &[u8; 8] = b"LSPACK01";
/// The format version written.
pub const VERSION: u32 = 1;
/// Header bytes.
pub const HEADER: u64 = 64;
/// Bytes of a ledger table entry.
pub const LEDGER_ENTRY: u64 = 24;
/// Bytes of a body table entry.
pub const BODY_ENTRY: u64 = 16;
/// Ledger entries per table page a reader fetches (3 KiB).
pub const LEDGER_PAGE: u64 = 128;
/// Body entries per table page a reader fetches (4 KiB).
pub const BODY_PAGE: u64 = 256;

/// A pack's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// Bodies (transactions plus aliases).
    pub bodies: u64,
    /// Offset of the ledger table.
    pub ledger_table: u64,
    /// Offset of the body table.
    pub body_table: u64,
    /// File size.
    pub size: u64,
}

impl Header {
    /// Ledgers in the pack.
    pub fn ledgers(&self) -> u64 {
        u64::from(self.last) - u64::from(self.first) + 1
    }

    fn encode(&self) -> [u8; HEADER as usize] {
        let mut h = [0u8; HEADER as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_be_bytes());
        h[12..16].copy_from_slice(&self.first.to_be_bytes());
        h[16..20].copy_from_slice(&self.last.to_be_bytes());
        h[24..32].copy_from_slice(&self.bodies.to_be_bytes());
        h[32..40].copy_from_slice(&self.ledger_table.to_be_bytes());
        h[40..48].copy_from_slice(&self.body_table.to_be_bytes());
        h[48..56].copy_from_slice(&self.size.to_be_bytes());
        let crc = crc32fast::hash(&h[..56]);
        h[56..60].copy_from_slice(&crc.to_be_bytes());
        h
    }

    /// Parses and checks a header: magic, version, CRC, and that the
    /// tables fill the file exactly.
    pub fn parse(b: &[u8]) -> PackResult<Self> {
        let bad = |what: String| PackError::Format(format!("pack header: {what}"));
        let b: &[u8; HEADER as usize] = b
            .get(..HEADER as usize)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| bad(format!("{} bytes, expected {HEADER}", b.len())))?;
        if &b[..8] != MAGIC {
            return Err(bad(format!("magic {:?}, expected LSPACK01", &b[..8])));
        }
        let version = be32(&b[8..12]);
        if version != VERSION {
            return Err(bad(format!(
                "version {version}; this build reads {VERSION}"
            )));
        }
        let crc = be32(&b[56..60]);
        if crc32fast::hash(&b[..56]) != crc {
            return Err(bad("CRC-32 mismatch".into()));
        }
        let h = Self {
            first: be32(&b[12..16]),
            last: be32(&b[16..20]),
            bodies: be64(&b[24..32]),
            ledger_table: be64(&b[32..40]),
            body_table: be64(&b[40..48]),
            size: be64(&b[48..56]),
        };
        let fits = h.first <= h.last
            && h.ledger_table >= HEADER
            && h.ledgers()
                .checked_mul(LEDGER_ENTRY)
                .and_then(|t| t.checked_add(h.ledger_table))
                == Some(h.body_table)
            && h.bodies
                .checked_mul(BODY_ENTRY)
                .and_then(|t| t.checked_add(h.body_table))
                == Some(h.size);
        if !fits {
            return Err(bad(format!(
                "tables do not fill the file: ledgers {}..={}, {} bodies, tables at {} and {}, \
                 size {}",
                h.first, h.last, h.bodies, h.ledger_table, h.body_table, h.size
            )));
        }
        Ok(h)
    }

    /// The byte range of ledger table page `page`.
    pub fn ledger_page(&self, page: u64) -> std::ops::Range<u64> {
        let start = self.ledger_table + page * LEDGER_PAGE * LEDGER_ENTRY;
        start..(start + LEDGER_PAGE * LEDGER_ENTRY).min(self.body_table)
    }

    /// The byte range of body table page `page`.
    pub fn body_page(&self, page: u64) -> std::ops::Range<u64> {
        let start = self.body_table + page * BODY_PAGE * BODY_ENTRY;
        start..(start + BODY_PAGE * BODY_ENTRY).min(self.size)
    }

    /// The entry's byte range, checked to lie in the data section.
    pub fn data_range(&self, e: &Entry) -> PackResult<std::ops::Range<u64>> {
        let end = e.offset.checked_add(u64::from(e.len));
        match end {
            Some(end) if e.offset >= HEADER && end <= self.ledger_table => Ok(e.offset..end),
            _ => Err(PackError::Format(format!(
                "an entry at {} of {} bytes lies outside the data section (64..{})",
                e.offset, e.len, self.ledger_table
            ))),
        }
    }
}

/// Where an entry's bytes are, and their CRC-32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Offset in the file.
    pub offset: u64,
    /// Length.
    pub len: u32,
    /// CRC-32 of the bytes.
    pub crc: u32,
}

impl Entry {
    fn of(offset: u64, bytes: &[u8]) -> PackResult<Self> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| PackError::Format(format!("an entry of {} bytes", bytes.len())))?;
        Ok(Self {
            offset,
            len,
            crc: crc32fast::hash(bytes),
        })
    }

    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_be_bytes());
        out.extend_from_slice(&self.len.to_be_bytes());
        out.extend_from_slice(&self.crc.to_be_bytes());
    }

    fn parse(b: &[u8]) -> Self {
        Self {
            offset: be64(&b[..8]),
            len: be32(&b[8..12]),
            crc: be32(&b[12..16]),
        }
    }

    /// Checks fetched bytes against the entry.
    pub fn check(&self, bytes: &[u8]) -> PackResult<()> {
        if bytes.len() != self.len as usize {
            return Err(PackError::Format(format!(
                "the entry at {} is {} bytes, expected {}",
                self.offset,
                bytes.len(),
                self.len
            )));
        }
        let got = crc32fast::hash(bytes);
        if got != self.crc {
            return Err(PackError::Format(format!(
                "the entry at {} ({} bytes) fails its CRC-32 ({got:08x}, expected {:08x})",
                self.offset, self.len, self.crc
            )));
        }
        Ok(())
    }
}

/// A ledger table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerEntry {
    /// The stored ledger record.
    pub record: Entry,
    /// Ordinal (in the pack) of the ledger's first body.
    pub first_body: u32,
    /// Bodies of the ledger (transactions plus aliases).
    pub bodies: u32,
}

impl LedgerEntry {
    /// Entry `i` of a ledger table page.
    pub fn at(page: &[u8], i: u64) -> PackResult<Self> {
        let b = slice(page, i, LEDGER_ENTRY, "ledger table")?;
        Ok(Self {
            record: Entry::parse(&b[..16]),
            first_body: be32(&b[16..20]),
            bodies: be32(&b[20..24]),
        })
    }
}

/// Entry `i` of a body table page.
pub fn body_at(page: &[u8], i: u64) -> PackResult<Entry> {
    Ok(Entry::parse(slice(page, i, BODY_ENTRY, "body table")?))
}

fn slice<'a>(page: &'a [u8], i: u64, size: u64, what: &str) -> PackResult<&'a [u8]> {
    let start = (i * size) as usize;
    page.get(start..start + size as usize).ok_or_else(|| {
        PackError::Format(format!(
            "{what} page of {} bytes has no entry {i}",
            page.len()
        ))
    })
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

/// What [`PackWriter::finish`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackInfo {
    /// The file.
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// SHA-256 of the whole file, hex.
    pub sha256: String,
}

/// Writes a pack to a local file, ledger by ledger. Tables are kept in
/// memory until [`PackWriter::finish`] (40 B a body, 24 B a ledger).
#[derive(Debug)]
pub struct PackWriter {
    out: BufWriter<File>,
    path: PathBuf,
    first: u32,
    last: u32,
    next: Option<u32>,
    off: u64,
    ledgers: Vec<u8>,
    bodies: Vec<u8>,
    body_count: u64,
}

impl PackWriter {
    /// Creates `path` for ledgers `first..=last`.
    pub fn create(path: &Path, first: u32, last: u32) -> PackResult<Self> {
        if first > last {
            return Err(PackError::Order {
                first,
                last,
                detail: "first ledger after last".into(),
            });
        }
        let f = File::create(path).map_err(PackError::io(path, "create"))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        out.write_all(&[0u8; HEADER as usize])
            .map_err(PackError::io(path, "write"))?;
        Ok(Self {
            out,
            path: path.to_path_buf(),
            first,
            last,
            next: Some(first),
            off: HEADER,
            ledgers: Vec::new(),
            bodies: Vec::new(),
            body_count: 0,
        })
    }

    /// Appends ledger `seq` (the next one) with its stored record and
    /// bodies.
    pub fn push_ledger(&mut self, seq: u32, record: &[u8], bodies: &[Vec<u8>]) -> PackResult<()> {
        if self.next != Some(seq) {
            return Err(PackError::Order {
                first: self.first,
                last: self.last,
                detail: format!("ledger {seq} pushed, expected {:?}", self.next),
            });
        }
        let first_body = u32::try_from(self.body_count).map_err(|_| PackError::Order {
            first: self.first,
            last: self.last,
            detail: "more than 2^32 bodies".into(),
        })?;
        Entry::of(self.off, record)?.put(&mut self.ledgers);
        self.ledgers.extend_from_slice(&first_body.to_be_bytes());
        self.ledgers
            .extend_from_slice(&(bodies.len() as u32).to_be_bytes());
        self.write(record)?;
        for b in bodies {
            Entry::of(self.off, b)?.put(&mut self.bodies);
            self.write(b)?;
            self.body_count += 1;
        }
        self.next = seq.checked_add(1).filter(|n| *n <= self.last);
        Ok(())
    }

    fn write(&mut self, b: &[u8]) -> PackResult<()> {
        self.out
            .write_all(b)
            .map_err(PackError::io(&self.path, "write"))?;
        self.off += b.len() as u64;
        Ok(())
    }

    /// Writes the tables and the header, fsyncs, and hashes the file.
    pub fn finish(mut self) -> PackResult<PackInfo> {
        if let Some(n) = self.next {
            return Err(PackError::Order {
                first: self.first,
                last: self.last,
                detail: format!("finished before ledger {n}"),
            });
        }
        let ledger_table = self.off;
        let ledgers = std::mem::take(&mut self.ledgers);
        let bodies = std::mem::take(&mut self.bodies);
        self.write(&ledgers)?;
        let body_table = self.off;
        self.write(&bodies)?;
        let header = Header {
            first: self.first,
            last: self.last,
            bodies: self.body_count,
            ledger_table,
            body_table,
            size: self.off,
        };
        let path = self.path.clone();
        let io = |a| PackError::io(&path, a);
        let mut f = self
            .out
            .into_inner()
            .map_err(|e| io("write")(e.into_error()))?;
        f.seek(SeekFrom::Start(0)).map_err(io("seek"))?;
        f.write_all(&header.encode()).map_err(io("write"))?;
        f.sync_all().map_err(io("fsync"))?;
        drop(f);
        let sha256 = sha256_file(&path)?;
        Ok(PackInfo {
            path,
            header,
            sha256,
        })
    }
}

/// SHA-256 of a file, hex.
pub fn sha256_file(path: &Path) -> PackResult<String> {
    let mut f = File::open(path).map_err(PackError::io(path, "open"))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(PackError::io(path, "read"))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// SHA-256 of bytes, hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
