//! Real Stellar ledgers end to end: `ledgerstore ingest --stellar-*` and
//! `get tx`, the daemon's raw `LedgerCloseMeta` path through a real gRPC
//! client, and `ledgerstore push --stellar-file`. Every transaction of the
//! real pubnet ledger 53312000 must come back with the exact XDR bytes.

mod common;
mod daemon_util;

use std::path::{Path, PathBuf};

use base64::Engine as _;
use common::*;
use daemon_util::Daemon;
use ledgerstore_db_api::{LedgerInput, TableId, TxPos};
use ledgerstore_proto::v1 as pb;
use ledgerstore_stellar::{Network, ReadLimits, decode_file};
use tokio_stream::StreamExt;
use tonic::Code;

const PUBNET: &str = "FCD285FF--53312000.xdr.zstd";
const TESTNET: &str = "FFFFFC18--999.xdr.zstd";
const STREAM: &str = "load-test-ledgers-v23-standalone.xdr.zstd";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

/// The ledgers of a fixture, extracted in-process (the expected values).
fn expected(name: &str, network: &str) -> Vec<LedgerInput> {
    let bytes = std::fs::read(fixture(name)).expect("fixture");
    let net = Network::parse(network).expect("network");
    decode_file(&bytes, name, &net, ReadLimits::default()).expect("decode")
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The oracle's (hash, apply index, envelope base64), independent of us.
fn oracle() -> Vec<(String, usize, String)> {
    let v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(fixture("FCD285FF--53312000.txs.json")).expect("oracle"),
    )
    .expect("json");
    v["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| {
            (
                t["hash"].as_str().expect("hash").to_string(),
                t["apply_index"].as_u64().expect("index") as usize,
                t["envelope_b64"].as_str().expect("env").to_string(),
            )
        })
        .collect()
}

fn ingest(dir: &Path, source: &[&str]) -> std::process::Output {
    let mut c = bin();
    c.args(["ingest", "--no-progress", "--data-dir"])
        .arg(dir)
        .args(source)
        .args(small_engine_flags());
    run(c)
}

/// `get tx` for every hash at once; checks each against the oracle and the
/// in-process extraction, byte for byte.
fn assert_cli_serves_every_pubnet_tx(dir: &Path) {
    let oracle = oracle();
    let want = &expected(PUBNET, "pubnet")[0];
    let mut c = bin();
    c.args(["get", "tx", "--json", "--data-dir"]).arg(dir);
    c.args(oracle.iter().map(|(h, _, _)| h.as_str()));
    let o = run(c);
    assert!(o.status.success(), "get tx: {}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 163);
    for ((hash, index, env), got) in oracle.iter().zip(&lines) {
        assert_eq!(got["hash"], hash.as_str());
        assert_eq!(got["ledger_seq"], 53_312_000);
        assert_eq!(got["index"].as_u64(), Some(*index as u64));
        assert_eq!(got["envelope"], env.as_str(), "tx {hash}: envelope");
        let t = &want.txs[*index];
        assert_eq!(got["result"], b64(&t.result).as_str(), "tx {hash}: result");
        assert_eq!(got["meta"], b64(&t.meta).as_str(), "tx {hash}: meta");
    }
}

#[test]
fn cli_ingests_the_real_pubnet_ledger_and_serves_every_tx() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("data");
    let file = fixture(PUBNET);
    let o = ingest(
        &d,
        &[
            "--stellar-file",
            file.to_str().expect("utf8"),
            "--network",
            "pubnet",
        ],
    );
    assert!(o.status.success(), "ingest: {}\n{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("1 ledgers, 163 txs"), "{out}");
    assert!(out.contains("LedgerCloseMetaBatch"), "{out}");
    assert_cli_serves_every_pubnet_tx(&d);

    // The ledger lists the hashes in apply order, and keeps its raw bytes.
    let o = run({
        let mut c = bin();
        c.args(["get", "ledger", "53312000", "--json", "--data-dir"])
            .arg(&d);
        c
    });
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["tx_count"], 163);
    assert_eq!(v["raw_bytes"], 372_492 - 12);
    let order: Vec<String> = oracle().into_iter().map(|(h, _, _)| h).collect();
    assert_eq!(v["tx_hashes"], serde_json::json!(order));

    // Idempotent: a re-run resumes after the mark and writes nothing.
    let o = ingest(
        &d,
        &[
            "--stellar-file",
            file.to_str().expect("utf8"),
            "--network",
            "pubnet",
        ],
    );
    assert!(o.status.success(), "rerun: {}", stderr(&o));
    let checked = assert_check_passes(&d);
    assert!(checked.contains("163"), "{checked}");
}

#[test]
fn cli_refuses_a_wrong_network_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = dir.path().join("data");
    let file = fixture(PUBNET);
    let o = ingest(
        &d,
        &[
            "--stellar-file",
            file.to_str().expect("utf8"),
            "--network",
            "testnet",
        ],
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("ledger 53312000") && err.contains("tx_processing[0]"),
        "{err}"
    );
    assert!(err.contains("nothing is durable"), "{err}");
    let o = run({
        let mut c = bin();
        c.args(["get", "ledger", "53312000", "--data-dir"]).arg(&d);
        c
    });
    assert!(!o.status.success());
    // No --network at all is refused before reading anything.
    let o = ingest(&d, &["--stellar-file", file.to_str().expect("utf8")]);
    assert!(
        stderr(&o).contains("--network is required"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn cli_reads_a_data_lake_and_stops_at_a_gap_in_a_stream() {
    let dir = tempfile::tempdir().expect("tmp");
    // A SEP-54 lake holding the real testnet ledger, with its manifest: no
    // --network needed.
    let lake = dir.path().join("lake");
    let part = lake.join("FFFFFFFF--0-63999");
    std::fs::create_dir_all(&part).expect("mkdir");
    std::fs::copy(fixture(TESTNET), part.join(TESTNET)).expect("copy");
    std::fs::write(
        lake.join(".config.json"),
        r#"{"networkPassphrase": "Test SDF Network ; September 2015"}"#,
    )
    .expect("manifest");
    let d = dir.path().join("lake-data");
    let o = ingest(&d, &["--stellar-datalake", lake.to_str().expect("utf8")]);
    assert!(o.status.success(), "lake: {}\n{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("1 ledgers, 3 txs"), "{}", stdout(&o));
    for t in &expected(TESTNET, "testnet")[0].txs {
        let mut c = bin();
        c.args(["get", "tx", "--json", "--data-dir"])
            .arg(&d)
            .arg(hex_of(&t.hash));
        let v: serde_json::Value = serde_json::from_str(&stdout(&run(c))).expect("json");
        assert_eq!(v["envelope"], b64(&t.envelope).as_str());
        assert_eq!(v["meta"], b64(&t.meta).as_str());
    }

    // The real load-test stream jumps ledgers: what precedes the gap is
    // committed, the gap is refused by name, and the rest can go elsewhere.
    let ledgers = expected(STREAM, "standalone");
    let (a, b, c) = (ledgers[0].seq, ledgers[1].seq, ledgers[2].seq);
    let stream = fixture(STREAM);
    let s = dir.path().join("stream-data");
    let args = [
        "--stellar-file",
        stream.to_str().expect("utf8"),
        "--network",
        "standalone",
    ];
    let o = ingest(&s, &args);
    assert!(!o.status.success(), "a gap must fail");
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "holds ledger {c}, but the ledger before it was {b}"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("ledgers through {b} are durable")),
        "{err}"
    );
    let store = open_store(&s);
    assert_eq!(store.last_ledger(), Some(b));
    assert_eq!(store.mark().first, Some(a));
    drop(store);
    // A --from past the mark would leave a gap in the store: refused.
    let o = ingest(&s, &[&args[..], &["--from", &c.to_string()]].concat());
    assert!(stderr(&o).contains("would leave a gap"), "{}", stderr(&o));
    let s2 = dir.path().join("stream-data-2");
    let o = ingest(&s2, &[&args[..], &["--from", &c.to_string()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let want = &ledgers[2];
    let store = open_store(&s2);
    assert_eq!(store.last_ledger(), Some(c));
    for t in &want.txs {
        let got = store
            .get_tx(&ledgerstore_db_api::TxHash::from_slice(&t.hash).expect("32"))
            .expect("read")
            .expect("present");
        assert_eq!(
            (got.envelope, got.result, got.meta),
            (t.envelope.to_vec(), t.result.to_vec(), t.meta.to_vec())
        );
    }
}

fn hex_of(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn stellar_req(raw: impl Into<Vec<u8>>, network: &str) -> pb::IngestRequest {
    pb::IngestRequest {
        mode: pb::IngestMode::Live as i32,
        stellar_ledgers: vec![pb::StellarLedger {
            ledger_close_meta: raw.into(),
        }],
        stellar_network: network.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_takes_raw_ledger_close_meta_and_serves_exact_xdr() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = Daemon::start(dir.path(), &[]).await;
    let want = expected(PUBNET, "pubnet").remove(0);

    // Bad input first: nothing of it may become visible.
    let mut cut = want.raw.clone();
    cut.truncate(cut.len() / 2);
    let cases: Vec<(pb::IngestRequest, Code, &[&str])> = vec![
        (
            stellar_req(cut, ""),
            Code::InvalidArgument,
            &["stellar_ledgers[0]", "LedgerCloseMeta", "truncated"],
        ),
        (
            stellar_req(b"garbage".to_vec(), ""),
            Code::InvalidArgument,
            &["stellar_ledgers[0]", "ledger_close_meta"],
        ),
        (
            stellar_req(want.raw.clone(), "testnet"),
            Code::InvalidArgument,
            &["ledger 53312000", "tx_processing[0]", "Test SDF Network"],
        ),
        (
            stellar_req(want.raw.clone(), "testnett"),
            Code::InvalidArgument,
            &["stellar_network", "\"testnett\""],
        ),
        (
            // Any other string is a passphrase: the wrong one is named.
            stellar_req(want.raw.clone(), "Apply Load"),
            Code::InvalidArgument,
            &["ledger 53312000", "tx_processing[0]", "Apply Load"],
        ),
        (
            pb::IngestRequest {
                ledgers: vec![pb::Ledger::default()],
                ..stellar_req(want.raw.clone(), "")
            },
            Code::InvalidArgument,
            &["either ledgers or stellar_ledgers"],
        ),
    ];
    for (req, code, words) in cases {
        let (_, status) = d.ingest_stream(None, vec![req]).await;
        let s = status.expect("refused");
        assert_eq!(s.code(), code, "{}", s.message());
        for w in words {
            assert!(s.message().contains(w), "{w:?} not in {:?}", s.message());
        }
    }
    let mut q = d.query().await;
    let st = d.status().await;
    assert!(!st.has_durable_ledger, "a refused request left data behind");

    // The real ledger as raw bytes, the daemon's default network (pubnet).
    let (acks, status) = d
        .ingest_stream(None, vec![stellar_req(want.raw.clone(), "")])
        .await;
    assert!(status.is_none(), "{status:?}");
    assert_eq!(acks.last().map(|a| a.durable_ledger), Some(53_312_000));

    let hashes: Vec<Vec<u8>> = want.txs.iter().map(|t| t.hash.clone()).collect();
    let r = q
        .batch_get_transactions(pb::BatchGetTransactionsRequest { hashes })
        .await
        .expect("batch get")
        .into_inner();
    assert_eq!(r.results.len(), 163);
    let oracle = oracle();
    for (i, (got, t)) in r.results.iter().zip(&want.txs).enumerate() {
        assert!(got.found, "tx {i}");
        let rec = got.record.as_ref().expect("record");
        assert_eq!(rec.index as usize, i);
        assert_eq!(rec.ledger_seq, 53_312_000);
        assert_eq!(rec.envelope, t.envelope, "tx {i} envelope");
        assert_eq!(rec.result, t.result, "tx {i} result");
        assert_eq!(rec.meta, t.meta, "tx {i} meta");
        assert_eq!(hex_of(&rec.hash), oracle[i].0);
        assert_eq!(b64(&rec.envelope), oracle[i].2);
    }
    let one = q
        .get_transaction(pb::GetTransactionRequest {
            hash: want.txs[7].hash.clone(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(one.meta, want.txs[7].meta);
    let l = q
        .get_ledger(pb::GetLedgerRequest {
            seq: 53_312_000,
            omit_raw: false,
        })
        .await
        .expect("ledger")
        .into_inner();
    assert_eq!(l.raw, want.raw);

    // Re-sent: acknowledged, not duplicated.
    let (acks, status) = d
        .ingest_stream(None, vec![stellar_req(want.raw.clone(), "pubnet")])
        .await;
    assert!(status.is_none(), "{status:?}");
    assert_eq!(acks.last().map(|a| a.skipped_ledgers), Some(1));
    let st = d.status().await;
    assert_eq!(st.transactions, 163);
    let m = d.metrics_text();
    assert!(
        m.contains("ledgerstore_stellar_ledgers_total{result=\"extracted\"} 2"),
        "{m}"
    );
    assert!(
        m.contains("ledgerstore_stellar_ledgers_total{result=\"refused\"} 4"),
        "{m}"
    );
    assert!(
        m.contains("ledgerstore_stellar_extract_seconds_count 6"),
        "{m}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_sends_stellar_files_to_the_daemon() {
    let dir = tempfile::tempdir().expect("tmp");
    let d = Daemon::start(dir.path(), &["--stellar.network", "testnet"]).await;
    let file = fixture(TESTNET);
    let mut c = bin();
    c.args(["push", "--endpoint", &d.grpc, "--stellar-file"])
        .arg(&file)
        .args(["--network", "testnet"]);
    let o = tokio::task::spawn_blocking(move || run(c))
        .await
        .expect("join");
    assert!(o.status.success(), "push: {}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("done: ledgers 999..=999 durable"),
        "{}",
        stdout(&o)
    );
    let want = expected(TESTNET, "testnet").remove(0);
    let mut c = bin();
    c.args(["tx", "--json", "--endpoint", &d.grpc])
        .arg(hex_of(&want.txs[2].hash));
    let o = tokio::task::spawn_blocking(move || run(c))
        .await
        .expect("join");
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["envelope"], b64(&want.txs[2].envelope).as_str());
    assert_eq!(v["result"], b64(&want.txs[2].result).as_str());
    assert_eq!(v["index"], 2);
}

/// A ledger's seq, hashes and aliases (index, hash), as compared.
type Head = (u32, Vec<Vec<u8>>, Vec<(u32, Vec<u8>)>);

/// GetLedger and StreamLedgers with `omit_raw` answer from the ledger's
/// record: the same hashes, fee bumps' inner hashes (aliases) and close
/// time as the ledger itself, for whole records (`hybrid`) and skeletons
/// (`indexed`), on the 20 real protocol-26 ledgers (598 fee bumps).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledgers_without_raw_carry_the_hashes_and_aliases_of_the_whole_ledger() {
    const TWENTY: &str = "FC3D4709--63092982-63093001.xdr.zst";
    let want = expected(TWENTY, "pubnet");
    let (first, last) = (want[0].seq, want[want.len() - 1].seq);
    let aliases = |l: &LedgerInput| -> Vec<(u32, Vec<u8>)> {
        let txs = l.txs.iter().enumerate();
        txs.filter_map(|(i, t)| Some((i as u32, t.alias.clone()?)))
            .collect()
    };
    assert_eq!(want.iter().map(|l| aliases(l).len()).sum::<usize>(), 598);
    let of = |r: &pb::LedgerRecord| -> Head {
        let a = r.aliases.iter().map(|a| (a.index, a.hash.clone()));
        (r.seq, r.tx_hashes.clone(), a.collect())
    };
    for layout in ["indexed", "hybrid"] {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("data");
        let file = fixture(TWENTY);
        let file = file.to_str().expect("utf-8");
        let args = [
            "--layout",
            layout,
            "--network",
            "pubnet",
            "--stellar-file",
            file,
        ];
        let o = ingest(&dir, &args);
        assert!(o.status.success(), "{layout}: {}", stderr(&o));
        // A body of ledger `lost` is gone: where the record is a skeleton
        // that ledger can no longer be put back whole, but its record
        // still answers without its raw bytes.
        let lost = want[5].seq;
        if layout == "indexed" {
            let store = open_store(&dir);
            let mut w = store.table(TableId::TxData).begin_write().expect("begin");
            let key = TxPos {
                seq: lost,
                index: 3,
            }
            .to_bytes();
            w.delete(&key).expect("delete");
            w.finish().expect("finish");
            w.commit().expect("commit");
            store.close().expect("close");
        }
        let mut d = Daemon::start(&dir, &["--events.enabled", "false"]).await;
        let mut q = d.query().await;
        let mut heads = Vec::new();
        for l in &want {
            let hashes: Vec<Vec<u8>> = l.txs.iter().map(|t| t.hash.clone()).collect();
            let expect = (l.seq, hashes, aliases(l));
            for omit_raw in [false, true] {
                let req = pb::GetLedgerRequest {
                    seq: l.seq,
                    omit_raw,
                };
                if layout == "indexed" && l.seq == lost && !omit_raw {
                    let e = q.get_ledger(req).await.expect_err("a body is gone");
                    assert_eq!(e.code(), Code::DataLoss, "{}", e.message());
                    assert!(e.message().contains(&lost.to_string()), "{}", e.message());
                    continue;
                }
                let got = q.get_ledger(req).await.expect("ledger").into_inner();
                assert_eq!(
                    of(&got),
                    expect,
                    "{layout} ledger {} omit_raw {omit_raw}",
                    l.seq
                );
                assert_eq!(got.close_time, l.close_time, "{layout} {omit_raw}");
                let raw: &[u8] = if omit_raw { &[] } else { &l.raw };
                assert!(
                    got.raw == raw,
                    "{layout} ledger {} omit_raw {omit_raw}",
                    l.seq
                );
            }
            heads.push(expect);
        }
        let req = pb::StreamLedgersRequest {
            start: first,
            end: last,
            omit_raw: true,
        };
        let mut st = q.stream_ledgers(req).await.expect("stream").into_inner();
        let mut streamed = Vec::new();
        while let Some(l) = st.next().await {
            let l = l.expect("ledger");
            assert!(l.raw.is_empty(), "{layout} ledger {}", l.seq);
            streamed.push(of(&l));
        }
        assert_eq!(streamed, heads, "{layout}");
        let (clean, log) = d.terminate();
        assert!(clean, "{log}");
    }
}
