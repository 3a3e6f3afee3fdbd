//! `ledgerstore bench-query`, the light load client, against the real
//! daemon on loopback: every call, closed loop and paced, hits and misses,
//! and its errors. Short runs (1 s); the figures are in docs/benchmarks.md.

mod common;
mod daemon_util;

use common::*;
use daemon_util::Daemon;
use serde_json::Value;

fn bench(d: &Daemon, args: &[&str]) -> Value {
    let o = bin()
        .args(["bench-query", "--endpoint", &d.grpc, "--json"])
        .args(["--seconds", "1", "--warmup-seconds", "0"])
        .args(["--concurrency", "4", "--connections", "2"])
        .args(["--pid", &d.pid().to_string()])
        .args(args)
        .output()
        .expect("bench-query");
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    assert!(n("requests") > 0, "{r}");
    assert_eq!(r["errors"], serde_json::json!({}), "{r}");
    let l = &r["latency"];
    let lat = |k: &str| l[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    assert!(
        1 <= lat("p50_us") && lat("p50_us") <= lat("p99_us") && lat("p99_us") <= lat("max_us"),
        "{r}"
    );
    let cpu = r["daemon_cpu_us_per_request"].as_f64().expect("daemon CPU");
    assert!(cpu > 0.0 && cpu < 1e6, "{r}");
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_query_drives_every_call_and_counts_what_it_asked() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(&tmp.path().join("data"), &[]).await;

    // An RPC that reads nothing needs no data; an empty store has nothing
    // else to ask for.
    bench(&d, &["--call", "health"]);
    let o = bin()
        .args(["bench-query", "--endpoint", &d.grpc, "--seconds", "1"])
        .output()
        .expect("bench-query");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("store is empty"), "{}", stderr(&o));

    let o = bin()
        .args([
            "push",
            "--synthetic",
            "--endpoint",
            &d.grpc,
            "--ledgers",
            "20",
        ])
        .args([
            "--tx-per-ledger",
            "8",
            "--tx-bytes",
            "600",
            "--ledger-bytes",
            "4096",
        ])
        .output()
        .expect("push");
    assert!(o.status.success(), "{}", stderr(&o));

    let count = |r: &Value, k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
    // Hits: every hash asked for is found, one item a request.
    for call in ["get", "tx-ledger", "ledger", "stream"] {
        let r = bench(&d, &["--call", call, "--sample-ledgers", "5"]);
        assert_eq!(count(&r, "items_found"), count(&r, "items_asked"), "{r}");
        if call != "stream" {
            assert_eq!(count(&r, "items_asked"), count(&r, "requests"), "{r}");
        }
    }
    let r = bench(&d, &["--call", "batch", "--batch-hashes", "10"]);
    assert_eq!(count(&r, "items_asked"), 10 * count(&r, "requests"), "{r}");
    assert_eq!(count(&r, "items_found"), count(&r, "items_asked"), "{r}");

    // Misses: NOT_FOUND is an answer, not an error.
    let r = bench(&d, &["--call", "get", "--misses"]);
    assert_eq!(count(&r, "items_found"), 0, "{r}");
    assert_eq!(count(&r, "items_asked"), count(&r, "requests"), "{r}");

    // Paced: exactly the requests scheduled in the window are counted,
    // each latency from its scheduled start.
    let r = bench(&d, &["--call", "get", "--rate", "200"]);
    assert_eq!(count(&r, "requests"), 200, "{r}");
    assert_eq!(r["mode"], "paced", "{r}");

    let o = bin()
        .args([
            "bench-query",
            "--endpoint",
            &d.grpc,
            "--call",
            "ledger",
            "--misses",
        ])
        .output()
        .expect("bench-query");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--misses applies to"), "{}", stderr(&o));

    // A --pid that is not running is named.
    let o = bin()
        .args(["bench-query", "--endpoint", &d.grpc, "--seconds", "1"])
        .args(["--warmup-seconds", "0", "--pid", "999999999"])
        .output()
        .expect("bench-query");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("/proc/999999999/stat"),
        "{}",
        stderr(&o)
    );

    // --disk reports the device's reads over the window (any device of
    // this machine; `/dev/` may prefix it), and refuses one it lacks.
    let stats = std::fs::read_to_string("/proc/diskstats").expect("/proc/diskstats");
    let dev = stats
        .lines()
        .find_map(|l| l.split_whitespace().nth(2))
        .expect("a device in /proc/diskstats");
    let r = bench(&d, &["--call", "health", "--disk", &format!("/dev/{dev}")]);
    for k in [
        "device_reads_per_item",
        "device_read_kib_per_item",
        "device_queue_depth",
    ] {
        let v = r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
        assert!(v >= 0.0 && v.is_finite(), "{k} in {r}");
    }
    let o = bin()
        .args(["bench-query", "--endpoint", &d.grpc, "--seconds", "1"])
        .args(["--warmup-seconds", "0", "--disk", "no-such-disk"])
        .output()
        .expect("bench-query");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--disk no-such-disk: no such device in /proc/diskstats"),
        "{}",
        stderr(&o)
    );
}

/// Connections the daemon refuses (past `grpc.max_connections_per_ip`)
/// are errors bench-query reports. Before, its write to a refused socket
/// raised SIGPIPE, whose default the CLI restores for its output, and the
/// process died without a word (exit 141, every run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connections_are_reported_not_a_silent_death() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(
        &tmp.path().join("data"),
        &["--grpc.max-connections-per-ip", "2"],
    )
    .await;
    let o = bin()
        .args(["bench-query", "--endpoint", &d.grpc, "--json"])
        .args([
            "--seconds",
            "1",
            "--warmup-seconds",
            "0",
            "--call",
            "health",
        ])
        .args(["--concurrency", "64", "--connections", "64"])
        .output()
        .expect("bench-query");
    assert_eq!(
        o.status.signal(),
        None,
        "bench-query was killed by a signal: {}",
        stderr(&o)
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    let errors = r["errors"].as_object().expect("errors");
    assert!(!errors.is_empty(), "62 of 64 connections were refused: {r}");
}
