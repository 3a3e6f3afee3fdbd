//! The methods: registration, and what every call shares (params parsed
//! first, reads on the blocking pool under `query.timeout_ms`, checked by
//! the task itself; ledger-reading calls through the [`crate::gate`];
//! metrics).

use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::Ctx;
use crate::budget::Call;
use crate::error::{RpcError, RpcResult};

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

/// A method, and whether it is a point lookup (one key, or only the
/// cached range) that may run inline on the async worker. The others read
/// whole ledgers: they pass the gate and run on the blocking pool.
const METHODS: [(&str, Handler, bool); 7] = [
    ("getHealth", info::get_health, true),
    ("getNetwork", info::get_network, true),
    ("getVersionInfo", info::get_version_info, true),
    ("getLatestLedger", ledgers::get_latest_ledger, false),
    ("getLedgers", ledgers::get_ledgers, false),
    ("getTransaction", txs::get_transaction, true),
    ("getTransactions", txs::get_transactions, false),
];

/// Every method, bound to `ctx`.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    for (name, handler, point) in METHODS {
        // Fails only for a duplicate name; the table has none.
        let _ = m.register_async_method(name, move |params, ctx, _| {
            call(name, handler, point, params, ctx)
        });
    }
    m
}

async fn call(
    name: &'static str,
    handler: Handler,
    point: bool,
    params: Params<'static>,
    ctx: Arc<Ctx>,
) -> Result<Box<RawValue>, ErrorObjectOwned> {
    let start = Instant::now();
    let call = Call::new(start, ctx.settings.timeout);
    let out = if point && ctx.access.read_inline() {
        inline(name, handler, &params, &ctx, &call)
    } else {
        pooled(name, handler, point, params, &ctx, call).await
    };
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

/// A call on the blocking pool; a ledger-reading one first takes a slot
/// of the gate, which the task holds until it ends. The task checks the
/// deadline itself and stops; the answer is a timeout at the deadline
/// even if a store read is still blocked.
async fn pooled(
    name: &'static str,
    handler: Handler,
    point: bool,
    params: Params<'static>,
    ctx: &Arc<Ctx>,
    call: Call,
) -> RpcResult<Box<RawValue>> {
    let slot = match point {
        true => None,
        false => Some(ctx.gate.enter(name, &call).await?),
    };
    let job_ctx = ctx.clone();
    let job = tokio::task::spawn_blocking(move || {
        let r = handler(&job_ctx, &params, &call);
        drop(slot);
        r
    });
    let deadline = tokio::time::Instant::from_std(call.deadline);
    match tokio::time::timeout_at(deadline, job).await {
        Ok(Ok(r)) => r,
        Ok(Err(join)) => Err(RpcError::Internal(format!("{name} failed: {join}"))),
        Err(_) => Err(call.timed_out()),
    }
}
