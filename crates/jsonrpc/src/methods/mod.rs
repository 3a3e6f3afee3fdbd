//! The methods: registration, and what every call shares (params parsed
//! first, reads on the blocking pool under `query.timeout_ms`, metrics).

use std::sync::Arc;
use std::time::Instant;

use jsonrpsee::RpcModule;
use jsonrpsee::types::{ErrorObjectOwned, Params};
use serde_json::Value;

use crate::Ctx;
use crate::error::{RpcError, RpcResult};

mod info;
mod ledgers;
mod render;
mod txs;

type Handler = fn(&Ctx, &Params<'_>) -> RpcResult<Value>;

/// A method, and whether it is a point lookup (one key, or only the
/// cached range) that may run inline on the async worker.
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
) -> Result<Value, ErrorObjectOwned> {
    let start = Instant::now();
    let timeout = ctx.settings.timeout;
    let out = if point && ctx.access.read_inline() {
        inline(name, handler, &params, &ctx, start)
    } else {
        let job_ctx = ctx.clone();
        let job = tokio::task::spawn_blocking(move || handler(&job_ctx, &params));
        match tokio::time::timeout(timeout, job).await {
            Ok(Ok(r)) => r,
            Ok(Err(join)) => Err(RpcError::Internal(format!("{name} failed: {join}"))),
            Err(_) => Err(RpcError::Timeout(timeout.as_millis() as u64)),
        }
    };
    ctx.metrics.record(name, start, &out);
    if let Err(e) = &out
        && e.code() == crate::error::INTERNAL_ERROR
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
    start: Instant,
) -> RpcResult<Value> {
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::INLINE.with(|i| i.set(true));
        let r = handler(ctx, params);
        crate::INLINE.with(|i| i.set(false));
        r
    }))
    .unwrap_or_else(|_| {
        crate::INLINE.with(|i| i.set(false));
        Err(RpcError::Internal(format!("{name} panicked")))
    });
    let timeout = ctx.settings.timeout;
    if start.elapsed() > timeout {
        return Err(RpcError::Timeout(timeout.as_millis() as u64));
    }
    r
}
