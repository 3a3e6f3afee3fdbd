//! `getTransaction` and `getTransactions`.

use jsonrpsee::types::Params;
use ledgerstore_db_api::TxRecord;
use ledgerstore_store::{Reader, ledger_head_iter};
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::page::{PageOut, estimate, write_one};
use super::render::TxOut;
use crate::Ctx;
use crate::bounds::Range;
use crate::budget::Call;
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
const LEDGER_CHUNK: usize = 1;

/// Transactions fetched per store call while paging.
const TX_CHUNK: usize = 8;

/// A transaction's place in the history: stellar-rpc's TOID with
/// operation order 1, `(ledger << 32) | (applicationOrder << 12) | 1`.
pub(crate) fn toid(ledger: u32, application_order: u32) -> u64 {
    (u64::from(ledger) << 32) | (u64::from(application_order & 0xF_FFFF) << 12) | 1
}

/// The ledger and application order a TOID points at.
fn parse_toid(id: u64) -> (u32, u32) {
    ((id >> 32) as u32, ((id >> 12) & 0xF_FFFF) as u32)
}

/// The range fields of both methods: close times as strings
/// (`getTransaction`) or numbers (`getTransactions`), under
/// `…{close_time_suffix}`.
fn range_fields(r: &Range, close_time_suffix: &str, string: bool) -> Map<String, Value> {
    let time = |t: u64| -> Value {
        if string {
            t.to_string().into()
        } else {
            t.into()
        }
    };
    let mut out = Map::new();
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
    out
}

pub(super) fn get_transaction(
    ctx: &Ctx,
    params: &Params<'_>,
    call: &Call,
) -> RpcResult<Box<RawValue>> {
    let p: GetTransaction = named(params)?;
    let format = Format::parse(p.xdr_format.as_deref())?;
    let hash = tx_hash(&p.hash)?;
    let store = ctx.store()?;
    let range = ctx.bounds.get(&*store)?;
    let rec = ctx.timed_read(|| store.get_tx(&hash))?;
    let view = rec.as_ref().map(TxView::new).transpose()?;
    let out = view.as_ref().map(|v| TxOut::new(v, format)).transpose()?;
    write_one(
        ctx,
        call,
        || format!("transaction {}", p.hash),
        |ser| {
            let mut m = ser.serialize_map(None)?;
            for (k, v) in range_fields(&range, "CloseTime", true) {
                m.serialize_entry(&k, &v)?;
            }
            // The hash asked for, as stellar-rpc answers: a fee bump found
            // by its inner hash reports that hash (getTransactions lists
            // the outer).
            match (&rec, &out) {
                (Some(rec), Some(out)) => {
                    out.write(&mut m, &p.hash)?;
                    m.serialize_entry("createdAt", &rec.close_time.to_string())?;
                }
                _ => {
                    // stellar-rpc's NOT_FOUND carries the details' zero values.
                    m.serialize_entry("status", "NOT_FOUND")?;
                    m.serialize_entry("txHash", &p.hash)?;
                    m.serialize_entry("applicationOrder", &0)?;
                    m.serialize_entry("feeBump", &false)?;
                    m.serialize_entry("events", &Map::new())?;
                    m.serialize_entry("ledger", &0)?;
                    m.serialize_entry("createdAt", "0")?;
                }
            }
            m.end()
        },
    )
}

pub(super) fn get_transactions(
    ctx: &Ctx,
    params: &Params<'_>,
    call: &Call,
) -> RpcResult<Box<RawValue>> {
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
    let mut out = PageOut::new("transactions", ctx, call)?;
    let walked = if first <= latest {
        let scan = Scan {
            store: &*store,
            call,
            first,
            skip,
            end: latest,
            max_ledgers: ctx.settings.page.max_ledgers.max(1),
            limit: page.limit,
            format: page.format,
        };
        scan.run(&mut out)?
    } else {
        // A cursor past the latest ledger: nothing to read.
        Walked {
            last: 0,
            through: Some(latest),
        }
    };
    // The last transaction returned when the page ended on its limit or
    // budget. Otherwise every ledger through `end` was read: the next page
    // starts after it, or, at the latest ledger, at least at its start; and
    // never before the request's own cursor, so resending it never repeats
    // or skips a transaction.
    let cursor = match walked.through {
        None => walked.last,
        Some(end) => {
            let asked = match page.start {
                Start::Cursor(c) => c,
                Start::Ledger(_) => 0,
            };
            let next = if end >= latest {
                toid(latest, 0)
            } else {
                toid(end + 1, 0)
            };
            walked.last.max(next).max(asked)
        }
    };
    let mut fields = range_fields(&range, "CloseTimestamp", false);
    fields.insert("cursor".into(), cursor.to_string().into());
    out.finish(fields)
}

/// Where a page of transactions ended.
#[derive(Debug, Default)]
struct Walked {
    /// The TOID of the last transaction written (0: none).
    last: u64,
    /// Set when every ledger through this one was read to its end (the
    /// page did not end on its limit or budget).
    through: Option<u32>,
}

/// One `getTransactions` page's walk over the ledgers.
struct Scan<'a> {
    store: &'a dyn Reader,
    call: &'a Call,
    first: u32,
    /// Application orders to skip in `first`.
    skip: u32,
    end: u32,
    /// The ledger budget: ledgers with transactions to give, read by this
    /// call.
    max_ledgers: u32,
    limit: usize,
    format: Format,
}

impl Scan<'_> {
    /// Writes up to `limit` transactions from ledger `first` (after
    /// application order `skip` in it) through `end`, in order, while the
    /// page's budget lasts.
    fn run(&self, out: &mut PageOut<'_>) -> RpcResult<Walked> {
        let mut walked = Walked::default();
        // Ledgers that had transactions to give: the ledger budget. A
        // ledger the cursor already consumed, or one with no transactions,
        // costs one small read and does not count, so a page in the middle
        // of history is never empty while its budget lasts.
        let mut counted = 0u32;
        let mut scanned = None;
        // Hashes only: the transactions are read by hash below, so the
        // ledgers are never put back together.
        let mut ledgers = ledger_head_iter(self.store, self.first, self.end, LEDGER_CHUNK);
        loop {
            // Past half the deadline the page ends with what it has (an
            // empty one still moves its cursor past the ledgers scanned),
            // rather than reading another ledger and timing out.
            if scanned.is_some() && self.call.soft_passed() {
                walked.through = scanned;
                return Ok(walked);
            }
            let Some(ledger) = ledgers.next() else { break };
            if let Err(e) = self.call.check() {
                if out.len() > 0 {
                    return Ok(walked);
                }
                return Err(e);
            }
            let ledger = ledger?;
            let from = if ledger.seq == self.first {
                self.skip as usize
            } else {
                0
            };
            let want = self.limit - out.len();
            let hashes: Vec<_> = ledger
                .tx_hashes
                .iter()
                .skip(from)
                .take(want)
                .copied()
                .collect();
            if !hashes.is_empty() {
                counted += 1;
            }
            for chunk in hashes.chunks(TX_CHUNK) {
                if let Err(e) = self.call.check() {
                    if out.len() > 0 {
                        return Ok(walked);
                    }
                    return Err(e);
                }
                let found = self.store.batch_get_txs(chunk)?;
                for (hash, rec) in chunk.iter().zip(found) {
                    let rec = rec.ok_or_else(|| {
                        RpcError::Internal(format!(
                            "ledger {} lists transaction {} but it is not stored",
                            ledger.seq,
                            hex::encode(hash.0)
                        ))
                    })?;
                    if !self.write(out, &rec)? {
                        return Ok(walked);
                    }
                    walked.last = toid(rec.ledger_seq, rec.index + 1);
                }
            }
            if out.len() >= self.limit {
                return Ok(walked);
            }
            scanned = Some(ledger.seq);
            if counted >= self.max_ledgers {
                walked.through = scanned;
                return Ok(walked);
            }
        }
        walked.through = Some(self.end);
        Ok(walked)
    }

    /// Writes one transaction; false when the page has no room for it.
    fn write(&self, out: &mut PageOut<'_>, rec: &TxRecord) -> RpcResult<bool> {
        let xdr = rec.envelope.len() + rec.result.len() + rec.meta.len();
        if !out.room_for(estimate(xdr, self.format)) {
            return Ok(false);
        }
        let tx = TxView::new(rec)?;
        let t = TxOut::new(&tx, self.format)?;
        let own = hex::encode(&rec.result[..32]);
        out.item(
            || format!("transaction {own} as {}", self.format.name()),
            |ser| {
                let mut m = ser.serialize_map(None)?;
                t.write(&mut m, &own)?;
                m.serialize_entry("createdAt", &rec.close_time)?;
                m.end()
            },
        )
    }
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
