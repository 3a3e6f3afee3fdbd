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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use ledgerstore_db_api::{
    Access, BlockDict, CommitTiming, DbError, DbResult, EngineKind, EngineStats, KvStore, KvWrite,
    TableBackup, dir_size,
};
use rocksdb::checkpoint::Checkpoint;
use rocksdb::statistics::{StatsLevel, Ticker};
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, CompactOptions, DBCompressionType,
    FlushOptions, LruCacheOptions, Options, WaitForCompactOptions, WriteBatch, WriteOptions,
};

use crate::shards::{Cf, Db, Shards};

mod bulk;
mod shards;

pub use shards::MAX_SHIFT;

/// The shift of tables keyed by ledger sequence first (`tx_bodies`
/// positions, `ledgers`): 2^18 = 262,144 ledgers a column family, ~15 days
/// of pubnet ([`RocksOptions::shard_shift`]).
pub const SEQ_SHARD_SHIFT: u32 = 18;

/// Which RocksDB setup a table uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RocksProfile {
    /// The field study: flush + forced compaction after every batch.
    FieldStudy,
    /// Well configured: WAL + background compaction, blooms, BlobDB.
    Tuned,
}

/// Options of one RocksDB instance.
#[derive(Debug, Clone)]
pub struct RocksOptions {
    /// Profile.
    pub profile: RocksProfile,
    /// Memtable size in bytes.
    pub write_buffer_bytes: usize,
    /// Memtables kept before writes stall.
    pub max_write_buffers: i32,
    /// L0 files that trigger compaction.
    pub l0_compaction_trigger: i32,
    /// Background flush + compaction threads.
    pub background_jobs: i32,
    /// Open file limit.
    pub max_open_files: i32,
    /// BlobDB: values at least this large go to blob files (tuned only).
    pub blob_min_size: Option<u64>,
    /// Bloom filter bits per key (tuned only).
    pub bloom_bits_per_key: Option<f64>,
    /// Block cache in bytes (tuned only; the field setup keeps RocksDB's
    /// default).
    pub block_cache_bytes: usize,
    /// Target data block size (tuned only).
    pub block_bytes: usize,
    /// A two-level (partitioned) index with its top level pinned (tuned
    /// only): with small blocks the flat index of one SST is hundreds of
    /// KB, and a cold point read would read it whole.
    pub partitioned_index: bool,
    /// zstd block compression (tuned only; None: values are stored as
    /// given, already compressed by the application).
    pub block_compression: Option<BlockCompression>,
    /// With block compression: the block size and zstd level of the SST
    /// files a bulk write makes ([`BulkBlocks`]; None: the table's own).
    pub bulk_blocks: Option<BulkBlocks>,
    /// A table made with this keeps each range of keys in a column family
    /// of its own: a key's first 4 bytes, big-endian, shifted right by it
    /// (`shards.rs`), so a commit's cost is bounded by a shard's files,
    /// not history's. Recorded in the table when it is made (None: one
    /// column family). An existing table of the other layout is refused
    /// (an empty one in `default` alone is made sharded); a sharded one
    /// keeps the shift it recorded.
    pub shard_shift: Option<u32>,
}

/// The blocks of SST files written whole from sorted pairs (`bulk.rs`: a
/// backfill's batches of bodies), which differ from what flushes and
/// compactions write. A block's size and level are the writer's choice,
/// not the table's: RocksDB reads any SST whatever block size or zstd
/// level made it. Such files go to the bottom level unrewritten when their
/// keys follow everything stored, and history keeps these blocks. A file
/// that spans them, compacted into their level, rewrites them in the
/// table's blocks. So pairs at or below the largest key stored go through
/// the memtable rather than a bulk file (an ingested file is never cut),
/// and a memtable holding anything is flushed before bulk files go in. A
/// flushed file may still span bulk files (an eviction's tombstones beside
/// the live tail); RocksDB cuts what compaction makes of it at the bottom
/// level's file boundaries whenever that level is not the base level
/// (past `max_bytes_for_level_base`, 512 MiB), so only a young table's
/// bulk files can be rewritten that way. With a dictionary, its training
/// input and buffer scale with these blocks ([`dict_buffer_bytes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkBlocks {
    /// Target data block size before compression.
    pub block_bytes: usize,
    /// zstd level.
    pub level: i32,
    /// The fewest bytes of sorted pairs, handed over in one
    /// [`KvWrite::put_sorted`], that are written in bulk (None: one
    /// 32 MiB write chunk). Each bulk write makes at least one SST file.
    pub min_bytes: Option<usize>,
}

/// RocksDB compresses a table's data blocks: zstd at every level (so
/// sequential files still move down the tree without being rewritten),
/// optionally with a dictionary trained per SST on that file's own blocks. The WAL
/// is zstd-compressed too, and a write of more than one 32 MiB chunk
/// bypasses it, so bulk ingest compresses its bytes once, not twice: sorted
/// pairs handed over in one `put_sorted` become SST files ingested at
/// commit (`bulk.rs`); puts one at a time fill memtables flushed at
/// commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockCompression {
    /// zstd level.
    pub level: i32,
    /// Largest dictionary per SST (0: none). A flush, a compaction or a
    /// bulk write buffers an SST's first [`dict_buffer_bytes`] of blocks
    /// uncompressed and makes the dictionary from them (unbounded,
    /// RocksDB's default, a flush would buffer its whole output, up to
    /// 4 × 64 MiB of merged memtables). docs/benchmarks.md, "Block
    /// dictionaries".
    pub dict_bytes: usize,
    /// How: zstd's trainer over all of them, or blocks sampled from them
    /// used as they are (RocksDB's `zstd_max_train_bytes` 0).
    pub dict_form: BlockDict,
}

/// Fewest data blocks a dictionary is trained on: RocksDB's samples are
/// whole blocks (the last cut short), and zstd's trainer refuses fewer
/// than 7 samples, so an SST whose training input held fewer would
/// silently get no dictionary. 16, not 7: a block closes at ~90% of its
/// size plus one value, so large values make fewer, larger blocks (the
/// config keeps 16 blocks within a 64 MiB file).
pub const MIN_DICT_SAMPLE_BLOCKS: usize = 16;

/// Bytes of an SST's first blocks that its dictionary of `dict_bytes` is
/// trained on, and that RocksDB buffers uncompressed until then: zstd's
/// rule of thumb (100× the dictionary), and at least
/// [`MIN_DICT_SAMPLE_BLOCKS`] blocks of `block_bytes`.
pub fn dict_train_bytes(dict_bytes: usize, block_bytes: usize) -> usize {
    (dict_bytes.saturating_mul(100))
        .max(block_bytes.saturating_mul(MIN_DICT_SAMPLE_BLOCKS))
        .min(i32::MAX as usize)
}

/// Bytes of an SST's first blocks RocksDB buffers uncompressed until it
/// has made the file's dictionary: the training input for a trained one
/// ([`dict_train_bytes`]); for sampled blocks, 4 times the dictionary (so
/// the sample still spreads over more than the first blocks) and at least
/// [`MIN_DICT_SAMPLE_BLOCKS`] blocks, within a quarter of a file (and
/// never below the dictionary). Not the training rule: at 1 MiB that would
/// be 100 MiB, more than a 64 MiB file, so every file would be held whole.
pub fn dict_buffer_bytes(dict_bytes: usize, block_bytes: usize, form: BlockDict) -> usize {
    match form {
        BlockDict::Trained => dict_train_bytes(dict_bytes, block_bytes),
        BlockDict::Samples => (dict_bytes.saturating_mul(4))
            .max(block_bytes.saturating_mul(MIN_DICT_SAMPLE_BLOCKS))
            .min(BLOCK_FILE_BYTES / 4)
            .max(dict_bytes)
            .min(i32::MAX as usize),
    }
}

/// With block compression: the memtable and SST size.
const BLOCK_FILE_BYTES: usize = 64 << 20;

impl RocksOptions {
    /// The field study's exact setup.
    pub fn field_study() -> Self {
        Self {
            profile: RocksProfile::FieldStudy,
            write_buffer_bytes: 512 << 20,
            max_write_buffers: 6,
            l0_compaction_trigger: 50,
            background_jobs: 20,
            max_open_files: 5000,
            blob_min_size: None,
            bloom_bits_per_key: None,
            block_cache_bytes: 0,
            block_bytes: 16 << 10,
            partitioned_index: false,
            block_compression: None,
            bulk_blocks: None,
            shard_shift: None,
        }
    }

    /// A well-configured RocksDB for this workload. `large_values` turns on
    /// BlobDB (tx records); point-lookup tables get a bloom filter.
    pub fn tuned(large_values: bool) -> Self {
        Self {
            profile: RocksProfile::Tuned,
            write_buffer_bytes: 256 << 20,
            max_write_buffers: 4,
            l0_compaction_trigger: 4,
            background_jobs: std::thread::available_parallelism()
                .map(|n| n.get() as i32)
                .unwrap_or(2)
                .max(2),
            max_open_files: 5000,
            blob_min_size: large_values.then_some(512),
            bloom_bits_per_key: Some(10.0),
            block_cache_bytes: 256 << 20,
            block_bytes: 16 << 10,
            partitioned_index: false,
            block_compression: None,
            bulk_blocks: None,
            shard_shift: None,
        }
    }

    /// Tuned for values read by a key that is known to exist (layout
    /// `indexed`'s bodies, keyed by position): 4 KiB blocks, so a cold
    /// point read fetches about one page beside the ~1.2 KB value instead
    /// of a 16 KiB block; a partitioned index, so it fetches one 4 KiB
    /// index partition rather than the SST's whole index; and no bloom
    /// filter, which cannot say no to a position that exists and would
    /// take ~1.2 bytes per key of block cache.
    pub fn tuned_positional() -> Self {
        Self {
            bloom_bits_per_key: None,
            block_bytes: 4 << 10,
            partitioned_index: true,
            ..Self::tuned(false)
        }
    }

    /// [`RocksOptions::tuned_positional`] with raw values that RocksDB
    /// compresses in blocks of about `block_bytes` (layout `indexed`'s
    /// bodies in a `blocks` dir).
    pub fn tuned_blocks(block_bytes: usize, compression: BlockCompression) -> Self {
        Self {
            block_bytes,
            write_buffer_bytes: BLOCK_FILE_BYTES,
            block_compression: Some(compression),
            ..Self::tuned_positional()
        }
    }

    /// Shard bits of the block cache: RocksDB's default (shards of at
    /// least 512 KiB, at most 64 of them) unless the largest block would
    /// then fill more than a sixteenth of a shard. An LRU shard evicts
    /// its own entries to fit a block and drops one larger than itself, so
    /// 1 MiB bulk blocks in the default 4 MiB shards of a 256 MiB cache
    /// would each evict a quarter of a shard, and 4 MiB blocks would never
    /// stay cached.
    fn cache_shard_bits(&self) -> i32 {
        let largest = self
            .bulk_blocks
            .map_or(self.block_bytes, |b| b.block_bytes.max(self.block_bytes))
            .max(1);
        let shards = (self.block_cache_bytes / 16 / largest)
            .min(self.block_cache_bytes / (512 << 10))
            .clamp(1, 64);
        shards.ilog2() as i32
    }

    /// The options of a bulk write's SST files, when
    /// [`RocksOptions::bulk_blocks`] differs from the table's blocks: the
    /// table's options with that block size and level, and RocksDB's
    /// default block cache rather than a second one of the table's size
    /// (a writer reads nothing back; only a dictionary's buffer is
    /// charged to it).
    fn bulk_rocks_options(&self) -> Option<Result<Options, rocksdb::Error>> {
        let bulk = self.bulk_blocks?;
        let mut compression = self.block_compression?;
        if bulk.block_bytes == self.block_bytes && bulk.level == compression.level {
            return None;
        }
        compression.level = bulk.level;
        let o = Self {
            block_bytes: bulk.block_bytes,
            block_compression: Some(compression),
            block_cache_bytes: 0,
            bulk_blocks: None,
            ..self.clone()
        };
        Some(o.to_rocks())
    }

    /// The fewest bytes of sorted pairs one `put_sorted` writes in bulk
    /// ([`BulkBlocks::min_bytes`], or one write chunk).
    fn bulk_min_bytes(&self) -> usize {
        self.bulk_blocks
            .and_then(|b| b.min_bytes)
            .unwrap_or(WRITE_CHUNK_BYTES)
    }

    /// True when a large write skips the WAL (SST files ingested, or
    /// memtables flushed, at commit).
    fn bulk_bypasses_wal(&self) -> bool {
        self.profile == RocksProfile::Tuned && self.block_compression.is_some()
    }

    fn to_rocks(&self) -> Result<Options, rocksdb::Error> {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compression_type(DBCompressionType::None);
        o.set_write_buffer_size(self.write_buffer_bytes);
        o.set_max_write_buffer_number(self.max_write_buffers);
        o.set_level_zero_file_num_compaction_trigger(self.l0_compaction_trigger);
        o.set_max_background_jobs(self.background_jobs);
        o.set_max_open_files(self.max_open_files);
        // Counters only (no timers, no histograms): bytes written by flush,
        // compaction and the WAL, for write amplification.
        o.enable_statistics();
        o.set_statistics_level(StatsLevel::ExceptHistogramOrTimers);
        if self.profile == RocksProfile::Tuned {
            o.set_level_compaction_dynamic_level_bytes(true);
            o.set_target_file_size_base(64 << 20);
            o.set_max_bytes_for_level_base(512 << 20);
            o.set_bytes_per_sync(1 << 20);
            o.set_max_subcompactions(2);
            if let Some(c) = self.block_compression {
                o.set_compression_type(DBCompressionType::Zstd);
                // The same at every level (RocksDB's default uses the
                // main setting for the bottommost too): a trivial move
                // needs the input's compression to match the output's.
                o.set_compression_options(-14, c.level, 0, c.dict_bytes as i32);
                if c.dict_bytes > 0 && c.dict_form == BlockDict::Trained {
                    o.set_zstd_max_train_bytes(
                        dict_train_bytes(c.dict_bytes, self.block_bytes) as i32
                    );
                }
                o.set_target_file_size_base(BLOCK_FILE_BYTES as u64);
                // Whatever the config asks, a memtable stays within the
                // file size: a flush writes one file.
                o.set_write_buffer_size(self.write_buffer_bytes.min(BLOCK_FILE_BYTES));
                o.set_wal_compression_type(DBCompressionType::Zstd);
                if c.dict_bytes > 0 {
                    // RocksDB buffers blocks until the dictionary is
                    // made; bounded (0 would mean a flush's whole output).
                    // rust-rocksdb has no setter, the options string
                    // reaches it. Before anything the Rust `Options` keeps
                    // alive (the block cache below): the string returns
                    // new options.
                    let buffer = dict_buffer_bytes(c.dict_bytes, self.block_bytes, c.dict_form);
                    o = o.get_options_from_string(format!(
                        "compression_opts={{max_dict_buffer_bytes={buffer}}}"
                    ))?;
                }
            }
            if self.shard_shift.is_some() {
                // Column families share one WAL, and a WAL file goes only
                // once every column family with data in it has flushed:
                // the shard a live tail left keeps what it holds in its
                // memtable, and RocksDB's default cap on the WAL grows
                // with the column families. Past this, it flushes the
                // column families holding the oldest WAL data.
                o.set_max_total_wal_size(256 << 20);
                // A shard the eviction emptied gets no other write: its
                // deletes, once flushed (the cap above), would wait in L0
                // for files that never come, and the files they cover
                // would stay on disk. A file of deletes is marked for
                // compaction instead, and goes down to the files it
                // covers.
                o.add_compact_on_deletion_collector_factory(128, 64, 0.5);
            }
            let mut t = BlockBasedOptions::default();
            if let Some(bits) = self.bloom_bits_per_key {
                t.set_bloom_filter(bits, false);
            }
            t.set_block_size(self.block_bytes);
            t.set_cache_index_and_filter_blocks(true);
            t.set_pin_l0_filter_and_index_blocks_in_cache(true);
            if self.partitioned_index {
                t.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
                t.set_metadata_block_size(4 << 10);
                t.set_pin_top_level_index_and_filter(true);
            }
            if self.block_cache_bytes > 0 {
                let mut c = LruCacheOptions::default();
                c.set_capacity(self.block_cache_bytes);
                c.set_num_shard_bits(self.cache_shard_bits());
                t.set_block_cache(&Cache::new_lru_cache_opts(&c));
            }
            o.set_block_based_table_factory(&t);
            if let Some(min) = self.blob_min_size {
                o.set_enable_blob_files(true);
                o.set_min_blob_size(min);
                o.set_blob_file_size(256 << 20);
                o.set_blob_compression_type(DBCompressionType::None);
                // Keys are never overwritten or deleted in steady state, so
                // blob GC would only rewrite live data.
                o.set_enable_blob_gc(false);
            }
        }
        Ok(o)
    }
}

/// One table in its own RocksDB instance.
pub struct RocksStore {
    table: String,
    path: PathBuf,
    opts: RocksOptions,
    /// The options the DB was opened with; they own its statistics.
    rocks_opts: Options,
    /// Column families by key range, or None: every key in `default`.
    shards: Option<Shards>,
    /// The options bulk writes make SST files with, where
    /// [`RocksOptions::bulk_blocks`] differs from the table's blocks.
    bulk_opts: Option<Options>,
    access: Access,
    db: Db,
    /// Bytes of SST files written by bulk writes and ingested since open
    /// (RocksDB's statistics count flushes, compactions and the WAL only).
    ingested_bytes: AtomicU64,
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

fn err(table: &str, e: rocksdb::Error) -> DbError {
    err_detail(table, e.into_string())
}

/// A RocksDB error's text as a [`DbError`]: a full disk is named as such.
fn err_detail(table: &str, detail: String) -> DbError {
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

/// Bytes buffered in a write batch before it is applied to the memtable;
/// a write that fills one, or sorted pairs of as many, is bulk.
const WRITE_CHUNK_BYTES: usize = 32 << 20;

/// An empty batch with room for a chunk (and a value past it). Grown by
/// doubling instead, each chunk was copied as it grew and faulted in
/// about twice its pages: reserving it took 7% of bulk ingest's page
/// faults and ~3% of its CPU away, and lowered its peak RSS
/// (docs/benchmarks.md, "Ingest CPU"). Reserved, not touched: a small
/// write costs no more memory than it fills.
fn chunk_batch() -> WriteBatch {
    WriteBatch::with_capacity_bytes(WRITE_CHUNK_BYTES + (1 << 20))
}

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

    fn e(&self, e: rocksdb::Error) -> DbError {
        err(&self.table, e)
    }

    fn write_options(&self) -> WriteOptions {
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
    fn flush_memtable_before_bulk(&self, cf: &Cf<'_>) -> DbResult<()> {
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
    fn flush_all(&self) -> DbResult<()> {
        let cfs = self.data_cfs(None)?;
        let cfs: Vec<&Cf<'_>> = cfs.iter().collect();
        let mut f = FlushOptions::default();
        f.set_wait(true);
        self.db.flush_cfs_opt(&cfs, &f).map_err(|e| self.e(e))
    }

    /// The largest key stored (None: the table is empty), read without
    /// filling the block cache: the last key of the last shard holding
    /// any.
    fn last_key(&self) -> DbResult<Option<Vec<u8>>> {
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

    fn cf_property(&self, cf: &Cf<'_>, name: &str) -> Option<u64> {
        self.db.property_int_value_cf(cf, name).ok().flatten()
    }

    /// A property summed over the column families holding data (None when
    /// none has it).
    fn int_property(&self, name: &str) -> Option<u64> {
        let cfs = self.data_cfs(None).ok()?;
        cfs.iter()
            .filter_map(|cf| self.cf_property(cf, name))
            .reduce(u64::saturating_add)
    }
}

struct RocksWrite<'a> {
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

impl RocksWrite<'_> {
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
    /// [`BulkBlocks::min_bytes`]) become SST
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
        Ok(Box::new(RocksWrite {
            store: self,
            batch: chunk_batch(),
            wopts: self.write_options(),
            bypassed_wal: false,
            bulk: Vec::new(),
        }))
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
