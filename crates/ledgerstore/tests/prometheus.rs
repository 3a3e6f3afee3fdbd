//! The deploy stack's monitoring against the real daemon: `promtool`
//! validates deploy/prometheus/prometheus.yml, a real Prometheus (Debian's
//! package, installed by scripts/setup.sh) scrapes a live daemon on
//! loopback and finds the ingest metrics, and every query of the Grafana
//! dashboard (deploy/grafana/dashboards/ledgerstore.json) is valid PromQL
//! that Prometheus evaluates without error.

mod common;
mod daemon_util;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use daemon_util::Daemon;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn tool(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file());
    found.unwrap_or_else(|| {
        panic!("`{name}` not found: install Debian's prometheus package (scripts/setup.sh does)")
    })
}

/// GET over HTTP/1.0 (no chunking); returns (status line, body).
fn http_get(addr: &str, path: &str) -> std::io::Result<(String, String)> {
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    ))
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn query(prom: &str, expr: &str) -> serde_json::Value {
    let (status, body) =
        http_get(prom, &format!("/api/v1/query?query={}", urlencode(expr))).expect("query");
    let v: serde_json::Value =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status}: {e}: {body}"));
    assert_eq!(v["status"], "success", "{expr}: {body}");
    v
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every `expr` of the dashboard's panels.
fn dashboard_queries() -> Vec<(String, String)> {
    let path = repo().join("deploy/grafana/dashboards/ledgerstore.json");
    let text = std::fs::read_to_string(&path).expect("dashboard json");
    let d: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(d["uid"], "ledgerstore");
    let mut out = Vec::new();
    for p in d["panels"].as_array().expect("panels") {
        let title = p["title"]
            .as_str()
            .expect("every panel has a title")
            .to_string();
        assert!(p["gridPos"]["w"].as_u64().is_some(), "{title}: gridPos");
        if p["type"] == "row" {
            continue;
        }
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no query");
        for t in targets {
            let expr = t["expr"].as_str().expect("expr").replace("$job", ".*");
            out.push((title.clone(), expr));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_prometheus_scrapes_the_daemon_and_runs_every_dashboard_query() {
    let promtool = tool("promtool");
    let o = Command::new(&promtool)
        .args(["check", "config"])
        .arg(repo().join("deploy/prometheus/prometheus.yml"))
        .output()
        .expect("promtool");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));

    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &["--ingest.bulk-batch-ledgers", "5"],
    )
    .await;
    let o = bin()
        .args([
            "push",
            "--synthetic",
            "--endpoint",
            &d.grpc,
            "--ledgers",
            "20",
        ])
        .args(["--tx-per-ledger", &TX_PER_LEDGER.to_string()])
        .args(["--tx-bytes", &TX_BYTES.to_string()])
        .args(["--ledger-bytes", &LEDGER_BYTES.to_string()])
        .output()
        .expect("push");
    assert!(o.status.success(), "{}", stderr(&o));

    let config = tmp.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: ledgerstore\n    static_configs:\n      \
             - targets: [\"{}\"]\n",
            d.metrics
        ),
    )
    .expect("write config");
    let o = Command::new(&promtool)
        .args(["check", "config"])
        .arg(&config)
        .output()
        .expect("promtool");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));

    let prom = format!("127.0.0.1:{}", free_port());
    let _p = Prometheus(
        Command::new(tool("prometheus"))
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                tmp.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let ledgers = loop {
        assert!(
            Instant::now() < deadline,
            "Prometheus never saw the ingest metrics"
        );
        if let Ok((status, _)) = http_get(&prom, "/-/ready")
            && status.contains("200")
        {
            let v = query(
                &prom,
                "ledgerstore_ingested_ledgers_total{job=\"ledgerstore\"}",
            );
            if let Some(s) = v["data"]["result"][0]["value"][1].as_str() {
                break s.to_string();
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(ledgers, "20");
    let up = query(&prom, "up{job=\"ledgerstore\"}");
    assert_eq!(up["data"]["result"][0]["value"][1], "1");
    for (metric, labels) in [
        ("ledgerstore_high_water_mark", ""),
        (
            "ledgerstore_ingest_phase_seconds_count",
            "table=\"tx_data\",phase=\"commit\"",
        ),
        ("ledgerstore_store_written_bytes", "table=\"tx_data\""),
    ] {
        let v = query(&prom, &format!("{metric}{{{labels}}}"));
        assert!(
            v["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty()),
            "Prometheus has no {metric}{{{labels}}}: {v}"
        );
    }

    let queries = dashboard_queries();
    assert!(queries.len() >= 20, "{}", queries.len());
    for (title, expr) in &queries {
        let v = query(&prom, expr);
        assert!(v["data"]["result"].is_array(), "{title}: {expr}: {v}");
    }
    drop(d);
}

#[test]
fn systemd_unit_verifies_against_the_built_binary() {
    let Some(analyze) = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("systemd-analyze"))
        .find(|p| p.is_file())
    else {
        eprintln!("systemd-analyze is not installed here; the unit was not verified");
        return;
    };
    let unit = std::fs::read_to_string(repo().join("deploy/systemd/ledgerstore.service"))
        .expect("unit file");
    assert!(unit.contains("ExecStart=/usr/local/bin/ledgerstore serve"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("ledgerstore.service");
    std::fs::write(
        &path,
        unit.replace(
            "/usr/local/bin/ledgerstore",
            env!("CARGO_BIN_EXE_ledgerstore"),
        ),
    )
    .expect("write unit");
    let o = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .output()
        .expect("verify");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).trim().is_empty(), "warnings: {}", stderr(&o));
}
