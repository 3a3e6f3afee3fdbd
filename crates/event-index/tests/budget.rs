//! A search whose lists interleave without meeting: each bounded step
//! pauses and moves on, so a caller can stop at its deadline with a
//! cursor (before, one `next()` walked the whole file).

mod common;

use common::{Ev, RawFilter, Seg, build, synth::sym};
use ledgerstore_event_index::{Query, Step};
use ledgerstore_stellar::events::{EventId, EventType};

#[test]
fn a_search_that_meets_nothing_pauses_within_its_budget_and_moves_on() {
    // Per transaction: a system event with 2 topics, then a contract
    // event with 3. "Contract events with 2 topics" meets none.
    let (first, last) = (100u32, 139u32);
    let mut evs = Vec::new();
    for ledger in first..=last {
        for tx in 1..=500u32 {
            for (i, (kind, n)) in [(EventType::System, 2), (EventType::Contract, 3)]
                .into_iter()
                .enumerate()
            {
                evs.push(Ev {
                    id: EventId {
                        ledger,
                        tx,
                        op: 0,
                        index: i as u32,
                    },
                    kind,
                    contract: Some([7; 32]),
                    topics: (0..n).map(|k| sym(&format!("t{k}"))).collect(),
                });
            }
        }
    }
    let idx = build(first, last, &evs);
    let f = RawFilter {
        types: vec![EventType::Contract],
        contracts: vec![],
        topics: vec![vec![Seg::Star, Seg::Star]],
    };
    let q = Query::from_ledger(vec![f.to_filter()], first);
    let mut m = idx.matches(&q).expect("query");
    let (mut steps, mut last_at) = (0u32, m.next_ordinal());
    while let Some(s) = m.step(64) {
        assert_eq!(s.expect("step"), Step::Paused, "a hit where none matches");
        assert!(m.next_ordinal() > last_at, "a step that did not move on");
        last_at = m.next_ordinal();
        steps += 1;
        assert!(steps <= 1_000, "a step that does no work");
    }
    assert!(
        steps >= 100,
        "{steps} steps: one step searched far past its budget of 64 rounds"
    );
    // Without a budget the same search ends with nothing, and a query
    // that matches answers at once.
    assert_eq!(idx.matches(&q).expect("query").count(), 0);
    let g = RawFilter {
        types: vec![EventType::Contract],
        contracts: vec![],
        topics: vec![vec![Seg::Star, Seg::Star, Seg::Star]],
    };
    let q = Query::from_ledger(vec![g.to_filter()], first);
    let mut m = idx.matches(&q).expect("query");
    match m.step(4) {
        Some(Ok(Step::Hit(h))) => assert_eq!(h.id.index, 1),
        other => panic!("{other:?}"),
    }
}
