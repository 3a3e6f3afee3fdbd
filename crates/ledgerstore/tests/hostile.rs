//! Malformed and hostile requests over the wire, table-driven, against the
//! real daemon on loopback: each gets the right status, the daemon keeps
//! serving, nothing of a refused request becomes visible, and its memory
//! stays bounded. (Token checks, oversize ledgers and messages, limits and
//! gaps are in daemon.rs; this covers the rest of the list.)

mod common;
mod daemon_util;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use daemon_util::{Daemon, to_pb};
use ledgerstore_proto::v1 as pb;
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

async fn ingest(d: &Daemon, reqs: Vec<pb::IngestRequest>) -> Option<tonic::Status> {
    d.ingest_stream(None, reqs).await.1
}

fn req(ledgers: Vec<ledgerstore_db_api::LedgerInput>) -> pb::IngestRequest {
    pb::IngestRequest {
        mode: pb::IngestMode::Bulk as i32,
        ledgers: ledgers.into_iter().map(to_pb).collect(),
        ..Default::default()
    }
}

/// A raw HTTP/2 POST of `body` to `path` with curl: (grpc-status, message).
fn raw_grpc(addr: &str, path: &str, body: &[u8], dir: &Path) -> (String, String) {
    let file = dir.join("body.bin");
    std::fs::write(&file, body).expect("write");
    // A server that answers before reading the whole body (an unknown
    // method) may reset the stream while curl still uploads; curl then
    // reports a transport error and no headers. That is the client's
    // transport, not the server's answer: try again, a bounded few times.
    let mut last = (String::new(), String::new());
    for _ in 0..3 {
        let o = Command::new("curl")
            .args([
                "-sS",
                "--http2-prior-knowledge",
                "-D",
                "-",
                "-o",
                "/dev/null",
                "-X",
                "POST",
            ])
            .args(["-H", "content-type: application/grpc", "-H", "te: trailers"])
            .arg("--data-binary")
            .arg(format!("@{}", file.display()))
            .arg(format!("{addr}{path}"))
            .output()
            .expect("curl");
        let head = String::from_utf8_lossy(&o.stdout).to_string();
        let field = |name: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().replace("%20", " "))
                .unwrap_or_default()
        };
        last = (field("grpc-status:"), field("grpc-message:"));
        if !last.0.is_empty() {
            return last;
        }
        last.1 = format!(
            "no grpc-status; curl said: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_get_the_right_status_and_change_nothing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &["--query.max-batch-hashes", "50"],
    )
    .await;
    let s = synth(4);
    assert!(ingest(&d, vec![req(s.batch(1, 40))]).await.is_none());
    let rss_before = d.rss_kib();
    let mut q = d.query().await;

    // Query: wrong hash lengths, zero and too many hashes, bad ranges.
    for len in [0usize, 1, 31, 33, 4096] {
        let e = q
            .get_transaction(pb::GetTransactionRequest { hash: vec![7; len] })
            .await
            .expect_err("bad hash");
        assert_eq!(e.code(), Code::InvalidArgument, "{len}: {}", e.message());
        assert!(
            e.message().contains(&format!("got {len}")),
            "{}",
            e.message()
        );
    }
    let e = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest { hashes: vec![] })
        .await
        .expect_err("zero hashes");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    assert!(e.message().contains("at least one hash"), "{}", e.message());
    let e = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: vec![vec![1; 32]; 51],
        })
        .await
        .expect_err("over query.max_batch_hashes");
    assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
    let e = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: vec![vec![1; 32], vec![2; 3]],
        })
        .await
        .expect_err("one bad hash");
    assert!(e.message().contains("hashes[1]"), "{}", e.message());
    for (start, end) in [(10, 5), (1, u32::MAX)] {
        let r = q
            .stream_ledgers(pb::StreamLedgersRequest {
                start,
                end,
                omit_raw: true,
            })
            .await;
        let e = match r {
            Err(e) => e,
            Ok(st) => st
                .into_inner()
                .message()
                .await
                .expect_err("refused in stream"),
        };
        assert_eq!(
            e.code(),
            Code::InvalidArgument,
            "{start}..{end}: {}",
            e.message()
        );
    }

    // Ingest: duplicate, out-of-order and gapped ledgers, empty requests.
    let dup = vec![s.ledger(41), s.ledger(41)];
    let mut backwards = s.batch(41, 2);
    backwards.reverse();
    let cases: Vec<(&str, Vec<pb::IngestRequest>, Code)> = vec![
        (
            "a ledger twice in one request",
            vec![req(dup)],
            Code::InvalidArgument,
        ),
        ("out of order", vec![req(backwards)], Code::InvalidArgument),
        ("a gap", vec![req(s.batch(43, 1))], Code::FailedPrecondition),
        (
            "a gap between requests",
            vec![req(s.batch(41, 1)), req(s.batch(43, 1))],
            Code::InvalidArgument,
        ),
        ("no ledgers", vec![req(vec![])], Code::InvalidArgument),
    ];
    for (what, reqs, code) in cases {
        let e = ingest(&d, reqs)
            .await
            .unwrap_or_else(|| panic!("{what} was accepted"));
        assert_eq!(e.code(), code, "{what}: {}", e.message());
    }
    let st = d.status().await;
    assert_eq!(
        st.durable_ledger, 40,
        "nothing of a refused request is visible"
    );
    assert_eq!(st.transactions, 40 * u64::from(TX_PER_LEDGER));

    // Bytes that are not protobuf, or not even gRPC framing; an unknown
    // method. gRPC's status-code table maps a request that fails to parse
    // to INTERNAL, which is what tonic answers.
    let addr = d.grpc.clone();
    let mut garbage = vec![0u8, 0, 0, 0, 7];
    garbage.extend_from_slice(b"garbage");
    let cases: [(&str, &[u8], &str, &str); 4] = [
        (
            "/ledgerstore.v1.Query/GetTransaction",
            &garbage,
            "13",
            "failed to decode Protobuf",
        ),
        (
            "/ledgerstore.v1.Query/GetTransaction",
            b"hello",
            "13",
            "protocol error",
        ),
        (
            "/ledgerstore.v1.Ingest/IngestLedgers",
            &garbage,
            "13",
            "failed to decode Protobuf",
        ),
        // No body: the server answers an unknown method without reading
        // one, and resets a stream whose body is still coming, which curl
        // (8.x) reports as a framing error without the answer's headers.
        ("/ledgerstore.v1.Query/NoSuchMethod", &[], "12", ""),
    ];
    for (path, body, status, msg) in cases {
        let (code, message) = raw_grpc(&addr, path, body, tmp.path());
        assert_eq!(code, status, "{path}: {message}");
        assert!(message.contains(msg), "{path}: {message}");
    }

    // A client that opens a stream of every ledger and never reads: HTTP/2
    // flow control holds the server to a few in-flight ledgers.
    let mut slow = pb::query_client::QueryClient::new(d.channel().await);
    let stalled = slow
        .stream_ledgers(pb::StreamLedgersRequest {
            start: 1,
            end: 41,
            omit_raw: false,
        })
        .await
        .expect("stream opens");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    q.get_status(pb::GetStatusRequest {})
        .await
        .expect("others are still served");
    let one = s.ledger(7);
    q.get_transaction(pb::GetTransactionRequest {
        hash: one.txs[0].hash.clone(),
    })
    .await
    .expect("a read during the stalled stream");
    drop(stalled);

    let rss_after = d.rss_kib();
    assert!(
        rss_after < rss_before + 64 * 1024,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );
    println!("hostile: RSS {rss_before} -> {rss_after} KiB");
}

/// Plaintext against a TLS listener fails at the transport; TLS with the CA
/// works, through tonic and through `ledgerstore health`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_tls_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (cert, key) = (tmp.path().join("cert.pem"), tmp.path().join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        // An end-entity cert (rustls refuses a CA cert as a server's).
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (scripts/setup.sh installs it)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let d = Daemon::start(
        &tmp.path().join("data"),
        &[
            "--grpc.tls-cert",
            cert.to_str().expect("utf8"),
            "--grpc.tls-key",
            key.to_str().expect("utf8"),
        ],
    )
    .await;
    let https = d.grpc.clone();
    let plain = Channel::from_shared(https.replace("https://", "http://"))
        .expect("url")
        .connect()
        .await;
    let refused = match plain {
        Err(_) => true,
        Ok(ch) => pb::query_client::QueryClient::new(ch)
            .get_status(pb::GetStatusRequest {})
            .await
            .is_err(),
    };
    assert!(refused, "plaintext must not be served by a TLS listener");
    let pem = std::fs::read(&cert).expect("cert");
    let ch = Channel::from_shared(https.clone())
        .expect("url")
        .tls_config(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))
        .expect("tls")
        .connect()
        .await
        .expect("tls connect");
    pb::query_client::QueryClient::new(ch)
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status over TLS");
    let mut c = bin();
    c.args(["health", "--endpoint", &https, "--ca-cert"])
        .arg(&cert);
    let o = tokio::task::spawn_blocking(move || run(c))
        .await
        .expect("join");
    assert!(o.status.success(), "health over TLS: {}", stderr(&o));
}
