//! A ledger's events as the index takes them ([`Item`]s), from its raw
//! `LedgerCloseMeta` bytes: walked for their slices (no full decode) and
//! extracted once, whether ingest offers the bytes it holds or the
//! builder reads them back from the store. A ledger ingest offers was
//! walked already by its extraction, whose cuts say where each meta
//! sits: only the metas are walked again ([`items_of_input`]).

use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::events::{EventId, EventType, Events, input_events, ledger_events};
use ledgerstore_stellar::walk::walk;

use crate::error::{EventsError, EventsResult};

/// One event as the index takes it.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub(crate) id: EventId,
    pub(crate) kind: EventType,
    pub(crate) contract: Option<[u8; 32]>,
    pub(crate) topics: Vec<Vec<u8>>,
}

/// The served events of ledger `seq`, whose raw bytes are `raw`.
pub(crate) fn items_of(seq: u32, raw: &[u8]) -> EventsResult<Vec<Item>> {
    let slices = walk(raw)
        .map_err(|e| EventsError::ledger(seq, format!("not a Stellar LedgerCloseMeta: {e}")))?;
    if slices.seq != seq {
        return Err(EventsError::ledger(
            seq,
            format!("the stored bytes are ledger {}", slices.seq),
        ));
    }
    let evs = ledger_events(raw, &slices).map_err(|e| EventsError::ledger(seq, e))?;
    Ok(items(raw, &evs))
}

/// [`items_of`] for a ledger ingest extracted: only its metas are walked
/// when its cuts say where they sit (`input_events`), else its bytes.
pub(crate) fn items_of_input(l: &LedgerInput) -> EventsResult<Vec<Item>> {
    match input_events(l) {
        Some(evs) => Ok(items(
            &l.raw,
            &evs.map_err(|e| EventsError::ledger(l.seq, e))?,
        )),
        None => items_of(l.seq, &l.raw),
    }
}

/// The index's items of `evs`, whose spans index `raw`.
fn items(raw: &[u8], evs: &Events) -> Vec<Item> {
    evs.list
        .iter()
        .map(|e| Item {
            id: e.id,
            kind: e.kind,
            contract: e.contract_id,
            topics: evs
                .topics_of(e)
                .iter()
                .map(|s| s.of(raw).to_vec())
                .collect(),
        })
        .collect()
}
