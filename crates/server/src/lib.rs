//! The ledgerstore daemon: gRPC Ingest and Query services, gRPC health and
//! reflection, Prometheus metrics, and clean shutdown.
//!
//! The daemon starts listening at once with health NOT_SERVING, opens the
//! stores (rolling back any interrupted batch), then turns SERVING. On
//! SIGINT/SIGTERM it stops accepting work, lets every ingest stream commit
//! the batch in hand and send its final ack, and closes the stores.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ledgerstore_config::Config;
use ledgerstore_proto::v1 as pb;
use ledgerstore_store::{Ledgerstore, StoreError};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tonic::transport::Server;

use crate::reads::ReadPool;

mod admin;
mod answers;
mod cold_metrics;
pub mod convert;
mod events_metrics;
pub mod follow;
mod ingest;
mod listener;
pub mod metrics;
mod placement;
mod publish;
mod query;
mod query_guard;
mod reads;
mod replica_events;
mod state;
pub mod status;

pub use follow::{Follow, RequestCount};
pub use ledgerstore_cold::Replica;
pub use metrics::Metrics;
pub use publish::{Publish, local_events};
pub use query_guard::query_request_bytes;
pub use state::AppState;

/// Failures that stop the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// A listener could not be bound.
    #[error("binding {what} on {addr}: {source}")]
    Bind {
        /// Which listener.
        what: &'static str,
        /// Address.
        addr: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// The stores could not be opened.
    #[error("opening the stores: {0}")]
    Open(#[from] StoreError),
    /// The configuration is unusable.
    #[error("{0}")]
    Config(String),
    /// The gRPC transport failed.
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Where the daemon listens, once bound.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// gRPC.
    pub grpc: SocketAddr,
    /// Prometheus `/metrics`, when enabled.
    pub metrics: Option<SocketAddr>,
    /// The Stellar RPC (JSON-RPC) endpoint, when enabled.
    pub jsonrpc: Option<SocketAddr>,
}

/// Opens a data dir's stores (on a blocking thread).
pub type Opener = Box<dyn FnOnce() -> Result<Ledgerstore, StoreError> + Send + 'static>;

/// What the daemon serves.
pub enum Serving {
    /// A data dir: the writer.
    Store {
        /// Opens its stores.
        open: Opener,
        /// A data lake to follow once they are open.
        follow: Option<Follow>,
        /// Where to publish closed ranges, if anywhere.
        publish: Option<Publish>,
    },
    /// A read replica of the ranges a writer published.
    Replica {
        /// The replica (its cache is open; it follows once serving).
        replica: Arc<Replica>,
        /// How often it looks for a newer manifest.
        poll: Duration,
    },
}

/// Runs the daemon until `shutdown` resolves; `on_bound` is told the bound
/// addresses.
pub async fn serve<F>(
    cfg: Config,
    serving: Serving,
    on_bound: impl FnOnce(Bound),
    shutdown: F,
) -> Result<(), ServeError>
where
    F: Future<Output = ()> + Send + 'static,
{
    let cfg = Arc::new(cfg);
    let token = cfg
        .ingest_token()
        .map_err(|e| ServeError::Config(e.to_string()))?;
    let metrics = Arc::new(Metrics::new().map_err(|e| ServeError::Config(e.to_string()))?);
    let (stop_tx, stop_rx) = watch::channel(false);
    let reads = ReadPool::new(cfg.query.read_threads, metrics.read_gauges())
        .map_err(|e| ServeError::Config(format!("starting the read threads: {e}")))?;
    let state = Arc::new(match &serving {
        Serving::Store { .. } => {
            AppState::new(cfg.clone(), metrics.clone(), stop_rx.clone(), reads)
        }
        Serving::Replica { .. } => {
            AppState::new_replica(cfg.clone(), metrics.clone(), stop_rx.clone(), reads)
        }
    });

    let grpc_listener = bind("gRPC", &cfg.grpc.listen).await?;
    let grpc_addr = local_addr(&grpc_listener, &cfg.grpc.listen)?;
    let metrics_addr = if cfg.metrics.enabled {
        let l = bind("metrics", &cfg.metrics.listen).await?;
        let addr = local_addr(&l, &cfg.metrics.listen)?;
        tokio::spawn(metrics::serve(l, metrics.clone(), stop_rx.clone()));
        Some(addr)
    } else {
        None
    };

    let placer = Arc::new(placement::ReadPlacer::new(cfg.query.inline_read_us));
    let jsonrpc = if cfg.jsonrpc.enabled {
        let access = RpcStore {
            state: state.clone(),
            placer: placer.clone(),
            metrics: metrics.clone(),
        };
        Some(start_jsonrpc(&cfg, access, &metrics).await?)
    } else {
        None
    };

    let (health, health_svc) = tonic_health::server::health_reporter();
    set_health(&health, tonic_health::ServingStatus::NotServing).await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(pb::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| ServeError::Config(format!("reflection: {e}")))?;

    let max_msg = cfg.grpc.max_message_bytes;
    let admin_svc =
        pb::admin_server::AdminServer::new(admin::AdminService::new(state.clone(), token.clone()));
    let ingest_svc =
        pb::ingest_server::IngestServer::new(ingest::IngestService::new(state.clone(), token))
            .max_decoding_message_size(max_msg)
            .max_encoding_message_size(max_msg);
    let max_hashes = cfg.query.max_batch_hashes;
    let query_svc = query_guard::QueryGuard::new(
        pb::query_server::QueryServer::new(query::QueryService::new(state.clone(), placer))
            .max_decoding_message_size(query_request_bytes(max_hashes))
            .max_encoding_message_size(max_msg),
        max_hashes,
        Arc::new(answers::Budget::new(
            cfg.grpc.max_unsent_bytes,
            metrics.connection_metrics().unsent,
        )),
    );

    // TLS is done by the listener (listener.rs), inside the handshake
    // deadline; tonic serves the decrypted connections.
    let tls = match (&cfg.grpc.tls_cert, &cfg.grpc.tls_key) {
        (Some(cert), Some(key)) => {
            let read = |p: &std::path::Path| {
                std::fs::read(p)
                    .map_err(|e| ServeError::Config(format!("grpc TLS file {}: {e}", p.display())))
            };
            Some(listener::tls_acceptor(&read(cert)?, &read(key)?).map_err(ServeError::Config)?)
        }
        _ => None,
    };
    let router = Server::builder()
        .max_concurrent_streams(Some(cfg.grpc.max_concurrent_streams))
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .add_service(health_svc)
        .add_service(reflection)
        .add_service(ingest_svc)
        .add_service(query_svc)
        .add_service(admin_svc);

    let mut server_stop = stop_rx.clone();
    let incoming = listener::incoming(
        grpc_listener,
        tls,
        listener::Limits {
            max_connections: cfg.grpc.max_connections,
            max_connections_per_ip: cfg.grpc.max_connections_per_ip,
            handshake_timeout: Duration::from_millis(cfg.grpc.handshake_timeout_ms),
            send_timeout: Duration::from_millis(cfg.grpc.send_timeout_ms),
        },
        metrics.connection_metrics(),
    );
    let server = tokio::spawn(router.serve_with_incoming_shutdown(incoming, async move {
        let _ = server_stop.wait_for(|s| *s).await;
    }));
    on_bound(Bound {
        grpc: grpc_addr,
        metrics: metrics_addr,
        jsonrpc: jsonrpc.as_ref().map(|(a, _)| *a),
    });

    // Signals flip the stop flag; the server then drains.
    let stop_signal = stop_tx.clone();
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_signal.send(true);
    });

    let run = Running {
        cfg,
        state,
        metrics,
        health,
        server,
        jsonrpc,
        stop_tx,
        stop_rx,
    };
    match serving {
        Serving::Store {
            open,
            follow,
            publish,
        } => run.store(open, follow, publish).await,
        Serving::Replica { replica, poll } => run.replica(replica, poll).await,
    }
}

/// The daemon once its listeners are bound.
struct Running {
    cfg: Arc<Config>,
    state: Arc<AppState>,
    metrics: Arc<Metrics>,
    health: tonic_health::server::HealthReporter,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    jsonrpc: Option<(SocketAddr, ledgerstore_jsonrpc::ServerHandle)>,
    stop_tx: watch::Sender<bool>,
    stop_rx: watch::Receiver<bool>,
}

impl Running {
    /// Serves a data dir: opens it, follows a lake and publishes if asked,
    /// and closes it at shutdown.
    async fn store(
        self,
        open: Opener,
        follow: Option<Follow>,
        publish: Option<Publish>,
    ) -> Result<(), ServeError> {
        let Running {
            cfg,
            state,
            metrics,
            health,
            server,
            jsonrpc,
            stop_tx,
            stop_rx,
        } = self;
        let opened = tokio::task::spawn_blocking(open).await;
        let store = match opened {
            Ok(Ok(s)) => Arc::new(s),
            Ok(Err(e)) => {
                let _ = stop_tx.send(true);
                let _ = server.await;
                return Err(ServeError::Open(e));
            }
            Err(j) => {
                let _ = stop_tx.send(true);
                return Err(ServeError::Config(format!("opening task failed: {j}")));
            }
        };
        let reader = match read_through(&store, publish.as_ref()).await {
            Ok(r) => r,
            Err(e) => {
                let _ = stop_tx.send(true);
                let _ = server.await;
                return Err(e);
            }
        };
        state.set_store_read_through(store.clone(), reader.clone());
        if cfg.events.enabled {
            state.set_events(open_events(&cfg, &store, reader).await);
        }
        metrics.refresh(&store);
        set_health(&health, tonic_health::ServingStatus::Serving).await;
        tracing::info!(mark = ?store.last_ledger(), layout = %store.layout(), "stores open; serving");
        tokio::spawn(refresh_loop(
            store.clone(),
            metrics.clone(),
            cfg.metrics.refresh_secs,
            stop_rx.clone(),
        ));
        watch_events(&state, &metrics, cfg.metrics.refresh_secs, &stop_rx);
        let follower = follow.map(|follow| {
            tokio::spawn(
                follow::Follower {
                    follow,
                    store: store.clone(),
                    cfg: cfg.clone(),
                    metrics: metrics.clone(),
                    health: health.clone(),
                    ingest_service: INGEST_SERVICE,
                    stop: stop_rx.clone(),
                    events: state.events().ok(),
                }
                .run(),
            )
        });

        let publisher = publish.map(|p| {
            tokio::spawn(p.run(
                store.clone(),
                state.events().ok().filter(|_| cfg.cold.publish_events),
                metrics.clone(),
                stop_rx.clone(),
            ))
        });

        // As shutdown begins, offers stop waiting for the event index's
        // builder to make room (`EventStore::offer`): the streams' and the
        // follower's last commits do not wait for it.
        let release_offers = {
            let (state, mut stop) = (state.clone(), stop_rx.clone());
            tokio::spawn(async move {
                let _ = stop.wait_for(|s| *s).await;
                if let Some(events) = state.events_for_shutdown() {
                    events.release_offers();
                }
            })
        };
        let served = drain(stop_rx, &health, server, jsonrpc).await;
        let _ = release_offers.await;
        if let Some(p) = publisher {
            // The publisher saw the stop: a pack or an eviction stops at its
            // next chunk, an upload or manifest read is cut off after
            // `STOP_GRACE`, and it returns (a blocking step already under
            // way holds the store until it ends; the runtime waits for it
            // on exit). A round cut short leaves the previous manifest
            // valid, an eviction cut short is finished by the next one.
            let _ = p.await;
        }
        if let Some(f) = follower {
            // It finishes its commit, and commits at most one batch of the
            // ledgers in hand, before it returns.
            let _ = f.await;
        }
        if let Some(events) = state.events_for_shutdown() {
            // Its builder reads the store: it stops first.
            let _ = tokio::task::spawn_blocking(move || events.stop()).await;
        }
        tokio::task::spawn_blocking(move || store.close())
            .await
            .map_err(|j| ServeError::Config(format!("closing task failed: {j}")))??;
        tracing::info!("stores closed");
        served
    }

    /// Serves a read replica: follows the manifest until shutdown.
    async fn replica(self, replica: Arc<Replica>, poll: Duration) -> Result<(), ServeError> {
        let Running {
            cfg,
            state,
            metrics,
            health,
            server,
            jsonrpc,
            stop_tx: _stop_tx,
            stop_rx,
        } = self;
        match replica.refresh().await {
            Ok(_) => replica.clone().prefetch(),
            Err(e) => {
                tracing::warn!(error = %e, "the first manifest read failed; retrying while serving")
            }
        }
        state.set_reader(replica.clone());
        let rm = cold_metrics::ReplicaMetrics::new(metrics.registry())
            .map_err(|e| ServeError::Config(format!("replica metrics: {e}")))?;
        rm.refresh(&replica.figures());
        set_health(&health, tonic_health::ServingStatus::Serving).await;
        tracing::info!(store = replica.location(), mark = ?ledgerstore_store::Reader::last_ledger(&*replica), "replica serving");
        let follower = tokio::spawn(replica.clone().follow(poll, stop_rx.clone()));
        let events_sync = cfg.events.enabled.then(|| {
            tokio::spawn(replica_events::run(
                cfg.clone(),
                replica.clone(),
                state.clone(),
                metrics.clone(),
                poll,
                stop_rx.clone(),
            ))
        });
        let (r, m, mut stop) = (replica.clone(), rm, stop_rx.clone());
        let secs = cfg.metrics.refresh_secs.max(1);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(secs));
            loop {
                tokio::select! {
                    _ = tick.tick() => m.refresh(&r.figures()),
                    _ = stop.changed() => return,
                }
            }
        });
        let served = drain(stop_rx, &health, server, jsonrpc).await;
        if let Some(s) = events_sync {
            // A fetch cut short leaves a temporary file the next open
            // deletes.
            s.abort();
            let _ = s.await;
        }
        if let Some(events) = state.events_for_shutdown() {
            let _ = tokio::task::spawn_blocking(move || events.stop()).await;
        }
        let _ = follower.await;
        served
    }
}

/// Waits for shutdown, then turns NOT_SERVING, lets gRPC drain its
/// streams, and stops the Stellar RPC endpoint (calls in flight finish;
/// new connections are refused). Returns how the gRPC server ended.
async fn drain(
    mut stop: watch::Receiver<bool>,
    health: &tonic_health::server::HealthReporter,
    server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
    jsonrpc: Option<(SocketAddr, ledgerstore_jsonrpc::ServerHandle)>,
) -> Result<(), ServeError> {
    let _ = stop.wait_for(|s| *s).await;
    set_health(health, tonic_health::ServingStatus::NotServing).await;
    tracing::info!("shutting down: draining streams");
    let served = server.await;
    if let Some((_, handle)) = jsonrpc {
        let _ = handle.stop();
        handle.stopped().await;
    }
    match served {
        Ok(r) => r.map_err(ServeError::from),
        Err(j) => Err(ServeError::Config(format!("server task failed: {j}"))),
    }
}

/// What the query APIs read on a writer: the store, or, once it evicted
/// published ranges (or may), the store in front of its published ranges.
/// A dir that evicted ranges needs the store they are published at.
async fn read_through(
    store: &Arc<Ledgerstore>,
    publish: Option<&Publish>,
) -> Result<Arc<dyn ledgerstore_store::Reader>, ServeError> {
    let evicted = store.evicted();
    let cold = publish.map(|p| &p.cold);
    if let Some(c) = cold
        && store.layout() != ledgerstore_db_api::Layout::Indexed
    {
        return Err(ServeError::Config(format!(
            "cold.store = {:?}: publishing needs layout indexed (closed ranges with segments); \
             this data dir has layout {}",
            c.location(),
            store.layout()
        )));
    }
    if let Some(e) = &evicted {
        match cold {
            None => {
                return Err(ServeError::Config(format!(
                    "the data dir evicted ledgers below {} to {}: set cold.store = {:?} to serve them",
                    e.below, e.store, e.store
                )));
            }
            Some(c) if c.location() != e.store => {
                return Err(ServeError::Config(format!(
                    "the data dir evicted ledgers below {} to {}; cold.store is {}: set it back \
                     (the setting is recorded in segments/EVICTED)",
                    e.below,
                    e.store,
                    c.location()
                )));
            }
            Some(_) => {}
        }
    }
    match (cold, publish.map(|p| p.keep_local_ranges)) {
        (Some(c), Some(keep)) if evicted.is_some() || keep > 0 => {
            if let Err(e) = c.refresh().await {
                tracing::warn!(error = %e, "reading the published manifest failed; reads of evicted ranges answer UNAVAILABLE until it is read (the publisher retries every cold.publish_interval_ms)");
            }
            // The operator's record of where evicted ranges are read from:
            // client-visible answers never name it.
            tracing::info!(
                store = c.location(),
                evicted_below = store.evicted_below(),
                "serving evicted ranges from the published store"
            );
            Ok(Arc::new(ledgerstore_cold::Tiered {
                store: Arc::clone(store),
                cold: Arc::clone(c),
            }))
        }
        _ => Ok(store.clone()),
    }
}

/// Binds and starts the Stellar RPC endpoint; it finds the store through
/// `state` once it is open.
async fn start_jsonrpc(
    cfg: &Config,
    access: RpcStore,
    metrics: &Metrics,
) -> Result<(SocketAddr, ledgerstore_jsonrpc::ServerHandle), ServeError> {
    let passphrase = ledgerstore_stellar::Network::parse(&cfg.stellar.network)
        .map_err(|e| ServeError::Config(format!("stellar.network: {e}")))?
        .passphrase()
        .to_string();
    let j = &cfg.jsonrpc;
    let settings = ledgerstore_jsonrpc::Settings {
        passphrase,
        timeout: Duration::from_millis(cfg.query.timeout_ms),
        max_request_bytes: j.max_request_bytes,
        max_response_bytes: j.max_response_bytes,
        page: ledgerstore_jsonrpc::PageBudget {
            max_bytes: j.max_page_bytes as usize,
            max_ledgers: j.max_page_ledgers,
        },
        max_batch_bytes: j.max_batch_bytes as usize,
        max_heavy_calls: j.max_heavy_calls,
        max_queued_heavy_calls: j.max_queued_heavy_calls,
        max_batch_calls: j.max_batch_calls,
        max_connections: j.max_connections,
        max_connections_per_ip: j.max_connections_per_ip,
        max_unsent_bytes: j.max_unsent_bytes,
        send_timeout: Duration::from_millis(j.send_timeout_ms),
        version: ledgerstore_jsonrpc::VersionInfo::current(),
    };
    let rpc_metrics = ledgerstore_jsonrpc::RpcMetrics::new(metrics.registry())
        .map_err(|e| ServeError::Config(format!("jsonrpc metrics: {e}")))?;
    ledgerstore_jsonrpc::serve(&j.listen, settings, access, rpc_metrics)
        .await
        .map_err(|source| ServeError::Bind {
            what: "JSON-RPC",
            addr: j.listen.clone(),
            source,
        })
}

/// The event index's settings from `[events]` (a new index takes them; an
/// existing one keeps the geometry it recorded).
pub fn events_settings(cfg: &Config) -> ledgerstore_events::EventsConfig {
    let d = ledgerstore_events::EventsConfig::default();
    ledgerstore_events::EventsConfig {
        file_ledgers: cfg.events.file_ledgers.unwrap_or(d.file_ledgers),
        fan_out: cfg.events.fan_out.unwrap_or(d.fan_out),
        ..d
    }
}

/// Opens the event index beside the data dir (`<data dir>/events`): its
/// builder then indexes, in the background, every stored ledger not yet
/// indexed. A failure leaves the daemon serving everything else, and
/// getEvents answering why.
async fn open_events(
    cfg: &Config,
    store: &Arc<Ledgerstore>,
    reader: Arc<dyn ledgerstore_store::Reader>,
) -> Result<Arc<ledgerstore_events::EventStore>, String> {
    let dir = store.path().join("events");
    let ecfg = events_settings(cfg);
    let shown = dir.display().to_string();
    let opened = tokio::task::spawn_blocking(move || {
        ledgerstore_events::EventStore::open(&dir, reader, ecfg)
    })
    .await;
    match opened {
        Ok(Ok(e)) => {
            tracing::info!(dir = %shown, indexed_through = ?e.indexed_through(), "event index open");
            Ok(Arc::new(e))
        }
        Ok(Err(e)) => {
            tracing::error!(dir = %shown, error = %e, "event index failed to open; getEvents is off");
            Err(e.to_string())
        }
        Err(j) => Err(format!("opening task failed: {j}")),
    }
}

/// The Stellar RPC's way to the store, and its read placement: the same
/// as the gRPC services'.
struct RpcStore {
    state: Arc<AppState>,
    placer: Arc<placement::ReadPlacer>,
    metrics: Arc<Metrics>,
}

impl ledgerstore_jsonrpc::StoreAccess for RpcStore {
    fn store(&self) -> Result<Arc<dyn ledgerstore_store::Reader>, String> {
        self.state.reader().map_err(|s| s.message().to_string())
    }

    fn events(&self) -> Result<Arc<ledgerstore_events::EventStore>, String> {
        self.state.events()
    }

    fn read_inline(&self) -> bool {
        self.placer.inline() && self.state.reader().is_ok_and(|r| !r.reads_may_block())
    }

    fn spawn_read(&self, job: ledgerstore_jsonrpc::ReadJob) -> ledgerstore_jsonrpc::ReadTicket {
        let read = self.state.reads.spawn(job);
        Box::pin(async move { read.await.map_err(|e| e.to_string()) })
    }

    fn observe_read(&self, took: Duration, inline: bool) {
        self.placer.observe(took);
        self.metrics.query_read(inline, self.placer.slow_ratio());
    }
}

const INGEST_SERVICE: &str =
    <pb::ingest_server::IngestServer<ingest::IngestService> as tonic::server::NamedService>::NAME;

/// Sets the overall status ("") and both services' status together.
async fn set_health(
    health: &tonic_health::server::HealthReporter,
    status: tonic_health::ServingStatus,
) {
    health.set_service_status("", status).await;
    for service in [
        INGEST_SERVICE,
        <pb::query_server::QueryServer<query::QueryService> as tonic::server::NamedService>::NAME,
    ] {
        health.set_service_status(service, status).await;
    }
}

async fn bind(what: &'static str, addr: &str) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            what,
            addr: addr.to_string(),
            source,
        })
}

fn local_addr(l: &TcpListener, addr: &str) -> Result<SocketAddr, ServeError> {
    l.local_addr().map_err(|source| ServeError::Bind {
        what: "listener",
        addr: addr.to_string(),
        source,
    })
}

/// Starts the event index's gauges, when it is open.
pub(crate) fn watch_events(
    state: &Arc<AppState>,
    metrics: &Arc<Metrics>,
    secs: u64,
    stop: &watch::Receiver<bool>,
) {
    let Ok(events) = state.events() else {
        return;
    };
    match events_metrics::EventMetrics::new(metrics.registry()) {
        Ok(em) => {
            tokio::spawn(events_refresh_loop(events, em, secs, stop.clone()));
        }
        Err(e) => tracing::warn!(error = %e, "event index metrics not registered"),
    }
}

/// Refreshes the event index's gauges every `secs`, until shutdown.
async fn events_refresh_loop(
    events: Arc<ledgerstore_events::EventStore>,
    em: events_metrics::EventMetrics,
    secs: u64,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(secs.max(1)));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        em.refresh(&events.stats());
    }
}

async fn refresh_loop(
    store: Arc<Ledgerstore>,
    metrics: Arc<Metrics>,
    secs: u64,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(secs.max(1)));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let (s, m) = (store.clone(), metrics.clone());
        let _ = tokio::task::spawn_blocking(move || m.refresh(&s)).await;
    }
}
