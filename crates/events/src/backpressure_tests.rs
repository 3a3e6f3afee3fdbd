//! Backpressure on ingest (`Shared::wait_room`): once the builder keeps
//! pace with offers, an offer past the room it keeps waits for it rather
//! than leave the ledgers to be read back; it does not wait for a builder
//! indexing history, far behind, failing or released, and gives up on
//! a stalled one once per position.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use ledgerstore_db_api::LedgerInput;
use ledgerstore_store::{Ledgerstore, Reader};

use crate::offer_tests::{empty_store, kept};
use crate::tests::{FIRST, LAST, WAIT, cfg, pubnet_ledgers};
use crate::{EventStore, EventsConfig};

/// Windows of 2 ledgers: the builder keeps offers for 8 past its files.
fn two() -> EventsConfig {
    EventsConfig {
        file_ledgers: 2,
        ..cfg()
    }
}

/// A store and an events store over it; the builder has found the store
/// empty.
fn open(dir: &std::path::Path, c: EventsConfig) -> (Arc<Ledgerstore>, Arc<EventStore>) {
    let store = empty_store(dir);
    let reader: Arc<dyn Reader> = store.clone();
    let ev = Arc::new(EventStore::open(&dir.join("events"), reader, c).expect("open events"));
    assert!(ev.wait_round(WAIT));
    (store, ev)
}

/// Ingests and offers `ledgers` and waits until they are indexed: the
/// builder then keeps pace with offers.
fn in_step(store: &Ledgerstore, ev: &EventStore, ledgers: &[LedgerInput]) {
    // Held from the commit through the offer, so a poll round between
    // them cannot read the ledgers back first.
    let work = ev.shared.work();
    store.ingest(ledgers, Duration::ZERO).expect("ingest");
    ev.offer(ledgers);
    drop(work);
    let last = ledgers.last().expect("ledgers").seq;
    assert!(ev.wait_indexed_through(last, WAIT), "{:?}", ev.stats());
    assert!(ev.stats().ledgers_offered > 0, "{:?}", ev.stats());
}

/// An offer on its own thread; the flag is set when it returns.
fn offer_in_background(
    ev: &Arc<EventStore>,
    ledgers: Vec<LedgerInput>,
) -> (std::thread::JoinHandle<()>, Arc<AtomicBool>) {
    let done = Arc::new(AtomicBool::new(false));
    let (ev, flag) = (ev.clone(), done.clone());
    let t = std::thread::spawn(move || {
        ev.offer(&ledgers);
        flag.store(true, Ordering::SeqCst);
    });
    (t, done)
}

/// Polls `f` until it holds (at most [`WAIT`]).
fn wait_until(f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < WAIT, "timed out");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// With the builder held by the caller (its work lock), after
/// [`in_step`] over the first 2 ledgers: ingests the rest and offers them
/// on a thread, which keeps the room (4 windows of 2 past the builder's
/// files) and then waits for the builder.
fn offer_to_held_builder(
    store: &Ledgerstore,
    ev: &Arc<EventStore>,
    ledgers: &[LedgerInput],
) -> (std::thread::JoinHandle<()>, Arc<AtomicBool>) {
    store.ingest(&ledgers[2..], Duration::ZERO).expect("ingest");
    let (offer, done) = offer_in_background(ev, ledgers[2..].to_vec());
    let room: Vec<u32> = (FIRST + 2..FIRST + 10).collect();
    wait_until(|| kept(ev) == room);
    std::thread::sleep(Duration::from_millis(300));
    assert!(!done.load(Ordering::SeqCst), "the offer did not wait");
    assert_eq!(kept(ev), room);
    (offer, done)
}

#[test]
fn a_builder_held_by_a_merge_makes_the_offer_wait_and_nothing_is_read_back() {
    let ledgers = pubnet_ledgers();
    let tmp = tempfile::tempdir().expect("tmp");
    let (store, ev) = open(tmp.path(), two());
    in_step(&store, &ev, &ledgers[..2]);
    // A long merge, as the builder sees it: the work lock held from
    // before the ledgers land, so it cannot read any of them back first.
    let work = ev.shared.work();
    let (offer, _) = offer_to_held_builder(&store, &ev, &ledgers);
    drop(work);
    offer.join().expect("offer");
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    assert!(ev.wait_round(WAIT));
    let st = ev.stats();
    assert_eq!(
        (st.ledgers_offered, st.ledgers_read_back),
        (20, 0),
        "{st:?}"
    );
    assert!(st.ingest_waited > Duration::ZERO, "{st:?}");
}

#[test]
fn an_offer_to_a_builder_indexing_history_does_not_wait() {
    let ledgers = pubnet_ledgers();
    let tmp = tempfile::tempdir().expect("tmp");
    // The builder has indexed no offered ledger: it is at the store's
    // first ledger, 10 behind the first offered one (room: 8).
    let (store, ev) = open(tmp.path(), two());
    let work = ev.shared.work();
    store.ingest(&ledgers, Duration::ZERO).expect("ingest");
    let (offer, done) = offer_in_background(&ev, ledgers[10..].to_vec());
    wait_until(|| done.load(Ordering::SeqCst));
    offer.join().expect("offer");
    assert_eq!(kept(&ev), Vec::<u32>::new());
    assert_eq!(ev.stats().ingest_waited, Duration::ZERO);
    drop(work);
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
}

#[test]
fn an_offer_gives_up_on_a_stalled_builder_once_and_waits_again_once_it_moves() {
    let ledgers = pubnet_ledgers();
    let tmp = tempfile::tempdir().expect("tmp");
    let (store, ev) = open(tmp.path(), two());
    *ev.shared.offer_stall.lock().expect("stall") = Duration::from_millis(300);
    in_step(&store, &ev, &ledgers[..2]);
    // A builder that stays where it is (held), alive and not failing.
    let work = ev.shared.work();
    store.ingest(&ledgers[2..], Duration::ZERO).expect("ingest");
    ev.offer(&ledgers[2..]);
    let first = ev.stats().ingest_waited;
    assert!(first >= Duration::from_millis(300), "{first:?}");
    // Gave up: the windows past the room were not kept.
    assert_eq!(kept(&ev), (FIRST + 2..FIRST + 10).collect::<Vec<_>>());
    // Offered again at the same builder position: no second wait.
    ev.offer(&ledgers[10..]);
    assert_eq!(ev.stats().ingest_waited, first);
    drop(work);
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    // The builder moved on: a ledger past its room (here far past it,
    // as after a stall, within the catch-up limit of 64 windows of 2)
    // is waited for again; one past that limit is not.
    let _work = ev.shared.work();
    let far = ev.shared.wait_room(LAST + 200, || true);
    assert_eq!(far, Duration::ZERO);
    let waited = ev.shared.wait_room(LAST + 100, || true);
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
}

#[test]
fn a_failing_builder_is_not_waited_for() {
    let real = pubnet_ledgers();
    let tmp = tempfile::tempdir().expect("tmp");
    let (store, ev) = open(tmp.path(), two());
    in_step(&store, &ev, &real[..4]);
    // Then ledgers that are not Stellar: the builder's rounds fail on
    // the first one, and it retries with backoff.
    let junk: Vec<LedgerInput> = (FIRST + 4..=LAST)
        .map(|seq| LedgerInput::without_txs(seq, 1_700_000_000, vec![0xAB; 64].into()))
        .collect();
    store.ingest(&junk, Duration::ZERO).expect("ingest");
    ev.notify();
    // Between two of its retries (held there: a retry builds under the
    // work lock, and a round that builds is waited for).
    wait_until(|| ev.stats().last_error.is_some());
    let work = ev.shared.work();
    wait_until(|| {
        let st = ev.stats();
        st.last_error.is_some() && !st.building
    });
    // Its last windows lie past the room (8 past the builder's files).
    ev.offer(&junk);
    let st = ev.stats();
    assert_eq!(st.ingest_waited, Duration::ZERO, "{st:?}");
    assert!(st.last_error.is_some(), "{st:?}");
    drop(work);
}

#[test]
fn a_builder_that_failed_and_builds_again_is_not_failing() {
    let mut st = crate::state::Status::default();
    assert!(!st.failing());
    st.last_error = Some("a store read failed".into());
    assert!(st.failing(), "between retries");
    st.building = true;
    assert!(
        !st.failing(),
        "a round recovering: waited for, so it catches up"
    );
}

#[test]
fn releasing_offers_at_shutdown_returns_a_waiting_offer_and_the_builder_goes_on() {
    let ledgers = pubnet_ledgers();
    let tmp = tempfile::tempdir().expect("tmp");
    let (store, ev) = open(tmp.path(), two());
    in_step(&store, &ev, &ledgers[..2]);
    let work = ev.shared.work();
    let (offer, done) = offer_to_held_builder(&store, &ev, &ledgers);
    // Shutdown begins: the offer returns well before `OFFER_STALL` (30 s).
    let t = Instant::now();
    ev.release_offers();
    wait_until(|| done.load(Ordering::SeqCst));
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    offer.join().expect("offer");
    drop(work);
    // The builder indexes what it was offered and reads the rest back.
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
}
