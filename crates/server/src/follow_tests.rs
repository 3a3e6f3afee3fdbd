//! The follower's sessions on a real store (RocksDB + MDBX in a temp dir),
//! fed events as `ledgerstore_stellar::follow` yields them.

use std::sync::Arc;

use futures::StreamExt;
use ledgerstore_backends::Backends;
use ledgerstore_config::Config;
use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::{Chunk, DataLake, FollowEvent};
use ledgerstore_store::{Ledgerstore, StoreOptions};
use tokio::sync::watch;

use super::{Ended, Follow, FollowMetrics, Follower, Session};
use crate::metrics::Metrics;

fn ledger(seq: u32) -> LedgerInput {
    LedgerInput {
        seq,
        close_time: 1_700_000_000 + u64::from(seq) * 5,
        raw: seq.to_be_bytes().repeat(8).into(),
        txs: Vec::new(),
        cuts: Vec::new(),
    }
}

fn chunk(first: u32, last: u32, at_tip: bool) -> FollowEvent {
    FollowEvent::Chunk {
        chunk: Chunk {
            unit: format!("ledgers {first}..={last}"),
            ledgers: (first..=last).map(ledger).collect(),
            read_bytes: 0,
            fetch: std::time::Duration::ZERO,
            decode: std::time::Duration::ZERO,
        },
        at_tip,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_follow_task_dies_the_next_session_starts_from_the_mark_with_nothing_held() {
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::create_dir_all(tmp.path().join("lake")).expect("lake dir");
    let store = Arc::new(
        Ledgerstore::open(
            &tmp.path().join("data"),
            StoreOptions::default(),
            &Backends::for_tests(),
        )
        .expect("open store"),
    );
    let metrics = Arc::new(Metrics::new().expect("metrics"));
    let (health, _) = tonic_health::server::health_reporter();
    let (_stop_tx, stop) = watch::channel(false);
    let mut f = Follower {
        follow: Follow {
            lake: Arc::new(DataLake::local(&tmp.path().join("lake")).expect("lake")),
            requests: Arc::new(|| (0, 0)),
        },
        store: Arc::clone(&store),
        cfg: Arc::new(Config::default()),
        metrics: Arc::clone(&metrics),
        health,
        ingest_service: "ledgerstore.v1.Ingest",
        stop,
        events: None,
    };
    let mut s = Session::new(FollowMetrics::new(&metrics).expect("follow metrics"));

    // A file's ledgers arrive (fewer than a batch, not at the tip), then
    // the follow task dies: its stream ends.
    let events = futures::stream::iter([chunk(1, 3, false)]).boxed();
    assert_eq!(f.consume(&mut s, events).await, Ended::Refused);

    // The next session follows from the mark, as `session` asks it to.
    let from = store.last_ledger().map_or(1, |m| m + 1);
    let events = futures::stream::iter([chunk(from, 6, true)]).boxed();
    assert_eq!(f.consume(&mut s, events).await, Ended::Refused);
    assert_eq!(
        store.last_ledger(),
        Some(6),
        "the next session's first batch is committed"
    );
    for seq in 1..=6 {
        assert!(
            store.get_ledger(seq).expect("read").is_some(),
            "ledger {seq}"
        );
    }
}
