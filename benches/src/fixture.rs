//! Prebuilt stores for the lookup benches. A fixture is built once per
//! (layout, shape) under the bench target dir, marked `READY`, and reopened
//! by later runs; a half-built one (no `READY`) is deleted and rebuilt.
//! Nothing is built inside a measured loop.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ledgerstore_db_api::{Layout, TxHash};
use ledgerstore_store::Ledgerstore;
use ledgerstore_synth::{Synth, SynthConfig};
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::{BenchError, BenchResult, knobs, open_store};

/// First ledger of every fixture (Stellar's first ledger after genesis).
pub const FIRST_LEDGER: u32 = 2;
/// Ledgers per ingest batch while building.
const BUILD_BATCH: u32 = 50;
/// Keep one hash out of this many as a lookup target.
const SAMPLE_EVERY: usize = 16;

/// Size of a fixture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixtureShape {
    /// Ledgers stored.
    pub ledgers: u32,
    /// Transactions per ledger.
    pub tx_per_ledger: u32,
    /// Generator seed.
    pub seed: u64,
}

impl FixtureShape {
    /// `BENCH_FIXTURE_LEDGERS` (default 800) × `BENCH_FIXTURE_TX` (default
    /// 250): 200K transactions of ~5 KB and 800 ledgers of ~1.4 MB, raw.
    pub fn from_env() -> BenchResult<Self> {
        Ok(Self {
            ledgers: u32::try_from(knobs::count("BENCH_FIXTURE_LEDGERS", 800, 1)?)
                .map_err(|_| BenchError::Invalid("BENCH_FIXTURE_LEDGERS: too large".into()))?,
            tx_per_ledger: u32::try_from(knobs::count("BENCH_FIXTURE_TX", 250, 1)?)
                .map_err(|_| BenchError::Invalid("BENCH_FIXTURE_TX: too large".into()))?,
            seed: 7,
        })
    }

    /// Total transactions.
    pub fn txs(&self) -> u64 {
        u64::from(self.ledgers) * u64::from(self.tx_per_ledger)
    }

    fn id(&self) -> String {
        format!("l{}-t{}-s{}", self.ledgers, self.tx_per_ledger, self.seed)
    }

    /// The generator of this shape's ledgers.
    pub fn synth(&self) -> Synth {
        Synth::new(SynthConfig {
            seed: self.seed,
            tx_per_ledger: self.tx_per_ledger,
            ..SynthConfig::default()
        })
    }
}

/// An opened fixture.
pub struct Fixture {
    /// Its layout.
    pub layout: Layout,
    /// The store, opened.
    pub store: Ledgerstore,
    /// Stored hashes in random order.
    pub hits: Vec<TxHash>,
    /// Random hashes that are not stored.
    pub misses: Vec<TxHash>,
    /// Stored ledgers.
    pub ledgers: std::ops::RangeInclusive<u32>,
}

/// Opens the fixture of `layout` × `shape` under `root`, building it first
/// if needed. Prints what it does, since a build takes minutes.
pub fn fixture(root: &Path, layout: Layout, shape: &FixtureShape) -> BenchResult<Fixture> {
    let dir = root.join(format!("{}-{}", layout.name(), shape.id()));
    let ready = dir.join("READY");
    if !ready.exists() {
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(BenchError::io(format!(
                "removing half-built {}",
                dir.display()
            )))?;
        }
        let t = Instant::now();
        eprintln!(
            "building fixture {} ({} ledgers x {} tx), once...",
            dir.display(),
            shape.ledgers,
            shape.tx_per_ledger
        );
        build(&dir, layout, shape)?;
        std::fs::write(&ready, shape.id()).map_err(BenchError::io("writing READY"))?;
        eprintln!("built in {:.1}s", t.elapsed().as_secs_f64());
    }
    let store = open_store(&dir.join("store"), layout)?;
    let last = FIRST_LEDGER + shape.ledgers - 1;
    if store.last_ledger() != Some(last) {
        return Err(BenchError::Invalid(format!(
            "fixture {} ends at {:?}, expected {last}; delete the directory to rebuild it",
            dir.display(),
            store.last_ledger()
        )));
    }
    let hits = read_hashes(&hits_path(&dir))?;
    let mut rng = ChaCha8Rng::seed_from_u64(shape.seed ^ 0x5eed);
    let misses = (0..hits.len().max(1))
        .map(|_| {
            let mut h = [0u8; 32];
            rng.fill_bytes(&mut h);
            TxHash(h)
        })
        .collect();
    Ok(Fixture {
        layout,
        store,
        hits,
        misses,
        ledgers: FIRST_LEDGER..=last,
    })
}

fn hits_path(dir: &Path) -> PathBuf {
    dir.join("hits.bin")
}

fn build(dir: &Path, layout: Layout, shape: &FixtureShape) -> BenchResult<()> {
    std::fs::create_dir_all(dir).map_err(BenchError::io(format!("creating {}", dir.display())))?;
    let store = open_store(&dir.join("store"), layout)?;
    let synth = shape.synth();
    let mut hits = Vec::new();
    let end = FIRST_LEDGER + shape.ledgers;
    let mut start = FIRST_LEDGER;
    while start < end {
        let n = BUILD_BATCH.min(end - start);
        let batch = synth.batch(start, n);
        for l in &batch {
            for tx in l.txs.iter().step_by(SAMPLE_EVERY) {
                hits.push(
                    TxHash::from_slice(&tx.hash).ok_or_else(|| {
                        BenchError::Invalid("synthetic hash is not 32 bytes".into())
                    })?,
                );
            }
        }
        store.ingest(&batch, Duration::ZERO)?;
        start += n;
    }
    for t in ledgerstore_db_api::TableId::ALL {
        store.table(t).wait_for_background_work()?;
    }
    store.close()?;
    hits.shuffle(&mut ChaCha8Rng::seed_from_u64(shape.seed));
    let bytes: Vec<u8> = hits.iter().flat_map(|h| h.0).collect();
    std::fs::write(hits_path(dir), bytes).map_err(BenchError::io("writing hits.bin"))
}

fn read_hashes(path: &Path) -> BenchResult<Vec<TxHash>> {
    let bytes =
        std::fs::read(path).map_err(BenchError::io(format!("reading {}", path.display())))?;
    if bytes.is_empty() || bytes.len() % 32 != 0 {
        return Err(BenchError::Invalid(format!(
            "{}: {} bytes, expected a non-empty multiple of 32",
            path.display(),
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(32)
        .filter_map(TxHash::from_slice)
        .collect())
}
