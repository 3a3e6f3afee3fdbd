//! `ledgerstore ingest`: bulk ingest into a data dir with a per-batch report.
//!
//! The source runs ahead of the writer: a generator thread (synthetic), or
//! Stellar files fetched and decoded in parallel on a tokio runtime. The
//! time the writer waits for the next batch is the batch's source time,
//! the field study's "GetLedger" time.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use ledgerstore_store::Ledgerstore;
use ledgerstore_synth::{Synth, SynthConfig};

use crate::cli::{IngestArgs, SynthArgs};
use crate::cmd::source::stellar_spec;
use crate::cmd::writer::{Writer, progress};
use crate::open;

pub fn run(a: IngestArgs) -> Result<()> {
    ensure!(a.batch_ledgers >= 1, "--batch-ledgers must be at least 1");
    ensure!(
        a.batch_mib >= 1,
        "--batch-mib must be at least 1 (MiB of raw ledger bytes a batch)"
    );
    let cfg = crate::config::for_ingest(&a.stellar.lake, Some(&a.follow_flags), &a.events)?;
    let spec = stellar_spec(&a.source, &cfg)?;
    if spec.is_none() {
        check_synth(&a.synth)?;
        ensure!(!a.follow, "--follow needs --stellar-datalake");
    }
    let report_jsonl = a
        .report_jsonl
        .clone()
        .unwrap_or_else(|| a.store.data_dir.join("batch-reports.jsonl"));
    let store = open::for_ingest(
        &a.store,
        a.layout.map(Into::into),
        a.zstd_level,
        report_jsonl,
    )?;
    match spec {
        None => synthetic(&a, store),
        Some(src) => crate::cmd::ingest_stellar::run(&a, src, &cfg, store),
    }
}

/// `--ledgers` is needed, and sane sizes.
pub fn check_synth(s: &SynthArgs) -> Result<u32> {
    let Some(n) = s.ledgers else {
        bail!("--synthetic needs --ledgers N");
    };
    ensure!(
        s.tx_bytes >= 128,
        "--tx-bytes must be at least 128, got {}",
        s.tx_bytes
    );
    Ok(n)
}

fn synthetic(a: &IngestArgs, store: Ledgerstore) -> Result<()> {
    let ledgers = check_synth(&a.synth)?;
    let start = match store.last_ledger() {
        Some(last) => last
            .checked_add(1)
            .context("the data dir's mark is at the last possible ledger")?,
        None => a.synth.start_ledger,
    };
    if ledgers == 0 {
        println!(
            "nothing to do: --ledgers 0 (mark: {:?})",
            store.last_ledger()
        );
        return Ok(());
    }
    let end = start
        .checked_add(ledgers - 1)
        .context("--ledgers runs past the last possible ledger seq")?;
    println!(
        "ingesting ledgers {start}..={end} into {} (layout {}, {} per batch)",
        store.path().display(),
        store.layout(),
        a.batch_ledgers
    );
    let synth = synth_from(&a.synth);
    let mut w = Writer::new(
        store,
        progress(a.no_progress, Some(u64::from(ledgers))),
        Duration::from_secs(a.repair_wait_seconds),
    )?;
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
    loop {
        let wait = Instant::now();
        let Ok(ledgers) = rx.recv() else { break };
        w.write(&ledgers, wait.elapsed())?;
    }
    generator
        .join()
        .map_err(|_| anyhow::anyhow!("the synthetic generator panicked"))?;
    w.finish()?;
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
