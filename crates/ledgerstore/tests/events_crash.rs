//! The event index under SIGKILL. The daemon indexes the 20 real pubnet
//! ledgers of 2026 in the background, with files of 2 ledgers merged 2 by
//! 2, so a run builds, renames, merges and deletes files; it is killed at
//! random instants of that, over and over. After the last restart the
//! index must answer exactly as the independent event oracle says, and
//! its directory must hold no temporary file and no two files that
//! overlap. `CRASH_SEED` repeats a run.

mod common;
mod daemon_util;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use daemon_util::Daemon;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const FIXTURE: &str = "FC3D4709--63092982-63093001";
const FIRST: u32 = 63_092_982;
const LAST: u32 = 63_093_001;
const KILLS: usize = 8;
const ENV: [(&str, &str); 2] = [
    ("LEDGERSTORE_EVENTS__FILE_LEDGERS", "2"),
    ("LEDGERSTORE_EVENTS__FAN_OUT", "2"),
];

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

fn rpc(url: &str, params: Value) -> Value {
    let req = json!({"jsonrpc": "2.0", "id": 1, "method": "getEvents", "params": params});
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
    serde_json::from_slice(&o.stdout).unwrap_or_default()
}

fn sha16(b64: &Value) -> String {
    let bytes = STANDARD
        .decode(b64.as_str().expect("base64"))
        .expect("base64");
    hex::encode(&Sha256::digest(bytes)[..8])
}

/// Every event the daemon serves, unfiltered, in the oracle's shape.
fn served(url: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut r = rpc(
        url,
        json!({"startLedger": FIRST, "pagination": {"limit": 3000}}),
    );
    for _ in 0..50 {
        let page = &r["result"];
        let events = page["events"].as_array().expect("events");
        for e in events {
            let topics: Vec<String> = e["topic"]
                .as_array()
                .expect("topic")
                .iter()
                .map(sha16)
                .collect();
            out.push(json!({
                "id": e["id"], "ledger": e["ledger"], "type": e["type"],
                "contract": if e["contractId"] == "" { Value::Null } else { e["contractId"].clone() },
                "tx": e["txHash"], "op": e["operationIndex"], "txi": e["transactionIndex"],
                "ok": e["inSuccessfulContractCall"], "topics": topics, "value": sha16(&e["value"]),
            }));
        }
        if events.is_empty() {
            return out;
        }
        let cursor = page["cursor"].clone();
        r = rpc(
            url,
            json!({"pagination": {"cursor": cursor, "limit": 3000}}),
        );
    }
    panic!("paging did not end");
}

fn oracle() -> Vec<Value> {
    let packed = std::fs::read(testdata("events.oracle.json.zst")).expect("oracle");
    let doc: Value =
        serde_json::from_slice(&zstd::decode_all(&packed[..]).expect("zstd")).expect("json");
    doc["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().expect("object").remove("event");
            e
        })
        .collect()
}

/// The names in the events dir (for the log: where each kill landed).
fn listing(events_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(events_dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The index files' ranges; no temporary file may remain, and no two
/// files may overlap.
fn assert_tidy(events_dir: &Path) {
    let mut ranges = Vec::new();
    for entry in std::fs::read_dir(events_dir).expect("events dir") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        assert!(!name.starts_with("tmp"), "a temporary file remains: {name}");
        let Some(range) = name
            .strip_prefix("ev-")
            .and_then(|n| n.strip_suffix(".idx"))
        else {
            continue;
        };
        let (a, b) = range.split_once('-').expect("first-last");
        ranges.push((
            a.parse::<u32>().expect("first"),
            b.parse::<u32>().expect("last"),
        ));
    }
    ranges.sort_unstable();
    assert!(
        !ranges.is_empty(),
        "no index file in {}",
        events_dir.display()
    );
    for w in ranges.windows(2) {
        assert!(w[0].1 < w[1].0, "files {:?} and {:?} overlap", w[0], w[1]);
    }
}

#[tokio::test]
async fn sigkill_while_indexing_events_leaves_an_index_that_answers_as_the_oracle() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let o = common::bin()
        .args(["ingest", "--no-progress", "--data-dir"])
        .arg(&dir)
        .args(common::small_engine_flags())
        .args([
            "--network",
            "pubnet",
            "--events.enabled",
            "false",
            "--stellar-file",
        ])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")))
        .output()
        .expect("ingest");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_127);
    println!("CRASH_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    for _ in 0..KILLS {
        let mut d = Daemon::spawn_with_env(&dir, &[], &ENV);
        let after = rng.random_range(0..300);
        std::thread::sleep(Duration::from_millis(after));
        d.kill();
        println!(
            "killed after {after} ms: {:?}",
            listing(&dir.join("events"))
        );
    }
    let d = Daemon::start_with_env(&dir, &[], &ENV).await;
    let mut indexed = false;
    for _ in 0..600 {
        let r = rpc(
            &d.jsonrpc,
            json!({"startLedger": FIRST, "pagination": {"limit": 1}}),
        );
        if r["result"]["latestLedger"] == LAST {
            indexed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        indexed,
        "the index did not reach ledger {LAST} (CRASH_SEED={seed})"
    );
    let got = served(&d.jsonrpc);
    let want = oracle();
    assert_eq!(got.len(), want.len(), "CRASH_SEED={seed}");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "event {i} (CRASH_SEED={seed})");
    }
    assert_tidy(&dir.join("events"));
    drop(d);
    // `stats` reads the index of the stopped dir: its files, from the
    // first ledger, no damage (the newest ledgers are in memory only).
    let o = common::bin()
        .args(["stats", "--json", "--data-dir"])
        .arg(&dir)
        .output()
        .expect("stats");
    assert!(o.status.success(), "{}", common::stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("stats json");
    let e = &v["events"];
    assert_eq!(e["covered"][0][0], FIRST, "{e}");
    assert!(e["files"].as_u64().is_some_and(|n| n >= 1), "{e}");
    assert_eq!(e["damaged"], json!([]), "{e}");
    assert_eq!(e["problems"], json!([]), "{e}");
    assert_eq!(e["file_ledgers"], 2, "{e}");
}
