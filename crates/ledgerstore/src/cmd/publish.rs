//! `ledgerstore publish`: one publish round over a stopped data dir, as
//! the daemon's publisher runs them (`[cold]`).

use std::sync::Arc;

use anyhow::{Context, Result, bail};

use crate::cli::ServeArgs;
use crate::{config, open};

pub fn run(a: ServeArgs) -> Result<()> {
    let cfg = config::daemon(&a.flags)?;
    if cfg.cold.store.is_empty() {
        bail!("cold.store is not set: name the object store to publish to (--cold.store URL)");
    }
    if !cfg.db.path.join("ledgerstore.json").exists() {
        bail!(
            "data dir {}: not a ledgerstore data dir (no ledgerstore.json)",
            cfg.db.path.display()
        );
    }
    ledgerstore_cold::init_publish_pool(cfg.cold.publish_threads_for(true))?;
    let remote = crate::cold::remote("cold.store", &cfg.cold.store, &cfg)?;
    let store = Arc::new(
        open::for_daemon(&cfg)()
            .with_context(|| format!("opening data dir {}", cfg.db.path.display()))?,
    );
    // Ranges the mark has closed get their segments first.
    store.wait_for_segments()?;
    let rt = crate::runtime()?;
    let work = cfg.db.path.join("publish");
    let events = if cfg.events.enabled && cfg.cold.publish_events {
        local_events(&cfg.db.path.join("events"))?
    } else {
        None
    };
    let r = rt.block_on(ledgerstore_cold::publish_as(
        Arc::clone(&store),
        &remote,
        &work,
        events,
        Arc::new(std::sync::atomic::AtomicBool::new(false)),
        crate::cold::pack_form(&cfg),
    ));
    let evicted = match (&r, cfg.cold.keep_local_ranges) {
        (Ok(_), keep) if keep > 0 => {
            let dir = cfg.db.path.join("cold-cache");
            let cache = ledgerstore_cold::DiskCache::open(&dir, cfg.replica.cache_mb << 20)?;
            let cold = ledgerstore_cold::Replica::with_memory(
                Arc::clone(&remote),
                cache,
                rt.handle().clone(),
                crate::cold::held_memory(&cfg),
            );
            Some(rt.block_on(ledgerstore_cold::evict(Arc::clone(&store), &cold, keep)))
        }
        _ => None,
    };
    store.close()?;
    let r = r?;
    let location = &cfg.cold.store;
    match (r.version, r.mark) {
        (Some(v), Some(mark)) => println!(
            "published manifest {v} to {location}: ledgers up to {mark}, {} new range(s) {:?}{}, \
             {} object(s) uploaded ({:.1} MiB), {} already there, in {:.1} s",
            r.packs.len(),
            r.packs,
            r.pack_form
                .map(|f| format!(" in version-{} packs", f.version()))
                .unwrap_or_default(),
            r.uploaded,
            r.uploaded_bytes as f64 / (1 << 20) as f64,
            r.skipped,
            r.took.as_secs_f64()
        ),
        (None, Some(mark)) => {
            println!("nothing new to publish: {location} already holds ledgers up to {mark}")
        }
        _ => println!("nothing to publish: no ledger range of this data dir is closed yet"),
    }
    for (first, last) in &r.damaged_events {
        println!(
            "event index file of ledgers {first}..={last} is damaged and was not published: the \
             daemon rebuilds it from the stored ledgers (the scrub after it opens finds it)"
        );
    }
    match evicted.transpose()? {
        Some(n) if n > 0 => println!(
            "evicted {n} published ledger(s) from the data dir (cold.keep_local_ranges = {}): \
             ledgers below {} are served from {location}",
            cfg.cold.keep_local_ranges,
            store.evicted().map_or(0, |e| e.below)
        ),
        _ => {}
    }
    Ok(())
}

/// The data dir's event index files (the daemon builds them; a stopped
/// dir's are listed as they are), or None without an index.
fn local_events(dir: &std::path::Path) -> Result<Option<ledgerstore_cold::LocalEvents>> {
    let listed = ledgerstore_events::local_files(dir)
        .with_context(|| format!("listing the event index {}", dir.display()))?;
    Ok(listed.map(|(file_ledgers, fan_out, files)| {
        ledgerstore_server::local_events(file_ledgers, fan_out, files)
    }))
}
