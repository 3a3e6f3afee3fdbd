//! Event extraction speed on the 20 real pubnet ledgers of 2026 (protocol
//! 26, `testdata/FC3D4709--63092982-63093001.xdr.zst`: 5,188 txs, 12,960
//! served events), side by side in one run, one core, ms per ledger:
//!
//! - (a) walk: the walker alone (`walk`), what ingest already pays;
//! - (b) events: the event walk over every meta of the walked ledger
//!   (`ledger_events` given the slices), the added cost;
//! - (c) walk + events: both, from raw bytes;
//! - (d) typed metas: the same events by decoding each meta with
//!   `stellar-xdr` (`events::reference::tx`), instead of (b);
//! - (e) typed ledger: `events::reference::ledger`, the whole
//!   `LedgerCloseMeta` decoded;
//! - (f) through the cuts: `input_events` over the ledger as ingest
//!   extracted it (its cuts name each meta), what an offer to the event
//!   index now pays instead of (c).
//!
//! ```text
//! CARGO_TARGET_DIR=… cargo run --release --locked -p ledgerstore-stellar --example events_speed [rounds]
//! ```

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use ledgerstore_stellar::Network;
use ledgerstore_stellar::events::{
    LedgerCounts, TxContext, input_events, ledger_events, reference, successful,
};
use ledgerstore_stellar::extract::from_slices;
use ledgerstore_stellar::file::maybe_decompress;
use ledgerstore_stellar::walk::{LedgerSlices, walk, walk_batch};

fn typed_metas(raw: &[u8], s: &LedgerSlices) -> usize {
    let mut counts = LedgerCounts::default();
    let mut n = 0;
    for (i, a) in s.applied.iter().enumerate() {
        let tx = TxContext {
            ledger: s.seq,
            apply_index: i as u32,
            hash: a.hash(raw),
            successful: successful(a.result.of(raw)).expect("result"),
        };
        n += reference::tx(a.meta.of(raw), &tx, &mut counts)
            .expect("typed")
            .len();
    }
    n
}

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/FC3D4709--63092982-63093001.xdr.zst");
    let file = std::fs::read(&path).expect("fixture");
    let plain = maybe_decompress(&file, "f", 1 << 30).expect("zstd");
    let batch = walk_batch(&plain).expect("batch");
    let ledgers: Vec<(Vec<u8>, LedgerSlices)> = batch
        .ledgers
        .iter()
        .map(|(s, sl)| (s.of(&plain).to_vec(), sl.clone()))
        .collect();
    let net = Network::parse("pubnet").expect("network");
    let inputs: Vec<_> = ledgers
        .iter()
        .map(|(r, s)| from_slices(s, r.clone().into(), &net).expect("extract"))
        .collect();
    let n = ledgers.len() as u32;
    let bytes: usize = ledgers.iter().map(|(r, _)| r.len()).sum();
    let meta_bytes: usize = ledgers
        .iter()
        .flat_map(|(_, s)| s.applied.iter().map(|a| a.meta.len))
        .sum();
    let events: usize = ledgers
        .iter()
        .map(|(r, s)| ledger_events(r, s).expect("events").list.len())
        .sum();
    println!(
        "{n} ledgers, {events} events, {:.0} KB raw a ledger ({:.0} KB of metas), {rounds} rounds",
        bytes as f64 / f64::from(n) / 1e3,
        meta_bytes as f64 / f64::from(n) / 1e3,
    );
    let mut t = [Duration::ZERO; 6];
    // Interleaved, so all see the same machine state.
    for _ in 0..rounds {
        let at = Instant::now();
        for (r, _) in &ledgers {
            black_box(walk(black_box(r)).expect("walk"));
        }
        t[0] += at.elapsed();
        let at = Instant::now();
        for (r, s) in &ledgers {
            black_box(ledger_events(black_box(r), s).expect("events"));
        }
        t[1] += at.elapsed();
        let at = Instant::now();
        for (r, _) in &ledgers {
            let s = walk(black_box(r)).expect("walk");
            black_box(ledger_events(r, &s).expect("events"));
        }
        t[2] += at.elapsed();
        let at = Instant::now();
        for (r, s) in &ledgers {
            black_box(typed_metas(black_box(r), s));
        }
        t[3] += at.elapsed();
        let at = Instant::now();
        for (r, _) in &ledgers {
            black_box(reference::ledger(black_box(r)).expect("typed"));
        }
        t[4] += at.elapsed();
        let at = Instant::now();
        for l in &inputs {
            black_box(input_events(black_box(l)).expect("cuts").expect("events"));
        }
        t[5] += at.elapsed();
    }
    let per = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(rounds * n);
    println!("| step | ms / ledger | vs (a) |");
    println!("|---|---|---|");
    let names = [
        "(a) walk (walker alone)",
        "(b) events, given the walk",
        "(c) walk + events",
        "(d) events by typed decode of each meta",
        "(e) events by typed decode of the ledger",
        "(f) events through the cuts of ingest's extraction",
    ];
    for (name, d) in names.iter().zip(t) {
        println!("| {name} | {:.3} | {:.2}× |", per(d), per(d) / per(t[0]));
    }
}
