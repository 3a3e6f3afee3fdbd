//! The `event_index` target: event index files (`ledgerstore-event-index`),
//! which a replica maps after fetching them and a scrub re-reads. Even
//! first bytes: the rest is a file; odd: events and queries to build and
//! check one.
//!
//! - **A file** ([`EventIndex::from_bytes`]): if it opens, its checksum is
//!   verified (a refusal is fine), ordinals are mapped to ids and back
//!   (`id_of` then `ordinal_from` gives at most the ordinal, exactly it on
//!   a file whose checksum holds), and queries drawn from the file's own
//!   last 32 bytes (its SHA-256 trailer on a real file: mutating it
//!   varies the queries, not the structure) are run with
//!   [`Matches::step`] at budgets of 1 to 4 rounds and with
//!   [`EventIndex::query`]: types, a contract id of the file's dictionary
//!   or one it lacks, topic patterns with values, `*` and `**`, a start
//!   and an end. Errors are fine; a panic is not, nor a hit list whose
//!   ordinals do not strictly increase inside the query's range, a pause
//!   that does not move on, or a hit whose id is not its ordinal's.
//! - **Events** (drawn from the bytes over small alphabets, so contract
//!   ids and topic values repeat, lists pass the 128-ordinal blocks and
//!   every stage, type and topic count occurs): an index built with
//!   [`EventIndexBuilder`] opens and verifies, maps every ordinal to its
//!   event's id and back, and answers queries drawn from the bytes
//!   exactly as a naive scan written from go-stellar-sdk's rules does
//!   (in one go, step by step at small budgets, and page by page through
//!   `Query::after`), and so do queries shaped on a drawn event (its first
//!   topic then `**`, as many `*` as its topics then `**`, its exact
//!   topics, its contract and type); invalid queries and patterns are refused exactly
//!   when getEvents' limits say; and the files of two or three adjacent
//!   parts merge into the very file built from the whole.

use std::collections::BTreeSet;

use ledgerstore_event_index::{
    EventIndex, EventIndexBuilder, Filter, Hit, MAX_CONTRACT_IDS, MAX_FILTERS, MAX_TOPICS, Matches,
    Query, Segment, Step, TOPIC_POSITIONS, TopicPattern, merge,
};
use ledgerstore_stellar::events::{EventId, EventType, OP_MASK, TX_MASK};

use crate::scratch::Scratch;

/// Hits a query collects at most.
const LIMIT: usize = 300;
/// Steps a bounded search takes at most.
const MAX_STEPS: usize = 20_000;
/// Events the structured mode draws at most.
const MAX_EVENTS: usize = 2_000;

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        file(rest);
    } else {
        structured(rest);
    }
}

/// An `SCV_SYMBOL`'s XDR.
pub fn sym(s: &str) -> Vec<u8> {
    let mut v = 15u32.to_be_bytes().to_vec();
    v.extend_from_slice(&(s.len() as u32).to_be_bytes());
    v.extend_from_slice(s.as_bytes());
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
    v
}

/// Topic values: the names of real events (their seeds hold them at
/// position 0), a few others, and the empty value.
fn values() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = ["transfer", "fee", "mint", "burn", "a"]
        .iter()
        .map(|s| sym(s))
        .collect();
    v.push(Vec::new());
    v.push(vec![0; 4]);
    v
}

/// Contract ids of the structured mode (the last is never used by an
/// event: a filter naming only it matches nothing).
fn contract(i: usize) -> [u8; 32] {
    let mut id = [0xC3; 32];
    id[0] = i as u8;
    id
}
const CONTRACTS: usize = 4;

/// Bytes read one at a time, zeros once they run out.
struct Bytes<'a> {
    b: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let v = self.b.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n.max(1)
    }

    fn left(&self) -> bool {
        self.at < self.b.len()
    }
}

// ---------------------------------------------------------------------
// A file.

/// Where section `i` (the layout's order) lies in a file that opened.
fn section(b: &[u8], i: usize) -> &[u8] {
    let word = |at: usize| -> usize {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(w) as usize
    };
    let (off, len) = (word(56 + 16 * i), word(64 + 16 * i));
    &b[off..off + len]
}

fn file(bytes: &[u8]) {
    let Ok(idx) = EventIndex::from_bytes(bytes.to_vec()) else {
        return;
    };
    let sealed = idx.verify().is_ok();
    let (first, last, n) = (idx.first_ledger(), idx.last_ledger(), idx.events());
    assert!(
        first <= last && last <= i32::MAX as u32,
        "an open file with a bad range"
    );
    let mut tail = Bytes {
        b: &bytes[bytes.len() - 32..],
        at: 0,
    };
    // Ordinals to ids and back.
    let drawn = u32::from(tail.byte()) << 8 | u32::from(tail.byte());
    let mut ids = Vec::new();
    for ord in [
        0,
        1,
        n / 2,
        n.saturating_sub(1),
        n,
        drawn % n.saturating_add(1),
    ] {
        match idx.id_of(ord) {
            Ok(id) => {
                assert!(ord < n, "an id for ordinal {ord} of {n}");
                assert!(
                    (first..=last).contains(&id.ledger) && id.tx <= TX_MASK && id.op <= OP_MASK,
                    "ordinal {ord}: id {id:?} out of range"
                );
                let back = idx
                    .ordinal_from(id)
                    .unwrap_or_else(|e| panic!("ordinal {ord}: id {id}, but not back: {e}"));
                assert!(back <= ord, "ordinal {ord}: id {id} back to {back}");
                if sealed {
                    assert_eq!(back, ord, "id {id}: a sealed file maps it back elsewhere");
                }
                ids.push(id);
            }
            Err(_) => assert!(
                ord >= n || !sealed,
                "a sealed file has no id for {ord} of {n}"
            ),
        }
    }
    for ledger in [0, first, last, last.saturating_add(1), u32::MAX] {
        for (tx, op) in [(0, 0), (1, 0), (TX_MASK, OP_MASK)] {
            let id = EventId {
                ledger,
                tx,
                op,
                index: u32::from(tail.byte()),
            };
            if let (Ok(o), true) = (idx.ordinal_from(id), sealed) {
                assert!(o <= n, "id {id}: ordinal {o} past {n}");
            }
        }
    }
    // A contract id of the dictionary, and one it may lack.
    let contracts = section(bytes, 4);
    let mut known = Vec::new();
    if !contracts.is_empty() {
        let at = 40 * tail.below(contracts.len() / 40);
        let mut id = [0u8; 32];
        id.copy_from_slice(&contracts[at..at + 32]);
        known.push(id);
    }
    let mut absent = [0u8; 32];
    absent.copy_from_slice(&bytes[bytes.len() - 32..]);
    let values = values();
    for _ in 0..3 {
        let mut filters = Vec::new();
        for _ in 0..=tail.below(2) {
            let mut f = Filter::default();
            match tail.below(4) {
                0 => {}
                1 => f.types = vec![EventType::System],
                2 => f.types = vec![EventType::Contract],
                _ => f.types = vec![EventType::System, EventType::Contract],
            }
            match tail.below(4) {
                0 | 1 => {}
                2 => f.contract_ids = known.clone(),
                _ => f.contract_ids = vec![absent],
            }
            for _ in 0..tail.below(3) {
                let mut segs = Vec::new();
                for _ in 0..=tail.below(TOPIC_POSITIONS) {
                    segs.push(match tail.below(4) {
                        0 => Segment::Any,
                        _ => Segment::Value(values[tail.below(values.len())].clone()),
                    });
                }
                if tail.below(2) == 0 {
                    segs.push(Segment::Rest);
                }
                if let Ok(p) = TopicPattern::new(segs) {
                    f.topics.push(p);
                }
            }
            filters.push(f);
        }
        let start = match tail.below(3) {
            0 => Query::from_ledger(filters, first.saturating_add(tail.below(3) as u32)),
            1 if !ids.is_empty() => Query::after(filters, ids[tail.below(ids.len())]),
            _ => Query::from_ledger(filters, 0),
        };
        let q = if tail.below(3) == 0 && !ids.is_empty() {
            Query {
                end: Some(ids[tail.below(ids.len())]),
                ..start
            }
        } else {
            start
        };
        let budget = 1 + tail.below(4) as u32;
        search(&idx, &q, budget, sealed);
    }
}

/// `q` on `idx`, stepwise at `budget` and in one go: ordinals strictly
/// increase inside the query's range, each hit's id is its ordinal's,
/// each pause moves on; on a sealed file (and every file the builder
/// wrote) both ways give the same hits. Returns the stepwise hits (None
/// on an error).
fn search(idx: &EventIndex, q: &Query, budget: u32, sealed: bool) -> Option<Vec<Hit>> {
    let Ok(mut m) = idx.matches(q) else {
        assert!(!sealed, "a valid query refused on a sealed file");
        return None;
    };
    let from = idx.ordinal_from(q.start).ok();
    let to = q.end.map(|e| idx.ordinal_from(e).ok());
    let stepped = steps(idx, &mut m, budget, from, to.flatten());
    let whole = idx.query(q, LIMIT);
    match (&stepped, &whole) {
        (Some((s, true)), Ok(w)) if sealed => {
            assert!(s == w, "bounded and unbounded searches differ")
        }
        (None, _) | (_, Err(_)) => assert!(!sealed, "a sealed file failed a search"),
        _ => {}
    }
    if let Ok(w) = &whole {
        check_hits(idx, w, from, to.flatten());
    }
    stepped.map(|(s, _)| s)
}

fn steps(
    idx: &EventIndex,
    m: &mut Matches<'_>,
    budget: u32,
    from: Option<u32>,
    to: Option<u32>,
) -> Option<(Vec<Hit>, bool)> {
    let mut hits = Vec::new();
    let mut complete = true;
    for n in 0.. {
        if hits.len() >= LIMIT {
            break;
        }
        // Each pause moves on, so the search ends; a hostile file can
        // still make it long.
        if n == MAX_STEPS {
            complete = false;
            break;
        }
        let at = m.next_ordinal();
        let Some(step) = m.step(budget) else {
            break;
        };
        match step {
            Ok(Step::Hit(h)) => hits.push(h),
            Ok(Step::Paused) => assert!(m.next_ordinal() > at, "a pause that did not move on"),
            Err(_) => return None,
        }
    }
    check_hits(idx, &hits, from, to);
    Some((hits, complete))
}

fn check_hits(idx: &EventIndex, hits: &[Hit], from: Option<u32>, to: Option<u32>) {
    for w in hits.windows(2) {
        assert!(w[0].ordinal < w[1].ordinal, "hits out of order: {w:?}");
    }
    for h in hits {
        assert!(h.ordinal < idx.events(), "a hit past the last event");
        assert!(
            from.is_none_or(|f| h.ordinal >= f),
            "a hit before the start"
        );
        assert!(
            to.is_none_or(|t| h.ordinal < t),
            "a hit at or after the end"
        );
        // A page's ids are resolved by galloping from the previous hit's
        // ledger, `id_of` by a binary search over the whole table: on a
        // damaged table the search can meet the damage where the gallop
        // does not (it refuses, Corrupt), but where both answer they agree.
        // A reader that serves a hit reads its event from the store by id,
        // so a wrong id is caught there (and the file dropped).
        if let Ok(id) = idx.id_of(h.ordinal) {
            assert_eq!(id, h.id, "a hit's id is not its ordinal's");
        }
    }
}

// ---------------------------------------------------------------------
// Events.

/// An event as the index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ev {
    /// Its id.
    pub id: EventId,
    /// Its type.
    pub kind: EventType,
    /// Its contract id.
    pub contract: Option<[u8; 32]>,
    /// Its topics' XDR.
    pub topics: Vec<Vec<u8>>,
}

/// Draws a ledger range and its events, in id order, from `r`.
fn draw_events(r: &mut Bytes<'_>) -> (u32, u32, Vec<Ev>) {
    let first = match r.below(4) {
        0 => 0,
        1 => i32::MAX as u32 - 5,
        _ => 100 + u32::from(r.byte()),
    };
    let last = first + r.below(6) as u32;
    let values = values();
    let mut evs: Vec<Ev> = Vec::new();
    let mut id = EventId {
        ledger: first + (r.below(2) as u32).min(last - first),
        tx: 0,
        op: 0,
        index: 0,
    };
    let mut started = false;
    while r.left() && evs.len() < MAX_EVENTS {
        let s = r.byte();
        if started {
            // The next id: the next index, operation, transaction, stage
            // or ledger (past the last ledger, the next index).
            match s & 7 {
                0 | 1 => id.index += 1,
                2 if id.op < OP_MASK - 1 && id.tx != 0 && id.tx != TX_MASK => {
                    id.op += 1 + u32::from(s >> 7);
                    id.index = 0;
                }
                3 if id.tx != 0 && id.tx < TX_MASK && id.op < OP_MASK => {
                    (id.op, id.index) = (OP_MASK, 0);
                }
                4 | 5 if id.tx < TX_MASK - 3 => {
                    id.tx += 1 + u32::from(s >> 6);
                    (id.op, id.index) = (0, 0);
                }
                6 if id.tx < TX_MASK => {
                    id.tx = TX_MASK;
                    (id.op, id.index) = (0, 0);
                }
                _ if id.ledger < last => {
                    id.ledger += 1;
                    id.tx = u32::from(s >> 5) & 1;
                    (id.op, id.index) = (0, 0);
                }
                _ => id.index += 1,
            }
        }
        started = true;
        let t = r.byte();
        let kind = match (s >> 3) & 3 {
            0 => EventType::System,
            3 => EventType::Diagnostic,
            _ => EventType::Contract,
        };
        let contract = match t & 3 {
            0 => None,
            c => Some(contract(usize::from(c) - 1)),
        };
        let topics = (0..usize::from((t >> 2) & 7).min(6))
            .map(|_| values[r.below(values.len())].clone())
            .collect();
        let ev = Ev {
            id,
            kind,
            contract,
            topics,
        };
        // Sometimes a run of the same event (lists past one block).
        let repeat = if t >> 5 == 7 {
            usize::from(r.byte())
        } else {
            0
        };
        evs.push(ev.clone());
        for _ in 0..repeat.min(MAX_EVENTS - evs.len()) {
            id.index += 1;
            evs.push(Ev { id, ..ev.clone() });
        }
    }
    (first, last, evs)
}

/// The index file of `evs` over `first..=last`.
fn build(first: u32, last: u32, evs: &[Ev], name: &str) -> Vec<u8> {
    let mut b = EventIndexBuilder::new(first, last)
        .unwrap_or_else(|e| panic!("builder for {first}..={last}: {e}"));
    for e in evs {
        let topics: Vec<&[u8]> = e.topics.iter().map(Vec::as_slice).collect();
        if let Err(err) = b.push(e.id, e.kind, e.contract.as_ref(), &topics) {
            panic!("event {} refused: {err}", e.id);
        }
    }
    let file = Scratch::named(name);
    let size = b
        .finish(&file.0)
        .unwrap_or_else(|e| panic!("finishing {first}..={last}: {e}"));
    let bytes = std::fs::read(&file.0).expect("reading the built index back");
    assert_eq!(size, bytes.len() as u64, "finish's size");
    bytes
}

/// A topic segment as a request gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Val(Vec<u8>),
    Star,
    StarStar,
}

/// A filter as a request gives it.
#[derive(Debug, Clone, Default)]
struct RawFilter {
    types: Vec<EventType>,
    contracts: Vec<[u8; 32]>,
    topics: Vec<Vec<Seg>>,
}

/// go-stellar-sdk `TopicFilter.Valid`: one segment at least, `**` only
/// last, at most 4 segments before it.
fn pattern_valid(segs: &[Seg]) -> bool {
    let rest = segs.last() == Some(&Seg::StarStar);
    let body = &segs[..segs.len() - usize::from(rest)];
    !segs.is_empty() && body.iter().all(|s| *s != Seg::StarStar) && body.len() <= TOPIC_POSITIONS
}

/// go-stellar-sdk `TopicFilter.Matches`.
fn topic_matches(filter: &[Seg], event: &[Vec<u8>]) -> bool {
    let segs = if filter.last() == Some(&Seg::StarStar) {
        if event.len() < filter.len() - 1 {
            return false;
        }
        &filter[..filter.len() - 1]
    } else if event.len() != filter.len() {
        return false;
    } else {
        filter
    };
    segs.iter().zip(event).all(|(s, t)| match s {
        Seg::Val(v) => v == t,
        Seg::Star | Seg::StarStar => true,
    })
}

/// go-stellar-sdk `EventFilter.Matches`.
fn filter_matches(f: &RawFilter, e: &Ev) -> bool {
    (f.types.is_empty() || f.types.contains(&e.kind))
        && (f.contracts.is_empty() || e.contract.is_some_and(|c| f.contracts.contains(&c)))
        && (f.topics.is_empty() || f.topics.iter().any(|t| topic_matches(t, &e.topics)))
}

/// The naive scan: events with `start ≤ id < end` that match a filter
/// (or all, with none), in id order, at most `limit`.
fn naive(
    evs: &[Ev],
    filters: &[RawFilter],
    start: EventId,
    end: Option<EventId>,
    limit: usize,
) -> Vec<EventId> {
    evs.iter()
        .filter(|e| e.id.key() >= start.key() && end.is_none_or(|x| e.id.key() < x.key()))
        .filter(|e| filters.is_empty() || filters.iter().any(|f| filter_matches(f, e)))
        .map(|e| e.id)
        .take(limit)
        .collect()
}

/// Draws a request's filters; false if getEvents would refuse them.
fn draw_filters(r: &mut Bytes<'_>) -> (Vec<RawFilter>, bool) {
    let values = values();
    let mut valid = true;
    // Requests beyond getEvents' limits, one draw in 16 each.
    let count = match r.below(16) {
        15 => MAX_FILTERS + 1,
        n => n % 4,
    };
    let mut filters = Vec::new();
    for _ in 0..count {
        let mut f = RawFilter::default();
        match r.below(16) {
            0..=5 => {}
            6 | 7 => f.types = vec![EventType::System],
            8..=11 => f.types = vec![EventType::Contract],
            12..=14 => f.types = vec![EventType::Contract, EventType::System],
            _ => {
                f.types = vec![EventType::Diagnostic];
                valid = false;
            }
        }
        let contracts = match r.below(16) {
            15 => MAX_CONTRACT_IDS + 1,
            n => n % 3,
        };
        valid &= contracts <= MAX_CONTRACT_IDS;
        f.contracts = (0..contracts)
            .map(|_| contract(r.below(CONTRACTS)))
            .collect();
        let topics = match r.below(16) {
            15 => MAX_TOPICS + 1,
            n => n % 4,
        };
        valid &= topics <= MAX_TOPICS;
        for _ in 0..topics {
            // Up to 5 segments of values and `*`; mostly a `**` after
            // them, sometimes one before the last (invalid), as are none
            // and 5 before a `**`.
            let mut segs: Vec<Seg> = (0..r.below(6))
                .map(|_| match r.below(4) {
                    0 => Seg::Star,
                    _ => Seg::Val(values[r.below(values.len())].clone()),
                })
                .collect();
            match r.below(8) {
                0..=3 => segs.push(Seg::StarStar),
                4 if !segs.is_empty() => {
                    let at = r.below(segs.len());
                    segs.insert(at, Seg::StarStar);
                }
                _ => {}
            }
            let pattern = TopicPattern::new(
                segs.iter()
                    .map(|s| match s {
                        Seg::Val(v) => Segment::Value(v.clone()),
                        Seg::Star => Segment::Any,
                        Seg::StarStar => Segment::Rest,
                    })
                    .collect(),
            );
            assert_eq!(
                pattern.is_ok(),
                pattern_valid(&segs),
                "pattern {segs:?}: validity"
            );
            // An invalid pattern is a `**` (the filter keeps its count).
            f.topics.push(if pattern.is_ok() {
                segs
            } else {
                vec![Seg::StarStar]
            });
        }
        filters.push(f);
    }
    valid &= filters.len() <= MAX_FILTERS;
    (filters, valid)
}

fn to_filter(f: &RawFilter) -> Filter {
    Filter {
        types: f.types.clone(),
        contract_ids: f.contracts.clone(),
        topics: f
            .topics
            .iter()
            .map(|t| {
                TopicPattern::new(
                    t.iter()
                        .map(|s| match s {
                            Seg::Val(v) => Segment::Value(v.clone()),
                            Seg::Star => Segment::Any,
                            Seg::StarStar => Segment::Rest,
                        })
                        .collect(),
                )
                .expect("a valid pattern")
            })
            .collect(),
    }
}

/// Structured mode: the first byte says how many bytes after it draw the
/// queries; the rest draws the events.
fn structured(bytes: &[u8]) {
    let Some((&qlen, rest)) = bytes.split_first() else {
        return;
    };
    let (qbytes, ebytes) = rest.split_at(usize::from(qlen).min(rest.len()));
    let (first, last, evs) = draw_events(&mut Bytes { b: ebytes, at: 0 });
    let whole = build(first, last, &evs, "whole.idx");
    let idx = EventIndex::from_bytes(whole.clone())
        .unwrap_or_else(|e| panic!("a built index does not open: {e}"));
    idx.verify()
        .unwrap_or_else(|e| panic!("a built index fails its checksum: {e}"));
    assert_eq!(
        (idx.first_ledger(), idx.last_ledger(), idx.events() as usize),
        (first, last, evs.len())
    );
    for (ord, e) in evs.iter().enumerate() {
        let ord = ord as u32;
        match idx.id_of(ord) {
            Ok(id) => assert_eq!(id, e.id, "ordinal {ord}"),
            Err(err) => panic!("ordinal {ord}: {err}"),
        }
        match idx.ordinal_from(e.id) {
            Ok(o) => assert_eq!(o, ord, "id {}", e.id),
            Err(err) => panic!("id {}: {err}", e.id),
        }
    }
    assert!(idx.id_of(evs.len() as u32).is_err(), "an id past the end");

    let mut q = Bytes { b: qbytes, at: 0 };
    let mut any = false;
    queries_on_an_event(&idx, &evs, &mut q);
    while !any || q.left() {
        any = true;
        query(&idx, &evs, &mut q);
    }
    merges(first, last, &evs, &whole, q.byte());
}

/// One query drawn from `r`, checked against the naive scan.
fn query(idx: &EventIndex, evs: &[Ev], r: &mut Bytes<'_>) {
    let (raw, valid) = draw_filters(r);
    // An event's id anywhere in the file (two bytes scaled), or past them.
    let pick = |r: &mut Bytes<'_>| -> EventId {
        let at = usize::from(u16::from_be_bytes([r.byte(), r.byte()]));
        match evs.get((at * (evs.len() + 1)) >> 16) {
            Some(e) => e.id,
            None => EventId {
                ledger: idx.last_ledger().saturating_add(r.below(2) as u32),
                tx: TX_MASK,
                op: OP_MASK,
                index: u32::MAX,
            },
        }
    };
    let (cursor, start) = match r.below(3) {
        0 => (None, idx.first_ledger().saturating_sub(r.below(2) as u32)),
        1 => (Some(pick(r)), 0),
        _ => (None, idx.first_ledger() + r.below(3) as u32),
    };
    let end = (r.below(4) == 0).then(|| pick(r));
    let budget = 1 + r.below(3) as u32;
    let page = 1 + r.below(6);
    if !valid {
        // Only the validity the request's shape decides: patterns were
        // checked as they were drawn.
        let filters = raw
            .iter()
            .map(|f| Filter {
                types: f.types.clone(),
                contract_ids: f.contracts.clone(),
                topics: vec![TopicPattern::new(vec![Segment::Rest]).expect("**"); f.topics.len()],
            })
            .collect();
        let q = Query::from_ledger(filters, start);
        assert!(q.validate().is_err(), "an invalid request validates");
        assert!(idx.matches(&q).is_err(), "an invalid request runs");
        return;
    }
    let filters: Vec<Filter> = raw.iter().map(to_filter).collect();
    let mut q = match cursor {
        Some(c) => Query::after(filters, c),
        None => Query::from_ledger(filters, start),
    };
    q.end = end;
    check_query(idx, evs, &raw, &q, budget, page);
}

/// Queries shaped on one event (drawn by `r`): its first topic then `**`,
/// its topic count in `*`s then `**`, its exact topics, its contract and
/// type; each alone, over the whole file.
fn queries_on_an_event(idx: &EventIndex, evs: &[Ev], r: &mut Bytes<'_>) {
    let at = usize::from(u16::from_be_bytes([r.byte(), r.byte()]));
    let Some(e) = evs.get((at * evs.len()) >> 16) else {
        return;
    };
    let k = e.topics.len().min(TOPIC_POSITIONS);
    let mut first_then_rest: Vec<Seg> = e.topics.iter().take(1).cloned().map(Seg::Val).collect();
    first_then_rest.push(Seg::StarStar);
    let mut stars_then_rest = vec![Seg::Star; k];
    stars_then_rest.push(Seg::StarStar);
    let mut shapes = vec![
        RawFilter {
            topics: vec![first_then_rest],
            ..Default::default()
        },
        RawFilter {
            topics: vec![stars_then_rest],
            ..Default::default()
        },
        RawFilter {
            types: match e.kind {
                EventType::Diagnostic => vec![],
                kind => vec![kind],
            },
            contracts: e.contract.into_iter().collect(),
            ..Default::default()
        },
    ];
    if (1..=TOPIC_POSITIONS).contains(&e.topics.len()) {
        shapes.push(RawFilter {
            topics: vec![e.topics.iter().cloned().map(Seg::Val).collect()],
            ..Default::default()
        });
    }
    let (budget, page) = (1 + r.below(3) as u32, 1 + r.below(6));
    for f in shapes {
        let q = Query::from_ledger(vec![to_filter(&f)], idx.first_ledger());
        check_query(idx, evs, &[f], &q, budget, page);
    }
}

/// `q` (the filters `raw`) on `idx` against the naive scan of `evs`: at
/// once, stepwise at `budget`, and in pages of `page`.
fn check_query(
    idx: &EventIndex,
    evs: &[Ev],
    raw: &[RawFilter],
    q: &Query,
    budget: u32,
    page: usize,
) {
    for e in evs {
        let topics: Vec<&[u8]> = e.topics.iter().map(Vec::as_slice).collect();
        let want = raw.is_empty() || raw.iter().any(|f| filter_matches(f, e));
        assert_eq!(
            q.matches(e.kind, e.contract.as_ref(), &topics),
            want,
            "Query::matches on event {}",
            e.id
        );
    }
    // Hash collisions of topic values (64-bit keys over SHA-256) would be
    // false positives; among a handful of fixed values there are none.
    let want = naive(evs, raw, q.start, q.end, LIMIT);
    let got = search(idx, q, budget, true).expect("a search of a built index");
    let got: Vec<EventId> = got.iter().map(|h| h.id).collect();
    assert_eq!(got, want, "stepwise hits differ from the naive scan");
    // Page by page from a cursor, as getEvents pages.
    let mut paged: Vec<EventId> = Vec::new();
    let mut next = q.clone();
    for _ in 0..40 {
        let hits = idx
            .query(&next, page)
            .unwrap_or_else(|e| panic!("a page of a built index: {e}"));
        paged.extend(hits.iter().map(|h| h.id));
        match hits.last() {
            Some(h) if hits.len() == page => {
                next = Query {
                    end: q.end,
                    ..Query::after(q.filters.clone(), h.id)
                }
            }
            _ => break,
        }
    }
    assert_eq!(
        paged[..],
        want[..paged.len().min(want.len())],
        "pages differ from the naive scan"
    );
}

/// The whole file against the merge of two or three adjacent parts cut
/// at ledgers drawn from `cut`.
fn merges(first: u32, last: u32, evs: &[Ev], whole: &[u8], cut: u8) {
    if first == last {
        return;
    }
    let span = last - first;
    let mut cuts = BTreeSet::new();
    cuts.insert(first + 1 + u32::from(cut) % span);
    if cut & 0x80 != 0 {
        cuts.insert(first + 1 + u32::from(cut >> 3) % span);
    }
    let mut bounds = vec![first];
    bounds.extend(cuts);
    bounds.push(last + 1);
    let mut parts = Vec::new();
    for (i, w) in bounds.windows(2).enumerate() {
        let part: Vec<Ev> = evs
            .iter()
            .filter(|e| (w[0]..w[1]).contains(&e.id.ledger))
            .cloned()
            .collect();
        let bytes = build(w[0], w[1] - 1, &part, &format!("part{i}.idx"));
        parts.push(
            EventIndex::from_bytes(bytes).unwrap_or_else(|e| panic!("part {i} does not open: {e}")),
        );
    }
    let refs: Vec<&EventIndex> = parts.iter().collect();
    let out = Scratch::named("merged.idx");
    merge(&refs, &out.0).unwrap_or_else(|e| panic!("merging {} parts: {e}", refs.len()));
    let merged = std::fs::read(&out.0).expect("reading the merged index");
    assert!(
        merged == whole,
        "the merge of {} parts differs from the file built whole",
        refs.len()
    );
}
