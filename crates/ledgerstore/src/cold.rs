//! The published cold tier as the binary sets it up: the object store of
//! `[cold] store` or `[replica] store`, reached with `[lake]`'s settings.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use ledgerstore_cold::{DiskCache, HeldMemory, PackChoice, PackForm, Remote, Replica};
use ledgerstore_config::Config;
use ledgerstore_server::Publish;

/// The store at `location`, opened with `[lake]`'s settings (no request
/// is made yet).
pub fn remote(key: &str, location: &str, cfg: &Config) -> Result<Arc<Remote>> {
    let opened = ledgerstore_objstore::open(location, &crate::lake::options(&cfg.lake)?)
        .with_context(|| format!("{key} = {location:?}"))?;
    Ok(Arc::new(Remote::new(opened.store, location)))
}

/// The daemon's publisher, when `[cold] store` is set, with the replica
/// of its own store that serves evicted ranges (its cache is
/// `<data dir>/cold-cache`, bounded by `replica.cache_mb`; it keeps
/// `replica.frame_memory_mb` and `dict_memory_mb` in memory).
pub fn publisher(cfg: &Config, rt: tokio::runtime::Handle) -> Result<Option<Publish>> {
    if cfg.cold.store.is_empty() {
        return Ok(None);
    }
    ledgerstore_cold::init_publish_pool(cfg.cold.publish_threads_for(false))?;
    let remote = remote("cold.store", &cfg.cold.store, cfg)?;
    let dir = cfg.db.path.join("cold-cache");
    let cache = DiskCache::open(&dir, cfg.replica.cache_mb << 20)
        .with_context(|| format!("the writer's cache {}", dir.display()))?;
    Ok(Some(Publish {
        cold: Replica::with_memory(Arc::clone(&remote), cache, rt, held_memory(cfg)),
        remote,
        interval: Duration::from_millis(cfg.cold.publish_interval_ms),
        work: cfg.db.path.join("publish"),
        keep_local_ranges: cfg.cold.keep_local_ranges,
        form: pack_form(cfg),
    }))
}

/// The form new packs are written in: `[cold] pack_version` (validated to
/// 0, 2, 3 or 4) with `pack_zstd_level` and `pack_dict_kib`, or, 0 or
/// unset, the store's own (its newest pack's version; 4 for a store with
/// none).
pub fn pack_form(cfg: &Config) -> PackChoice {
    let c = &cfg.cold;
    let (level, dict_kib) = (c.pack_zstd_level, c.pack_dict_kib);
    PackChoice::Fixed(match c.pack_version {
        0 => return PackChoice::StoresOwn { level, dict_kib },
        2 => PackForm::Entries,
        3 => PackForm::Frames { level, dict_kib: 0 },
        // 4: `ColdConfig::validate` refuses any other version.
        _ => PackForm::Frames { level, dict_kib },
    })
}

/// A read replica of `[replica] store`, its cache opened (emptied); its
/// reads run their requests on `rt`.
pub fn replica(cfg: &Config, rt: tokio::runtime::Handle) -> Result<Arc<Replica>> {
    let r = &cfg.replica;
    let remote = remote("replica.store", &r.store, cfg)?;
    let cache = DiskCache::open(&r.cache_dir, r.cache_mb << 20)
        .with_context(|| format!("replica.cache_dir = {}", r.cache_dir.display()))?;
    Ok(Replica::with_memory(remote, cache, rt, held_memory(cfg)))
}

/// What a replica keeps in memory (`[replica] frame_memory_mb`,
/// `dict_memory_mb`, `batch_memory_mb`, `batch_gets_in_flight`).
pub fn held_memory(cfg: &Config) -> HeldMemory {
    HeldMemory {
        frames: cfg.replica.frame_memory_bytes(),
        dicts: cfg.replica.dict_memory_bytes(),
        batch: cfg.replica.batch_memory_bytes(),
        batch_gets: cfg.replica.batch_gets_in_flight as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The replica's default memory is the cold crate's.
    #[test]
    fn replica_memory_defaults_match_the_replica() {
        assert_eq!(held_memory(&Config::default()), HeldMemory::default());
    }

    /// Each `--replica.*` flag of what a replica holds reaches its own
    /// field (distinct values, so a flag fed to another field fails).
    #[test]
    fn replica_memory_flags_reach_their_fields() {
        use clap::Parser;
        let cli = crate::cli::Cli::parse_from([
            "ledgerstore",
            "serve",
            "--replica.frame-memory-mb",
            "3",
            "--replica.dict-memory-mb",
            "5",
            "--replica.batch-memory-mb",
            "7",
            "--replica.batch-gets-in-flight",
            "11",
        ]);
        let crate::cli::Command::Serve(args) = cli.command else {
            panic!("serve");
        };
        let cfg = crate::config::daemon(&args.flags).expect("config");
        assert_eq!(
            held_memory(&cfg),
            HeldMemory {
                frames: 3 << 20,
                dicts: 5 << 20,
                batch: 7 << 20,
                batch_gets: 11,
            }
        );
    }

    /// The config's pack defaults and bounds are the pack crate's (the
    /// config crate depends on no format crate, so it repeats them).
    #[test]
    fn pack_settings_match_the_pack_format() {
        let cfg = Config::default();
        assert_eq!(cfg.cold.pack_dict_kib, ledgerstore_pack::DEFAULT_DICT_KIB);
        assert_eq!(
            cfg.cold.pack_zstd_level,
            ledgerstore_pack::DEFAULT_FRAME_LEVEL
        );
        let mut c = Config::default();
        c.cold.pack_dict_kib = (ledgerstore_pack::MAX_DICT / 1024) as u32;
        assert!(
            c.validate().is_ok(),
            "the largest dictionary a reader allows"
        );
        c.cold.pack_dict_kib += 1;
        assert!(c.validate().is_err(), "past what a reader allows");
        c.cold.pack_dict_kib = 2048;
        assert_eq!(
            pack_form(&c),
            PackChoice::StoresOwn {
                level: 3,
                dict_kib: 2048
            },
            "unset: the store's own"
        );
        c.cold.pack_version = 4;
        assert_eq!(
            pack_form(&c),
            PackChoice::Fixed(PackForm::Frames {
                level: 3,
                dict_kib: 2048
            })
        );
        c.cold.pack_version = 3;
        assert_eq!(
            pack_form(&c),
            PackChoice::Fixed(PackForm::Frames {
                level: 3,
                dict_kib: 0
            })
        );
        c.cold.pack_version = 2;
        assert_eq!(pack_form(&c), PackChoice::Fixed(PackForm::Entries));
        c.cold.pack_version = 0;
        assert!(matches!(pack_form(&c), PackChoice::StoresOwn { .. }));
    }
}
