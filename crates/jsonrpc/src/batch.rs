//! Batch requests: one budget for the whole request, not one per call.
//!
//! jsonrpsee runs a batch's calls one after another and keeps every
//! answer until the last is done, so a budget per call would let one
//! request hold `calls × page` bytes (8 batches of 8 `getLedgers` reached
//! 513 MB of RSS). Here, instead:
//!
//! - the batch's answers together take at most `jsonrpc.max_batch_bytes`:
//!   a page inside a batch ends at what is left (partial, with a cursor),
//!   and a call that starts once the budget is spent is refused with a
//!   message that says so, without running;
//! - all its calls end by one deadline, `query.timeout_ms` from the
//!   batch's start;
//! - a batch that reads whole ledgers takes one slot of the [`Gate`]
//!   before its first call; each of its blocking jobs keeps a share of
//!   that slot until the job ends, so a client that leaves or a call past
//!   the deadline frees no slot while a read still runs, and at most
//!   `jsonrpc.max_heavy_calls` batches read ledgers at once. When the gate
//!   refuses a batch, only its ledger-reading calls are refused: point
//!   lookups and info calls still run;
//! - once a call finds no room in what is left (or less than
//!   [`MIN_ROOM`](crate::share::MIN_ROOM) is left), the budget is spent and later calls are
//!   refused without running.
//!
//! A batch that reads ledgers also reserves room for its whole answer in
//! the budget of unsent answers (`jsonrpc.max_unsent_bytes`, see
//! [`crate::send`]) after its slot, under its deadline; without room its
//! ledger-reading calls are refused as when the gate refuses it. The room,
//! fitted to the answer, stays until the client has read it.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use jsonrpsee::server::BatchResponseBuilder;
use jsonrpsee::server::middleware::rpc::{
    Batch, BatchEntry, MethodResponse, Notification, Request, RpcServiceT,
};
use jsonrpsee::types::ErrorObjectOwned;

use crate::RpcMetrics;
use crate::budget::Call;
use crate::error::{RpcError, RpcResult};
use crate::gate::{Gate, Slot};
use crate::send::{Hold, Unsent};

use crate::methods::{Kind, kind};
pub(crate) use crate::share::Share;

/// The middleware (see the module docs); calls outside batches pass
/// through.
#[derive(Clone)]
pub(crate) struct Guard<S> {
    pub service: S,
    pub gate: Arc<Gate>,
    pub unsent: Unsent,
    pub metrics: RpcMetrics,
    pub timeout: std::time::Duration,
    pub budget: usize,
    pub max_response: usize,
    /// `jsonrpc.max_batch_calls`: each call's envelope may pass the
    /// budget by up to 1 KiB.
    pub max_calls: usize,
}

/// Whether a batch of these methods runs in a gate slot: it reads whole
/// ledgers. Point lookups never wait at the gate, in a batch or alone;
/// the batch's byte budget bounds their answers.
fn needs_slot<'a>(mut methods: impl Iterator<Item = &'a str>) -> bool {
    methods.any(|m| kind(m) == Some(Kind::Heavy))
}

impl<S> Guard<S>
where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Send
        + Sync,
{
    /// One call of the batch: run, or refused without running.
    async fn one(
        &self,
        mut req: Request<'_>,
        share: &Arc<Share>,
        slot: &RpcResult<()>,
    ) -> MethodResponse {
        let heavy = kind(req.method_name()) == Some(Kind::Heavy);
        let refusal = match slot {
            Err(e) if heavy => Some((e.code(), e.to_string())),
            _ if Instant::now() >= share.call.deadline => {
                let e = RpcError::Timeout(share.call.timeout.as_millis() as u64);
                let msg = format!(
                    "{} was not run: this batch's deadline ({} ms from its start, \
                     query.timeout_ms) passed; send it in another request",
                    req.method_name(),
                    share.call.timeout.as_millis()
                );
                Some((e.code(), msg))
            }
            _ if share.left() == 0 => {
                let e = RpcError::request(format!(
                    "this batch's answers already take {} bytes, all of jsonrpc.max_batch_bytes; \
                     {} was not run: send it in another request",
                    self.budget,
                    req.method_name()
                ));
                Some((e.code(), e.to_string()))
            }
            _ => None,
        };
        match refusal {
            Some((code, msg)) => {
                if kind(req.method_name()).is_some() {
                    self.metrics
                        .record_code(req.method_name(), share.start, code);
                }
                MethodResponse::error(req.id, ErrorObjectOwned::owned(code, msg, None::<()>))
            }
            None => {
                req.extensions_mut().insert(share.clone());
                self.service.call(req).await
            }
        }
    }
}

impl<S> RpcServiceT for Guard<S>
where
    S: RpcServiceT<
            MethodResponse = MethodResponse,
            BatchResponse = MethodResponse,
            NotificationResponse = MethodResponse,
        > + Clone
        + Send
        + Sync
        + 'static,
{
    type MethodResponse = MethodResponse;
    type NotificationResponse = MethodResponse;
    type BatchResponse = MethodResponse;

    fn call<'a>(&self, req: Request<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.service.call(req)
    }

    fn notification<'a>(
        &self,
        n: Notification<'a>,
    ) -> impl Future<Output = MethodResponse> + Send + 'a {
        self.service.notification(n)
    }

    fn batch<'a>(&self, batch: Batch<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
        let this = self.clone();
        async move {
            let start = Instant::now();
            let call = Call::new(start, this.timeout);
            let heavy = needs_slot(batch.iter().filter_map(|e| match e {
                Ok(BatchEntry::Call(r)) => Some(r.method_name()),
                _ => None,
            }));
            let hold = batch.iter().find_map(|e| match e {
                Ok(BatchEntry::Call(r)) => r.extensions().get::<Hold>().cloned(),
                _ => None,
            });
            let mut held: Option<Arc<Slot>> = None;
            let room = Hold::default();
            let slot = match heavy {
                true => match this.gate.enter("a batch", &call).await {
                    Ok(s) => {
                        let most = this.budget + this.max_calls.min(batch.len()) * 1024;
                        let most = most.min(this.max_response);
                        this.unsent.reserve("a batch", most, &call).await.map(|r| {
                            held = Some(Arc::new(s));
                            room.put(r);
                        })
                    }
                    Err(e) => Err(e),
                },
                false => Ok(()),
            };
            let share = Arc::new(Share {
                start,
                call,
                left: AtomicUsize::new(this.budget),
                slot: held,
                room: room.clone(),
            });
            let mut out = BatchResponseBuilder::new_with_limit(this.max_response);
            let mut notified = false;
            for entry in batch {
                let rp = match entry {
                    Ok(BatchEntry::Call(req)) => this.one(req, &share, &slot).await,
                    Ok(BatchEntry::Notification(n)) => {
                        notified = true;
                        this.service.notification(n).await;
                        continue;
                    }
                    Err(e) => {
                        let (err, id) = e.into_parts();
                        MethodResponse::error(id, err)
                    }
                };
                share.spend(rp.as_json().get().len() + 1);
                if let Err(too_big) = out.append(rp) {
                    return too_big;
                }
            }
            drop(share);
            if out.is_empty() && notified {
                return MethodResponse::notification();
            }
            let rp = MethodResponse::from_batch(out.finish());
            if let (Some(mut room), Some(hold)) = (room.take(), hold) {
                room.fit(rp.as_json().get().len());
                hold.put(room);
            }
            rp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_batches_that_read_ledgers_take_a_slot() {
        let slot = |m: &[&str]| needs_slot(m.iter().copied());
        assert!(slot(&["getHealth", "getLedgers"]));
        assert!(slot(&["getLatestLedger"]));
        assert!(!slot(&["getTransaction", "getTransaction"]));
        assert!(!slot(&["getTransaction", "getHealth", "getNetwork"]));
        assert!(!slot(&["noSuchMethod", "getVersionInfo"]));
        assert!(!slot(&[]));
    }
}
