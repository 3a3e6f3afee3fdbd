//! `[jsonrpc]`: the Stellar RPC (JSON-RPC 2.0) endpoint.

use serde::{Deserialize, Serialize};

use crate::{ConfigError, invalid};

/// `[jsonrpc]`: a JSON-RPC 2.0 endpoint speaking stellar-rpc's read
/// methods (getTransaction, getTransactions, getLedgers, getLatestLedger,
/// getHealth, getNetwork, getVersionInfo) on its own listener.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct JsonRpcConfig {
    /// Serve it.
    pub enabled: bool,
    /// Listen address (`POST /`). stellar-rpc's port, on loopback.
    pub listen: String,
    /// Largest request body, bytes (stellar-rpc: 512 KiB).
    pub max_request_bytes: u32,
    /// Largest response body, bytes. A single ledger or transaction larger
    /// than this is refused with a message that says so.
    pub max_response_bytes: u32,
    /// Calls in one JSON-RPC batch request.
    pub max_batch_calls: u32,
    /// Concurrent TCP connections; one more is answered 503 and closed.
    pub max_connections: u32,
    /// Concurrent TCP connections of one client address (an IPv6 address
    /// counts with its /64); one more is answered 503 naming this setting
    /// and closed. An HTTP/1.1 client needs a connection for each request
    /// it has in flight. 0: off, as behind a proxy, whose connections all
    /// have its address.
    pub max_connections_per_ip: u32,
    /// JSON bytes of one `getLedgers` or `getTransactions` page, counted
    /// as it is written: the page ends (partial, with a cursor) before the
    /// item that would pass it. The first item may take up to
    /// `max_response_bytes`.
    pub max_page_bytes: u32,
    /// JSON bytes of one batch request's answers together (at most
    /// `max_response_bytes` less 1 KiB per `max_batch_calls`). The calls
    /// of a batch run one after another; a page inside a batch ends at
    /// what is left, and once a call finds no room the later ones are
    /// refused unrun with a message that says so. A batch that reads
    /// ledgers runs in one of the `max_heavy_calls` slots.
    pub max_batch_bytes: u32,
    /// Ledgers one `getLedgers` or `getTransactions` call reads; the page
    /// ends there, with a cursor.
    pub max_page_ledgers: u32,
    /// Calls that read whole ledgers (`getLedgers`, `getTransactions`,
    /// `getLatestLedger`) running at once. `getTransaction` is not one.
    pub max_heavy_calls: u32,
    /// Such calls waiting for a slot (until `query.timeout_ms`); more are
    /// refused at once with a "server busy" error.
    pub max_queued_heavy_calls: u32,
    /// Bytes of answers of those calls (and of batches holding one) that
    /// are being built or wait for their client to read them: a call
    /// reserves room for its largest answer (`max_page_bytes`, a batch
    /// `max_batch_bytes`) before it reads, waiting until `query.timeout_ms`
    /// and then refused with a "server busy" error; the room, fitted to
    /// the answer, is held until the client has read it. At least
    /// `max_page_bytes` and `max_batch_bytes`.
    pub max_unsent_bytes: u64,
    /// Time an answer has to reach its client from when it starts; past
    /// it, a client that still has not read it loses its connection and
    /// the daemon the answer. A connection idle (no request being handled,
    /// no answer being sent) for as long is closed too.
    pub send_timeout_ms: u64,
}

impl JsonRpcConfig {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !(1024..=16 << 20).contains(&self.max_request_bytes) {
            return Err(invalid(
                "jsonrpc.max_request_bytes",
                self.max_request_bytes,
                "1024 to 16777216 (stellar-rpc uses 524288)",
            ));
        }
        if self.max_response_bytes < 1 << 20 {
            return Err(invalid(
                "jsonrpc.max_response_bytes",
                self.max_response_bytes,
                "at least 1048576 (a getLedgers page holds whole ledgers)",
            ));
        }
        if !(64 << 10..=self.max_response_bytes).contains(&self.max_page_bytes) {
            return Err(invalid(
                "jsonrpc.max_page_bytes",
                self.max_page_bytes,
                format!(
                    "65536 to jsonrpc.max_response_bytes ({})",
                    self.max_response_bytes
                ),
            ));
        }
        // A batch's answers may pass its budget by each call's envelope
        // and refusal text (under 1 KiB a call): room for that is kept
        // below the response limit, or the whole batch would be lost.
        let room = (self.max_batch_calls as u64).saturating_mul(1024);
        let most = (self.max_response_bytes as u64).saturating_sub(room);
        if !(64 << 10..=most).contains(&(self.max_batch_bytes as u64)) {
            return Err(invalid(
                "jsonrpc.max_batch_bytes",
                self.max_batch_bytes,
                format!(
                    "65536 to jsonrpc.max_response_bytes ({}) less 1024 bytes for each of \
                     jsonrpc.max_batch_calls ({}): {most}",
                    self.max_response_bytes, self.max_batch_calls
                ),
            ));
        }
        for (key, v, most) in [
            ("jsonrpc.max_batch_calls", self.max_batch_calls, u32::MAX),
            ("jsonrpc.max_connections", self.max_connections, u32::MAX),
            ("jsonrpc.max_page_ledgers", self.max_page_ledgers, 10_000),
            ("jsonrpc.max_heavy_calls", self.max_heavy_calls, 1024),
        ] {
            if !(1..=most).contains(&v) {
                return Err(invalid(key, v, format!("1 to {most}")));
            }
        }
        // At or above max_connections it is off in effect: allowed, so that
        // lowering max_connections alone stays valid.
        if self.max_connections_per_ip > 1_000_000 {
            return Err(invalid(
                "jsonrpc.max_connections_per_ip",
                self.max_connections_per_ip,
                "0 (off) to 1000000",
            ));
        }
        let least = self.max_page_bytes.max(self.max_batch_bytes) as u64;
        if !(least..=1 << 40).contains(&self.max_unsent_bytes) {
            return Err(invalid(
                "jsonrpc.max_unsent_bytes",
                self.max_unsent_bytes,
                format!(
                    "jsonrpc.max_page_bytes and jsonrpc.max_batch_bytes ({least}) to \
                     1099511627776"
                ),
            ));
        }
        if !(100..=3_600_000).contains(&self.send_timeout_ms) {
            return Err(invalid(
                "jsonrpc.send_timeout_ms",
                self.send_timeout_ms,
                "100 to 3600000",
            ));
        }
        if self.max_queued_heavy_calls > 100_000 {
            return Err(invalid(
                "jsonrpc.max_queued_heavy_calls",
                self.max_queued_heavy_calls,
                "0 to 100000",
            ));
        }
        Ok(())
    }
}

impl Default for JsonRpcConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            listen: "127.0.0.1:8000".into(),
            max_request_bytes: 512 << 10,
            max_response_bytes: 64 << 20,
            max_batch_calls: 100,
            max_connections: 1000,
            max_connections_per_ip: 100,
            max_page_bytes: 8 << 20,
            max_batch_bytes: 16 << 20,
            max_page_ledgers: 100,
            max_heavy_calls: 4,
            max_queued_heavy_calls: 64,
            max_unsent_bytes: 64 << 20,
            send_timeout_ms: 30_000,
        }
    }
}
