//! Operations end to end: gRPC health through the CLI, an online backup
//! (Admin.Backup) taken from the real daemon while a client streams
//! ledgers, restore + check of that backup, and `check` naming deliberate
//! damage precisely.

mod common;
mod daemon_util;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use daemon_util::Daemon;
use ledgerstore_db_api::TableId;
use ledgerstore_proto::v1 as pb;
use tonic::Request;

const TOKEN: &str = "ops-token";

async fn durable(d: &Daemon) -> Option<u32> {
    let mut c = pb::ingest_client::IngestClient::new(d.channel().await);
    let mut req = Request::new(pb::GetIngestStateRequest {});
    req.metadata_mut().insert(
        "authorization",
        format!("Bearer {TOKEN}").parse().expect("ascii"),
    );
    let s = c.get_ingest_state(req).await.expect("state").into_inner();
    s.has_durable_ledger.then_some(s.durable_ledger)
}

fn put_raw(store: &ledgerstore_store::Ledgerstore, t: TableId, key: &[u8], value: Option<&[u8]>) {
    let mut w = store.table(t).begin_write().expect("begin");
    match value {
        Some(v) => w.put(key, v).expect("put"),
        None => w.delete(key).expect("delete"),
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn online_backup_during_ingest_restores_checks_clean_and_damage_is_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut d = Daemon::start(
        &tmp.path().join("data"),
        // hybrid: the damage below is written into its hash-keyed tables.
        &[
            "--layout",
            "hybrid",
            "--ingest.bulk-batch-ledgers",
            "10",
            "--ingest.token",
            TOKEN,
        ],
    )
    .await;

    let o = bin()
        .args([
            "health",
            "--endpoint",
            &d.grpc,
            "--service",
            "ledgerstore.v1.Query",
        ])
        .output()
        .expect("health");
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "ledgerstore.v1.Query: SERVING");

    // A client streams 300 ledgers while we back up.
    let push = bin()
        .args([
            "push",
            "--synthetic",
            "--endpoint",
            &d.grpc,
            "--token",
            TOKEN,
        ])
        .args([
            "--ledgers",
            "300",
            "--request-ledgers",
            "5",
            "--interval-ms",
            "20",
        ])
        .args(["--tx-per-ledger", &TX_PER_LEDGER.to_string()])
        .args(["--tx-bytes", &TX_BYTES.to_string()])
        .args(["--ledger-bytes", &LEDGER_BYTES.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("push");
    let mut waited = 0;
    while durable(&d).await.is_none_or(|m| m < 20) {
        assert!(waited < 300, "no ledger became durable within 30 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
        waited += 1;
    }

    let backup = tmp.path().join("backup");
    let b = backup.to_str().expect("utf-8");
    let o = bin()
        .args(["backup", "--to", b, "--endpoint", &d.grpc])
        .output()
        .expect("backup");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("missing ingest token"),
        "{}",
        stderr(&o)
    );
    let o = bin()
        .args([
            "backup",
            "--to",
            b,
            "--endpoint",
            &d.grpc,
            "--token",
            TOKEN,
            "--json",
        ])
        .output()
        .expect("backup");
    assert!(o.status.success(), "{}", stderr(&o));
    let info: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    let mark = info["mark"].as_u64().expect("a mark") as u32;
    let during = durable(&d).await.is_none_or(|m| m < 300);
    let pushed = push.wait_with_output().expect("push ends");
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    eprintln!("backup cut at ledger {mark}; ingest still running after it: {during}");

    let restored = tmp.path().join("restored");
    let o = bin()
        .args([
            "restore",
            "--from",
            b,
            "--to",
            restored.to_str().expect("utf-8"),
        ])
        .output()
        .expect("restore");
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("mark {mark}")),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains("OK: every record decodes"),
        "{}",
        stdout(&o)
    );

    // The copy holds exactly the daemon's ledgers up to the mark.
    let mut q = d.query().await;
    {
        let store = open_store(&restored);
        assert_eq!(store.last_ledger(), Some(mark));
        let first = store.mark().first.expect("first");
        for seq in [first, mark] {
            let live = q
                .get_ledger(pb::GetLedgerRequest {
                    seq,
                    omit_raw: false,
                })
                .await
                .expect("daemon ledger")
                .into_inner();
            let copy = store.get_ledger(seq).expect("read").expect("present");
            assert_eq!(copy.raw, live.raw, "ledger {seq}");
        }
        assert!(store.get_ledger(mark + 1).expect("read").is_none());

        // Damage the copy: drop an index entry, garble a tx record.
        let l = store.get_ledger(first + 1).expect("read").expect("present");
        put_raw(&store, TableId::TxIndex, &l.tx_hashes[2].0, None);
        put_raw(&store, TableId::TxData, &l.tx_hashes[0].0, Some(b"garbage"));
        store.close().expect("close");
        drop(store); // releases the LOCK
        let missing = l.tx_hashes[2];
        let garbled = l.tx_hashes[0];
        let o = bin()
            .args(["check", "--data-dir", restored.to_str().expect("utf-8")])
            .output()
            .expect("check");
        assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
        let out = stdout(&o);
        let seq = first + 1;
        for want in [
            format!("PROBLEM tx_index: {missing} is missing (listed by ledgers[{seq}] at index 2)"),
            format!("PROBLEM tx_data: {garbled}: record does not decode"),
        ] {
            assert!(out.contains(&want), "no {want:?} in\n{out}\n{}", stderr(&o));
        }
        assert!(stderr(&o).contains("check failed"), "{}", stderr(&o));
    }
    let (clean, log) = d.terminate();
    assert!(clean, "{log}");
}
