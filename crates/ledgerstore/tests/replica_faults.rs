//! Faults of the published tier through the real daemon and a real S3
//! server (versitygw on loopback): damage the test makes in the bucket's
//! files is DATA_LOSS naming the object and its ledgers, never NOT_FOUND,
//! and what unauthenticated clients are told names ledgers, never the
//! bucket or the endpoint.

mod common;
mod daemon_util;
mod lake_util;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use daemon_util::Daemon;
use ledgerstore_proto::v1 as pb;
use serde_json::Value;

use crate::common::{bin, run, stderr};
use crate::lake_util::{S3_KEY, S3_SECRET, go_servers, s3_server};

const S3_ENV: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", S3_KEY),
    ("AWS_SECRET_ACCESS_KEY", S3_SECRET),
];
const FIXTURE: &str = "FC3D4709--63092982-63093001";
/// The last ledger of the fixture's closed ranges (5-ledger base ranges).
const PUBLISHED: u32 = 63_092_999;
const STORE: &str = "s3://cold/pubnet";

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

fn s3_flags(endpoint: &str) -> Vec<String> {
    vec![
        "--lake.endpoint".into(),
        endpoint.into(),
        "--lake.allow-http".into(),
    ]
}

async fn replica(endpoint: &str, cache: &Path) -> Daemon {
    let mut args = vec![
        "--replica",
        STORE,
        "--replica.poll-ms",
        "200",
        "--replica.cache-mb",
        "64",
    ];
    let flags = s3_flags(endpoint);
    args.extend(flags.iter().map(String::as_str));
    let cache = cache.display().to_string();
    args.extend(["--replica.cache-dir", &cache]);
    let unused = Path::new(&cache).with_extension("unused");
    Daemon::start_with_env(&unused, &args, &S3_ENV).await
}

fn oracle_hashes() -> Vec<(Vec<u8>, u32)> {
    let text =
        std::fs::read_to_string(testdata(&format!("{FIXTURE}.oracle.json"))).expect("oracle");
    let v: Value = serde_json::from_str(&text).expect("json");
    v["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| {
            let seq = t["ledger"].as_u64().expect("ledger") as u32;
            let hash = hex::decode(t["hash"].as_str().expect("hash")).expect("hex");
            (hash, seq)
        })
        .collect()
}

async fn get_tx(d: &Daemon, hash: &[u8]) -> Result<pb::TransactionRecord, tonic::Status> {
    d.query()
        .await
        .get_transaction(pb::GetTransactionRequest {
            hash: hash.to_vec(),
        })
        .await
        .map(|r| r.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_pack_tables_are_data_loss_and_clients_never_see_the_bucket() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("writer");
    let o = run({
        let mut c = bin();
        c.args([
            "ingest",
            "--no-progress",
            "--layout",
            "indexed",
            "--data-dir",
        ])
        .arg(&dir)
        .args(common::small_engine_flags())
        .args(["--segments.range-ledgers", "5"])
        .args(["--network", "pubnet", "--stellar-file"])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")));
        c
    });
    assert!(o.status.success(), "ingest: {}", stderr(&o));
    let root = tmp.path().join("s3");
    std::fs::create_dir_all(root.join("cold")).expect("bucket");
    let mut server = s3_server(&versitygw, &root);
    let endpoint = server.url();
    let o = run({
        let mut c = bin();
        c.args(["publish", "--data-dir"])
            .arg(&dir)
            .args(["--cold.store", STORE])
            .args(s3_flags(&endpoint))
            .args(common::small_engine_flags())
            .envs(S3_ENV);
        c
    });
    assert!(o.status.success(), "publish: {}", stderr(&o));

    // The third ledger of the second pack claims no bodies: before table
    // page CRCs, each of its transactions was a silent NOT_FOUND.
    let packs_dir = root.join("cold/pubnet/packs");
    let mut packs: Vec<PathBuf> = std::fs::read_dir(&packs_dir)
        .expect("packs")
        .map(|e| e.expect("entry").path())
        .collect();
    packs.sort();
    let key = format!(
        "packs/{}",
        packs[1].file_name().expect("name").to_string_lossy()
    );
    let mut bytes = std::fs::read(&packs[1]).expect("pack");
    let h = ledgerstore_pack::Header::parse(&bytes).expect("header");
    let at = (h.ledger_table + 24 * 2 + 20) as usize;
    bytes[at..at + 4].copy_from_slice(&0u32.to_be_bytes());
    std::fs::write(&packs[1], &bytes).expect("damage");
    let seq = h.first + 2;

    let rep = replica(&endpoint, &tmp.path().join("cache")).await;
    let all = oracle_hashes();
    let (hash, _) = all.iter().find(|(_, s)| *s == seq).expect("a tx there");
    let e = get_tx(&rep, hash).await.expect_err("damaged");
    assert_eq!(e.code(), tonic::Code::DataLoss, "{e:?}");
    assert!(
        e.message().contains(&key) && e.message().contains("CRC-32"),
        "{}",
        e.message()
    );
    assert!(
        e.message()
            .contains(&format!("ledgers {}..={}", h.first, h.last)),
        "{}",
        e.message()
    );

    // Newer ledgers: NOT_FOUND naming the published ledgers, not where
    // they are published.
    let (newer, _) = all.iter().find(|(_, s)| *s > PUBLISHED).expect("newer");
    let e = get_tx(&rep, newer).await.expect_err("unpublished");
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    let first = all.iter().map(|(_, s)| *s).min().expect("ledgers");
    assert!(
        e.message()
            .contains(&format!("serves ledgers {first}..={PUBLISHED}")),
        "{}",
        e.message()
    );
    for secret in [STORE, "cold/pubnet", endpoint.as_str(), "127.0.0.1"] {
        assert!(!e.message().contains(secret), "{secret}: {}", e.message());
    }

    // The store stops: GetStatus tells clients that the latest poll
    // failed, and what it was reading, never where the store is (the log,
    // on stderr, keeps the cause naming it).
    server.kill();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        let st = rep.status().await.replica.expect("replica status");
        if !st.follow_error.is_empty() {
            break st;
        }
        assert!(Instant::now() < deadline, "no poll failed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    #[allow(deprecated)]
    let location = status.store.clone();
    assert_eq!(location, "", "GetStatus names no store");
    for secret in [STORE, "cold/pubnet", endpoint.as_str(), "127.0.0.1", S3_KEY] {
        assert!(
            !status.follow_error.contains(secret),
            "{secret}: {}",
            status.follow_error
        );
    }
    assert!(
        status.follow_error.contains("manifest"),
        "{}",
        status.follow_error
    );
}
