//! The Ingest service. Per stream: a reader task groups incoming ledgers
//! into store batches (bulk: `ingest.bulk_batch_ledgers`, or fewer once
//! their bytes reach `ingest.bulk_batch_mib`; live: as soon as
//! no further message is ready, or `ingest.live_max_latency_ms` after the
//! oldest pending ledger) and hands them to a committer through a bounded
//! queue (`ingest.queue_batches`). A fast client is slowed by HTTP/2 flow
//! control rather than growing memory. Acks carry the durable mark.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use ledgerstore_db_api::{Batcher, LedgerInput};
use ledgerstore_proto::v1 as pb;
use ledgerstore_stellar::{Network, ledger_from_xdr};
use ledgerstore_store::{IngestOutcome, Ledgerstore};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status, Streaming};

use crate::convert::ledger_in;
use crate::state::AppState;
use crate::status::{from_stellar, from_store, internal_join};

const SERVICE: &str = "ledgerstore.v1.Ingest";
const METHOD: &str = "IngestLedgers";

type AckSender = mpsc::Sender<Result<pb::IngestAck, Status>>;

/// Ingest service.
pub struct IngestService {
    state: Arc<AppState>,
    auth: Authorizer,
}

impl IngestService {
    /// A service over `state`; with a token, every call must carry
    /// `authorization: Bearer <token>`. Query never needs it, and never
    /// accepts writes.
    pub fn new(state: Arc<AppState>, token: Option<String>) -> Self {
        Self {
            state,
            auth: Authorizer::new(token),
        }
    }

    fn authorize<T>(&self, req: &Request<T>) -> Result<(), Status> {
        self.auth.check(req)
    }
}

/// The bearer-token check shared by the services that write (Ingest, Admin).
pub(crate) struct Authorizer {
    /// `Bearer <token>` when a token is required.
    expected: Option<Vec<u8>>,
}

impl Authorizer {
    pub(crate) fn new(token: Option<String>) -> Self {
        Self {
            expected: token.map(|t| format!("Bearer {t}").into_bytes()),
        }
    }

    pub(crate) fn check<T>(&self, req: &Request<T>) -> Result<(), Status> {
        let Some(expected) = &self.expected else {
            return Ok(());
        };
        match req.metadata().get("authorization") {
            None => Err(Status::unauthenticated(
                "missing ingest token: send metadata 'authorization: Bearer <ingest.token>'",
            )),
            Some(v) if constant_time_eq(v.as_bytes(), expected) => Ok(()),
            Some(_) => Err(Status::unauthenticated("wrong ingest token")),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

struct Batch {
    ledgers: Vec<LedgerInput>,
    source: Duration,
}

#[tonic::async_trait]
impl pb::ingest_server::Ingest for IngestService {
    type IngestLedgersStream = ReceiverStream<Result<pb::IngestAck, Status>>;

    async fn ingest_ledgers(
        &self,
        req: Request<Streaming<pb::IngestRequest>>,
    ) -> Result<Response<Self::IngestLedgersStream>, Status> {
        let rpc = self.state.metrics.rpc("bidi_stream", SERVICE, METHOD);
        let admitted = self
            .authorize(&req)
            .and_then(|_| self.state.store())
            .and_then(|store| {
                let max = self.state.cfg.ingest.max_streams;
                let permit = self
                    .state
                    .ingest_streams
                    .clone()
                    .try_acquire_owned()
                    .map_err(|_| {
                        Status::resource_exhausted(format!(
                            "{max} IngestLedgers streams are already open (ingest.max_streams)"
                        ))
                    })?;
                Ok((store, permit))
            });
        let (store, permit) = match admitted {
            Ok(a) => a,
            Err(e) => {
                rpc.finish(e.code());
                return Err(e);
            }
        };
        let (acks, rx) = mpsc::channel(4);
        let state = self.state.clone();
        let inbound = req.into_inner();
        tokio::spawn(async move {
            let code = run_stream(state, store, inbound, acks).await;
            rpc.finish(code);
            drop(permit);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_ingest_state(
        &self,
        req: Request<pb::GetIngestStateRequest>,
    ) -> Result<Response<pb::IngestState>, Status> {
        let rpc = self.state.metrics.rpc("unary", SERVICE, "GetIngestState");
        let r = self
            .authorize(&req)
            .and_then(|_| self.state.store())
            .map(|s| {
                let m = s.mark();
                pb::IngestState {
                    has_durable_ledger: m.last.is_some(),
                    durable_ledger: m.last.unwrap_or(0),
                    next_expected: m.next_expected().unwrap_or(0),
                    accepts_any_start: m.last.is_none(),
                    first_ledger: m.first.unwrap_or(0),
                }
            });
        rpc.finish_with(&r);
        r.map(Response::new)
    }
}

async fn run_stream(
    state: Arc<AppState>,
    store: Arc<Ledgerstore>,
    mut inbound: Streaming<pb::IngestRequest>,
    acks: AckSender,
) -> Code {
    let (batches, queue) = mpsc::channel(state.cfg.ingest.queue_batches);
    let committer = tokio::spawn(commit_loop(
        state.clone(),
        store.clone(),
        queue,
        acks.clone(),
    ));
    let read = read_loop(&state, &mut inbound, &batches, &acks).await;
    drop(batches);
    let commit = committer.await.unwrap_or(Code::Internal);
    if read == Code::Ok && commit == Code::Ok && state.shutting_down() {
        let mark = store
            .last_ledger()
            .map_or("nothing".into(), |l| format!("ledger {l}"));
        let _ = acks
            .send(Err(Status::unavailable(format!(
                "ledgerstore is shutting down; durable through {mark}; resume from GetIngestState"
            ))))
            .await;
        return Code::Unavailable;
    }
    if read != Code::Ok { read } else { commit }
}

/// Reads requests and hands batches to the committer. Returns the code the
/// stream ends with from the reader's side.
async fn read_loop(
    state: &AppState,
    inbound: &mut Streaming<pb::IngestRequest>,
    batches: &mpsc::Sender<Batch>,
    acks: &AckSender,
) -> Code {
    let cfg = &state.cfg.ingest;
    let latency = Duration::from_millis(cfg.live_max_latency_ms);
    let mut shutdown = state.shutdown.clone();
    let mut live: Option<bool> = None;
    let mut pending = Batcher::new(
        cfg.bulk_batch_ledgers as usize,
        u64::from(cfg.bulk_batch_mib) << 20,
    );
    let mut since: Option<Instant> = None;
    loop {
        // Live mode commits as soon as nothing more is ready to read.
        let ready = if live == Some(true) && !pending.is_empty() {
            let aged = since.is_some_and(|t| t.elapsed() >= latency);
            match inbound.message().now_or_never() {
                Some(m) if !aged => Some(m),
                other => {
                    if !flush(&mut pending, &mut since, batches).await {
                        return Code::Aborted;
                    }
                    other
                }
            }
        } else {
            None
        };
        let msg = match ready {
            Some(m) => m,
            None => tokio::select! {
                m = inbound.message() => m,
                _ = shutdown.changed() => {
                    // Finish the batch in hand; the committer sends its ack.
                    return if flush(&mut pending, &mut since, batches).await { Code::Ok } else { Code::Aborted };
                }
            },
        };
        match msg {
            Ok(Some(req)) => {
                state.metrics.received(SERVICE, METHOD);
                live.get_or_insert(req.mode() == pb::IngestMode::Live);
                since.get_or_insert_with(Instant::now);
                let ledgers = match request_ledgers(state, req).await {
                    Ok(l) => l,
                    Err(e) => {
                        let code = e.code();
                        let _ = acks.send(Err(e)).await;
                        return code;
                    }
                };
                pending.push(ledgers);
                while let Some(full) = pending.full() {
                    let source = since.map_or(Duration::ZERO, |t| t.elapsed());
                    since = (!pending.is_empty()).then(Instant::now);
                    if batches
                        .send(Batch {
                            ledgers: full,
                            source,
                        })
                        .await
                        .is_err()
                    {
                        return Code::Aborted;
                    }
                }
            }
            Ok(None) => {
                return if flush(&mut pending, &mut since, batches).await {
                    Code::Ok
                } else {
                    Code::Aborted
                };
            }
            Err(status) => {
                // A malformed or oversize message, or a client that went
                // away: what is pending was never acked, so it is dropped.
                let status = if status.code() == Code::OutOfRange
                    && status.message().contains("too large")
                {
                    Status::resource_exhausted(format!(
                        "message: over grpc.max_message_bytes = {} ({})",
                        state.cfg.grpc.max_message_bytes,
                        status.message()
                    ))
                } else {
                    status
                };
                let code = status.code();
                let _ = acks.send(Err(status)).await;
                return code;
            }
        }
    }
}

fn check_request(req: &pb::IngestRequest, max: usize) -> Result<(), Status> {
    let (field, n) = match (req.ledgers.len(), req.stellar_ledgers.len()) {
        (0, 0) => {
            return Err(Status::invalid_argument(
                "ledgers: each IngestRequest must carry at least one ledger (in ledgers or \
                 stellar_ledgers)",
            ));
        }
        (n, 0) => ("ledgers", n),
        (0, n) => ("stellar_ledgers", n),
        (a, b) => {
            return Err(Status::invalid_argument(format!(
                "stellar_ledgers: a request carries either ledgers or stellar_ledgers, got {a} \
                 and {b}"
            )));
        }
    };
    if n > max {
        return Err(Status::invalid_argument(format!(
            "{field}: at most {max} per IngestRequest (ingest.max_ledgers_per_request), got {n}"
        )));
    }
    Ok(())
}

/// The request's ledgers as the store takes them. Raw Stellar ledgers are
/// decoded and extracted here, in parallel on the blocking pool.
async fn request_ledgers(
    state: &AppState,
    req: pb::IngestRequest,
) -> Result<Vec<LedgerInput>, Status> {
    check_request(&req, state.cfg.ingest.max_ledgers_per_request)?;
    if req.stellar_ledgers.is_empty() {
        return Ok(req.ledgers.into_iter().map(ledger_in).collect());
    }
    let network = if req.stellar_network.is_empty() {
        &state.cfg.stellar.network
    } else {
        &req.stellar_network
    };
    let network = Network::parse(network).map_err(|e| from_stellar("stellar_network", &e))?;
    let tasks = req.stellar_ledgers.into_iter().map(|l| {
        let network = network.clone();
        let metrics = state.metrics.clone();
        tokio::task::spawn_blocking(move || {
            let t = Instant::now();
            let r = ledger_from_xdr(l.ledger_close_meta, &network, "ledger_close_meta");
            metrics.stellar(r.is_ok(), t.elapsed().as_secs_f64());
            r
        })
    });
    let mut out: Vec<LedgerInput> = Vec::new();
    for (i, r) in futures::future::join_all(tasks)
        .await
        .into_iter()
        .enumerate()
    {
        match r.map_err(internal_join)? {
            Ok(l) => out.push(l),
            Err(e) => {
                let after = out
                    .last()
                    .map_or(String::new(), |p| format!(" (the ledger after {})", p.seq));
                return Err(from_stellar(&format!("stellar_ledgers[{i}]{after}"), &e));
            }
        }
    }
    Ok(out)
}

/// Sends what is pending; false when the committer has stopped.
async fn flush(
    pending: &mut Batcher,
    since: &mut Option<Instant>,
    batches: &mpsc::Sender<Batch>,
) -> bool {
    if pending.is_empty() {
        return true;
    }
    let source = since.take().map_or(Duration::ZERO, |t| t.elapsed());
    let ledgers = pending.take_all();
    batches.send(Batch { ledgers, source }).await.is_ok()
}

async fn commit_loop(
    state: Arc<AppState>,
    store: Arc<Ledgerstore>,
    mut queue: mpsc::Receiver<Batch>,
    acks: AckSender,
) -> Code {
    let (mut committed, mut skipped) = (0u64, 0u64);
    while let Some(batch) = queue.recv().await {
        // Per batch: a stream may open before the event index does.
        let (s, ev) = (store.clone(), state.events().ok());
        let close_time = batch.ledgers.last().map_or(0, |l| l.close_time);
        let (out, ledgers): (IngestOutcome, Vec<LedgerInput>) =
            match tokio::task::spawn_blocking(move || {
                s.ingest(&batch.ledgers, batch.source)
                    .map(|out| (out, batch.ledgers))
            })
            .await
            {
                Ok(Ok(done)) => done,
                Ok(Err(e)) => {
                    let st = from_store(&e);
                    let code = st.code();
                    tracing::warn!(error = %e, "ingest batch refused");
                    let _ = acks.send(Err(st)).await;
                    return code;
                }
                Err(j) => {
                    let _ = acks.send(Err(internal_join(j))).await;
                    return Code::Internal;
                }
            };
        if let Some(r) = &out.report {
            state.metrics.batch(r, close_time);
        }
        committed += out.committed as u64;
        skipped += out.skipped as u64;
        let ack = pb::IngestAck {
            durable_ledger: out.mark.unwrap_or(0),
            has_durable_ledger: out.mark.is_some(),
            next_expected: out.mark.map_or(0, |m| m.saturating_add(1)),
            skipped_ledgers: skipped,
            committed_ledgers: committed,
        };
        if acks.send(Ok(ack)).await.is_err() {
            return Code::Cancelled;
        }
        state.metrics.sent("bidi_stream", SERVICE, METHOD);
        if let Some(ev) = ev {
            // The event index takes the committed ledgers' bytes, instead
            // of reading them back (after the ack: not on its path).
            let new = out.skipped.min(ledgers.len());
            let _ = tokio::task::spawn_blocking(move || ev.offer(&ledgers[new..])).await;
        }
    }
    Code::Ok
}
