//! Ingest stalls while the segment builder drops a closed range from the
//! hot index (`cargo bench --workspace -- drop_stall`).
//!
//! Layout `indexed` keeps the open ledger range's hashes in an MDBX table
//! that ingest writes every batch. When a range closes, the builder thread
//! deletes the range's keys from that table in chunked write transactions,
//! and MDBX has one writer at a time. This bench ingests a few ranges in
//! small batches and reports each batch's time, split by whether a build
//! (scan, MPH, swap, hot-index drop) ran during it: the longest batch
//! during a build against the median batch outside one is the stall.
//!
//! Knobs: `DROP_STALL_RANGE` (ledgers per range, default 1,000),
//! `DROP_STALL_RANGES` (ranges to ingest, default 3), `DROP_STALL_BATCH`
//! (ledgers per batch, default 5), `DROP_STALL_TX` (txs per ledger, 250).

use std::time::{Duration, Instant};

use ledgerstore_backends::Backends;
use ledgerstore_benches::knobs::count_u32_or_exit;
use ledgerstore_db_api::Layout;
use ledgerstore_store::{IndexedOptions, Ledgerstore, StoreOptions};
use ledgerstore_synth::{Synth, SynthConfig};

fn building(store: &Ledgerstore) -> bool {
    store
        .stats()
        .ok()
        .and_then(|s| s.segments)
        .is_some_and(|s| s.building)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn main() {
    if !ledgerstore_benches::selected_by_filters(&["drop_stall".into()])
        || std::env::args().any(|a| a == "--test")
    {
        return;
    }
    let range = count_u32_or_exit("DROP_STALL_RANGE", 1_000, 1);
    let ranges = count_u32_or_exit("DROP_STALL_RANGES", 3, 1);
    let batch = count_u32_or_exit("DROP_STALL_BATCH", 5, 1);
    let tx = count_u32_or_exit("DROP_STALL_TX", 250, 1);
    let synth = Synth::new(SynthConfig::with_sizes(11, tx, 300, 4_000));
    let tmp = tempfile::tempdir().expect("tempdir");
    let opts = StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: range,
            merge_levels: 0,
            dict: None,
            ..IndexedOptions::default()
        },
        report_jsonl: None,
        ..StoreOptions::default()
    };
    let store = Ledgerstore::open(tmp.path(), opts, &Backends::default()).expect("open");
    let mut quiet = Vec::new();
    let mut during = Vec::new();
    let last = range * ranges;
    let mut seq = 1;
    let started = Instant::now();
    while seq <= last {
        let n = batch.min(last - seq + 1);
        let ledgers = synth.batch(seq, n);
        let before = building(&store);
        let t = Instant::now();
        store.ingest(&ledgers, Duration::ZERO).expect("ingest");
        let took = t.elapsed().as_secs_f64();
        if before || building(&store) {
            during.push(took);
        } else {
            quiet.push(took);
        }
        seq += n;
    }
    let ingest_s = started.elapsed().as_secs_f64();
    store.wait_for_segments().expect("segments");
    let seg = store.stats().expect("stats").segments.expect("segments");
    quiet.sort_by(f64::total_cmp);
    during.sort_by(f64::total_cmp);
    let median = percentile(&quiet, 0.5);
    let worst = during.last().copied().unwrap_or(0.0);
    println!(
        "drop_stall: {ranges} ranges of {range} ledgers x {tx} txs, batches of {batch} ledgers, \
         {:.1} s of ingest",
        ingest_s
    );
    println!(
        "  batches outside a build: {}  p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        quiet.len(),
        median * 1e3,
        percentile(&quiet, 0.99) * 1e3,
        quiet.last().copied().unwrap_or(0.0) * 1e3
    );
    println!(
        "  batches during a build:  {}  p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
        during.len(),
        percentile(&during, 0.5) * 1e3,
        percentile(&during, 0.99) * 1e3,
        worst * 1e3
    );
    println!(
        "  builds {}  build seconds {:.2} ({:.2} s per build)  longest stall / quiet p50 = {:.1}x",
        seg.builds,
        seg.build_total_s,
        seg.build_total_s / seg.builds.max(1) as f64,
        worst / median.max(1e-9)
    );
}
