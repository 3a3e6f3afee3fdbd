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
    let store = Arc::new(
        Ledgerstore::open(
            &tmp.path().join("data"),
            StoreOptions::default(),
            &Backends::for_tests(),
        )
        .expect("open store"),
    );
    let reader: Arc<dyn Reader> = store.clone();
    let slow = crate::EventsConfig {
        // The builder looks at the mark only when woken or every 10 s:
        // each batch's offer lands first.
        poll: Duration::from_secs(10),
        ..cfg()
    };
    let ev = EventStore::open(&tmp.path().join("events"), reader, slow).expect("open events");
    for batch in ledgers.chunks(3) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
        ev.offer(batch);
    }
    // A ledger offered again (an idempotent re-ingest) changes nothing.
    ev.offer(&ledgers[..2]);
    assert!(ev.wait_indexed_through(LAST, WAIT), "{:?}", ev.stats());
    assert!(ev.wait_round(WAIT));
    let st = ev.stats();
    assert_eq!(
        st.ledgers_offered + st.ledgers_read_back,
        u64::from(LAST - FIRST + 1),
        "{st:?}"
    );
    assert!(st.ledgers_offered >= 15, "{st:?}");
    assert_eq!(
        drain(&ev, &all_query(vec![]), || limits(1000, usize::MAX)).0,
        want
    );
    // Offers the builder will never want are dropped (nothing is kept
    // below its files).
    ev.offer(&ledgers);
    assert!(
        ev.shared
            .offered
            .lock()
            .expect("offered")
            .keys()
            .all(|&s| s > LAST - 2)
    );
}
