//! A session with a stock third-party client: grpcurl, through server
//! reflection (no .proto files), via scripts/grpcurl-session.sh.

mod common;
mod daemon_util;

use std::path::Path;

use common::*;
use daemon_util::Daemon;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpcurl_lists_services_checks_health_and_gets_a_transaction() {
    if !go_tool_available("grpcurl", "-version") {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let d = Daemon::start(&tmp.path().join("data"), &[]).await;
    let mut c = bin();
    c.args([
        "push",
        "--synthetic",
        "--endpoint",
        &d.grpc,
        "--ledgers",
        "3",
    ])
    .args([
        "--tx-per-ledger",
        "4",
        "--tx-bytes",
        "600",
        "--ledger-bytes",
        "4096",
        "--seed",
        "9",
    ]);
    assert!(c.output().expect("push").status.success());
    let hash = hex::encode(
        &ledgerstore_synth::Synth::new(ledgerstore_synth::SynthConfig::with_sizes(9, 4, 600, 4096))
            .ledger(2)
            .txs[1]
            .hash,
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/grpcurl-session.sh");
    let addr = d.grpc.trim_start_matches("http://").to_string();
    let o = std::process::Command::new("bash")
        .arg(script)
        .args([&addr, &hash])
        .output()
        .expect("run grpcurl session");
    let text = stdout(&o);
    assert!(o.status.success(), "{text}\n{}", stderr(&o));
    for needle in [
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "ledgerstore.v1.Ingest",
        "ledgerstore.v1.Query",
        "\"status\": \"SERVING\"",
        "\"durableLedger\": 3",
        "\"ledgerSeq\": 2",
        "\"index\": 1",
    ] {
        assert!(
            text.contains(needle),
            "grpcurl output lacks {needle}:\n{text}"
        );
    }
}
