//! `ledgerstore bench-query`: a light load client for the Query API.
//!
//! ghz is the stock-client check, but on a 2-core machine its own CPU (about
//! a core) competes with the daemon and hides what the daemon spends. This
//! client runs on one thread by default: `--concurrency` requests in flight
//! over `--connections` HTTP/2 connections, closed-loop or paced at
//! `--rate`. Latencies go into HDR histograms; paced requests count from
//! their scheduled start, so a stalled server is charged for the requests
//! it delayed (coordinated omission). With `--pid` the report gives the
//! daemon's CPU time per request; with `--disk` a device's reads per item
//! from the measured window's start until the last request returned (not
//! the GetLedger sampling before it).

mod report;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use ledgerstore_proto::v1 as pb;
use pb::query_client::QueryClient;
use tonic::Code;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::cli::{BenchCall, BenchQueryArgs};
use crate::cmd::remote;
use report::{CpuClock, DiskClock, Report, Tally};

/// Ledgers per StreamLedgers request.
const STREAM_LEDGERS: u32 = 16;

pub fn run(a: BenchQueryArgs) -> Result<()> {
    let rt = crate::runtime_builder()
        .worker_threads(a.client_threads as usize)
        .build()?;
    let r = rt.block_on(load(&a))?;
    report::print(&r, a.json)
}

/// What the requests ask for: sampled before the load.
struct Work {
    hashes: Vec<Vec<u8>>,
    seqs: Vec<u32>,
    last: u32,
}

/// When requests start, shared by every worker.
struct Plan {
    call: BenchCall,
    batch: usize,
    /// Paced: the gap between scheduled starts.
    gap_ns: Option<u64>,
    next: AtomicU64,
    t0: Instant,
    measure_from: Instant,
    end: Instant,
}

impl Plan {
    /// Request `i`'s scheduled start (paced), or now (closed loop).
    fn scheduled(&self, i: u64) -> Instant {
        match self.gap_ns {
            Some(g) => self.t0 + Duration::from_nanos(i.saturating_mul(g)),
            None => Instant::now(),
        }
    }
}

async fn load(a: &BenchQueryArgs) -> Result<Report> {
    // A --pid that is not running is an error before any load, not after.
    if let Some(pid) = a.pid {
        CpuClock::read(pid)?;
    }
    if let Some(d) = &a.disk {
        DiskClock::read(d)?;
    }
    let mut channels = Vec::with_capacity(a.connections as usize);
    for _ in 0..a.connections {
        channels.push(remote::channel(&a.remote).await?);
    }
    let work = Arc::new(sample(QueryClient::new(channels[0].clone()), a).await?);
    let t0 = Instant::now();
    let measure_from = t0 + Duration::from_secs(a.warmup_seconds);
    let plan = Arc::new(Plan {
        call: a.call,
        batch: a.batch_hashes as usize,
        gap_ns: (a.rate > 0).then(|| (1_000_000_000 / a.rate).max(1)),
        next: AtomicU64::new(0),
        t0,
        measure_from,
        end: measure_from + Duration::from_secs(a.seconds),
    });
    let clocks = tokio::spawn(cpu_window(a.pid, a.disk.clone(), measure_from, plan.end));
    let workers: Vec<_> = (0..a.concurrency as usize)
        .map(|w| {
            let ch = channels[w % channels.len()].clone();
            let clients = Clients {
                query: QueryClient::new(ch.clone()).max_decoding_message_size(usize::MAX),
                health: HealthClient::new(ch),
            };
            tokio::spawn(worker(clients, work.clone(), plan.clone()))
        })
        .collect();
    let mut tally = Tally::new()?;
    for w in workers {
        tally.merge(w.await.context("a load worker panicked")??)?;
    }
    let (daemon, client, disk0) = clocks.await.context("the CPU clock task panicked")??;
    // After every worker returned: the reads of the requests still in
    // flight at the window's end (which the tally counts) are in.
    let disk = match (&a.disk, disk0) {
        (Some(name), Some(k0)) => Some(DiskClock::read(name)?.since(&k0)),
        _ => None,
    };
    Ok(Report::new(a, tally, daemon, client, disk))
}

/// The CPU time of the daemon (with --pid) and of this client over the
/// measured window, and the disk's counters (with --disk) at its start.
async fn cpu_window(
    pid: Option<u32>,
    disk: Option<String>,
    from: Instant,
    to: Instant,
) -> Result<(Option<CpuClock>, CpuClock, Option<DiskClock>)> {
    tokio::time::sleep_until(from.into()).await;
    let me = std::process::id();
    let d0 = pid.map(CpuClock::read).transpose()?;
    let c0 = CpuClock::read(me)?;
    let k0 = disk.as_deref().map(DiskClock::read).transpose()?;
    tokio::time::sleep_until(to.into()).await;
    let daemon = match (pid, d0) {
        (Some(p), Some(d0)) => Some(CpuClock::read(p)?.since(&d0)),
        _ => None,
    };
    Ok((daemon, CpuClock::read(me)?.since(&c0), k0))
}

/// Hashes (or ledger numbers) from ledgers spread evenly over the store.
async fn sample(mut q: QueryClient<Channel>, a: &BenchQueryArgs) -> Result<Work> {
    let asks_hashes = matches!(
        a.call,
        BenchCall::Get | BenchCall::Batch | BenchCall::TxLedger
    );
    if a.misses && !asks_hashes {
        bail!("--misses applies to --call get, batch or tx-ledger");
    }
    if a.call == BenchCall::Health {
        return Ok(Work {
            hashes: Vec::new(),
            seqs: Vec::new(),
            last: 0,
        });
    }
    let st = q
        .get_status(pb::GetStatusRequest {})
        .await
        .map_err(|s| anyhow::anyhow!("GetStatus: {}: {}", s.code(), s.message()))?
        .into_inner();
    if !st.has_durable_ledger {
        bail!("the daemon's store is empty: there is nothing to query");
    }
    let (first, last) = (st.first_ledger, st.durable_ledger);
    let span = u64::from(last - first) + 1;
    let k = u64::from(a.sample_ledgers).min(span);
    let seqs: Vec<u32> = (0..k)
        .map(|i| first + u32::try_from(i * span / k).unwrap_or(0))
        .collect();
    let mut hashes = Vec::new();
    if a.misses {
        let mut x = 0x5EED_u64;
        hashes = (0..4096)
            .map(|_| {
                (0..4)
                    .flat_map(|_| splitmix64(&mut x).to_be_bytes())
                    .collect()
            })
            .collect();
    } else if matches!(
        a.call,
        BenchCall::Get | BenchCall::Batch | BenchCall::TxLedger
    ) {
        for &seq in &seqs {
            let l = q
                .get_ledger(pb::GetLedgerRequest {
                    seq,
                    omit_raw: true,
                })
                .await
                .map_err(|s| anyhow::anyhow!("GetLedger {seq}: {}: {}", s.code(), s.message()))?
                .into_inner();
            hashes.extend(l.tx_hashes);
        }
        if hashes.is_empty() {
            bail!("the {k} sampled ledgers hold no transactions; nothing to ask for");
        }
    }
    Ok(Work { hashes, seqs, last })
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A well-spread index into `len` items for request `i`, so concurrent
/// requests do not walk the store in step.
fn pick(i: u64, len: usize) -> usize {
    let mut x = i;
    (splitmix64(&mut x) % len as u64) as usize
}

/// One worker's clients, over one of the connections.
struct Clients {
    query: QueryClient<Channel>,
    health: HealthClient<Channel>,
}

/// One request: `(found items, asked items)`, or the failure's code.
async fn call(c: &mut Clients, w: &Work, p: &Plan, i: u64) -> Result<(u64, u64), tonic::Status> {
    let q = &mut c.query;
    match p.call {
        BenchCall::Health => {
            c.health
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await?;
            Ok((1, 1))
        }
        BenchCall::Get => {
            let hash = w.hashes[pick(i, w.hashes.len())].clone();
            match q.get_transaction(pb::GetTransactionRequest { hash }).await {
                Ok(_) => Ok((1, 1)),
                Err(s) if s.code() == Code::NotFound => Ok((0, 1)),
                Err(s) => Err(s),
            }
        }
        BenchCall::TxLedger => {
            let hash = w.hashes[pick(i, w.hashes.len())].clone();
            match q
                .get_transaction_ledger(pb::GetTransactionLedgerRequest { hash })
                .await
            {
                Ok(_) => Ok((1, 1)),
                Err(s) if s.code() == Code::NotFound => Ok((0, 1)),
                Err(s) => Err(s),
            }
        }
        BenchCall::Batch => {
            // Each hash drawn on its own: a batch spans the store, as an
            // API server's would, not one ledger's neighbouring records.
            let first = i.saturating_mul(p.batch as u64);
            let hashes: Vec<Vec<u8>> = (0..p.batch as u64)
                .map(|k| w.hashes[pick(first + k, w.hashes.len())].clone())
                .collect();
            let r = q
                .batch_get_transactions(pb::BatchGetTransactionsRequest { hashes })
                .await?
                .into_inner();
            let found = r.results.iter().filter(|l| l.found).count() as u64;
            Ok((found, p.batch as u64))
        }
        BenchCall::Ledger => {
            let seq = w.seqs[pick(i, w.seqs.len())];
            q.get_ledger(pb::GetLedgerRequest {
                seq,
                omit_raw: false,
            })
            .await?;
            Ok((1, 1))
        }
        BenchCall::Stream => {
            let start = w.seqs[pick(i, w.seqs.len())];
            let end = start.saturating_add(STREAM_LEDGERS - 1).min(w.last);
            let mut s = q
                .stream_ledgers(pb::StreamLedgersRequest {
                    start,
                    end,
                    omit_raw: false,
                })
                .await?
                .into_inner();
            let mut n = 0;
            while s.message().await?.is_some() {
                n += 1;
            }
            Ok((n, u64::from(end - start) + 1))
        }
    }
}

async fn worker(mut c: Clients, w: Arc<Work>, p: Arc<Plan>) -> Result<Tally> {
    let mut t = Tally::new()?;
    loop {
        let i = p.next.fetch_add(1, Ordering::Relaxed);
        let scheduled = p.scheduled(i);
        if scheduled >= p.end {
            return Ok(t);
        }
        if p.gap_ns.is_some() {
            tokio::time::sleep_until(scheduled.into()).await;
        }
        let sent = Instant::now();
        let r = call(&mut c, &w, &p, i).await;
        let done = Instant::now();
        if scheduled >= p.measure_from {
            t.record(done - scheduled, done - sent, r)?;
        }
    }
}

/// Microseconds, for the histograms (1 µs to 1 h, 3 significant digits).
fn hist() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).context("creating a latency histogram")
}
