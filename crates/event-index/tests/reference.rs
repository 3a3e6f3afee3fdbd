//! The index against a naive scan (go-stellar-sdk's matching rules,
//! transcribed in `common`), on the 20 real pubnet ledgers and on
//! synthetic events, for random filters with `*` and `**`, several
//! filters, cursors, end bounds and limits.

mod common;

use std::sync::OnceLock;

use common::{Ev, RawFilter, Seg, build, naive, pubnet, synth::Synth, write};
use ledgerstore_event_index::{EventIndex, Filter, Query};
use ledgerstore_stellar::events::{EventId, EventType};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

struct Fixture {
    evs: Vec<Ev>,
    idx: EventIndex,
}

fn real() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let (first, last, evs) = pubnet();
        assert_eq!(evs.len(), 12_960);
        let idx = build(first, last, &evs);
        Fixture { evs, idx }
    })
}

fn synthetic() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let mut s = Synth::new(40_000, 7, 1000);
        let evs: Vec<Ev> = s.by_ref().collect();
        let idx = build(1000, s.next_ledger() + 3, &evs);
        Fixture { evs, idx }
    })
}

/// Large enough for every part of the format: a ledger sample of 3
/// entries (over 1,024 ledgers), a contract sample of several (over 64
/// contracts), and lists of more than 512 blocks (upper tables). Also
/// gives the file's bytes.
fn large() -> &'static (Fixture, Vec<u8>) {
    static F: OnceLock<(Fixture, Vec<u8>)> = OnceLock::new();
    F.get_or_init(|| {
        let mut s = Synth::new(700_000, 9, 5000);
        let evs: Vec<Ev> = s.by_ref().collect();
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("large.idx");
        write(&path, 5000, s.next_ledger() + 3, &evs);
        let bytes = std::fs::read(&path).expect("read");
        let idx = EventIndex::open(&path).expect("open");
        (Fixture { evs, idx }, bytes)
    })
}

fn pattern(rng: &mut ChaCha8Rng, evs: &[Ev]) -> Vec<Seg> {
    if rng.random_bool(0.05) {
        return vec![Seg::StarStar];
    }
    let e = &evs[rng.random_range(0..evs.len())];
    let mut segs: Vec<Seg> = e
        .topics
        .iter()
        .take(4)
        .map(|t| {
            if rng.random_bool(0.6) {
                Seg::Val(t.clone())
            } else {
                Seg::Star
            }
        })
        .collect();
    if rng.random_bool(0.1) {
        let at = rng.random_range(0..=segs.len().min(3));
        segs.insert(at, Seg::Val(vec![0, 0, 0, 15, 0, 0, 0, 1, b'x', 0, 0, 0]));
        segs.truncate(4);
    }
    if rng.random_bool(0.1) && segs.len() < 4 {
        segs.push(Seg::Star);
    }
    if rng.random_bool(0.35) {
        let keep = rng.random_range(0..=segs.len());
        segs.truncate(keep);
        segs.push(Seg::StarStar);
    } else if segs.is_empty() {
        segs.push(Seg::Star);
    }
    segs
}

fn random_filter(rng: &mut ChaCha8Rng, evs: &[Ev]) -> RawFilter {
    let types = match rng.random_range(0..6) {
        0 => vec![EventType::Contract],
        1 => vec![EventType::System],
        2 => vec![EventType::System, EventType::Contract],
        _ => vec![],
    };
    let contracts = (0..[0, 0, 1, 1, 2, 5][rng.random_range(0..6)])
        .map(|_| {
            if rng.random_bool(0.05) {
                [9; 32]
            } else {
                evs[rng.random_range(0..evs.len())]
                    .contract
                    .unwrap_or([1; 32])
            }
        })
        .collect();
    let topics = (0..[0, 1, 1, 2, 5][rng.random_range(0..5)])
        .map(|_| pattern(rng, evs))
        .collect();
    RawFilter {
        types,
        contracts,
        topics,
    }
}

/// One random query on `f`, checked against the naive scan.
fn check(f: &Fixture, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let evs = &f.evs;
    let filters: Vec<RawFilter> = (0..rng.random_range(0..=5))
        .map(|_| random_filter(&mut rng, evs))
        .collect();
    let pick = |rng: &mut ChaCha8Rng| evs[rng.random_range(0..evs.len())].id;
    let cursor = rng.random_bool(0.5);
    let mut start = match rng.random_range(0..3) {
        0 => EventId {
            ledger: f.idx.first_ledger(),
            tx: 0,
            op: 0,
            index: 0,
        },
        _ => pick(&mut rng),
    };
    let end = rng.random_bool(0.3).then(|| pick(&mut rng));
    let limit = [1, 10, 100, 1000, 100_000][rng.random_range(0..5)];
    let fs: Vec<Filter> = filters.iter().map(RawFilter::to_filter).collect();
    let mut q = if cursor {
        Query::after(fs, start)
    } else {
        Query {
            filters: fs,
            start,
            end: None,
        }
    };
    q.end = end;
    if cursor {
        start.index += 1;
    }
    let want = naive(evs, &filters, start, end, limit);
    let hits = f.idx.query(&q, limit).expect("query");
    let got: Vec<EventId> = hits.iter().map(|h| h.id).collect();
    assert_eq!(got, want, "seed {seed}: {filters:?}");
    // The exact re-check a reader applies keeps every hit here.
    for h in &hits {
        let e = &evs[h.ordinal as usize];
        assert_eq!(e.id, h.id);
        let topics: Vec<&[u8]> = e.topics.iter().map(|t| t.as_slice()).collect();
        assert!(
            q.matches(e.kind, e.contract.as_ref(), &topics),
            "seed {seed}"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn pubnet_index_answers_like_a_naive_scan(seed in any::<u64>()) {
        check(real(), seed);
    }

    #[test]
    fn synthetic_index_answers_like_a_naive_scan(seed in any::<u64>()) {
        check(synthetic(), seed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    #[test]
    fn large_index_with_samples_and_upper_tables_answers_like_a_naive_scan(seed in any::<u64>()) {
        check(&large().0, seed);
    }
}

#[test]
fn large_index_has_samples_upper_tables_and_pages_through_a_long_list() {
    let f = &large().0;
    let sizes: std::collections::HashMap<_, _> = f.idx.section_sizes().into_iter().collect();
    assert!(sizes["ledger_sample"] >= 12, "{sizes:?}");
    assert!(sizes["contract_sample"] >= 3 * 32, "{sizes:?}");
    // The native contract's list: far over 512 blocks of 128.
    let native = common::synth::contract_id(0);
    let filters = vec![RawFilter {
        contracts: vec![native],
        ..Default::default()
    }];
    let want = naive(&f.evs, &filters, f.evs[0].id, None, usize::MAX);
    assert!(want.len() > 2 * 512 * 128, "{}", want.len());
    let fs: Vec<Filter> = filters.iter().map(RawFilter::to_filter).collect();
    // Pages of 1,000 from the start, then first pages from every 37th
    // ledger (a first seek through the upper table each).
    let mut q = Query::from_ledger(fs.clone(), f.idx.first_ledger());
    let mut got = Vec::new();
    loop {
        let page = f.idx.query(&q, 1000).expect("query");
        got.extend(page.iter().map(|h| h.id));
        match page.last() {
            Some(h) if page.len() == 1000 => q = Query::after(fs.clone(), h.id),
            _ => break,
        }
    }
    assert_eq!(got, want);
    for ledger in (f.idx.first_ledger()..=f.idx.last_ledger()).step_by(37) {
        let start = EventId {
            ledger,
            tx: 0,
            op: 0,
            index: 0,
        };
        let q = Query::from_ledger(fs.clone(), ledger);
        let page: Vec<EventId> = f
            .idx
            .query(&q, 3)
            .expect("query")
            .iter()
            .map(|h| h.id)
            .collect();
        assert_eq!(
            page,
            naive(&f.evs, &filters, start, None, 3),
            "ledger {ledger}"
        );
    }
}

/// Flips in the samples and in the longest list's head (the native
/// contract's, the first list: its length, blocks' length and upper
/// table) give errors or answers, never a panic.
#[test]
fn flips_in_samples_and_upper_tables_never_panic() {
    let (f, bytes) = large();
    let native = common::synth::contract_id(0);
    let e = &f.evs[f.evs.len() / 2];
    let qs = [
        Query::from_ledger(
            vec![Filter {
                contract_ids: vec![native],
                ..Default::default()
            }],
            e.id.ledger,
        ),
        Query::from_ledger(
            vec![Filter {
                contract_ids: vec![e.contract.expect("contract"), native],
                ..Default::default()
            }],
            f.idx.first_ledger(),
        ),
    ];
    let sizes: std::collections::HashMap<_, _> = f.idx.section_sizes().into_iter().collect();
    let end = bytes.len() - 32;
    let samples = end - sizes["ledger_sample"] - sizes["contract_sample"];
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("flipped");
    for at in (200..240).chain(samples..end) {
        for flip in [1u8, 0xff] {
            let mut b = bytes.clone();
            b[at] ^= flip;
            // The list heads' flips also mapped from a file: queries then
            // prefetch through the damaged head.
            let opened = if at < 240 && flip == 0xff {
                std::fs::write(&path, &b).expect("write");
                EventIndex::open(&path)
            } else {
                EventIndex::from_bytes(b)
            };
            let Ok(idx) = opened else {
                continue;
            };
            for q in &qs {
                let _ = idx.query(q, 300);
                if let Ok(m) = idx.matches(q) {
                    for hit in m.take(300) {
                        if hit.is_err() {
                            break;
                        }
                    }
                }
            }
            for ord in [0, idx.events() / 3, idx.events() - 1] {
                let _ = idx.id_of(ord);
            }
        }
    }
}

#[test]
fn every_ordinal_maps_to_its_id_and_back() {
    for f in [real(), synthetic(), &large().0] {
        assert_eq!(f.idx.events() as usize, f.evs.len());
        for (i, e) in f.evs.iter().enumerate() {
            assert_eq!(f.idx.id_of(i as u32).expect("id"), e.id);
            assert_eq!(f.idx.ordinal_from(e.id).expect("ordinal"), i as u32);
        }
        f.idx.verify().expect("sha");
    }
}

#[test]
fn paging_with_cursors_reaches_every_match_once() {
    let f = real();
    let native = f.evs[0].contract.expect("contract");
    let filters = vec![RawFilter {
        contracts: vec![native],
        ..Default::default()
    }];
    let want = naive(&f.evs, &filters, f.evs[0].id, None, usize::MAX);
    let fs: Vec<Filter> = filters.iter().map(RawFilter::to_filter).collect();
    let mut q = Query::from_ledger(fs.clone(), f.idx.first_ledger());
    let mut got = Vec::new();
    loop {
        let page = f.idx.query(&q, 97).expect("query");
        got.extend(page.iter().map(|h| h.id));
        match page.last() {
            Some(h) if page.len() == 97 => q = Query::after(fs.clone(), h.id),
            _ => break,
        }
    }
    assert!(want.len() > 5000, "{}", want.len());
    assert_eq!(got, want);
}

#[test]
fn queries_beyond_get_events_limits_are_refused() {
    let f = real();
    let too_many = Query::from_ledger(vec![Filter::default(); 6], 0);
    assert!(f.idx.query(&too_many, 1).is_err());
    let diag = Query::from_ledger(
        vec![Filter {
            types: vec![EventType::Diagnostic],
            ..Default::default()
        }],
        0,
    );
    assert!(f.idx.query(&diag, 1).is_err());
    use ledgerstore_event_index::{Segment, TopicPattern};
    assert!(TopicPattern::new(vec![]).is_err());
    assert!(TopicPattern::new(vec![Segment::Rest, Segment::Any]).is_err());
    assert!(TopicPattern::new(vec![Segment::Any; 5]).is_err());
    assert!(
        TopicPattern::new(vec![
            Segment::Any,
            Segment::Any,
            Segment::Any,
            Segment::Any,
            Segment::Rest
        ])
        .is_ok()
    );
}
