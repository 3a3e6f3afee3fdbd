//! `ledgerstore ingest`: bulk ingest into a data dir with a per-batch report.
//!
//! The source runs ahead of the writer: a generator thread (synthetic), or
//! Stellar files fetched and decoded in parallel on a tokio runtime. The
//! time the writer waits for the next batch is the batch's source time,
//! the field study's "GetLedger" time.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::SourceSpec;
use ledgerstore_store::Ledgerstore;
use ledgerstore_synth::{Synth, SynthConfig};

use crate::cli::{IngestArgs, SynthArgs};
use crate::cmd::source::{open_stellar, resume_from, stellar_spec};
use crate::open;

pub fn run(a: IngestArgs) -> Result<()> {
    ensure!(a.batch_ledgers >= 1, "--batch-ledgers must be at least 1");
    let spec = stellar_spec(&a.source);
    if spec.is_none() {
        check_synth(&a.synth)?;
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
        Some(spec) => stellar(&a, &spec, store),
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

/// Writes batches and prints their reports.
struct Writer {
    store: Ledgerstore,
    progress: ProgressBar,
    committed: u64,
    started: Instant,
}

impl Writer {
    fn new(store: Ledgerstore, progress: ProgressBar) -> Self {
        Self {
            store,
            progress,
            committed: 0,
            started: Instant::now(),
        }
    }

    fn write(&mut self, ledgers: &[LedgerInput], source: Duration) -> Result<()> {
        let out = self.store.ingest(ledgers, source)?;
        self.committed += out.committed as u64;
        self.progress.inc(ledgers.len() as u64);
        if let Some(r) = out.report {
            self.progress.suspend(|| {
                println!("{}", r.render());
                println!("committed through ledger {} (durable mark)", r.last_ledger);
            });
        }
        Ok(())
    }

    fn finish(self) -> Result<Option<u32>> {
        self.progress.finish_and_clear();
        let mark = self.store.last_ledger();
        let secs = self.started.elapsed().as_secs_f64();
        // Layout indexed: the segments of the ranges this run closed, and
        // their merges, are built before exit, so that a backfill leaves
        // the closed history in segments and not in the hot index.
        let waited = Instant::now();
        self.store.wait_for_segments()?;
        if let Some(seg) = self.store.stats()?.segments
            && (seg.builds > 0 || seg.merges > 0)
        {
            println!(
                "segments: built {} and merged {} in {:.1}s ({:.1}s waited after the last batch); {} segments, a lookup probes at most {}",
                seg.builds,
                seg.merges,
                seg.build_total_s + seg.merge_total_s,
                waited.elapsed().as_secs_f64(),
                seg.segments.len(),
                seg.probes,
            );
        }
        self.store.close()?;
        println!(
            "done: {} ledgers in {secs:.1}s ({:.1} ledgers/s); mark {mark:?}",
            self.committed,
            self.committed as f64 / secs.max(1e-9),
        );
        Ok(mark)
    }
}

fn progress(no_progress: bool, len: Option<u64>) -> ProgressBar {
    if no_progress {
        return ProgressBar::hidden();
    }
    let (bar, template) = match len {
        Some(n) => (
            ProgressBar::new(n),
            "{bar:40} {pos}/{len} ledgers {per_sec} eta {eta}",
        ),
        None => (
            ProgressBar::new_spinner(),
            "{spinner} {pos} ledgers {per_sec}",
        ),
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
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
    let mut w = Writer::new(store, progress(a.no_progress, Some(u64::from(ledgers))));
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

/// What the Stellar source did, for the closing line.
#[derive(Default)]
struct SourceTally {
    units: u64,
    ledgers: u64,
    txs: u64,
    read_bytes: u64,
    fetch_decode: Duration,
    waited: Duration,
}

fn stellar(a: &IngestArgs, spec: &SourceSpec, store: Ledgerstore) -> Result<()> {
    let from = resume_from(&a.stellar, store.last_ledger())?;
    if let (Some(f), Some(t)) = (from, a.stellar.to)
        && f > t
    {
        println!(
            "nothing to do: ledgers through {} are durable in {}",
            f - 1,
            store.path().display()
        );
        return Ok(());
    }
    let rt = crate::runtime()?;
    let (network, opened) = rt.block_on(open_stellar(spec, &a.stellar, from))?;
    println!(
        "ingesting {} (network {network}) into {} (layout {}, {} ledgers per batch)",
        opened.description,
        store.path().display(),
        store.layout(),
        a.batch_ledgers
    );
    let len = match (from, a.stellar.to) {
        (Some(f), Some(t)) => Some(u64::from(t - f) + 1),
        _ => None,
    };
    let mut w = Writer::new(store, progress(a.no_progress, len));
    let (tx, mut rx) = tokio::sync::mpsc::channel(2);
    let mut chunks = opened.chunks;
    rt.spawn(async move {
        while let Some(c) = chunks.next().await {
            let stop = c.is_err();
            if tx.send(c).await.is_err() || stop {
                break;
            }
        }
    });
    let batch = a.batch_ledgers as usize;
    let mut tally = SourceTally::default();
    let mut pending: Vec<LedgerInput> = Vec::new();
    let mut waited = Duration::ZERO;
    let mut failure = None;
    loop {
        let t = Instant::now();
        let next = rx.blocking_recv();
        waited += t.elapsed();
        match next {
            None => break,
            Some(Err(e)) => {
                failure = Some(e);
                break;
            }
            Some(Ok(chunk)) => {
                tally.units += 1;
                tally.ledgers += chunk.ledgers.len() as u64;
                tally.txs += chunk
                    .ledgers
                    .iter()
                    .map(|l| l.txs.len() as u64)
                    .sum::<u64>();
                tally.read_bytes += chunk.read_bytes;
                tally.fetch_decode += chunk.fetch_decode;
                pending.extend(chunk.ledgers);
                while pending.len() >= batch {
                    let rest = pending.split_off(batch);
                    let full = std::mem::replace(&mut pending, rest);
                    tally.waited += waited;
                    w.write(&full, std::mem::take(&mut waited))?;
                }
            }
        }
    }
    // What arrived before a source error is valid and in order: keep it.
    if !pending.is_empty() {
        tally.waited += waited;
        w.write(&pending, waited)?;
    }
    let mark = w.finish()?;
    println!(
        "source: {} units, {} ledgers, {} txs, {:.1} MB read; fetch+decode {:.2}s on workers, \
         writer waited {:.2}s",
        tally.units,
        tally.ledgers,
        tally.txs,
        tally.read_bytes as f64 / 1e6,
        tally.fetch_decode.as_secs_f64(),
        tally.waited.as_secs_f64()
    );
    if let Some(e) = failure {
        let mark = mark.map_or("nothing is durable".into(), |m| {
            format!("ledgers through {m} are durable")
        });
        bail!("the source stopped: {e} ({mark}; fix the source and rerun to resume)");
    }
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
