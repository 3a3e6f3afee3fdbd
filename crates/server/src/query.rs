//! The Query service: transactions by hash, ledgers, status.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ledgerstore_proto::v1 as pb;
use ledgerstore_store::{Reader, ReaderStatus, StoreError};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use crate::answers::{Account, check_room, reserve};
use crate::convert::{hash, head_out, ledger_out, replica_status_out, status_out, tx_out};
use crate::placement::ReadPlacer;
use crate::state::AppState;
use crate::status::{from_store, internal_join, internal_panic, read_failed, unavailable};

const SERVICE: &str = "ledgerstore.v1.Query";
/// Ledgers read per blocking step of StreamLedgers.
const STREAM_CHUNK: usize = 16;

/// Query service.
pub struct QueryService {
    state: Arc<AppState>,
    placer: Arc<ReadPlacer>,
}

impl QueryService {
    /// A service over `state`; `placer` is shared with the Stellar RPC
    /// endpoint's lookups, which read the same store.
    pub fn new(state: Arc<AppState>, placer: Arc<ReadPlacer>) -> Self {
        Self { state, placer }
    }

    /// A single-key read: inline on this async worker while such reads are
    /// rarely slow, else on the read threads (see `placement`). Either way its
    /// time feeds the placer, and an answer later than `query.timeout_ms`
    /// is DEADLINE_EXCEEDED.
    async fn read<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Reader) -> Result<T, StoreError> + Send + 'static,
    {
        let store = self.state.reader()?;
        if !self.placer.inline() || store.reads_may_block() {
            let placer = self.placer.clone();
            let metrics = self.state.metrics.clone();
            return self
                .blocking(move |s| {
                    let t = Instant::now();
                    let r = f(s);
                    placer.observe(t.elapsed());
                    metrics.query_read(false, placer.slow_ratio());
                    r
                })
                .await;
        }
        let t = Instant::now();
        // A panic stays this request's INTERNAL, as on the pool, instead of
        // taking down the connection's task.
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&*store)))
            .map_err(|_| internal_panic())?;
        let took = t.elapsed();
        self.placer.observe(took);
        self.state
            .metrics
            .query_read(true, self.placer.slow_ratio());
        if took > self.timeout() {
            return Err(self.deadline_exceeded());
        }
        r.map_err(|e| from_store(&e))
    }

    /// Runs `f` on the read threads under the query deadline (the wait
    /// for a thread included; a read whose caller has gone by then does
    /// not start), which the read knows too: one waiting on the published
    /// store stops there ([`ledgerstore_store::with_read_deadline`]).
    async fn blocking<T, F>(&self, f: F) -> Result<T, Status>
    where
        T: Send + 'static,
        F: FnOnce(&dyn Reader) -> Result<T, StoreError> + Send + 'static,
    {
        let store = self.state.reader()?;
        let deadline = std::time::Instant::now() + self.timeout();
        let read = self
            .state
            .reads
            .spawn(move || ledgerstore_store::with_read_deadline(deadline, || f(&*store)));
        self.in_time(read).await
    }

    /// The answer of `task` by the query deadline.
    async fn in_time<T>(
        &self,
        task: impl Future<Output = Result<Result<T, StoreError>, tokio::task::JoinError>>,
    ) -> Result<T, Status> {
        match tokio::time::timeout(self.timeout(), task).await {
            Ok(Ok(r)) => r.map_err(|e| read_failed(self.state.cfg.query.timeout_ms, Some(e))),
            Ok(Err(j)) => Err(internal_join(j)),
            Err(_) => Err(self.deadline_exceeded()),
        }
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.state.cfg.query.timeout_ms)
    }

    fn deadline_exceeded(&self) -> Status {
        read_failed(self.state.cfg.query.timeout_ms, None)
    }

    /// Runs a unary call; its answer takes its room in the answer budget
    /// (answers.rs) or the call fails with RESOURCE_EXHAUSTED.
    async fn unary<T: prost::Message, R>(
        &self,
        method: &'static str,
        req: &Request<R>,
        f: impl Future<Output = Result<T, Status>>,
    ) -> Result<Response<T>, Status> {
        self.call(method, Some(req), f).await
    }

    /// Runs a unary call, its answer in the budget of `budgeted`'s
    /// account, if any.
    async fn call<T: prost::Message, R>(
        &self,
        method: &'static str,
        budgeted: Option<&Request<R>>,
        f: impl Future<Output = Result<T, Status>>,
    ) -> Result<Response<T>, Status> {
        let rpc = self.state.metrics.rpc("unary", SERVICE, method);
        let r = match budgeted.map_or(Ok(()), check_room) {
            Ok(()) => f.await,
            Err(e) => Err(e),
        };
        let r = match (r, budgeted) {
            (Ok(answer), Some(req)) => reserve(req, answer.encoded_len()).map(|()| answer),
            (r, _) => r,
        };
        rpc.finish_with(&r);
        r.map(Response::new)
    }
}

#[tonic::async_trait]
impl pb::query_server::Query for QueryService {
    async fn get_transaction(
        &self,
        req: Request<pb::GetTransactionRequest>,
    ) -> Result<Response<pb::TransactionRecord>, Status> {
        self.unary("GetTransaction", &req, async {
            let h = hash("hash", &req.get_ref().hash)?;
            let found = self
                .read(move |s| Ok(s.get_tx(&h)?.ok_or_else(|| s.mark_text())))
                .await?;
            match found {
                Ok(rec) => Ok(tx_out(h, rec)),
                Err(mark) => Err(Status::not_found(format!(
                    "transaction {h} not found ({mark})"
                ))),
            }
        })
        .await
    }

    async fn batch_get_transactions(
        &self,
        req: Request<pb::BatchGetTransactionsRequest>,
    ) -> Result<Response<pb::BatchGetTransactionsResponse>, Status> {
        self.unary("BatchGetTransactions", &req, async {
            let hashes = &req.get_ref().hashes;
            let max = self.state.cfg.query.max_batch_hashes;
            if hashes.is_empty() {
                return Err(Status::invalid_argument(
                    "hashes: must hold at least one hash",
                ));
            }
            if hashes.len() > max {
                return Err(Status::invalid_argument(format!(
                    "hashes: at most {max} per request (query.max_batch_hashes), got {}",
                    hashes.len()
                )));
            }
            let parsed = hashes
                .iter()
                .enumerate()
                .map(|(i, b)| hash(&format!("hashes[{i}]"), b))
                .collect::<Result<Vec<_>, _>>()?;
            let keys = parsed.clone();
            // The read stops once the answer is DEADLINE_EXCEEDED.
            let deadline = Instant::now() + self.timeout();
            let found = self
                .blocking(move |s| s.batch_get_txs_until(&keys, deadline))
                .await?;
            let results = parsed
                .into_iter()
                .zip(found)
                .map(|(h, rec)| pb::TransactionLookup {
                    hash: h.0.to_vec(),
                    found: rec.is_some(),
                    record: rec.map(|r| tx_out(h, r)),
                })
                .collect();
            Ok(pb::BatchGetTransactionsResponse { results })
        })
        .await
    }

    async fn get_transaction_ledger(
        &self,
        req: Request<pb::GetTransactionLedgerRequest>,
    ) -> Result<Response<pb::TransactionLedger>, Status> {
        self.unary("GetTransactionLedger", &req, async {
            let h = hash("hash", &req.get_ref().hash)?;
            let found = self
                .read(move |s| Ok(s.get_tx_ledger(&h)?.ok_or_else(|| s.mark_text())))
                .await?;
            match found {
                Ok(seq) => Ok(pb::TransactionLedger {
                    hash: h.0.to_vec(),
                    ledger_seq: seq,
                }),
                Err(mark) => Err(Status::not_found(format!(
                    "transaction {h} not found ({mark})"
                ))),
            }
        })
        .await
    }

    async fn get_ledger(
        &self,
        req: Request<pb::GetLedgerRequest>,
    ) -> Result<Response<pb::LedgerRecord>, Status> {
        self.unary("GetLedger", &req, async {
            let pb::GetLedgerRequest { seq, omit_raw } = *req.get_ref();
            // Without its raw bytes a ledger is answered from its record:
            // its transactions' bodies are not read to be dropped.
            let found = self
                .blocking(move |s| {
                    let l = if omit_raw {
                        s.ledger_head(seq)?.map(head_out)
                    } else {
                        s.get_ledger(seq)?.map(ledger_out)
                    };
                    Ok(l.ok_or_else(|| s.mark_text()))
                })
                .await?;
            match found {
                Ok(l) => Ok(l),
                Err(mark) => Err(Status::not_found(format!(
                    "ledger {seq} not found ({mark})"
                ))),
            }
        })
        .await
    }

    type StreamLedgersStream = ReceiverStream<Result<pb::LedgerRecord, Status>>;

    async fn stream_ledgers(
        &self,
        req: Request<pb::StreamLedgersRequest>,
    ) -> Result<Response<Self::StreamLedgersStream>, Status> {
        let rpc = self
            .state
            .metrics
            .rpc("server_stream", SERVICE, "StreamLedgers");
        let pb::StreamLedgersRequest {
            start,
            end,
            omit_raw,
        } = *req.get_ref();
        let max = self.state.cfg.query.max_stream_ledgers;
        let check = if start > end {
            Err(Status::invalid_argument(format!(
                "end: must be >= start ({start}), got {end}"
            )))
        } else if u64::from(end) - u64::from(start) + 1 > u64::from(max) {
            Err(Status::invalid_argument(format!(
                "end: at most {max} ledgers per stream (query.max_stream_ledgers), so end <= {}",
                u64::from(start) + u64::from(max) - 1
            )))
        } else {
            self.state.reader()
        };
        let store = match check {
            Ok(s) => s,
            Err(e) => {
                rpc.finish(e.code());
                return Err(e);
            }
        };
        // A small channel: a client that stops reading holds at most a few
        // ledgers in memory, and no thread.
        let (tx, rx) = mpsc::channel(4);
        let state = self.state.clone();
        let account = req.extensions().get::<Account>().cloned();
        tokio::spawn(async move {
            let code = stream_range(state, store, (start, end, omit_raw), account, tx).await;
            rpc.finish(code);
        });
        Ok(Response::new(ReceiverStream::new(rx)))
    }

    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::Status>, Status> {
        // Outside the answer budget: a few hundred bytes, and monitoring
        // must see a daemon whose budget is full.
        self.call("GetStatus", None::<&Request<()>>, async {
            // On tokio's shared blocking pool, not the read threads: the
            // status answers while reads wait in line there.
            let store = self.state.reader()?;
            self.in_time(tokio::task::spawn_blocking(move || {
                Ok(match store.status()? {
                    ReaderStatus::Store(stats, last) => status_out(&stats, last.as_ref()),
                    ReaderStatus::Replica(r) => replica_status_out(&r),
                })
            }))
            .await
        })
        .await
    }
}

/// Sends ledgers `start..=end` (without their raw bytes when `omit_raw`)
/// into `tx`, in chunks of [`STREAM_CHUNK`]: each chunk takes its room in
/// the answer budget through `account` as soon as it is read.
async fn stream_range(
    state: Arc<AppState>,
    store: Arc<dyn Reader>,
    (start, end, omit_raw): (u32, u32, bool),
    account: Option<Account>,
    tx: mpsc::Sender<Result<pb::LedgerRecord, Status>>,
) -> tonic::Code {
    let mut next = Some(start);
    while let Some(from) = next {
        if state.shutting_down() {
            let _ = tx
                .send(Err(unavailable(
                    "ledgerstore is shutting down; resume the stream later",
                )))
                .await;
            return tonic::Code::Unavailable;
        }
        if let Some(Err(st)) = account.as_ref().map(Account::check_room) {
            let st = Status::resource_exhausted(format!(
                "{}; resume the stream from ledger {from}",
                st.message()
            ));
            let _ = tx.send(Err(st)).await;
            return tonic::Code::ResourceExhausted;
        }
        let s = store.clone();
        let (started, starts) = tokio::sync::oneshot::channel::<()>();
        let read = state.reads.spawn(move || {
            let _ = started.send(());
            chunk_out(s.as_ref(), from, end, omit_raw)
        });
        // Each chunk waits for a read thread within the query deadline, so
        // a stream never waits in line without a bound; its read, once
        // started, takes what it takes, as a stream has no deadline.
        let timeout = Duration::from_millis(state.cfg.query.timeout_ms);
        if tokio::time::timeout(timeout, starts).await.is_err() {
            // Out of the line before the send, which waits while the
            // client does not read: the chunk is not read for no one.
            drop(read);
            let _ = tx
                .send(Err(Status::deadline_exceeded(format!(
                    "ledgers from {from} waited longer than query.timeout_ms = {} for a read \
                     thread (all query.read_threads are busy); resume the stream from ledger \
                     {from}",
                    state.cfg.query.timeout_ms
                ))))
                .await;
            return tonic::Code::DeadlineExceeded;
        }
        let ledgers = match read.await {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                let st = from_store(&e);
                let code = st.code();
                let _ = tx.send(Err(st)).await;
                return code;
            }
            Err(j) => {
                let _ = tx.send(Err(internal_join(j))).await;
                return tonic::Code::Internal;
            }
        };
        next = match ledgers.last() {
            Some(l) if ledgers.len() == STREAM_CHUNK && l.seq < end => Some(l.seq + 1),
            _ => None,
        };
        // The whole chunk takes its room as soon as it is read, in order;
        // past the room, what fitted is sent and the stream ends there.
        let (ledgers, refused) = reserve_chunk(account.as_ref(), ledgers);
        for l in ledgers {
            if tx.send(Ok(l)).await.is_err() {
                return tonic::Code::Cancelled;
            }
            state
                .metrics
                .sent("server_stream", SERVICE, "StreamLedgers");
        }
        if let Some(st) = refused {
            let code = st.code();
            let _ = tx.send(Err(st)).await;
            return code;
        }
    }
    tonic::Code::Ok
}

/// Takes room in the answer budget for each of `ledgers` in order; the
/// ledgers that fit, and the status that ends the stream at the first that
/// did not.
fn reserve_chunk(
    account: Option<&Account>,
    mut ledgers: Vec<pb::LedgerRecord>,
) -> (Vec<pb::LedgerRecord>, Option<Status>) {
    let Some(account) = account else {
        return (ledgers, None);
    };
    for (i, l) in ledgers.iter().enumerate() {
        if let Err(st) = account.reserve(prost::Message::encoded_len(l)) {
            let st = if st.code() == tonic::Code::ResourceExhausted {
                Status::resource_exhausted(format!(
                    "{}; resume the stream from ledger {}",
                    st.message(),
                    l.seq
                ))
            } else {
                st
            };
            ledgers.truncate(i);
            return (ledgers, Some(st));
        }
    }
    (ledgers, None)
}

/// Up to [`STREAM_CHUNK`] ledgers of `from..=end` as the API returns them;
/// without their raw bytes, from their records alone.
fn chunk_out(
    s: &dyn Reader,
    from: u32,
    end: u32,
    omit_raw: bool,
) -> Result<Vec<pb::LedgerRecord>, StoreError> {
    Ok(if omit_raw {
        let heads = s.ledger_head_chunk(from, end, STREAM_CHUNK)?;
        heads.into_iter().map(head_out).collect()
    } else {
        let ledgers = s.ledger_chunk(from, end, STREAM_CHUNK)?;
        ledgers.into_iter().map(ledger_out).collect()
    })
}
