//! What the event index costs on top of ingest: times the index build of
//! a data dir's stored ledgers (what the daemon does for a dir without an
//! index, and, one ledger at a time, behind live ingest) on one thread.
//! Compare with the `done: N ledgers in S s` line of the `ledgerstore
//! ingest` that filled the dir (docs/benchmarks.md has a run).
//!
//! ```text
//! cargo run --release --locked -p ledgerstore-events --example build_rate -- DATA_DIR [FILE_LEDGERS]
//! ```
//!
//! The data dir is opened read-only; the index is written to a temporary
//! dir, deleted at the end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ledgerstore_backends::Backends;
use ledgerstore_db_api::Access;
use ledgerstore_events::{EventStore, EventsConfig};
use ledgerstore_store::{Ledgerstore, Reader, StoreOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(
        args.next()
            .ok_or("usage: build_rate DATA_DIR [FILE_LEDGERS]")?,
    );
    let file_ledgers: u32 = args.next().map_or(Ok(64), |s| s.parse())?;
    let opts = StoreOptions {
        create: false,
        offline: true,
        engine_access: Access::ReadOnly,
        ..StoreOptions::default()
    };
    let store = Arc::new(Ledgerstore::open(&dir, opts, &Backends::default())?);
    let (Some(first), Some(last)) = (store.first_ledger(), store.last_ledger()) else {
        return Err("the data dir holds no ledger".into());
    };
    let out = tempfile::tempdir()?;
    let cfg = EventsConfig {
        file_ledgers,
        ..EventsConfig::default()
    };
    let t = Instant::now();
    let events = EventStore::open(out.path(), store.clone() as Arc<dyn Reader>, cfg)?;
    if !events.wait_indexed_through(last, Duration::from_secs(24 * 3600)) {
        return Err(format!("not indexed: {:?}", events.stats().last_error).into());
    }
    let took = t.elapsed().as_secs_f64();
    let s = events.stats();
    let ledgers = f64::from(last - first + 1);
    println!(
        "indexed ledgers {first}..={last}: {} events in {took:.2} s: {:.1} ledgers/s, {:.2} ms a ledger; {} files, {} bytes ({:.2} B an event)",
        s.events,
        ledgers / took,
        1e3 * took / ledgers,
        s.files,
        s.bytes,
        s.bytes as f64 / s.events.max(1) as f64
    );
    events.close();
    Ok(())
}
