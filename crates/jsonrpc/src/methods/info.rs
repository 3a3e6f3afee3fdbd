//! `getHealth`, `getNetwork`, `getVersionInfo`.

use jsonrpsee::types::Params;
use serde_json::json;
use serde_json::value::RawValue;

use super::to_raw;
use crate::Ctx;
use crate::budget::Call;
use crate::error::RpcResult;
use crate::params::named;

/// No params are taken (names given are ignored, as stellar-rpc does).
#[derive(Debug, Default, serde::Deserialize)]
pub(super) struct NoParams {}

pub(super) fn get_health(ctx: &Ctx, params: &Params<'_>, _call: &Call) -> RpcResult<Box<RawValue>> {
    named::<NoParams>(params)?;
    let store = ctx.store()?;
    let r = ctx.bounds.get(&*store)?;
    to_raw(json!({
        "status": "healthy",
        "latestLedger": r.latest.seq,
        "latestLedgerCloseTime": r.latest.close_time.to_string(),
        "oldestLedger": r.oldest.seq,
        "oldestLedgerCloseTime": r.oldest.close_time.to_string(),
        "ledgerRetentionWindow": r.len(),
    }))
}

pub(super) fn get_network(
    ctx: &Ctx,
    params: &Params<'_>,
    _call: &Call,
) -> RpcResult<Box<RawValue>> {
    named::<NoParams>(params)?;
    let store = ctx.store()?;
    let r = ctx.bounds.get(&*store)?;
    to_raw(json!({
        "passphrase": ctx.settings.passphrase,
        "protocolVersion": r.latest.protocol_version,
    }))
}

pub(super) fn get_version_info(
    ctx: &Ctx,
    params: &Params<'_>,
    _call: &Call,
) -> RpcResult<Box<RawValue>> {
    named::<NoParams>(params)?;
    // As stellar-rpc: the protocol is 0 while no ledger is held; this
    // method never fails.
    let protocol = ctx
        .store()
        .and_then(|s| ctx.bounds.get(&*s))
        .map_or(0, |r| r.latest.protocol_version);
    let v = &ctx.settings.version;
    to_raw(json!({
        "version": v.version,
        "commitHash": v.commit_hash,
        "buildTimestamp": v.build_timestamp,
        // No captive core: ledgers come from data lakes and pipelines.
        "captiveCoreVersion": "",
        "protocolVersion": protocol,
    }))
}
