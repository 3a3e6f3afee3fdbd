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

const METHODS: [(&str, Handler); 7] = [
    ("getHealth", info::get_health),
    ("getNetwork", info::get_network),
    ("getVersionInfo", info::get_version_info),
    ("getLatestLedger", ledgers::get_latest_ledger),
    ("getLedgers", ledgers::get_ledgers),
    ("getTransaction", txs::get_transaction),
    ("getTransactions", txs::get_transactions),
];

/// Every method, bound to `ctx`.
pub(crate) fn module(ctx: Ctx) -> RpcModule<Ctx> {
    let mut m = RpcModule::new(ctx);
    for (name, handler) in METHODS {
        // Fails only for a duplicate name; the table has none.
        let _ =
            m.register_async_method(name, move |params, ctx, _| call(name, handler, params, ctx));
    }
    m
}

async fn call(
    name: &'static str,
    handler: Handler,
    params: Params<'static>,
    ctx: Arc<Ctx>,
) -> Result<Value, ErrorObjectOwned> {
    let start = Instant::now();
    let timeout = ctx.settings.timeout;
    let job_ctx = ctx.clone();
    let job = tokio::task::spawn_blocking(move || handler(&job_ctx, &params));
    let out = match tokio::time::timeout(timeout, job).await {
        Ok(Ok(r)) => r,
        Ok(Err(join)) => Err(RpcError::Internal(format!("{name} failed: {join}"))),
        Err(_) => Err(RpcError::Timeout(timeout.as_millis() as u64)),
    };
    ctx.metrics.record(name, start, &out);
    if let Err(e) = &out
        && e.code() == crate::error::INTERNAL_ERROR
    {
        tracing::warn!(method = name, error = %e, "Stellar RPC call failed");
    }
    out.map_err(ErrorObjectOwned::from)
}
