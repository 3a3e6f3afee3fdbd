//! Running the study for one layout.

use std::path::Path;
use std::time::Instant;

use ledgerstore_db_api::iostat::process_write_bytes;
use ledgerstore_db_api::{Layout, TableId, TxHash};
use ledgerstore_store::{BatchReport, Ledgerstore};
use ledgerstore_synth::{Synth, SynthConfig};

use super::reopen::{Reopened, reopen_and_look_up};
use super::{BatchRow, LayoutRun, MemSample, SegmentSummary, StoreBatch, StoreFinal, StudyConfig};
use crate::fixture::FIRST_LEDGER;
use crate::{BenchError, BenchResult, open_store_with};

/// Ingests the study's batches into a fresh data dir of `layout`, calling
/// `on_batch` after each one, then drains background work, closes the
/// store, reopens it cold (timed) and times lookups on it. The data dir is
/// removed afterwards unless `cfg.keep`.
pub fn run_layout(
    cfg: &StudyConfig,
    layout: Layout,
    on_batch: &mut dyn FnMut(&BatchRow),
) -> BenchResult<LayoutRun> {
    let dir = cfg.data_dir.join(layout.name());
    if dir.exists() {
        remove_dir(&dir, "removing old")?;
    }
    let store = open_store_with(&dir, layout, cfg.indexed())?;
    let Ingested { rows, hits } = ingest_batches(cfg, layout, &store, on_batch)?;
    let (drain_s, drain_device_bytes) = drain(&store)?;
    let end_memory = MemSample::read();
    let mut finals = finals(&store)?;
    let segments = segment_summary(&store, &mut finals)?;
    store.close()?;
    drop(store);
    let Reopened {
        open,
        probes_max,
        lookups,
        lookups_warm,
    } = reopen_and_look_up(cfg, &dir, layout, hits)?;
    if !cfg.keep {
        remove_dir(&dir, "removing")?;
    }
    Ok(LayoutRun {
        layout: layout.name(),
        rows,
        drain_s,
        finals,
        lookups,
        lookups_warm,
        drain_device_bytes,
        segments,
        end_memory,
        open: Some(open),
        probes_max,
    })
}

fn remove_dir(dir: &Path, what: &str) -> BenchResult<()> {
    std::fs::remove_dir_all(dir).map_err(BenchError::io(format!("{what} {}", dir.display())))
}

/// What ingesting every batch left: the rows and the hashes sampled for
/// lookups.
struct Ingested {
    rows: Vec<BatchRow>,
    hits: Vec<TxHash>,
}

/// Generates and ingests every batch, sampling hashes for the lookups and
/// the process's memory at the checkpoints.
fn ingest_batches(
    cfg: &StudyConfig,
    layout: Layout,
    store: &Ledgerstore,
    on_batch: &mut dyn FnMut(&BatchRow),
) -> BenchResult<Ingested> {
    let synth = Synth::new(SynthConfig::with_sizes(
        cfg.seed,
        cfg.tx_per_ledger,
        cfg.tx_bytes,
        cfg.ledger_bytes,
    ));
    let batches = cfg.batches_for(layout);
    let per_batch_samples = cfg.lookups.div_ceil(batches) as usize;
    let mut checkpoints = MemCheckpoints::new(cfg.mem_every_txs);
    let mut hits = Vec::new();
    let mut written = bytes_written(store)?;
    let mut rows = Vec::new();
    for b in 0..batches {
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
        let now = bytes_written(store)?;
        let mut row = row(layout, b + 1, &report, store, &written, &now)?;
        written = now;
        row.memory = checkpoints.after_batch(row.txs);
        on_batch(&row);
        rows.push(row);
    }
    Ok(Ingested { rows, hits })
}

/// Waits for segment builds and the engines' background work. Returns the
/// seconds it took and the bytes the process wrote meanwhile.
pub(super) fn drain(store: &Ledgerstore) -> BenchResult<(f64, Option<u64>)> {
    let t = Instant::now();
    let io_before = process_write_bytes();
    store.wait_for_segments()?;
    for table in TableId::ALL {
        store.table(table).wait_for_background_work()?;
    }
    let written = io_before
        .zip(process_write_bytes())
        .map(|(a, b)| b.saturating_sub(a));
    Ok((t.elapsed().as_secs_f64(), written))
}

/// When to sample memory: after the batch where the cumulative transaction
/// count first reaches each multiple of `every` (one sample when a batch
/// crosses several).
struct MemCheckpoints {
    every: u64,
    txs: u64,
    next: u64,
}

impl MemCheckpoints {
    fn new(every: u64) -> Self {
        let every = every.max(1);
        Self {
            every,
            txs: 0,
            next: every,
        }
    }

    /// Counts a batch; the process's memory when the batch is a checkpoint.
    fn after_batch(&mut self, txs: u64) -> Option<MemSample> {
        self.due(txs).then(MemSample::read)
    }

    fn due(&mut self, txs: u64) -> bool {
        self.txs += txs;
        if self.txs < self.next {
            return false;
        }
        self.next = (self.txs / self.every + 1) * self.every;
        true
    }
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
        memory: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_checkpoints_fall_on_the_first_batch_at_each_multiple() {
        let mut c = MemCheckpoints::new(10);
        let due: Vec<bool> = [4, 4, 4, 4, 4, 25, 1].iter().map(|&t| c.due(t)).collect();
        // Cumulative 4, 8, 12 (>= 10), 16, 20 (>= 20), 45 (>= 30, 40: once), 46.
        assert_eq!(due, [false, false, true, false, true, true, false]);
        assert!(c.due(4), "50 reaches the next multiple");
    }
}
