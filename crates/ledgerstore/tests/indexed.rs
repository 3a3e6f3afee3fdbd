//! The `indexed` layout through the real daemon: segments are built in
//! the background and swapped in, and a real crash in the middle of a
//! build (the process aborts at a failpoint, before or after the swap)
//! loses nothing: after a restart every acknowledged transaction is served
//! byte for byte, the build completes, and `ledgerstore check` passes.

mod common;
mod daemon_util;

use std::time::{Duration, Instant};

use common::*;
use daemon_util::{Daemon, to_pb};
use ledgerstore_proto::v1 as pb;

const RANGE: &str = "10";

fn flags() -> Vec<&'static str> {
    vec!["--db.layout", "indexed", "--segments.range-ledgers", RANGE]
}

fn requests(first: u32, count: usize) -> Vec<pb::IngestRequest> {
    let s = synth(11);
    (0..count)
        .map(|i| pb::IngestRequest {
            mode: pb::IngestMode::Bulk as i32,
            ledgers: s
                .batch(first + 4 * i as u32, 4)
                .into_iter()
                .map(to_pb)
                .collect(),
            ..Default::default()
        })
        .collect()
}

/// Polls GetStatus until `n` segments are in (bounded).
async fn wait_segments(d: &Daemon, n: usize) -> pb::Status {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = d.status().await;
        if st.segments.len() >= n {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "{} segments after 60 s: {st:?}",
            st.segments.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every tx of ledgers `1..=last` comes back exactly through BatchGetTransactions.
async fn assert_served(d: &Daemon, last: u32) {
    let s = synth(11);
    let ledgers = s.batch(1, last);
    let hashes: Vec<Vec<u8>> = ledgers
        .iter()
        .flat_map(|l| l.txs.iter().map(|t| t.hash.clone()))
        .collect();
    let got = d
        .query()
        .await
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: hashes.clone(),
        })
        .await
        .expect("batch get")
        .into_inner();
    let mut i = 0;
    for l in &ledgers {
        for tx in &l.txs {
            let r = &got.results[i];
            let t = r
                .record
                .as_ref()
                .unwrap_or_else(|| panic!("ledger {} tx {i} missing", l.seq));
            assert_eq!(
                (t.ledger_seq, &t.envelope, &t.result, &t.meta),
                (l.seq, &tx.envelope, &tx.result, &tx.meta)
            );
            i += 1;
        }
    }
    assert_eq!(i, hashes.len());
}

async fn crash_at(failpoint: &str) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut d =
        Daemon::start_with_env(&dir, &flags(), &[("LEDGERSTORE_FAILPOINT", failpoint)]).await;
    // 12 ledgers: the mark passes 9, which closes the range 1..=9 and
    // starts its build, which aborts the process at the failpoint.
    let (acks, _) = d.ingest_stream(None, requests(1, 3)).await;
    assert!(
        d.wait_exit(Duration::from_secs(60)),
        "the daemon did not abort at {failpoint}"
    );
    // The abort may beat the ack of the batch that closed the range.
    let acked = acks.iter().map(|a| a.durable_ledger).max().unwrap_or(0);
    let segdir = dir.join("segments");
    let leftovers: Vec<String> = std::fs::read_dir(&segdir)
        .expect("segments dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    match failpoint {
        "segment-before-publish" => assert!(
            leftovers.iter().any(|n| n.starts_with("tmp-")),
            "{leftovers:?}"
        ),
        _ => assert!(
            leftovers.iter().any(|n| n.starts_with("dropping-")),
            "{leftovers:?}"
        ),
    }

    let mut d = Daemon::start(&dir, &flags()).await;
    let st = d.status().await;
    assert!(
        st.durable_ledger >= acked,
        "mark {} below ack {acked}",
        st.durable_ledger
    );
    // The build only starts once the mark has passed 9, durably.
    assert!(st.durable_ledger >= 9, "mark {}", st.durable_ledger);
    assert_served(&d, st.durable_ledger).await;
    let st = wait_segments(&d, 1).await;
    assert_eq!(
        (st.segments[0].first_ledger, st.segments[0].last_ledger),
        (1, 9)
    );
    assert_eq!(st.segments[0].keys, 9 * u64::from(TX_PER_LEDGER));
    // Ingest continues past the next boundary; that build runs cleanly.
    let next = st.durable_ledger + 1;
    let (acks, end) = d
        .ingest_stream(None, requests(next, (24 - next as usize) / 4 + 1))
        .await;
    assert!(end.is_none(), "{end:?}");
    let last = acks.iter().map(|a| a.durable_ledger).max().unwrap_or(0);
    let st = wait_segments(&d, 2).await;
    assert_eq!(
        (st.segments[1].first_ledger, st.segments[1].last_ledger),
        (10, 19)
    );
    assert_served(&d, last).await;
    let names: Vec<String> = std::fs::read_dir(&segdir)
        .expect("segments dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| n.starts_with("seg-")), "{names:?}");
    let (clean, _) = d.terminate();
    assert!(clean);
    assert_check_passes(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_the_swap_leaves_the_hot_index_serving() {
    crash_at("segment-before-publish").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_the_swap_finishes_the_hot_drop_at_restart() {
    crash_at("segment-after-publish").await;
}
