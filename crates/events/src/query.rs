//! Queries: the files and the tail intersecting the range, walked in
//! ledger order by their postings ([`Matches::step`] with a small budget,
//! so the deadline is checked inside long searches); each candidate read
//! from the store, confirmed by [`Query::matches`] and counted against
//! the page's limits.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use ledgerstore_db_api::TxHash;
use ledgerstore_event_index::{EventIndex, Matches, Query, Step};
use ledgerstore_stellar::events::{
    EventId, EventType, Events, LedgerCounts, TX_MASK, TxContext, ledger_events, successful,
    tx_events,
};
use ledgerstore_stellar::walk::walk;

use crate::error::{EventsError, EventsResult};
use crate::files::IndexFile;
use crate::state::Shared;

/// Rounds of intersection per step between deadline checks.
const STEP_BUDGET: u32 = 64;

/// A ledger's hits in more transactions than this are read from the whole
/// ledger (one reassembly and walk) rather than transaction by
/// transaction. Measured on the 20 pubnet ledgers of 2026 in a real store
/// (debug build, RocksDB optimized): a whole ledger read, walked and its
/// events extracted, 26 ms; one transaction's record and its events,
/// 49 µs. So up to 64 transactions cost about a tenth of a ledger.
const WHOLE_LEDGER_AFTER_TXS: usize = 64;

/// Where a page stops.
#[derive(Debug, Clone)]
pub struct PageLimits {
    /// Events served at most.
    pub events: usize,
    /// Topic and value bytes (XDR) served at most; a page holds one event
    /// at least, whatever its size.
    pub bytes: usize,
    /// When to stop searching.
    pub deadline: Instant,
}

/// Which limit stopped a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// [`PageLimits::events`].
    Events,
    /// [`PageLimits::bytes`].
    Bytes,
    /// [`PageLimits::deadline`].
    Deadline,
}

/// One event as getEvents serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedEvent {
    /// Its id (`tx` and `op` are its `transactionIndex` and
    /// `operationIndex`).
    pub id: EventId,
    /// Its type.
    pub kind: EventType,
    /// Its ledger.
    pub ledger: u32,
    /// Its ledger's close time, unix seconds.
    pub ledger_close_time: u64,
    /// Its contract id.
    pub contract_id: Option<[u8; 32]>,
    /// Its transaction's hash.
    pub tx_hash: [u8; 32],
    /// Whether its transaction succeeded.
    pub in_successful_contract_call: bool,
    /// Its topics' `SCVal` XDR.
    pub topics: Vec<Vec<u8>>,
    /// Its value's `SCVal` XDR.
    pub value: Vec<u8>,
}

/// A page of events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The matching events, in id order.
    pub events: Vec<ServedEvent>,
    /// Where to continue (an inclusive lower bound) when a limit stopped
    /// the page; None when every event before the end was scanned.
    pub resume: Option<EventId>,
    /// Ledgers below it were wholly scanned.
    pub scanned_to: u32,
    /// The limit that stopped the page.
    pub stopped_by: Option<Stop>,
}

fn start_of(ledger: u32) -> EventId {
    EventId {
        ledger,
        tx: 0,
        op: 0,
        index: 0,
    }
}

/// The id right after `id` (an inclusive lower bound past it).
fn after(id: EventId) -> EventId {
    EventId {
        index: id.index.saturating_add(1),
        ..id
    }
}

pub(crate) fn query(
    shared: &Shared,
    q: &Query,
    from: EventId,
    end_ledger: u32,
    limits: &PageLimits,
) -> EventsResult<Page> {
    q.validate().map_err(EventsError::Query)?;
    let floor = shared.reader.first_ledger().unwrap_or(0);
    let snap = shared.snapshot();
    let end = match snap.covered_through(floor) {
        Some(t) => end_ledger.min(t.saturating_add(1)),
        None => from.ledger,
    };
    // Ledgers the store no longer holds cannot be served.
    let from = from.max(start_of(floor));
    let mut page = Pager {
        shared,
        q,
        limits,
        cache: None,
        events: Vec::new(),
        bytes: 0,
    };
    if from.ledger >= end {
        return Ok(page.finish(None, end.max(from.ledger)));
    }
    let mut parts: Vec<(&EventIndex, EventId, Option<&Arc<IndexFile>>)> = snap
        .files
        .values()
        .filter(|f| f.last >= from.ledger && f.first < end)
        .map(|f| (&f.idx, from, Some(f)))
        .collect();
    if let Some(t) = snap.tail.as_ref().filter(|t| t.last >= from.ledger) {
        parts.push((&t.idx, from.max(start_of(snap.tail_from())), None));
    }
    let mut q = q.clone();
    q.end = Some(start_of(end));
    for (idx, start, file) in parts {
        q.start = start;
        let scanned = idx
            .matches(&q)
            .map_err(EventsError::Query)
            .and_then(|m| page.scan(idx, m));
        match scanned {
            Ok(Some((resume, stop))) => return Ok(page.finish(Some((resume, stop)), resume.ledger)),
            Ok(None) => {}
            Err(e) => {
                if let Some(f) = file.filter(|_| e.means_damage()) {
                    crate::build::drop_damaged(shared, f, &e);
                }
                return Err(e);
            }
        }
    }
    Ok(page.finish(None, end))
}

/// A page being filled.
struct Pager<'a> {
    shared: &'a Shared,
    q: &'a Query,
    limits: &'a PageLimits,
    cache: Option<LedgerEvents>,
    events: Vec<ServedEvent>,
    bytes: usize,
}

impl Pager<'_> {
    fn finish(self, stop: Option<(EventId, Stop)>, scanned_to: u32) -> Page {
        Page {
            events: self.events,
            resume: stop.map(|s| s.0),
            scanned_to,
            stopped_by: stop.map(|s| s.1),
        }
    }

    /// Walks one file's candidates; `Some` when a limit stops the page
    /// (where to resume, and why).
    fn scan(
        &mut self,
        idx: &EventIndex,
        mut m: Matches<'_>,
    ) -> EventsResult<Option<(EventId, Stop)>> {
        loop {
            if Instant::now() >= self.limits.deadline {
                let at = m.next_ordinal();
                let resume = if at < idx.events() {
                    idx.id_of(at).map_err(EventsError::Query)?
                } else {
                    start_of(idx.last_ledger().saturating_add(1))
                };
                return Ok(Some((resume, Stop::Deadline)));
            }
            let hit = match m.step(STEP_BUDGET) {
                None => return Ok(None),
                Some(Err(e)) => return Err(EventsError::Query(e)),
                Some(Ok(Step::Paused)) => continue,
                Some(Ok(Step::Hit(h))) => h,
            };
            if self.events.len() >= self.limits.events {
                return Ok(Some((hit.id, Stop::Events)));
            }
            let Some(ev) = self.fetch(hit.id)? else {
                continue;
            };
            let size = ev.value.len() + ev.topics.iter().map(Vec::len).sum::<usize>();
            if !self.events.is_empty() && self.bytes + size > self.limits.bytes {
                return Ok(Some((hit.id, Stop::Bytes)));
            }
            self.bytes += size;
            self.events.push(ev);
            if self.events.len() >= self.limits.events {
                // Stop at once: the next candidate may be far away.
                return Ok(Some((after(hit.id), Stop::Events)));
            }
        }
    }

    /// The event `id` from the store, if it matches the query (an index
    /// hit can be a false positive).
    fn fetch(&mut self, id: EventId) -> EventsResult<Option<ServedEvent>> {
        if self.cache.as_ref().is_none_or(|c| c.seq != id.ledger) {
            self.cache = Some(LedgerEvents::head(self.shared, id.ledger)?);
        }
        let Some(c) = self.cache.as_mut() else {
            return Err(EventsError::MissingLedger(id.ledger));
        };
        let ev = c.event(self.shared, id)?;
        let topics: Vec<&[u8]> = ev.topics.iter().map(Vec::as_slice).collect();
        Ok(self
            .q
            .matches(ev.kind, ev.contract_id.as_ref(), &topics)
            .then_some(ev))
    }
}

/// Walked events and the bytes their spans index.
struct Walked {
    bytes: Vec<u8>,
    events: Events,
}

impl Walked {
    fn served(&self, id: EventId, close_time: u64) -> Option<ServedEvent> {
        let i = self
            .events
            .list
            .binary_search_by_key(&id.key(), |e| e.id.key())
            .ok()?;
        let e = &self.events.list[i];
        Some(ServedEvent {
            id: e.id,
            kind: e.kind,
            ledger: id.ledger,
            ledger_close_time: close_time,
            contract_id: e.contract_id,
            tx_hash: e.tx_hash,
            in_successful_contract_call: e.in_successful_contract_call,
            topics: self
                .events
                .topics_of(e)
                .iter()
                .map(|s| s.of(&self.bytes).to_vec())
                .collect(),
            value: e.value.of(&self.bytes).to_vec(),
        })
    }
}

/// One ledger's events as read so far: per transaction (one record
/// each), or the whole ledger once stage events (whose indexes count
/// over the ledger) or many transactions are asked for.
struct LedgerEvents {
    seq: u32,
    close_time: u64,
    hashes: Vec<TxHash>,
    txs: HashMap<u32, Walked>,
    whole: Option<Walked>,
}

impl LedgerEvents {
    fn head(shared: &Shared, seq: u32) -> EventsResult<Self> {
        let head = shared
            .reader
            .ledger_head(seq)
            .map_err(|source| EventsError::Store { seq, source })?
            .ok_or(EventsError::MissingLedger(seq))?;
        Ok(LedgerEvents {
            seq,
            close_time: head.close_time,
            hashes: head.tx_hashes,
            txs: HashMap::new(),
            whole: None,
        })
    }

    fn event(&mut self, shared: &Shared, id: EventId) -> EventsResult<ServedEvent> {
        let staged = id.tx == 0 || id.tx >= TX_MASK;
        if self.whole.is_none()
            && !staged
            && !self.txs.contains_key(&id.tx)
            && self.txs.len() < WHOLE_LEDGER_AFTER_TXS
            && let Some(w) = self.read_tx(shared, id.tx)?
        {
            self.txs.insert(id.tx, w);
        }
        if let Some(ev) = self
            .txs
            .get(&id.tx)
            .and_then(|w| w.served(id, self.close_time))
        {
            return Ok(ev);
        }
        if self.whole.is_none() {
            self.whole = Some(read_whole(shared, self.seq)?);
        }
        self.whole
            .as_ref()
            .and_then(|w| w.served(id, self.close_time))
            .ok_or(EventsError::MissingEvent { id })
    }

    /// Transaction `tx` (1-based application order) by its record; None
    /// when the record is not that transaction of this ledger (the
    /// caller reads the whole ledger).
    fn read_tx(&self, shared: &Shared, tx: u32) -> EventsResult<Option<Walked>> {
        let seq = self.seq;
        let Some(hash) = (tx as usize)
            .checked_sub(1)
            .and_then(|i| self.hashes.get(i))
        else {
            return Ok(None);
        };
        let Some(rec) = shared
            .reader
            .get_tx(hash)
            .map_err(|source| EventsError::Store { seq, source })?
        else {
            return Ok(None);
        };
        if rec.ledger_seq != seq || rec.index.checked_add(1) != Some(tx) {
            return Ok(None);
        }
        let ctx = TxContext {
            ledger: seq,
            apply_index: rec.index,
            hash: hash.0,
            successful: successful(&rec.result).map_err(|e| EventsError::ledger(seq, e))?,
        };
        let mut events = Events::default();
        tx_events(
            &rec.meta,
            0,
            &ctx,
            &mut LedgerCounts::default(),
            &mut events,
        )
        .map_err(|e| EventsError::ledger(seq, e))?;
        Ok(Some(Walked {
            bytes: rec.meta,
            events,
        }))
    }
}

fn read_whole(shared: &Shared, seq: u32) -> EventsResult<Walked> {
    let rec = shared
        .reader
        .get_ledger(seq)
        .map_err(|source| EventsError::Store { seq, source })?
        .ok_or(EventsError::MissingLedger(seq))?;
    let slices = walk(&rec.raw)
        .map_err(|e| EventsError::ledger(seq, format!("not a Stellar LedgerCloseMeta: {e}")))?;
    let events = ledger_events(&rec.raw, &slices).map_err(|e| EventsError::ledger(seq, e))?;
    Ok(Walked {
        bytes: rec.raw,
        events,
    })
}
