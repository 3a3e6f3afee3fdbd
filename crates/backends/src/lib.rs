//! The one place that knows which engine, with which options, serves each
//! table of each layout. The binary, the benches and the store's tests use
//! it; the store itself only sees [`EngineFactory`].

use std::path::Path;

use ledgerstore_db_api::{
    Access, DbError, DbResult, EngineFactory, EngineKind, KvStore, Layout, TableId,
    ValueCompression,
};
pub use ledgerstore_engine_mdbx::{MdbxOptions, MdbxStore, MdbxSync};
pub use ledgerstore_engine_rocks::{
    BlockCompression, BulkBlocks, RocksOptions, RocksProfile, RocksStore, SEQ_SHARD_SHIFT,
};

/// Engine options for every table. The default uses 4 KiB MDBX pages for
/// both hash tables: measured on this machine class against 16 KiB (see
/// docs/operations.md), 4 KiB wrote 2x fewer bytes, used less disk and
/// served more lookups/s for 1.2 KB values.
#[derive(Debug, Clone, Default)]
pub struct Backends {
    /// MDBX environment of `tx_data` (hybrid).
    pub mdbx_tx_data: MdbxOptions,
    /// MDBX environment of `tx_index` (hybrid).
    pub mdbx_tx_index: MdbxOptions,
    /// Overrides RocksDB's memtable size (tests scale it down).
    pub rocks_write_buffer_bytes: Option<usize>,
    /// Overrides RocksDB's background jobs.
    pub rocks_background_jobs: Option<i32>,
    /// Overrides the tuned profile's block cache.
    pub rocks_block_cache_bytes: Option<usize>,
    /// Overrides the files each RocksDB table keeps open.
    pub rocks_max_open_files: Option<i32>,
}

impl Backends {
    /// Small engines for tests: 1 MiB memtables, 1 GiB MDBX maps.
    pub fn for_tests() -> Self {
        let mdbx = MdbxOptions {
            max_size: Some(1 << 30),
            growth_step: Some(4 << 20),
            ..MdbxOptions::default()
        };
        Self {
            mdbx_tx_data: mdbx.clone(),
            mdbx_tx_index: mdbx,
            rocks_write_buffer_bytes: Some(1 << 20),
            rocks_background_jobs: Some(2),
            rocks_block_cache_bytes: Some(8 << 20),
            rocks_max_open_files: None,
        }
    }

    /// The RocksDB options of `table` in `layout`, its values compressed
    /// as `compression` says.
    pub fn rocks_options(
        &self,
        layout: Layout,
        table: TableId,
        compression: ValueCompression,
    ) -> RocksOptions {
        // Raw values RocksDB compresses in blocks (`indexed` bodies in a
        // `blocks` dir): positional, like the per-record form.
        let mut o = if let ValueCompression::Blocks {
            level,
            block_bytes,
            dict_bytes,
            dict_form,
            bulk_block_bytes,
            bulk_level,
            bulk_min_bytes,
            sharded,
        } = compression
        {
            RocksOptions {
                bulk_blocks: Some(BulkBlocks {
                    block_bytes: bulk_block_bytes,
                    level: bulk_level,
                    min_bytes: bulk_min_bytes,
                }),
                // Keyed by ledger sequence first: a column family of
                // 2^18 ledgers, so a backfill's commit does not slow with
                // history's bulk files.
                shard_shift: sharded.then_some(SEQ_SHARD_SHIFT),
                ..RocksOptions::tuned_blocks(
                    block_bytes,
                    BlockCompression {
                        level,
                        dict_bytes,
                        dict_form,
                    },
                )
            }
        } else {
            Self::app_compressed(layout, table)
        };
        if let Some(b) = self.rocks_write_buffer_bytes {
            o.write_buffer_bytes = b;
        }
        if let Some(j) = self.rocks_background_jobs {
            o.background_jobs = j;
        }
        if let (Some(c), RocksProfile::Tuned) = (self.rocks_block_cache_bytes, o.profile) {
            o.block_cache_bytes = c;
        }
        if let Some(n) = self.rocks_max_open_files {
            o.max_open_files = n;
        }
        o
    }

    /// A table whose values the application compresses.
    fn app_compressed(layout: Layout, table: TableId) -> RocksOptions {
        match layout {
            Layout::Rocksdb => RocksOptions::field_study(),
            Layout::RocksdbTuned => RocksOptions::tuned(table == TableId::TxData),
            // The sequential ledgers table of the hybrid layout: tuned, no
            // forced compaction (sequential keys compact by trivial moves).
            Layout::Hybrid => RocksOptions::tuned(false),
            // Position-keyed tx bodies: appended in key order and read by
            // positions that exist.
            Layout::Indexed if table == TableId::TxData => RocksOptions::tuned_positional(),
            // Ledgers append in key order too: tuned, blob-less.
            Layout::Indexed => RocksOptions::tuned(false),
        }
    }
}

impl EngineFactory for Backends {
    fn open_table(
        &self,
        layout: Layout,
        table: TableId,
        path: &Path,
        access: Access,
        compression: ValueCompression,
    ) -> DbResult<Box<dyn KvStore>> {
        Ok(match layout.engine_for(table) {
            EngineKind::Mdbx if compression != ValueCompression::App => {
                return Err(DbError::Engine {
                    engine: "mdbx",
                    table: table.name().to_string(),
                    detail: "MDBX stores values as given; block compression needs RocksDB".into(),
                });
            }
            EngineKind::Mdbx => {
                let opts = match table {
                    TableId::TxIndex => &self.mdbx_tx_index,
                    _ => &self.mdbx_tx_data,
                };
                Box::new(MdbxStore::open(path, table.name(), opts, access)?)
            }
            EngineKind::Rocksdb => Box::new(RocksStore::open(
                path,
                table.name(),
                &self.rocks_options(layout, table, compression),
                access,
            )?),
        })
    }
}
