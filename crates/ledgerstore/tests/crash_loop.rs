//! The daemon crash loop: for every layout, in bulk and in live mode, a real
//! `ledgerstore serve` takes a gRPC ingest stream while readers query it,
//! and is SIGKILLed at a random instant, over and over. After every restart:
//! - the durable mark is at or above every ledger an ack reported;
//! - every ledger up to the mark is served with all its transactions, byte
//!   for byte (each ledger is checked once, right after it first shows up);
//! - nothing above the mark is served (ledger and its transactions);
//! - the stores open without repair beyond ledgerstore's own rollback.
//!
//! During the run, a reader must find every acked transaction, exactly.
//! At the end the data dir passes `ledgerstore check`.
//!
//! Short form (CI): `CRASH_LOOP_KILLS` = 3 per layout and mode. Long form:
//! `CRASH_LOOP_KILLS=50 cargo test --workspace --locked -- --nocapture
//! crash_loop`, which prints the counts (docs/reliability.md has a run).
//! `CRASH_LOOP_REPORT=FILE` also writes them as JSON, and
//! `CRASH_LOOP_LAYOUTS=indexed` runs one layout.

mod common;
mod daemon_util;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use daemon_util::{Daemon, to_pb};
use ledgerstore_db_api::LedgerInput;
use ledgerstore_proto::v1 as pb;
use ledgerstore_synth::Synth;
use rand::{Rng, SeedableRng};
use tonic::Code;
use tonic::transport::Channel;

const SEED: u64 = 21;
const LEDGERS_PER_REQUEST: u32 = 2;

fn kills() -> usize {
    std::env::var("CRASH_LOOP_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

#[derive(Debug, Default, serde::Serialize)]
struct Tally {
    layout: String,
    mode: String,
    kills: usize,
    /// Highest ledger any ack reported.
    acked: u32,
    /// Ledgers checked byte for byte after a restart.
    ledgers_verified: u64,
    txs_verified: u64,
    bytes_verified: u64,
    /// Reads by the concurrent readers while the daemon was up.
    reads: u64,
    /// Acked ledgers missing after a restart (must stay 0).
    lost: u64,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crash_loop_every_layout_bulk_and_live() {
    let mut all = Vec::new();
    // CRASH_LOOP_LAYOUTS=indexed,hybrid runs only those (default: all).
    let only = std::env::var("CRASH_LOOP_LAYOUTS").unwrap_or_default();
    for layout in ["hybrid", "rocksdb", "rocksdb-tuned", "indexed"]
        .into_iter()
        .filter(|l| only.is_empty() || only.split(',').any(|o| o.trim() == *l))
    {
        for mode in [pb::IngestMode::Bulk, pb::IngestMode::Live] {
            let t = crash_loop(layout, mode, kills()).await;
            println!(
                "crash loop {:<13} {:<4}: kills {:>3}, acked through {:>6}, ledgers verified {:>6}, \
                 txs {:>7}, bytes {:>10}, reads {:>6}, lost {}",
                t.layout,
                t.mode,
                t.kills,
                t.acked,
                t.ledgers_verified,
                t.txs_verified,
                t.bytes_verified,
                t.reads,
                t.lost
            );
            all.push(t);
        }
    }
    if let Ok(path) = std::env::var("CRASH_LOOP_REPORT") {
        std::fs::write(&path, serde_json::to_vec_pretty(&all).expect("json")).expect("report");
    }
}

async fn crash_loop(layout: &str, mode: pb::IngestMode, kills: usize) -> Tally {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let s = synth(SEED);
    let live = mode == pb::IngestMode::Live;
    let mut t = Tally {
        layout: layout.into(),
        mode: if live { "live" } else { "bulk" }.into(),
        ..Tally::default()
    };
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED ^ (kills as u64) ^ u64::from(live));
    let flags = [
        "--layout",
        layout,
        "--ingest.bulk-batch-ledgers",
        "6",
        "--ingest.live-max-latency-ms",
        "30",
        // indexed: small ranges merged in pairs over two levels, so kills
        // also land in segment builds and merges.
        "--segments.range-ledgers",
        "40",
        "--segments.merge-fanout",
        "2",
        "--segments.merge-levels",
        "2",
    ];
    let mut verified = 0u32; // every ledger in 1..=verified was checked
    for _ in 0..kills {
        let mut d = Daemon::start(&dir, &flags).await;
        verify_after_restart(&d, &s, &mut t, &mut verified).await;
        let acked = Arc::new(AtomicU32::new(verified));
        let killed = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicU64::new(0));
        let pusher = tokio::spawn(push(d.channel().await, s.clone(), mode, acked.clone()));
        let mut readers = Vec::new();
        for r in 0..2 {
            readers.push(tokio::spawn(read(
                d.channel().await,
                s.clone(),
                acked.clone(),
                killed.clone(),
                reads.clone(),
                r,
            )));
        }
        let delay = rng.random_range(150..1200);
        tokio::time::sleep(Duration::from_millis(delay)).await;
        killed.store(true, Ordering::SeqCst);
        d.kill();
        let _ = pusher.await;
        for r in readers {
            r.await.expect("reader task");
        }
        t.kills += 1;
        t.reads += reads.load(Ordering::SeqCst);
        t.acked = t.acked.max(acked.load(Ordering::SeqCst));
    }
    let mut d = Daemon::start(&dir, &flags).await;
    verify_after_restart(&d, &s, &mut t, &mut verified).await;
    let (clean, _) = d.terminate();
    assert!(clean, "the daemon did not stop cleanly");
    assert_check_passes(&dir);
    assert_eq!(t.lost, 0);
    t
}

/// After a restart: the mark covers every ack, each new ledger is served
/// exactly, and nothing above the mark is.
async fn verify_after_restart(d: &Daemon, s: &Synth, t: &mut Tally, verified: &mut u32) {
    let mut q = d.query().await;
    let st = d.status().await;
    let mark = if st.has_durable_ledger {
        st.durable_ledger
    } else {
        0
    };
    if mark < t.acked {
        t.lost += u64::from(t.acked - mark);
    }
    assert!(
        mark >= t.acked,
        "{} {}: acked through {} but the mark is {mark}",
        t.layout,
        t.mode,
        t.acked
    );
    // One StreamLedgers for the new range, and batch gets of 80 ledgers.
    let mut stream = q
        .stream_ledgers(pb::StreamLedgersRequest {
            start: *verified + 1,
            end: mark.max(*verified + 1),
            omit_raw: false,
        })
        .await
        .expect("stream ledgers")
        .into_inner();
    let mut seq = *verified + 1;
    let mut window: Vec<LedgerInput> = Vec::new();
    while seq <= mark {
        let l = stream
            .message()
            .await
            .expect("stream")
            .unwrap_or_else(|| panic!("ledger {seq} is missing (mark {mark})"));
        let want = s.ledger(seq);
        assert_eq!(
            (l.seq, &l.raw),
            (seq, &want.raw.to_vec()),
            "ledger {seq} raw"
        );
        t.bytes_verified += want.raw.len() as u64;
        window.push(want);
        if window.len() == 80 || seq == mark {
            check_txs(&mut q, &window, t).await;
            window.clear();
        }
        seq += 1;
    }
    *verified = mark;
    let above = s.ledger(mark + 1);
    let e = q
        .get_ledger(pb::GetLedgerRequest {
            seq: mark + 1,
            omit_raw: true,
        })
        .await
        .expect_err("a ledger above the mark");
    assert_eq!(e.code(), Code::NotFound);
    let got = batch_get(&mut q, above.txs.iter().map(|t| t.hash.clone()).collect()).await;
    assert!(
        got.iter().all(|r| !r.found),
        "a tx of ledger {} (above the mark) is served",
        mark + 1
    );
}

/// Every tx of `ledgers`, byte for byte, in one BatchGetTransactions.
async fn check_txs(
    q: &mut pb::query_client::QueryClient<Channel>,
    ledgers: &[LedgerInput],
    t: &mut Tally,
) {
    let want: Vec<_> = ledgers.iter().flat_map(|l| &l.txs).collect();
    let got = batch_get(q, want.iter().map(|w| w.hash.clone()).collect()).await;
    for (r, w) in got.iter().zip(&want) {
        let rec = r.record.as_ref().expect("an acked tx is found");
        assert!(
            rec.envelope == w.envelope && rec.result == w.result && rec.meta == w.meta,
            "ledger {}: tx {} differs",
            rec.ledger_seq,
            rec.index
        );
        t.bytes_verified += (w.envelope.len() + w.result.len() + w.meta.len()) as u64;
        t.txs_verified += 1;
    }
    t.ledgers_verified += ledgers.len() as u64;
}

async fn batch_get(
    q: &mut pb::query_client::QueryClient<Channel>,
    hashes: Vec<Vec<u8>>,
) -> Vec<pb::TransactionLookup> {
    let n = hashes.len();
    let r = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest { hashes })
        .await
        .expect("batch get")
        .into_inner();
    assert_eq!(r.results.len(), n);
    r.results
}

/// Streams ledgers from where the daemon wants them until the daemon dies;
/// raises `acked` with every ack.
async fn push(ch: Channel, s: Synth, mode: pb::IngestMode, acked: Arc<AtomicU32>) {
    let mut client = pb::ingest_client::IngestClient::new(ch);
    let Ok(st) = client.get_ingest_state(pb::GetIngestStateRequest {}).await else {
        return;
    };
    let st = st.into_inner();
    let mut next = if st.accepts_any_start {
        1
    } else {
        st.next_expected
    };
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let live = mode == pb::IngestMode::Live;
    tokio::spawn(async move {
        // Bounded: far more than a run can take before its kill.
        for _ in 0..100_000 {
            let req = pb::IngestRequest {
                mode: mode as i32,
                ledgers: s
                    .batch(next, LEDGERS_PER_REQUEST)
                    .into_iter()
                    .map(to_pb)
                    .collect(),
                ..Default::default()
            };
            if tx.send(req).await.is_err() {
                return;
            }
            next += LEDGERS_PER_REQUEST;
            if live {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    let Ok(r) = client
        .ingest_ledgers(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
    else {
        return;
    };
    let mut acks = r.into_inner();
    while let Ok(Some(a)) = acks.message().await {
        if a.has_durable_ledger {
            acked.fetch_max(a.durable_ledger, Ordering::SeqCst);
        }
    }
}

/// Reads acked transactions until the kill; every one must be found, exact.
async fn read(
    ch: Channel,
    s: Synth,
    acked: Arc<AtomicU32>,
    killed: Arc<AtomicBool>,
    reads: Arc<AtomicU64>,
    id: u64,
) {
    let mut q = pb::query_client::QueryClient::new(ch);
    let mut rng = rand::rngs::StdRng::seed_from_u64(id);
    // Bounded: a run lasts at most ~1.2 s.
    for _ in 0..1_000_000 {
        if killed.load(Ordering::SeqCst) {
            return;
        }
        let upto = acked.load(Ordering::SeqCst);
        if upto == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        let seq = rng.random_range(1..=upto);
        let l = s.ledger(seq);
        let i = rng.random_range(0..l.txs.len());
        let r = q
            .get_transaction(pb::GetTransactionRequest {
                hash: l.txs[i].hash.clone(),
            })
            .await;
        match r {
            Ok(r) => {
                let r = r.into_inner();
                assert_eq!(r.ledger_seq, seq);
                assert_eq!(r.index as usize, i);
                assert_eq!(r.meta, l.txs[i].meta, "ledger {seq} tx {i}");
                reads.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) if killed.load(Ordering::SeqCst) => {
                let _ = e;
                return;
            }
            Err(e) => panic!("an acked tx (ledger {seq}) was not served: {e}"),
        }
    }
}
