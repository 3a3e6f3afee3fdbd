//! Extraction speed on the 20 real pubnet ledgers of 2026 (protocol 26,
//! `testdata/FC3D4709--63092982-63093001.xdr.zst`), side by side in one run,
//! one core, ms per ledger:
//!
//! - (a) zstd: decompressing the batch file;
//! - (b) reference: a full `stellar-xdr` decode of each ledger plus the old
//!   extraction (hash per envelope by re-encoding, each part re-encoded);
//! - (c) walker: the production path (walk, hashes from slices, parts
//!   copied);
//! - (c') walk only: the walk without hashing or copying.
//!
//! ```text
//! CARGO_TARGET_DIR=… cargo run --release --locked -p ledgerstore-stellar --example extract_speed [rounds]
//! ```

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use ledgerstore_stellar::extract::reference;
use ledgerstore_stellar::file::maybe_decompress;
use ledgerstore_stellar::walk::{walk, walk_batch};
use ledgerstore_stellar::{Network, ledger_from_xdr};

fn main() {
    let rounds: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/FC3D4709--63092982-63093001.xdr.zst");
    let file = std::fs::read(&path).expect("fixture");
    let network = Network::parse("pubnet").expect("pubnet");
    let plain = maybe_decompress(&file, "f", 1 << 30).expect("zstd");
    let batch = walk_batch(&plain).expect("batch");
    let ledgers: Vec<Vec<u8>> = batch
        .ledgers
        .iter()
        .map(|(s, _)| s.of(&plain).to_vec())
        .collect();
    let n = ledgers.len() as u32;
    let bytes: usize = ledgers.iter().map(Vec::len).sum();
    let txs: usize = batch.ledgers.iter().map(|(_, s)| s.applied.len()).sum();
    println!(
        "{n} ledgers, {txs} txs, {:.0} KB raw a ledger, {} rounds",
        bytes as f64 / f64::from(n) / 1e3,
        rounds
    );
    let (mut zstd, mut full, mut walker, mut walk_only) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    // Interleaved, so all four see the same machine state.
    for _ in 0..rounds {
        let t = Instant::now();
        black_box(maybe_decompress(black_box(&file), "f", 1 << 30).expect("zstd"));
        zstd += t.elapsed();
        let t = Instant::now();
        for l in &ledgers {
            black_box(reference(l.clone(), &network, "ref").expect("reference"));
        }
        full += t.elapsed();
        let t = Instant::now();
        for l in &ledgers {
            black_box(ledger_from_xdr(l.clone(), &network, "walk").expect("walker"));
        }
        walker += t.elapsed();
        let t = Instant::now();
        for l in &ledgers {
            black_box(walk(black_box(l)).expect("walk"));
        }
        walk_only += t.elapsed();
    }
    let per = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(rounds * n);
    let (z, f, w, o) = (per(zstd), per(full), per(walker), per(walk_only));
    println!("| step | ms / ledger | ledgers/s per core (with zstd) |");
    println!("|---|---|---|");
    println!("| (a) zstd decompress | {z:.3} | |");
    println!(
        "| (b) full decode + extract (reference) | {f:.3} | {:.0} |",
        1e3 / (z + f)
    );
    println!(
        "| (c) walker extract (production) | {w:.3} | {:.0} |",
        1e3 / (z + w)
    );
    println!("| (c') walk only (no hashes, no copies) | {o:.3} | |");
    println!(
        "extraction speed-up (b)/(c): {:.1}x; with zstd: {:.1}x",
        f / w,
        (z + f) / (z + w)
    );
}
