//! Minimal perfect hash functions for index segments, compared side by side
//! in one run (`cargo bench --workspace -- mph`): `ph`'s fmph `GOFunction`
//! (what segments use: it serializes itself) and `ptr_hash` (in memory
//! only: its on-disk form needs the `epserde` feature), over the keys a
//! segment hashes, the first 16 bytes of random 32-byte tx hashes.
//!
//! Prints build time, bits per key, and lookup ns for hits and misses.
//! `MPH_KEYS` (default 1,000,000) sets the key count.

use std::hint::black_box;
use std::time::Instant;

use ph::fmph::{GOBuildConf, GOConf, GOFunction};
use ph::seedable_hash::BuildWyHash;
use ph::seeds::TwoToPowerBitsStatic;
use ptr_hash::{PtrHash, PtrHashParams};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

type Go = GOFunction<TwoToPowerBitsStatic<4>, TwoToPowerBitsStatic<2>, BuildWyHash>;

fn keys(n: usize, seed: u64) -> Vec<u128> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let mut b = [0u8; 16];
            rng.fill_bytes(&mut b);
            u128::from_le_bytes(b)
        })
        .collect()
}

fn ns_per(n: usize, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

fn main() {
    if !ledgerstore_benches::selected_by_filters(&["mph/ph".into(), "mph/ptr_hash".into()]) {
        return;
    }
    let n: usize = std::env::var("MPH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let ks = keys(n, 1);
    let misses = keys(n, 2);
    println!("mph over {n} keys (u128 prefixes of random tx hashes), one run, this machine:\n");
    println!(
        "| crate | build (s) | build s per M keys | bits/key | hit lookup (ns) | miss lookup (ns) |"
    );
    println!("|---|---|---|---|---|---|");

    let t = Instant::now();
    let conf = GOBuildConf::with_mt(
        GOConf {
            hash_builder: BuildWyHash,
            bits_per_seed: TwoToPowerBitsStatic::<2>,
            bits_per_group: TwoToPowerBitsStatic::<4>,
        },
        true,
    );
    let go = Go::from_slice_with_conf(&ks, conf);
    let build = t.elapsed().as_secs_f64();
    let bits = go.write_bytes() as f64 * 8.0 / n as f64;
    let hit = ns_per(n, || {
        for k in &ks {
            black_box(go.get(k));
        }
    });
    let miss = ns_per(n, || {
        for k in &misses {
            black_box(go.get(k));
        }
    });
    println!(
        "| ph 0.11 fmph GOFunction (segments) | {build:.3} | {:.3} | {bits:.2} | {hit:.1} | {miss:.1} |",
        build / (n as f64 / 1e6)
    );

    let t = Instant::now();
    let ptr = <PtrHash<u128>>::new(&ks, PtrHashParams::default());
    let build = t.elapsed().as_secs_f64();
    let (pilots, remap) = ptr.bits_per_element();
    let hit = ns_per(n, || {
        for k in &ks {
            black_box(ptr.index(k));
        }
    });
    let miss = ns_per(n, || {
        for k in &misses {
            black_box(ptr.index(k));
        }
    });
    println!(
        "| ptr_hash 2.1 (default_fast) | {build:.3} | {:.3} | {:.2} | {hit:.1} | {miss:.1} |",
        build / (n as f64 / 1e6),
        pilots + remap
    );
    println!(
        "\nBoth answer a miss with some slot; the segment's 16-bit fingerprint (2 bytes/key more) rejects it."
    );
}
