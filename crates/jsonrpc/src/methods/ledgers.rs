//! `getLedgers` and `getLatestLedger`.

use jsonrpsee::types::Params;
use ledgerstore_db_api::LedgerRecord;
use serde_json::{Map, Value, json};

use super::info::NoParams;
use super::render::{b64, put_xdr};
use crate::Ctx;
use crate::error::{RpcError, RpcResult};
use crate::params::{Format, PageLimits, Paged, Start, named, start_out_of_range};
use crate::xdr::{decode, encode, ledger_header};

/// stellar-rpc's page sizes for `getLedgers`.
const LIMITS: PageLimits = PageLimits {
    default: 50,
    max: 200,
};

fn metadata(out: &mut Map<String, Value>, rec: &LedgerRecord, format: Format) -> RpcResult<()> {
    put_xdr(out, "metadata", format, &rec.raw, || {
        decode::<stellar_xdr::LedgerCloseMeta>(&rec.raw, "LedgerCloseMeta")
    })
}

pub(super) fn get_latest_ledger(ctx: &Ctx, params: &Params<'_>) -> RpcResult<Value> {
    named::<NoParams>(params)?;
    let store = ctx.store()?;
    let range = ctx.bounds.get(&*store)?;
    let rec = store.get_ledger(range.latest.seq)?.ok_or_else(|| {
        RpcError::Internal(format!(
            "ledger {} is inside the mark but not stored",
            range.latest.seq
        ))
    })?;
    let h = ledger_header(&rec)?;
    let mut out = Map::new();
    out.insert("id".into(), hex::encode(h.entry.hash.0).into());
    out.insert(
        "protocolVersion".into(),
        h.entry.header.ledger_version.into(),
    );
    out.insert("sequence".into(), rec.seq.into());
    out.insert("closeTime".into(), rec.close_time.to_string().into());
    // A bare LedgerHeader here (getLedgers gives the history entry).
    let header = encode(&h.entry.header, "LedgerHeader")?;
    out.insert("headerXdr".into(), b64(&header));
    out.insert("metadataXdr".into(), b64(&rec.raw));
    Ok(Value::Object(out))
}

pub(super) fn get_ledgers(ctx: &Ctx, params: &Params<'_>) -> RpcResult<Value> {
    let page = named::<Paged>(params)?.page(LIMITS)?;
    let store = ctx.store()?;
    let range = ctx.bounds.get(&*store)?;
    let (oldest, latest) = (range.oldest.seq, range.latest.seq);
    let first = match page.start {
        Start::Ledger(s) if s < oldest || s > latest => {
            return Err(start_out_of_range(s, oldest, latest));
        }
        Start::Ledger(s) => s,
        // The page after `c`. A cursor at the latest ledger is a poll for
        // newer ones: an empty page (stellar-rpc v28 refuses it).
        Start::Cursor(c) if c < u64::from(oldest) || c > u64::from(latest) => {
            return Err(RpcError::params(format!(
                "cursor ('{c}') must be between the oldest ledger: {oldest} and the latest \
                 ledger: {latest} for this rpc instance"
            )));
        }
        Start::Cursor(c) => c as u32 + 1,
    };
    let last = latest.min(first.saturating_add(page.limit as u32 - 1));
    let mut ledgers = Vec::with_capacity(page.limit);
    let mut cursor = match page.start {
        Start::Cursor(c) => c.to_string(),
        Start::Ledger(s) => s.saturating_sub(1).to_string(),
    };
    if first <= latest {
        for rec in ledgerstore_store::ledger_iter(&*store, first, last, 4) {
            let rec = rec?;
            ledgers.push(ledger_info(&rec, page.format)?);
            cursor = rec.seq.to_string();
        }
    }
    Ok(json!({
        "ledgers": ledgers,
        "latestLedger": latest,
        "latestLedgerCloseTime": range.latest.close_time,
        "oldestLedger": oldest,
        "oldestLedgerCloseTime": range.oldest.close_time,
        "cursor": cursor,
    }))
}

/// One item of `getLedgers`. In json mode the `…Xdr` fields stay, empty,
/// as stellar-rpc emits them.
fn ledger_info(rec: &LedgerRecord, format: Format) -> RpcResult<Value> {
    let h = ledger_header(rec)?;
    let mut item = Map::new();
    item.insert("hash".into(), hex::encode(h.entry.hash.0).into());
    item.insert("sequence".into(), rec.seq.into());
    item.insert("ledgerCloseTime".into(), rec.close_time.to_string().into());
    if format == Format::Json {
        item.insert("headerXdr".into(), "".into());
        item.insert("metadataXdr".into(), "".into());
    }
    // The history entry's exact bytes in the stored meta.
    put_xdr(
        &mut item,
        "header",
        format,
        &rec.raw[h.span.clone()],
        || Ok(&h.entry),
    )?;
    metadata(&mut item, rec, format)?;
    Ok(Value::Object(item))
}
