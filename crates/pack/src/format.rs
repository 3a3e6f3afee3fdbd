//! The pack file: one closed base range's ledgers and tx bodies, in
//! position order, with offset tables so that any one ledger or body is
//! one ranged read. Three forms are written:
//!
//! - **Entries** (version 2): each record and body its own zstd frame (as
//!   the store holds them, or compressed at publish time where the store
//!   keeps them raw), a body one ranged read of its own.
//! - **Ledger frames** (version 3, [`crate::frame`]): each ledger's record
//!   and bodies in one zstd frame, compressed together (the bytes of a
//!   whole ledger compress like the lake's own objects, a body alone does
//!   not); a body is read by reading its ledger's frame. No body table.
//! - **Ledger frames with the pack's dictionary** (version 4): as version
//!   3, each frame compressed with a dictionary of whole ledger frames
//!   sampled from the pack itself ([`crate::dict::FrameDict`]), stored
//!   after the ledger table, so a ledger compresses like several of its
//!   neighbours at once while a read still decompresses one ledger.
//!
//! ```text
//! 0      header, 64 B (all integers big-endian):
//!          0  magic "LSPACK01"
//!          8  u32 version (2, 3 or 4; version 1 is still read)
//!         12  u32 first ledger, 16 u32 last ledger
//!         20  u32 the largest record, body or frame, bytes (version 1: 0)
//!         24  u64 bodies (transactions plus aliases)
//!         32  u64 ledger table offset
//!         40  u64 body table offset (version 3: the file size; version
//!             4: the dictionary's offset, DT)
//!         48  u64 file size
//!         56  u32 CRC-32 of bytes 0..56 (versions 3 and 4: of 0..56 and
//!             60..64)
//!         60  u32 versions 3 and 4: the largest ledger frame
//!             decompressed, bytes; versions 1 and 2: reserved (0)
//! 64     for each ledger first..=last: its stored record (the `ledgers`
//!        value: zstd of a LedgerRecord), then its bodies in position
//!        order (the `tx_bodies` values); version 3: one zstd frame of
//!        the ledger's record and bodies (crate::frame); version 4: the
//!        same, compressed with the pack's dictionary
//! LT     ledger table: one 24-byte entry per ledger, in seq order:
//!        u64 offset, u32 length, u32 CRC-32 of the record (versions 3
//!        and 4: of the frame), u32 ordinal of the ledger's first body,
//!        u32 bodies
//! BT     body table (versions 1 and 2): one 16-byte entry per body, in
//!        position order: u64 offset, u32 length, u32 CRC-32 of the body
//! DT     version 4: the dictionary, a zstd frame declaring its size (at
//!        most MAX_DICT raw), then a u32 CRC-32 of that frame's bytes
//! size   end of file
//! ```
//!
//! Both tables are read in pages of [`LEDGER_PAGE`] and [`BODY_PAGE`]
//! entries. In version 2 every page (the last one may be short) is followed
//! by a u32 CRC-32 of the table's tag (`L` or `B`), the page number (u64)
//! and the page's entries, so a page is one ranged read that checks
//! itself, and a page read from the wrong place fails its CRC. Version 1
//! has no page CRCs: its entries are checked only against the header's
//! bounds.
//!
//! A reader fetches the header once, then table pages, then the entry
//! itself, and checks each entry against its CRC; the manifest's SHA-256
//! covers the whole file.

use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{PackError, PackResult};

/// The pack's magic bytes.
pub const MAGIC: &[u8; 8] = b"LSPACK01";
/// The format version of packs of entries (a frame a record or body).
pub const VERSION: u32 = 2;
/// The format version of packs of ledger frames ([`crate::frame`]).
pub const VERSION_3: u32 = 3;
/// The format version of packs of ledger frames compressed with the
/// pack's own dictionary ([`crate::dict::FrameDict`]).
pub const VERSION_4: u32 = 4;
/// The oldest format version read (no table page CRCs).
pub const VERSION_1: u32 = 1;
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
/// Bytes of a table page's CRC (version 2).
pub const PAGE_CRC: u64 = 4;
/// Bytes of the dictionary's CRC (version 4).
pub const DICT_CRC: u64 = 4;
/// The most a version-4 pack's stored dictionary (its zstd frame) may be:
/// what [`MAX_DICT`] raw bytes compress to at worst, with
/// room to spare.
pub const MAX_DICT_STORED: u64 = MAX_DICT + (1 << 20);
/// The most a version-4 pack's dictionary may decompress to (16 MiB):
/// what a reader allocates for it at most, and the bound of `[cold]
/// pack_dict_kib`.
pub const MAX_DICT: u64 = 16 << 20;

/// One of the two tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Ledger,
    Body,
}

impl Table {
    pub(crate) fn entry(self) -> u64 {
        match self {
            Self::Ledger => LEDGER_ENTRY,
            Self::Body => BODY_ENTRY,
        }
    }

    pub(crate) fn page(self) -> u64 {
        match self {
            Self::Ledger => LEDGER_PAGE,
            Self::Body => BODY_PAGE,
        }
    }

    fn tag(self) -> u8 {
        match self {
            Self::Ledger => b'L',
            Self::Body => b'B',
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Ledger => "ledger table",
            Self::Body => "body table",
        }
    }
}

/// True for the versions of ledger frames (3 and 4).
pub(crate) fn is_frames(version: u32) -> bool {
    version == VERSION_3 || version == VERSION_4
}

/// The CRC-32 of a header: of bytes 0..56, and in versions 3 and 4 of
/// 60..64 too (the largest frame decompressed).
fn header_crc(version: u32, h: &[u8; HEADER as usize]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&h[..56]);
    if is_frames(version) {
        c.update(&h[60..64]);
    }
    c.finalize()
}

/// The CRC-32 of a version-2 table page.
pub(crate) fn page_crc(table: Table, page: u64, entries: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&[table.tag()]);
    h.update(&page.to_be_bytes());
    h.update(entries);
    h.finalize()
}

/// A pack's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The format version (1, 2, 3 or 4).
    pub version: u32,
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// The largest record or body in bytes (version 2; 0 in version 1,
    /// where only the data section bounds an entry).
    pub max_entry: u32,
    /// Bodies (transactions plus aliases).
    pub bodies: u64,
    /// Offset of the ledger table.
    pub ledger_table: u64,
    /// Offset of the body table (version 3: the file size; version 4: the
    /// dictionary's offset).
    pub body_table: u64,
    /// File size.
    pub size: u64,
    /// Versions 3 and 4: the largest ledger frame decompressed, bytes (what
    /// a reader allows a frame to decompress to); 0 in versions 1 and 2.
    pub max_raw: u32,
}

impl Header {
    /// Ledgers in the pack.
    pub fn ledgers(&self) -> u64 {
        u64::from(self.last) - u64::from(self.first) + 1
    }

    /// The header's bytes, its CRC included.
    pub fn encode(&self) -> [u8; HEADER as usize] {
        let mut h = [0u8; HEADER as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&self.version.to_be_bytes());
        h[12..16].copy_from_slice(&self.first.to_be_bytes());
        h[16..20].copy_from_slice(&self.last.to_be_bytes());
        h[20..24].copy_from_slice(&self.max_entry.to_be_bytes());
        h[24..32].copy_from_slice(&self.bodies.to_be_bytes());
        h[32..40].copy_from_slice(&self.ledger_table.to_be_bytes());
        h[40..48].copy_from_slice(&self.body_table.to_be_bytes());
        h[48..56].copy_from_slice(&self.size.to_be_bytes());
        if is_frames(self.version) {
            h[60..64].copy_from_slice(&self.max_raw.to_be_bytes());
        }
        let crc = header_crc(self.version, &h);
        h[56..60].copy_from_slice(&crc.to_be_bytes());
        h
    }

    /// True for a pack of ledger frames (versions 3 and 4): no body
    /// table, a body is read from its ledger's frame.
    pub fn frames(&self) -> bool {
        is_frames(self.version)
    }

    /// Version 4: where the pack's dictionary is (its zstd frame, then its
    /// CRC-32: [`crate::dict::DictReader::open`] takes these bytes).
    pub fn dict_range(&self) -> Option<Range<u64>> {
        (self.version == VERSION_4).then_some(self.body_table..self.size)
    }

    /// Bytes of a table of `n` entries in this header's version.
    fn table_len(version: u32, table: Table, n: u64) -> Option<u64> {
        if is_frames(version) && table == Table::Body {
            return Some(0);
        }
        let entries = n.checked_mul(table.entry())?;
        if version == VERSION_1 {
            return Some(entries);
        }
        entries.checked_add(n.div_ceil(table.page()).checked_mul(PAGE_CRC)?)
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
        if ![VERSION_1, VERSION, VERSION_3, VERSION_4].contains(&version) {
            return Err(bad(format!(
                "version {version}; this build reads {VERSION_1}, {VERSION}, {VERSION_3} and \
                 {VERSION_4}"
            )));
        }
        let crc = be32(&b[56..60]);
        if header_crc(version, b) != crc {
            return Err(bad("CRC-32 mismatch".into()));
        }
        let h = Self {
            version,
            first: be32(&b[12..16]),
            last: be32(&b[16..20]),
            max_entry: be32(&b[20..24]),
            bodies: be64(&b[24..32]),
            ledger_table: be64(&b[32..40]),
            body_table: be64(&b[40..48]),
            size: be64(&b[48..56]),
            max_raw: if is_frames(version) {
                be32(&b[60..64])
            } else {
                0
            },
        };
        if version == VERSION_1 && h.max_entry != 0 {
            return Err(bad(format!(
                "version 1 with bytes 20..24 = {}, expected 0",
                h.max_entry
            )));
        }
        let fits = h.first <= h.last
            && h.ledger_table >= HEADER
            && Self::table_len(version, Table::Ledger, h.ledgers())
                .and_then(|t| t.checked_add(h.ledger_table))
                == Some(h.body_table)
            && if version == VERSION_4 {
                // The dictionary's frame (at least a byte, at most what
                // MAX_DICT compresses to) and its CRC fill the rest.
                h.size
                    .checked_sub(h.body_table)
                    .is_some_and(|d| (DICT_CRC + 1..=DICT_CRC + MAX_DICT_STORED).contains(&d))
            } else {
                Self::table_len(version, Table::Body, h.bodies)
                    .and_then(|t| t.checked_add(h.body_table))
                    == Some(h.size)
            };
        if !fits {
            return Err(bad(format!(
                "tables do not fill the file: ledgers {}..={}, {} bodies, tables (or the \
                 dictionary) at {} and {}, size {}",
                h.first, h.last, h.bodies, h.ledger_table, h.body_table, h.size
            )));
        }
        Ok(h)
    }

    /// The byte range of page `page` of a table of `n` entries at `at`.
    fn page_range(&self, table: Table, at: u64, n: u64, page: u64) -> PackResult<Range<u64>> {
        if self.frames() && table == Table::Body {
            return Err(PackError::Format(
                "a body table page asked of a pack of ledger frames (versions 3 and 4), which has \
                 none"
                    .into(),
            ));
        }
        let per = table.page();
        let pages = n.div_ceil(per);
        if page >= pages {
            return Err(PackError::Format(format!(
                "{} page {page} asked for; the table has {pages} pages ({n} entries)",
                table.name()
            )));
        }
        let crc = if self.version == VERSION_1 {
            0
        } else {
            PAGE_CRC
        };
        let start = at + page * (per * table.entry() + crc);
        let entries = (n - page * per).min(per);
        Ok(start..start + entries * table.entry() + crc)
    }

    /// The byte range of ledger table page `page` (its CRC included).
    pub fn ledger_page(&self, page: u64) -> PackResult<Range<u64>> {
        self.page_range(Table::Ledger, self.ledger_table, self.ledgers(), page)
    }

    /// The byte range of body table page `page` (its CRC included).
    pub fn body_page(&self, page: u64) -> PackResult<Range<u64>> {
        self.page_range(Table::Body, self.body_table, self.bodies, page)
    }

    /// The entries of a fetched page `page`, checked against its length
    /// and (version 2) its CRC.
    fn entries<'a>(&self, table: Table, page: u64, bytes: &'a [u8]) -> PackResult<&'a [u8]> {
        let (at, n) = match table {
            Table::Ledger => (self.ledger_table, self.ledgers()),
            Table::Body => (self.body_table, self.bodies),
        };
        let want = self.page_range(table, at, n, page)?;
        if bytes.len() as u64 != want.end - want.start {
            return Err(PackError::Format(format!(
                "{} page {page} is {} bytes, expected {}",
                table.name(),
                bytes.len(),
                want.end - want.start
            )));
        }
        if self.version == VERSION_1 {
            return Ok(bytes);
        }
        let (entries, crc) = bytes.split_at(bytes.len() - PAGE_CRC as usize);
        let (got, want) = (page_crc(table, page, entries), be32(crc));
        if got != want {
            return Err(PackError::Format(format!(
                "{} page {page} fails its CRC-32 ({got:08x}, expected {want:08x})",
                table.name()
            )));
        }
        Ok(entries)
    }

    /// The entry of ledger `seq` from its fetched ledger table page (that
    /// of [`Header::ledger_page_of`]), checked: the page's CRC (version 2),
    /// the record inside the data section and no larger than the largest
    /// entry, the bodies inside the body table.
    pub fn ledger_entry(&self, page: &[u8], seq: u32) -> PackResult<LedgerEntry> {
        let (p, i) = self.ledger_page_of(seq)?;
        let entries = self.entries(Table::Ledger, p, page)?;
        let b = slice(entries, i, LEDGER_ENTRY, "ledger table")?;
        let le = LedgerEntry {
            record: Entry::parse(&b[..16]),
            first_body: be32(&b[16..20]),
            bodies: be32(&b[20..24]),
        };
        self.data_range(&le.record)
            .map_err(|e| PackError::Format(format!("ledger {seq}'s record: {e}")))?;
        let end = u64::from(le.first_body) + u64::from(le.bodies);
        if end > self.bodies {
            return Err(PackError::Format(format!(
                "ledger {seq}'s bodies {}..{end} lie outside the pack's {} bodies",
                le.first_body, self.bodies
            )));
        }
        Ok(le)
    }

    /// The ledger table page holding `seq`, and its index there.
    pub fn ledger_page_of(&self, seq: u32) -> PackResult<(u64, u64)> {
        if !(self.first..=self.last).contains(&seq) {
            return Err(PackError::Format(format!(
                "ledger {seq} asked of a pack of ledgers {}..={}",
                self.first, self.last
            )));
        }
        let i = u64::from(seq - self.first);
        Ok((i / LEDGER_PAGE, i % LEDGER_PAGE))
    }

    /// The body table page holding body `index` of a ledger, and the
    /// body's index there; `index` must be one of the ledger's bodies.
    pub fn body_page_of(&self, le: &LedgerEntry, index: u32) -> PackResult<(u64, u64)> {
        if self.frames() {
            return Err(PackError::Format(
                "a body table page asked of a pack of ledger frames (versions 3 and 4), which has \
                 none"
                    .into(),
            ));
        }
        if index >= le.bodies {
            return Err(PackError::Format(format!(
                "body {index} asked of a ledger of {} bodies",
                le.bodies
            )));
        }
        let o = u64::from(le.first_body) + u64::from(index);
        if o >= self.bodies {
            return Err(PackError::Format(format!(
                "body ordinal {o} asked of a pack of {} bodies",
                self.bodies
            )));
        }
        Ok((o / BODY_PAGE, o % BODY_PAGE))
    }

    /// Body `index` of ledger `le` from its fetched body table page (that
    /// of [`Header::body_page_of`]), checked: the page's CRC (version 2),
    /// the body inside the data section, after the ledger's record, and no
    /// larger than the largest entry.
    pub fn body_entry(&self, page: &[u8], le: &LedgerEntry, index: u32) -> PackResult<Entry> {
        let (p, i) = self.body_page_of(le, index)?;
        let entries = self.entries(Table::Body, p, page)?;
        let e = Entry::parse(slice(entries, i, BODY_ENTRY, "body table")?);
        self.data_range(&e)?;
        let record_end = le.record.offset.saturating_add(u64::from(le.record.len));
        if e.offset < record_end {
            return Err(PackError::Format(format!(
                "a body at {} lies before the end of its ledger's record ({record_end})",
                e.offset
            )));
        }
        Ok(e)
    }

    /// The entry's byte range, checked to lie in the data section and
    /// (version 2) to be no larger than the largest entry.
    pub fn data_range(&self, e: &Entry) -> PackResult<Range<u64>> {
        if self.version != VERSION_1 && e.len > self.max_entry {
            return Err(PackError::Format(format!(
                "an entry at {} of {} bytes; the largest in the pack is {}",
                e.offset, e.len, self.max_entry
            )));
        }
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
    pub(crate) fn of(offset: u64, bytes: &[u8]) -> PackResult<Self> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| PackError::Format(format!("an entry of {} bytes", bytes.len())))?;
        Ok(Self {
            offset,
            len,
            crc: crc32fast::hash(bytes),
        })
    }

    pub(crate) fn put(&self, out: &mut Vec<u8>) {
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

fn slice<'a>(page: &'a [u8], i: u64, size: u64, what: &str) -> PackResult<&'a [u8]> {
    let start = i.checked_mul(size).and_then(|s| usize::try_from(s).ok());
    start
        .and_then(|s| page.get(s..s.checked_add(size as usize)?))
        .ok_or_else(|| {
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
