//! `ledgerstore ingest` of real Stellar ledgers: a file, or a data lake
//! read once (`--to`, or up to its newest ledger) or followed (`--follow`:
//! then polled for new files, each committed as it arrives).
//!
//! The source runs ahead of the writer on a tokio runtime. Ledgers gather
//! into batches of `--batch-ledgers` ledgers, or fewer once their raw bytes
//! reach `--batch-mib`; a followed lake also commits at once whenever it
//! reaches the lake's newest ledger. A source error commits
//! what arrived before it, then stops (a followed lake reports it and
//! tries again after the poll interval).
//!
//! Between the two, decoded ledgers wait up to `lake.decoded_ahead_mib` of
//! their raw bytes (a semaphore of KiB permits, taken before a unit is
//! handed over and given back when the writer takes it): while a batch
//! commits, the source keeps decoding into that room instead of stopping
//! `lake.read_ahead` units ahead (docs/benchmarks.md, "Batches by bytes,
//! and decoding while a batch commits").

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt;
use futures::stream::BoxStream;
use ledgerstore_config::Config;
use ledgerstore_db_api::Batcher;
use ledgerstore_objstore::RequestCounters;
use ledgerstore_stellar::{DataLake, FollowEvent, Lead, SourceSpec};
use ledgerstore_store::Ledgerstore;

use crate::cli::IngestArgs;
use crate::cmd::source::{Stellar, open_stellar, resume_from, source_options};
use crate::cmd::writer::{Writer, progress};

/// What the Stellar source did, for the closing line.
#[derive(Default)]
struct SourceTally {
    units: u64,
    ledgers: u64,
    txs: u64,
    read_bytes: u64,
    fetch: Duration,
    decode: Duration,
    waited: Duration,
}

pub(crate) fn run(a: &IngestArgs, src: Stellar, cfg: &Config, store: Ledgerstore) -> Result<()> {
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
    let started = Instant::now();
    let mut lake_newest = None;
    let (events, len) = if a.follow {
        let SourceSpec::DataLake(lake) = &src.spec else {
            bail!("--follow needs --stellar-datalake (a file does not grow)");
        };
        let events = rt.block_on(open_follow(a, lake, cfg, from, store.path()))?;
        (events, None)
    } else {
        let (network, opened) = rt.block_on(open_stellar(&src.spec, &a.stellar, cfg, from))?;
        println!(
            "ingesting {} (network {network}) into {} (layout {}, {} ledgers or {} MiB per batch)",
            opened.description,
            store.path().display(),
            store.layout(),
            a.batch_ledgers,
            a.batch_mib
        );
        let len = opened.range.map(|(f, l)| u64::from(l - f) + 1);
        // Without --to, a lake is read to its newest ledger.
        lake_newest = opened.range.filter(|_| a.stellar.to.is_none()).map(|r| r.1);
        let events = opened
            .chunks
            .map(|c| match c {
                Ok(chunk) => FollowEvent::Chunk {
                    chunk,
                    at_tip: false,
                },
                Err(e) => FollowEvent::Error(e),
            })
            .boxed();
        (events, len)
    };
    let progress = progress(a.no_progress, len);
    let mut w = Writer::new(
        store,
        progress.clone(),
        Duration::from_secs(a.repair_wait_seconds),
    )?;
    if cfg.events.enabled {
        w = w.with_events(ledgerstore_server::events_settings(cfg));
    }
    let follow = a.follow;
    let mut rx = {
        let _rt = rt.enter();
        ledgerstore_stellar::forward(
            events,
            Lead::new(cfg.lake.decoded_ahead_mib),
            follow.then(interrupted),
            !follow,
        )
    };
    let mut pending = Batcher::new(a.batch_ledgers as usize, u64::from(a.batch_mib) << 20);
    let mut tally = SourceTally::default();
    let mut waited = Duration::ZERO;
    let mut failure = None;
    let mut newest: Option<u32> = lake_newest;
    loop {
        let t = Instant::now();
        // The unit's room in the lead is given back as it is taken: from
        // here its ledgers are the batch's, which `--batch-ledgers` and
        // `--batch-mib` bound.
        let next = rx.blocking_recv().map(|(ev, _room)| ev);
        waited += t.elapsed();
        let (chunk, at_tip) = match next {
            None => break,
            Some(FollowEvent::Newest(n)) => {
                newest = Some(n);
                continue;
            }
            Some(FollowEvent::UpToDate) => continue,
            Some(FollowEvent::Error(e)) if follow => {
                progress.suspend(|| eprintln!("lake: {e}; trying again"));
                continue;
            }
            Some(FollowEvent::Error(e)) => {
                failure = Some(e);
                break;
            }
            Some(FollowEvent::Chunk { chunk, at_tip }) => (chunk, at_tip),
        };
        tally.units += 1;
        tally.ledgers += chunk.ledgers.len() as u64;
        tally.txs += chunk
            .ledgers
            .iter()
            .map(|l| l.txs.len() as u64)
            .sum::<u64>();
        tally.read_bytes += chunk.read_bytes;
        tally.fetch += chunk.fetch;
        tally.decode += chunk.decode;
        pending.push(chunk.ledgers);
        while let Some(full) = pending.full() {
            tally.waited += waited;
            w.write(&full, std::mem::take(&mut waited))?;
        }
        if at_tip && !pending.is_empty() {
            tally.waited += waited;
            w.write(&pending.take_all(), std::mem::take(&mut waited))?;
        }
        let mbs = tally.read_bytes as f64 / 1e6 / started.elapsed().as_secs_f64().max(1e-9);
        progress.set_message(match newest {
            Some(n) => format!("{mbs:.1} MB/s, lake newest {n}"),
            None => format!("{mbs:.1} MB/s"),
        });
    }
    // What arrived before a source error is valid and in order: keep it.
    if !pending.is_empty() {
        tally.waited += waited;
        w.write(&pending.take_all(), waited)?;
    }
    let mark = w.finish()?;
    println!(
        "source: {} units, {} ledgers, {} txs, {:.1} MB read ({:.1} MB/s); fetch {:.2}s and \
         decode {:.2}s on workers; writer waited {:.2}s{}",
        tally.units,
        tally.ledgers,
        tally.txs,
        tally.read_bytes as f64 / 1e6,
        tally.read_bytes as f64 / 1e6 / started.elapsed().as_secs_f64().max(1e-9),
        tally.fetch.as_secs_f64(),
        tally.decode.as_secs_f64(),
        tally.waited.as_secs_f64(),
        requests(src.counters.as_deref()),
    );
    if let Some(e) = failure {
        let mark = mark.map_or("nothing is durable".into(), |m| {
            format!("ledgers through {m} are durable")
        });
        bail!("the source stopped: {e} ({mark}; fix the source and rerun to resume)");
    }
    Ok(())
}

fn requests(c: Option<&RequestCounters>) -> String {
    match c.map(RequestCounters::get) {
        Some(n) if n.attempts > 0 => format!(
            "; {} HTTP requests, {} failed and retried",
            n.attempts, n.failed
        ),
        _ => String::new(),
    }
}

/// Ctrl-C while following: forwarding stops, and what arrived is
/// committed.
///
/// The SIGINT listener is made once, before the first event: a signal
/// that arrives while no listener exists is swallowed by tokio's handler
/// (installed process-wide at the first listener), so a listener made
/// afresh in each turn of the forwarding loop missed a Ctrl-C that came
/// while an event was being handed over, and `--follow` then never
/// stopped (seen in `ingest_follow_commits_new_files_then_stops_on_interrupt`).
fn interrupted() -> futures::future::BoxFuture<'static, ()> {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::interrupt()) {
        Ok(mut sig) => Box::pin(async move {
            sig.recv().await;
            eprintln!("interrupted: committing what arrived, then stopping");
        }),
        Err(e) => {
            eprintln!("cannot listen for Ctrl-C ({e}): stop with SIGTERM");
            Box::pin(std::future::pending())
        }
    }
}

async fn open_follow(
    a: &IngestArgs,
    lake: &Arc<DataLake>,
    cfg: &Config,
    from: Option<u32>,
    dir: &std::path::Path,
) -> Result<BoxStream<'static, FollowEvent>> {
    let spec = SourceSpec::DataLake(Arc::clone(lake));
    let mut opts = source_options(&spec, &a.stellar, cfg, from).await?;
    lake.check_network(&opts.network).await?;
    let from = match from {
        Some(f) => f,
        None => {
            let newest = lake.newest(None).await?;
            let oldest = match newest {
                Some(n) => lake.oldest(n).await?,
                None => None,
            };
            oldest.ok_or_else(|| {
                anyhow::anyhow!(
                    "data lake {} holds no ledgers yet: give --from to wait for one",
                    lake.root()
                )
            })?
        }
    };
    opts.from = Some(from);
    println!(
        "following data lake {} from ledger {from} (network {}) into {}; polling every {} ms \
         once caught up; Ctrl-C stops",
        lake.root(),
        opts.network,
        dir.display(),
        cfg.follow.poll_ms
    );
    let poll = Duration::from_millis(cfg.follow.poll_ms);
    Ok(ledgerstore_stellar::follow(Arc::clone(lake), opts, poll)?)
}
