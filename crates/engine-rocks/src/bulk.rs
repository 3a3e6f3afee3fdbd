//! Bulk writes as SST files, handed to RocksDB whole.
//!
//! A bulk write of block-compressed values whose keys are already sorted
//! (a batch of `indexed` bodies, keyed by position, handed over at once by
//! [`KvWrite::put_sorted`](ledgerstore_db_api::KvWrite::put_sorted)) does
//! not need the memtable: RocksDB would copy each value into a write batch
//! and then its skip list, flush it later in key order and compress it on
//! the way out. Writing the SSTs directly from the caller's slices
//! ([`rocksdb::SstFileWriter`], with the table's own options but, where
//! [`crate::RocksOptions::bulk_blocks`] says, their own block size and
//! zstd level) and ingesting them at commit skips both copies and the skip
//! list, and leaves no memtable of them behind to flush.
//!
//! The pairs are cut into files of 64 MiB of raw bytes (a `blocks` table's
//! memtable, so the size its flushes made), written on up to
//! [`max_threads`] scoped threads at once (as RocksDB's flushes compress
//! memtables in parallel); once one fails, the others take no new file. At commit every
//! file is moved into the DB in one ingestion (hard-linked; copied where
//! the file system has no hard links). A file whose keys follow everything
//! stored goes to the bottom level without being rewritten; one that
//! overlaps stored keys (a batch written again after a rollback, or,
//! without bulk blocks of their own, one that begins with a dictionary
//! key, which sorts below every position) lands above them, newer, and
//! compaction merges it, as a flushed memtable would.
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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use ledgerstore_db_api::DbResult;
use rocksdb::{IngestExternalFileOptions, Options, SstFileWriter};

use crate::shards::{Cf, Db};
use crate::table::{err, err_detail};

/// Suffix of a bulk file not yet ingested.
const PART_SUFFIX: &str = ".sst.part";

/// Distinguishes the files of concurrent writes in one process.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// Files written at once: the cores this process may use, up to 4.
pub(crate) fn max_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// True when every key is above the one before (an SST's keys must be).
pub(crate) fn strictly_ascending(pairs: &[(&[u8], &[u8])]) -> bool {
    pairs.windows(2).all(|w| w[0].0 < w[1].0)
}

/// Cuts `pairs` into runs of at least `file_bytes` raw bytes (the last
/// may be shorter): the index where each run ends.
fn cuts(pairs: &[(&[u8], &[u8])], file_bytes: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut bytes = 0usize;
    for (i, (k, v)) in pairs.iter().enumerate() {
        bytes += k.len() + v.len();
        if bytes >= file_bytes {
            ends.push(i + 1);
            bytes = 0;
        }
    }
    if ends.last() != Some(&pairs.len()) && !pairs.is_empty() {
        ends.push(pairs.len());
    }
    ends
}

/// The SST files of one bulk write, finished and waiting for
/// [`BulkFiles::ingest`].
pub(crate) struct BulkFiles {
    table: String,
    dir: PathBuf,
    finished: Vec<PathBuf>,
    /// Bytes of the finished files.
    finished_bytes: u64,
}

impl BulkFiles {
    pub(crate) fn new(table: &str, dir: &Path) -> Self {
        Self {
            table: table.to_string(),
            dir: dir.to_path_buf(),
            finished: Vec::new(),
            finished_bytes: 0,
        }
    }

    /// Writes `pairs` (strictly ascending: [`strictly_ascending`]) into
    /// files of about `file_bytes` raw bytes each, `threads` at a time.
    pub(crate) fn write_sorted(
        &mut self,
        opts: &Options,
        pairs: &[(&[u8], &[u8])],
        file_bytes: usize,
        threads: usize,
    ) -> DbResult<()> {
        let ends = cuts(pairs, file_bytes.max(1));
        let paths: Vec<PathBuf> = ends
            .iter()
            .map(|_| {
                self.dir.join(format!(
                    "bulk-{}-{}{PART_SUFFIX}",
                    std::process::id(),
                    NEXT_FILE.fetch_add(1, Ordering::Relaxed)
                ))
            })
            .collect();
        // Listed first: a file that fails half-written is removed too.
        self.finished.extend(paths.iter().cloned());
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let results: Vec<Result<u64, String>> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads.clamp(1, ends.len().max(1)))
                .map(|_| {
                    s.spawn(|| {
                        let mut done = Vec::new();
                        while !failed.load(Ordering::Relaxed) {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(&end) = ends.get(i) else {
                                break;
                            };
                            let start = if i == 0 { 0 } else { ends[i - 1] };
                            let r = write_file(opts, &paths[i], &pairs[start..end]);
                            failed.fetch_or(r.is_err(), Ordering::Relaxed);
                            done.push((i, r));
                        }
                        done
                    })
                })
                .collect();
            let mut all: Vec<(usize, Result<u64, String>)> = workers
                .into_iter()
                .flat_map(|w| {
                    w.join()
                        .unwrap_or_else(|_| vec![(0, Err("a bulk SST writer panicked".into()))])
                })
                .collect();
            all.sort_by_key(|(i, _)| *i);
            all.into_iter().map(|(_, r)| r).collect()
        });
        for r in results {
            self.finished_bytes += r.map_err(|e| err_detail(&self.table, e))?;
        }
        Ok(())
    }

    /// Moves every finished file into `cf` of `db` in one ingestion; they
    /// are durable and visible when this returns. Returns their bytes.
    pub(crate) fn ingest(&mut self, db: &Db, cf: &Cf<'_>) -> DbResult<u64> {
        if self.finished.is_empty() {
            return Ok(0);
        }
        let mut o = IngestExternalFileOptions::default();
        // Moved (hard-linked, the original removed), not copied. RocksDB
        // copies by itself only when the link is "not supported" (EXDEV,
        // ENOTSUP); any other failure to link (EPERM on vfat and some FUSE
        // mounts, but also ENOSPC or EIO) gets one copy here, whose own
        // error is returned if it fails too (the link's is logged). A
        // failed ingestion changes nothing, so the second try starts
        // clean.
        o.set_move_files(true);
        let moved = db.ingest_external_file_cf_opts(cf, &o, self.finished.clone());
        // RocksDB's message for a refused link (env/fs_posix.cc); any
        // other failure is returned as it is.
        if let Err(linked) = moved.as_ref().map_err(|e| e.to_string())
            && linked.contains("while link file to")
        {
            tracing::warn!(
                error = %linked,
                dir = %self.dir.display(),
                "moving bulk SST files into RocksDB failed; copying them"
            );
            o.set_move_files(false);
            db.ingest_external_file_cf_opts(cf, &o, self.finished.clone())
                .map_err(|e| err(&self.table, e))?;
            for path in &self.finished {
                let _ = std::fs::remove_file(path);
            }
        } else {
            moved.map_err(|e| err(&self.table, e))?;
        }
        self.finished.clear();
        Ok(std::mem::take(&mut self.finished_bytes))
    }
}

impl Drop for BulkFiles {
    fn drop(&mut self) {
        // Files not ingested: the write was abandoned or failed.
        for path in self.finished.drain(..) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes one file from strictly ascending pairs; returns its bytes.
fn write_file(opts: &Options, path: &Path, pairs: &[(&[u8], &[u8])]) -> Result<u64, String> {
    let mut w = SstFileWriter::create(opts);
    w.open(path).map_err(|e| e.into_string())?;
    for (k, v) in pairs {
        w.put(k, v).map_err(|e| e.into_string())?;
    }
    w.finish().map_err(|e| e.into_string())?; // synced
    Ok(w.file_size())
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
