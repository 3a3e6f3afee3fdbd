//! Damaged files: every truncation is refused on open, and every byte
//! flip is either refused on open or found by the checksum, and queries
//! and id lookups on a flipped file give errors or answers, never a
//! panic.

mod common;

use common::{Ev, synth::Synth, write};
use ledgerstore_event_index::{EventIndex, Filter, Query, Segment, TopicPattern};
use ledgerstore_stellar::events::EventId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn small() -> (Vec<u8>, Vec<Ev>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("x");
    let evs: Vec<Ev> = Synth::new(3000, 5, 100).collect();
    let last = evs.last().expect("events").id.ledger;
    write(&path, 100, last, &evs);
    (std::fs::read(&path).expect("read"), evs)
}

fn queries(evs: &[Ev]) -> Vec<Query> {
    let e = &evs[evs.len() / 2];
    let pat = |segs| TopicPattern::new(segs).expect("pattern");
    let filters = vec![
        Filter {
            contract_ids: vec![e.contract.expect("contract")],
            ..Default::default()
        },
        Filter {
            topics: vec![
                pat(vec![Segment::Value(e.topics[0].clone()), Segment::Rest]),
                pat(vec![Segment::Any, Segment::Value(e.topics[1].clone())]),
            ],
            ..Default::default()
        },
    ];
    vec![
        Query::from_ledger(filters.clone(), 0),
        Query::after(filters, e.id),
        Query::from_ledger(vec![], 0),
    ]
}

/// Uses every part of the file; Ok or Err, never a panic.
fn exercise(idx: &EventIndex, qs: &[Query]) {
    for q in qs {
        let _ = idx.query(q, 300);
        if let Ok(m) = idx.matches(q) {
            for hit in m.take(300) {
                if hit.is_err() {
                    break;
                }
            }
        }
    }
    for ord in [0, 1, idx.events() / 2, idx.events().saturating_sub(1)] {
        let _ = idx.id_of(ord);
    }
    let _ = idx.ordinal_from(EventId {
        ledger: 105,
        tx: 3,
        op: 0,
        index: 1,
    });
}

#[test]
fn every_truncation_is_refused_on_open() {
    let (bytes, _) = small();
    for len in 0..bytes.len() {
        assert!(
            EventIndex::from_bytes(bytes[..len].to_vec()).is_err(),
            "length {len}"
        );
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(EventIndex::from_bytes(longer).is_err());
}

#[test]
fn byte_flips_are_caught_and_never_panic() {
    let (bytes, evs) = small();
    let qs = queries(&evs);
    let whole = EventIndex::from_bytes(bytes.clone()).expect("open");
    whole.verify().expect("sha");
    exercise(&whole, &qs);
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    // Every header byte, then random positions over the whole file.
    let positions: Vec<usize> = (0..200)
        .chain((0..1000).map(|_| rng.random_range(0..bytes.len())))
        .collect();
    // Every 5th flipped file is also mapped from a file: queries then
    // prefetch (`MADV_WILLNEED`) through damaged tables too.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("flipped");
    for (i, at) in positions.into_iter().enumerate() {
        let mut b = bytes.clone();
        b[at] ^= 1 << rng.random_range(0..8);
        if i % 5 == 0 {
            std::fs::write(&path, &b).expect("write");
            if let Ok(idx) = EventIndex::open(&path) {
                exercise(&idx, &qs);
            }
        }
        match EventIndex::from_bytes(b) {
            Err(_) => {}
            Ok(idx) => {
                assert!(idx.verify().is_err(), "flip at {at} passed the checksum");
                exercise(&idx, &qs);
            }
        }
    }
}

#[test]
fn hostile_counts_do_not_allocate_or_panic() {
    let (bytes, evs) = small();
    let qs = queries(&evs);
    // Huge counts and offsets in the header and in the first list.
    for (at, v) in [
        (24usize, u64::MAX),
        (32, u64::MAX / 40),
        (40, 1 << 60),
        (56, 0),
        (64, u64::MAX),
    ] {
        let mut b = bytes.clone();
        b[at..at + 8].copy_from_slice(&v.to_le_bytes());
        assert!(EventIndex::from_bytes(b).is_err(), "header field at {at}");
    }
    for at in 200..200 + 64 {
        for v in [0x00u8, 0x7f, 0xff] {
            let mut b = bytes.clone();
            b[at] = v;
            if let Ok(idx) = EventIndex::from_bytes(b) {
                exercise(&idx, &qs);
            }
        }
    }
}
