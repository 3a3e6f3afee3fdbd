//! Ingest's offers: the bytes of ledgers just committed are indexed
//! without reading them back, and the index equals one built by reading
//! every ledger back.

use std::sync::Arc;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_store::{Ledgerstore, Reader, StoreOptions};

use crate::EventStore;
use crate::tests::{
    FIRST, LAST, WAIT, all_query, cfg, drain, limits, open_built, pubnet_ledgers, store_with,
};

#[test]
fn offered_ledgers_are_indexed_from_ingests_bytes_alike() {
    let ledgers = pubnet_ledgers();
    let want = {
        let f = store_with(&ledgers);
        let ev = open_built(&f);
        let st = ev.stats();
        assert_eq!(
            (st.ledgers_offered, st.ledgers_read_back),
            (0, 20),
            "{st:?}"
        );
        drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0
    };

    let tmp = tempfile::tempdir().expect("tmp");
    let store = empty_store(tmp.path());
    let reader: Arc<dyn Reader> = store.clone();
    let slow = crate::EventsConfig {
        // The builder looks at the mark only when woken (an offer wakes
        // it) or every 10 s, so the offer lands first.
        poll: Duration::from_secs(10),
        ..cfg()
    };
    let ev = EventStore::open(&tmp.path().join("events"), reader, slow).expect("open events");
    // The builder has found nothing and sleeps until an offer wakes it.
    assert!(ev.wait_round(WAIT));
    for batch in ledgers.chunks(5) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
    }
    ev.offer(&ledgers);
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    assert!(ev.wait_round(WAIT));
    let st = ev.stats();
    // Each ledger is indexed once; the offer's windows are taken (the
    // builder waits for a ledger still being extracted rather than read
    // it back).
    assert_eq!(
        st.ledgers_offered + st.ledgers_read_back,
        u64::from(LAST - FIRST + 1),
        "{st:?}"
    );
    // At least the 4 windows it keeps from the first ledger (the rest
    // too when the builder takes them before the last window is handed
    // over).
    assert!(st.ledgers_offered >= 16, "{st:?}");
    assert_eq!(
        drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0,
        want
    );
    // Nothing the builder has gone past is kept: offered again, only the
    // ledgers past its files (the tail) are.
    ev.offer(&ledgers);
    assert_eq!(kept(&ev), vec![LAST - 1, LAST], "{:?}", ev.stats().levels);
}

pub(crate) fn kept(ev: &EventStore) -> Vec<u32> {
    ev.shared
        .offered
        .lock()
        .expect("offered")
        .items
        .keys()
        .copied()
        .collect()
}

#[test]
fn offers_are_kept_only_for_the_windows_the_builder_wants_next() {
    let ledgers = pubnet_ledgers();
    let tmp = tempfile::tempdir().expect("tmp");
    let store = empty_store(tmp.path());
    let reader: Arc<dyn Reader> = store.clone();
    let ev = EventStore::open(&tmp.path().join("events"), reader, cfg()).expect("open events");
    // Stopped before any ledger: offers are kept, never taken.
    ev.stop();
    store.ingest(&ledgers, Duration::ZERO).expect("ingest");
    ev.offer(&ledgers);
    let want: Vec<u32> = (FIRST..FIRST + 16).collect();
    assert_eq!(kept(&ev), want, "4 windows of 4 ledgers from the first");
    let bytes = |ev: &EventStore| {
        let o = ev.shared.offered.lock().expect("offered");
        (o.bytes, o.items.values().map(|(_, b)| b).sum::<usize>())
    };
    let (total, sum) = bytes(&ev);
    assert!(total > 0 && total == sum, "{total} {sum}");
    // Offered again: replaced, not counted twice.
    ev.offer(&ledgers[..3]);
    assert_eq!(kept(&ev), want);
    assert_eq!(bytes(&ev), (total, sum));
    // A stopped builder is not waited for.
    assert_eq!(ev.stats().ingest_waited, Duration::ZERO);
}

/// A real, empty store in `dir/data`.
pub(crate) fn empty_store(dir: &std::path::Path) -> Arc<Ledgerstore> {
    Arc::new(
        Ledgerstore::open(
            &dir.join("data"),
            StoreOptions::default(),
            &Backends::for_tests(),
        )
        .expect("open store"),
    )
}
