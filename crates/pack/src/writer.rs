//! Writing a pack ([`PackWriter`]) in any of the forms [`crate::format`]
//! lays out: entries (version 2), ledger frames (version 3) and ledger
//! frames with the pack's dictionary (version 4).

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::dict::FrameDict;
use crate::error::{PackError, PackResult};
use crate::format::{
    Entry, HEADER, Header, MAX_DICT_STORED, Table, VERSION, VERSION_3, VERSION_4, is_frames,
    page_crc, sha256_file,
};
use crate::frame::{Framed, MAX_FRAME_RAW};

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
    version: u32,
    max_raw: u32,
    out: BufWriter<File>,
    path: PathBuf,
    first: u32,
    last: u32,
    next: Option<u32>,
    off: u64,
    ledgers: Vec<u8>,
    bodies: Vec<u8>,
    body_count: u64,
    max_entry: u32,
    /// Version 4: the dictionary's zstd frame, written after the ledger
    /// table.
    dict: Option<Vec<u8>>,
    /// Version 4: the dictionary's [`FrameDict::fingerprint`], which every frame
    /// must have been compressed with.
    dict_id: Option<u64>,
}

impl PackWriter {
    /// Creates `path` for ledgers `first..=last`, a pack of entries
    /// (version 2: [`PackWriter::push_ledger`]).
    pub fn create(path: &Path, first: u32, last: u32) -> PackResult<Self> {
        Self::create_version(path, first, last, VERSION)
    }

    /// Creates `path` for ledgers `first..=last`, a pack of ledger frames
    /// (version 3: [`PackWriter::push_frame`]).
    pub fn create_frames(path: &Path, first: u32, last: u32) -> PackResult<Self> {
        Self::create_version(path, first, last, VERSION_3)
    }

    /// Creates `path` for ledgers `first..=last`, a pack of ledger frames
    /// compressed with a dictionary (version 4: [`PackWriter::push_frame`]
    /// of frames made by a [`crate::frame::FrameEncoder`] of `dict`).
    pub fn create_frames_with_dict(
        path: &Path,
        first: u32,
        last: u32,
        dict: &FrameDict,
    ) -> PackResult<Self> {
        let stored = dict.stored().to_vec();
        if stored.is_empty() || stored.len() as u64 > MAX_DICT_STORED {
            return Err(PackError::Format(format!(
                "a stored dictionary of {} bytes; a reader allows 1..={MAX_DICT_STORED}",
                stored.len()
            )));
        }
        let mut w = Self::create_version(path, first, last, VERSION_4)?;
        w.dict = Some(stored);
        w.dict_id = Some(dict.fingerprint());
        Ok(w)
    }

    fn create_version(path: &Path, first: u32, last: u32, version: u32) -> PackResult<Self> {
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
            version,
            max_raw: 0,
            out,
            path: path.to_path_buf(),
            first,
            last,
            next: Some(first),
            off: HEADER,
            ledgers: Vec::new(),
            bodies: Vec::new(),
            body_count: 0,
            max_entry: 0,
            dict: None,
            dict_id: None,
        })
    }

    /// Appends ledger `seq` (the next one) with its stored record and
    /// bodies.
    pub fn push_ledger(&mut self, seq: u32, record: &[u8], bodies: &[Vec<u8>]) -> PackResult<()> {
        let first_body = self.next_ledger(seq, VERSION)?;
        let rec = Entry::of(self.off, record)?;
        self.max_entry = self.max_entry.max(rec.len);
        rec.put(&mut self.ledgers);
        self.ledgers.extend_from_slice(&first_body.to_be_bytes());
        self.ledgers
            .extend_from_slice(&(bodies.len() as u32).to_be_bytes());
        self.write(record)?;
        for b in bodies {
            let e = Entry::of(self.off, b)?;
            self.max_entry = self.max_entry.max(e.len);
            e.put(&mut self.bodies);
            self.write(b)?;
            self.body_count += 1;
        }
        self.next = seq.checked_add(1).filter(|n| *n <= self.last);
        Ok(())
    }

    /// Appends ledger `seq` (the next one) as its frame ([`Framed`], made
    /// by [`crate::frame::frame_ledger`], or for version 4 by the
    /// [`crate::frame::FrameEncoder`] of the pack's dictionary).
    pub fn push_frame(&mut self, seq: u32, framed: &Framed) -> PackResult<()> {
        let first_body = self.next_ledger(seq, VERSION_3)?;
        if framed.dict != self.dict_id {
            let how = match (framed.dict, self.dict_id) {
                (Some(_), Some(_)) => "with another dictionary than the pack's",
                (Some(_), None) => "with a dictionary",
                (None, _) => "without a dictionary",
            };
            return Err(PackError::Format(format!(
                "ledger {seq}'s frame was compressed {how}; the pack is version {}",
                self.version
            )));
        }
        if u64::from(framed.raw_len) > MAX_FRAME_RAW {
            return Err(PackError::Format(format!(
                "ledger {seq}'s frame of {} bytes exceeds the {} a reader allows",
                framed.raw_len, MAX_FRAME_RAW
            )));
        }
        let e = Entry::of(self.off, &framed.frame)?;
        self.max_entry = self.max_entry.max(e.len);
        self.max_raw = self.max_raw.max(framed.raw_len);
        e.put(&mut self.ledgers);
        self.ledgers.extend_from_slice(&first_body.to_be_bytes());
        self.ledgers.extend_from_slice(&framed.bodies.to_be_bytes());
        self.write(&framed.frame)?;
        self.body_count += u64::from(framed.bodies);
        self.next = seq.checked_add(1).filter(|n| *n <= self.last);
        Ok(())
    }

    /// Checks that `seq` is the ledger expected next, in a pack of
    /// `version`; returns the ordinal of its first body.
    fn next_ledger(&self, seq: u32, version: u32) -> PackResult<u32> {
        let order = |detail: String| PackError::Order {
            first: self.first,
            last: self.last,
            detail,
        };
        let same = self.version == version || (is_frames(self.version) && is_frames(version));
        if !same {
            return Err(order(format!(
                "a version-{version} ledger pushed into a version-{} pack",
                self.version
            )));
        }
        if self.next != Some(seq) {
            return Err(order(format!(
                "ledger {seq} pushed, expected {:?}",
                self.next
            )));
        }
        u32::try_from(self.body_count).map_err(|_| order("more than 2^32 bodies".into()))
    }

    fn write(&mut self, b: &[u8]) -> PackResult<()> {
        self.out
            .write_all(b)
            .map_err(PackError::io(&self.path, "write"))?;
        self.off += b.len() as u64;
        Ok(())
    }

    /// Writes a table's entries in pages, each followed by its CRC.
    fn write_table(&mut self, table: Table, entries: &[u8]) -> PackResult<()> {
        let page_bytes = (table.page() * table.entry()) as usize;
        for (page, chunk) in entries.chunks(page_bytes).enumerate() {
            self.write(chunk)?;
            self.write(&page_crc(table, page as u64, chunk).to_be_bytes())?;
        }
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
        self.write_table(Table::Ledger, &ledgers)?;
        let body_table = self.off;
        self.write_table(Table::Body, &bodies)?;
        if let Some(dict) = self.dict.take() {
            self.write(&dict)?;
            self.write(&crc32fast::hash(&dict).to_be_bytes())?;
        }
        let header = Header {
            version: self.version,
            max_raw: self.max_raw,
            max_entry: self.max_entry,
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
