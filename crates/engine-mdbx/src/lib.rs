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
    Access, CommitTiming, DbError, DbResult, EngineKind, EngineStats, KvStore, KvWrite,
    TableBackup, dir_size,
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

/// Page size of a new environment when none is given.
pub const DEFAULT_PAGE_SIZE: usize = 4096;
/// Upper bound of a new environment's file when none is given: 8 TiB,
/// years of Stellar history per table.
pub const DEFAULT_MAX_SIZE: u64 = 8 << 40;
/// Growth step of a new environment when none is given: 16 MiB. The map
/// is reserved up to the upper bound when the environment opens, so a step
/// only extends the file (no remap): a small step costs one `ftruncate`
/// per 16 MiB written and keeps the file within one step of what it holds
/// (a 1 GiB step made a new dir of 20 ledgers take 1.1 GB of disk).
pub const DEFAULT_GROWTH_STEP: u64 = 16 << 20;

/// Options of one MDBX environment.
///
/// The geometry (`page_size`, `max_size`, `growth_step`) is stored in the
/// environment itself when it is created. `None` means: the environment's
/// own value, or the default for a new one. So reopening never needs the
/// creation settings again, and a default never resizes an existing file.
#[derive(Debug, Clone)]
pub struct MdbxOptions {
    /// Page size in bytes (a power of two, 256 B to 64 KiB). Fixed when the
    /// environment is created: another value for an existing one is an
    /// error.
    pub page_size: Option<usize>,
    /// Upper bound of the file size. The map is reserved up front, so the
    /// file grows in place up to this without remapping. Given for an
    /// existing environment, it changes it (logged).
    pub max_size: Option<u64>,
    /// Step by which the file grows. Given for an existing environment, it
    /// changes it (logged).
    pub growth_step: Option<u64>,
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
            page_size: None,
            max_size: None,
            growth_step: None,
            sync: MdbxSync::Durable,
            // Above tokio's 512 blocking threads and the daemon's read
            // threads (`query.read_threads`, at most 256) together, with
            // room for the async workers' inline reads and the publisher's
            // threads at their defaults, so concurrent queries do not run
            // out of reader slots.
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
    /// Opens the environment for `table` in `dir`: with
    /// [`Access::ReadWrite`], creating it if it is new.
    pub fn open(dir: &Path, table: &str, opts: &MdbxOptions, access: Access) -> DbResult<Self> {
        // A creation killed before MDBX wrote its first pages leaves an
        // empty file: that environment is still new.
        let exists = std::fs::metadata(dir.join(DATA_FILE)).is_ok_and(|m| m.len() > 0);
        let db = match (access, exists) {
            (Access::ReadOnly, _) => open_env(dir, opts, None).map_err(|e| err(table, e))?,
            (Access::ReadWrite, false) => {
                std::fs::create_dir_all(dir).map_err(|source| DbError::Io {
                    context: format!("creating {}", dir.display()),
                    source,
                })?;
                open_env(dir, opts, Some(Geometry::create(opts))).map_err(|e| err(table, e))?
            }
            (Access::ReadWrite, true) => open_existing(dir, table, opts)?,
        };
        let page_size = page_size_of(&db, table)?;
        check_page_size(table, opts, page_size as usize)?;
        if !exists && access == Access::ReadWrite {
            // Create the main table up front so readers never see it missing.
            let txn = db.begin_rw_txn().map_err(|e| err(table, e))?;
            txn.create_table(None, TableFlags::empty())
                .map_err(|e| err(table, e))?;
            txn.commit().map_err(|e| err(table, e))?;
        }
        Ok(Self {
            table: table.to_string(),
            path: dir.to_path_buf(),
            page_size: u64::from(page_size),
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

/// The geometry an environment is opened with; `None` leaves a value to
/// MDBX. (MDBX applies its own defaults to every value a read-write open
/// leaves unset, even for an existing file, so an existing environment's
/// geometry is read first and passed back.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geometry {
    min_size: Option<u64>,
    max_size: Option<u64>,
    growth_step: Option<u64>,
    shrink_threshold: Option<u64>,
    page_size: Option<usize>,
}

impl Geometry {
    /// A new environment's: the options, or the defaults.
    fn create(opts: &MdbxOptions) -> Self {
        let grow = opts.growth_step.unwrap_or(DEFAULT_GROWTH_STEP);
        Self {
            min_size: None,
            max_size: Some(opts.max_size.unwrap_or(DEFAULT_MAX_SIZE)),
            growth_step: Some(grow),
            // Give back free space at the end only in large steps.
            shrink_threshold: Some(grow.saturating_mul(4)),
            page_size: Some(opts.page_size.unwrap_or(DEFAULT_PAGE_SIZE)),
        }
    }

    /// What an open environment runs with.
    fn of(db: &Database<NoWriteMap>, table: &str) -> DbResult<Self> {
        let g = db.info().map_err(|e| err(table, e))?.geometry();
        let page = page_size_of(db, table)?;
        Ok(Self {
            min_size: Some(g.min_size()),
            max_size: Some(g.max_size()),
            growth_step: Some(g.growth_step()),
            shrink_threshold: Some(g.shrink_threshold()),
            page_size: Some(page as usize),
        })
    }
}

/// The environment's page size, from the main table's own stat: O(1).
/// (`Database::stat`, `mdbx_env_stat_ex` without a transaction, walks
/// every leaf of the main table looking for named tables, and our data is
/// in the main table: on an 8 GB file beyond memory that read 31.8 GB and
/// took 291 s in the out-of-cache study.)
fn page_size_of(db: &Database<NoWriteMap>, table: &str) -> DbResult<u32> {
    let txn = db.begin_ro_txn().map_err(|e| err(table, e))?;
    let main = txn.open_table(None).map_err(|e| err(table, e))?;
    let stat = txn.table_stat(&main).map_err(|e| err(table, e))?;
    Ok(stat.page_size())
}

/// Opens the environment; `geometry` None opens it read-only.
fn open_env(
    dir: &Path,
    opts: &MdbxOptions,
    geometry: Option<Geometry>,
) -> Result<Database<NoWriteMap>, libmdbx::Error> {
    let to_isize = |v: u64| isize::try_from(v).unwrap_or(isize::MAX);
    let mode = match geometry {
        None => Mode::ReadOnly,
        Some(g) => Mode::ReadWrite(ReadWriteOptions {
            sync_mode: match opts.sync {
                MdbxSync::Durable => SyncMode::Durable,
                MdbxSync::NoMetaSync => SyncMode::NoMetaSync,
                MdbxSync::SafeNoSync => SyncMode::SafeNoSync,
            },
            min_size: g.min_size.map(to_isize),
            max_size: g.max_size.map(to_isize),
            growth_step: g.growth_step.map(to_isize),
            shrink_threshold: g.shrink_threshold.map(to_isize),
        }),
    };
    let options = DatabaseOptions {
        max_readers: Some(opts.max_readers),
        page_size: geometry.and_then(|g| g.page_size).map(PageSize::Set),
        mode,
        // Readahead hurts random point lookups on a file larger than RAM.
        no_rdahead: true,
        ..Default::default()
    };
    Database::<NoWriteMap>::open_with_options(dir, options)
}

/// A page size given explicitly must be the one the environment has.
fn check_page_size(table: &str, opts: &MdbxOptions, recorded: usize) -> DbResult<()> {
    match opts.page_size {
        Some(want) if want != recorded => Err(DbError::CreationMismatch {
            engine: "mdbx",
            table: table.to_string(),
            setting: "page size",
            recorded: recorded.to_string(),
            requested: want.to_string(),
        }),
        _ => Ok(()),
    }
}

/// Opens an existing environment read-write with the geometry stored in
/// it (read through a read-only open first), except for the values given
/// explicitly; a change is logged.
fn open_existing(dir: &Path, table: &str, opts: &MdbxOptions) -> DbResult<Database<NoWriteMap>> {
    let probe = match open_env(dir, opts, None) {
        Ok(db) => db,
        // No valid meta page: a creation killed before MDBX finished
        // writing its first pages. It holds nothing: create it anew.
        Err(libmdbx::Error::NoData) => {
            tracing::warn!(
                table,
                "finishing an MDBX environment whose creation was interrupted"
            );
            return open_env(dir, opts, Some(Geometry::create(opts))).map_err(|e| err(table, e));
        }
        Err(e) => return Err(err(table, e)),
    };
    let recorded = Geometry::of(&probe, table)?;
    drop(probe);
    check_page_size(table, opts, recorded.page_size.unwrap_or_default())?;
    let mut want = recorded;
    if let Some(max) = opts.max_size {
        want.max_size = Some(max);
    }
    if let Some(grow) = opts.growth_step {
        want.growth_step = Some(grow);
        want.shrink_threshold = Some(grow.saturating_mul(4));
    }
    let db = open_env(dir, opts, Some(want)).map_err(|e| err(table, e))?;
    let now = Geometry::of(&db, table)?;
    if now != recorded {
        tracing::warn!(
            table,
            before = ?recorded,
            after = ?now,
            "mdbx geometry changed as configured (mdbx.max_size_gib / mdbx.growth_step_mib)"
        );
    }
    Ok(db)
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
