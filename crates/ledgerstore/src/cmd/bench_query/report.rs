//! Counting, CPU clocks and the printed report of `bench-query`.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::hist;
use crate::cli::{BenchCall, BenchQueryArgs};

/// What the workers saw in the measured window.
pub struct Tally {
    /// From each request's scheduled start (paced) or its send (closed
    /// loop) to its answer.
    response: Histogram<u64>,
    /// From each request's send to its answer.
    service: Histogram<u64>,
    requests: u64,
    items_asked: u64,
    items_found: u64,
    errors: BTreeMap<String, u64>,
}

impl Tally {
    pub fn new() -> Result<Self> {
        Ok(Self {
            response: hist()?,
            service: hist()?,
            requests: 0,
            items_asked: 0,
            items_found: 0,
            errors: BTreeMap::new(),
        })
    }

    pub fn record(
        &mut self,
        response: Duration,
        service: Duration,
        r: Result<(u64, u64), tonic::Status>,
    ) -> Result<()> {
        self.requests += 1;
        self.response.saturating_record(micros(response));
        self.service.saturating_record(micros(service));
        match r {
            Ok((found, asked)) => {
                self.items_found += found;
                self.items_asked += asked;
            }
            Err(s) => *self.errors.entry(format!("{:?}", s.code())).or_default() += 1,
        }
        Ok(())
    }

    pub fn merge(&mut self, o: Tally) -> Result<()> {
        self.response
            .add(&o.response)
            .context("merging histograms")?;
        self.service.add(&o.service).context("merging histograms")?;
        self.requests += o.requests;
        self.items_asked += o.items_asked;
        self.items_found += o.items_found;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        Ok(())
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1)
}

/// A process's CPU time (utime + stime, every thread) and resident memory.
#[derive(Debug, Clone, Copy)]
pub struct CpuClock {
    cpu_s: f64,
    rss_kib: u64,
}

impl CpuClock {
    /// Reads /proc/PID/stat and /proc/PID/status.
    pub fn read(pid: u32) -> Result<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .with_context(|| format!("reading /proc/{pid}/stat (is --pid {pid} running?)"))?;
        // Fields after the parenthesised command name: state is the first,
        // utime the 12th and stime the 13th.
        let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = |k: usize| -> Result<f64> {
            f.get(k)
                .and_then(|v| v.parse::<u64>().ok())
                .map(|v| v as f64)
                .with_context(|| format!("/proc/{pid}/stat: no CPU time field {}", k + 3))
        };
        let cpu_s = (ticks(11)? + ticks(12)?) / clock_ticks_per_s();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .with_context(|| format!("reading /proc/{pid}/status"))?;
        let rss_kib = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        Ok(Self { cpu_s, rss_kib })
    }

    /// CPU time since `before`, with the resident memory now.
    pub fn since(&self, before: &Self) -> Self {
        Self {
            cpu_s: self.cpu_s - before.cpu_s,
            rss_kib: self.rss_kib,
        }
    }
}

/// A block device's counters from /proc/diskstats: reads completed,
/// sectors read (512 bytes each), and milliseconds weighted by the I/Os in
/// flight (so their difference over a window, divided by its length, is
/// the mean queue depth).
#[derive(Debug, Clone, Copy)]
pub struct DiskClock {
    reads: u64,
    sectors: u64,
    weighted_ms: u64,
    at: std::time::Instant,
}

impl DiskClock {
    /// Reads `name`'s line of /proc/diskstats (`/dev/` may prefix it).
    pub fn read(name: &str) -> Result<Self> {
        let name = name.strip_prefix("/dev/").unwrap_or(name);
        let text = std::fs::read_to_string("/proc/diskstats").context("reading /proc/diskstats")?;
        let at = std::time::Instant::now();
        let f: Vec<&str> = text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|f| f.get(2) == Some(&name))
            .with_context(|| format!("--disk {name}: no such device in /proc/diskstats"))?;
        // 1-based fields: 4 reads completed, 6 sectors read, 14 weighted ms.
        let n = |k: usize| -> Result<u64> {
            f.get(k - 1)
                .and_then(|v| v.parse().ok())
                .with_context(|| format!("/proc/diskstats: {name} has no field {k}"))
        };
        Ok(Self {
            reads: n(4)?,
            sectors: n(6)?,
            weighted_ms: n(14)?,
            at,
        })
    }

    /// The counters' growth since `before`, and the time between.
    pub fn since(&self, before: &Self) -> DiskWindow {
        DiskWindow {
            reads: self.reads.saturating_sub(before.reads),
            sectors: self.sectors.saturating_sub(before.sectors),
            // Printed as 32 bits by the kernel: it wraps.
            weighted_ms: (self.weighted_ms as u32)
                .wrapping_sub(before.weighted_ms as u32)
                .into(),
            seconds: self.at.duration_since(before.at).as_secs_f64(),
        }
    }
}

/// A device's reads over a window ([`DiskClock::since`]).
#[derive(Debug, Clone, Copy)]
pub struct DiskWindow {
    reads: u64,
    sectors: u64,
    weighted_ms: u64,
    seconds: f64,
}

#[allow(unsafe_code)]
fn clock_ticks_per_s() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

#[derive(Debug, Serialize)]
pub struct Latency {
    p50_us: u64,
    p90_us: u64,
    p99_us: u64,
    p999_us: u64,
    max_us: u64,
    mean_us: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Self {
        Self {
            p50_us: h.value_at_quantile(0.50),
            p90_us: h.value_at_quantile(0.90),
            p99_us: h.value_at_quantile(0.99),
            p999_us: h.value_at_quantile(0.999),
            max_us: h.max(),
            mean_us: h.mean(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct Report {
    call: String,
    mode: &'static str,
    rate: u64,
    concurrency: u32,
    connections: u32,
    seconds: u64,
    requests: u64,
    requests_per_s: f64,
    /// Hashes or ledgers asked for, and found.
    items_asked: u64,
    items_found: u64,
    items_per_s: f64,
    errors: BTreeMap<String, u64>,
    /// Corrected for coordinated omission when paced.
    latency: Latency,
    /// Send to answer only.
    service_latency: Latency,
    daemon_cpu_us_per_request: Option<f64>,
    daemon_cpu_us_per_item: Option<f64>,
    daemon_cpu_cores: Option<f64>,
    daemon_rss_kib: Option<u64>,
    client_cpu_us_per_request: f64,
    client_cpu_cores: f64,
    /// With --disk: the device's reads completed per item asked, KiB read
    /// per item, and mean queue depth, over the measured window (every
    /// process's reads of that device count).
    device_reads_per_item: Option<f64>,
    device_read_kib_per_item: Option<f64>,
    device_queue_depth: Option<f64>,
}

impl Report {
    pub fn new(
        a: &BenchQueryArgs,
        t: Tally,
        daemon: Option<CpuClock>,
        client: CpuClock,
        disk: Option<DiskWindow>,
    ) -> Self {
        let secs = a.seconds as f64;
        let per = |c: f64, n: u64| if n > 0 { c * 1e6 / n as f64 } else { 0.0 };
        let items = t.items_asked.max(1) as f64;
        Self {
            call: call_name(a.call, a.batch_hashes),
            mode: if a.rate > 0 { "paced" } else { "closed-loop" },
            rate: a.rate,
            concurrency: a.concurrency,
            connections: a.connections,
            seconds: a.seconds,
            requests: t.requests,
            requests_per_s: t.requests as f64 / secs,
            items_asked: t.items_asked,
            items_found: t.items_found,
            items_per_s: t.items_asked as f64 / secs,
            errors: t.errors,
            latency: Latency::of(&t.response),
            service_latency: Latency::of(&t.service),
            daemon_cpu_us_per_request: daemon.map(|d| per(d.cpu_s, t.requests)),
            daemon_cpu_us_per_item: daemon.map(|d| per(d.cpu_s, t.items_asked)),
            daemon_cpu_cores: daemon.map(|d| d.cpu_s / secs),
            daemon_rss_kib: daemon.map(|d| d.rss_kib),
            client_cpu_us_per_request: per(client.cpu_s, t.requests),
            client_cpu_cores: client.cpu_s / secs,
            device_reads_per_item: disk.map(|d| d.reads as f64 / items),
            device_read_kib_per_item: disk.map(|d| d.sectors as f64 / 2.0 / items),
            device_queue_depth: disk.map(|d| d.weighted_ms as f64 / (d.seconds * 1e3).max(1.0)),
        }
    }
}

fn call_name(c: BenchCall, batch: u32) -> String {
    match c {
        BenchCall::Get => "GetTransaction".into(),
        BenchCall::Batch => format!("BatchGetTransactions ({batch} hashes)"),
        BenchCall::TxLedger => "GetTransactionLedger".into(),
        BenchCall::Ledger => "GetLedger".into(),
        BenchCall::Stream => format!("StreamLedgers ({} ledgers)", super::STREAM_LEDGERS),
        BenchCall::Health => "Health/Check".into(),
    }
}

pub fn print(r: &Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    let pace = if r.rate > 0 {
        format!("paced at {} req/s", r.rate)
    } else {
        "closed loop".into()
    };
    println!(
        "{}: {} s, {pace}, {} in flight over {} connections",
        r.call, r.seconds, r.concurrency, r.connections
    );
    println!(
        "  {} requests, {:.0} req/s; {} of {} items found ({:.0} items/s); errors: {}",
        r.requests,
        r.requests_per_s,
        r.items_found,
        r.items_asked,
        r.items_per_s,
        if r.errors.is_empty() {
            "none".into()
        } else {
            format!("{:?}", r.errors)
        }
    );
    for (name, l) in [("latency", &r.latency), ("service", &r.service_latency)] {
        println!(
            "  {name:8} µs: p50 {} p90 {} p99 {} p999 {} max {} (mean {:.1})",
            l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us, l.mean_us
        );
    }
    if let (Some(req), Some(item), Some(cores)) = (
        r.daemon_cpu_us_per_request,
        r.daemon_cpu_us_per_item,
        r.daemon_cpu_cores,
    ) {
        println!(
            "  daemon CPU: {req:.1} µs/request, {item:.2} µs/item, {cores:.2} cores; RSS {} KiB",
            r.daemon_rss_kib.unwrap_or(0)
        );
    }
    println!(
        "  client CPU: {:.1} µs/request, {:.2} cores",
        r.client_cpu_us_per_request, r.client_cpu_cores
    );
    if let (Some(reads), Some(kib), Some(depth)) = (
        r.device_reads_per_item,
        r.device_read_kib_per_item,
        r.device_queue_depth,
    ) {
        println!("  disk: {reads:.2} reads/item, {kib:.1} KiB/item, queue depth {depth:.1}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/diskstats prints the weighted milliseconds as 32 bits: a
    /// window across its wrap still counts what passed.
    #[test]
    fn a_disk_window_counts_across_the_weighted_ms_wrap() {
        let t = std::time::Instant::now();
        let before = DiskClock {
            reads: 10,
            sectors: 100,
            weighted_ms: u64::from(u32::MAX - 5),
            at: t,
        };
        let after = DiskClock {
            reads: 25,
            sectors: 164,
            weighted_ms: 10,
            at: t + Duration::from_secs(2),
        };
        let w = after.since(&before);
        assert_eq!((w.reads, w.sectors, w.weighted_ms), (15, 64, 16));
        assert!((w.seconds - 2.0).abs() < 1e-9, "{}", w.seconds);
    }
}
