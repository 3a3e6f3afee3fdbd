//! `ledgerstore ingest --synthetic`: bulk ingest with a per-batch report.
//!
//! A generator thread produces the next batch while the store writes the
//! current one; the time the writer waits for it is the batch's source time.

use std::sync::mpsc;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use indicatif::{ProgressBar, ProgressStyle};
use ledgerstore_store::StoreOptions;
use ledgerstore_synth::{Synth, SynthConfig};

use crate::cli::{IngestArgs, SynthArgs};
use crate::open;

pub fn run(a: IngestArgs) -> Result<()> {
    ensure!(
        a.synthetic,
        "only --synthetic ingest is available in this build"
    );
    ensure!(a.batch_ledgers >= 1, "--batch-ledgers must be at least 1");
    ensure!(
        a.synth.tx_bytes >= 128,
        "--tx-bytes must be at least 128, got {}",
        a.synth.tx_bytes
    );
    let report_jsonl = a
        .report_jsonl
        .clone()
        .unwrap_or_else(|| a.store.data_dir.join("batch-reports.jsonl"));
    let store = open::for_ingest(
        &a.store,
        a.layout.into(),
        StoreOptions {
            compression_level: a.zstd_level,
            report_jsonl: Some(report_jsonl),
            ..StoreOptions::default()
        },
    )?;
    let start = match store.last_ledger() {
        Some(last) => last
            .checked_add(1)
            .context("the data dir's mark is at the last possible ledger")?,
        None => a.synth.start_ledger,
    };
    let end = start
        .checked_add(a.synth.ledgers.saturating_sub(1))
        .context("--ledgers runs past the last possible ledger seq")?;
    if a.synth.ledgers == 0 {
        println!(
            "nothing to do: --ledgers 0 (mark: {:?})",
            store.last_ledger()
        );
        return Ok(());
    }
    println!(
        "ingesting ledgers {start}..={end} into {} (layout {}, {} per batch)",
        store.path().display(),
        store.layout(),
        a.batch_ledgers
    );
    let synth = synth_from(&a.synth);
    let progress = if a.no_progress {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(u64::from(a.synth.ledgers))
    };
    progress.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} ledgers {per_sec} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );

    let (tx, rx) = mpsc::sync_channel(1);
    let batch = a.batch_ledgers;
    let generator = std::thread::spawn(move || {
        let mut from = start;
        while from <= end {
            let count = batch.min(end - from + 1);
            if tx.send(synth.batch(from, count)).is_err() {
                return;
            }
            from += count;
        }
    });
    let started = Instant::now();
    let mut committed = 0u64;
    loop {
        let wait = Instant::now();
        let Ok(ledgers) = rx.recv() else { break };
        let source = wait.elapsed();
        let out = store.ingest(&ledgers, source)?;
        committed += out.committed as u64;
        progress.inc(ledgers.len() as u64);
        if let Some(r) = out.report {
            progress.suspend(|| {
                println!("{}", r.render());
                println!("committed through ledger {} (durable mark)", r.last_ledger);
            });
        }
    }
    progress.finish_and_clear();
    generator
        .join()
        .map_err(|_| anyhow::anyhow!("the synthetic generator panicked"))?;
    store.close()?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "done: {committed} ledgers in {secs:.1}s ({:.1} ledgers/s); mark {:?}",
        committed as f64 / secs.max(1e-9),
        store.last_ledger()
    );
    Ok(())
}

/// The generator described by the synthetic-shape flags.
pub fn synth_from(a: &SynthArgs) -> Synth {
    Synth::new(SynthConfig::with_sizes(
        a.seed,
        a.tx_per_ledger,
        a.tx_bytes,
        a.ledger_bytes,
    ))
}
