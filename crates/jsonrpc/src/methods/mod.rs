//! The methods: registration, and what every call shares (params parsed
//! first, reads on the daemon's read threads ([`crate::StoreAccess::spawn_read`])
//! under `query.timeout_ms`, checked by the task itself; ledger-reading
//! calls through the [`crate::gate`]; metrics).

use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Ctx;
use crate::budget::{Call, TRAILER};
use crate::error::{RpcError, RpcResult};
use crate::gate::Slot;
use crate::reads::{ReadJob, shared_read};
use crate::send::Hold;
use crate::share::Share;

mod events;
mod info;
mod ledgers;
mod page;
mod render;
mod txs;

type Handler = fn(&Ctx, &Params<'_>, &Call) -> RpcResult<Box<RawValue>>;

/// A small result built as a `Value`, as the method's answer.
fn to_raw(v: Value) -> RpcResult<Box<RawValue>> {
    serde_json::value::to_raw_value(&v).map_err(|e| RpcError::Internal(e.to_string()))
}

/// What a method costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Reads nothing of the history (or only the cached range); a small
    /// answer.
    Info,
    /// One key: may run inline on the async worker; one transaction's
    /// answer.
    Point,
    /// Reads whole ledgers: passes the gate and runs on the read threads.
    Heavy,
}

const METHODS: [(&str, Handler, Kind); 8] = [
    ("getHealth", info::get_health, Kind::Info),
    ("getNetwork", info::get_network, Kind::Info),
    ("getVersionInfo", info::get_version_info, Kind::Info),
    ("getLatestLedger", ledgers::get_latest_ledger, Kind::Heavy),
    ("getLedgers", ledgers::get_ledgers, Kind::Heavy),
    ("getTransaction", txs::get_transaction, Kind::Point),
    ("getTransactions", txs::get_transactions, Kind::Heavy),
    ("getEvents", events::get_events, Kind::Heavy),
];

/// What `method` costs, or `None` for no such method.
pub(crate) fn kind(method: &str) -> Option<Kind> {
    METHODS
        .iter()
        .find(|(name, ..)| *name == method)
        .map(|(.., k)| *k)
}

/// Every method, bound to `ctx`.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    for (name, handler, kind) in METHODS {
        // Fails only for a duplicate name; the table has none.
        let _ = m.register_async_method(name, move |params, ctx, ext| {
            let share = ext.get::<Arc<Share>>().cloned();
            let hold = ext.get::<Hold>().cloned();
            call(name, handler, kind, params, ctx, share, hold)
        });
    }
    m
}

async fn call(
    name: &'static str,
    handler: Handler,
    kind: Kind,
    params: Params<'static>,
    ctx: Arc<Ctx>,
    batch: Option<Arc<Share>>,
    hold: Option<Hold>,
) -> Result<Box<RawValue>, ErrorObjectOwned> {
    let point = kind != Kind::Heavy;
    let start = Instant::now();
    let mut call = Call::new(start, ctx.settings.timeout);
    if let Some(b) = &batch {
        call = call.within(&b.call, b.left());
    }
    // A batch that reads ledgers already holds a slot and room for all
    // its calls; each of its jobs keeps a share of both until the job
    // ends.
    let held = batch
        .as_ref()
        .and_then(|b| b.slot.clone().map(|s| (s, b.room.clone())));
    let gated = !point && held.is_none();
    let out = if point && ctx.access.read_inline() {
        inline(name, handler, &params, &ctx, &call)
    } else {
        let shared = kind == Kind::Info;
        pooled(name, handler, gated, shared, held, hold, params, &ctx, call).await
    };
    if let (Some(b), Err(RpcError::NoRoom(_))) = (&batch, &out) {
        // A call of the batch that did not fit in what was left: the
        // batch's budget is spent, and later calls are refused unrun.
        b.exhaust();
    }
    ctx.metrics.record(name, start, &out);
    // Busy refusals are counted (jsonrpc_server_handled_total), not
    // logged: under a flood they would fill the log.
    if let Err(e) = &out
        && e.code() == crate::error::INTERNAL_ERROR
        && !matches!(e, RpcError::Busy(_))
    {
        tracing::warn!(method = name, error = %e, "Stellar RPC call failed");
    }
    out.map_err(ErrorObjectOwned::from)
}

/// A point lookup on this async worker, as the gRPC lookups run: no timer,
/// but an answer past the deadline is a timeout, and a panic is this
/// call's error, not the connection's.
fn inline(
    name: &str,
    handler: Handler,
    params: &Params<'_>,
    ctx: &Ctx,
    call: &Call,
) -> RpcResult<Box<RawValue>> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::INLINE.with(|i| i.set(true));
        let r = handler(ctx, params, call);
        crate::INLINE.with(|i| i.set(false));
        r
    }))
    .unwrap_or_else(|_| {
        crate::INLINE.with(|i| i.set(false));
        Err(RpcError::Internal(format!("{name} panicked")))
    });
    call.check()?;
    r
}

/// Bytes a call's answer may add to its result: the JSON-RPC envelope.
const ENVELOPE: usize = 256;

/// A call on the daemon's read threads (an `Info` call, `shared`, on
/// tokio's blocking pool, so it answers while reads wait in line there);
/// a ledger-reading one first takes a slot
/// of the gate and then room for its largest answer in the budget of
/// unsent answers (`jsonrpc.max_unsent_bytes`), or shares its batch's
/// slot and room (`held`). The task holds both until it ends, so a
/// client that leaves, or a call past its deadline, frees neither while
/// its read still runs; an answer's room, fitted to it, then goes into
/// the request's [`Hold`] and stays until the client has read it. The
/// task checks the deadline itself and stops; the answer is a timeout at
/// the deadline even if a store read is still blocked.
#[allow(clippy::too_many_arguments)]
async fn pooled(
    name: &'static str,
    handler: Handler,
    gated: bool,
    shared: bool,
    held: Option<(Arc<Slot>, Hold)>,
    hold: Option<Hold>,
    params: Params<'static>,
    ctx: &Arc<Ctx>,
    call: Call,
) -> RpcResult<Box<RawValue>> {
    let slot = match gated {
        true => Some(ctx.gate.enter(name, &call).await?),
        false => None,
    };
    let room = match gated {
        true => {
            let s = &ctx.settings;
            let most = s.page.max_bytes.min(s.max_response_bytes as usize) + TRAILER;
            Some(ctx.unsent.reserve(name, most, &call).await?)
        }
        false => None,
    };
    let job_ctx = ctx.clone();
    let work = move || {
        // A read waiting for another's fetch from the published store
        // stops at the deadline too.
        let r = ledgerstore_store::with_read_deadline(call.deadline, || {
            handler(&job_ctx, &params, &call)
        });
        drop(slot);
        drop(held);
        (r, room)
    };
    // The job hands its answer over before it returns; its ticket, dropped
    // when the call stops waiting (its deadline, or the client gone), keeps
    // a job still in line from starting (it frees its slot and room when a
    // thread takes it off the line); one running finishes on its thread.
    let (answer, answered) = tokio::sync::oneshot::channel();
    let job: ReadJob = Box::new(move || {
        let _ = answer.send(work());
    });
    let ticket = match shared {
        true => shared_read(job),
        false => ctx.access.spawn_read(job),
    };
    // Both waits under the deadline: the ticket (the job has ended), then
    // its answer, there by then from any spawn_read that keeps the
    // ticket's promise, and within the deadline from any other.
    let answer = async {
        ticket.await?;
        answered
            .await
            .map_err(|_| "it ended without an answer".to_string())
    };
    let deadline = tokio::time::Instant::from_std(call.deadline);
    match tokio::time::timeout_at(deadline, answer).await {
        Ok(Ok((r, room))) => {
            if let (Ok(answer), Some(mut room), Some(hold)) = (&r, room, hold) {
                room.fit(answer.get().len() + ENVELOPE);
                hold.put(room);
            }
            // A read stopped by the deadline answers as the deadline does.
            r.map_err(|e| match e.stopped_by_deadline() {
                true => call.timed_out(),
                false => e,
            })
        }
        Ok(Err(e)) => Err(RpcError::Internal(format!("{name} failed: {e}"))),
        Err(_) => Err(call.timed_out()),
    }
}
