//! Bulk writes as SST files, handed to RocksDB whole.
//!
//! A bulk write of block-compressed values whose keys arrive in ascending
//! order (a batch of `indexed` bodies, keyed by position) does not need the
//! memtable: RocksDB would copy each value into its skip list, flush it
//! later in key order and compress it on the way out. Writing the SST
//! directly ([`rocksdb::SstFileWriter`], with the table's own options, so
//! the same blocks, compression and dictionary) and ingesting it at commit
//! skips the copy and the skip list, and leaves no memtable behind to
//! flush. Files are cut at the table's file size; each is ingested by
//! moving it into the DB (hard-linked; copied where the file system has no
//! hard links). A file whose keys follow everything stored goes to the
//! bottom level without being rewritten; one that overlaps stored keys (a
//! batch written again after a rollback, or one that begins with a
//! dictionary key, which sorts below every position) lands above them,
//! newer, and compaction merges it, as a flushed memtable would.
//!
//! The writer drops each file's pages from the page cache as it writes
//! (RocksDB's `invalidate_page_cache`, which rust-rocksdb does not
//! expose): a backfill does not fill the cache with bodies, and the first
//! read of a new body comes from the device.
//!
//! Files in progress sit in the DB dir as `bulk-*.sst.part` (names RocksDB
//! does not own and ignores) until ingested; a write dropped before commit
//! removes its own, and opening the table read-write removes any left by a
//! crash.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rocksdb::{DB, IngestExternalFileOptions, Options, SstFileWriter};

/// Suffix of a bulk file not yet ingested.
const PART_SUFFIX: &str = ".sst.part";

/// Distinguishes the files of concurrent writes in one process.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// The SST files of one bulk write: at most one open, the rest finished
/// and waiting for [`BulkFiles::ingest`].
pub(crate) struct BulkFiles<'a> {
    opts: &'a Options,
    dir: &'a Path,
    /// Compressed bytes at which a file is cut.
    file_bytes: u64,
    open: Option<(SstFileWriter<'a>, PathBuf)>,
    finished: Vec<PathBuf>,
    /// Bytes of the finished files.
    finished_bytes: u64,
    /// The last key put, empty before the first.
    last_key: Vec<u8>,
    any: bool,
}

impl<'a> BulkFiles<'a> {
    pub(crate) fn new(opts: &'a Options, dir: &'a Path, file_bytes: u64) -> Self {
        Self {
            opts,
            dir,
            file_bytes,
            open: None,
            finished: Vec::new(),
            finished_bytes: 0,
            last_key: Vec::new(),
            any: false,
        }
    }

    /// True when `key` sorts after every key put so far (an SST's keys must
    /// be strictly ascending).
    pub(crate) fn accepts(&self, key: &[u8]) -> bool {
        !self.any || key > self.last_key.as_slice()
    }

    /// Appends one entry; the caller checked [`BulkFiles::accepts`].
    pub(crate) fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), rocksdb::Error> {
        if self.open.is_none() {
            let path = self.dir.join(format!(
                "bulk-{}-{}{PART_SUFFIX}",
                std::process::id(),
                NEXT_FILE.fetch_add(1, Ordering::Relaxed)
            ));
            let w = SstFileWriter::create(self.opts);
            w.open(&path)?;
            self.open = Some((w, path));
        }
        let Some((w, _)) = self.open.as_mut() else {
            unreachable!("opened above")
        };
        w.put(key, value)?;
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.any = true;
        if w.file_size() >= self.file_bytes {
            self.finish_file()?;
        }
        Ok(())
    }

    /// Finishes (and syncs) the open file, if any.
    pub(crate) fn finish_file(&mut self) -> Result<(), rocksdb::Error> {
        if let Some((mut w, path)) = self.open.take() {
            // Listed first: a failed finish still leaves a file to remove.
            self.finished.push(path);
            w.finish()?;
            self.finished_bytes += w.file_size();
        }
        Ok(())
    }

    /// Finishes the open file and moves every finished one into `db`; they
    /// are durable and visible when this returns. Returns their bytes.
    pub(crate) fn ingest(&mut self, db: &DB) -> Result<u64, rocksdb::Error> {
        self.finish_file()?;
        if self.finished.is_empty() {
            return Ok(0);
        }
        let mut o = IngestExternalFileOptions::default();
        // Moved (hard-linked, the original removed), not copied. RocksDB
        // copies by itself only when the link is "not supported" (EXDEV,
        // ENOTSUP); a file system that refuses links otherwise (EPERM on
        // vfat and some FUSE mounts) gets a copy here. A failed ingest
        // changes nothing, so the second try starts clean.
        o.set_move_files(true);
        if let Err(linked) = db.ingest_external_file_opts(&o, self.finished.clone()) {
            tracing::warn!(
                error = %linked,
                dir = %self.dir.display(),
                "moving bulk SST files into RocksDB failed; copying them"
            );
            o.set_move_files(false);
            db.ingest_external_file_opts(&o, self.finished.clone())?;
            for path in &self.finished {
                let _ = std::fs::remove_file(path);
            }
        }
        self.finished.clear();
        Ok(std::mem::take(&mut self.finished_bytes))
    }
}

impl Drop for BulkFiles<'_> {
    fn drop(&mut self) {
        // Files not ingested: the write was abandoned or failed.
        if let Some((w, path)) = self.open.take() {
            drop(w);
            self.finished.push(path);
        }
        for path in self.finished.drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Removes bulk files a crashed process left in `dir` (never ingested, so
/// never visible).
pub(crate) fn remove_leftovers(dir: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("bulk-") && name.ends_with(PART_SUFFIX) {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}
