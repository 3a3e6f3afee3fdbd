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

/// The client's closing line, `N passed, 0 failed`, with N at least
/// `groups`.
fn assert_all_passed(what: &str, o: &Output, groups: u32) {
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
        o.status.success() && passed.is_some_and(|n| n >= groups),
        "{}",
        show(what, o)
    );
}

/// Ingests the 20 real ledgers into a new data dir at `dir`.
fn ingest_fixture(dir: &Path) {
    let o = common::bin()
        .args(["ingest", "--no-progress", "--data-dir"])
        .arg(dir)
        .args(common::small_engine_flags())
        .args(["--network", "pubnet", "--stellar-file"])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")))
        .output()
        .expect("ingest");
    assert!(o.status.success(), "{}", show("ingest", &o));
}

#[tokio::test]
async fn python_and_js_sdks_read_every_tx_and_ledger_as_the_oracle_says() {
    let Some((python, node_modules)) = sdks() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    ingest_fixture(&dir);
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
    assert_all_passed("Python stellar-sdk", &py, 11);

    let js = Command::new("node")
        .arg(sdk.join("rpc_js.mjs"))
        .arg(&d.jsonrpc)
        .arg(&oracle)
        .arg("--inner-hash")
        .arg(&node_modules)
        .output()
        .expect("node client");
    assert_all_passed("JS @stellar/stellar-sdk", &js, 11);
}

/// The fixture's ledgers as the event oracle lists them.
const FIRST: u32 = 63_092_982;
const LAST: u32 = 63_093_001;

/// The oracle's events of the 20 ledgers (`events.oracle.json.zst`, from
/// `events_oracle.py`), written as a JSON list into `dir`.
fn oracle_events(dir: &Path) -> PathBuf {
    let packed = std::fs::read(testdata("events.oracle.json.zst")).expect("oracle");
    let doc: serde_json::Value =
        serde_json::from_slice(&zstd::decode_all(&packed[..]).expect("zstd")).expect("json");
    let events = doc["events"].as_array().expect("events");
    assert_eq!(events.len(), 12_960);
    let path = dir.join("events.json");
    std::fs::write(&path, serde_json::to_vec(events).expect("json")).expect("write");
    path
}

/// Waits (bounded) until getEvents serves through ledger `last`: the
/// daemon indexes events in the background after it opens.
fn wait_indexed(url: &str, last: u32) {
    let req = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "getEvents",
        "params": {"startLedger": FIRST, "pagination": {"limit": 1}}});
    for _ in 0..600 {
        let o = Command::new("curl")
            .args([
                "-sS",
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "-d",
            ])
            .arg(req.to_string())
            .arg(url)
            .output()
            .expect("curl");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        if v["result"]["latestLedger"] == last {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("getEvents did not reach ledger {last} within 60 s");
}

#[tokio::test]
async fn python_and_js_sdks_page_events_as_the_oracle_says() {
    let Some((python, node_modules)) = sdks() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    ingest_fixture(&dir);
    let d = Daemon::start(&dir, &[]).await;
    wait_indexed(&d.jsonrpc, LAST);
    let events = oracle_events(tmp.path());
    let sdk = root().join("crates/ledgerstore/tests/sdk");
    let py = Command::new(&python)
        .arg(sdk.join("events_python.py"))
        .arg(&d.jsonrpc)
        .arg(&events)
        .output()
        .expect("python client");
    assert_all_passed("Python stellar-sdk getEvents", &py, 7);
    let js = Command::new("node")
        .arg(sdk.join("events_js.mjs"))
        .arg(&d.jsonrpc)
        .arg(&events)
        .arg(&node_modules)
        .output()
        .expect("node client");
    assert_all_passed("JS @stellar/stellar-sdk getEvents", &js, 5);
}
