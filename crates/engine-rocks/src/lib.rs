//! RocksDB implementation of [`KvStore`]: one RocksDB instance per table.
//!
//! Two profiles:
//! - [`RocksProfile::FieldStudy`]: the field study's exact setup. RocksDB
//!   compression off (values are zstd-compressed by the application), write
//!   buffer 512 MB × 6, L0 compaction trigger 50, 20 background jobs, 5000
//!   open files, WAL off. A commit flushes the memtables and then runs
//!   `CompactRange` over the whole table.
//! - [`RocksProfile::Tuned`]: the honest baseline. WAL on and fsynced at
//!   commit, background compaction only, bloom filters, a block cache,
//!   pinned index/filter blocks, and BlobDB (key-value separation) for large
//!   values such as tx records.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use ledgerstore_db_api::{
    Access, DbError, DbResult, EngineKind, EngineStats, KvStore, KvWrite, TableBackup, dir_size,
};
use rocksdb::checkpoint::Checkpoint;
use rocksdb::statistics::Ticker;
use rocksdb::{ColumnFamilyDescriptor, WaitForCompactOptions};

use crate::shards::{Db, Shards};
use crate::table::{err, err_detail};
use crate::write::RocksWrite;

mod bulk;
mod options;
mod shards;
mod table;
mod write;

pub use options::{
    BlockCompression, BulkBlocks, MIN_DICT_SAMPLE_BLOCKS, RocksOptions, RocksProfile,
    SEQ_SHARD_SHIFT, dict_buffer_bytes, dict_train_bytes,
};
pub use shards::MAX_SHIFT;
pub use table::RocksStore;

impl RocksStore {
    /// Opens the instance for `table` in `dir`: with [`Access::ReadWrite`],
    /// creating it if needed; with [`Access::ReadOnly`], as RocksDB's
    /// read-only instance (the WAL is replayed in memory, nothing is
    /// flushed, compacted or created).
    pub fn open(dir: &Path, table: &str, opts: &RocksOptions, access: Access) -> DbResult<Self> {
        let mut rocks_opts = opts.to_rocks().map_err(|e| err(table, e))?;
        if access == Access::ReadOnly {
            rocks_opts.create_if_missing(false);
        }
        // An existing table's column families say how it was made; a new
        // one is made as `opts` asks.
        let exists = dir.join("CURRENT").exists();
        let names = if exists {
            Db::list_cf(&rocks_opts, dir).map_err(|e| err(table, e))?
        } else {
            let mut n = vec![shards::DEFAULT.to_string()];
            n.extend(opts.shard_shift.map(shards::marker_name));
            n
        };
        let layout = if exists {
            shards::layout_of(&names)
                .map_err(|detail| err_detail(table, format!("{}: {detail}", dir.display())))?
        } else {
            opts.shard_shift.map(|s| Shards::new(s, Default::default()))
        };
        if let Some(s) = opts.shard_shift
            && s > MAX_SHIFT
        {
            return Err(err_detail(
                table,
                format!("shard shift {s}: expected 0 to {MAX_SHIFT}"),
            ));
        }
        // Before the open, which (read-write) would write a new MANIFEST.
        if layout.is_some() && opts.shard_shift.is_none() {
            return Err(err_detail(
                table,
                format!(
                    "{}: the table keeps its keys in column families by range (shards), \
                     but its data dir's format does not record shards",
                    dir.display()
                ),
            ));
        }
        let cfs = names
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(n, rocks_opts.clone()));
        let db = match access {
            Access::ReadWrite => {
                let mut o = rocks_opts.clone();
                o.create_missing_column_families(true);
                Db::open_cf_descriptors(&o, dir, cfs)
            }
            Access::ReadOnly => Db::open_cf_descriptors_read_only(&rocks_opts, dir, cfs, false),
        }
        .map_err(|e| err(table, e))?;
        // The table's layout must be the one its dir records (`shard_shift`
        // follows the dir's format): an earlier build reads a sharded
        // table's `default` alone, so a dir of a format it reads must not
        // hold one.
        let layout = match (layout, opts.shard_shift) {
            (None, Some(shift)) => {
                // A creation killed between the DB and its marker: empty,
                // so it is made sharded now. Data in `default` is refused.
                let mut it = db.raw_iterator();
                it.seek_to_first();
                it.status().map_err(|e| err(table, e))?;
                if it.valid() {
                    return Err(err_detail(
                        table,
                        format!(
                            "{}: the table holds its keys in one column family, but its data \
                             dir's format records sharded tables",
                            dir.display()
                        ),
                    ));
                }
                drop(it);
                if access == Access::ReadWrite {
                    db.create_cf(shards::marker_name(shift), &rocks_opts)
                        .map_err(|e| err(table, e))?;
                }
                Some(Shards::new(shift, Default::default()))
            }
            (layout, _) => layout,
        };
        if access == Access::ReadWrite {
            // After the open, which holds the DB's lock.
            bulk::remove_leftovers(dir).map_err(|e| DbError::Engine {
                engine: "rocksdb",
                table: table.to_string(),
                detail: format!("removing unfinished bulk files in {}: {e}", dir.display()),
            })?;
        }
        let bulk_opts = opts
            .bulk_rocks_options()
            .transpose()
            .map_err(|e| err(table, e))?;
        Ok(Self {
            table: table.to_string(),
            path: dir.to_path_buf(),
            opts: opts.clone(),
            rocks_opts,
            shards: layout,
            bulk_opts,
            access,
            db,
            ingested_bytes: AtomicU64::new(0),
        })
    }
}

impl KvStore for RocksStore {
    fn table(&self) -> &str {
        &self.table
    }

    fn engine(&self) -> EngineKind {
        EngineKind::Rocksdb
    }

    fn durable_only_on_commit(&self) -> bool {
        false
    }

    fn begin_write(&self) -> DbResult<Box<dyn KvWrite + '_>> {
        Ok(Box::new(RocksWrite::new(self)))
    }

    fn get(&self, key: &[u8]) -> DbResult<Option<Vec<u8>>> {
        match self.read_cf(key)? {
            Some(cf) => self.db.get_cf(&cf, key).map_err(|e| self.e(e)),
            None => Ok(None),
        }
    }

    fn multi_get(&self, keys: &[&[u8]]) -> DbResult<Vec<Option<Vec<u8>>>> {
        let mut out = vec![None; keys.len()];
        let mut asked = Vec::with_capacity(keys.len());
        let mut at = Vec::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if let Some(cf) = self.read_cf(k)? {
                asked.push((cf, *k));
                at.push(i);
            }
        }
        let got = self.db.multi_get_cf(asked.iter().map(|(cf, k)| (cf, *k)));
        for (i, r) in at.into_iter().zip(got) {
            out[i] = r.map_err(|e| self.e(e))?;
        }
        Ok(out)
    }

    fn scan(&self, from: &[u8], limit: usize) -> DbResult<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        // One point in time for every shard read.
        let snapshot = self.db.snapshot();
        for (n, cf) in self.data_cfs(Some(from))?.into_iter().enumerate() {
            if out.len() >= limit {
                break;
            }
            let mut ro = rocksdb::ReadOptions::default();
            ro.set_snapshot(&snapshot);
            let mut it = self.db.raw_iterator_cf_opt(&cf, ro);
            if n == 0 {
                it.seek(from);
            } else {
                it.seek_to_first();
            }
            while it.valid() && out.len() < limit {
                if let (Some(k), Some(v)) = (it.key(), it.value()) {
                    out.push((k.to_vec(), v.to_vec()));
                }
                it.next();
            }
            it.status().map_err(|e| self.e(e))?;
        }
        Ok(out)
    }

    fn stats(&self) -> DbResult<EngineStats> {
        let files_per_level = (0..7)
            .map(|l| {
                self.int_property(&format!("rocksdb.num-files-at-level{l}"))
                    .unwrap_or(0)
            })
            .collect();
        Ok(EngineStats {
            keys: self.int_property("rocksdb.estimate-num-keys").unwrap_or(0),
            disk_bytes: dir_size(&self.path),
            files_per_level,
            shards: self.shards.as_ref().map(Shards::count),
            pending_compaction_bytes: self
                .int_property("rocksdb.estimate-pending-compaction-bytes"),
            blob_bytes: self
                .opts
                .blob_min_size
                .and(self.int_property("rocksdb.live-blob-file-size")),
            // Flush and compaction count every file they write, blob files
            // included, so BlobDB's own counter would count blobs twice;
            // bulk writes' SST files are counted by the store.
            bytes_written: Some(
                [
                    Ticker::FlushWriteBytes,
                    Ticker::CompactWriteBytes,
                    Ticker::WalFileBytes,
                ]
                .into_iter()
                .map(|t| self.rocks_opts.get_ticker_count(t))
                .sum::<u64>()
                    + self.ingested_bytes.load(Ordering::Relaxed),
            ),
            ingested_bytes: Some(self.ingested_bytes.load(Ordering::Relaxed)),
            ..Default::default()
        })
    }

    fn begin_backup(&self, dest: &Path) -> DbResult<Box<dyn TableBackup + '_>> {
        // A checkpoint flushes the memtables first (the field setup runs
        // without a WAL), then hard-links the live SST and blob files and
        // copies the manifest: a consistent image as of this call.
        let cp = Checkpoint::new(&self.db).map_err(|e| self.e(e))?;
        cp.create_checkpoint(dest).map_err(|e| self.e(e))?;
        Ok(Box::new(CheckpointDone {
            bytes: dir_size(dest),
        }))
    }

    fn wait_for_background_work(&self) -> DbResult<()> {
        if self.access == Access::ReadOnly {
            return Ok(()); // a read-only instance runs no background work
        }
        self.db
            .wait_for_compact(&WaitForCompactOptions::default())
            .map_err(|e| self.e(e))
    }

    fn close(&self) -> DbResult<()> {
        if self.access == Access::ReadOnly {
            return Ok(()); // nothing to flush
        }
        self.flush_all()?;
        if self.opts.profile == RocksProfile::Tuned {
            self.db.flush_wal(true).map_err(|e| self.e(e))?;
        }
        Ok(())
    }
}

/// A checkpoint is complete when it is created.
struct CheckpointDone {
    bytes: u64,
}

impl TableBackup for CheckpointDone {
    fn finish(self: Box<Self>) -> DbResult<u64> {
        Ok(self.bytes)
    }
}

#[cfg(test)]
mod tests;
