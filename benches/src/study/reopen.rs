//! After a layout's run: the closed store reopened on a dropped page cache
//! (timed), then point lookups on it with the disk bytes they read.

use std::path::Path;
use std::time::{Duration, Instant};

use ledgerstore_db_api::{Layout, TxHash};
use ledgerstore_store::{Ledgerstore, SegmentStats};
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::procfs::{drop_page_cache, process_read_bytes};
use super::run::{drain, percentile};
use super::{ColdOpen, Lookups, StudyConfig};
use crate::{BenchError, BenchResult, open_store_with};

/// What the reopened store measured.
pub(super) struct Reopened {
    /// The timed open.
    pub open: ColdOpen,
    /// Layout `indexed`: most index probes per lookup.
    pub probes_max: Option<usize>,
    /// Lookup rates, unless `cfg.lookups` is 0 or nothing was sampled.
    pub lookups: Option<Lookups>,
    /// The same lookups again right after: the pages they touch are cached.
    pub lookups_warm: Option<Lookups>,
}

/// Drops the page cache (when `cfg.drop_caches`), times the study's own
/// open of the closed store at `dir`, waits for whatever background work
/// the open started (so lookups run alone), drops the page cache again
/// (that work may have read data back in, and then one layout's lookups
/// would run warm and another's cold), looks up `hits` and as many absent
/// hashes, then the same ones again (warm), and closes the store again.
pub(super) fn reopen_and_look_up(
    cfg: &StudyConfig,
    dir: &Path,
    layout: Layout,
    hits: Vec<TxHash>,
) -> BenchResult<Reopened> {
    let (store, open) = cold_open(cfg, dir, layout)?;
    let probes_max = probes_max(&store)?;
    let (lookups, lookups_warm) = if cfg.lookups > 0 && !hits.is_empty() {
        let cold = cfg.drop_caches && drop_page_cache();
        let first = time_lookups(&store, hits.clone(), cfg.seed, cold)?;
        (
            Some(first),
            Some(time_lookups(&store, hits, cfg.seed, false)?),
        )
    } else {
        (None, None)
    };
    store.close()?;
    Ok(Reopened {
        open,
        probes_max,
        lookups,
        lookups_warm,
    })
}

/// Opens the store at `dir` the way the study first opened it, right after
/// dropping the page cache when `cfg.drop_caches` (and root) allow, then
/// waits for the background work the open started.
fn cold_open(
    cfg: &StudyConfig,
    dir: &Path,
    layout: Layout,
) -> BenchResult<(Ledgerstore, ColdOpen)> {
    let cold = cfg.drop_caches && drop_page_cache();
    let read_before = process_read_bytes();
    let t = Instant::now();
    let store = open_store_with(dir, layout, cfg.indexed())?;
    let open_s = t.elapsed().as_secs_f64();
    let read_opened = process_read_bytes();
    let (settle_s, _) = drain(&store)?;
    let open = ColdOpen {
        open_s,
        cold,
        open_read_bytes: delta(read_before, read_opened),
        settle_s,
        settle_read_bytes: delta(read_opened, process_read_bytes()),
    };
    Ok((store, open))
}

fn delta(before: Option<u64>, after: Option<u64>) -> Option<u64> {
    before.zip(after).map(|(a, b)| b.saturating_sub(a))
}

/// Layout `indexed`: the most index probes a lookup makes; `None` for the
/// layouts without segments.
fn probes_max(store: &Ledgerstore) -> BenchResult<Option<usize>> {
    Ok(store.stats()?.segments.as_ref().map(segment_probes))
}

/// The hot index plus every segment. When `SegmentStats` carries its own
/// `probes`, this becomes `seg.probes`.
fn segment_probes(seg: &SegmentStats) -> usize {
    seg.probes
}

/// Times `get_tx` of the shuffled `hits`, then of as many random (absent)
/// hashes, one at a time. `cold` says whether the page cache was just
/// dropped.
fn time_lookups(
    store: &Ledgerstore,
    mut hits: Vec<TxHash>,
    seed: u64,
    cold: bool,
) -> BenchResult<Lookups> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x100c);
    hits.shuffle(&mut rng);
    let misses = random_hashes(&mut rng, hits.len());
    let mut hit = timed_loop(&hits, |h| expect(store, h, true))?;
    let mut miss = timed_loop(&misses, |h| expect(store, h, false))?;
    Ok(Lookups {
        count: u32::try_from(hits.len()).unwrap_or(u32::MAX),
        hits_per_s: hit.per_s(),
        misses_per_s: miss.per_s(),
        hit_p50_us: percentile(&mut hit.us, 50.0),
        hit_p99_us: percentile(&mut hit.us, 99.0),
        miss_p50_us: percentile(&mut miss.us, 50.0),
        miss_p99_us: percentile(&mut miss.us, 99.0),
        hit_read_bytes: hit.read_per_lookup(),
        miss_read_bytes: miss.read_per_lookup(),
        cold,
    })
}

fn random_hashes(rng: &mut ChaCha8Rng, n: usize) -> Vec<TxHash> {
    (0..n)
        .map(|_| {
            let mut h = [0u8; 32];
            rng.fill_bytes(&mut h);
            TxHash(h)
        })
        .collect()
}

/// One loop of lookups: wall time, each one's latency (µs), and the bytes
/// the process read from storage meanwhile.
struct Timed {
    total: Duration,
    us: Vec<f64>,
    read_bytes: Option<u64>,
}

impl Timed {
    fn per_s(&self) -> f64 {
        self.us.len() as f64 / self.total.as_secs_f64().max(1e-9)
    }

    fn read_per_lookup(&self) -> Option<f64> {
        let n = self.us.len().max(1) as f64;
        self.read_bytes.map(|b| b as f64 / n)
    }
}

fn timed_loop(
    hashes: &[TxHash],
    mut lookup: impl FnMut(&TxHash) -> BenchResult<()>,
) -> BenchResult<Timed> {
    let read_before = process_read_bytes();
    let mut us = Vec::with_capacity(hashes.len());
    let t = Instant::now();
    for h in hashes {
        let one = Instant::now();
        lookup(h)?;
        us.push(one.elapsed().as_secs_f64() * 1e6);
    }
    let total = t.elapsed();
    let read_bytes = delta(read_before, process_read_bytes());
    Ok(Timed {
        total,
        us,
        read_bytes,
    })
}

/// `get_tx(h)`, failing unless it finds a record exactly when `stored`.
fn expect(store: &Ledgerstore, h: &TxHash, stored: bool) -> BenchResult<()> {
    match (store.get_tx(h)?.is_some(), stored) {
        (true, true) | (false, false) => Ok(()),
        (false, true) => Err(BenchError::Invalid(format!(
            "stored tx {} not found",
            hex_short(h)
        ))),
        (true, false) => Err(BenchError::Invalid(format!(
            "random hash {} found",
            hex_short(h)
        ))),
    }
}

fn hex_short(h: &TxHash) -> String {
    h.0[..8].iter().map(|b| format!("{b:02x}")).collect()
}
