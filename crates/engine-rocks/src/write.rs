//! A write to a table ([`RocksWrite`]): puts and deletes in write batches
//! of a chunk, sorted pairs as SST files ingested at commit (`bulk.rs`),
//! each in its key's shard, and the commit that makes them durable.

use std::sync::atomic::Ordering;
use std::time::Instant;

use ledgerstore_db_api::{CommitTiming, DbResult, KvWrite};
use rocksdb::{CompactOptions, WriteBatch, WriteOptions};

use crate::bulk;
use crate::options::{BLOCK_FILE_BYTES, RocksProfile, WRITE_CHUNK_BYTES};
use crate::table::RocksStore;

/// An empty batch with room for a chunk (and a value past it). Grown by
/// doubling instead, each chunk was copied as it grew and faulted in
/// about twice its pages: reserving it took 7% of bulk ingest's page
/// faults and ~3% of its CPU away, and lowered its peak RSS
/// (docs/benchmarks.md, "Ingest CPU"). Reserved, not touched: a small
/// write costs no more memory than it fills.
fn chunk_batch() -> WriteBatch {
    WriteBatch::with_capacity_bytes(WRITE_CHUNK_BYTES + (1 << 20))
}

pub(crate) struct RocksWrite<'a> {
    store: &'a RocksStore,
    batch: WriteBatch,
    wopts: WriteOptions,
    /// This write skipped the WAL (a bulk write with block compression):
    /// commit flushes the memtables instead of syncing the WAL.
    bypassed_wal: bool,
    /// SST files of [`KvWrite::put_sorted`] waiting for commit ([`bulk`]),
    /// by shard, each with a key of its shard.
    bulk: Vec<(Vec<u8>, bulk::BulkFiles)>,
}

impl<'a> RocksWrite<'a> {
    /// A new write to `store`.
    pub(crate) fn new(store: &'a RocksStore) -> Self {
        Self {
            store,
            batch: chunk_batch(),
            wopts: store.write_options(),
            bypassed_wal: false,
            bulk: Vec::new(),
        }
    }

    /// Applies a full chunk: a write that fills one is bulk, and with block
    /// compression it skips the WAL from here on (commit then flushes,
    /// which also makes durable any smaller write applied before).
    fn apply_chunk(&mut self) -> DbResult<()> {
        if self.store.opts.bulk_bypasses_wal() && !self.bypassed_wal {
            self.bypassed_wal = true;
            self.wopts.disable_wal(true);
        }
        // More puts follow: the next batch gets a chunk's room.
        self.apply(chunk_batch())
    }

    /// Writes the batch so far, replaced by `next`.
    fn apply(&mut self, next: WriteBatch) -> DbResult<()> {
        if !self.batch.is_empty() {
            let batch = std::mem::replace(&mut self.batch, next);
            self.store
                .db
                .write_opt(batch, &self.wopts)
                .map_err(|e| self.store.e(e))?;
        }
        Ok(())
    }

    /// Applies the batch, then moves the SST files in, so they are newer
    /// than everything this write put before them; they are durable and
    /// visible when this returns. Called before any later put, so nothing
    /// this write puts after them is older than they are.
    /// A write spanning shards ingests each shard's files in one
    /// ingestion of its own, in key order.
    fn ingest_bulk(&mut self) -> DbResult<()> {
        if self.bulk.is_empty() {
            return Ok(());
        }
        self.apply(WriteBatch::default())?;
        for (key, mut files) in std::mem::take(&mut self.bulk) {
            let cf = self.store.write_cf(&key)?;
            self.store.flush_memtable_before_bulk(&cf)?;
            let bytes = files.ingest(&self.store.db, &cf)?;
            self.store
                .ingested_bytes
                .fetch_add(bytes, Ordering::Relaxed);
        }
        Ok(())
    }
}

impl KvWrite for RocksWrite<'_> {
    fn put(&mut self, key: &[u8], value: &[u8]) -> DbResult<()> {
        self.ingest_bulk()?;
        let cf = self.store.write_cf(key)?;
        self.batch.put_cf(&cf, key, value);
        if self.batch.size_in_bytes() >= WRITE_CHUNK_BYTES {
            self.apply_chunk()?;
        }
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> DbResult<()> {
        self.ingest_bulk()?;
        // A shard never written holds nothing to delete.
        if let Some(cf) = self.store.read_cf(key)? {
            self.batch.delete_cf(&cf, key);
        }
        if self.batch.size_in_bytes() >= WRITE_CHUNK_BYTES {
            self.apply_chunk()?;
        }
        Ok(())
    }

    /// With block compression, sorted pairs of at least a chunk (or
    /// [`BulkBlocks::min_bytes`](crate::BulkBlocks::min_bytes)) become SST
    /// files written from the caller's slices on up to 4 threads
    /// ([`bulk`]), ingested at commit: no WAL, no write batch, no
    /// memtable. Otherwise one put at a time. With bulk blocks of their
    /// own, pairs at or below the largest key stored are put one at a time
    /// first: like any put, they are in the memtable (visible) once the
    /// write is applied, at `finish`, not at commit.
    fn put_sorted(&mut self, pairs: &[(&[u8], &[u8])]) -> DbResult<()> {
        let raw: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
        let min = self.store.opts.bulk_min_bytes();
        // With bulk blocks of their own, pairs of a bulk write at or below
        // the largest key stored (a dictionary's key, which sorts below
        // every position) go through the memtable: an ingested file is
        // never cut, so a bulk file holding them would span everything
        // stored, and compacting it down would rewrite every bulk file
        // into the table's blocks. A flushed memtable may span stored bulk
        // files too, but compaction cuts its output at the bottom level's
        // file boundaries once that level is past the base
        // (docs/operations.md, "Body form").
        let below = match self.store.bulk_opts {
            Some(_) if raw >= min && bulk::strictly_ascending(pairs) => {
                // This write's own earlier files and puts first, so the
                // largest key stored counts them.
                self.ingest_bulk()?;
                self.apply(chunk_batch())?;
                match self.store.last_key()? {
                    Some(last) => pairs.partition_point(|(k, _)| *k <= last.as_slice()),
                    None => 0,
                }
            }
            _ => 0,
        };
        for (k, v) in &pairs[..below] {
            self.put(k, v)?;
        }
        let pairs = &pairs[below..];
        let raw: usize = pairs.iter().map(|(k, v)| k.len() + v.len()).sum();
        if !self.store.opts.bulk_bypasses_wal() || raw < min || !bulk::strictly_ascending(pairs) {
            for (k, v) in pairs {
                self.put(k, v)?;
            }
            return Ok(());
        }
        // An earlier call's files first: files of one ingestion must not
        // overlap, and these may repeat its keys.
        self.ingest_bulk()?;
        let store = self.store;
        // One run of files a shard: an ingestion goes into one column
        // family.
        let mut rest = pairs;
        while let Some((first, _)) = rest.first() {
            let shard = store.shard_of(first);
            let end = rest.partition_point(|(k, _)| store.shard_of(k) == shard);
            let (run, after) = rest.split_at(end);
            rest = after;
            let mut files = bulk::BulkFiles::new(&store.table, &store.path);
            let written = files.write_sorted(
                store.bulk_opts.as_ref().unwrap_or(&store.rocks_opts),
                run,
                BLOCK_FILE_BYTES,
                bulk::max_threads(),
            );
            if let Err(e) = written {
                // Nothing of a failed call is ingested later: its files go.
                self.bulk.clear();
                return Err(e);
            }
            self.bulk.push((first.to_vec(), files));
        }
        Ok(())
    }

    fn finish(&mut self) -> DbResult<()> {
        self.apply(WriteBatch::default())
    }

    fn commit(mut self: Box<Self>) -> DbResult<CommitTiming> {
        self.apply(WriteBatch::default())?;
        let store = self.store;
        let start = Instant::now();
        self.ingest_bulk()?;
        match store.opts.profile {
            RocksProfile::FieldStudy => {
                store.flush_all()?;
                let commit = start.elapsed();
                let start = Instant::now();
                let mut c = CompactOptions::default();
                c.set_exclusive_manual_compaction(true);
                for cf in store.data_cfs(None)? {
                    store
                        .db
                        .compact_range_cf_opt(&cf, None::<&[u8]>, None::<&[u8]>, &c);
                }
                Ok(CommitTiming {
                    commit,
                    compact: start.elapsed(),
                })
            }
            RocksProfile::Tuned if self.bypassed_wal => {
                // Writes that skipped the WAL are durable once flushed (the
                // SSTs and the MANIFEST are synced); earlier writes that
                // went through the WAL were synced by their own commits.
                store.flush_all()?;
                Ok(CommitTiming {
                    commit: start.elapsed(),
                    compact: Default::default(),
                })
            }
            RocksProfile::Tuned => {
                store.db.flush_wal(true).map_err(|e| store.e(e))?;
                Ok(CommitTiming {
                    commit: start.elapsed(),
                    compact: Default::default(),
                })
            }
        }
    }
}
