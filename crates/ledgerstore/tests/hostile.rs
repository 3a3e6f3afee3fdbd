//! Malformed and hostile requests over the wire, table-driven, against the
//! real daemon on loopback: each gets the right status, the daemon keeps
//! serving, nothing of a refused request becomes visible, and its memory
//! stays bounded; connections past the listeners' limits (both gRPC's and
//! Stellar RPC's per client address) are refused and told why. (Token checks, oversize ledgers and messages, limits and
//! gaps are in daemon.rs; this covers the rest of the list.)

mod common;
mod daemon_util;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use daemon_util::{Daemon, bulk as req};
use ledgerstore_proto::v1 as pb;
use tonic::Code;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};

async fn ingest(d: &Daemon, reqs: Vec<pb::IngestRequest>) -> Option<tonic::Status> {
    d.ingest_stream(None, reqs).await.1
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
    // A Query request is small: one over max(64 KiB, 70 bytes x
    // query.max_batch_hashes) is refused before it is buffered whole.
    let e = q
        .get_transaction(pb::GetTransactionRequest {
            hash: vec![7; 70_000],
        })
        .await
        .expect_err("a request over the Query limit");
    assert_eq!(e.code(), Code::ResourceExhausted, "{}", e.message());
    assert!(
        e.message().contains(&format!(
            "a message of 70004 bytes; a Query request takes at most {} (the larger of \
             65536 and 70 bytes x query.max_batch_hashes = 50)",
            ledgerstore_server::query_request_bytes(50)
        )),
        "{}",
        e.message()
    );
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
    let cases: [(&str, &[u8], &str, &str); 5] = [
        (
            "/ledgerstore.v1.Query/GetTransaction",
            &garbage,
            "13",
            "failed to decode Protobuf",
        ),
        // Read as a gRPC header, "hello" declares a message of
        // 0x656c6c6f bytes: a Query request that large is refused first.
        (
            "/ledgerstore.v1.Query/GetTransaction",
            b"hello",
            "8",
            "a message of 1701604463 bytes; a Query request takes at most 65536",
        ),
        (
            "/ledgerstore.v1.Ingest/IngestLedgers",
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

/// A self-signed end-entity certificate for 127.0.0.1 and its key, made
/// with openssl in `dir`.
fn self_signed(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
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
    (cert, key)
}

/// A daemon in `dir`/data serving gRPC over TLS with a certificate made
/// there, started with `extra` flags too; and the certificate.
async fn tls_daemon(dir: &Path, extra: &[&str]) -> (Daemon, std::path::PathBuf) {
    let (cert, key) = self_signed(dir);
    let mut flags = vec![
        "--grpc.tls-cert",
        cert.to_str().expect("utf8"),
        "--grpc.tls-key",
        key.to_str().expect("utf8"),
    ];
    flags.extend_from_slice(extra);
    let d = Daemon::start(&dir.join("data"), &flags).await;
    (d, cert)
}

/// Plaintext against a TLS listener fails at the transport; TLS with the CA
/// works, through tonic and through `ledgerstore health`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_against_tls_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (d, cert) = tls_daemon(tmp.path(), &[]).await;
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

fn metric(d: &Daemon, series: &str) -> f64 {
    d.metric(series)
}

/// Waits (bounded: 20 s) until `ledgerstore_grpc_connections` is `n`.
async fn wait_open(d: &Daemon, n: f64) {
    for _ in 0..400 {
        if metric(d, "ledgerstore_grpc_connections") == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "ledgerstore_grpc_connections never reached {n}: {}",
        metric(d, "ledgerstore_grpc_connections")
    );
}

/// What a refused plaintext connection is sent: an empty SETTINGS frame
/// (the server preface) and a GOAWAY (last stream 0, ENHANCE_YOUR_CALM)
/// whose debug data is `text`.
fn goaway(text: &[u8]) -> Vec<u8> {
    let mut want = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
    want.extend_from_slice(&(8 + text.len() as u32).to_be_bytes()[1..]);
    want.extend_from_slice(&[7, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0xb]);
    want.extend_from_slice(text);
    want
}

/// A connection to `addr` from the loopback address `from` (Linux routes
/// all of 127.0.0.0/8 to `lo`).
async fn connect_from(from: &str, addr: &str) -> tokio::net::TcpStream {
    let sock = tokio::net::TcpSocket::new_v4().expect("socket");
    sock.bind(format!("{from}:0").parse().expect("from"))
        .unwrap_or_else(|e| panic!("bind {from} (a loopback address on Linux): {e}"));
    sock.connect(addr.parse().expect("addr"))
        .await
        .expect("connect")
}

/// A plaintext connection to `addr` from the loopback address `from`,
/// which has sent the HTTP/2 client preface and an empty SETTINGS frame.
async fn speaking_from(from: &str, addr: &str) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let mut s = connect_from(from, addr).await;
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .await
        .expect("preface");
    s
}

/// `grpc.max_connections_per_ip` (2, under a limit of 5): two connections
/// of 127.0.0.1 hold its places; a third of it is refused with a GOAWAY
/// naming the address and the setting (exact bytes), while 127.0.0.2 is
/// still served; once one of 127.0.0.1's closes, it connects again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_limited_per_client_address() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &[
            "--grpc.max-connections",
            "5",
            "--grpc.max-connections-per-ip",
            "2",
        ],
    )
    .await;
    let addr = d.grpc.trim_start_matches("http://").to_string();
    wait_open(&d, 0.0).await;
    let (per_ip0, limit0) = (d.refused("per_ip"), d.refused("limit"));
    let mut kept = [d.query().await, d.query().await];
    for q in &mut kept {
        q.get_status(pb::GetStatusRequest {}).await.expect("served");
    }
    wait_open(&d, 2.0).await;
    let refused = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || until_closed(&mut std::net::TcpStream::connect(&addr).expect("connect"))
    })
    .await
    .expect("join");
    assert_eq!(
        String::from_utf8_lossy(&refused),
        String::from_utf8_lossy(&goaway(
            b"too many connections from 127.0.0.1: 2 are open (grpc.max_connections_per_ip)"
        )),
        "a connection past its address's limit is told why"
    );
    assert_eq!(d.refused("per_ip") - per_ip0, 1.0);
    // Other addresses keep their places: two of 127.0.0.2 are held open.
    let others = [
        speaking_from("127.0.0.2", &addr).await,
        speaking_from("127.0.0.2", &addr).await,
    ];
    wait_open(&d, 4.0).await;
    let [one, mut two] = kept;
    drop(one);
    wait_open(&d, 3.0).await;
    d.query()
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("a place of its address freed by a closed connection is taken again");
    two.get_status(pb::GetStatusRequest {})
        .await
        .expect("still served");
    assert_eq!(d.refused("per_ip") - per_ip0, 1.0, "nothing else refused");
    assert_eq!(d.refused("limit"), limit0);
    drop(others);
}

/// One Stellar RPC call (`getNetwork`) from the loopback address `from` on a new
/// connection: all the daemon sent until it closed the connection.
async fn rpc_from(from: &str, addr: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = connect_from(from, addr).await;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"getNetwork"}"#;
    let req = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A refused connection may be closed before the request is written.
    let _ = s.write_all(req.as_bytes()).await;
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the daemon kept the connection open for 20 s");
    String::from_utf8_lossy(&got).into_owned()
}

/// `jsonrpc.max_connections_per_ip` (2): two connections of 127.0.0.1 hold
/// its places; a third is answered 503 naming the address and the
/// setting, counted in `jsonrpc_connections_refused_total{reason="per_ip"}`,
/// while 127.0.0.2 is served; once one of 127.0.0.1's closes, it is served
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stellar_rpc_connections_are_limited_per_client_address() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start_with_env(
        &tmp.path().join("data"),
        &[],
        &[("LEDGERSTORE_JSONRPC__MAX_CONNECTIONS_PER_IP", "2")],
    )
    .await;
    let addr = d
        .jsonrpc
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    // Any JSON-RPC answer is served (an empty store answers an error).
    // (No call before the two held: its place is given back only after
    // its connection closes, which could race with theirs.)
    let served = |got: &str| got.starts_with("HTTP/1.1 200 ") && got.contains("\"id\":1");
    let held = [
        std::net::TcpStream::connect(&addr).expect("connect"),
        std::net::TcpStream::connect(&addr).expect("connect"),
    ];
    let got = rpc_from("127.0.0.1", &addr).await;
    assert!(
        got.starts_with("HTTP/1.1 503 ")
            && got.ends_with(
                "too many connections from 127.0.0.1: 2 are open \
                 (jsonrpc.max_connections_per_ip)\n"
            ),
        "a connection past its address's limit is told why: {got:?}"
    );
    assert_eq!(
        d.metric("jsonrpc_connections_refused_total{reason=\"per_ip\"}"),
        1.0
    );
    let got = rpc_from("127.0.0.2", &addr).await;
    assert!(served(&got), "another address is served: {got:?}");
    let [one, _two] = held;
    drop(one);
    // The daemon gives the place back once it reads the close.
    let mut got = String::new();
    for _ in 0..200 {
        got = rpc_from("127.0.0.1", &addr).await;
        if served(&got) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("a place freed by a closed connection is not taken again: {got:?}");
}

/// `grpc.max_connections` and `grpc.handshake_timeout_ms` on a plaintext
/// listener (limit 2, deadline 1.5 s):
/// - two connections that say nothing (one sends half the HTTP/2 preface)
///   take both places, and the daemon closes both at the deadline, which
///   frees their places;
/// - two served connections outlive the deadline (it ends with the
///   preface); while they are open a third is refused with the HTTP/2
///   server preface and a GOAWAY naming the setting (exact bytes), and a
///   tonic client's call fails; once one closes, a new client is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_connections_are_limited_and_silent_ones_closed() {
    use std::io::Write;
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &[
            "--grpc.max-connections",
            "2",
            "--grpc.handshake-timeout-ms",
            "1500",
        ],
    )
    .await;
    let addr = d.grpc.trim_start_matches("http://").to_string();
    wait_open(&d, 0.0).await;
    // Counted from here: the daemon's start was polled over connections
    // of its own.
    let (timed_out0, limit0) = (d.refused("handshake_timeout"), d.refused("limit"));
    let connect = |addr: &str| std::net::TcpStream::connect(addr).expect("connect");
    let mut silent = connect(&addr);
    let mut half = connect(&addr);
    half.write_all(&b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"[..12])
        .expect("half a preface");
    let (a, b) =
        tokio::task::spawn_blocking(move || (until_closed(&mut silent), until_closed(&mut half)))
            .await
            .expect("join");
    // At most the server's own preface (SETTINGS, a WINDOW_UPDATE):
    // nothing was served.
    for (name, got) in [("silent", a), ("half a preface", b)] {
        assert!(
            got.is_empty() || (got.len() < 64 && got.get(3) == Some(&4)),
            "{name}: the daemon answered {got:?}"
        );
    }
    wait_open(&d, 0.0).await;
    assert_eq!(d.refused("handshake_timeout") - timed_out0, 2.0);
    assert_eq!(d.refused("limit"), limit0);

    let mut kept = [d.query().await, d.query().await];
    for q in &mut kept {
        q.get_status(pb::GetStatusRequest {}).await.expect("served");
    }
    wait_open(&d, 2.0).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    // tonic's channels would reconnect silently: the count says the
    // daemon closed nothing.
    assert_eq!(
        d.refused("handshake_timeout") - timed_out0,
        2.0,
        "a served connection outlives the handshake deadline"
    );
    for q in &mut kept {
        q.get_status(pb::GetStatusRequest {})
            .await
            .expect("a served connection outlives the handshake deadline");
    }
    let refused = tokio::task::spawn_blocking({
        let addr = addr.clone();
        move || until_closed(&mut connect(&addr))
    })
    .await
    .expect("join");
    assert_eq!(
        String::from_utf8_lossy(&refused),
        String::from_utf8_lossy(&goaway(
            b"too many connections: 2 are open (grpc.max_connections)"
        )),
        "a connection past the limit is told why"
    );
    let e = match Channel::from_shared(d.grpc.clone())
        .expect("url")
        .connect()
        .await
    {
        Err(e) => format!("{e:?}"),
        Ok(ch) => format!(
            "{:?}",
            pb::query_client::QueryClient::new(ch)
                .get_status(pb::GetStatusRequest {})
                .await
                .expect_err("a call past the limit")
        ),
    };
    println!("tonic past the limit: {e}");
    // The raw connection and at least one of tonic's.
    assert!(d.refused("limit") - limit0 >= 2.0);
    let [one, mut two] = kept;
    drop(one);
    wait_open(&d, 1.0).await;
    d.query()
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("a place freed by a closed connection is taken again");
    two.get_status(pb::GetStatusRequest {})
        .await
        .expect("still served");
}

/// `openssl s_client -alpn h2` with its input held open, so it sends
/// nothing after its handshake; returns once it exits (the daemon closed
/// the connection), with what it printed. Fails if it is still connected
/// after 20 s.
async fn s_client(addr: &str) -> String {
    let mut c = Command::new("openssl")
        .args(["s_client", "-connect", addr, "-alpn", "h2"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl (scripts/setup.sh installs it)");
    tokio::task::spawn_blocking(move || {
        for _ in 0..200 {
            if c.try_wait().expect("wait").is_some() {
                let o = c.wait_with_output().expect("output");
                return format!("{}{}", stdout(&o), stderr(&o));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = c.kill();
        panic!("the daemon kept a TLS connection that sent nothing open for 20 s");
    })
    .await
    .expect("join")
}

/// With TLS (limit 1, deadline 3 s): while a served client holds the only
/// place, a new connection is closed before any TLS handshake; once it is
/// free, `openssl s_client` completes a TLS handshake (ALPN h2), sends
/// nothing, and the daemon closes it at the deadline; then a client is
/// served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_are_limited_and_silent_ones_closed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (d, _) = tls_daemon(
        tmp.path(),
        &[
            "--grpc.max-connections",
            "1",
            "--grpc.handshake-timeout-ms",
            "3000",
        ],
    )
    .await;
    wait_open(&d, 0.0).await;
    let addr = d.grpc.trim_start_matches("https://").to_string();
    let (timed_out0, limit0) = (d.refused("handshake_timeout"), d.refused("limit"));

    let mut held = d.query().await;
    held.get_status(pb::GetStatusRequest {})
        .await
        .expect("served");
    wait_open(&d, 1.0).await;
    let refused = s_client(&addr).await;
    assert!(
        !refused.contains("ALPN protocol: h2"),
        "a connection past the limit got a TLS handshake: {refused}"
    );
    assert_eq!(d.refused("limit") - limit0, 1.0);
    drop(held);
    wait_open(&d, 0.0).await;

    let silent = s_client(&addr).await;
    assert!(
        silent.contains("ALPN protocol: h2"),
        "s_client did not finish its TLS handshake: {silent}"
    );
    assert_eq!(d.refused("handshake_timeout") - timed_out0, 1.0);
    wait_open(&d, 0.0).await;
    d.query()
        .await
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("served once the silent connection is closed");
}
