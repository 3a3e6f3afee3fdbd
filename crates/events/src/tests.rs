//! The events store on a real store holding the 20 real pubnet ledgers of
//! 2026, against the independent oracle of their events
//! (`crates/stellar/testdata/events.oracle.json.zst`, made with the
//! Python stellar-sdk) and against the stellar crate's extraction for the
//! bytes; small windows (4 ledgers, fan-out 2) so that levels, merges and
//! the tail all happen.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ledgerstore_backends::Backends;
use ledgerstore_db_api::LedgerInput;
use ledgerstore_event_index::{Filter, Query, Segment, TopicPattern};
use ledgerstore_stellar::events::{EventId, EventType, ledger_events};
use ledgerstore_stellar::walk::walk;
use ledgerstore_stellar::{Network, ReadLimits, decode_file};
use ledgerstore_store::{Ledgerstore, Reader, StoreOptions};
use sha2::{Digest, Sha256};

use crate::{EventStore, EventsConfig, Page, PageLimits, ServedEvent, Stop};

pub(crate) const FIRST: u32 = 63_092_982;
pub(crate) const LAST: u32 = 63_093_001;
pub(crate) const WAIT: Duration = Duration::from_secs(120);

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

pub(crate) fn pubnet_ledgers() -> Vec<LedgerInput> {
    let name = "FC3D4709--63092982-63093001.xdr.zst";
    let bytes = std::fs::read(testdata(name)).expect("fixture");
    let net = Network::parse("pubnet").expect("network");
    decode_file(&bytes, name, &net, ReadLimits::default()).expect("decode")
}

fn oracle_events() -> Vec<serde_json::Value> {
    let packed = std::fs::read(testdata("events.oracle.json.zst")).expect("oracle");
    let v: serde_json::Value =
        serde_json::from_slice(&zstd::decode_all(&packed[..]).expect("zstd")).expect("json");
    v["events"].as_array().expect("events").clone()
}

pub(crate) fn cfg() -> EventsConfig {
    EventsConfig {
        file_ledgers: 4,
        fan_out: 2,
        poll: Duration::from_millis(20),
        ..EventsConfig::default()
    }
}

pub(crate) struct Fixture {
    _tmp: tempfile::TempDir,
    pub(crate) store: Arc<Ledgerstore>,
    pub(crate) events_dir: PathBuf,
}

/// A real store holding `ledgers`.
pub(crate) fn store_with(ledgers: &[LedgerInput]) -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = Ledgerstore::open(
        &tmp.path().join("data"),
        StoreOptions::default(),
        &Backends::for_tests(),
    )
    .expect("open store");
    for batch in ledgers.chunks(8) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
    }
    let events_dir = tmp.path().join("events");
    Fixture {
        _tmp: tmp,
        store: Arc::new(store),
        events_dir,
    }
}

pub(crate) fn open(f: &Fixture, cfg: EventsConfig) -> EventStore {
    let reader: Arc<dyn Reader> = f.store.clone();
    EventStore::open(&f.events_dir, reader, cfg).expect("open events")
}

pub(crate) fn open_built(f: &Fixture) -> EventStore {
    let ev = open(f, cfg());
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    ev
}

pub(crate) fn limits(events: usize, bytes: usize) -> PageLimits {
    PageLimits {
        events,
        bytes,
        deadline: Instant::now() + Duration::from_secs(60),
    }
}

pub(crate) fn start(ledger: u32) -> EventId {
    EventId {
        ledger,
        tx: 0,
        op: 0,
        index: 0,
    }
}

pub(crate) fn all_query(filters: Vec<Filter>) -> Query {
    Query::from_ledger(filters, FIRST)
}

/// Every page of `q` from `FIRST` to the end, resuming where each stops.
pub(crate) fn drain(
    ev: &EventStore,
    q: &Query,
    lim: impl Fn() -> PageLimits,
) -> (Vec<ServedEvent>, usize) {
    let mut out = Vec::new();
    let mut from = start(FIRST);
    let mut pages = 0;
    loop {
        let page: Page = ev.query(q, from, LAST + 1, &lim()).expect("query");
        pages += 1;
        out.extend(page.events);
        match page.resume {
            Some(r) => {
                assert!(r > from || pages == 1, "no progress at {r}");
                assert_eq!(page.scanned_to, r.ledger);
                from = r;
            }
            None => {
                assert_eq!(page.scanned_to, LAST + 1);
                assert_eq!(page.stopped_by, None);
                return (out, pages);
            }
        }
        assert!(pages < 100_000, "too many pages");
    }
}

fn short(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))[..16].to_string()
}

fn strkey(id: &[u8; 32]) -> String {
    stellar_xdr::ContractId(stellar_xdr::Hash(*id)).to_string()
}

/// An event in the oracle's shape.
fn as_oracle(e: &ServedEvent) -> serde_json::Value {
    serde_json::json!({
        "id": e.id.to_string(),
        "ledger": e.ledger,
        "type": e.kind.as_str(),
        "contract": e.contract_id.as_ref().map(strkey),
        "tx": hex::encode(e.tx_hash),
        "op": e.id.op,
        "txi": e.id.tx,
        "ok": e.in_successful_contract_call,
    })
}

fn oracle_shape(w: &serde_json::Value) -> serde_json::Value {
    let mut w = w.clone();
    if let Some(o) = w.as_object_mut() {
        for k in ["topics", "value", "event"] {
            o.remove(k);
        }
    }
    w
}

/// Every served event of the ledgers, by the stellar crate's extraction,
/// as the store serves them.
fn extracted(ledgers: &[LedgerInput]) -> Vec<ServedEvent> {
    let mut out = Vec::new();
    for l in ledgers {
        let slices = walk(&l.raw).expect("walk");
        let evs = ledger_events(&l.raw, &slices).expect("events");
        for o in evs.to_owned_events(&l.raw) {
            out.push(ServedEvent {
                id: o.id,
                kind: o.kind,
                ledger: l.seq,
                ledger_close_time: l.close_time,
                contract_id: o.contract_id,
                tx_hash: o.tx_hash,
                in_successful_contract_call: o.in_successful_contract_call,
                topics: o.topics,
                value: o.value,
            });
        }
    }
    out
}

#[test]
fn every_event_comes_back_paged_equal_to_the_oracle() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let ev = open_built(&f);
    let stats = ev.stats();
    // Windows of 4 from 63092982 (…80..83 clipped, 84..87, …, 96..99)
    // merge into 82..91 (level 2) and 92..99 (level 1); 00..01 is the tail.
    assert!(ev.wait_round(WAIT));
    let stats2 = ev.stats();
    assert_eq!(stats2.files, 2, "{stats:?} then {stats2:?}");
    assert_eq!(
        stats2
            .levels
            .iter()
            .map(|l| (l.level, l.files))
            .collect::<Vec<_>>(),
        vec![(1, 1), (2, 1)]
    );
    assert_eq!(stats2.events, 12_960);
    assert_eq!(stats2.last_error, None);
    assert_eq!(ev.first_ledger(), Some(FIRST));
    assert_eq!(ev.indexed_through(), Some(LAST));

    let want = oracle_events();
    let bytes = extracted(&ledgers);
    assert_eq!(want.len(), 12_960);
    // Small pages of events, then pages stopped by bytes.
    let q = all_query(vec![]);
    let (got, pages) = drain(&ev, &q, || limits(97, usize::MAX));
    assert_eq!(pages, 12_960 / 97 + 1);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(as_oracle(g), oracle_shape(w), "event {i}");
        let topics: Vec<String> = g.topics.iter().map(|t| short(t)).collect();
        assert_eq!(serde_json::json!(topics), w["topics"], "event {i} topics");
        assert_eq!(short(&g.value), w["value"], "event {i} value");
    }
    assert_eq!(got, bytes, "the events' bytes");
    let (by_bytes, pages) = drain(&ev, &q, || limits(10_000, 20_000));
    assert!(pages > 10, "{pages}");
    assert_eq!(by_bytes, bytes);
}

/// The naive getEvents match of one pattern, written from the spec.
fn naive_pattern(p: &[Segment], topics: &[Vec<u8>]) -> bool {
    let rest = p.last() == Some(&Segment::Rest);
    let fixed = &p[..p.len() - usize::from(rest)];
    let len_ok = if rest {
        topics.len() >= fixed.len()
    } else {
        topics.len() == fixed.len()
    };
    len_ok
        && fixed.iter().zip(topics).all(|(s, t)| match s {
            Segment::Value(v) => v == t,
            _ => true,
        })
}

#[test]
fn filtered_queries_equal_the_oracle_filtered_alike() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let ev = open_built(&f);
    let all = extracted(&ledgers);
    // The most frequent contract and first topic, and a rare contract.
    let mut by_contract = std::collections::BTreeMap::new();
    for e in &all {
        *by_contract.entry(e.contract_id).or_insert(0usize) += 1;
    }
    let mut ranked: Vec<_> = by_contract.into_iter().collect();
    ranked.sort_by_key(|(c, n)| (std::cmp::Reverse(*n), *c));
    let top = ranked[0].0.expect("a contract");
    let rare = ranked.last().and_then(|r| r.0).expect("a contract");
    let sym = all[0].topics[0].clone(); // the fee event's "fee" symbol
    let second = all
        .iter()
        .find_map(|e| e.topics.get(1).cloned())
        .expect("topic");
    type Keep = Box<dyn Fn(&ServedEvent) -> bool>;
    let cases: Vec<(Vec<Filter>, Keep)> = vec![
        (
            vec![Filter {
                contract_ids: vec![top, rare],
                ..Filter::default()
            }],
            Box::new(move |e| e.contract_id == Some(top) || e.contract_id == Some(rare)),
        ),
        (
            vec![Filter {
                types: vec![EventType::System],
                ..Filter::default()
            }],
            Box::new(|e| e.kind == EventType::System),
        ),
        (
            vec![Filter {
                types: vec![EventType::Contract],
                contract_ids: vec![rare],
                ..Filter::default()
            }],
            Box::new(move |e| e.kind == EventType::Contract && e.contract_id == Some(rare)),
        ),
    ];
    let patterns = vec![
        vec![Segment::Value(sym.clone()), Segment::Rest],
        vec![Segment::Value(sym.clone()), Segment::Any],
        vec![Segment::Any, Segment::Value(second.clone()), Segment::Rest],
        vec![Segment::Any, Segment::Any, Segment::Any],
        vec![Segment::Rest],
    ];
    let mut cases = cases;
    for p in patterns {
        let pat = TopicPattern::new(p.clone()).expect("pattern");
        cases.push((
            vec![Filter {
                topics: vec![pat],
                ..Filter::default()
            }],
            Box::new(move |e| naive_pattern(&p, &e.topics)),
        ));
    }
    for (i, (filters, keep)) in cases.iter().enumerate() {
        let want: Vec<ServedEvent> = all.iter().filter(|e| keep(e)).cloned().collect();
        let (got, _) = drain(&ev, &all_query(filters.clone()), || limits(50, usize::MAX));
        assert_eq!(got.len(), want.len(), "case {i}");
        assert_eq!(got, want, "case {i}");
    }
    // The oracle agrees on the counts by contract (strkeys).
    let oracle = oracle_events();
    let n = oracle
        .iter()
        .filter(|w| w["contract"] == serde_json::json!(strkey(&rare)))
        .count();
    let (got, _) = drain(
        &ev,
        &all_query(vec![Filter {
            contract_ids: vec![rare],
            ..Filter::default()
        }]),
        || limits(1000, usize::MAX),
    );
    assert_eq!(got.len(), n);
}

#[test]
fn a_passed_deadline_stops_with_a_resume_point() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let ev = open_built(&f);
    let q = all_query(vec![]);
    let lim = PageLimits {
        events: 100,
        bytes: usize::MAX,
        deadline: Instant::now(),
    };
    let page = ev
        .query(&q, start(FIRST + 3), LAST + 1, &lim)
        .expect("query");
    assert_eq!(page.stopped_by, Some(Stop::Deadline));
    assert!(page.events.is_empty());
    let r = page.resume.expect("resume");
    assert_eq!(r.ledger, FIRST + 3);
    assert_eq!(page.scanned_to, FIRST + 3);
    // Resuming from it gives the same as from the start of the ledger.
    let a = ev
        .query(&q, r, LAST + 1, &limits(10, usize::MAX))
        .expect("query");
    let b = ev
        .query(&q, start(FIRST + 3), LAST + 1, &limits(10, usize::MAX))
        .expect("query");
    assert_eq!(a.events, b.events);
    assert_eq!(a.stopped_by, Some(Stop::Events));
    // A byte limit below one event still serves one, and stops.
    let p = ev
        .query(&q, start(FIRST), LAST + 1, &limits(10, 1))
        .expect("query");
    assert_eq!(p.events.len(), 1);
    assert_eq!(p.stopped_by, Some(Stop::Bytes));
    let next = p.resume.expect("resume");
    assert!(next > p.events[0].id);
    let p2 = ev
        .query(&q, next, LAST + 1, &limits(1, usize::MAX))
        .expect("query");
    assert_eq!(p2.events[0].id, next);
    // An empty range and a range past the index.
    let p = ev
        .query(&q, start(LAST + 1), LAST + 50, &limits(10, 10))
        .expect("query");
    assert!(p.events.is_empty() && p.resume.is_none());
}

#[test]
fn the_tail_makes_each_new_ledger_searchable() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers[..9]);
    let ev = open(&f, cfg());
    assert!(ev.wait_indexed_through(FIRST + 8, WAIT), "{:?}", ev.stats());
    let q = all_query(vec![]);
    for l in &ledgers[9..] {
        f.store
            .ingest(std::slice::from_ref(l), Duration::ZERO)
            .expect("ingest");
        ev.notify();
        assert!(ev.wait_indexed_through(l.seq, WAIT), "{:?}", ev.stats());
        let want = extracted(std::slice::from_ref(l));
        let page = ev
            .query(&q, start(l.seq), l.seq + 1, &limits(100_000, usize::MAX))
            .expect("query");
        assert_eq!(page.events, want, "ledger {}", l.seq);
        assert_eq!(page.resume, None);
    }
    assert!(ev.wait_round(WAIT));
    assert_eq!(ev.stats().files, 2);
    let (got, _) = drain(&ev, &q, || limits(500, usize::MAX));
    assert_eq!(got, extracted(&ledgers));
}

#[test]
fn a_crash_between_a_merge_and_its_deletes_opens_clean() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    // Level-0 files only, in a second dir (no merge within 20 ledgers).
    let flat = f.events_dir.with_file_name("flat");
    let reader: Arc<dyn Reader> = f.store.clone();
    let flat_cfg = EventsConfig {
        fan_out: 1024,
        ..cfg()
    };
    let ev = EventStore::open(&flat, reader, flat_cfg).expect("open");
    assert!(ev.wait_indexed_through(LAST, WAIT));
    assert!(ev.wait_round(WAIT));
    assert_eq!(ev.stats().files, 5);
    ev.close();
    let ev = open_built(&f);
    assert!(ev.wait_round(WAIT));
    let before = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    ev.close();
    // The parts come back beside the merged files, with a half-written file.
    for entry in std::fs::read_dir(&flat).expect("list") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("ev-") {
            std::fs::copy(&path, f.events_dir.join(name)).expect("copy");
        }
    }
    std::fs::write(
        f.events_dir.join("tmp-ev-0063092992-0063092999.idx"),
        b"half",
    )
    .expect("tmp");
    let ev = open(&f, cfg());
    let stats = ev.stats();
    assert_eq!(stats.files, 2, "{stats:?}");
    // The marker, the lock and the two files.
    assert_eq!(std::fs::read_dir(&f.events_dir).expect("list").count(), 4);
    assert!(ev.wait_indexed_through(LAST, WAIT));
    let after = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    assert_eq!(after, before);
    ev.close();
    // A truncated file is deleted at open and built again.
    let victim = f.events_dir.join("ev-0063092992-0063092999.idx");
    let len = std::fs::metadata(&victim).expect("size").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .and_then(|file| file.set_len(len / 2))
        .expect("truncate");
    let ev = open(&f, cfg());
    assert!(ev.wait_indexed_through(LAST, WAIT));
    assert!(ev.wait_round(WAIT));
    assert_eq!(ev.stats().files, 2);
    let again = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    assert_eq!(again, before);
    ev.close();
    // A foreign file refuses the open, naming it.
    std::fs::write(f.events_dir.join("notes.txt"), b"x").expect("write");
    let reader: Arc<dyn Reader> = f.store.clone();
    let e = EventStore::open(&f.events_dir, reader, cfg()).expect_err("foreign");
    assert!(e.to_string().contains("notes.txt"), "{e}");
}

#[test]
fn verify_finds_damaged_and_missing_files_and_the_builder_rebuilds_them() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let ev = open_built(&f);
    assert!(ev.wait_round(WAIT));
    let before = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    assert_eq!(ev.verify().expect("verify").damaged, vec![]);
    let names: Vec<PathBuf> = {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&f.events_dir)
            .expect("list")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "idx"))
            .collect();
        v.sort();
        v
    };
    assert_eq!(names.len(), 2);
    // Flip a byte inside the first file; delete the second.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .open(&names[0])
        .expect("open");
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(200)).expect("seek");
    file.write_all(&[0xA5]).expect("write");
    drop(file);
    std::fs::remove_file(&names[1]).expect("remove");
    let report = ev.verify().expect("verify");
    assert_eq!(report.checked, 2);
    let damaged: Vec<&str> = report.damaged.iter().map(|d| d.0.as_str()).collect();
    assert_eq!(
        damaged,
        vec![
            "ev-0063092982-0063092991.idx",
            "ev-0063092992-0063092999.idx"
        ]
    );
    assert!(
        report.damaged[0].1.contains("checksum"),
        "{:?}",
        report.damaged
    );
    assert_eq!(report.damaged[1].1, "missing");
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    assert!(ev.wait_round(WAIT));
    assert_eq!(ev.stats().files, 2);
    assert_eq!(ev.verify().expect("verify").damaged, vec![]);
    let after = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    assert_eq!(after, before);
}

/// A file damaged while the daemon was down, in a way the open does not
/// see (its sections still tile; only its SHA-256 says so), is found by
/// the scrub that checks every file once after open, dropped and rebuilt
/// from the stored ledgers: answers never come from it.
#[test]
fn the_scrub_after_open_rebuilds_a_file_damaged_while_closed() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let ev = open_built(&f);
    assert!(ev.wait_round(WAIT));
    let before = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    ev.close();
    let first = f.events_dir.join("ev-0063092982-0063092991.idx");
    let mut bytes = std::fs::read(&first).expect("read");
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5A;
    std::fs::write(&first, &bytes).expect("write");
    let ev = open(&f, cfg());
    // One file is checked a round: two files, a few rounds.
    for _ in 0..4 {
        assert!(ev.wait_round(WAIT), "{:?}", ev.stats());
    }
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    // The scrub already dropped and rebuilt it: nothing left to find.
    assert_eq!(ev.verify().expect("verify").damaged, vec![]);
    assert_ne!(std::fs::read(&first).expect("read"), bytes);
    let after = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0;
    assert_eq!(after, before);
}

/// After a restart of an index that had caught up, the tail is back
/// before the store answers: `indexed_through` never goes back.
#[test]
fn a_restart_serves_through_the_mark_at_once() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let ev = open_built(&f);
    ev.close();
    let ev = open(&f, cfg());
    assert_eq!(ev.indexed_through(), Some(LAST));
}

#[test]
fn reopening_keeps_the_recorded_settings() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers[..6]);
    let ev = open(&f, cfg());
    assert!(ev.wait_indexed_through(FIRST + 5, WAIT));
    ev.close();
    let marker = std::fs::read_to_string(f.events_dir.join(crate::MARKER)).expect("marker");
    assert_eq!(marker, "ledgerstore-events 1\nfile_ledgers 4\nfan_out 2\n");
    let other = EventsConfig {
        file_ledgers: 64,
        fan_out: 16,
        ..cfg()
    };
    let ev = open(&f, other);
    let stats = ev.stats();
    assert_eq!((stats.config.file_ledgers, stats.config.fan_out), (4, 2));
    assert!(ev.wait_indexed_through(FIRST + 5, WAIT));
    let (got, _) = drain_to(&ev, FIRST + 6);
    assert_eq!(got, extracted(&ledgers[..6]));
}

fn drain_to(ev: &EventStore, end: u32) -> (Vec<ServedEvent>, usize) {
    let q = all_query(vec![]);
    let page = ev
        .query(&q, start(FIRST), end, &limits(1_000_000, usize::MAX))
        .expect("query");
    assert_eq!(page.resume, None);
    (page.events, 1)
}

/// The first stream of stellar-core's unit tests (protocols 20 to 22:
/// `TransactionMeta` V3, events in `sorobanMeta`) whose ledgers have
/// served events, decoded.
fn v3_stream_with_events() -> (String, Vec<LedgerInput>) {
    use std::io::Read;
    let name = "core-unit-test-lcms.tar.zst";
    let packed = std::fs::read(testdata(name)).expect("fixture");
    let tar = zstd::decode_all(&packed[..]).expect("zstd");
    let mut archive = tar::Archive::new(&tar[..]);
    let net = Network::parse("(V) (;,,;) (V)").expect("network");
    for entry in archive.entries().expect("tar") {
        let mut entry = entry.expect("entry");
        let path = entry.path().expect("path").display().to_string();
        if !path.ends_with(".xdr") {
            continue;
        }
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).expect("read");
        let Ok(ledgers) = decode_file(&bytes, &path, &net, ReadLimits::default()) else {
            continue;
        };
        let v3_events = ledgers.iter().any(|l| {
            let slices = walk(&l.raw).expect("walk");
            let v3 = slices
                .applied
                .iter()
                .any(|a| a.meta.of(&l.raw).get(3) == Some(&3));
            v3 && !ledger_events(&l.raw, &slices)
                .expect("events")
                .list
                .is_empty()
        });
        let consecutive = ledgers.windows(2).all(|w| w[1].seq == w[0].seq + 1);
        if v3_events && consecutive && ledgers.len() >= 3 {
            return (path, ledgers);
        }
    }
    panic!("no stream with V3 metas and events");
}

#[test]
fn transaction_meta_v3_events_of_protocols_20_to_22_are_served() {
    let (path, ledgers) = v3_stream_with_events();
    let f = store_with(&ledgers);
    let ev = open(&f, cfg());
    let (first, last) = (ledgers[0].seq, ledgers[ledgers.len() - 1].seq);
    assert!(
        ev.wait_indexed_through(last, WAIT),
        "{path}: {:?}",
        ev.stats()
    );
    let want = extracted(&ledgers);
    assert!(!want.is_empty());
    eprintln!("{path}: ledgers {first}..={last}, {} events", want.len());
    let mut got = Vec::new();
    let mut from = start(first);
    loop {
        let page = ev
            .query(
                &Query::from_ledger(vec![], first),
                from,
                last + 1,
                &limits(3, usize::MAX),
            )
            .expect("query");
        got.extend(page.events);
        match page.resume {
            Some(r) => from = r,
            None => break,
        }
    }
    assert_eq!(got, want, "{path}");
    // By contract: each event's own contract finds it.
    let c = want
        .iter()
        .find_map(|e| e.contract_id)
        .expect("a contract event");
    let q = Query::from_ledger(
        vec![Filter {
            contract_ids: vec![c],
            ..Filter::default()
        }],
        first,
    );
    let page = ev
        .query(&q, start(first), last + 1, &limits(10_000, usize::MAX))
        .expect("query");
    let by_c: Vec<_> = want
        .iter()
        .filter(|e| e.contract_id == Some(c))
        .cloned()
        .collect();
    assert_eq!(page.events, by_c, "{path}");
}

#[test]
fn ledgers_that_are_not_stellar_stop_the_builder_with_a_named_error() {
    let synth = ledgerstore_synth::Synth::new(ledgerstore_synth::SynthConfig::small(7, 3));
    let f = store_with(&synth.batch(100, 12));
    let ev = open(&f, cfg());
    assert!(
        ev.shared.wait_status(WAIT, |st| st.last_error.is_some()),
        "{:?}",
        ev.stats()
    );
    let stats = ev.stats();
    let err = stats.last_error.expect("an error");
    assert!(
        err.contains("ledger 100") && err.contains("not a Stellar"),
        "{err}"
    );
    assert_eq!(stats.indexed_through, None);
    assert_eq!(stats.files, 0);
    // Nothing is skipped: a query finds nothing indexed.
    let page = ev
        .query(
            &Query::from_ledger(vec![], 100),
            start(100),
            112,
            &limits(10, 10),
        )
        .expect("query");
    assert_eq!((page.events.len(), page.resume), (0, None));
    ev.close();
}

#[test]
fn merges_stop_at_max_file_events() {
    let ledgers = pubnet_ledgers();
    let f = store_with(&ledgers);
    let capped = EventsConfig {
        max_file_events: 3_000,
        ..cfg()
    };
    let ev = open(&f, capped);
    assert!(ev.wait_indexed_through(LAST, WAIT));
    assert!(ev.wait_round(WAIT));
    let stats = ev.stats();
    // Every group of files that tiles a window (84..87 with 88..91,
    // 82..83 with 84..91's parts, ...) holds over 3,000 events.
    assert_eq!(stats.files, 5, "{stats:?}");
    assert_eq!(stats.levels.len(), 1);
    let (got, _) = drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX));
    assert_eq!(got, extracted(&ledgers));
}
