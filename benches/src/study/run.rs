//! Running the study for one layout.

use std::time::{Duration, Instant};

use ledgerstore_db_api::{Layout, TableId, TxHash};
use ledgerstore_store::{BatchReport, Ledgerstore};
use ledgerstore_synth::{Synth, SynthConfig};
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use ledgerstore_db_api::iostat::process_write_bytes;

use super::{BatchRow, LayoutRun, Lookups, SegmentSummary, StoreBatch, StoreFinal, StudyConfig};
use crate::fixture::FIRST_LEDGER;
use crate::{BenchError, BenchResult, open_store_with};

/// Ingests the study's batches into a fresh data dir of `layout`, calling
/// `on_batch` after each one, then drains background work and times
/// lookups. The data dir is removed afterwards unless `cfg.keep`.
pub fn run_layout(
    cfg: &StudyConfig,
    layout: Layout,
    on_batch: &mut dyn FnMut(&BatchRow),
) -> BenchResult<LayoutRun> {
    let dir = cfg.data_dir.join(layout.name());
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(BenchError::io(format!("removing old {}", dir.display())))?;
    }
    let store = open_store_with(&dir, layout, cfg.segment_ledgers)?;
    let synth = Synth::new(SynthConfig::with_sizes(
        cfg.seed,
        cfg.tx_per_ledger,
        cfg.tx_bytes,
        cfg.ledger_bytes,
    ));
    let per_batch_samples = cfg.lookups.div_ceil(cfg.batches) as usize;
    let mut hits = Vec::new();
    let mut written = bytes_written(&store)?;
    let mut rows = Vec::new();
    for b in 0..cfg.batches {
        let start = FIRST_LEDGER + b * cfg.ledgers_per_batch;
        let t = Instant::now();
        let batch = synth.batch(start, cfg.ledgers_per_batch);
        let source = t.elapsed();
        sample(&batch, per_batch_samples, &mut hits)?;
        let outcome = store.ingest(&batch, source)?;
        drop(batch);
        let report = outcome.report.ok_or_else(|| {
            BenchError::Invalid(format!(
                "batch {} of {} wrote nothing",
                b + 1,
                layout.name()
            ))
        })?;
        let now = bytes_written(&store)?;
        let row = row(layout, b + 1, &report, &store, &written, &now)?;
        written = now;
        on_batch(&row);
        rows.push(row);
    }
    let t = Instant::now();
    let io_before = process_write_bytes();
    store.wait_for_segments()?;
    for table in TableId::ALL {
        store.table(table).wait_for_background_work()?;
    }
    let drain_s = t.elapsed().as_secs_f64();
    let drain_device_bytes = io_before
        .zip(process_write_bytes())
        .map(|(a, b)| b.saturating_sub(a));
    let mut finals = finals(&store)?;
    let segments = segment_summary(&store, &mut finals)?;
    let lookups = (cfg.lookups > 0 && !hits.is_empty())
        .then(|| time_lookups(&store, hits, cfg.seed))
        .transpose()?;
    store.close()?;
    drop(store);
    if !cfg.keep {
        std::fs::remove_dir_all(&dir)
            .map_err(BenchError::io(format!("removing {}", dir.display())))?;
    }
    Ok(LayoutRun {
        layout: layout.name(),
        rows,
        drain_s,
        finals,
        lookups,
        drain_device_bytes,
        segments,
    })
}

/// The `indexed` layout's segments, also added to `finals` as a store so
/// that disk and written totals include them.
fn segment_summary(
    store: &Ledgerstore,
    finals: &mut Vec<StoreFinal>,
) -> BenchResult<Option<SegmentSummary>> {
    let Some(seg) = store.stats()?.segments else {
        return Ok(None);
    };
    finals.push(StoreFinal {
        table: "segments",
        engine: "files",
        disk_bytes: seg.file_bytes,
        used_bytes: None,
        bytes_written: Some(seg.file_bytes),
        keys: seg.keys,
    });
    let per_key = |f: fn(&ledgerstore_store::SegmentInfo) -> f64| {
        let keys: u64 = seg.segments.iter().map(|s| s.keys).sum();
        if keys == 0 {
            0.0
        } else {
            seg.segments
                .iter()
                .map(|s| f(s) * s.keys as f64)
                .sum::<f64>()
                / keys as f64
        }
    };
    Ok(Some(SegmentSummary {
        count: seg.segments.len(),
        keys: seg.keys,
        file_bytes: seg.file_bytes,
        bits_per_key: per_key(|s| s.bits_per_key),
        mph_bits_per_key: per_key(|s| s.mph_bits_per_key),
        build_s: seg.build_total_s,
        build_s_per_mkeys: if seg.keys == 0 {
            0.0
        } else {
            seg.build_total_s / (seg.keys as f64 / 1e6)
        },
    }))
}

/// The `p`-th percentile (0..=100) of `v`, sorting it; 0 when empty.
pub fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable_by(f64::total_cmp);
    let rank = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[rank.min(v.len() - 1)]
}

/// Takes about `n` hashes spread over the batch.
fn sample(
    batch: &[ledgerstore_db_api::LedgerInput],
    n: usize,
    out: &mut Vec<TxHash>,
) -> BenchResult<()> {
    let txs: usize = batch.iter().map(|l| l.txs.len()).sum();
    if n == 0 || txs == 0 {
        return Ok(());
    }
    let stride = (txs / n).max(1);
    for tx in batch.iter().flat_map(|l| &l.txs).step_by(stride).take(n) {
        out.push(
            TxHash::from_slice(&tx.hash)
                .ok_or_else(|| BenchError::Invalid("synthetic hash is not 32 bytes".into()))?,
        );
    }
    Ok(())
}

fn bytes_written(store: &Ledgerstore) -> BenchResult<Vec<Option<u64>>> {
    TableId::ALL
        .into_iter()
        .map(|t| Ok(store.table(t).stats()?.bytes_written))
        .collect()
}

fn row(
    layout: Layout,
    batch: u32,
    r: &BatchReport,
    store: &Ledgerstore,
    before: &[Option<u64>],
    after: &[Option<u64>],
) -> BenchResult<BatchRow> {
    let mut stores = Vec::new();
    for (i, t) in TableId::ALL.into_iter().enumerate() {
        let timing = r
            .stores
            .iter()
            .find(|s| s.table == t.name())
            .ok_or_else(|| {
                BenchError::Invalid(format!("batch report has no {} entry", t.name()))
            })?;
        let stats = store.table(t).stats()?;
        stores.push(StoreBatch {
            table: timing.table,
            engine: timing.engine,
            write_s: timing.write_s,
            commit_s: timing.commit_s,
            compact_s: timing.compact_s,
            logical_bytes: timing.bytes,
            bytes_written: match (
                before.get(i).copied().flatten(),
                after.get(i).copied().flatten(),
            ) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a)),
                _ => None,
            },
            disk_bytes: stats.disk_bytes,
        });
    }
    Ok(BatchRow {
        layout: layout.name(),
        batch,
        ledgers: r.ledgers,
        txs: r.txs,
        total_s: r.total_s,
        source_s: r.source_s,
        cpu_s: r.compress_s + r.compute_s,
        io_s: r.io_s,
        device_bytes: r.device_bytes_written,
        stores,
    })
}

fn finals(store: &Ledgerstore) -> BenchResult<Vec<StoreFinal>> {
    TableId::ALL
        .into_iter()
        .map(|t| {
            let kv = store.table(t);
            let s = kv.stats()?;
            Ok(StoreFinal {
                table: t.name(),
                engine: kv.engine().name(),
                disk_bytes: s.disk_bytes,
                used_bytes: s
                    .pages
                    .zip(s.page_size)
                    .map(|(p, size)| p * u64::from(size)),
                bytes_written: s.bytes_written,
                keys: s.keys,
            })
        })
        .collect()
}

fn time_lookups(store: &Ledgerstore, mut hits: Vec<TxHash>, seed: u64) -> BenchResult<Lookups> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x100c);
    hits.shuffle(&mut rng);
    let misses: Vec<TxHash> = (0..hits.len())
        .map(|_| {
            let mut h = [0u8; 32];
            rng.fill_bytes(&mut h);
            TxHash(h)
        })
        .collect();
    let mut hit_us = Vec::with_capacity(hits.len());
    let t = Instant::now();
    for h in &hits {
        let one = Instant::now();
        if store.get_tx(h)?.is_none() {
            return Err(BenchError::Invalid(format!(
                "stored tx {} not found",
                hex_short(h)
            )));
        }
        hit_us.push(one.elapsed().as_secs_f64() * 1e6);
    }
    let hit = t.elapsed();
    let mut miss_us = Vec::with_capacity(misses.len());
    let t = Instant::now();
    for h in &misses {
        let one = Instant::now();
        if store.get_tx(h)?.is_some() {
            return Err(BenchError::Invalid(format!(
                "random hash {} found",
                hex_short(h)
            )));
        }
        miss_us.push(one.elapsed().as_secs_f64() * 1e6);
    }
    let miss = t.elapsed();
    let rate = |d: Duration| hits.len() as f64 / d.as_secs_f64().max(1e-9);
    Ok(Lookups {
        count: u32::try_from(hits.len()).unwrap_or(u32::MAX),
        hits_per_s: rate(hit),
        misses_per_s: rate(miss),
        hit_p99_us: percentile(&mut hit_us, 99.0),
        miss_p99_us: percentile(&mut miss_us, 99.0),
    })
}

fn hex_short(h: &TxHash) -> String {
    h.0[..8].iter().map(|b| format!("{b:02x}")).collect()
}
