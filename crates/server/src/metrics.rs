//! Prometheus metrics (every one is listed in `docs/metrics.md`) and the
//! `/metrics` HTTP endpoint.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use ledgerstore_db_api::EngineStats;
use ledgerstore_store::{BatchReport, Ledgerstore};
use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Every metric of the daemon.
pub struct Metrics {
    registry: Registry,
    grpc_started: IntCounterVec,
    grpc_handled: IntCounterVec,
    grpc_seconds: HistogramVec,
    grpc_received: IntCounterVec,
    grpc_sent: IntCounterVec,
    phase_seconds: HistogramVec,
    stage_seconds: HistogramVec,
    ingested_ledgers: IntCounter,
    ingested_txs: IntCounter,
    ingested_batches: IntCounter,
    high_water_mark: IntGauge,
    last_close_time: IntGauge,
    store_keys: IntGaugeVec,
    store_disk_bytes: IntGaugeVec,
    store_written: IntGaugeVec,
    rocks_pending: IntGaugeVec,
    rocks_l0: IntGaugeVec,
    rocks_files: IntGaugeVec,
    rocks_shards: IntGaugeVec,
    mdbx_pages: IntGaugeVec,
    mdbx_free_pages: IntGaugeVec,
    mdbx_reader_lag: IntGaugeVec,
    mdbx_oldest_read: prometheus::GaugeVec,
    mdbx_read_timeouts: IntGaugeVec,
    stellar_ledgers: IntCounterVec,
    stellar_seconds: HistogramVec,
    segments: IntGaugeVec,
    segment_builds: IntGauge,
    segment_build_seconds: prometheus::Gauge,
    segment_build_failed: IntGauge,
    dict_version: IntGauge,
    writes_refused: IntGauge,
    /// `ledgerstore_query_reads_total` for `inline` and `pool`, resolved
    /// once: they are counted on every lookup.
    query_reads: [IntCounter; 2],
    query_slow_reads: prometheus::Gauge,
    reads: crate::reads::ReadGauges,
    connections: crate::listener::ConnMetrics,
}

const GRPC_LABELS: [&str; 3] = ["grpc_type", "grpc_service", "grpc_method"];

fn counter(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntCounterVec> {
    let c = IntCounterVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(c.clone()))?;
    Ok(c)
}

fn gauge(r: &Registry, name: &str, help: &str, labels: &[&str]) -> prometheus::Result<IntGaugeVec> {
    let g = IntGaugeVec::new(Opts::new(name, help), labels)?;
    r.register(Box::new(g.clone()))?;
    Ok(g)
}

fn histogram(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: Vec<f64>,
) -> prometheus::Result<HistogramVec> {
    let h = HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels)?;
    r.register(Box::new(h.clone()))?;
    Ok(h)
}

impl Metrics {
    /// Registers every metric, and the process collector.
    pub fn new() -> prometheus::Result<Self> {
        let r = Registry::new();
        #[cfg(target_os = "linux")]
        r.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        let rpc_buckets = prometheus::exponential_buckets(0.0001, 4.0, 11)?;
        let batch_buckets = prometheus::exponential_buckets(0.001, 2.5, 16)?;
        let extract_buckets = prometheus::exponential_buckets(0.0001, 2.5, 14)?;
        let one = |name: &str, help: &str| -> prometheus::Result<IntCounter> {
            let c = IntCounter::new(name, help)?;
            r.register(Box::new(c.clone()))?;
            Ok(c)
        };
        let one_gauge = |name: &str, help: &str| -> prometheus::Result<IntGauge> {
            let g = IntGauge::new(name, help)?;
            r.register(Box::new(g.clone()))?;
            Ok(g)
        };
        let grpc_code: Vec<&str> = GRPC_LABELS.iter().copied().chain(["grpc_code"]).collect();
        Ok(Self {
            grpc_started: counter(
                &r,
                "grpc_server_started_total",
                "RPCs started on the server.",
                &GRPC_LABELS,
            )?,
            grpc_handled: counter(
                &r,
                "grpc_server_handled_total",
                "RPCs completed on the server, by status code.",
                &grpc_code,
            )?,
            grpc_seconds: histogram(
                &r,
                "grpc_server_handling_seconds",
                "Time from RPC start to its status.",
                &GRPC_LABELS,
                rpc_buckets,
            )?,
            grpc_received: counter(
                &r,
                "grpc_server_msg_received_total",
                "Stream messages received.",
                &GRPC_LABELS,
            )?,
            grpc_sent: counter(
                &r,
                "grpc_server_msg_sent_total",
                "Stream messages sent.",
                &GRPC_LABELS,
            )?,
            phase_seconds: histogram(
                &r,
                "ledgerstore_ingest_phase_seconds",
                "Per-batch I/O time of one store, by phase (write, commit, compact).",
                &["table", "engine", "phase"],
                batch_buckets.clone(),
            )?,
            stage_seconds: histogram(
                &r,
                "ledgerstore_ingest_stage_seconds",
                "Per-batch time by stage (source, compress, compute, io, total).",
                &["stage"],
                batch_buckets,
            )?,
            ingested_ledgers: one("ledgerstore_ingested_ledgers_total", "Ledgers committed.")?,
            ingested_txs: one(
                "ledgerstore_ingested_transactions_total",
                "Transactions committed.",
            )?,
            ingested_batches: one(
                "ledgerstore_ingest_batches_total",
                "Store batches committed.",
            )?,
            high_water_mark: one_gauge("ledgerstore_high_water_mark", "Last durable ledger seq.")?,
            last_close_time: one_gauge(
                "ledgerstore_high_water_mark_close_time_seconds",
                "Close time (unix seconds) of the last durable ledger; lag = time() - this.",
            )?,
            store_keys: gauge(
                &r,
                "ledgerstore_store_keys",
                "Keys committed to a table.",
                &["table", "engine"],
            )?,
            store_disk_bytes: gauge(
                &r,
                "ledgerstore_store_disk_bytes",
                "Bytes of a table's files on disk.",
                &["table", "engine"],
            )?,
            store_written: gauge(
                &r,
                "ledgerstore_store_written_bytes",
                "Bytes the table's engine wrote to storage since the daemon opened it.",
                &["table", "engine"],
            )?,
            rocks_pending: gauge(
                &r,
                "ledgerstore_rocksdb_pending_compaction_bytes",
                "RocksDB's estimate of bytes pending compaction.",
                &["table"],
            )?,
            rocks_l0: gauge(
                &r,
                "ledgerstore_rocksdb_l0_files",
                "RocksDB SST files in level 0.",
                &["table"],
            )?,
            rocks_files: gauge(
                &r,
                "ledgerstore_rocksdb_sst_files",
                "RocksDB SST files of a table, every level and shard.",
                &["table"],
            )?,
            rocks_shards: gauge(
                &r,
                "ledgerstore_rocksdb_shards",
                "Column families (shards) a table sharded by ledger range has made, one for each range of 2^18 ledgers written.",
                &["table"],
            )?,
            mdbx_pages: gauge(
                &r,
                "ledgerstore_mdbx_pages",
                "MDBX pages of a table (branch + leaf + overflow).",
                &["table"],
            )?,
            mdbx_free_pages: gauge(
                &r,
                "ledgerstore_mdbx_free_pages",
                "MDBX pages on the free list.",
                &["table"],
            )?,
            mdbx_reader_lag: gauge(
                &r,
                "ledgerstore_mdbx_reader_lag",
                "Commits between the oldest MDBX reader's snapshot and the newest.",
                &["table"],
            )?,
            mdbx_oldest_read: {
                let g = prometheus::GaugeVec::new(
                    Opts::new(
                        "ledgerstore_mdbx_oldest_read_seconds",
                        "Age of the oldest of our MDBX read transactions open at the last refresh (0: none).",
                    ),
                    &["table"],
                )?;
                r.register(Box::new(g.clone()))?;
                g
            },
            mdbx_read_timeouts: gauge(
                &r,
                "ledgerstore_mdbx_read_timeouts",
                "MDBX reads that gave up at mdbx.max_read_txn_ms since the daemon started.",
                &["table"],
            )?,
            segments: gauge(
                &r,
                "ledgerstore_segments",
                "Layout indexed: immutable index segments, by what (count, keys, bytes, probes: most index probes a lookup makes, repairing: ranges being rebuilt, merges: merges and repairs since start, failures: failed steps in a row).",
                &["what"],
            )?,
            segment_builds: one_gauge(
                "ledgerstore_segment_builds",
                "Layout indexed: segments built and swapped in since the daemon started.",
            )?,
            segment_build_seconds: {
                let g = prometheus::Gauge::new(
                    "ledgerstore_segment_build_seconds",
                    "Layout indexed: seconds spent building segments since the daemon started (scan, MPH, write, swap, hot drop).",
                )?;
                r.register(Box::new(g.clone()))?;
                g
            },
            segment_build_failed: one_gauge(
                "ledgerstore_segment_build_failed",
                "Layout indexed: 1 while the last segment step (build, merge, repair) failed and is being retried with backoff (the old ranges keep serving; see the log).",
            )?,
            dict_version: one_gauge(
                "ledgerstore_dict_version",
                "Layout indexed: the tx-body dictionary version new records use (0: none yet).",
            )?,
            writes_refused: one_gauge(
                "ledgerstore_writes_refused",
                "1 when a MARK write failed and ingest is refused until the daemon restarts.",
            )?,
            query_reads: {
                let c = counter(
                    &r,
                    "ledgerstore_query_reads_total",
                    "Single-key query reads by where they ran (inline on an async worker, or pool: the read threads).",
                    &["placement"],
                )?;
                [
                    c.with_label_values(&["inline"]),
                    c.with_label_values(&["pool"]),
                ]
            },
            query_slow_reads: {
                let g = prometheus::Gauge::new(
                    "ledgerstore_query_slow_read_ratio",
                    "Moving ratio of single-key reads longer than query.inline_read_us; reads run inline while it is under 0.01.",
                )?;
                r.register(Box::new(g.clone()))?;
                g
            },
            reads: crate::reads::ReadGauges {
                waiting: one_gauge(
                    "ledgerstore_reads_waiting",
                    "Blocking reads (gRPC and Stellar RPC) waiting in line for a read thread (query.read_threads).",
                )?,
                running: one_gauge(
                    "ledgerstore_reads_running",
                    "Blocking reads running on the read threads (at most query.read_threads).",
                )?,
            },
            connections: {
                let closed = counter(
                    &r,
                    "ledgerstore_grpc_connections_refused_total",
                    "gRPC connections refused or closed by the daemon: reason limit (grpc.max_connections were open), per_ip (grpc.max_connections_per_ip of the client's address were open), handshake_timeout (no TLS handshake and HTTP/2 preface within grpc.handshake_timeout_ms), tls (the TLS handshake failed), send_timeout (owed Query answers and wrote no piece of them within grpc.send_timeout_ms).",
                    &["reason"],
                )?;
                crate::listener::ConnMetrics {
                    open: one_gauge(
                        "ledgerstore_grpc_connections",
                        "gRPC connections open (each holds one of grpc.max_connections places).",
                    )?,
                    refused: closed.with_label_values(&["limit"]),
                    refused_per_ip: closed.with_label_values(&["per_ip"]),
                    timed_out: closed.with_label_values(&["handshake_timeout"]),
                    tls_failed: closed.with_label_values(&["tls"]),
                    send_timed_out: closed.with_label_values(&["send_timeout"]),
                    unsent: one_gauge(
                        "ledgerstore_grpc_unsent_bytes",
                        "Bytes of grpc.max_unsent_bytes taken by Query answers built and not yet written to their connections (KiB granularity).",
                    )?,
                }
            },
            stellar_ledgers: counter(
                &r,
                "ledgerstore_stellar_ledgers_total",
                "Raw LedgerCloseMeta received over gRPC, by result (extracted, refused).",
                &["result"],
            )?,
            stellar_seconds: histogram(
                &r,
                "ledgerstore_stellar_extract_seconds",
                "Time to decode one raw LedgerCloseMeta and extract its transactions.",
                &[],
                extract_buckets,
            )?,
            registry: r,
        })
    }

    /// One single-key query read ran inline (or on the read threads);
    /// `slow_ratio` is the placer's moving ratio of slow reads after it.
    pub fn query_read(&self, inline: bool, slow_ratio: f64) {
        self.query_reads[usize::from(!inline)].inc();
        self.query_slow_reads.set(slow_ratio);
    }

    /// The read threads' gauges, for the read pool.
    pub(crate) fn read_gauges(&self) -> crate::reads::ReadGauges {
        self.reads.clone()
    }

    /// The gRPC listener's metrics.
    pub(crate) fn connection_metrics(&self) -> crate::listener::ConnMetrics {
        self.connections.clone()
    }

    /// Starts timing one RPC.
    pub fn rpc(
        self: &Arc<Self>,
        kind: &'static str,
        service: &'static str,
        method: &'static str,
    ) -> Rpc {
        self.grpc_started
            .with_label_values(&[kind, service, method])
            .inc();
        Rpc {
            metrics: self.clone(),
            labels: [kind, service, method],
            start: Instant::now(),
        }
    }

    /// Counts one received stream message.
    pub fn received(&self, service: &str, method: &str) {
        self.grpc_received
            .with_label_values(&["bidi_stream", service, method])
            .inc();
    }

    /// Counts one sent stream message.
    pub fn sent(&self, kind: &str, service: &str, method: &str) {
        self.grpc_sent
            .with_label_values(&[kind, service, method])
            .inc();
    }

    /// Records one raw Stellar ledger decoded (or refused) by the server.
    pub fn stellar(&self, extracted: bool, seconds: f64) {
        let result = if extracted { "extracted" } else { "refused" };
        self.stellar_ledgers.with_label_values(&[result]).inc();
        self.stellar_seconds
            .with_label_values(&[] as &[&str])
            .observe(seconds);
    }

    /// Records a committed batch.
    pub fn batch(&self, r: &BatchReport, close_time: u64) {
        for s in &r.stores {
            for (phase, v) in [
                ("write", s.write_s),
                ("commit", s.commit_s),
                ("compact", s.compact_s),
            ] {
                self.phase_seconds
                    .with_label_values(&[s.table, s.engine, phase])
                    .observe(v);
            }
        }
        for (stage, v) in [
            ("source", r.source_s),
            ("compress", r.compress_s),
            ("compute", r.compute_s),
            ("io", r.io_s),
            ("total", r.total_s),
        ] {
            self.stage_seconds.with_label_values(&[stage]).observe(v);
        }
        self.ingested_ledgers.inc_by(r.ledgers);
        self.ingested_txs.inc_by(r.txs);
        self.ingested_batches.inc();
        self.high_water_mark.set(i64::from(r.last_ledger));
        self.last_close_time
            .set(i64::try_from(close_time).unwrap_or(i64::MAX));
    }

    /// Refreshes the store gauges.
    pub fn refresh(&self, store: &Ledgerstore) {
        if let Some(last) = store.last_ledger() {
            self.high_water_mark.set(i64::from(last));
        }
        let Ok(stats) = store.stats() else { return };
        let v = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
        for t in &stats.tables {
            let e = &t.engine_stats;
            self.store_keys
                .with_label_values(&[t.table, t.engine])
                .set(v(t.keys));
            self.store_disk_bytes
                .with_label_values(&[t.table, t.engine])
                .set(v(e.disk_bytes));
            if let Some(w) = e.bytes_written {
                self.store_written
                    .with_label_values(&[t.table, t.engine])
                    .set(v(w));
            }
            if let Some(p) = e.pending_compaction_bytes {
                self.rocks_pending.with_label_values(&[t.table]).set(v(p));
            }
            if let Some(l0) = e.files_per_level.first() {
                self.rocks_l0.with_label_values(&[t.table]).set(v(*l0));
                self.rocks_files
                    .with_label_values(&[t.table])
                    .set(v(sst_files(e)));
            }
            if let Some(n) = e.shards {
                self.rocks_shards.with_label_values(&[t.table]).set(v(n));
            }
            if let Some(p) = e.pages {
                self.mdbx_pages.with_label_values(&[t.table]).set(v(p));
            }
            if let Some(p) = e.free_pages {
                self.mdbx_free_pages.with_label_values(&[t.table]).set(v(p));
            }
            if let Some(a) = e.oldest_read_secs {
                self.mdbx_oldest_read.with_label_values(&[t.table]).set(a);
            }
            if let Some(n) = e.read_timeouts {
                self.mdbx_read_timeouts
                    .with_label_values(&[t.table])
                    .set(v(n));
            }
            if let Some(l) = e.reader_lag {
                self.mdbx_reader_lag.with_label_values(&[t.table]).set(v(l));
            }
        }
        if let Some(seg) = &stats.segments {
            let count = seg.segments.len() as u64;
            for (what, x) in [
                ("count", count),
                ("keys", seg.keys),
                ("bytes", seg.file_bytes),
                ("probes", seg.probes as u64),
                ("repairing", seg.repairing.len() as u64),
                ("merges", seg.merges),
                ("failures", u64::from(seg.failures)),
                ("scrubs", seg.scrubs),
                ("hot_keys", seg.hot_keys),
                ("hot_map_bytes", seg.hot_map_bytes),
                ("filter_bytes", seg.filter_bytes),
            ] {
                self.segments.with_label_values(&[what]).set(v(x));
            }
            self.segment_builds.set(v(seg.builds));
            self.segment_build_seconds.set(seg.build_total_s);
            self.segment_build_failed.set(i64::from(seg.failures > 0));
        }
        if let Some(d) = &stats.dictionaries {
            self.dict_version.set(i64::from(d.current));
        }
        self.writes_refused
            .set(i64::from(stats.writes_refused.is_some()));
    }

    /// The registry, for metrics registered elsewhere (the follower's).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "encoding metrics failed");
        }
        out
    }
}

/// One RPC being timed; records `grpc_server_handled_total` when finished.
pub struct Rpc {
    metrics: Arc<Metrics>,
    labels: [&'static str; 3],
    start: Instant,
}

impl Rpc {
    /// Records the outcome.
    pub fn finish(self, code: tonic::Code) {
        let [k, s, m] = self.labels;
        let code = format!("{code:?}");
        // tonic's Debug names match grpc-go's names except for `Ok`.
        let code = if code == "Ok" { "OK".to_string() } else { code };
        self.metrics
            .grpc_handled
            .with_label_values(&[k, s, m, &code])
            .inc();
        self.metrics
            .grpc_seconds
            .with_label_values(&self.labels)
            .observe(self.start.elapsed().as_secs_f64());
    }

    /// Records the outcome of a result.
    pub fn finish_with<T>(self, r: &Result<T, tonic::Status>) {
        self.finish(match r {
            Ok(_) => tonic::Code::Ok,
            Err(s) => s.code(),
        });
    }
}

/// Serves `/metrics` on `listener` until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    metrics: Arc<Metrics>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.changed() => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                async move {
                    match req.uri().path() {
                        "/metrics" => Response::builder()
                            .header("content-type", "text/plain; version=0.0.4")
                            .body(Full::new(Bytes::from(metrics.render()))),
                        _ => Response::builder()
                            .status(StatusCode::NOT_FOUND)
                            .body(Full::new(Bytes::from_static(b"not found; try /metrics\n"))),
                    }
                }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!(error = %e, "metrics connection ended");
            }
        });
    }
}

/// Binds the metrics listener.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

/// A RocksDB table's SST files: every level's (of every shard, which the
/// engine sums per level).
fn sst_files(e: &EngineStats) -> u64 {
    e.files_per_level
        .iter()
        .copied()
        .fold(0, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_s_files_are_summed_over_every_level() {
        let e = EngineStats {
            files_per_level: vec![2, 0, 1, 0, 0, 0, 3],
            ..Default::default()
        };
        assert_eq!(sst_files(&e), 6);
        assert_eq!(sst_files(&EngineStats::default()), 0);
    }
}
