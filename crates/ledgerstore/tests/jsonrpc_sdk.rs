//! The official Stellar SDKs as clients of the daemon's Stellar RPC
//! endpoint: Python `stellar-sdk` (SorobanServer) and JS
//! `@stellar/stellar-sdk` (rpc.Server, which decodes every XDR value
//! strictly), against the 20 real pubnet ledgers, field for field against
//! their independent oracle. `scripts/sdk-clients.sh` installs both
//! (pinned) into the build cache; `scripts/test.sh` runs it first.

mod common;
mod daemon_util;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use daemon_util::Daemon;

const FIXTURE: &str = "FC3D4709--63092982-63093001";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn testdata(name: &str) -> PathBuf {
    root().join("crates/stellar/testdata").join(name)
}

/// (venv python, node_modules) from `scripts/sdk-clients.sh`. `None`
/// outside CI when it cannot install them (no node, say).
fn sdks() -> Option<(PathBuf, PathBuf)> {
    let mut p = common::installed("sdk-clients.sh", &["python", "node_modules"])?;
    let node_modules = p.pop()?;
    Some((p.pop()?, node_modules))
}

fn show(what: &str, o: &Output) -> String {
    format!(
        "{what} exited {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The client's closing line, `N passed, 0 failed`, with N > 0.
fn assert_all_passed(what: &str, o: &Output) {
    let out = String::from_utf8_lossy(&o.stdout);
    let last = out
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let passed = last
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.trim().parse::<u32>().ok());
    assert!(
        o.status.success() && passed.is_some_and(|n| n >= 11),
        "{}",
        show(what, o)
    );
}

#[tokio::test]
async fn python_and_js_sdks_read_every_tx_and_ledger_as_the_oracle_says() {
    let Some((python, node_modules)) = sdks() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let o = common::bin()
        .args(["ingest", "--no-progress", "--data-dir"])
        .arg(&dir)
        .args(common::small_engine_flags())
        .args(["--network", "pubnet", "--stellar-file"])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")))
        .output()
        .expect("ingest");
    assert!(o.status.success(), "{}", show("ingest", &o));
    let d = Daemon::start(&dir, &[]).await;
    let oracle = testdata(&format!("{FIXTURE}.oracle.json"));
    let sdk = root().join("crates/ledgerstore/tests/sdk");

    let py = Command::new(&python)
        .arg(sdk.join("rpc_python.py"))
        .arg(&d.jsonrpc)
        .arg(&oracle)
        .arg("--inner-hash")
        .output()
        .expect("python client");
    assert_all_passed("Python stellar-sdk", &py);

    let js = Command::new("node")
        .arg(sdk.join("rpc_js.mjs"))
        .arg(&d.jsonrpc)
        .arg(&oracle)
        .arg("--inner-hash")
        .arg(&node_modules)
        .output()
        .expect("node client");
    assert_all_passed("JS @stellar/stellar-sdk", &js);
}
