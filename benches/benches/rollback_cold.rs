//! Rollback at open on a cold page cache (`cargo bench --workspace --
//! rollback_cold`).
//!
//! A crash in the middle of a large batch leaves every hash of that batch
//! above the mark, and `Ledgerstore::open` must read their `tx_index`
//! owners before deleting them. On a cold page cache each key costs a
//! random read. This bench leaves such residue (it ingests, then puts the
//! `MARK` of an earlier batch back), drops the page cache, and times, side
//! by side:
//! - one MDBX read transaction over all the residue's keys (what open did
//!   before it read in chunks), under the default `mdbx.max_read_txn_ms`;
//! - `Ledgerstore::open`, which reads them in chunks of 1,024 keys.
//!
//! Dropping the page cache needs root; without it the figures are warm and
//! the bench says so. Knobs: `ROLLBACK_BASE` (committed ledgers, default
//! 2,000), `ROLLBACK_LEDGERS` (ledgers above the mark, default 2,000),
//! `ROLLBACK_TX` (txs per ledger, default 250).

use std::path::Path;
use std::time::{Duration, Instant};

use ledgerstore_backends::Backends;
use ledgerstore_benches::knobs::count_u32_or_exit;
use ledgerstore_db_api::{EngineFactory, Layout, TableId};
use ledgerstore_store::{Ledgerstore, MarkState, StoreOptions};
use ledgerstore_synth::{Synth, SynthConfig};

/// Writes dirty pages back and drops the page cache; false without root.
fn drop_caches() -> bool {
    let synced = std::process::Command::new("sync")
        .status()
        .is_ok_and(|s| s.success());
    synced && std::fs::write("/proc/sys/vm/drop_caches", b"3").is_ok()
}

fn main() {
    if !ledgerstore_benches::selected_by_filters(&["rollback_cold".into()])
        || std::env::args().any(|a| a == "--test")
    {
        return;
    }
    let base = count_u32_or_exit("ROLLBACK_BASE", 2_000, 1);
    let above = count_u32_or_exit("ROLLBACK_LEDGERS", 2_000, 1);
    let tx = count_u32_or_exit("ROLLBACK_TX", 250, 1);
    let synth = Synth::new(SynthConfig::with_sizes(5, tx, 300, 4_000));
    let root = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(root).expect("tmp root");
    let tmp = tempfile::tempdir_in(root).expect("tempdir");
    let dir = tmp.path();
    let opts = || StoreOptions {
        layout: Some(Layout::Hybrid),
        report_jsonl: None,
        ..StoreOptions::default()
    };
    let started = Instant::now();
    let saved_mark = {
        let store = Ledgerstore::open(dir, opts(), &Backends::default()).expect("open");
        let mut seq = 1;
        let mut saved = None;
        while seq <= base + above {
            // Batches of 50 that end exactly at `base`, whose mark is kept.
            let end = if seq <= base { base } else { base + above };
            let n = 50.min(end - seq + 1);
            store
                .ingest(&synth.batch(seq, n), Duration::ZERO)
                .expect("ingest");
            seq += n;
            if seq == base + 1 {
                saved = Some(store.mark());
            }
        }
        store.close().expect("close");
        saved.expect("the mark at ROLLBACK_BASE")
    };
    // What a crash after the stores' commits and before the MARK leaves.
    let mark: MarkState = saved_mark;
    std::fs::write(
        dir.join("MARK"),
        serde_json::to_vec(&mark).expect("encode MARK"),
    )
    .expect("write MARK");
    let residue: Vec<[u8; 32]> = {
        let mut h: Vec<[u8; 32]> = (base + 1..=base + above)
            .flat_map(|seq| synth.ledger(seq).txs)
            .map(|t| t.hash.try_into().expect("32 bytes"))
            .collect();
        h.sort_unstable();
        h
    };
    println!(
        "rollback_cold: {base} ledgers committed, {above} above the mark ({} hashes), built in {:.1} s",
        residue.len(),
        started.elapsed().as_secs_f64()
    );
    let cold = drop_caches();
    if !cold {
        println!("  (could not drop the page cache: not root? The figures below are warm.)");
    }
    let one = {
        let path = dir.join("mdbx/tx_index");
        let kv = Backends::default()
            .open_table(
                Layout::Hybrid,
                TableId::TxIndex,
                &path,
                ledgerstore_db_api::Access::ReadWrite,
                ledgerstore_db_api::ValueCompression::App,
            )
            .expect("open tx_index");
        let keys: Vec<&[u8]> = residue.iter().map(|h| &h[..]).collect();
        let t = Instant::now();
        let r = kv.multi_get(&keys);
        let took = t.elapsed().as_secs_f64();
        match r {
            Ok(found) => format!(
                "ok in {took:.2} s ({} found)",
                found.iter().filter(|v| v.is_some()).count()
            ),
            Err(e) => format!("FAILED after {took:.2} s: {e}"),
        }
    };
    println!("  one read transaction over every key (before): {one}");
    drop_caches();
    let t = Instant::now();
    let store = Ledgerstore::open(dir, opts(), &Backends::default());
    let took = t.elapsed().as_secs_f64();
    match store {
        Ok(store) => {
            assert_eq!(store.last_ledger(), Some(base));
            assert!(
                store.get_ledger(base + 1).expect("get").is_none(),
                "the residue was rolled back"
            );
            println!(
                "  Ledgerstore::open, rollback in chunks of 1,024 keys (now): ok in {took:.2} s, {:.0} keys/s{}",
                residue.len() as f64 / took.max(1e-9),
                if cold { ", cold" } else { ", warm" }
            );
        }
        Err(e) => println!("  Ledgerstore::open (now): FAILED after {took:.2} s: {e}"),
    }
}
