//! The degradation study: the field study's experiment, run for every
//! layout in one process on the same synthetic ledgers.
//!
//! For each layout in turn it ingests `batches` batches of
//! `ledgers_per_batch` ledgers into a fresh data dir and records, per batch
//! and per store, the I/O split into write / flush-or-commit / compact, the
//! bytes handed to the engine and the bytes the engine wrote. After the last
//! batch it waits for background work (RocksDB compactions) to drain and
//! charges that time to the layout. It then closes the store, drops the
//! page cache, times a cold `Ledgerstore::open`, and times point lookups on
//! the reopened store, with the disk bytes each one read. The process's
//! resident memory is sampled every `mem_every_txs` transactions and after
//! the drain. Layouts run one after another, not interleaved, so one
//! layout's background compaction never runs under another's measurement.

mod driver;
mod memlimit;
mod output;
mod procfs;
mod render;
mod reopen;
mod run;

use std::path::{Path, PathBuf};

use ledgerstore_db_api::Layout;
use serde::Serialize;

pub use driver::{StudyOutput, run_study};
pub use memlimit::MemLimit;
pub use output::{write_csv, write_layouts_csv, write_plot};
pub use procfs::{MemSample, drop_page_cache, process_read_bytes};
pub use render::{
    MemCheckpoint, Summary, render_layout_table, render_memory_table, render_row,
    render_side_by_side, render_summary, summarize,
};
pub use run::percentile;
pub use run::run_layout;

use crate::{BenchError, BenchResult, LAYOUTS, knobs};

/// What to run. Every field has an environment knob; see [`Self::from_env`].
#[derive(Debug, Clone, Serialize)]
pub struct StudyConfig {
    /// Batches per layout (`STUDY_BATCHES`).
    pub batches: u32,
    /// Fewer batches for some layouts (`STUDY_LAYOUT_BATCHES`, e.g.
    /// `rocksdb:100,hybrid:150`): the slow ones out of cache, said in the
    /// report's header.
    pub layout_batches: Vec<(Layout, u32)>,
    /// Ledgers per batch (`STUDY_LEDGERS`; the field study used 2,000).
    pub ledgers_per_batch: u32,
    /// Transactions per ledger (`STUDY_TX`).
    pub tx_per_ledger: u32,
    /// Raw bytes per transaction (`STUDY_TX_BYTES`).
    pub tx_bytes: usize,
    /// Raw bytes per ledger (`STUDY_LEDGER_BYTES`).
    pub ledger_bytes: usize,
    /// Layouts, in run order (`STUDY_LAYOUTS`).
    pub layouts: Vec<Layout>,
    /// Generator seed (`STUDY_SEED`).
    pub seed: u64,
    /// Where the data dirs go (`STUDY_DIR`).
    pub data_dir: PathBuf,
    /// Where the CSV, PNG and summary go (`STUDY_OUT`).
    pub out_dir: PathBuf,
    /// Keep the data dirs after the run (`STUDY_KEEP=1`).
    pub keep: bool,
    /// Point lookups timed per layout, hits and misses each
    /// (`STUDY_LOOKUPS`, 0 to skip).
    pub lookups: u32,
    /// Ledgers per segment of the `indexed` layout
    /// (`STUDY_SEGMENT_LEDGERS`).
    pub segment_ledgers: u32,
    /// Merge fan-out of the `indexed` layout (`STUDY_MERGE_FANOUT`).
    pub merge_fanout: u32,
    /// Merge levels of the `indexed` layout (`STUDY_MERGE_LEVELS`; 0: none).
    pub merge_levels: u32,
    /// Sample the process's memory after the batch where the cumulative
    /// transaction count first reaches each multiple of this
    /// (`STUDY_MEM_EVERY_TXS`, default 10,000,000).
    pub mem_every_txs: u64,
    /// Drop the page cache before the cold open (`STUDY_DROP_CACHES`,
    /// default 1; needs root, and the report says "warm" when it fails).
    pub drop_caches: bool,
}

fn small_u32(name: &'static str, default: u64, min: u64) -> BenchResult<u32> {
    let v = knobs::count(name, default, min)?;
    u32::try_from(v).map_err(|_| BenchError::Knob {
        name,
        value: v.to_string(),
        expected: "a whole number below 2^32",
    })
}

impl StudyConfig {
    /// The default study: 30 batches × 400 ledgers × 250 tx (3M tx and
    /// 12,000 ledgers per layout, ~32 GB raw generated per layout) finishes
    /// in about 19 minutes for the four layouts on the 2-core reference
    /// machine (`STUDY_LAYOUTS` runs fewer; `rocksdb` alone takes 7 of
    /// them). `root` holds data and output unless the knobs say
    /// otherwise.
    pub fn from_env(root: &Path) -> BenchResult<Self> {
        let data_dir = knobs::get("STUDY_DIR", root.join("study-data"), "a directory path")?;
        let out_dir = knobs::get("STUDY_OUT", root.join("study"), "a directory path")?;
        Ok(Self {
            batches: small_u32("STUDY_BATCHES", 30, 1)?,
            layout_batches: knobs::layout_counts("STUDY_LAYOUT_BATCHES")?,
            ledgers_per_batch: small_u32("STUDY_LEDGERS", 400, 1)?,
            tx_per_ledger: small_u32("STUDY_TX", 250, 0)?,
            tx_bytes: knobs::count("STUDY_TX_BYTES", 5_000, 8)? as usize,
            ledger_bytes: knobs::count("STUDY_LEDGER_BYTES", 1_400_000, 64)? as usize,
            layouts: knobs::layouts("STUDY_LAYOUTS", &LAYOUTS)?,
            seed: knobs::get("STUDY_SEED", 1, "a whole number")?,
            data_dir,
            out_dir,
            keep: knobs::flag("STUDY_KEEP"),
            lookups: small_u32("STUDY_LOOKUPS", 20_000, 0)?,
            segment_ledgers: small_u32("STUDY_SEGMENT_LEDGERS", 2_000, 1)?,
            merge_fanout: small_u32("STUDY_MERGE_FANOUT", 10, 2)?,
            merge_levels: small_u32("STUDY_MERGE_LEVELS", 2, 0)?,
            mem_every_txs: knobs::count("STUDY_MEM_EVERY_TXS", 10_000_000, 1)?,
            drop_caches: knobs::switch("STUDY_DROP_CACHES", true)?,
        })
    }

    /// The `indexed` layout's segment options.
    pub fn indexed(&self) -> ledgerstore_store::IndexedOptions {
        ledgerstore_store::IndexedOptions {
            range_ledgers: self.segment_ledgers,
            merge_fanout: self.merge_fanout,
            merge_levels: self.merge_levels,
            ..ledgerstore_store::IndexedOptions::default()
        }
    }

    /// Total ledgers per layout.
    pub fn ledgers(&self) -> u64 {
        u64::from(self.batches) * u64::from(self.ledgers_per_batch)
    }

    /// Raw bytes generated per layout (ledgers plus their transactions).
    pub fn raw_bytes(&self) -> u64 {
        let per_ledger =
            self.ledger_bytes as u64 + u64::from(self.tx_per_ledger) * self.tx_bytes as u64;
        self.ledgers() * per_ledger
    }

    /// Batches `layout` runs: `STUDY_BATCHES`, or its own count.
    pub fn batches_for(&self, layout: Layout) -> u32 {
        self.layout_batches
            .iter()
            .find(|(l, _)| *l == layout)
            .map_or(self.batches, |(_, n)| *n)
    }

    /// `STUDY_LAYOUT_BATCHES=…` as given, or "" when unset.
    pub(crate) fn layout_batches_knob(&self) -> String {
        if self.layout_batches.is_empty() {
            return String::new();
        }
        let parts: Vec<String> = self
            .layout_batches
            .iter()
            .map(|(l, n)| format!("{}:{n}", l.name()))
            .collect();
        format!("STUDY_LAYOUT_BATCHES={} ", parts.join(","))
    }

    /// The command that reproduces this configuration.
    pub fn command(&self) -> String {
        let layouts: Vec<&str> = self.layouts.iter().map(|l| l.name()).collect();
        format!(
            "{}STUDY_BATCHES={} STUDY_LEDGERS={} STUDY_TX={} STUDY_TX_BYTES={} \
             STUDY_LEDGER_BYTES={} STUDY_LAYOUTS={} STUDY_SEED={} STUDY_SEGMENT_LEDGERS={} \
             STUDY_MERGE_FANOUT={} STUDY_MERGE_LEVELS={} STUDY_MEM_EVERY_TXS={} \
             cargo bench --workspace -- study",
            self.layout_batches_knob(),
            self.batches,
            self.ledgers_per_batch,
            self.tx_per_ledger,
            self.tx_bytes,
            self.ledger_bytes,
            layouts.join(","),
            self.seed,
            self.segment_ledgers,
            self.merge_fanout,
            self.merge_levels,
            self.mem_every_txs
        )
    }
}

/// One store's share of one batch.
#[derive(Debug, Clone, Serialize)]
pub struct StoreBatch {
    /// Table.
    pub table: &'static str,
    /// Engine.
    pub engine: &'static str,
    /// Puts.
    pub write_s: f64,
    /// Flush (RocksDB) or commit (MDBX).
    pub commit_s: f64,
    /// Forced compaction (field setup).
    pub compact_s: f64,
    /// Key + value bytes handed to the engine.
    pub logical_bytes: u64,
    /// Bytes the engine wrote to storage during the batch (its own count;
    /// background compaction lands in whichever batch it ran in).
    pub bytes_written: Option<u64>,
    /// Size of the store's files after the batch.
    pub disk_bytes: u64,
}

impl StoreBatch {
    /// write + commit + compact.
    pub fn io_s(&self) -> f64 {
        self.write_s + self.commit_s + self.compact_s
    }
}

/// One batch of one layout.
#[derive(Debug, Clone, Serialize)]
pub struct BatchRow {
    /// Layout.
    pub layout: &'static str,
    /// Batch number, from 1.
    pub batch: u32,
    /// Ledgers in the batch.
    pub ledgers: u64,
    /// Transactions in the batch.
    pub txs: u64,
    /// Wall time of the batch, generation included.
    pub total_s: f64,
    /// Generating the ledgers (the field study's "GetLedger").
    pub source_s: f64,
    /// Compression, validation and sorting.
    pub cpu_s: f64,
    /// Store I/O wall time (stores overlap where the layout allows).
    pub io_s: f64,
    /// Bytes the whole process caused to be written (`/proc/self/io`).
    pub device_bytes: Option<u64>,
    /// Per store.
    pub stores: Vec<StoreBatch>,
    /// The process's memory after this batch, when it is a checkpoint
    /// (the first batch at or past each multiple of `mem_every_txs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemSample>,
}

/// One store at the end of a layout's run.
#[derive(Debug, Clone, Serialize)]
pub struct StoreFinal {
    /// Table.
    pub table: &'static str,
    /// Engine.
    pub engine: &'static str,
    /// Size of its files.
    pub disk_bytes: u64,
    /// MDBX: bytes in the table's pages (the file also holds free pages and
    /// the unused part of the last growth step).
    pub used_bytes: Option<u64>,
    /// Bytes the engine wrote over the run, background work included.
    pub bytes_written: Option<u64>,
    /// Keys.
    pub keys: u64,
}

/// Point-lookup rates measured on the reopened store, one thread.
#[derive(Debug, Clone, Serialize)]
pub struct Lookups {
    /// Lookups per kind.
    pub count: u32,
    /// `get_tx` of stored hashes per second.
    pub hits_per_s: f64,
    /// `get_tx` of absent hashes per second.
    pub misses_per_s: f64,
    /// Median latency of a hit, microseconds.
    pub hit_p50_us: f64,
    /// 99th percentile latency of a hit, microseconds.
    pub hit_p99_us: f64,
    /// Median latency of a miss, microseconds.
    pub miss_p50_us: f64,
    /// 99th percentile latency of a miss, microseconds.
    pub miss_p99_us: f64,
    /// Bytes read from storage per hit (`/proc/self/io` over the hit loop).
    pub hit_read_bytes: Option<f64>,
    /// Bytes read from storage per miss (over the miss loop).
    pub miss_read_bytes: Option<f64>,
    /// True when the page cache was dropped just before the hit loop.
    pub cold: bool,
}

/// `Ledgerstore::open` of the drained, closed store.
#[derive(Debug, Clone, Serialize)]
pub struct ColdOpen {
    /// Seconds `Ledgerstore::open` took.
    pub open_s: f64,
    /// True when the page cache was dropped just before (else it was warm).
    pub cold: bool,
    /// Bytes the process read from storage during the open.
    pub open_read_bytes: Option<u64>,
    /// Seconds of background work the open started (compactions, segment
    /// builds), waited for before the lookups.
    pub settle_s: f64,
    /// Bytes the process read from storage meanwhile.
    pub settle_read_bytes: Option<u64>,
}

/// "cold" or "warm".
pub fn cache_word(cold: bool) -> &'static str {
    if cold { "cold" } else { "warm" }
}

impl ColdOpen {
    /// "cold" or "warm".
    pub fn cache(&self) -> &'static str {
        cache_word(self.cold)
    }
}

/// The `indexed` layout's segments at the end of a run.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentSummary {
    /// Segments built.
    pub count: usize,
    /// Keys in them.
    pub keys: u64,
    /// Bytes of their files.
    pub file_bytes: u64,
    /// Bits per key of the whole files.
    pub bits_per_key: f64,
    /// Bits per key of the MPHs alone.
    pub mph_bits_per_key: f64,
    /// Seconds of background building (scan, MPH, write, swap, hot drop).
    pub build_s: f64,
    /// `build_s` per million keys.
    pub build_s_per_mkeys: f64,
}

/// Everything measured for one layout.
#[derive(Debug, Clone, Serialize)]
pub struct LayoutRun {
    /// Layout.
    pub layout: &'static str,
    /// Per batch.
    pub rows: Vec<BatchRow>,
    /// Waiting for background work after the last batch.
    pub drain_s: f64,
    /// Per store, after the drain.
    pub finals: Vec<StoreFinal>,
    /// Lookup rates.
    pub lookups: Option<Lookups>,
    /// The same lookups repeated at once (warm).
    pub lookups_warm: Option<Lookups>,
    /// Bytes the process wrote while draining (`/proc/self/io`).
    pub drain_device_bytes: Option<u64>,
    /// Layout `indexed`: its segments.
    pub segments: Option<SegmentSummary>,
    /// The process's memory after the drain.
    pub end_memory: MemSample,
    /// Reopening the closed store, cache dropped.
    pub open: Option<ColdOpen>,
    /// Layout `indexed`: index probes a lookup makes at most (hot index
    /// plus every segment) on the reopened store.
    pub probes_max: Option<usize>,
}

#[cfg(test)]
pub(crate) mod testdata {
    use super::*;

    /// A layout run whose single store (tx_data) took `io[i]` seconds in
    /// batch i + 1.
    pub(crate) fn run(layout: &'static str, io: &[f64]) -> LayoutRun {
        LayoutRun {
            layout,
            rows: io
                .iter()
                .enumerate()
                .map(|(i, &t)| BatchRow {
                    layout,
                    batch: i as u32 + 1,
                    ledgers: 10,
                    txs: 100,
                    total_s: t + 1.0,
                    source_s: 0.5,
                    cpu_s: 0.25,
                    io_s: t,
                    device_bytes: Some(1000),
                    stores: vec![StoreBatch {
                        table: "tx_data",
                        engine: "mdbx",
                        write_s: t / 2.0,
                        commit_s: t / 2.0,
                        compact_s: 0.0,
                        logical_bytes: 500,
                        bytes_written: Some(1000),
                        disk_bytes: 4096,
                    }],
                    memory: None,
                })
                .collect(),
            drain_s: 2.0,
            finals: vec![StoreFinal {
                table: "tx_data",
                engine: "mdbx",
                disk_bytes: 4096,
                used_bytes: Some(2048),
                bytes_written: Some(io.len() as u64 * 1000),
                keys: 100,
            }],
            lookups: None,
            lookups_warm: None,
            drain_device_bytes: None,
            segments: None,
            end_memory: MemSample::default(),
            open: None,
            probes_max: None,
        }
    }
}
