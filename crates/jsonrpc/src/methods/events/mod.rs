//! `getEvents`: contract events by contract id, topic and type over the
//! whole history held, from the event index (`ledgerstore-events`), with
//! stellar-rpc v28's request, answer and cursors
//! (`cmd/stellar-rpc/internal/methods/get_events.go`).
//!
//! - The range is what the index holds: `oldestLedger` is its first
//!   ledger, `latestLedger` the last one it has indexed (the index follows
//!   the store one poll behind; a ledger is never reported before its
//!   events can be found).
//! - A search spans at most [`SCAN_LEDGERS`] ledgers from its start, as
//!   stellar-rpc's `LedgerScanLimit`; a page that ends before its limit
//!   gives the cursor of the end of that window, so the next call goes on
//!   from there.
//! - A page also ends at the byte budget (`jsonrpc.max_page_bytes`) and
//!   at half the deadline, with a cursor that resumes where it stopped:
//!   the search walks the index's posting lists and never scans ledgers,
//!   but a filter that matches nearly nothing in a long window may still
//!   take time.

use jsonrpsee::types::Params;
use ledgerstore_events::{Page, PageLimits, ServedEvent};
use ledgerstore_stellar::events::{EventId, OP_MASK, TX_MASK};
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::page::{PageOut, Ser};
use super::render::B64;
use crate::Ctx;
use crate::budget::Call;
use crate::error::{RpcError, RpcResult};
use crate::params::{Format, named};

mod params;

use params::GetEvents;

/// Ledgers one search spans (stellar-rpc's `LedgerScanLimit`).
pub(crate) const SCAN_LEDGERS: u32 = 10_000;

pub(in crate::methods) fn get_events(
    ctx: &Ctx,
    params: &Params<'_>,
    call: &Call,
) -> RpcResult<Box<RawValue>> {
    let req = named::<GetEvents>(params)?.check()?;
    let events = ctx.access.events().map_err(RpcError::Unavailable)?;
    let store = ctx.store()?;
    let (Some(oldest), Some(latest)) = (events.first_ledger(), events.indexed_through()) else {
        return Err(RpcError::Unavailable(
            "getEvents: the event index holds no ledger yet (it is built in the background \
             from the stored ledgers; see `ledgerstore stats`)"
                .into(),
        ));
    };
    let query = req.query();
    let start = query.start.ledger;
    if start < oldest || start > latest {
        return Err(RpcError::request(format!(
            "startLedger must be within the ledger range: {oldest} - {latest}"
        )));
    }
    // Exclusive, as stellar-rpc's.
    let mut end = start.saturating_add(SCAN_LEDGERS).min(latest + 1);
    if let Some(e) = req.end_ledger {
        end = end.min(e);
    }
    let mut out = PageOut::new("events", ctx, call)?;
    let page = if end > start {
        let limits = PageLimits {
            events: req.limit,
            bytes: ctx.settings.page.max_bytes,
            deadline: call.soft,
        };
        events.query(&query, query.start, end, &limits)?
    } else {
        Page {
            events: Vec::new(),
            resume: None,
            scanned_to: end,
            stopped_by: None,
        }
    };
    call.check()?;
    let mut last = None;
    let mut cut = false;
    for e in &page.events {
        if !write_event(&mut out, e, req.format)? {
            cut = true;
            break;
        }
        last = Some(e.id);
    }
    let cursor =
        cursor(req.limit, query.start, &page, last, cut, end).ok_or_else(|| call.timed_out())?;
    let close = |seq: u32| -> RpcResult<String> {
        Ok(ctx
            .timed_read(|| store.close_time(seq))?
            .unwrap_or(0)
            .to_string())
    };
    let mut fields = Map::new();
    fields.insert("cursor".into(), cursor.into());
    fields.insert("latestLedger".into(), latest.into());
    fields.insert("oldestLedger".into(), oldest.into());
    fields.insert(
        "latestLedgerCloseTime".into(),
        Value::String(close(latest)?),
    );
    fields.insert(
        "oldestLedgerCloseTime".into(),
        Value::String(close(oldest)?),
    );
    out.finish(fields)
}

/// The page's cursor, as stellar-rpc gives it: the last event's id when
/// the page is full; otherwise the end of the window searched
/// (`MaxCursor` at `end − 1`). A page that a budget or the deadline cut
/// short gives the last event it holds, or the id just before where the
/// search stopped, so the next call resumes there. None when the search
/// stopped where it started with nothing found: no progress to give.
fn cursor(
    limit: usize,
    start: EventId,
    page: &Page,
    last: Option<EventId>,
    cut: bool,
    end: u32,
) -> Option<String> {
    if (cut || page.events.len() >= limit)
        && let Some(l) = last
    {
        return Some(l.to_string());
    }
    let Some(resume) = page.resume else {
        // The window's end, or less if the index covered less when the
        // page was read (a file dropped meanwhile): never past a ledger
        // not scanned.
        let end = end.min(page.scanned_to.max(start.ledger));
        return Some(
            EventId {
                ledger: end.saturating_sub(1),
                tx: TX_MASK,
                op: OP_MASK,
                index: u32::MAX,
            }
            .to_string(),
        );
    };
    if last.is_none() && resume.key() <= start.key() {
        return None;
    }
    before(resume).or(last).map(|id| id.to_string())
}

/// The id just before `id` in event order: what a cursor must say for
/// the next page to start at `id` (stellar-rpc resumes at the cursor's
/// index + 1).
fn before(id: EventId) -> Option<EventId> {
    if id.index > 0 {
        return Some(EventId {
            index: id.index - 1,
            ..id
        });
    }
    let toid = id.toid().checked_sub(1)?;
    Some(EventId {
        ledger: (toid >> 32) as u32,
        tx: ((toid >> 12) as u32) & TX_MASK,
        op: (toid as u32) & OP_MASK,
        index: u32::MAX,
    })
}

/// Writes one event; false when the page has no room for it.
fn write_event(out: &mut PageOut<'_>, e: &ServedEvent, format: Format) -> RpcResult<bool> {
    let id = e.id.to_string();
    let decoded = match format {
        Format::Base64 => None,
        Format::Json => Some(render::decoded(e)?),
    };
    out.item(
        || format!("event {id} as {}", format.name()),
        |ser: &mut Ser<'_>| {
            let mut m = ser.serialize_map(None)?;
            m.serialize_entry("type", e.kind.as_str())?;
            m.serialize_entry("ledger", &e.ledger)?;
            m.serialize_entry("ledgerClosedAt", &render::closed_at(e.ledger_close_time))?;
            m.serialize_entry("contractId", &render::contract(e.contract_id.as_ref()))?;
            m.serialize_entry("id", &id)?;
            m.serialize_entry("operationIndex", &e.id.op)?;
            m.serialize_entry("transactionIndex", &e.id.tx)?;
            m.serialize_entry("inSuccessfulContractCall", &e.in_successful_contract_call)?;
            m.serialize_entry("txHash", &hex::encode(e.tx_hash))?;
            match &decoded {
                None => {
                    // Go's omitempty: no key for an event without topics.
                    if !e.topics.is_empty() {
                        let topics: Vec<B64<'_>> = e.topics.iter().map(|t| B64(t)).collect();
                        m.serialize_entry("topic", &topics)?;
                    }
                    m.serialize_entry("value", &B64(&e.value))?;
                }
                Some((topics, value)) => {
                    if !topics.is_empty() {
                        m.serialize_entry("topicJson", topics)?;
                    }
                    m.serialize_entry("valueJson", value)?;
                }
            }
            m.end()
        },
    )
}

mod render;

#[cfg(test)]
#[path = "cursor_tests.rs"]
mod cursor_tests;
