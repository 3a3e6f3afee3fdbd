//! The follower's sessions on a real store (RocksDB + MDBX in a temp dir),
//! fed events as `ledgerstore_stellar::follow` yields them.

use std::sync::Arc;

use futures::StreamExt;
use ledgerstore_backends::Backends;
use ledgerstore_config::Config;
use ledgerstore_db_api::LedgerInput;
use ledgerstore_stellar::{Chunk, DataLake, FollowEvent, Forwarded, Lead};
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
    chunk_of((first..=last).map(ledger).collect(), at_tip)
}

fn chunk_of(ledgers: Vec<LedgerInput>, at_tip: bool) -> FollowEvent {
    FollowEvent::Chunk {
        chunk: Chunk {
            unit: format!("{} ledgers", ledgers.len()),
            ledgers,
            read_bytes: 0,
            fetch: std::time::Duration::ZERO,
            decode: std::time::Duration::ZERO,
        },
        at_tip,
    }
}

/// `events` as a session sees them: through the lead, then the end of
/// the stream (the follow task died).
fn led(events: Vec<FollowEvent>) -> Forwarded {
    through_lead(futures::stream::iter(events).boxed())
}

fn through_lead(events: futures::stream::BoxStream<'static, FollowEvent>) -> Forwarded {
    ledgerstore_stellar::forward(events, Lead::new(1), None, false)
}

/// A follower of an empty local lake on a new store, and the sender of its
/// stop (held, or `consume` sees a stop).
fn follower(
    tmp: &std::path::Path,
    cfg: Config,
) -> (Follower, Arc<Ledgerstore>, Session, watch::Sender<bool>) {
    std::fs::create_dir_all(tmp.join("lake")).expect("lake dir");
    let store = Arc::new(
        Ledgerstore::open(
            &tmp.join("data"),
            StoreOptions::default(),
            &Backends::for_tests(),
        )
        .expect("open store"),
    );
    let metrics = Arc::new(Metrics::new().expect("metrics"));
    let (health, _) = tonic_health::server::health_reporter();
    let (stop_tx, stop) = watch::channel(false);
    let f = Follower {
        follow: Follow {
            lake: Arc::new(DataLake::local(&tmp.join("lake")).expect("lake")),
            requests: Arc::new(|| (0, 0)),
        },
        store: Arc::clone(&store),
        cfg: Arc::new(cfg),
        metrics: Arc::clone(&metrics),
        health,
        ingest_service: "ledgerstore.v1.Ingest",
        stop,
        events: None,
    };
    let s = Session::new(
        FollowMetrics::new(&metrics).expect("follow metrics"),
        &f.cfg,
    );
    (f, store, s, stop_tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_the_follow_task_dies_the_next_session_starts_from_the_mark_with_nothing_held() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (mut f, store, mut s, _stop) = follower(tmp.path(), Config::default());

    // A file's ledgers arrive (fewer than a batch, not at the tip), then
    // the follow task dies: its stream ends.
    let events = led(vec![chunk(1, 3, false)]);
    assert_eq!(f.consume(&mut s, events).await, Ended::Refused);

    // The next session follows from the mark, as `session` asks it to.
    let from = store.last_ledger().map_or(1, |m| m + 1);
    let events = led(vec![chunk(from, 6, true)]);
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

/// `ingest.bulk_batch_mib = 1`: three [`big`] ledgers end a batch.
fn one_mib_batches() -> Config {
    let mut cfg = Config::default();
    cfg.ingest.bulk_batch_mib = 1;
    cfg
}

/// A ledger of 400 KiB.
fn big(seq: u32) -> LedgerInput {
    LedgerInput {
        raw: vec![seq as u8; 400 << 10].into(),
        ..ledger(seq)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_ends_at_the_ledger_whose_bytes_reach_ingest_bulk_batch_mib() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (mut f, store, mut s, _stop) = follower(tmp.path(), one_mib_batches());
    // Seven ledgers of 400 KiB in one file, not at the tip: the third
    // brings a batch to 1.2 MiB, so ledgers 1..=3 and 4..=6 commit as the
    // file arrives, and 7 waits for more (2,000 ledgers alone would have
    // held all seven).
    let events = led(vec![chunk_of((1..=7).map(big).collect(), false)]);
    // The stream then ends (the follow task died): what is held commits.
    assert_eq!(f.consume(&mut s, events).await, Ended::Refused);
    let mark = store.mark();
    assert_eq!((mark.last, mark.batches), (Some(7), 3), "{mark:?}");
    assert_eq!(
        store.last_report().map(|r| (r.first_ledger, r.last_ledger)),
        Some((7, 7))
    );
}

/// A session over `events`, then a source that never ends (a follower
/// waiting at the lake's tip).
fn led_then_waiting(events: Vec<FollowEvent>) -> Forwarded {
    through_lead(
        futures::stream::iter(events)
            .chain(futures::stream::pending())
            .boxed(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_commits_the_ledgers_in_hand_and_wins_over_a_ready_event() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (mut f, store, mut s, stop) = follower(tmp.path(), one_mib_batches());
    // Seven ledgers, not at the tip: 1..=3 and 4..=6 commit as they
    // arrive, 7 is held while the source waits. The stop then commits it.
    let events = led_then_waiting(vec![chunk_of((1..=7).map(big).collect(), false)]);
    let watcher = {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            while store.last_ledger() != Some(6) {
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            stop.send_replace(true);
            stop
        })
    };
    assert_eq!(f.consume(&mut s, events).await, Ended::Stopped);
    let mark = store.mark();
    assert_eq!((mark.last, mark.batches), (Some(7), 3), "{mark:?}");

    // Stopped already: a session whose first event is ready commits
    // nothing (it is read again at the next start).
    let _stop = watcher.await.expect("watcher");
    let events = led(vec![chunk_of((8..=9).map(big).collect(), true)]);
    assert_eq!(f.consume(&mut s, events).await, Ended::Stopped);
    assert_eq!(store.last_ledger(), Some(7));
}
