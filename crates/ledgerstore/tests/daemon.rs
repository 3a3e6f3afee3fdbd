//! The daemon end to end: the real `ledgerstore serve` on loopback ports,
//! a real gRPC client, and the `ledgerstore push` client.

mod common;
mod daemon_util;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use daemon_util::{Daemon, to_pb};
use ledgerstore_proto::v1 as pb;
use tokio_stream::StreamExt;
use tonic::Code;

fn push_cmd(d: &Daemon, ledgers: u32, extra: &[&str]) -> std::process::Command {
    let mut c = bin();
    c.args(["push", "--synthetic", "--endpoint", &d.grpc])
        .args(["--ledgers", &ledgers.to_string()])
        .args(["--tx-per-ledger", &TX_PER_LEDGER.to_string()])
        .args(["--tx-bytes", &TX_BYTES.to_string()])
        .args(["--ledger-bytes", &LEDGER_BYTES.to_string()])
        .args(["--seed", "3"])
        .args(extra);
    c
}

/// Sends `reqs` on one IngestLedgers stream; returns the acks and the
/// status the stream ended with.
async fn stream(
    d: &Daemon,
    token: Option<&str>,
    reqs: Vec<pb::IngestRequest>,
) -> (Vec<pb::IngestAck>, Option<tonic::Status>) {
    d.ingest_stream(token, reqs).await
}

fn request(ledgers: Vec<ledgerstore_db_api::LedgerInput>) -> pb::IngestRequest {
    pb::IngestRequest {
        mode: pb::IngestMode::Bulk as i32,
        ledgers: ledgers.into_iter().map(to_pb).collect(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_then_query_every_rpc_and_scrape_metrics() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // hybrid: the metrics below name its MDBX stores.
    let d = Daemon::start(
        &tmp.path().join("data"),
        &["--layout", "hybrid", "--ingest.bulk-batch-ledgers", "5"],
    )
    .await;
    let o = push_cmd(&d, 12, &[]).output().expect("push");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("acked through ledger 12"),
        "{}",
        stdout(&o)
    );

    let s = synth(3);
    let mut q = d.query().await;
    let tx = &s.ledger(7).txs[2];
    let r = q
        .get_transaction(pb::GetTransactionRequest {
            hash: tx.hash.clone(),
        })
        .await
        .expect("get tx")
        .into_inner();
    assert_eq!((r.ledger_seq, r.index), (7, 2));
    assert_eq!(
        (&r.envelope[..], &r.result[..], &r.meta[..]),
        (&tx.envelope[..], &tx.result[..], &tx.meta[..])
    );
    assert_eq!(r.close_time, s.ledger(7).close_time);

    let unknown = vec![9u8; 32];
    let b = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: vec![unknown.clone(), tx.hash.clone()],
        })
        .await
        .expect("batch")
        .into_inner();
    assert_eq!(b.results.len(), 2);
    assert!(!b.results[0].found && b.results[0].record.is_none());
    assert!(b.results[1].found);
    assert_eq!(b.results[1].hash, tx.hash);

    let l = q
        .get_transaction_ledger(pb::GetTransactionLedgerRequest {
            hash: tx.hash.clone(),
        })
        .await
        .expect("tx ledger")
        .into_inner();
    assert_eq!(l.ledger_seq, 7);

    let ledger = q
        .get_ledger(pb::GetLedgerRequest {
            seq: 11,
            omit_raw: false,
        })
        .await
        .expect("ledger")
        .into_inner();
    assert_eq!(ledger.raw, s.ledger(11).raw);
    assert_eq!(ledger.tx_hashes.len(), TX_PER_LEDGER as usize);

    let mut st = q
        .stream_ledgers(pb::StreamLedgersRequest {
            start: 2,
            end: 100,
            omit_raw: true,
        })
        .await
        .expect("stream")
        .into_inner();
    let mut seqs = Vec::new();
    while let Some(l) = st.next().await {
        let l = l.expect("ledger");
        assert!(l.raw.is_empty());
        seqs.push(l.seq);
    }
    assert_eq!(seqs, (2..=12).collect::<Vec<_>>());

    let status = q
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert_eq!(status.layout, "hybrid");
    assert_eq!((status.durable_ledger, status.ledgers), (12, 12));
    assert_eq!(status.transactions, 12 * u64::from(TX_PER_LEDGER));
    assert_eq!(status.stores.len(), 3);
    let last = status.last_batch.expect("last batch report");
    assert_eq!(last.stores.len(), 3);

    // Re-sent ledgers are acked and not written again.
    let (acks, end) = stream(&d, None, vec![request(s.batch(3, 4))]).await;
    assert!(end.is_none(), "{end:?}");
    let ack = acks.last().expect("ack");
    assert_eq!(
        (
            ack.durable_ledger,
            ack.skipped_ledgers,
            ack.committed_ledgers
        ),
        (12, 4, 0)
    );

    // The CLI query commands.
    let mut c = bin();
    c.args([
        "tx",
        &hex::encode(&tx.hash),
        "--endpoint",
        &d.grpc,
        "--json",
    ]);
    let o = c.output().expect("tx");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"ledger_seq\": 7"), "{}", stdout(&o));
    let mut c = bin();
    c.args(["ledger", "99", "--endpoint", &d.grpc]);
    let o = c.output().expect("ledger");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("ledger 99 not found"), "{}", stderr(&o));

    let m = d.metrics_text();
    for needle in [
        "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"GetTransaction\",grpc_service=\"ledgerstore.v1.Query\",grpc_type=\"unary\"} 2",
        "grpc_server_handled_total{grpc_code=\"NotFound\",grpc_method=\"GetLedger\"",
        "grpc_server_handling_seconds_bucket{grpc_method=\"IngestLedgers\"",
        "grpc_server_started_total{grpc_method=\"StreamLedgers\"",
        "grpc_server_msg_received_total{grpc_method=\"IngestLedgers\"",
        "grpc_server_msg_sent_total{grpc_method=\"StreamLedgers\"",
        "ledgerstore_ingested_ledgers_total 12",
        "ledgerstore_high_water_mark 12",
        "ledgerstore_ingest_phase_seconds_count{engine=\"mdbx\",phase=\"commit\",table=\"tx_data\"}",
        "ledgerstore_ingest_stage_seconds_count{stage=\"compress\"}",
        "ledgerstore_high_water_mark_close_time_seconds",
        "ledgerstore_store_keys{engine=\"mdbx\",table=\"tx_index\"}",
        "ledgerstore_store_disk_bytes{engine=\"rocksdb\",table=\"ledgers\"}",
        "ledgerstore_store_written_bytes{engine=\"mdbx\",table=\"tx_data\"}",
        "ledgerstore_store_written_bytes{engine=\"rocksdb\",table=\"ledgers\"}",
        "ledgerstore_rocksdb_l0_files{table=\"ledgers\"}",
        "ledgerstore_rocksdb_sst_files{table=\"ledgers\"}",
        "ledgerstore_rocksdb_pending_compaction_bytes{table=\"ledgers\"}",
        "ledgerstore_mdbx_pages{table=\"tx_data\"}",
        "ledgerstore_mdbx_free_pages{table=\"tx_data\"}",
        "ledgerstore_mdbx_reader_lag{table=\"tx_index\"}",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
    ] {
        assert!(m.contains(needle), "metrics lack {needle}:\n{m}");
    }
    // Every single-key read (GetTransaction twice, GetTransactionLedger
    // once) is counted once, inline or on the pool.
    let reads: u64 = ["inline", "pool"]
        .iter()
        .map(|p| {
            let key = format!("ledgerstore_query_reads_total{{placement=\"{p}\"}} ");
            m.lines()
                .find_map(|l| l.strip_prefix(key.as_str()))
                .map_or(0, |v| v.trim().parse().expect("a count"))
        })
        .sum();
    assert_eq!(reads, 3, "{m}");
    assert!(m.contains("ledgerstore_query_slow_read_ratio "), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_error_code_with_a_real_client() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &[
            "--ingest.token",
            "s3cret",
            "--query.max-batch-hashes",
            "4",
            "--limits.max-ledger-bytes",
            "100000",
            "--grpc.max-message-bytes",
            "1000000",
            "--ingest.max-ledgers-per-request",
            "50",
        ],
    )
    .await;
    let s = synth(3);
    let mut q = d.query().await;
    let code = |r: Result<tonic::Response<_>, tonic::Status>| {
        r.map(|_: tonic::Response<pb::TransactionRecord>| ())
            .expect_err("error")
    };

    let e = code(
        q.get_transaction(pb::GetTransactionRequest { hash: vec![1; 31] })
            .await,
    );
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("hash: must be 32 bytes, got 31"),
        "{}",
        e.message()
    );
    let e = code(
        q.get_transaction(pb::GetTransactionRequest { hash: vec![1; 32] })
            .await,
    );
    assert_eq!(e.code(), Code::NotFound);
    assert!(
        e.message().contains("not found (the store is empty)"),
        "{}",
        e.message()
    );
    let e = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: vec![vec![0; 32]; 5],
        })
        .await
        .expect_err("too many");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message()
            .contains("at most 4 per request (query.max_batch_hashes), got 5")
    );
    let e = q
        .get_ledger(pb::GetLedgerRequest {
            seq: 999,
            omit_raw: true,
        })
        .await
        .expect_err("no ledger");
    assert_eq!(e.code(), Code::NotFound);
    let e = q
        .stream_ledgers(pb::StreamLedgersRequest {
            start: 5,
            end: 4,
            omit_raw: true,
        })
        .await
        .expect_err("bad range");
    assert_eq!(e.code(), Code::InvalidArgument);

    // Ingest needs the token; Query never does.
    let (_, end) = stream(&d, None, vec![request(s.batch(1, 1))]).await;
    let e = end.expect("refused");
    assert_eq!(e.code(), Code::Unauthenticated);
    assert!(
        e.message().contains("missing ingest token"),
        "{}",
        e.message()
    );
    let (_, end) = stream(&d, Some("nope"), vec![request(s.batch(1, 1))]).await;
    assert_eq!(end.expect("refused").code(), Code::Unauthenticated);
    let t = Some("s3cret");

    let (acks, end) = stream(&d, t, vec![request(s.batch(1, 2))]).await;
    assert!(end.is_none(), "{end:?}");
    assert_eq!(acks.last().map(|a| a.durable_ledger), Some(2));

    let mut empty = s.ledger(3);
    empty.raw.clear();
    let (_, end) = stream(&d, t, vec![request(vec![empty])]).await;
    let e = end.expect("empty ledger");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("ledgers[0].raw: must not be empty"),
        "{}",
        e.message()
    );

    let (_, end) = stream(
        &d,
        t,
        vec![pb::IngestRequest {
            mode: 0,
            ..Default::default()
        }],
    )
    .await;
    assert_eq!(end.expect("no ledgers").code(), Code::InvalidArgument);

    let (_, end) = stream(&d, t, vec![request(s.batch(5, 1))]).await;
    let e = end.expect("gap");
    assert_eq!(e.code(), Code::FailedPrecondition);
    assert!(
        e.message().contains("expected ledger seq 3, got 5"),
        "{}",
        e.message()
    );

    let mut big = s.ledger(3);
    big.raw = vec![7; 200_000].into();
    let (_, end) = stream(&d, t, vec![request(vec![big])]).await;
    let e = end.expect("over limits.max_ledger_bytes");
    assert_eq!(e.code(), Code::ResourceExhausted);
    assert!(e.message().contains("limit 100000"), "{}", e.message());

    let mut huge = s.ledger(3);
    huge.txs[0].meta = vec![7; 1_200_000].into();
    let (_, end) = stream(&d, t, vec![request(vec![huge])]).await;
    let e = end.expect("over grpc.max_message_bytes");
    assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
    assert!(
        e.message().contains("grpc.max_message_bytes"),
        "{}",
        e.message()
    );

    let (_, end) = stream(&d, t, vec![request(s.batch(3, 51))]).await;
    let e = end.expect("too many ledgers in one request");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("ingest.max_ledgers_per_request"),
        "{}",
        e.message()
    );

    let mut dup = s.batch(3, 2);
    dup[1].txs[0].hash = dup[0].txs[0].hash.clone();
    let (_, end) = stream(&d, t, vec![request(dup)]).await;
    assert_eq!(end.expect("duplicate").code(), Code::InvalidArgument);

    // Nothing of the refused batches is visible; the store goes on.
    let status = q
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert_eq!(status.durable_ledger, 2);
    let (acks, end) = stream(&d, t, vec![request(s.batch(3, 2))]).await;
    assert!(end.is_none(), "{end:?}");
    assert_eq!(acks.last().map(|a| a.durable_ledger), Some(4));
    let m = d.metrics_text();
    assert!(m.contains("grpc_code=\"Unauthenticated\""), "{m}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_batches_end_at_their_byte_cap() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(&tmp.path().join("data"), &["--ingest.bulk-batch-mib", "1"]).await;
    // Each synthetic ledger holds ~800 KB: its raw bytes (~400 KB: the
    // parts, then filler) and its transactions' parts apart (10 × 40,000
    // bytes). 1 MiB ends every batch at its second ledger, where
    // ingest.bulk_batch_ledgers (2,000) alone would make one batch.
    let mut c = bin();
    c.args(["push", "--synthetic", "--endpoint", &d.grpc])
        .args(["--ledgers", "12", "--tx-per-ledger", "10"])
        .args(["--tx-bytes", "40000", "--ledger-bytes", "1000"])
        .args(["--request-ledgers", "1", "--seed", "5"]);
    let o = c.output().expect("push");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("acked through ledger 12"),
        "{}",
        stdout(&o)
    );
    let m = d.metrics_text();
    let batches = m
        .lines()
        .find_map(|l| l.strip_prefix("ledgerstore_ingest_batches_total "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert_eq!(batches, Some(6.0), "{m}");
    let status = d.status().await;
    assert_eq!((status.durable_ledger, status.ledgers), (12, 12));
    assert_eq!(status.last_batch.map(|b| b.ledgers), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_stream_then_resume_loses_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let total = 400u32;
    let mut d = Daemon::start(&dir, &["--ingest.bulk-batch-ledgers", "6"]).await;
    let mut pusher = push_cmd(&d, total, &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("push");
    let out = pusher.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("acked through ledger ") {
                let n: u32 = rest
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let _ = tx.send(n);
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("a first ack");
    std::thread::sleep(Duration::from_millis(100));
    d.kill();
    let _ = pusher.wait();
    let acked = rx.try_iter().fold(first, u32::max);
    assert!(acked < total, "the kill came too late to test anything");

    let d = Daemon::start(&dir, &["--ingest.bulk-batch-ledgers", "6"]).await;
    let mut q = d.query().await;
    let status = q
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert!(
        status.durable_ledger >= acked,
        "acked {acked}, durable {}",
        status.durable_ledger
    );
    let remaining = total - status.durable_ledger;
    let o = push_cmd(&d, remaining, &[]).output().expect("resume push");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains(&format!(
            "pushing ledgers {}..={total}",
            status.durable_ledger + 1
        )),
        "{}",
        stdout(&o)
    );
    let status = q
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert_eq!(status.durable_ledger, total);
    assert_eq!(status.ledgers, u64::from(total));
    assert_eq!(
        status.transactions,
        u64::from(total * TX_PER_LEDGER),
        "no duplicates"
    );
    let tx_index = status
        .stores
        .iter()
        .find(|s| s.table == "tx_index")
        .expect("tx_index");
    assert_eq!(tx_index.keys, u64::from(total * TX_PER_LEDGER));
    let s = synth(3);
    for seq in [1, acked.max(1), total] {
        let hashes = s.ledger(seq).txs.into_iter().map(|t| t.hash).collect();
        let b = q
            .batch_get_transactions(pb::BatchGetTransactionsRequest { hashes })
            .await
            .expect("batch")
            .into_inner();
        assert!(b.results.iter().all(|r| r.found), "ledger {seq}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_run_concurrently_with_ingest_without_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &["--ingest.bulk-batch-ledgers", "4"],
    )
    .await;
    let mut pusher = push_cmd(&d, 80, &[])
        .stdout(Stdio::null())
        .spawn()
        .expect("push");
    let s = synth(3);
    let mut q = d.query().await;
    let mut ingest = pb::ingest_client::IngestClient::new(d.channel().await);
    let (mut queries, mut found) = (0u32, 0u32);
    for _ in 0..400 {
        let st = ingest
            .get_ingest_state(pb::GetIngestStateRequest {})
            .await
            .expect("state")
            .into_inner();
        if st.has_durable_ledger {
            let seq = st.durable_ledger;
            let tx = &s.ledger(seq).txs[(queries % TX_PER_LEDGER) as usize];
            let r = q
                .get_transaction(pb::GetTransactionRequest {
                    hash: tx.hash.clone(),
                })
                .await
                .expect("a committed tx is always found");
            assert_eq!(r.into_inner().ledger_seq, seq);
            q.get_status(pb::GetStatusRequest {}).await.expect("status");
            found += 1;
        }
        queries += 1;
        if let Ok(Some(_)) = pusher.try_wait() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let status = pusher.wait().expect("push");
    assert!(status.success());
    assert!(found > 0, "no query overlapped the ingest");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_commits_the_batch_in_hand_and_exits_cleanly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    // A batch size larger than what we send: nothing commits until shutdown.
    let mut d = Daemon::start(&dir, &["--ingest.bulk-batch-ledgers", "1000"]).await;
    let s = synth(3);
    let mut client = pb::ingest_client::IngestClient::new(d.channel().await);
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tx.send(request(s.batch(1, 7))).await.expect("send");
    let mut acks = client
        .ingest_ledgers(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .expect("stream")
        .into_inner();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let term = tokio::task::spawn_blocking(move || {
        let r = d.terminate();
        (d, r)
    });
    let ack = acks
        .message()
        .await
        .expect("final ack")
        .expect("an ack before the end");
    assert_eq!(ack.durable_ledger, 7);
    let end = acks.message().await.expect_err("then UNAVAILABLE");
    assert_eq!(end.code(), Code::Unavailable);
    assert!(
        end.message().contains("resume from GetIngestState"),
        "{}",
        end.message()
    );
    drop(tx);
    let (_d, (clean, out)) = term.await.expect("join");
    assert!(clean, "daemon exit was not clean:\n{out}");
    assert!(out.contains("ledgerstore stopped cleanly"), "{out}");
    let d = Daemon::start(&dir, &[]).await;
    let st = pb::ingest_client::IngestClient::new(d.channel().await)
        .get_ingest_state(pb::GetIngestStateRequest {})
        .await
        .expect("state")
        .into_inner();
    assert_eq!(st.next_expected, 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_mode_commits_each_ledger_promptly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // Bulk batches of 1000 would hold these ledgers until the stream ends;
    // live mode must commit each one as it arrives.
    let d = Daemon::start(
        &tmp.path().join("data"),
        &[
            "--ingest.bulk-batch-ledgers",
            "1000",
            "--ingest.live-max-latency-ms",
            "1000",
        ],
    )
    .await;
    let o = push_cmd(
        &d,
        4,
        &[
            "--mode",
            "live",
            "--request-ledgers",
            "1",
            "--interval-ms",
            "300",
        ],
    )
    .output()
    .expect("push");
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    for seq in 1..=4 {
        assert!(
            text.contains(&format!("acked through ledger {seq} ")),
            "{text}"
        );
    }
    let o = push_cmd(&d, 3, &["--mode", "bulk", "--request-ledgers", "1"])
        .output()
        .expect("push");
    let text = stdout(&o);
    assert!(text.contains("acked through ledger 7 "), "{text}");
    assert!(
        !text.contains("acked through ledger 5 "),
        "bulk mode batches: {text}"
    );
}
