//! A table's settings ([`RocksOptions`]: the field study's profile or the
//! tuned one, block compression, bulk blocks, shards) and the RocksDB
//! options they make.

use ledgerstore_db_api::BlockDict;
use rocksdb::statistics::StatsLevel;
use rocksdb::{BlockBasedOptions, Cache, DBCompressionType, LruCacheOptions, Options};

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
    /// [`KvWrite::put_sorted`](ledgerstore_db_api::KvWrite::put_sorted), that are written in bulk (None: one
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
pub(crate) const BLOCK_FILE_BYTES: usize = 64 << 20;

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
    pub(crate) fn cache_shard_bits(&self) -> i32 {
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
    pub(crate) fn bulk_rocks_options(&self) -> Option<Result<Options, rocksdb::Error>> {
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
    pub(crate) fn bulk_min_bytes(&self) -> usize {
        self.bulk_blocks
            .and_then(|b| b.min_bytes)
            .unwrap_or(WRITE_CHUNK_BYTES)
    }

    /// True when a large write skips the WAL (SST files ingested, or
    /// memtables flushed, at commit).
    pub(crate) fn bulk_bypasses_wal(&self) -> bool {
        self.profile == RocksProfile::Tuned && self.block_compression.is_some()
    }

    pub(crate) fn to_rocks(&self) -> Result<Options, rocksdb::Error> {
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

/// Bytes buffered in a write batch before it is applied to the memtable;
/// a write that fills one, or sorted pairs of as many, is bulk.
pub(crate) const WRITE_CHUNK_BYTES: usize = 32 << 20;
