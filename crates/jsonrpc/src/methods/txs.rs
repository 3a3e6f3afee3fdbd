//! `getTransaction` and `getTransactions`.

use jsonrpsee::types::Params;
use ledgerstore_store::{Reader, ledger_iter};
use serde_json::{Map, Value};

use super::render::tx_details;
use crate::Ctx;
use crate::bounds::Range;
use crate::error::{RpcError, RpcResult};
use crate::params::{
    Format, GetTransaction, PageLimits, Paged, Start, named, start_out_of_range, tx_hash,
};
use crate::xdr::TxView;

/// stellar-rpc's page sizes for `getTransactions`.
const LIMITS: PageLimits = PageLimits {
    default: 50,
    max: 200,
};

/// Ledger records read per step while paging.
const LEDGER_CHUNK: usize = 2;

/// A transaction's place in the history: stellar-rpc's TOID with
/// operation order 1, `(ledger << 32) | (applicationOrder << 12) | 1`.
pub(crate) fn toid(ledger: u32, application_order: u32) -> u64 {
    (u64::from(ledger) << 32) | (u64::from(application_order & 0xF_FFFF) << 12) | 1
}

/// The ledger and application order a TOID points at.
fn parse_toid(id: u64) -> (u32, u32) {
    ((id >> 32) as u32, ((id >> 12) & 0xF_FFFF) as u32)
}

fn range_fields(out: &mut Map<String, Value>, r: &Range, close_time_suffix: &str, string: bool) {
    let time = |t: u64| -> Value {
        if string {
            t.to_string().into()
        } else {
            t.into()
        }
    };
    out.insert("latestLedger".into(), r.latest.seq.into());
    out.insert(
        format!("latestLedger{close_time_suffix}"),
        time(r.latest.close_time),
    );
    out.insert("oldestLedger".into(), r.oldest.seq.into());
    out.insert(
        format!("oldestLedger{close_time_suffix}"),
        time(r.oldest.close_time),
    );
}

pub(super) fn get_transaction(ctx: &Ctx, params: &Params<'_>) -> RpcResult<Value> {
    let p: GetTransaction = named(params)?;
    let format = Format::parse(p.xdr_format.as_deref())?;
    let hash = tx_hash(&p.hash)?;
    let store = ctx.store()?;
    let range = ctx.bounds.get(&*store)?;
    let mut out = Map::new();
    range_fields(&mut out, &range, "CloseTime", true);
    match ctx.timed_read(|| store.get_tx(&hash))? {
        None => {
            // stellar-rpc's NOT_FOUND carries the details' zero values.
            out.insert("status".into(), "NOT_FOUND".into());
            out.insert("applicationOrder".into(), 0.into());
            out.insert("feeBump".into(), false.into());
            out.insert("events".into(), Value::Object(Map::new()));
            out.insert("ledger".into(), 0.into());
            out.insert("createdAt".into(), "0".into());
        }
        Some(rec) => {
            let tx = TxView::new(&rec)?;
            tx_details(&mut out, &tx, format)?;
            out.insert("createdAt".into(), rec.close_time.to_string().into());
        }
    }
    // The hash asked for, as stellar-rpc answers: a fee bump found by its
    // inner hash reports that hash here (getTransactions lists the outer).
    out.insert("txHash".into(), p.hash.into());
    Ok(Value::Object(out))
}

pub(super) fn get_transactions(ctx: &Ctx, params: &Params<'_>) -> RpcResult<Value> {
    let page = named::<Paged>(params)?.page(LIMITS)?;
    let store = ctx.store()?;
    let range = ctx.bounds.get(&*store)?;
    let (oldest, latest) = (range.oldest.seq, range.latest.seq);
    // (first ledger, application orders to skip in it)
    let (first, skip) = match page.start {
        Start::Ledger(s) if s < oldest || s > latest => {
            return Err(start_out_of_range(s, oldest, latest));
        }
        Start::Ledger(s) => (s, 0),
        Start::Cursor(c) => match parse_toid(c) {
            (l, _) if l < oldest => {
                return Err(RpcError::params(format!(
                    "invalid cursor {c}: ledger {l} is older than the oldest ledger held, {oldest}"
                )));
            }
            start => start,
        },
    };
    let items = if first <= latest {
        page_txs(&*store, first, skip, latest, page.limit, page.format)?
    } else {
        Vec::new()
    };
    // The last transaction returned; once the page ran to the latest
    // ledger, at least that ledger's start, and never before the request's
    // own cursor, so resending it never repeats or skips a transaction.
    let last = items.last().map_or(0, |(l, o, _)| toid(*l, *o));
    let cursor = if items.len() >= page.limit {
        last
    } else {
        let asked = match page.start {
            Start::Cursor(c) => c,
            Start::Ledger(_) => 0,
        };
        last.max(toid(latest, 0)).max(asked)
    };
    let mut out = Map::new();
    out.insert(
        "transactions".into(),
        Value::Array(items.into_iter().map(|(_, _, v)| v).collect()),
    );
    range_fields(&mut out, &range, "CloseTimestamp", false);
    out.insert("cursor".into(), cursor.to_string().into());
    Ok(Value::Object(out))
}

/// Up to `limit` transactions from ledger `first` (after application
/// order `skip` in it) through `last`, in order: (ledger, order, JSON).
fn page_txs(
    store: &dyn Reader,
    first: u32,
    skip: u32,
    last: u32,
    limit: usize,
    format: Format,
) -> RpcResult<Vec<(u32, u32, Value)>> {
    let mut items = Vec::with_capacity(limit);
    for ledger in ledger_iter(store, first, last, LEDGER_CHUNK) {
        let ledger = ledger?;
        let from = if ledger.seq == first {
            skip as usize
        } else {
            0
        };
        let want = limit - items.len();
        let hashes: Vec<_> = ledger
            .tx_hashes
            .iter()
            .skip(from)
            .take(want)
            .copied()
            .collect();
        let found = store.batch_get_txs(&hashes)?;
        for (hash, rec) in hashes.iter().zip(found) {
            let rec = rec.ok_or_else(|| {
                RpcError::Internal(format!(
                    "ledger {} lists transaction {} but it is not stored",
                    ledger.seq,
                    hex::encode(hash.0)
                ))
            })?;
            let tx = TxView::new(&rec)?;
            let mut item = Map::new();
            tx_details(&mut item, &tx, format)?;
            item.insert("createdAt".into(), rec.close_time.into());
            items.push((rec.ledger_seq, tx.application_order(), Value::Object(item)));
        }
        if items.len() >= limit {
            break;
        }
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toid_round_trips_and_matches_stellar_rpc() {
        // stellar-rpc's cursor for ledger 63092982, application order 1.
        assert_eq!(toid(63_092_982, 1), (63_092_982u64 << 32) | (1 << 12) | 1);
        assert_eq!(parse_toid(toid(63_092_982, 305)), (63_092_982, 305));
        assert_eq!(parse_toid(toid(u32::MAX, 0xF_FFFF)), (u32::MAX, 0xF_FFFF));
    }
}
