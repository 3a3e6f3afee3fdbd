//! libmdbx implementation of [`KvStore`]: one MDBX environment per table, so
//! each table has its own page size and its own writer, and the two hash
//! tables of the hybrid layout commit concurrently.
//!
//! Durability: [`MdbxSync::Durable`] by default. Every commit fsyncs data
//! then the meta page, so a crash at any instant leaves the last committed
//! transaction intact and never corrupts the file. The faster modes are
//! documented in `docs/operations.md` with what each risks.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ledgerstore_db_api::{
    CommitTiming, DbError, DbResult, EngineKind, EngineStats, KvStore, KvWrite, TableBackup,
    dir_size,
};
use libmdbx::{
    Database, DatabaseOptions, Mode, NoWriteMap, PageSize, RW, ReadWriteOptions, SyncMode,
    TableFlags, Transaction, WriteFlags,
};

mod backup;
mod info;
mod readers;

pub use backup::DATA_FILE;

/// Commit durability of an MDBX environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MdbxSync {
    /// fsync data and meta on every commit: a committed batch survives power
    /// loss (the default, and what the high-water mark relies on).
    #[default]
    Durable,
    /// fsync data but not the meta page: a system crash may undo the last
    /// commit; the process crash is still safe.
    NoMetaSync,
    /// No fsync on commit; the last steady commit survives a system crash.
    SafeNoSync,
}

/// Options of one MDBX environment.
#[derive(Debug, Clone)]
pub struct MdbxOptions {
    /// Page size in bytes (a power of two, 256 B to 64 KiB). Fixed when the
    /// environment is created.
    pub page_size: usize,
    /// Upper bound of the file size. The map is reserved up front, so the
    /// file grows in place up to this without remapping.
    pub max_size: u64,
    /// Step by which the file grows.
    pub growth_step: u64,
    /// Commit durability.
    pub sync: MdbxSync,
    /// Reader slots.
    pub max_readers: u32,
    /// Longest a multi-key read (multi_get, scan) may hold its read
    /// transaction before it gives up (see `readers.rs`).
    pub max_read_txn: std::time::Duration,
}

impl Default for MdbxOptions {
    fn default() -> Self {
        Self {
            page_size: 4096,
            max_size: 8 << 40,    // 8 TiB: years of Stellar history per table
            growth_step: 1 << 30, // 1 GiB
            sync: MdbxSync::Durable,
            // Above tokio's 512 blocking threads, so concurrent queries never
            // run out of reader slots.
            max_readers: 1024,
            max_read_txn: std::time::Duration::from_secs(5),
        }
    }
}

/// One table in its own MDBX environment.
pub struct MdbxStore {
    table: String,
    path: PathBuf,
    db: Database<NoWriteMap>,
    page_size: u64,
    /// Page counters when this process opened the environment.
    ops_at_open: info::PageOps,
    /// Write transactions committed since open (each also writes a meta page).
    commits: AtomicU64,
    /// Our open read transactions, and their bound.
    readers: readers::Readers,
}

impl std::fmt::Debug for MdbxStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MdbxStore")
            .field("table", &self.table)
            .field("path", &self.path)
            .finish()
    }
}

pub(crate) fn err(table: &str, e: libmdbx::Error) -> DbError {
    match e {
        libmdbx::Error::MapFull => DbError::StorageFull {
            engine: "mdbx",
            table: table.to_string(),
            detail: "map full: the file reached mdbx.max_size".into(),
        },
        other => {
            let detail = other.to_string();
            // ENOSPC surfaces as an OS error from the write path.
            if detail.contains("No space left") || detail.contains("ENOSPC") {
                DbError::StorageFull {
                    engine: "mdbx",
                    table: table.to_string(),
                    detail: format!("disk full: {detail}"),
                }
            } else {
                DbError::Engine {
                    engine: "mdbx",
                    table: table.to_string(),
                    detail,
                }
            }
        }
    }
}

impl MdbxStore {
    /// Opens (creating if needed) the environment for `table` in `dir`.
    pub fn open(dir: &Path, table: &str, opts: &MdbxOptions) -> DbResult<Self> {
        std::fs::create_dir_all(dir).map_err(|source| DbError::Io {
            context: format!("creating {}", dir.display()),
            source,
        })?;
        let to_isize = |v: u64| isize::try_from(v).unwrap_or(isize::MAX);
        let options = DatabaseOptions {
            max_readers: Some(opts.max_readers),
            page_size: Some(PageSize::Set(opts.page_size)),
            mode: Mode::ReadWrite(ReadWriteOptions {
                sync_mode: match opts.sync {
                    MdbxSync::Durable => SyncMode::Durable,
                    MdbxSync::NoMetaSync => SyncMode::NoMetaSync,
                    MdbxSync::SafeNoSync => SyncMode::SafeNoSync,
                },
                min_size: None,
                max_size: Some(to_isize(opts.max_size)),
                growth_step: Some(to_isize(opts.growth_step)),
                // Give back free space at the end only in large steps.
                shrink_threshold: Some(to_isize(opts.growth_step.saturating_mul(4))),
            }),
            // Readahead hurts random point lookups on a file larger than RAM.
            no_rdahead: true,
            ..Default::default()
        };
        let db =
            Database::<NoWriteMap>::open_with_options(dir, options).map_err(|e| err(table, e))?;
        // Create the main table up front so readers never see it missing.
        let txn = db.begin_rw_txn().map_err(|e| err(table, e))?;
        txn.create_table(None, TableFlags::empty())
            .map_err(|e| err(table, e))?;
        txn.commit().map_err(|e| err(table, e))?;
        Ok(Self {
            table: table.to_string(),
            path: dir.to_path_buf(),
            page_size: opts.page_size as u64,
            ops_at_open: info::page_ops(&db).unwrap_or_default(),
            db,
            commits: AtomicU64::new(0),
            readers: readers::Readers::new(opts.max_read_txn),
        })
    }

    fn e(&self, e: libmdbx::Error) -> DbError {
        err(&self.table, e)
    }
}

struct MdbxWrite<'a> {
    store: &'a MdbxStore,
    txn: Transaction<'a, RW, NoWriteMap>,
}

impl KvWrite for MdbxWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> DbResult<()> {
        let table = self.txn.open_table(None).map_err(|e| self.store.e(e))?;
        self.txn
            .put(&table, key, value, WriteFlags::UPSERT)
            .map_err(|e| self.store.e(e))
    }

    fn delete(&mut self, key: &[u8]) -> DbResult<()> {
        let table = self.txn.open_table(None).map_err(|e| self.store.e(e))?;
        self.txn
            .del(&table, key, None)
            .map(|_| ())
            .map_err(|e| self.store.e(e))
    }

    fn finish(&mut self) -> DbResult<()> {
        Ok(())
    }

    fn commit(self: Box<Self>) -> DbResult<CommitTiming> {
        let start = Instant::now();
        let store = self.store;
        self.txn.commit().map_err(|e| store.e(e))?;
        store.commits.fetch_add(1, Ordering::Relaxed);
        Ok(CommitTiming {
            commit: start.elapsed(),
            compact: Default::default(),
        })
    }
}

impl KvStore for MdbxStore {
    fn table(&self) -> &str {
        &self.table
    }

    fn engine(&self) -> EngineKind {
        EngineKind::Mdbx
    }

    fn durable_only_on_commit(&self) -> bool {
        true
    }

    fn begin_write(&self) -> DbResult<Box<dyn KvWrite + '_>> {
        let txn = self.db.begin_rw_txn().map_err(|e| self.e(e))?;
        Ok(Box::new(MdbxWrite { store: self, txn }))
    }

    fn get(&self, key: &[u8]) -> DbResult<Option<Vec<u8>>> {
        // One key: bounded by construction, so not tracked (keeps the
        // point-lookup path free of the registry's lock).
        let txn = self.db.begin_ro_txn().map_err(|e| self.e(e))?;
        let table = txn.open_table(None).map_err(|e| self.e(e))?;
        txn.get::<Vec<u8>>(&table, key).map_err(|e| self.e(e))
    }

    fn multi_get(&self, keys: &[&[u8]]) -> DbResult<Vec<Option<Vec<u8>>>> {
        let read = self.readers.enter();
        let txn = self.db.begin_ro_txn().map_err(|e| self.e(e))?;
        let table = txn.open_table(None).map_err(|e| self.e(e))?;
        let mut out = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if i % readers::CHECK_EVERY == readers::CHECK_EVERY - 1 {
                read.check(&self.table)?;
            }
            out.push(txn.get::<Vec<u8>>(&table, k).map_err(|e| self.e(e))?);
        }
        Ok(out)
    }

    fn scan(&self, from: &[u8], limit: usize) -> DbResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let read = self.readers.enter();
        let txn = self.db.begin_ro_txn().map_err(|e| self.e(e))?;
        let table = txn.open_table(None).map_err(|e| self.e(e))?;
        let mut cursor = txn.cursor(&table).map_err(|e| self.e(e))?;
        let mut out = Vec::new();
        for item in cursor.iter_from::<Vec<u8>, Vec<u8>>(from).take(limit) {
            if out.len() % readers::CHECK_EVERY == readers::CHECK_EVERY - 1 {
                read.check(&self.table)?;
            }
            out.push(item.map_err(|e| self.e(e))?);
        }
        Ok(out)
    }

    fn begin_backup(&self, dest: &Path) -> DbResult<Box<dyn TableBackup + '_>> {
        if dest.exists() {
            return Err(DbError::Io {
                context: format!("backup destination {}", dest.display()),
                source: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            });
        }
        let read = self.readers.enter();
        let txn = self.db.begin_ro_txn().map_err(|e| self.e(e))?;
        Ok(Box::new(backup::MdbxBackup {
            store: self,
            _read: read,
            txn,
            dest: dest.to_path_buf(),
        }))
    }

    fn stats(&self) -> DbResult<EngineStats> {
        let txn = self.db.begin_ro_txn().map_err(|e| self.e(e))?;
        let table = txn.open_table(None).map_err(|e| self.e(e))?;
        let stat = txn.table_stat(&table).map_err(|e| self.e(e))?;
        drop(txn);
        let free = self.db.freelist().map_err(|e| self.e(e))?;
        let lag = info::reader_lag(&self.db);
        let pages = stat.branch_pages() + stat.leaf_pages() + stat.overflow_pages();
        Ok(EngineStats {
            keys: stat.entries() as u64,
            disk_bytes: dir_size(&self.path),
            tree_depth: Some(stat.depth()),
            page_size: Some(stat.page_size()),
            pages: Some(pages as u64),
            leaf_pages: Some(stat.leaf_pages() as u64),
            overflow_pages: Some(stat.overflow_pages() as u64),
            free_pages: Some(free as u64),
            reader_lag: lag.map(|l| l.lag),
            readers: lag.map(|l| l.readers),
            oldest_read_secs: Some(self.readers.oldest().map_or(0.0, |d| d.as_secs_f64())),
            read_timeouts: Some(self.readers.timeouts()),
            // Every dirtied page is written once (at commit, or when
            // spilled), plus one meta page per commit.
            bytes_written: info::page_ops(&self.db).map(|ops| {
                (ops.written_since(&self.ops_at_open) + self.commits.load(Ordering::Relaxed))
                    * self.page_size
            }),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests;
