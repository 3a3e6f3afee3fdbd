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
use ledgerstore_db_api::LedgerInput;
use ledgerstore_objstore::RequestCounters;
use ledgerstore_stellar::{Chunk, DataLake, FollowEvent, SourceSpec};
use ledgerstore_store::Ledgerstore;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

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
    // The queue's length only bounds what carries no ledgers (a unit the
    // range filtered out, the lake's newest): the lead bounds the bytes.
    let (tx, mut rx) = tokio::sync::mpsc::channel(1024);
    let follow = a.follow;
    rt.spawn(forward(
        events,
        tx,
        follow,
        Lead::new(cfg.lake.decoded_ahead_mib),
    ));
    let batch = a.batch_ledgers as usize;
    let batch_bytes = u64::from(a.batch_mib) << 20;
    let mut pending_bytes = 0u64;
    let mut tally = SourceTally::default();
    let mut pending: Vec<LedgerInput> = Vec::new();
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
        pending_bytes += raw_bytes(&chunk);
        pending.extend(chunk.ledgers);
        loop {
            let n = if pending.len() >= batch || pending_bytes >= batch_bytes {
                batch_len(&pending, batch, batch_bytes)
            } else if at_tip && !pending.is_empty() {
                pending.len()
            } else {
                break;
            };
            let rest = pending.split_off(n);
            let full = std::mem::replace(&mut pending, rest);
            pending_bytes -= full.iter().map(|l| l.raw.len() as u64).sum::<u64>();
            tally.waited += waited;
            w.write(&full, std::mem::take(&mut waited))?;
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
        w.write(&pending, waited)?;
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

/// Room for decoded ledgers waiting for the writer: `lake.decoded_ahead_mib`
/// as KiB permits.
struct Lead {
    room: Arc<Semaphore>,
    kib: u32,
}

impl Lead {
    fn new(mib: u32) -> Self {
        let kib = mib.saturating_mul(1024).max(1);
        Self {
            room: Arc::new(Semaphore::new(kib as usize)),
            kib,
        }
    }

    /// Waits for room for `ev` (a unit's raw bytes; a unit larger than the
    /// whole lead takes all of it, so it waits alone), and takes it.
    async fn room_for(&self, ev: &FollowEvent) -> Option<OwnedSemaphorePermit> {
        let FollowEvent::Chunk { chunk, .. } = ev else {
            return None;
        };
        let kib = u32::try_from(raw_bytes(chunk).div_ceil(1024)).unwrap_or(u32::MAX);
        Arc::clone(&self.room)
            .acquire_many_owned(kib.min(self.kib))
            .await
            .ok()
    }
}

/// The ledgers of the next batch: up to `max_ledgers`, ending with the
/// one whose raw bytes reach `max_bytes` (at least one ledger).
fn batch_len(pending: &[LedgerInput], max_ledgers: usize, max_bytes: u64) -> usize {
    let mut bytes = 0u64;
    for (i, l) in pending.iter().take(max_ledgers).enumerate() {
        bytes += l.raw.len() as u64;
        if bytes >= max_bytes {
            return i + 1;
        }
    }
    pending.len().min(max_ledgers)
}

fn raw_bytes(chunk: &Chunk) -> u64 {
    chunk.ledgers.iter().map(|l| l.raw.len() as u64).sum()
}

/// Passes events on until the receiver goes, or (following) until Ctrl-C,
/// each unit once the lead has room for it.
///
/// The SIGINT listener is made once, before the first event: a signal
/// that arrives while no listener exists is swallowed by tokio's handler
/// (installed process-wide at the first listener), so a listener made
/// afresh in each turn of the loop missed a Ctrl-C that came while an
/// event was being handed over, and `--follow` then never stopped
/// (seen in `ingest_follow_commits_new_files_then_stops_on_interrupt`).
async fn forward(
    mut events: BoxStream<'static, FollowEvent>,
    tx: tokio::sync::mpsc::Sender<(FollowEvent, Option<OwnedSemaphorePermit>)>,
    follow: bool,
    lead: Lead,
) {
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigint = if follow {
        match signal(SignalKind::interrupt()) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("cannot listen for Ctrl-C ({e}): stop with SIGTERM");
                None
            }
        }
    } else {
        None
    };
    loop {
        let next = async {
            let ev = events.next().await?;
            let room = lead.room_for(&ev).await;
            Some((ev, room))
        };
        let next = match sigint.as_mut() {
            Some(sig) => tokio::select! {
                biased;
                _ = sig.recv() => {
                    eprintln!("interrupted: committing what arrived, then stopping");
                    return;
                }
                next = next => next,
            },
            None => next.await,
        };
        let Some((ev, room)) = next else { return };
        let stop = !follow && matches!(ev, FollowEvent::Error(_));
        if tx.send((ev, room)).await.is_err() || stop {
            return;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ledgers(sizes: &[usize]) -> Vec<LedgerInput> {
        sizes
            .iter()
            .zip(1u32..)
            .map(|(&n, seq)| LedgerInput {
                seq,
                close_time: 0,
                raw: vec![0u8; n].into(),
                txs: Vec::new(),
                cuts: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn a_batch_ends_at_its_ledger_count_or_with_the_ledger_that_reaches_its_bytes() {
        let l = ledgers(&[10, 10, 10, 10, 10]);
        // The count ends it before the bytes do.
        assert_eq!(batch_len(&l, 2, 1000), 2);
        // The third ledger reaches 30 bytes: it is the batch's last.
        assert_eq!(batch_len(&l, 5, 30), 3);
        assert_eq!(batch_len(&l, 5, 25), 3);
        // A ledger larger than the cap is a batch of its own.
        assert_eq!(batch_len(&ledgers(&[100, 1]), 5, 30), 1);
        // Neither reached: every pending ledger (the caller's tail).
        assert_eq!(batch_len(&l, 9, 1000), 5);
        assert_eq!(batch_len(&l[..0], 9, 1000), 0);
    }

    #[tokio::test]
    async fn the_lead_gives_a_unit_room_for_its_bytes_and_a_larger_one_all_of_it() {
        let lead = Lead::new(1);
        let chunk = |sizes: &[usize]| FollowEvent::Chunk {
            chunk: Chunk {
                unit: "u".into(),
                ledgers: ledgers(sizes),
                read_bytes: 0,
                fetch: Duration::ZERO,
                decode: Duration::ZERO,
            },
            at_tip: false,
        };
        let a = lead.room_for(&chunk(&[1000, 1100])).await.expect("room");
        assert_eq!(a.num_permits(), 3, "2,100 bytes take 3 KiB");
        assert_eq!(lead.room.available_permits(), 1021);
        // Larger than the whole lead: waits until everything is given
        // back, then takes all of it.
        let big = chunk(&[5 << 20]);
        let waiting = lead.room_for(&big);
        tokio::pin!(waiting);
        assert!(
            futures::poll!(&mut waiting).is_pending(),
            "waits while another unit holds room"
        );
        drop(a);
        let b = waiting.await.expect("room");
        assert_eq!(b.num_permits(), 1024);
        assert_eq!(lead.room.available_permits(), 0);
        // A unit of no ledgers (the range filtered it out) and what is not
        // a unit take no room, even with none left.
        let empty = chunk(&[]);
        let none = lead.room_for(&empty);
        tokio::pin!(none);
        match futures::poll!(&mut none) {
            std::task::Poll::Ready(Some(p)) => assert_eq!(p.num_permits(), 0),
            other => panic!("an empty unit waited for room: {other:?}"),
        }
        assert!(lead.room_for(&FollowEvent::UpToDate).await.is_none());
        drop(b);
        assert_eq!(lead.room.available_permits(), 1024);
    }
}
