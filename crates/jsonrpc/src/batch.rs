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
//! - a batch that reads whole ledgers, or holds more than one
//!   `getTransaction`, takes one slot of the [`Gate`] before its first
//!   call and keeps it until its last has ended, so at most
//!   `jsonrpc.max_heavy_calls` batches hold answers at once, and a batch
//!   waiting in line holds none.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use jsonrpsee::server::middleware::rpc::{
    Batch, BatchEntry, MethodResponse, Notification, Request, RpcServiceT,
};
use jsonrpsee::server::BatchResponseBuilder;
use jsonrpsee::types::ErrorObjectOwned;

use crate::RpcMetrics;
use crate::budget::Call;
use crate::error::{RpcError, RpcResult};
use crate::gate::{Gate, Slot};
use crate::methods::{Kind, kind};

/// What a call inside a batch finds in its extensions.
#[derive(Debug)]
pub(crate) struct Share {
    /// When the batch started.
    start: Instant,
    /// The batch's clock: the deadline every call of it ends by.
    pub call: Call,
    /// Answer bytes the batch may still take.
    left: AtomicUsize,
    /// Whether the batch holds a gate slot (its calls then take none).
    pub holds_slot: bool,
}

impl Share {
    /// Bytes the next answer may take.
    pub(crate) fn left(&self) -> usize {
        self.left.load(Ordering::Acquire)
    }

    fn spend(&self, bytes: usize) {
        let _ = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| {
                Some(l.saturating_sub(bytes))
            });
    }
}

/// The middleware (see the module docs); calls outside batches pass
/// through.
#[derive(Clone)]
pub(crate) struct Guard<S> {
    pub service: S,
    pub gate: Arc<Gate>,
    pub metrics: RpcMetrics,
    pub timeout: std::time::Duration,
    pub budget: usize,
    pub max_response: usize,
}

/// Whether a batch of these methods runs in a gate slot: it reads whole
/// ledgers, or holds more than one point lookup (each may be a large
/// transaction).
fn needs_slot<'a>(methods: impl Iterator<Item = &'a str>) -> bool {
    let mut points = 0;
    for m in methods {
        match kind(m) {
            Some(Kind::Heavy) => return true,
            Some(Kind::Point) => points += 1,
            Some(Kind::Info) | None => {}
        }
    }
    points > 1
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
    async fn one(&self, mut req: Request<'_>, share: &Arc<Share>, slot: &RpcResult<()>) -> MethodResponse {
        let refusal = match slot {
            Err(e) => Some((e.code(), e.to_string())),
            Ok(()) if Instant::now() >= share.call.deadline => {
                let e = share.call.timed_out();
                Some((e.code(), e.to_string()))
            }
            Ok(()) if share.left() == 0 => {
                let e = RpcError::request(format!(
                    "this batch's answers already take {} bytes, all of jsonrpc.max_batch_bytes; \
                     {} was not run: send it in another request",
                    self.budget,
                    req.method_name()
                ));
                Some((e.code(), e.to_string()))
            }
            Ok(()) => None,
        };
        match refusal {
            Some((code, msg)) => {
                if kind(req.method_name()).is_some() {
                    self.metrics.record_code(req.method_name(), share.start, code);
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

    fn notification<'a>(&self, n: Notification<'a>) -> impl Future<Output = MethodResponse> + Send + 'a {
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
            let mut held: Option<Slot> = None;
            let slot = match heavy {
                true => this.gate.enter("a batch", &call).await.map(|s| held = Some(s)),
                false => Ok(()),
            };
            let share = Arc::new(Share {
                start,
                call,
                left: AtomicUsize::new(this.budget),
                holds_slot: held.is_some(),
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
            drop(held);
            if out.is_empty() && notified {
                MethodResponse::notification()
            } else {
                MethodResponse::from_batch(out.finish())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_that_read_ledgers_or_several_transactions_take_a_slot() {
        let slot = |m: &[&str]| needs_slot(m.iter().copied());
        assert!(slot(&["getHealth", "getLedgers"]));
        assert!(slot(&["getLatestLedger"]));
        assert!(slot(&["getTransaction", "getTransaction"]));
        assert!(!slot(&["getTransaction", "getHealth", "getNetwork"]));
        assert!(!slot(&["noSuchMethod", "getVersionInfo"]));
        assert!(!slot(&[]));
    }
}
