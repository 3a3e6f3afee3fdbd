//! `getLedgers` and `getLatestLedger`.

use jsonrpsee::types::Params;
use ledgerstore_db_api::LedgerRecord;
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::info::NoParams;
use super::page::{PageOut, Ser, estimate, write_one};
use super::render::{B64, put_xdr};
use crate::Ctx;
use crate::budget::Call;
use crate::error::{RpcError, RpcResult};
use crate::params::{Format, PageLimits, Paged, Start, named, start_out_of_range};
use crate::xdr::{Header, decode, encode, ledger_header};

/// Page sizes for `getLedgers`: stellar-rpc's maximum (a larger limit is
/// refused as stellar-rpc refuses it), a default of 5 (stellar-rpc: 50;
/// 50 pubnet ledgers are ~95 MB of base64). Whatever the limit, a page
/// ends at the byte and ledger budgets (`jsonrpc.max_page_bytes`,
/// `jsonrpc.max_page_ledgers`).
const LIMITS: PageLimits = PageLimits {
    default: 5,
    max: 200,
};

/// Ledger records read per step.
const LEDGER_CHUNK: usize = 1;

pub(super) fn get_latest_ledger(
    ctx: &Ctx,
    params: &Params<'_>,
    call: &Call,
) -> RpcResult<Box<RawValue>> {
    named::<NoParams>(params)?;
    let store = ctx.store()?;
    let range = ctx.bounds.get(&*store)?;
    call.check()?;
    let rec = store.get_ledger(range.latest.seq)?.ok_or_else(|| {
        RpcError::Internal(format!(
            "ledger {} is inside the mark but not stored",
            range.latest.seq
        ))
    })?;
    let h = ledger_header(&rec)?;
    // A bare LedgerHeader here (getLedgers gives the history entry).
    let header = encode(&h.entry.header, "LedgerHeader")?;
    write_one(
        ctx,
        call,
        || format!("ledger {}", rec.seq),
        |ser| {
            let mut m = ser.serialize_map(None)?;
            m.serialize_entry("id", &hex::encode(h.entry.hash.0))?;
            m.serialize_entry("protocolVersion", &h.entry.header.ledger_version)?;
            m.serialize_entry("sequence", &rec.seq)?;
            m.serialize_entry("closeTime", &rec.close_time.to_string())?;
            m.serialize_entry("headerXdr", &B64(&header))?;
            m.serialize_entry("metadataXdr", &B64(&rec.raw))?;
            m.end()
        },
    )
}

pub(super) fn get_ledgers(ctx: &Ctx, params: &Params<'_>, call: &Call) -> RpcResult<Box<RawValue>> {
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
    let most = page
        .limit
        .min(ctx.settings.page.max_ledgers as usize)
        .max(1);
    let last = latest.min(first.saturating_add(most as u32 - 1));
    let mut cursor = match page.start {
        Start::Cursor(c) => c.to_string(),
        Start::Ledger(s) => s.saturating_sub(1).to_string(),
    };
    let mut out = PageOut::new("ledgers", ctx, call)?;
    if first <= latest {
        let mut recs = ledgerstore_store::ledger_iter(&*store, first, last, LEDGER_CHUNK);
        loop {
            // Past half the deadline a page with items ends before reading
            // another ledger (a read that may pass the deadline would turn
            // the whole page into a timeout).
            if out.len() > 0 && call.soft_passed() {
                break;
            }
            let Some(rec) = recs.next() else { break };
            if let Err(e) = call.check() {
                if out.len() > 0 {
                    break;
                }
                return Err(e);
            }
            let rec = rec?;
            if !out.room_for(estimate(rec.raw.len(), page.format)) {
                break;
            }
            let h = ledger_header(&rec)?;
            let meta = match page.format {
                Format::Json => Some(decode::<stellar_xdr::LedgerCloseMeta>(
                    &rec.raw,
                    "LedgerCloseMeta",
                )?),
                Format::Base64 => None,
            };
            let fit = out.item(
                || format!("ledger {} as {}", rec.seq, page.format.name()),
                |ser| ledger_info(ser, &rec, &h, meta.as_ref()),
            )?;
            if !fit {
                break;
            }
            cursor = rec.seq.to_string();
        }
    }
    let mut fields = Map::new();
    fields.insert("latestLedger".into(), latest.into());
    fields.insert(
        "latestLedgerCloseTime".into(),
        range.latest.close_time.into(),
    );
    fields.insert("oldestLedger".into(), oldest.into());
    fields.insert(
        "oldestLedgerCloseTime".into(),
        range.oldest.close_time.into(),
    );
    fields.insert("cursor".into(), Value::String(cursor));
    out.finish(fields)
}

/// One item of `getLedgers`. In json mode the `…Xdr` fields stay, empty,
/// as stellar-rpc emits them.
fn ledger_info(
    ser: &mut Ser<'_>,
    rec: &LedgerRecord,
    h: &Header,
    meta: Option<&stellar_xdr::LedgerCloseMeta>,
) -> Result<(), serde_json::Error> {
    let mut m = ser.serialize_map(None)?;
    m.serialize_entry("hash", &hex::encode(h.entry.hash.0))?;
    m.serialize_entry("sequence", &rec.seq)?;
    m.serialize_entry("ledgerCloseTime", &rec.close_time.to_string())?;
    if meta.is_some() {
        m.serialize_entry("headerXdr", "")?;
        m.serialize_entry("metadataXdr", "")?;
    }
    // The history entry's exact bytes in the stored meta.
    let entry = meta.is_some().then_some(&h.entry);
    put_xdr(&mut m, "header", &rec.raw[h.span.clone()], entry)?;
    put_xdr(&mut m, "metadata", &rec.raw, meta)?;
    m.end()
}
