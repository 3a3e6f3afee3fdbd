//! Per-method metrics, named like the gRPC ones
//! (`grpc_server_handled_total`, `grpc_server_handling_seconds`).

use std::time::Instant;

use prometheus::{
    HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

use crate::error::RpcResult;

/// Counters and timings of every call, by method.
#[derive(Debug, Clone)]
pub struct RpcMetrics {
    handled: IntCounterVec,
    seconds: HistogramVec,
    heavy: IntGaugeVec,
    unsent: IntGauge,
    refused: IntCounterVec,
}

impl RpcMetrics {
    /// Registers the families in `r`.
    pub fn new(r: &Registry) -> prometheus::Result<Self> {
        let handled = IntCounterVec::new(
            Opts::new(
                "jsonrpc_server_handled_total",
                "Stellar RPC (JSON-RPC) calls completed, by method and JSON-RPC error code \
                 (0: success).",
            ),
            &["method", "code"],
        )?;
        let seconds = HistogramVec::new(
            HistogramOpts::new(
                "jsonrpc_server_handling_seconds",
                "Time from a Stellar RPC call's start to its answer, by method.",
            )
            .buckets(prometheus::exponential_buckets(0.0001, 4.0, 11)?),
            &["method"],
        )?;
        let heavy = IntGaugeVec::new(
            Opts::new(
                "jsonrpc_heavy_calls",
                "Stellar RPC calls that read ledgers (getLedgers, getTransactions, getEvents, \
                 getLatestLedger), by state: running (holding one of jsonrpc.max_heavy_calls \
                 slots, until the work has really stopped) or queued.",
            ),
            &["state"],
        )?;
        let unsent = IntGauge::new(
            "jsonrpc_unsent_bytes",
            "Bytes of the jsonrpc.max_unsent_bytes budget taken: room reserved by the \
             ledger-reading calls being built, and answers not yet read by their clients.",
        )?;
        let refused = IntCounterVec::new(
            Opts::new(
                "jsonrpc_connections_refused_total",
                "Stellar RPC connections answered 503 and closed at accept, by reason: limit \
                 (jsonrpc.max_connections were open) or per_ip (jsonrpc.max_connections_per_ip \
                 of the client's address were open).",
            ),
            &["reason"],
        )?;
        r.register(Box::new(refused.clone()))?;
        r.register(Box::new(handled.clone()))?;
        r.register(Box::new(unsent.clone()))?;
        r.register(Box::new(seconds.clone()))?;
        r.register(Box::new(heavy.clone()))?;
        Ok(Self {
            handled,
            seconds,
            heavy,
            unsent,
            refused,
        })
    }

    /// The counter of connections refused for `reason` (`limit`,
    /// `per_ip`).
    pub(crate) fn refused(&self, reason: &str) -> IntCounter {
        self.refused.with_label_values(&[reason])
    }

    /// The gauge of heavy calls in `state` (`running`, `queued`).
    pub(crate) fn heavy(&self, state: &str) -> IntGauge {
        self.heavy.with_label_values(&[state])
    }

    /// The gauge of the answer bytes budget taken (`jsonrpc_unsent_bytes`).
    pub(crate) fn unsent(&self) -> IntGauge {
        self.unsent.clone()
    }

    /// Records one call of `method` that started at `start`.
    pub(crate) fn record<T>(&self, method: &str, start: Instant, out: &RpcResult<T>) {
        let code = match out {
            Ok(_) => 0,
            Err(e) => e.code(),
        };
        self.record_code(method, start, code);
    }

    /// Records one call of `method` that started at `start` and ended
    /// with JSON-RPC `code` (0: success).
    pub(crate) fn record_code(&self, method: &str, start: Instant, code: i32) {
        self.handled
            .with_label_values(&[method, &code.to_string()])
            .inc();
        self.seconds
            .with_label_values(&[method])
            .observe(start.elapsed().as_secs_f64());
    }
}
