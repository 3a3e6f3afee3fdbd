//! Stellar RPC: a JSON-RPC 2.0 endpoint (`POST /`) that speaks
//! stellar-rpc's read methods over the whole history the store holds, so
//! stellar-rpc's own clients (the official SDKs, the Stellar Laboratory)
//! can use ledgerstore as a full-history backend.
//!
//! Methods: `getTransaction`, `getTransactions`, `getLedgers`,
//! `getLatestLedger`, `getEvents`, `getHealth`, `getNetwork`,
//! `getVersionInfo`. Response
//! shapes follow stellar-rpc v28 (go-stellar-sdk `protocols/rpc`) field for
//! field, including which fields are strings and which numbers.
//!
//! The transport is `jsonrpsee`'s server (HTTP only): named params, batch
//! requests, a request size limit (HTTP 413 past it); the accept loop is
//! ours, for limits on TCP connections (all of them, and those of one client
//! address: `ledgerstore_peers`) and a send deadline. Point lookups (`getTransaction`, and the calls that read only
//! the held range) run inline on the async worker while the daemon's read
//! placer, shared with the gRPC lookups, says reads are fast; everything
//! else runs on the daemon's read threads, under the same deadline as the gRPC
//! queries (`query.timeout_ms`), which the task checks as it goes.
//!
//! The calls that read whole ledgers (`getLedgers`, `getTransactions`,
//! `getLatestLedger`) are bounded: a few run at once and a bounded line
//! waits (`gate`), and a page is written straight into the response
//! text under a budget of bytes and of ledgers read (`budget`), ending
//! early, with a cursor, when the budget is spent. A batch request shares
//! one such budget, one deadline and one slot among its calls (`batch`).
//! Answers waiting for their client are bounded too (`send`): in bytes,
//! by `jsonrpc.max_unsent_bytes`, and in time, by
//! `jsonrpc.send_timeout_ms`. Errors map to JSON-RPC codes in one place
//! ([`error`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::server::middleware::rpc::RpcServiceBuilder;
use jsonrpsee::server::{BatchRequestConfig, Server, ServerConfig, stop_channel};
use ledgerstore_peers::{Past, Peer, Places, Refusals, Warning};
use ledgerstore_store::Reader;
use tokio::net::TcpListener;

mod batch;
mod bounds;
mod budget;
pub mod error;
mod gate;
mod methods;
mod metrics;
mod params;
mod reads;
mod send;
mod share;
mod xdr;

pub use budget::PageBudget;
pub use error::{RpcError, RpcResult};
pub use jsonrpsee::server::ServerHandle;
pub use metrics::RpcMetrics;
pub use reads::{ReadJob, ReadTicket, shared_read};

use crate::bounds::Bounds;
use crate::gate::Gate;
use crate::send::{Conn, DeadlineIo, SendClock, Unsent};

/// Where the methods find the store: the daemon opens it after the
/// listener is bound, and withdraws it during shutdown.
pub trait StoreAccess: Send + Sync + 'static {
    /// The open store (or read replica), or why there is none right now.
    fn store(&self) -> Result<Arc<dyn Reader>, String>;

    /// The event index `getEvents` reads, or why there is none (off, a
    /// replica, still opening). Default: none.
    fn events(&self) -> Result<Arc<ledgerstore_events::EventStore>, String> {
        Err("getEvents is not served here: no event index".into())
    }

    /// Runs `job`, a call's blocking read, where such reads run: the
    /// daemon's read threads (`query.read_threads`). Default: tokio's
    /// blocking pool ([`shared_read`]).
    fn spawn_read(&self, job: ReadJob) -> ReadTicket {
        shared_read(job)
    }

    /// Whether the next point lookup (`getTransaction` and the calls that
    /// read only the range held) should run inline on the async worker
    /// rather than on the read threads: the daemon answers with its gRPC
    /// placer, which runs reads inline while they are rarely slow and
    /// saves two thread wake-ups a lookup. Default: never.
    fn read_inline(&self) -> bool {
        false
    }

    /// Tells the placer how long one store read took.
    fn observe_read(&self, _took: Duration, _inline: bool) {}
}

/// What the endpoint needs besides the store.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The network's passphrase (`getNetwork`).
    pub passphrase: String,
    /// Deadline of one call's reads.
    pub timeout: Duration,
    /// Largest request body, bytes.
    pub max_request_bytes: u32,
    /// Largest response body, bytes.
    pub max_response_bytes: u32,
    /// What one `getLedgers` or `getTransactions` page may take.
    pub page: PageBudget,
    /// JSON bytes of one batch request's answers together.
    pub max_batch_bytes: usize,
    /// Ledger-reading calls (`getLedgers`, `getTransactions`,
    /// `getLatestLedger`) that run at once.
    pub max_heavy_calls: u32,
    /// Ledger-reading calls that may wait for a slot; more are refused.
    pub max_queued_heavy_calls: u32,
    /// Calls in one batch.
    pub max_batch_calls: u32,
    /// Concurrent TCP connections; more are answered 503 and closed.
    pub max_connections: u32,
    /// Concurrent TCP connections of one client address (an IPv6 address
    /// with its /64); more are answered 503 and closed. 0: not counted.
    pub max_connections_per_ip: u32,
    /// Bytes of answers built or waiting for their client, for the calls
    /// that read ledgers.
    pub max_unsent_bytes: u64,
    /// Time an answer has to reach its client from its start; past it the
    /// connection is closed. A connection idle for as long is closed too.
    pub send_timeout: Duration,
    /// `getVersionInfo`.
    pub version: VersionInfo,
}

/// What `getVersionInfo` reports.
#[derive(Debug, Clone)]
pub struct VersionInfo {
    /// ledgerstore's version.
    pub version: String,
    /// The commit it was built from ("" when unknown).
    pub commit_hash: String,
    /// When it was built (RFC 3339, "" when unknown).
    pub build_timestamp: String,
}

impl VersionInfo {
    /// This build's: the crate version, and the commit and time recorded
    /// by the build script.
    pub fn current() -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_string(),
            commit_hash: env!("LEDGERSTORE_COMMIT").to_string(),
            build_timestamp: env!("LEDGERSTORE_BUILD_TIME").to_string(),
        }
    }
}

/// The state every method shares.
pub(crate) struct Ctx {
    pub access: Box<dyn StoreAccess>,
    pub settings: Settings,
    pub metrics: RpcMetrics,
    pub bounds: Bounds,
    pub gate: Arc<Gate>,
    pub unsent: Unsent,
}

impl Ctx {
    pub(crate) fn store(&self) -> RpcResult<Arc<dyn Reader>> {
        self.access.store().map_err(RpcError::Unavailable)
    }
}

thread_local! {
    /// Whether this thread runs a call inline (on an async worker) rather
    /// than on the read threads: what [`Ctx::timed_read`] reports.
    static INLINE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl Ctx {
    /// Runs one store read and tells the placer how long it took.
    pub(crate) fn timed_read<T>(
        &self,
        f: impl FnOnce() -> Result<T, ledgerstore_store::StoreError>,
    ) -> RpcResult<T> {
        let t = std::time::Instant::now();
        let r = f();
        self.access
            .observe_read(t.elapsed(), INLINE.with(std::cell::Cell::get));
        Ok(r?)
    }
}

/// Binds `listen` and serves until the returned handle is stopped.
pub async fn serve(
    listen: &str,
    settings: Settings,
    access: impl StoreAccess,
    metrics: RpcMetrics,
) -> std::io::Result<(SocketAddr, ServerHandle)> {
    // jsonrpsee's own connection limit counts requests being handled (its
    // permit goes when the answer is built, not sent): connections are
    // counted here, on the accept loop, instead.
    let cfg = ServerConfig::builder()
        .http_only()
        .max_request_body_size(settings.max_request_bytes)
        .max_response_body_size(settings.max_response_bytes)
        .max_connections(u32::MAX)
        .set_batch_request_config(BatchRequestConfig::Limit(settings.max_batch_calls))
        .build();
    let gate = Arc::new(Gate::new(
        settings.max_heavy_calls as usize,
        settings.max_queued_heavy_calls as usize,
        metrics.heavy("running"),
        metrics.heavy("queued"),
    ));
    let unsent = Unsent::new(settings.max_unsent_bytes, metrics.unsent());
    let guard = {
        let (gate, metrics, unsent) = (gate.clone(), metrics.clone(), unsent.clone());
        let (timeout, budget) = (settings.timeout, settings.max_batch_bytes);
        let max_response = settings.max_response_bytes as usize;
        let max_calls = settings.max_batch_calls as usize;
        RpcServiceBuilder::new().layer_fn(move |service| batch::Guard {
            service,
            gate: gate.clone(),
            unsent: unsent.clone(),
            metrics: metrics.clone(),
            timeout,
            budget,
            max_response,
            max_calls,
        })
    };
    let builder = Server::builder()
        .set_config(cfg)
        .set_rpc_middleware(guard)
        .to_service_builder();
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let send_timeout = settings.send_timeout;
    // By `Past`: Limit, then PerIp.
    let limits = [
        (
            metrics.refused("limit"),
            settings.max_connections,
            "jsonrpc.max_connections",
        ),
        (
            metrics.refused("per_ip"),
            settings.max_connections_per_ip,
            "jsonrpc.max_connections_per_ip",
        ),
    ];
    let places = Places::new(settings.max_connections, settings.max_connections_per_ip);
    let ctx = Ctx {
        access: Box::new(access),
        settings,
        metrics,
        bounds: Bounds::default(),
        gate,
        unsent,
    };
    let methods: jsonrpsee::server::Methods = methods::module(ctx).into();
    let (stop, handle) = stop_channel();
    tokio::spawn(async move {
        let mut warned = [Warning::default(), Warning::default()];
        let mut accept_warned = Warning::default();
        let refusals = Refusals::default();
        let stopped = stop.clone().shutdown();
        tokio::pin!(stopped);
        loop {
            let sock = tokio::select! {
                r = listener.accept() => r,
                () = &mut stopped => break,
            };
            let (sock, peer) = match sock {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, mostly: wait, do not spin, and
                    // say so once in 10 s.
                    if accept_warned.due() {
                        tracing::warn!(error = %e, "Stellar RPC: accept failed");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let who = Peer::of(peer.ip());
            let held = match places.take(who) {
                Ok(held) => held,
                Err(past) => {
                    let i = match past {
                        Past::Limit => 0,
                        Past::PerIp => 1,
                    };
                    let (refused, max, setting) = &limits[i];
                    refused.inc();
                    if warned[i].due() {
                        tracing::warn!(
                            %peer,
                            counted_as = %who,
                            max,
                            setting,
                            "Stellar RPC: refusing connections: the setting's connections are \
                             open (counted in jsonrpc_connections_refused_total)"
                        );
                    }
                    let text = match past {
                        Past::PerIp => format!("too many connections from {who}"),
                        Past::Limit => "too many connections".to_string(),
                    };
                    let answer = too_many(&format!("{text}: {max} are open ({setting})"));
                    refusals.refuse(past, sock, answer);
                    continue;
                }
            };
            let _ = sock.set_nodelay(true);
            let clock = Arc::new(SendClock::new(send_timeout));
            let service = Conn {
                inner: builder.clone().build(methods.clone(), stop.clone()),
                clock: clock.clone(),
            };
            let io = DeadlineIo::new(sock, clock);
            let stopped = stop.clone().shutdown();
            tokio::spawn(async move {
                if let Err(e) = serve_http1(io, service, send_timeout, stopped).await {
                    tracing::debug!(error = %e, "Stellar RPC connection closed");
                }
                drop(held);
            });
        }
    });
    Ok((addr, handle))
}

/// The largest buffer hyper keeps for one connection (read, and answers
/// queued for the socket): what a connection holds beyond the byte
/// budget's count.
const CONN_BUF_BYTES: usize = 128 << 10;

/// Serves one connection with HTTP/1.1 only, until it closes; once
/// `stopped`, it finishes the request in hand and closes. (jsonrpsee's
/// `serve_with_graceful_shutdown` also speaks HTTP/2 without TLS, whose
/// flow control lets a client leave an answer unsent without ever filling
/// the socket, so no socket deadline would see it. Stellar RPC clients
/// speak HTTP/1.1.)
async fn serve_http1<S, B>(
    io: DeadlineIo,
    service: S,
    header_timeout: Duration,
    stopped: impl std::future::Future<Output = ()>,
) -> Result<(), send::BoxError>
where
    S: tower_service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<send::BoxError>,
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<send::BoxError>,
{
    let service = hyper_util::service::TowerToHyperService::new(service);
    // hyper's own header-read timeout, armed at the same setting as the
    // socket's deadlines (send.rs), which also cover a slow body.
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(CONN_BUF_BYTES)
        .serve_connection(hyper_util::rt::TokioIo::new(io), service);
    tokio::pin!(stopped, conn);
    tokio::select! {
        res = &mut conn => res.map_err(Into::into),
        () = &mut stopped => {
            conn.as_mut().graceful_shutdown();
            conn.await.map_err(Into::into)
        }
    }
}

/// The answer to a connection past `jsonrpc.max_connections` or
/// `jsonrpc.max_connections_per_ip` (`why`): HTTP 503 and a close.
fn too_many(why: &str) -> Vec<u8> {
    let text = format!("{why}\n");
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{text}",
        text.len()
    )
    .into_bytes()
}
