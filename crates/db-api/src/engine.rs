//! The traits a storage engine implements. One [`KvStore`] holds one table.
//!
//! Writes go through a [`KvWrite`] in two phases, timed separately by the
//! ingest engine: *write* (`put`/`delete`) and *commit* (make durable;
//! RocksDB: flush memtables, optionally followed by a forced compaction;
//! MDBX: commit the write transaction).

use std::time::Duration;

use serde::Serialize;

use crate::error::DbResult;
use crate::layout::Layout;
use crate::table::TableId;

pub use crate::layout::EngineKind;

/// Time spent by [`KvWrite::commit`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CommitTiming {
    /// Making the writes durable (RocksDB flush, MDBX commit).
    pub commit: Duration,
    /// Forced compaction after the flush (RocksDB field setup only).
    pub compact: Duration,
}

/// Engine-specific statistics for `stats` and metrics.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineStats {
    /// Number of keys (exact for MDBX, RocksDB's estimate otherwise).
    pub keys: u64,
    /// Bytes of the store's files on disk.
    pub disk_bytes: u64,
    /// Bytes the engine has written to storage since it was opened, for
    /// write amplification. RocksDB: flush + compaction + WAL bytes from its
    /// statistics (blob files included), plus the SST files bulk writes
    /// ingested (`ingested_bytes`). MDBX: pages dirtied (new +
    /// copy-on-write + spilled, from its page-operation statistics) plus one
    /// meta page per commit, times the page size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_written: Option<u64>,
    /// RocksDB: bytes of the SST files bulk writes wrote themselves and
    /// ingested since open (sorted pairs, `KvWrite::put_sorted`; also in
    /// `bytes_written`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ingested_bytes: Option<u64>,
    /// RocksDB: SST files per level, L0 first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_per_level: Vec<u64>,
    /// RocksDB, a table sharded by key range: the column families
    /// (shards) it has made, one for each range it was written in (kept
    /// when emptied). Each costs memory whether or not it is read (its
    /// memtable and table readers, ~0.7 MB measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<u64>,
    /// RocksDB: estimated bytes pending compaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_compaction_bytes: Option<u64>,
    /// RocksDB: live blob file bytes (BlobDB).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob_bytes: Option<u64>,
    /// MDBX: B+tree depth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tree_depth: Option<u32>,
    /// MDBX: page size in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    /// MDBX: branch + leaf + overflow pages of the table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<u64>,
    /// MDBX: leaf pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leaf_pages: Option<u64>,
    /// MDBX: overflow (large value) pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overflow_pages: Option<u64>,
    /// MDBX: pages on the free list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free_pages: Option<u64>,
    /// MDBX: transactions between the oldest reader's snapshot and the last
    /// commit (0 when no reader lags).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reader_lag: Option<u64>,
    /// MDBX: reader slots in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readers: Option<u64>,
    /// MDBX: age in seconds of the oldest multi-key read or backup open now
    /// (0 when none is open; point reads are not tracked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_read_secs: Option<f64>,
    /// MDBX: reads that gave up at `mdbx.max_read_txn_ms` since open.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_timeouts: Option<u64>,
}

/// One table in one engine instance.
pub trait KvStore: Send + Sync {
    /// The table's name.
    fn table(&self) -> &str;

    /// The engine serving it.
    fn engine(&self) -> EngineKind;

    /// True when writes staged in a [`KvWrite`] cannot reach disk before
    /// [`KvWrite::commit`] (MDBX: an uncommitted transaction). False when the
    /// engine may persist them early (RocksDB may flush a full memtable).
    /// The ingest engine uses this to decide what may run concurrently with
    /// the ledgers table's commit.
    fn durable_only_on_commit(&self) -> bool;

    /// Starts a write. Dropping it without commit abandons it: MDBX rolls
    /// back, RocksDB may keep what was already written (callers hide such
    /// data behind the high-water mark and roll it back).
    fn begin_write(&self) -> DbResult<Box<dyn KvWrite + '_>>;

    /// Reads one key.
    fn get(&self, key: &[u8]) -> DbResult<Option<Vec<u8>>>;

    /// Reads many keys; answers are in the order of `keys`. Callers sort
    /// keys for locality.
    fn multi_get(&self, keys: &[&[u8]]) -> DbResult<Vec<Option<Vec<u8>>>>;

    /// Up to `limit` entries with key >= `from`, ascending.
    fn scan(&self, from: &[u8], limit: usize) -> DbResult<Vec<(Vec<u8>, Vec<u8>)>>;

    /// Statistics for `stats` and metrics.
    fn stats(&self) -> DbResult<EngineStats>;

    /// Fixes a consistent snapshot of the table, to be written into `dest`
    /// (a directory that must not exist yet) by [`TableBackup::finish`].
    /// Cheap, so a caller can fix every table while ingest is paused and
    /// copy afterwards. RocksDB writes a checkpoint (hard links to its
    /// immutable files) right here; MDBX opens a read transaction here and
    /// copies from it in `finish`, while writers go on.
    fn begin_backup(&self, dest: &std::path::Path) -> DbResult<Box<dyn TableBackup + '_>>;

    /// Blocks until the engine's background work (RocksDB flushes and
    /// compactions) has drained. Benches call it so that work deferred by
    /// one layout is charged to that layout and does not run under the
    /// next measurement. Engines without background work return at once.
    fn wait_for_background_work(&self) -> DbResult<()> {
        Ok(())
    }

    /// Flushes everything and releases resources early (also done on drop).
    fn close(&self) -> DbResult<()> {
        Ok(())
    }
}

/// A write in progress on one [`KvStore`].
pub trait KvWrite: Send {
    /// Inserts or replaces a key.
    fn put(&mut self, key: &[u8], value: &[u8]) -> DbResult<()>;

    /// Deletes a key (absent keys are fine).
    fn delete(&mut self, key: &[u8]) -> DbResult<()>;

    /// Inserts or replaces many keys, as `put` one at a time would. An
    /// engine may write them faster when their keys ascend strictly (a
    /// batch of bodies keyed by position): RocksDB with block compression
    /// writes SST files from the slices and ingests them at commit.
    fn put_sorted(&mut self, pairs: &[(&[u8], &[u8])]) -> DbResult<()> {
        for (k, v) in pairs {
            self.put(k, v)?;
        }
        Ok(())
    }

    /// Ends the write phase: pushes any buffered writes into the engine.
    fn finish(&mut self) -> DbResult<()>;

    /// Makes the writes durable and returns how long that took.
    fn commit(self: Box<Self>) -> DbResult<CommitTiming>;
}

/// A table backup whose contents were fixed by [`KvStore::begin_backup`].
pub trait TableBackup {
    /// Writes the fixed contents to the destination; returns the bytes of
    /// the files written.
    fn finish(self: Box<Self>) -> DbResult<u64>;
}

/// How a table is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Read and write, creating the table if it is new. An existing table
    /// keeps the settings it was created with unless a setting is given
    /// explicitly (then the change is logged).
    #[default]
    ReadWrite,
    /// Read only: the engine changes no byte of the table's data files
    /// (engine lock files aside) and never creates one. Writes fail.
    ReadOnly,
}

/// Who compresses a table's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ValueCompression {
    /// The application: values arrive compressed (or are tiny), and the
    /// engine stores them as they are.
    #[default]
    App,
    /// The engine, in blocks of consecutive values (keys appended in
    /// order, so neighbours in key order share a block): zstd at `level`,
    /// blocks of about `block_bytes` before compression, and a dictionary
    /// of up to `dict_bytes` per file, made from that file's own blocks as
    /// `dict_form` says (`dict_bytes` 0: none). A point read decompresses
    /// one block.
    Blocks {
        /// zstd level.
        level: i32,
        /// Target block size before compression.
        block_bytes: usize,
        /// Largest per-file dictionary (0: none).
        dict_bytes: usize,
        /// How a file's dictionary is made.
        dict_form: BlockDict,
        /// Target block size before compression for values written in
        /// bulk (sorted pairs of at least an engine chunk handed over at
        /// once by [`KvWrite::put_sorted`](crate::KvWrite::put_sorted): a
        /// backfill's batches), which become history and are read rarely;
        /// smaller writes (a live tail) use `block_bytes`. An engine with
        /// no bulk path uses `block_bytes` for everything.
        bulk_block_bytes: usize,
        /// zstd level of values written in bulk.
        bulk_level: i32,
        /// The fewest bytes of sorted pairs handed over at once that are
        /// written in bulk (None: the engine's own threshold, one write
        /// chunk). A table whose batches are small but still history
        /// (ledger records: ~15 MB a backfill batch) sets it lower.
        bulk_min_bytes: Option<usize>,
        /// Keys begin with a ledger sequence, and the table keeps ranges of
        /// them apart where the engine can (RocksDB: a column family a
        /// range), so a commit's cost does not grow with history. Fixed
        /// when the table is made: a dir records it (its format), and an
        /// engine refuses a table whose layout differs.
        sharded: bool,
    },
}

/// How an engine makes a file's block dictionary from the file's first
/// blocks (docs/benchmarks.md, "Block dictionaries: sampled, not
/// trained").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockDict {
    /// zstd's trainer, over 100 times the dictionary's size of blocks:
    /// the fewest bytes for a small dictionary, and the most CPU (64 KiB:
    /// ~9 ms a pubnet ledger at ingest).
    #[default]
    Trained,
    /// Blocks sampled from them, used as the dictionary as they are (a
    /// raw-content dictionary): no training (~2 ms a pubnet ledger at
    /// ingest, 256 KiB or 1 MiB alike); it needs a larger dictionary than
    /// training for the same bytes.
    Samples,
}

impl BlockDict {
    /// The name used in config.
    pub fn name(self) -> &'static str {
        match self {
            BlockDict::Trained => "trained",
            BlockDict::Samples => "samples",
        }
    }
}

impl std::fmt::Display for BlockDict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Opens the engine instance that holds one table. Implemented by
/// `ledgerstore-backends`; only the binary picks the implementation.
pub trait EngineFactory: Send + Sync {
    /// Opens `table` of a `layout` data dir at `path`: with
    /// [`Access::ReadWrite`], creating it if needed. `compression` says
    /// who compresses its values; an engine that cannot compress blocks
    /// refuses [`ValueCompression::Blocks`] by name.
    fn open_table(
        &self,
        layout: Layout,
        table: TableId,
        path: &std::path::Path,
        access: Access,
        compression: ValueCompression,
    ) -> DbResult<Box<dyn KvStore>>;
}
