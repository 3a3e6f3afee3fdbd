//! A table's RocksDB instance ([`RocksStore`]) and what its reads and
//! writes share: errors, the column family a key is in (`shards.rs`),
//! flushes and properties.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;

use ledgerstore_db_api::{Access, DbError, DbResult};
use rocksdb::{FlushOptions, Options, WriteOptions};

use crate::options::{RocksOptions, RocksProfile};
use crate::shards::{Cf, DEFAULT, Db, Shards, shard_name};

/// One table in its own RocksDB instance.
pub struct RocksStore {
    pub(crate) table: String,
    pub(crate) path: PathBuf,
    pub(crate) opts: RocksOptions,
    /// The options the DB was opened with; they own its statistics.
    pub(crate) rocks_opts: Options,
    /// Column families by key range, or None: every key in `default`.
    pub(crate) shards: Option<Shards>,
    /// The options bulk writes make SST files with, where
    /// [`RocksOptions::bulk_blocks`] differs from the table's blocks.
    pub(crate) bulk_opts: Option<Options>,
    pub(crate) access: Access,
    pub(crate) db: Db,
    /// Bytes of SST files written by bulk writes and ingested since open
    /// (RocksDB's statistics count flushes, compactions and the WAL only).
    pub(crate) ingested_bytes: AtomicU64,
}

impl std::fmt::Debug for RocksStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksStore")
            .field("table", &self.table)
            .field("path", &self.path)
            .field("profile", &self.opts.profile)
            .finish()
    }
}

pub(crate) fn err(table: &str, e: rocksdb::Error) -> DbError {
    err_detail(table, e.into_string())
}

/// A RocksDB error's text as a [`DbError`]: a full disk is named as such.
pub(crate) fn err_detail(table: &str, detail: String) -> DbError {
    if detail.contains("No space left") || detail.contains("ENOSPC") {
        DbError::StorageFull {
            engine: "rocksdb",
            table: table.to_string(),
            detail,
        }
    } else {
        DbError::Engine {
            engine: "rocksdb",
            table: table.to_string(),
            detail,
        }
    }
}

impl RocksStore {
    pub(crate) fn e(&self, e: rocksdb::Error) -> DbError {
        err(&self.table, e)
    }

    pub(crate) fn write_options(&self) -> WriteOptions {
        let mut w = WriteOptions::default();
        // The field setup makes batches durable by flushing; the tuned one by
        // syncing the WAL at commit.
        w.disable_wal(self.opts.profile == RocksProfile::FieldStudy);
        w
    }

    /// With bulk blocks of their own, flushes a memtable that holds
    /// anything before bulk files go in. Ingestion flushes only a memtable
    /// whose keys overlap the files; one that holds positions below them
    /// and then takes positions above them (a live tail after a catch-up,
    /// or batches on either side of the bulk threshold) would flush as one
    /// file spanning the bulk files, and compacting that file into their
    /// level rewrites them in the table's blocks.
    /// (Per column family: the files go into `cf`'s.)
    pub(crate) fn flush_memtable_before_bulk(&self, cf: &Cf<'_>) -> DbResult<()> {
        if self.bulk_opts.is_none() {
            return Ok(());
        }
        let held = [
            "rocksdb.num-entries-active-mem-table",
            "rocksdb.num-entries-imm-mem-tables",
        ]
        .iter()
        .map(|p| self.cf_property(cf, p).unwrap_or(1))
        .sum::<u64>();
        if held > 0 {
            let mut f = FlushOptions::default();
            f.set_wait(true);
            self.db.flush_cf_opt(cf, &f).map_err(|e| self.e(e))?;
        }
        Ok(())
    }

    /// Flushes the memtables of every column family holding data (an
    /// empty memtable is left as it is).
    pub(crate) fn flush_all(&self) -> DbResult<()> {
        let cfs = self.data_cfs(None)?;
        let cfs: Vec<&Cf<'_>> = cfs.iter().collect();
        let mut f = FlushOptions::default();
        f.set_wait(true);
        self.db.flush_cfs_opt(&cfs, &f).map_err(|e| self.e(e))
    }

    /// The largest key stored (None: the table is empty), read without
    /// filling the block cache: the last key of the last shard holding
    /// any.
    pub(crate) fn last_key(&self) -> DbResult<Option<Vec<u8>>> {
        for cf in self.data_cfs(None)?.iter().rev() {
            let mut ro = rocksdb::ReadOptions::default();
            ro.fill_cache(false);
            let mut it = self.db.raw_iterator_cf_opt(cf, ro);
            it.seek_to_last();
            it.status().map_err(|e| self.e(e))?;
            if let Some(k) = it.key() {
                return Ok(Some(k.to_vec()));
            }
        }
        Ok(None)
    }

    pub(crate) fn cf_property(&self, cf: &Cf<'_>, name: &str) -> Option<u64> {
        self.db.property_int_value_cf(cf, name).ok().flatten()
    }

    /// A property summed over the column families holding data (None when
    /// none has it).
    pub(crate) fn int_property(&self, name: &str) -> Option<u64> {
        let cfs = self.data_cfs(None).ok()?;
        cfs.iter()
            .filter_map(|cf| self.cf_property(cf, name))
            .reduce(u64::saturating_add)
    }

    pub(crate) fn default_cf(&self) -> DbResult<Cf<'_>> {
        self.db.cf_handle(DEFAULT).ok_or_else(|| DbError::Engine {
            engine: "rocksdb",
            table: self.table.clone(),
            detail: "no default column family".into(),
        })
    }

    /// The column family `key` is read from; None when its shard has never
    /// been written (so it holds nothing).
    pub(crate) fn read_cf(&self, key: &[u8]) -> DbResult<Option<Cf<'_>>> {
        match &self.shards {
            None => self.default_cf().map(Some),
            Some(s) => Ok(self.db.cf_handle(&shard_name(s.of(key)))),
        }
    }

    /// The column family `key` is written to, made if it is new.
    pub(crate) fn write_cf(&self, key: &[u8]) -> DbResult<Cf<'_>> {
        let Some(s) = &self.shards else {
            return self.default_cf();
        };
        let shard = s.of(key);
        let name = shard_name(shard);
        if let Some(cf) = self.db.cf_handle(&name) {
            return Ok(cf);
        }
        let made = self.db.create_cf(&name, &self.rocks_opts);
        // Another thread may have made it meanwhile; then it is there.
        let cf = match (made, self.db.cf_handle(&name)) {
            (_, Some(cf)) => cf,
            (Err(e), None) => return Err(self.e(e)),
            (Ok(()), None) => {
                return Err(DbError::Engine {
                    engine: "rocksdb",
                    table: self.table.clone(),
                    detail: format!("column family {name} made but not found"),
                });
            }
        };
        s.add(shard);
        Ok(cf)
    }

    /// The column families holding data, in key order, from the one `from`
    /// is in (the first when None).
    pub(crate) fn data_cfs(&self, from: Option<&[u8]>) -> DbResult<Vec<Cf<'_>>> {
        let Some(s) = &self.shards else {
            return Ok(vec![self.default_cf()?]);
        };
        let first = from.map_or(0, |k| s.of(k));
        let shards: Vec<u32> = s.known().range(first..).copied().collect();
        Ok(shards
            .into_iter()
            .filter_map(|shard| self.db.cf_handle(&shard_name(shard)))
            .collect())
    }

    /// The shard key `key` falls in, for grouping a write's pairs (0 in an
    /// unsharded table).
    pub(crate) fn shard_of(&self, key: &[u8]) -> u32 {
        self.shards.as_ref().map_or(0, |s| s.of(key))
    }
}
