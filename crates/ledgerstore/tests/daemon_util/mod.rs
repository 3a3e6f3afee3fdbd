//! Starts the real `ledgerstore serve` on loopback ports for tests.
#![allow(dead_code, unused_imports)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use ledgerstore_proto::v1 as pb;
use tonic::transport::Channel;

use crate::common::{bin, small_engine_flags};

pub struct Daemon {
    child: Option<Child>,
    pub grpc: String,
    pub metrics: String,
    /// The Stellar RPC endpoint, `http://127.0.0.1:PORT/`.
    pub jsonrpc: String,
    pub dir: PathBuf,
    out: Arc<Mutex<String>>,
    /// The CA (the server's own cert) when the daemon serves TLS.
    tls_ca: Option<PathBuf>,
}

impl Daemon {
    /// Starts the daemon on free loopback ports; waits until it serves.
    pub async fn start(dir: &Path, extra: &[&str]) -> Daemon {
        Self::start_with_env(dir, extra, &[]).await
    }

    /// As [`Daemon::start`], with extra environment variables.
    pub async fn start_with_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        let d = Self::spawn_with_env(dir, extra, env);
        d.wait_serving().await;
        d
    }

    /// Starts the daemon and returns once it printed its addresses,
    /// without waiting until it serves (it may abort at a failpoint first).
    pub fn spawn_with_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut child = bin()
            .envs(env.iter().copied())
            .args([
                "serve",
                "--grpc.listen",
                "127.0.0.1:0",
                "--metrics.listen",
                "127.0.0.1:0",
                "--jsonrpc.listen",
                "127.0.0.1:0",
            ])
            .arg("--data-dir")
            .arg(dir)
            .args(small_engine_flags())
            .args(extra)
            .env(
                "RUST_LOG",
                std::env::var("DAEMON_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn ledgerstore serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line.clone());
                if let Ok(mut o) = sink.lock() {
                    o.push_str(&line);
                    o.push('\n');
                }
            }
        });
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("daemon printed its addresses");
        let grpc = between(&line, "gRPC on ", " ").expect("grpc addr");
        let metrics = between(&line, "metrics on http://", "/metrics").expect("metrics addr");
        let jsonrpc = between(&line, "Stellar RPC on ", ",").expect("jsonrpc addr");
        let tls_ca = extra
            .iter()
            .position(|a| *a == "--grpc.tls-cert")
            .and_then(|i| extra.get(i + 1))
            .map(PathBuf::from);
        let scheme = if tls_ca.is_some() { "https" } else { "http" };
        Daemon {
            child: Some(child),
            grpc: format!("{scheme}://{grpc}"),
            tls_ca,
            metrics,
            jsonrpc,
            dir: dir.to_path_buf(),
            out,
        }
    }

    pub async fn channel(&self) -> Channel {
        self.endpoint().connect().await.expect("connect")
    }

    fn endpoint(&self) -> tonic::transport::Endpoint {
        let ep = Channel::from_shared(self.grpc.clone()).expect("url");
        match &self.tls_ca {
            None => ep,
            Some(ca) => ep
                .tls_config(tonic::transport::ClientTlsConfig::new().ca_certificate(
                    tonic::transport::Certificate::from_pem(std::fs::read(ca).expect("ca")),
                ))
                .expect("tls"),
        }
    }

    pub async fn query(&self) -> pb::query_client::QueryClient<Channel> {
        pb::query_client::QueryClient::new(self.channel().await)
    }

    /// GetStatus.
    pub async fn status(&self) -> pb::Status {
        self.query()
            .await
            .get_status(pb::GetStatusRequest {})
            .await
            .expect("status")
            .into_inner()
    }

    /// Sends `reqs` on one IngestLedgers stream (with the token, if any);
    /// returns the acks and the status the stream ended with.
    pub async fn ingest_stream(
        &self,
        token: Option<&str>,
        reqs: Vec<pb::IngestRequest>,
    ) -> (Vec<pb::IngestAck>, Option<tonic::Status>) {
        let mut client = pb::ingest_client::IngestClient::new(self.channel().await)
            .max_encoding_message_size(256 << 20);
        let mut req = tonic::Request::new(tokio_stream::iter(reqs));
        if let Some(t) = token {
            req.metadata_mut().insert(
                "authorization",
                format!("Bearer {t}").parse().expect("ascii"),
            );
        }
        let mut acks = Vec::new();
        let mut inbound = match client.ingest_ledgers(req).await {
            Ok(r) => r.into_inner(),
            Err(s) => return (acks, Some(s)),
        };
        loop {
            match inbound.message().await {
                Ok(Some(a)) => acks.push(a),
                Ok(None) => return (acks, None),
                Err(s) => return (acks, Some(s)),
            }
        }
    }

    async fn wait_serving(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ch = self.endpoint().connect().await;
            if let Ok(ch) = ch {
                let mut h = tonic_health::pb::health_client::HealthClient::new(ch);
                let r = h
                    .check(tonic_health::pb::HealthCheckRequest {
                        service: String::new(),
                    })
                    .await;
                if let Ok(r) = r
                    && r.into_inner().status
                        == tonic_health::pb::health_check_response::ServingStatus::Serving as i32
                {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "daemon did not become SERVING");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The daemon's resident set size, KiB (from /proc).
    /// The daemon's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).expect("running")
    }

    pub fn rss_kib(&self) -> u64 {
        let pid = self.child.as_ref().map(|c| c.id()).expect("running");
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    }

    /// Waits (bounded) for the daemon to exit on its own; true if it did.
    pub fn wait_exit(&mut self, within: Duration) -> bool {
        let Some(c) = self.child.as_mut() else {
            return true;
        };
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = c.try_wait() {
                self.child = None;
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits (bounded) for a clean exit; returns its stdout.
    pub fn terminate(&mut self) -> (bool, String) {
        let Some(mut c) = self.child.take() else {
            return (false, String::new());
        };
        #[allow(unsafe_code)]
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        let status = loop {
            if let Ok(Some(s)) = c.try_wait() {
                break Some(s);
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(100));
        let out = self.out.lock().map(|o| o.clone()).unwrap_or_default();
        (status.is_some_and(|s| s.success()), out)
    }

    /// Waits (bounded) until the daemon's stdout holds `text`.
    pub fn wait_printed(&self, text: &str, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.out.lock().is_ok_and(|o| o.contains(text)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// GET /metrics over plain HTTP/1.1.
    pub fn metrics_text(&self) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&self.metrics).expect("metrics connect");
        write!(
            s,
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .expect("write");
        let mut body = String::new();
        s.read_to_string(&mut body).expect("read");
        body
    }

    /// `name{labels} value` from /metrics (0 when absent).
    pub fn metric(&self, series: &str) -> f64 {
        self.metrics_text()
            .lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or(0.0)
    }

    /// gRPC connections refused or closed for `reason`
    /// (`ledgerstore_grpc_connections_refused_total`).
    pub fn refused(&self, reason: &str) -> f64 {
        self.metric(&format!(
            "ledgerstore_grpc_connections_refused_total{{reason=\"{reason}\"}}"
        ))
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

fn between(s: &str, start: &str, end: &str) -> Option<String> {
    let i = s.find(start)? + start.len();
    let rest = &s[i..];
    let j = rest.find(end)?;
    Some(rest[..j].to_string())
}

pub use ledgerstore_server::convert::ledger_pb as to_pb;

/// A bulk ingest request of `ledgers`.
pub fn bulk(ledgers: Vec<ledgerstore_db_api::LedgerInput>) -> pb::IngestRequest {
    pb::IngestRequest {
        mode: pb::IngestMode::Bulk as i32,
        ledgers: ledgers.into_iter().map(to_pb).collect(),
        ..Default::default()
    }
}
