//! Query answers against the real daemon on loopback, over raw HTTP/2
//! (the h2 crate, so that the test controls the flow-control windows
//! tonic would manage): answers nobody reads are held within
//! `grpc.max_unsent_bytes` and their connection is closed at
//! `grpc.send_timeout_ms`; a slow but steady reader keeps its connection.

mod common;
mod daemon_util;

use std::time::Duration;

use daemon_util::{Daemon, bulk as req};
use ledgerstore_proto::v1 as pb;

async fn ingest(d: &Daemon, reqs: Vec<pb::IngestRequest>) -> Option<tonic::Status> {
    d.ingest_stream(None, reqs).await.1
}

fn metric(d: &Daemon, series: &str) -> f64 {
    d.metric(series)
}

/// A daemon started with `flags`, holding ledgers 1..=`n` of ~200 KB.
async fn with_ledgers(
    flags: &[&str],
    n: u32,
) -> (tempfile::TempDir, Daemon, ledgerstore_synth::Synth) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(&tmp.path().join("data"), flags).await;
    let s = ledgerstore_synth::Synth::new(ledgerstore_synth::SynthConfig::with_sizes(
        5, 4, 600, 200_000,
    ));
    let reqs = (1..=n).map(|seq| req(s.batch(seq, 1))).collect();
    assert!(ingest(&d, reqs).await.is_none());
    (tmp, d, s)
}

/// A TCP connection to the daemon's gRPC port, for a raw HTTP/2 client.
async fn raw_tcp(d: &Daemon) -> tokio::net::TcpStream {
    tokio::net::TcpStream::connect(d.grpc.trim_start_matches("http://"))
        .await
        .expect("connect")
}

/// One GetLedger request on a raw HTTP/2 connection: its answer's headers
/// (a refusal is all headers; an answer's data waits for a window).
async fn get_ledger_headers(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    seq: u32,
) -> h2::client::ResponseFuture {
    raw_call(send, "GetLedger", &[0x08, seq as u8]).await
}

/// One Query call on a raw HTTP/2 connection, its request message `msg`
/// (protobuf, under 128 bytes).
async fn raw_call(
    send: &mut h2::client::SendRequest<bytes::Bytes>,
    method: &str,
    msg: &[u8],
) -> h2::client::ResponseFuture {
    use tonic::codegen::http;
    let req = http::Request::builder()
        .method("POST")
        .uri(format!("http://127.0.0.1/ledgerstore.v1.Query/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request");
    *send = send.clone().ready().await.expect("ready");
    let (answer, mut body) = send.send_request(req, false).expect("send");
    let mut framed = vec![0, 0, 0, 0, msg.len() as u8];
    framed.extend_from_slice(msg);
    body.send_data(framed.into(), true).expect("request body");
    answer
}

/// `grpc.max_unsent_bytes` and `grpc.send_timeout_ms` (2 MiB, 8 s): a raw
/// HTTP/2 client with a stream window of 0 asks for 16 ledgers of ~200 KB
/// and reads none. A few answers fit and wait unsent; the rest are refused
/// with RESOURCE_EXHAUSTED naming the setting, so the daemon holds at most
/// the budget. GetStatus is still answered. The connection, owing answers
/// and writing none, is closed at the send deadline, and all of its room
/// is given back: a client is served a ledger afterwards (while the room
/// was full, calls were refused before their read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_nobody_reads_are_bounded_and_their_connection_closed() {
    let (_tmp, d, s) = with_ledgers(
        &[
            "--grpc.max-message-bytes",
            "1048576",
            "--grpc.max-unsent-bytes",
            "2097152",
            // Time for the 16 answers' headers, on a loaded machine too.
            "--grpc.send-timeout-ms",
            "8000",
        ],
        16,
    )
    .await;
    let timed_out0 = d.refused("send_timeout");

    let tcp = raw_tcp(&d).await;
    let (mut send, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, bytes::Bytes>(tcp)
        .await
        .expect("HTTP/2 handshake");
    let driver = tokio::spawn(conn);
    let mut answers = Vec::new();
    for seq in 1..=16u32 {
        answers.push(get_ledger_headers(&mut send, seq).await);
    }
    let (mut waiting, mut refused) = (0, 0);
    // Kept: a dropped answer is reset (CANCEL), which frees its room.
    let mut kept = Vec::new();
    for a in answers {
        let head = tokio::time::timeout(Duration::from_secs(20), a)
            .await
            .expect("an answer's headers within 20 s")
            .expect("answer");
        match head.headers().get("grpc-status").map(|v| v.as_bytes()) {
            None => waiting += 1,
            Some(b"8") => {
                let msg = head.headers()["grpc-message"].to_str().expect("ascii");
                assert!(msg.contains("grpc.max_unsent_bytes%20=%202097152"), "{msg}");
                refused += 1;
            }
            other => panic!("an answer with grpc-status {other:?}"),
        }
        kept.push(head);
    }
    println!("unread answers: {waiting} waiting, {refused} refused");
    // ~200 KB an answer in 2 MiB, refused once less than 1 MiB is free.
    assert!((1..=10).contains(&waiting), "{waiting} answers wait unsent");
    assert_eq!(waiting + refused, 16);
    assert_eq!(
        d.refused("send_timeout") - timed_out0,
        0.0,
        "the send deadline passed before the answers were counted (a slow machine?)"
    );
    let unsent = metric(&d, "ledgerstore_grpc_unsent_bytes");
    assert!(
        unsent > 0.0 && unsent <= 2_097_152.0,
        "{unsent} bytes held for unread answers"
    );
    d.query()
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("GetStatus is answered while the budget is full");

    let closed = tokio::time::timeout(Duration::from_secs(20), driver).await;
    assert!(
        closed.is_ok(),
        "a connection owing answers was kept past its send deadline"
    );
    drop(kept);
    assert_eq!(d.refused("send_timeout") - timed_out0, 1.0);
    // The closed connection's answers go as its tasks wind down.
    let mut unsent = f64::NAN;
    for _ in 0..100 {
        unsent = metric(&d, "ledgerstore_grpc_unsent_bytes");
        if unsent == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(unsent, 0.0, "bytes still held after the connection closed");
    let got = d
        .query()
        .await
        .get_ledger(pb::GetLedgerRequest {
            seq: 7,
            omit_raw: false,
        })
        .await
        .expect("served once the room is given back")
        .into_inner();
    assert_eq!(got.raw.len(), s.ledger(7).raw.len());
}

/// A client that reads slowly but steadily keeps its connection past the
/// send deadline: `grpc.send_timeout_ms` = 1.5 s, and a raw HTTP/2 client
/// with a 16 KiB window reads a ~200 KB GetLedger answer a chunk every
/// 250 ms (~5 s in all: h2 returns the window in uneven steps) and gets it
/// whole; then, on the same connection, a StreamLedgers it stops reading
/// is closed at the deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_keeps_its_connection_and_a_stopped_one_loses_it() {
    let (_tmp, d, s) = with_ledgers(&["--grpc.send-timeout-ms", "1500"], 8).await;
    let timed_out0 = d.refused("send_timeout");

    let tcp = raw_tcp(&d).await;
    let window = 16 << 10;
    let (mut send, conn) = h2::client::Builder::new()
        .initial_window_size(window)
        .initial_connection_window_size(window)
        .handshake::<_, bytes::Bytes>(tcp)
        .await
        .expect("HTTP/2 handshake");
    let driver = tokio::spawn(conn);
    let head = get_ledger_headers(&mut send, 3)
        .await
        .await
        .expect("an answer");
    assert!(head.headers().get("grpc-status").is_none(), "{head:?}");
    let started = std::time::Instant::now();
    let mut body = head.into_body();
    let mut got = 0usize;
    // Bounded: ~13 windows of 16 KiB.
    for _ in 0..100 {
        let Some(chunk) = body.data().await else {
            break;
        };
        let chunk = chunk.expect("data of a slow reader's answer");
        got += chunk.len();
        tokio::time::sleep(Duration::from_millis(250)).await;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = tokio::time::timeout(Duration::from_secs(20), body.trailers())
        .await
        .expect("trailers within 20 s")
        .expect("trailers");
    let status = trailers.as_ref().and_then(|t| t.get("grpc-status"));
    assert_eq!(
        status.map(|v| v.as_bytes()),
        Some(&b"0"[..]),
        "{trailers:?}"
    );
    let raw = s.ledger(3).raw.len();
    assert!(got > raw, "{got} bytes of an answer holding {raw}");
    assert!(
        started.elapsed() > Duration::from_millis(1500),
        "the slow read outlasted the send deadline"
    );
    assert_eq!(d.refused("send_timeout") - timed_out0, 0.0);

    // The same connection stops reading a stream: closed at the deadline.
    // start 1, end 8.
    let answer = raw_call(&mut send, "StreamLedgers", &[0x08, 1, 0x10, 8]).await;
    let _stalled = answer.await.expect("the stream's headers");
    let closed = tokio::time::timeout(Duration::from_secs(20), driver).await;
    assert!(closed.is_ok(), "a connection that stopped reading was kept");
    assert_eq!(d.refused("send_timeout") - timed_out0, 1.0);
}
