//! Opens a data dir with the concrete engines: the only place the binary
//! picks backends.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ledgerstore_backends::Backends;
use ledgerstore_config::Config;
use ledgerstore_db_api::{Access, Layout};
use ledgerstore_store::{
    DictOptions, ExplicitPolicy, IndexedOptions, Ledgerstore, Limits, StoreError, StoreOptions,
};

use crate::cli::StoreArgs;

/// The engines described by the config.
pub fn backends(cfg: &Config) -> Backends {
    let mut b = Backends::default();
    for (opts, page) in [
        (&mut b.mdbx_tx_data, cfg.mdbx.tx_data_page_size),
        (&mut b.mdbx_tx_index, cfg.mdbx.tx_index_page_size),
    ] {
        opts.page_size = page;
        opts.max_size = cfg.mdbx.max_size_gib.map(|g| g << 30);
        opts.growth_step = cfg.mdbx.growth_step_mib.map(|m| m << 20);
        opts.max_read_txn = std::time::Duration::from_millis(cfg.mdbx.max_read_txn_ms);
    }
    b.rocks_write_buffer_bytes = cfg.rocksdb.write_buffer_mb.map(|m| m << 20);
    b.rocks_block_cache_bytes = cfg.rocksdb.block_cache_mb.map(|m| m << 20);
    b.rocks_max_open_files = cfg.rocksdb.max_open_files;
    // The tables share the process's descriptors: two RocksDB tables in
    // `indexed` (three in the RocksDB layouts), each keeping up to `n`.
    if let (Some(n), Some(limit)) = (cfg.rocksdb.max_open_files, crate::rlimit::open_files())
        && u64::try_from(n).is_ok_and(|n| 2 * n > limit)
    {
        tracing::warn!(
            max_open_files = n,
            limit,
            "rocksdb.max_open_files: each RocksDB table may keep this many files open, and \
             together they may pass this process's open-file limit (ulimit -n, LimitNOFILE), \
             where opening a file fails: raise the limit past twice the setting (three times \
             in the rocksdb layouts) plus the daemon's connections"
        );
    }
    b
}

/// The store options of the config.
pub fn store_options(cfg: &Config, layout: Option<Layout>, create: bool) -> StoreOptions {
    let seg = &cfg.segments;
    let new_dir = IndexedOptions::default();
    StoreOptions {
        layout,
        create,
        compression_level: cfg.db.zstd_level,
        limits: Limits {
            max_ledger_bytes: cfg.limits.max_ledger_bytes,
            max_tx_bytes: cfg.limits.max_tx_bytes,
            max_txs_per_ledger: cfg.limits.max_txs_per_ledger,
            min_free_disk_bytes: cfg.limits.min_free_disk_mb << 20,
            ..Limits::default()
        },
        indexed: IndexedOptions {
            range_ledgers: seg.range_ledgers.unwrap_or(new_dir.range_ledgers),
            merge_fanout: seg.merge_fanout.unwrap_or(new_dir.merge_fanout),
            merge_levels: seg.merge_levels.unwrap_or(new_dir.merge_levels),
            explicit_policy: ExplicitPolicy {
                range_ledgers: seg.range_ledgers,
                merge_fanout: seg.merge_fanout,
                merge_levels: seg.merge_levels,
                bodies: seg.bodies,
            },
            bodies: seg.bodies.unwrap_or(new_dir.bodies),
            ledgers: new_dir.ledgers,
            block_bytes: (seg.block_kib as usize) << 10,
            bulk_block_bytes: (seg.bulk_block_kib as usize) << 10,
            bulk_level: seg.bulk_zstd_level,
            block_dict_bytes: (seg.block_dict_kib as usize) << 10,
            block_dict_form: seg.block_dict,
            warm_bytes: cfg.segments.warm_mib << 20,
            filter_bytes: cfg.segments.filter_mib << 20,
            dict: cfg.dict.enabled.then_some(DictOptions {
                train_after_txs: cfg.dict.train_after_txs,
                samples: cfg.dict.samples,
                max_bytes: cfg.dict.max_kib << 10,
                retrain_every_txs: cfg.dict.retrain_every_txs,
            }),
        },
        offline: false,
        engine_access: Access::ReadWrite,
        report_jsonl: Some(
            cfg.db
                .report_jsonl
                .clone()
                .unwrap_or_else(|| cfg.db.path.join("batch-reports.jsonl")),
        ),
    }
}

fn open(path: &Path, cfg: &Config, opts: StoreOptions) -> Result<Ledgerstore> {
    Ledgerstore::open(path, opts, &backends(cfg))
        .with_context(|| format!("opening data dir {}", path.display()))
}

/// Opens an existing data dir for reading: nothing in it is created or
/// changed (engines read-only, no rollback, no segment work).
pub fn existing(a: &StoreArgs) -> Result<Ledgerstore> {
    let cfg = crate::config::offline(&a.engines)?;
    let opts = StoreOptions {
        create: false,
        report_jsonl: None,
        offline: true,
        engine_access: Access::ReadOnly,
        ..store_options(&cfg, None, false)
    };
    open(&a.data_dir, &cfg, opts)
}

/// Opens a stopped data dir for an offline backup: offline (no rollback,
/// no segment work), but with read-write engines, because a RocksDB
/// checkpoint needs them. An MDBX geometry from the environment is not
/// applied (it would stay in the dir; `backup` refuses the flags).
pub fn for_backup(a: &StoreArgs) -> Result<Ledgerstore> {
    let mut cfg = crate::config::offline(&a.engines)?;
    cfg.mdbx.max_size_gib = None;
    cfg.mdbx.growth_step_mib = None;
    let opts = StoreOptions {
        create: false,
        report_jsonl: None,
        offline: true,
        ..store_options(&cfg, None, false)
    };
    open(&a.data_dir, &cfg, opts)
}

/// Opens (creating if needed) a data dir for a bulk ingest, with the
/// config's store options (segments, dictionaries, limits) and the run's
/// zstd level and report file.
pub fn for_ingest(
    a: &StoreArgs,
    layout: Option<Layout>,
    zstd_level: i32,
    report_jsonl: PathBuf,
) -> Result<Ledgerstore> {
    let cfg = crate::config::offline(&a.engines)?;
    let opts = StoreOptions {
        compression_level: zstd_level,
        report_jsonl: Some(report_jsonl),
        ..store_options(&cfg, layout, true)
    };
    open(&a.data_dir, &cfg, opts)
}

/// The daemon's opener: the dir keeps its recorded layout; a new dir gets
/// `db.layout`.
pub fn for_daemon(
    cfg: &Config,
) -> impl FnOnce() -> Result<Ledgerstore, StoreError> + Send + 'static {
    let path = cfg.db.path.clone();
    let backends = backends(cfg);
    let opts = store_options(cfg, cfg.db.layout, true);
    move || Ledgerstore::open(&path, opts, &backends)
}
