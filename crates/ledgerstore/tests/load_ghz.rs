//! Load with a stock tool, short form: scripts/load-ghz.sh with ghz
//! (v0.120.0, from the Go module proxy) against GetTransaction and
//! BatchGetTransactions on a small store while live ingest runs, 2 s per
//! call, loopback only. The long form (1M txs, release build) is in
//! docs/reliability.md.

mod common;

use std::path::Path;

use common::*;

#[test]
fn ghz_load_during_live_ingest_has_no_errors_and_bounded_memory() {
    if !go_tool_available("ghz", "--version") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("load");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/load-ghz.sh");
    let o = std::process::Command::new("bash")
        .arg(script)
        .env("LOAD_BIN", env!("CARGO_BIN_EXE_ledgerstore"))
        .env("LOAD_TXS", "2400")
        .env("LOAD_TX_PER_LEDGER", "12")
        .env("LOAD_TX_BYTES", "600")
        .env("LOAD_LEDGER_BYTES", "8192")
        .env("LOAD_DURATION", "2s")
        .env("LOAD_CONCURRENCY", "8")
        .env("LOAD_LIVE_INTERVAL_MS", "100")
        .env("LOAD_OUT", &out)
        .output()
        .expect("run load-ghz.sh");
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    println!("{}", stdout(&o));
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary"))
            .expect("json");
    for call in ["GetTransaction", "BatchGetTransactions (100 hashes)"] {
        let c = &s["calls"][call];
        assert!(c["requests"].as_u64().unwrap_or(0) > 0, "{call}: {c}");
        assert_eq!(c["errors"], 0, "{call}: {c}");
        assert!(c["p999_ms"].as_f64().is_some(), "{call}: {c}");
        // The daemon did the work: its CPU over the call, per request.
        let cpu = c["daemon_cpu_us_per_request"].as_f64().unwrap_or(0.0);
        assert!(
            cpu > 0.0 && cpu < 1e6,
            "{call}: daemon CPU µs/request {cpu}"
        );
    }
    let (m0, m1): (u64, u64) = (
        s["mark_before"]
            .as_str()
            .and_then(|m| m.parse().ok())
            .expect("mark before"),
        s["mark_after"]
            .as_str()
            .and_then(|m| m.parse().ok())
            .expect("mark after"),
    );
    assert!(m1 > m0, "live ingest went on during the load: {m0} -> {m1}");
    let rss = s["rss_kib_after"].as_u64().expect("rss");
    assert!(rss < 512 * 1024, "daemon RSS {rss} KiB");
}
