//! Merging adjacent ranges' files gives the very file built from the
//! union, on real and synthetic events.

mod common;

use common::{Ev, pubnet, synth::Synth, write};
use ledgerstore_event_index::{EventIndex, merge};

/// Splits `evs` (ledgers `first..=last`) at `cuts` (ledgers starting a
/// part), builds each part, merges them and compares with the whole.
fn merge_equals_union(first: u32, last: u32, evs: &[Ev], cuts: &[u32]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bounds = vec![first];
    bounds.extend_from_slice(cuts);
    bounds.push(last + 1);
    let mut parts = Vec::new();
    for (i, w) in bounds.windows(2).enumerate() {
        let part: Vec<Ev> = evs
            .iter()
            .filter(|e| e.id.ledger >= w[0] && e.id.ledger < w[1])
            .cloned()
            .collect();
        let path = dir.path().join(format!("part{i}"));
        write(&path, w[0], w[1] - 1, &part);
        parts.push(EventIndex::open(&path).expect("open part"));
    }
    let whole = dir.path().join("whole");
    write(&whole, first, last, evs);
    let merged = dir.path().join("merged");
    let refs: Vec<&EventIndex> = parts.iter().collect();
    merge(&refs, &merged).expect("merge");
    let m = EventIndex::open(&merged).expect("open merged");
    m.verify().expect("sha");
    assert_eq!(m.events() as usize, evs.len());
    assert_eq!(
        std::fs::read(&merged).expect("read"),
        std::fs::read(&whole).expect("read"),
        "merged file differs from the one built from the union"
    );
}

#[test]
fn merging_the_pubnet_ledgers_in_parts_equals_building_them_whole() {
    let (first, last, evs) = pubnet();
    merge_equals_union(first, last, &evs, &[first + 1, first + 7, first + 8, last]);
}

#[test]
fn merging_synthetic_parts_equals_building_them_whole() {
    let mut s = Synth::new(30_000, 3, 500);
    let evs: Vec<Ev> = s.by_ref().collect();
    let last = s.next_ledger() + 2; // two trailing ledgers without events
    merge_equals_union(500, last, &evs, &[510, 511, 530, last]);
}

#[test]
fn parts_that_are_not_adjacent_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let evs: Vec<Ev> = Synth::new(1000, 1, 10).collect();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let last = evs.last().expect("events").id.ledger;
    write(&a, 10, last, &evs);
    write(&b, last + 2, last + 3, &[]);
    let (a, b) = (
        EventIndex::open(&a).expect("a"),
        EventIndex::open(&b).expect("b"),
    );
    assert!(merge(&[&a, &b], &dir.path().join("m")).is_err());
    assert!(merge(&[], &dir.path().join("m")).is_err());
    assert!(merge(&[&a], &dir.path().join("m")).is_ok());
}

#[test]
fn a_builder_finished_in_memory_gives_the_bytes_of_its_file() {
    let (first, last, evs) = pubnet();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("file");
    write(&path, first, last, &evs);
    let mut b = ledgerstore_event_index::EventIndexBuilder::new(first, last).expect("builder");
    for e in &evs {
        let topics: Vec<&[u8]> = e.topics.iter().map(|t| t.as_slice()).collect();
        b.push(e.id, e.kind, e.contract.as_ref(), &topics)
            .expect("push");
    }
    let bytes = b.finish_to_vec().expect("finish");
    assert_eq!(bytes, std::fs::read(&path).expect("read"));
    let idx = EventIndex::from_bytes(bytes).expect("open");
    idx.verify().expect("sha");
    assert_eq!(idx.events() as usize, evs.len());
}
