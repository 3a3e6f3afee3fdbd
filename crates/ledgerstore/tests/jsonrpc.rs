//! The Stellar RPC (JSON-RPC 2.0) endpoint of the real daemon, loaded with
//! the 20 real pubnet ledgers and checked against their independent
//! oracle: exact JSON types (string vs number close times and
//! `createdAt`), error codes, batches, the request size limit, XDR-JSON,
//! and a data dir of synthetic ledgers. Requests go through curl, a stock
//! HTTP client. The official SDKs' runs are in `jsonrpc_sdk.rs`.

mod common;
mod daemon_util;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use daemon_util::Daemon;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::common::bin;

const FIXTURE: &str = "FC3D4709--63092982-63093001";
const FIRST: u64 = 63_092_982;
const LAST: u64 = 63_093_001;
const TXS: usize = 5_188;

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

fn oracle() -> Value {
    let text =
        std::fs::read_to_string(testdata(&format!("{FIXTURE}.oracle.json"))).expect("oracle");
    serde_json::from_str(&text).expect("oracle json")
}

/// Ingests the 20 ledgers into `dir` with the CLI.
fn load(dir: &Path, layout: &str) {
    let o = bin()
        .args(["ingest", "--no-progress", "--layout", layout, "--data-dir"])
        .arg(dir)
        .args(common::small_engine_flags())
        .args(["--network", "pubnet", "--stellar-file"])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")))
        .output()
        .expect("ingest");
    assert!(
        o.status.success(),
        "ingest: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// POSTs `body` with curl; (HTTP status, body).
fn post(url: &str, body: &[u8]) -> (u16, String) {
    let mut c = Command::new("curl")
        .args(["-sS", "-X", "POST", "-H", "Content-Type: application/json"])
        .args(["--data-binary", "@-", "-w", "\n%{http_code}", url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("curl (installed by scripts/setup.sh)");
    c.stdin
        .take()
        .expect("stdin")
        .write_all(body)
        .expect("write body");
    let o = c.wait_with_output().expect("curl");
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let (body, code) = text.rsplit_once('\n').expect("status line");
    (code.trim().parse().expect("http code"), body.to_string())
}

/// One call; the whole JSON-RPC response.
fn call(url: &str, method: &str, params: Value) -> Value {
    let req = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (code, body) = post(url, req.to_string().as_bytes());
    assert_eq!(code, 200, "{method}: HTTP {code}: {body}");
    let v: Value = serde_json::from_str(&body).expect("json response");
    assert_eq!(v["jsonrpc"], "2.0");
    assert_eq!(v["id"], 7);
    v
}

fn result(url: &str, method: &str, params: Value) -> Value {
    let v = call(url, method, params);
    assert!(v.get("error").is_none(), "{method}: {v}");
    v["result"].clone()
}

/// The error code and message of a call that must fail.
fn error(url: &str, method: &str, params: Value) -> (i64, String) {
    let v = call(url, method, params);
    let e = v
        .get("error")
        .unwrap_or_else(|| panic!("{method} must fail: {v}"));
    (
        e["code"].as_i64().expect("code"),
        e["message"].as_str().expect("message").to_string(),
    )
}

fn sha_b64(v: &Value) -> String {
    let bytes = STANDARD
        .decode(v.as_str().expect("base64 string"))
        .expect("base64");
    hex::encode(Sha256::digest(bytes))
}

fn is_decimal_string(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
}

/// Checks one transaction of getTransaction or getTransactions against
/// the oracle's entry.
fn check_tx(got: &Value, want: &Value) {
    let at = &want["hash"];
    assert_eq!(got["status"], want["status"], "{at}");
    assert_eq!(got["applicationOrder"], want["application_order"], "{at}");
    assert_eq!(got["feeBump"], want["fee_bump"], "{at}");
    assert_eq!(got["ledger"], want["ledger"], "{at}");
    assert_eq!(
        sha_b64(&got["envelopeXdr"]),
        want["envelope_sha256"],
        "{at}"
    );
    assert_eq!(sha_b64(&got["resultXdr"]), want["result_sha256"], "{at}");
    assert_eq!(sha_b64(&got["resultMetaXdr"]), want["meta_sha256"], "{at}");
    assert!(got["events"].is_object(), "{at}: events {}", got["events"]);
}

#[tokio::test]
async fn stellar_rpc_answers_with_stellar_rpc_shapes_and_codes() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    load(&dir, "indexed");
    let d = Daemon::start(&dir, &[]).await;
    let url = d.jsonrpc.clone();
    let oracle = oracle();
    let ledgers = oracle["ledgers"].as_array().expect("ledgers");
    let txs = oracle["txs"].as_array().expect("txs");
    let close = |seq: u64| {
        ledgers[(seq - FIRST) as usize]["close_time"]
            .as_u64()
            .expect("ct")
    };

    // getHealth: close times are strings, the rest numbers.
    let h = result(&url, "getHealth", json!({}));
    assert_eq!(h["status"], "healthy");
    assert_eq!(h["latestLedger"], LAST);
    assert_eq!(h["oldestLedger"], FIRST);
    assert_eq!(h["ledgerRetentionWindow"], 20);
    assert_eq!(h["latestLedgerCloseTime"], close(LAST).to_string());
    assert_eq!(h["oldestLedgerCloseTime"], close(FIRST).to_string());

    let n = result(&url, "getNetwork", Value::Null);
    assert_eq!(
        n["passphrase"],
        "Public Global Stellar Network ; September 2015"
    );
    assert_eq!(n["protocolVersion"], 26);
    let v = result(&url, "getVersionInfo", json!({}));
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["protocolVersion"], 26);
    for k in ["commitHash", "buildTimestamp", "captiveCoreVersion"] {
        assert!(v[k].is_string(), "{k}: {v}");
    }

    // getLatestLedger: a bare LedgerHeader, the whole LedgerCloseMeta.
    let l = result(&url, "getLatestLedger", json!({}));
    let last = &ledgers[19];
    assert_eq!(l["id"], last["hash"]);
    assert_eq!(l["sequence"], LAST);
    assert_eq!(l["protocolVersion"], 26);
    assert_eq!(l["closeTime"], close(LAST).to_string());
    assert_eq!(sha_b64(&l["metadataXdr"]), last["lcm_sha256"]);
    use stellar_xdr::{LedgerHeader, Limits, ReadXdr};
    let hb = STANDARD
        .decode(l["headerXdr"].as_str().expect("headerXdr"))
        .expect("b64");
    let header = LedgerHeader::from_xdr(&hb, Limits::none()).expect("a LedgerHeader");
    assert_eq!(u64::from(header.ledger_seq), LAST);

    // getTransaction: SUCCESS, FAILED, a fee bump, NOT_FOUND.
    let pick = |f: &dyn Fn(&Value) -> bool| txs.iter().find(|t| f(t)).expect("oracle has one");
    let success = pick(&|t| t["status"] == "SUCCESS" && t["fee_bump"] == false);
    let failed = pick(&|t| t["status"] == "FAILED");
    let bump = pick(&|t| t["fee_bump"] == true);
    for want in [success, failed, bump] {
        let hash = want["hash"].as_str().expect("hash");
        let got = result(&url, "getTransaction", json!({"hash": hash}));
        check_tx(&got, want);
        assert_eq!(got["txHash"], hash);
        let ledger = want["ledger"].as_u64().expect("ledger");
        assert_eq!(
            got["createdAt"],
            close(ledger).to_string(),
            "createdAt is a string here"
        );
        assert_eq!(got["latestLedger"], LAST);
        assert_eq!(got["latestLedgerCloseTime"], close(LAST).to_string());
        assert_eq!(got["oldestLedgerCloseTime"], close(FIRST).to_string());
    }
    // A fee bump by its inner hash: the fee bump itself, with `txHash` the
    // hash asked for, as stellar-rpc answers.
    let inner = bump["inner_hash"].as_str().expect("inner hash");
    let got = result(&url, "getTransaction", json!({"hash": inner}));
    check_tx(&got, bump);
    assert_eq!(got["txHash"], inner);
    assert_eq!(got["feeBump"], true);

    let missing = "ab".repeat(32);
    let nf = result(&url, "getTransaction", json!({"hash": missing}));
    assert_eq!(nf["status"], "NOT_FOUND");
    assert_eq!(nf["txHash"], missing);
    assert_eq!(nf["latestLedger"], LAST);
    assert_eq!(nf["oldestLedger"], FIRST);
    assert_eq!(nf["oldestLedgerCloseTime"], close(FIRST).to_string());
    assert!(nf.get("envelopeXdr").is_none(), "{nf}");

    // XDR-JSON twins instead of base64.
    let j = result(
        &url,
        "getTransaction",
        json!({"hash": bump["hash"], "xdrFormat": "json"}),
    );
    assert!(
        j["envelopeJson"]["tx_fee_bump"].is_object(),
        "{}",
        j["envelopeJson"]
    );
    assert!(j["resultJson"]["result"].is_object(), "{}", j["resultJson"]);
    assert!(j["resultMetaJson"].is_object());
    assert!(j.get("envelopeXdr").is_none());

    // Bad params: -32602, naming what is wrong.
    let (code, msg) = error(&url, "getTransaction", json!({"hash": "abc"}));
    assert_eq!(code, -32602);
    assert!(msg.contains("unexpected hash length (3)"), "{msg}");
    let (code, msg) = error(&url, "getTransaction", json!({"hash": "zz".repeat(32)}));
    assert_eq!(
        (code, msg.contains("incorrect hash")),
        (-32602, true),
        "{msg}"
    );
    let (code, msg) = error(
        &url,
        "getTransaction",
        json!({"hash": missing, "xdrFormat": "xml"}),
    );
    assert_eq!(code, -32602);
    assert!(msg.contains("got 'xml': expected base64, json"), "{msg}");
    let (code, _) = error(&url, "getTransaction", json!([missing]));
    assert_eq!(code, -32602, "positional params");

    // getTransactions: range and limit errors are -32600.
    let (code, msg) = error(&url, "getTransactions", json!({"startLedger": FIRST - 1}));
    assert_eq!(code, -32600);
    assert!(
        msg.contains(&format!(
            "oldest ledger: {FIRST} and the latest ledger: {LAST}"
        )),
        "{msg}"
    );
    let (code, msg) = error(
        &url,
        "getTransactions",
        json!({"startLedger": FIRST, "pagination": {"limit": 201}}),
    );
    assert_eq!((code, msg.as_str()), (-32600, "limit must not exceed 200"));
    let (code, msg) = error(
        &url,
        "getTransactions",
        json!({"startLedger": FIRST, "pagination": {"cursor": "1"}}),
    );
    assert_eq!(code, -32600);
    assert!(msg.contains("cannot both be set"), "{msg}");
    let (code, _) = error(
        &url,
        "getTransactions",
        json!({"pagination": {"cursor": "x1"}}),
    );
    assert_eq!(code, -32602, "bad cursor");

    // Every transaction exactly once, in order, by cursor.
    let by_hash: HashMap<&str, &Value> = txs
        .iter()
        .map(|t| (t["hash"].as_str().expect("h"), t))
        .collect();
    let mut seen = Vec::new();
    let mut params = json!({"startLedger": FIRST, "pagination": {"limit": 200}});
    for _ in 0..40 {
        let page = result(&url, "getTransactions", params);
        assert!(
            page["latestLedgerCloseTimestamp"].is_u64(),
            "a number here: {}",
            page["latestLedgerCloseTimestamp"]
        );
        assert!(page["oldestLedgerCloseTimestamp"].is_u64());
        assert!(is_decimal_string(&page["cursor"]), "{}", page["cursor"]);
        let items = page["transactions"].as_array().expect("transactions");
        if items.is_empty() {
            break;
        }
        for t in items {
            let hash = t["txHash"].as_str().expect("txHash");
            let want = by_hash
                .get(hash)
                .unwrap_or_else(|| panic!("unknown tx {hash}"));
            check_tx(t, want);
            assert!(
                t["createdAt"].is_u64(),
                "createdAt is a number here: {}",
                t["createdAt"]
            );
            seen.push(hash.to_string());
        }
        params = json!({"pagination": {"cursor": page["cursor"], "limit": 200}});
    }
    let want: Vec<&str> = txs.iter().map(|t| t["hash"].as_str().expect("h")).collect();
    assert_eq!(seen.len(), TXS);
    assert_eq!(
        seen, want,
        "every transaction once, in ledger and application order"
    );
    // The first page's cursor is stellar-rpc's TOID of its last item.
    let p = result(
        &url,
        "getTransactions",
        json!({"startLedger": FIRST, "pagination": {"limit": 1}}),
    );
    assert_eq!(p["cursor"], ((FIRST << 32) | (1 << 12) | 1).to_string());

    // getLedgers, paged by cursor.
    let mut got = Vec::new();
    let mut params = json!({"startLedger": FIRST, "pagination": {"limit": 7}});
    for _ in 0..10 {
        let page = result(&url, "getLedgers", params);
        assert!(page["latestLedgerCloseTime"].is_u64(), "a number here");
        let items = page["ledgers"].as_array().expect("ledgers").clone();
        if items.is_empty() {
            break;
        }
        got.extend(items);
        params = json!({"pagination": {"cursor": page["cursor"], "limit": 7}});
    }
    assert_eq!(got.len(), 20);
    for (g, w) in got.iter().zip(ledgers) {
        assert_eq!(g["sequence"], w["seq"]);
        assert_eq!(g["hash"], w["hash"]);
        assert_eq!(
            g["ledgerCloseTime"],
            w["close_time"].as_u64().expect("ct").to_string()
        );
        assert_eq!(sha_b64(&g["headerXdr"]), w["header_history_entry_sha256"]);
        assert_eq!(sha_b64(&g["metadataXdr"]), w["lcm_sha256"]);
    }
    let j = result(
        &url,
        "getLedgers",
        json!({"startLedger": LAST, "xdrFormat": "json"}),
    );
    assert_eq!(j["ledgers"][0]["headerXdr"], "");
    assert_eq!(j["ledgers"][0]["headerJson"]["header"]["ledger_seq"], LAST);
    let (code, _) = error(&url, "getLedgers", json!({"startLedger": LAST + 1}));
    assert_eq!(code, -32600);

    // Batches: one response per call, by id.
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "getHealth"},
        {"jsonrpc": "2.0", "id": 2, "method": "getTransaction", "params": {"hash": success["hash"]}},
        {"jsonrpc": "2.0", "id": 3, "method": "noSuchMethod"},
    ]);
    let (code, body) = post(&url, batch.to_string().as_bytes());
    assert_eq!(code, 200, "{body}");
    let answers: Vec<Value> = serde_json::from_str(&body).expect("batch answer");
    let by_id: HashMap<i64, &Value> = answers
        .iter()
        .map(|a| (a["id"].as_i64().expect("id"), a))
        .collect();
    assert_eq!(by_id.len(), 3);
    assert_eq!(by_id[&1]["result"]["status"], "healthy");
    assert_eq!(by_id[&2]["result"]["status"], success["status"]);
    assert_eq!(by_id[&3]["error"]["code"], -32601);

    // A request over 512 KiB is refused whole.
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "getHealth",
        "params": {"pad": "x".repeat(600 << 10)}});
    let (code, _) = post(&url, big.to_string().as_bytes());
    assert_eq!(code, 413, "an oversized request");

    // Per-method metrics.
    let m = d.metrics_text();
    assert!(
        m.contains(r#"jsonrpc_server_handled_total{code="0",method="getTransaction"}"#),
        "{m}"
    );
    assert!(m.contains(r#"jsonrpc_server_handled_total{code="-32602",method="getTransaction"}"#));
}

/// A data dir of synthetic (non-Stellar) ledgers answers with an error
/// that says why, never a malformed result.
#[tokio::test]
async fn synthetic_data_is_refused_with_a_reason() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let o = common::ingest_cmd(&dir, "hybrid", 3, 3, 1)
        .output()
        .expect("ingest");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = Daemon::start(&dir, &[]).await;
    for method in ["getHealth", "getLatestLedger", "getNetwork"] {
        let (code, msg) = error(&d.jsonrpc, method, json!({}));
        assert_eq!(code, -32603, "{method}");
        assert!(
            msg.contains("not a Stellar LedgerCloseMeta"),
            "{method}: {msg}"
        );
        assert!(msg.contains("synthetic"), "{method}: {msg}");
    }
}

/// Every fee bump is found by its inner hash in every layout, after a
/// backup and a restore (which runs `check`), and `check` counts the
/// inner hashes as aliases.
#[test]
fn fee_bumps_are_found_by_inner_hash_in_every_layout_after_backup_and_restore() {
    let oracle = oracle();
    let bumps: Vec<&Value> = oracle["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .filter(|t| t["fee_bump"] == true)
        .collect();
    assert_eq!(bumps.len(), 598);
    for layout in ["hybrid", "rocksdb-tuned", "rocksdb", "indexed"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        load(&dir, layout);
        let backup = tmp.path().join("backup");
        let o = bin()
            .args(["backup", "--to"])
            .arg(&backup)
            .arg("--data-dir")
            .arg(&dir)
            .output()
            .expect("backup");
        assert!(o.status.success(), "{layout}: {}", common::stderr(&o));
        let restored = tmp.path().join("restored");
        let o = bin()
            .args(["restore", "--from"])
            .arg(&backup)
            .arg("--to")
            .arg(&restored)
            .output()
            .expect("restore");
        assert!(
            o.status.success(),
            "{layout}: {}{}",
            common::stdout(&o),
            common::stderr(&o)
        );
        let store = common::open_store(&restored);
        let report = store.check().expect("check");
        assert_eq!(report.problem_count, 0, "{layout}: {:?}", report.problems);
        assert_eq!((report.txs, report.aliases), (TXS as u64, 598), "{layout}");
        let inner: Vec<_> = bumps
            .iter()
            .map(|t| {
                let h = hex::decode(t["inner_hash"].as_str().expect("inner")).expect("hex");
                ledgerstore_db_api::TxHash::from_slice(&h).expect("32 bytes")
            })
            .collect();
        let found = store.batch_get_txs(&inner).expect("batch get");
        for (t, rec) in bumps.iter().zip(found) {
            let rec =
                rec.unwrap_or_else(|| panic!("{layout}: inner hash of {} not found", t["hash"]));
            // The fee bump itself: its pair names the outer hash.
            assert_eq!(hex::encode(&rec.result[..32]), t["hash"], "{layout}");
            assert_eq!(
                u64::from(rec.ledger_seq),
                t["ledger"].as_u64().expect("ledger")
            );
            assert_eq!(
                u64::from(rec.index) + 1,
                t["application_order"].as_u64().expect("order")
            );
            assert_eq!(
                hex::encode(Sha256::digest(&rec.envelope)),
                t["envelope_sha256"]
            );
        }
        let one = &inner[0];
        assert!(store.get_tx(one).expect("get").is_some(), "{layout}");
        assert_eq!(
            store.get_tx_ledger(one).expect("ledger").map(u64::from),
            bumps[0]["ledger"].as_u64(),
            "{layout}"
        );
    }
}
