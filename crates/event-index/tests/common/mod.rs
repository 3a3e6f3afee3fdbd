//! Shared by the tests: events as plain values, the 20 real pubnet
//! ledgers' events, synthetic events, an index built from them, and a
//! naive getEvents matcher written from go-stellar-sdk's rules, independent
//! of the crate's own `Query::matches`.

#![allow(dead_code)]

pub mod synth;

use std::path::Path;

use ledgerstore_event_index::{EventIndex, EventIndexBuilder, Filter, Segment, TopicPattern};
use ledgerstore_stellar::events::{EventId, EventType, ledger_events};
use ledgerstore_stellar::walk::walk;
use ledgerstore_stellar::{Network, ReadLimits, decode_file};

/// An event as the index sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ev {
    pub id: EventId,
    pub kind: EventType,
    pub contract: Option<[u8; 32]>,
    pub topics: Vec<Vec<u8>>,
}

/// The events getEvents serves for the 20 pubnet ledgers of 2026
/// (12,960), with their ledger range.
pub fn pubnet() -> (u32, u32, Vec<Ev>) {
    let name = "FC3D4709--63092982-63093001.xdr.zst";
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name);
    let bytes = std::fs::read(&path).expect("read corpus");
    let net = Network::parse("pubnet").expect("network");
    let ledgers = decode_file(&bytes, name, &net, ReadLimits::default()).expect("decode");
    let mut out = Vec::new();
    let (mut first, mut last) = (u32::MAX, 0);
    for l in ledgers {
        let slices = walk(&l.raw).expect("walk");
        first = first.min(slices.seq);
        last = last.max(slices.seq);
        let evs = ledger_events(&l.raw, &slices).expect("events");
        for e in evs.to_owned_events(&l.raw) {
            out.push(Ev {
                id: e.id,
                kind: e.kind,
                contract: e.contract_id,
                topics: e.topics,
            });
        }
    }
    (first, last, out)
}

/// Builds an index of `evs` into bytes.
pub fn build(first: u32, last: u32, evs: &[Ev]) -> EventIndex {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("events.idx");
    write(&path, first, last, evs);
    EventIndex::from_bytes(std::fs::read(&path).expect("read")).expect("open")
}

/// Writes an index of `evs` at `path`.
pub fn write(path: &Path, first: u32, last: u32, evs: &[Ev]) {
    let mut b = EventIndexBuilder::new(first, last).expect("builder");
    for e in evs {
        let topics: Vec<&[u8]> = e.topics.iter().map(|t| t.as_slice()).collect();
        b.push(e.id, e.kind, e.contract.as_ref(), &topics)
            .expect("push");
    }
    b.finish(path).expect("finish");
}

/// A topic segment as a request gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Val(Vec<u8>),
    Star,
    StarStar,
}

/// A filter as a request gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawFilter {
    pub types: Vec<EventType>,
    pub contracts: Vec<[u8; 32]>,
    pub topics: Vec<Vec<Seg>>,
}

impl RawFilter {
    pub fn to_filter(&self) -> Filter {
        Filter {
            types: self.types.clone(),
            contract_ids: self.contracts.clone(),
            topics: self
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
                    .expect("valid pattern")
                })
                .collect(),
        }
    }
}

/// go-stellar-sdk `TopicFilter.Matches`, transcribed.
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
    let type_ok = f.types.is_empty() || f.types.contains(&e.kind);
    let contract_ok =
        f.contracts.is_empty() || e.contract.is_some_and(|c| f.contracts.contains(&c));
    let topics_ok = f.topics.is_empty() || f.topics.iter().any(|t| topic_matches(t, &e.topics));
    type_ok && contract_ok && topics_ok
}

/// The ids a naive scan returns: events with `start ≤ id < end` matching
/// any filter (or all, with none), in id order, at most `limit`.
pub fn naive(
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
