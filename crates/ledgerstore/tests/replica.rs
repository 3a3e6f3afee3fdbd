//! The published cold tier against a real S3 server (versitygw on
//! loopback, checking SigV4): `ledgerstore publish` and the daemon's
//! publisher upload packs, segments and dictionaries, then a manifest;
//! `ledgerstore serve --replica` processes serve them. Every answer is
//! compared with the writer's own, byte for byte.

mod common;
mod daemon_util;
mod lake_util;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use daemon_util::Daemon;
use ledgerstore_proto::v1 as pb;
use serde_json::{Value, json};

use crate::common::{bin, run, stderr, stdout};
use crate::lake_util::{S3_KEY, S3_SECRET, go_servers, s3_server};

const S3_ENV: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", S3_KEY),
    ("AWS_SECRET_ACCESS_KEY", S3_SECRET),
];
const FIXTURE: &str = "FC3D4709--63092982-63093001";
/// The last ledger of the fixture's closed ranges (5-ledger base ranges).
const PUBLISHED: u32 = 63_092_999;

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

/// The S3 flags of a versitygw at `endpoint`.
fn s3_flags(endpoint: &str) -> Vec<String> {
    vec![
        "--lake.endpoint".into(),
        endpoint.into(),
        "--lake.allow-http".into(),
    ]
}

/// `ledgerstore publish` in pack `version` (3: ledger frames; 4: with the
/// pack's dictionary; "": unset, the store's own version, as in the
/// daemon tests below, so version 4 into a new store).
fn publish(dir: &Path, store: &str, endpoint: &str, version: &str) -> std::process::Output {
    let mut c = bin();
    c.args(["publish", "--data-dir"])
        .arg(dir)
        .args(["--cold.store", store]);
    if !version.is_empty() {
        c.args(["--cold.pack-version", version]);
    }
    c.args(s3_flags(endpoint))
        .args(common::small_engine_flags())
        .envs(S3_ENV);
    run(c)
}

async fn replica(store: &str, endpoint: &str, cache: &Path, cache_mb: u32) -> Daemon {
    replica_with(store, endpoint, cache, cache_mb, &[]).await
}

/// [`replica`] with `extra` flags.
async fn replica_with(
    store: &str,
    endpoint: &str,
    cache: &Path,
    cache_mb: u32,
    extra: &[&str],
) -> Daemon {
    let cache_mb = cache_mb.to_string();
    let mut args = vec![
        "--replica",
        store,
        "--replica.poll-ms",
        "200",
        "--replica.cache-mb",
        &cache_mb,
    ];
    args.extend(extra);
    let flags = s3_flags(endpoint);
    args.extend(flags.iter().map(String::as_str));
    let cache = cache.display().to_string();
    args.extend(["--replica.cache-dir", &cache]);
    // The data dir the helper passes is not used by a replica.
    let unused = Path::new(&cache).with_extension("unused");
    Daemon::start_with_env(&unused, &args, &S3_ENV).await
}

/// Versitygw serving `root`, with an empty bucket `cold`.
fn s3(versitygw: &Path, root: &Path) -> lake_util::Server {
    std::fs::create_dir_all(root.join("cold")).expect("bucket");
    s3_server(versitygw, root)
}

fn oracle_hashes() -> Vec<(String, u32)> {
    let text =
        std::fs::read_to_string(testdata(&format!("{FIXTURE}.oracle.json"))).expect("oracle");
    let v: Value = serde_json::from_str(&text).expect("json");
    v["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| {
            let seq = t["ledger"].as_u64().expect("ledger") as u32;
            (t["hash"].as_str().expect("hash").to_string(), seq)
        })
        .collect()
}

async fn batch(d: &Daemon, hashes: &[Vec<u8>]) -> pb::BatchGetTransactionsResponse {
    d.query()
        .await
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: hashes.to_vec(),
        })
        .await
        .expect("batch")
        .into_inner()
}

/// Threads of process `pid` that run reads (named `ledgerstore-read`,
/// which the kernel keeps to 15 bytes). Idle ones stay 10 s, so right
/// after a load this is the most that ran at once, or fewer.
fn read_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "ledgerstore-rea")
        .count()
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

fn curl(url: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let o = std::process::Command::new("curl")
        .args(["-sS", "-X", "POST", "-H", "Content-Type: application/json"])
        .args(["--data-binary", &body.to_string(), url])
        .output()
        .expect("curl (installed by scripts/setup.sh)");
    serde_json::from_slice(&o.stdout).expect("json-rpc response")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_serve_every_published_transaction_byte_for_byte() {
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
        .args([
            "--segments.range-ledgers",
            "5",
            "--segments.merge-fanout",
            "2",
        ])
        .args(["--segments.merge-levels", "1"])
        .args(["--network", "pubnet", "--stellar-file"])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")));
        c
    });
    assert!(o.status.success(), "ingest: {}", stderr(&o));
    let server = s3(&versitygw, &tmp.path().join("s3"));
    let (endpoint, store) = (server.url(), "s3://cold/pubnet");

    let o = publish(&dir, store, &endpoint, "");
    assert!(o.status.success(), "publish: {}", stderr(&o));
    // Packs of version 4, a new store's default: ledger frames with the
    // pack's own dictionary.
    let packs = tmp.path().join("s3/cold/pubnet/packs");
    let versions: Vec<[u8; 4]> = std::fs::read_dir(&packs)
        .expect("packs")
        .map(|e| {
            let b = std::fs::read(e.expect("entry").path()).expect("pack");
            b[8..12].try_into().expect("4 bytes")
        })
        .collect();
    assert!(
        versions.len() == 4 && versions.iter().all(|v| *v == 4u32.to_be_bytes()),
        "{versions:?}"
    );
    assert!(
        stdout(&o).contains(&format!(
            "published manifest 1 to {store}: ledgers up to {PUBLISHED}, 4 new range(s)"
        )) && stdout(&o).contains("in version-4 packs"),
        "{}",
        stdout(&o)
    );
    let o = publish(&dir, store, &endpoint, "4");
    assert!(
        stdout(&o).contains(&format!(
            "nothing new to publish: {store} already holds ledgers up to {PUBLISHED}"
        )),
        "{}",
        stdout(&o)
    );

    let writer = Daemon::start(&dir, &[]).await;
    let big = replica(store, &endpoint, &tmp.path().join("cache-a"), 256).await;
    // A 1 MiB disk cache, no frame or dictionary kept in memory (every
    // read opens its pack's dictionary and its frame again), batches that
    // hold 1 MiB fetched (real ledgers' frames and stored dictionaries are
    // ~0.1–0.2 MB each: rounds of a few ledgers) with two GETs in flight,
    // and two read threads.
    let tiny = replica_with(
        store,
        &endpoint,
        &tmp.path().join("cache-b"),
        1,
        &[
            "--replica.frame-memory-mb",
            "0",
            "--replica.dict-memory-mb",
            "0",
            "--replica.batch-memory-mb",
            "1",
            "--replica.batch-gets-in-flight",
            "2",
            "--query.read-threads",
            "2",
        ],
    )
    .await;

    // Every published transaction, through both replicas, equals the
    // writer's answer byte for byte.
    let all = oracle_hashes();
    let published: Vec<Vec<u8>> = all
        .iter()
        .filter(|(_, seq)| *seq <= PUBLISHED)
        .map(|(h, _)| hex::decode(h).expect("hex"))
        .collect();
    assert!(published.len() > 4_000, "{}", published.len());
    for chunk in published.chunks(500) {
        let want = batch(&writer, chunk).await;
        assert!(want.results.iter().all(|r| r.found));
        assert_eq!(batch(&big, chunk).await, want);
        assert_eq!(batch(&tiny, chunk).await, want);
    }
    // 64 lookups at once through two read threads: every one answers as
    // the writer does, and the replica never ran more than two of them.
    let some: Vec<&Vec<u8>> = published.iter().step_by(61).take(64).collect();
    let want: Vec<_> = futures::future::join_all(some.iter().map(|h| get_tx(&writer, h))).await;
    let got: Vec<_> = futures::future::join_all(some.iter().map(|h| get_tx(&tiny, h))).await;
    assert_eq!(some.len(), 64);
    for (w, g) in want.into_iter().zip(got) {
        assert_eq!(g.expect("replica"), w.expect("writer"));
    }
    let read_threads = read_threads(tiny.pid());
    assert!(
        (1..=2).contains(&read_threads),
        "{read_threads} read threads, query.read_threads is 2"
    );
    // Every read has ended, so none is counted waiting or running.
    let m = tiny.metrics_text();
    for gauge in ["ledgerstore_reads_waiting 0", "ledgerstore_reads_running 0"] {
        assert!(m.lines().any(|l| l == gauge), "{gauge}: {m}");
    }
    for seq in 63_092_982..=PUBLISHED {
        let req = pb::GetLedgerRequest {
            seq,
            omit_raw: false,
        };
        let want = writer
            .query()
            .await
            .get_ledger(req)
            .await
            .expect("writer")
            .into_inner();
        for r in [&big, &tiny] {
            let got = r
                .query()
                .await
                .get_ledger(req)
                .await
                .expect("replica")
                .into_inner();
            assert_eq!(got, want, "ledger {seq}");
        }
    }

    // Newer ledgers: NOT_FOUND, naming the published mark.
    let (newer, seq) = all.iter().find(|(_, s)| *s > PUBLISHED).expect("newer");
    let e = get_tx(&big, &hex::decode(newer).expect("hex"))
        .await
        .expect_err("unpublished");
    assert_eq!(e.code(), tonic::Code::NotFound, "{e:?}");
    assert!(
        e.message()
            .contains(&format!("published mark: ledger {PUBLISHED} (manifest 1)")),
        "{}",
        e.message()
    );
    // Unauthenticated clients learn the ledgers, not the bucket.
    assert!(!e.message().contains(store), "{}", e.message());
    assert!(
        get_tx(&writer, &hex::decode(newer).expect("hex"))
            .await
            .is_ok(),
        "ledger {seq}"
    );
    let e = big
        .query()
        .await
        .get_ledger(pb::GetLedgerRequest {
            seq: PUBLISHED + 1,
            omit_raw: true,
        })
        .await
        .expect_err("unpublished ledger");
    assert_eq!(e.code(), tonic::Code::NotFound);

    // Replicas refuse writes, naming the writer's role.
    let (_, end) = big.ingest_stream(None, vec![]).await;
    let end = end.expect("refused");
    assert_eq!(end.code(), tonic::Code::FailedPrecondition, "{end:?}");
    assert!(
        end.message()
            .contains("a read replica: it serves the published ranges")
            && !end.message().contains("s3://")
            && !end.message().contains(&endpoint),
        "{}",
        end.message()
    );

    // Stellar RPC on a replica answers as the writer does for published
    // transactions, and reports the published range.
    let tx_fields = [
        "status",
        "envelopeXdr",
        "resultXdr",
        "resultMetaXdr",
        "ledger",
        "createdAt",
        "applicationOrder",
        "feeBump",
    ];
    for (h, _) in all.iter().filter(|(_, s)| *s <= PUBLISHED).step_by(97) {
        let w = curl(&writer.jsonrpc, "getTransaction", json!({"hash": h}));
        let r = curl(&big.jsonrpc, "getTransaction", json!({"hash": h}));
        for f in tx_fields {
            assert_eq!(r["result"][f], w["result"][f], "{h}: {f}");
        }
        assert!(
            matches!(r["result"]["status"].as_str(), Some("SUCCESS" | "FAILED")),
            "{r}"
        );
    }
    let latest = curl(&big.jsonrpc, "getLatestLedger", json!({}));
    assert_eq!(latest["result"]["sequence"], PUBLISHED, "{latest}");
    let w = curl(
        &writer.jsonrpc,
        "getLedgers",
        json!({"startLedger": 63_092_983, "pagination": {"limit": 3}}),
    );
    let r = curl(
        &big.jsonrpc,
        "getLedgers",
        json!({"startLedger": 63_092_983, "pagination": {"limit": 3}}),
    );
    assert_eq!(r["result"]["ledgers"], w["result"]["ledgers"]);

    // Status and metrics: the manifest, the cache, and what was fetched.
    let st = big.status().await;
    assert_eq!(
        (st.layout.as_str(), st.durable_ledger),
        ("replica", PUBLISHED)
    );
    let rs = st.replica.expect("replica status");
    assert_eq!((rs.manifest_version, rs.packs, rs.segments), (1, 4, 2));
    assert!(
        rs.object_gets > 0 && rs.cache_hits > 0 && rs.lookups > 0,
        "{rs:?}"
    );
    assert!(
        rs.cache_hit_ratio > 0.0 && rs.cache_hit_ratio < 1.0,
        "{rs:?}"
    );
    assert!(
        rs.gets_per_lookup > 0.0 && rs.bytes_per_lookup > 0.0,
        "{rs:?}"
    );
    // Version 4: each pack's dictionary opened once and held (1 MiB of
    // raw bytes each, counted once: twice before 8cc46fe). `big` was
    // only ever read one request at a time, so no two reads missed one
    // dictionary at once.
    assert_eq!(
        (rs.pack_dict_opens, rs.pack_dict_limit_bytes),
        (4, 64 << 20),
        "{rs:?}"
    );
    assert!(
        (4 << 20..4 * ((1 << 20) + (64 << 10))).contains(&rs.pack_dict_bytes),
        "{rs:?}"
    );
    let small = tiny.status().await.replica.expect("replica status");
    assert_eq!((small.pack_dict_bytes, small.pack_dict_limit_bytes), (0, 0));
    // With none held, every read opens one: at least each ledger read
    // one request at a time (one open each) and each pack the batches
    // read.
    let ledgers_read = u64::from(PUBLISHED - 63_092_982 + 1);
    assert!(small.pack_dict_opens >= ledgers_read + 4, "{small:?}");
    assert!(
        small.cache_evictions > 0 && small.cache_bytes <= 1 << 20,
        "{small:?}"
    );
    let m = big.metrics_text();
    assert!(m.contains("ledgerstore_replica_manifest_version 1"), "{m}");
    assert!(m.contains("ledgerstore_replica_object_gets_total"), "{m}");
    assert!(
        m.contains("ledgerstore_replica_pack_dict_limit_bytes 67108864"),
        "{m}"
    );

    // A corrupt and a missing pack: a fresh replica names each object;
    // the other ranges keep serving.
    let bucket = tmp.path().join("s3/cold/pubnet/packs");
    let mut packs: Vec<PathBuf> = std::fs::read_dir(&bucket)
        .expect("packs")
        .map(|e| e.expect("entry").path())
        .collect();
    packs.sort();
    assert_eq!(packs.len(), 4);
    let name = |p: &Path| format!("packs/{}", p.file_name().expect("name").to_string_lossy());
    let (corrupt, missing) = (name(&packs[1]), name(&packs[2]));
    let mut bytes = std::fs::read(&packs[1]).expect("pack");
    let h = ledgerstore_pack::Header::parse(&bytes).expect("header");
    assert!(h.frames(), "published in version 4");
    // A byte in the middle of every ledger's frame: each fails its CRC-32.
    for seq in h.first..=h.last {
        let (page, _) = h.ledger_page_of(seq).expect("page");
        let range = h.ledger_page(page).expect("range");
        let page = bytes[range.start as usize..range.end as usize].to_vec();
        let le = h.ledger_entry(&page, seq).expect("entry");
        let r = h.data_range(&le.record).expect("frame");
        bytes[((r.start + r.end) / 2) as usize] ^= 0xff;
    }
    std::fs::write(&packs[1], &bytes).expect("corrupt");
    std::fs::remove_file(&packs[2]).expect("remove");
    let fresh = replica(store, &endpoint, &tmp.path().join("cache-c"), 64).await;
    let in_range = |lo: u32, hi: u32| {
        all.iter()
            .find(|(_, s)| (lo..=hi).contains(s))
            .map(|(h, _)| hex::decode(h).expect("hex"))
            .expect("a tx in range")
    };
    let e = get_tx(&fresh, &in_range(63_092_985, 63_092_989))
        .await
        .expect_err("corrupt");
    assert_eq!(e.code(), tonic::Code::DataLoss, "{e:?}");
    assert!(
        e.message().contains(&corrupt) && e.message().contains("CRC-32"),
        "{}",
        e.message()
    );
    let e = get_tx(&fresh, &in_range(63_092_990, 63_092_994))
        .await
        .expect_err("missing");
    assert_eq!(e.code(), tonic::Code::DataLoss, "{e:?}");
    assert!(
        e.message().contains(&missing) && e.message().contains("not found"),
        "{}",
        e.message()
    );
    for (lo, hi) in [(63_092_982, 63_092_984), (63_092_995, PUBLISHED)] {
        let h = in_range(lo, hi);
        assert_eq!(
            get_tx(&fresh, &h).await.expect("other ranges serve"),
            get_tx(&writer, &h).await.expect("writer")
        );
    }
}

/// A temp dir, the writer's data dir in it, and versitygw serving the
/// bucket root beside it (with an empty bucket `cold`).
fn writer_and_bucket(versitygw: &Path) -> (tempfile::TempDir, PathBuf, PathBuf, lake_util::Server) {
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, root) = (tmp.path().join("writer"), tmp.path().join("s3"));
    let server = s3(versitygw, &root);
    (tmp, dir, root, server)
}

/// Synthetic ledgers with 10-ledger base ranges.
fn ingest_synth(dir: &Path, ledgers: u32) {
    let mut c = common::ingest_cmd(dir, "indexed", ledgers, 5, 21);
    c.args([
        "--segments.range-ledgers",
        "10",
        "--segments.merge-levels",
        "0",
    ]);
    let o = run(c);
    assert!(o.status.success(), "ingest: {}", stderr(&o));
}

fn manifests(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("cold/crash/manifest"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

async fn writer_at(dir: &Path, endpoint: &str, failpoint: Option<&str>) -> Daemon {
    let flags = s3_flags(endpoint);
    let mut args = vec![
        "--cold.store",
        "s3://cold/crash",
        "--cold.publish-interval-ms",
        "200",
    ];
    args.extend(flags.iter().map(String::as_str));
    let mut env = S3_ENV.to_vec();
    if let Some(f) = failpoint {
        env.push(("LEDGERSTORE_FAILPOINT", f));
    }
    Daemon::start_with_env(dir, &args, &env).await
}

async fn wait_version(d: &Daemon, version: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = d.status().await.replica.map_or(0, |r| r.manifest_version);
        if v == version {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "replica still at manifest {v}, want {version}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_killed_mid_publish_leaves_the_last_manifest_serving_and_finishes_on_restart() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let (tmp, dir, root, server) = writer_and_bucket(&versitygw);
    let endpoint = server.url();
    let s = common::synth(21);
    let hash = |seq: u32| s.ledger(seq).txs[3].hash.clone();

    ingest_synth(&dir, 25);
    // A store made in version 2 (as builds before version 4 became a new
    // store's default made them): the daemon below, its pack version
    // unset, goes on in it.
    let o = publish(&dir, "s3://cold/crash", &endpoint, "2");
    assert!(
        stdout(&o).contains("published manifest 1"),
        "{}{}",
        stdout(&o),
        stderr(&o)
    );
    let rep = replica("s3://cold/crash", &endpoint, &tmp.path().join("cache"), 64).await;
    wait_version(&rep, 1).await;
    ingest_synth_more(&dir, 26, 45);

    // Stopped while it writes a pack (held there until told to stop, as a
    // pack of a production range takes minutes): the daemon ends the round
    // at the pack's next chunk and exits cleanly, publishing nothing.
    let mut w = writer_at(&dir, &endpoint, Some("publish.in_pack")).await;
    assert!(w.wait_printed("failpoint publish.in_pack reached", Duration::from_secs(60)));
    let (clean, out) = w.terminate();
    assert!(clean && out.contains("stopped cleanly"), "{out}");
    assert_eq!(manifests(&root), vec!["00000000000000000001.json"]);

    // Killed after uploading the packs, before the manifest.
    let mut w = writer_at(&dir, &endpoint, Some("publish.before_manifest")).await;
    assert!(w.wait_printed(
        "failpoint publish.before_manifest reached",
        Duration::from_secs(60)
    ));
    w.kill();
    assert_eq!(manifests(&root), vec!["00000000000000000001.json"]);
    let versions: Vec<u32> = std::fs::read_dir(root.join("cold/crash/packs"))
        .expect("packs")
        .map(|e| {
            let b = std::fs::read(e.expect("entry").path()).expect("pack");
            ledgerstore_pack::Header::parse(&b).expect("header").version
        })
        .collect();
    assert_eq!(
        versions, [2; 4],
        "the round uploaded 20..=29 and 30..=39 before it died, in the store's version"
    );
    let e = get_tx(&rep, &hash(25)).await.expect_err("not published");
    assert!(
        e.message()
            .contains("published mark: ledger 19 (manifest 1"),
        "{}",
        e.message()
    );
    assert_eq!(
        get_tx(&rep, &hash(15)).await.expect("v1 serves").envelope,
        s.ledger(15).txs[3].envelope
    );

    // Restarted: the round is redone (packs already there are not uploaded
    // again) and the manifest is created; killed right after it.
    let mut w = writer_at(&dir, &endpoint, Some("publish.after_manifest")).await;
    assert!(w.wait_printed(
        "failpoint publish.after_manifest reached",
        Duration::from_secs(60)
    ));
    w.kill();
    assert_eq!(manifests(&root).len(), 2);
    wait_version(&rep, 2).await;
    for seq in [5, 25, 35, 39] {
        let got = get_tx(&rep, &hash(seq)).await.expect("published");
        assert_eq!(
            (got.ledger_seq, got.envelope),
            (seq, s.ledger(seq).txs[3].envelope.to_vec())
        );
    }

    // Restarted without a failpoint: nothing new, so no new manifest.
    let mut w = writer_at(&dir, &endpoint, None).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(manifests(&root).len(), 2);
    let m = w.metrics_text();
    assert!(
        m.contains("ledgerstore_publish_rounds_total{result=\"idle\"}"),
        "{m}"
    );
    let (clean, _) = w.terminate();
    assert!(clean);
    common::assert_check_passes(&dir);
    // One store, one writer: another history is refused by name, and a
    // manifest version that exists cannot be created again (versitygw
    // answers If-None-Match: * with 412).
    let other = tmp.path().join("other");
    let c = {
        let mut c = common::ingest_cmd(&other, "indexed", 45, 5, 99);
        c.args([
            "--segments.range-ledgers",
            "10",
            "--segments.merge-levels",
            "0",
        ]);
        c
    };
    assert!(run(c).status.success());
    let o = publish(&other, "s3://cold/crash", &endpoint, "3");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("another writer's history"),
        "{}",
        stderr(&o)
    );
    assert_eq!(manifests(&root).len(), 2);
    let ep = endpoint.clone();
    let conflict = tokio::task::spawn_blocking(move || {
        let opts = ledgerstore_objstore::Options {
            endpoint: Some(ep),
            allow_http: true,
            s3_keys: Some((S3_KEY.into(), S3_SECRET.into())),
            ..ledgerstore_objstore::Options::default()
        };
        let opened = ledgerstore_objstore::open("s3://cold/crash", &opts).expect("open");
        let remote = ledgerstore_cold::Remote::new(opened.store, "s3://cold/crash");
        let rt = tokio::runtime::Runtime::new().expect("rt");
        rt.block_on(async {
            let mut m = remote
                .newest_manifest()
                .await
                .expect("read")
                .expect("published");
            // The same bytes would be this writer's own (a retried create).
            m.writer = "another writer".into();
            remote.create_manifest(&m).await.expect_err("exists")
        })
    })
    .await
    .expect("task");
    assert!(
        matches!(conflict, ledgerstore_cold::ColdError::Conflict { .. }),
        "{conflict}"
    );

    // A replica restarted with an empty cache serves again.
    drop(rep);
    let again = replica("s3://cold/crash", &endpoint, &tmp.path().join("cache"), 64).await;
    assert_eq!(
        get_tx(&again, &hash(35)).await.expect("served").ledger_seq,
        35
    );
}

/// Appends ledgers `from..=to` of the same synthetic chain (a run
/// continues from the mark).
fn ingest_synth_more(dir: &Path, from: u32, to: u32) {
    let c = common::ingest_cmd(dir, "indexed", to - from + 1, 5, 21);
    let o = run(c);
    assert!(o.status.success(), "ingest: {}", stderr(&o));
}

/// `EVICTED` once its boundary is `below`. An eviction records its
/// boundary as it goes, range by range, so the first record seen may be
/// short of where the policy ends.
async fn wait_evicted_below(evicted: &Path, below: u32) -> Value {
    let read = || -> Option<Value> { serde_json::from_slice(&std::fs::read(evicted).ok()?).ok() };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match read() {
            Some(r) if r["below"] == json!(below) => return r,
            r => assert!(
                Instant::now() < deadline,
                "not evicted below {below} in 60 s: {r:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_evicts_published_ranges_keeps_serving_them() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let (_tmp, dir, _root, server) = writer_and_bucket(&versitygw);
    let endpoint = server.url();
    let s = common::synth(21);
    ingest_synth(&dir, 45);
    let flags = s3_flags(&endpoint);
    let mut args = vec![
        "--cold.store",
        "s3://cold/evict",
        "--cold.publish-interval-ms",
        "200",
        "--cold.keep-local-ranges",
        "1",
    ];
    args.extend(flags.iter().map(String::as_str));
    let mut w = Daemon::start_with_env(&dir, &args, &S3_ENV).await;
    let evicted = dir.join("segments/EVICTED");
    let rec = wait_evicted_below(&evicted, 30).await;
    assert_eq!(
        rec,
        json!({
            "below": 30,
            "store": "s3://cold/evict",
            // What Stellar RPC reports of the evicted oldest ledger.
            "oldest": {"seq": 1, "close_time": s.ledger(1).close_time},
        })
    );

    // Every transaction and ledger still comes back, evicted or not.
    for seq in 1..=45 {
        for (i, tx) in s.ledger(seq).txs.iter().enumerate().step_by(5) {
            let got = get_tx(&w, &tx.hash).await.expect("served");
            assert_eq!(
                (got.ledger_seq, got.index, &got.envelope),
                (seq, i as u32, &tx.envelope.to_vec())
            );
        }
        let l = w
            .query()
            .await
            .get_ledger(pb::GetLedgerRequest {
                seq,
                omit_raw: false,
            })
            .await
            .expect("ledger")
            .into_inner();
        assert_eq!(l.seq, seq);
    }
    let seq_of = w
        .query()
        .await
        .get_transaction_ledger(pb::GetTransactionLedgerRequest {
            hash: s.ledger(4).txs[0].hash.clone(),
        })
        .await
        .expect("ledger of")
        .into_inner();
    assert_eq!(seq_of.ledger_seq, 4);
    let mut stream = w
        .query()
        .await
        .stream_ledgers(pb::StreamLedgersRequest {
            start: 25,
            end: 35,
            omit_raw: true,
        })
        .await
        .expect("stream")
        .into_inner();
    let mut seqs = Vec::new();
    while let Some(l) = stream.message().await.expect("message") {
        seqs.push(l.seq);
    }
    assert_eq!(seqs, (25..=35).collect::<Vec<_>>());
    let (clean, _) = w.terminate();
    assert!(clean);
    let out = common::assert_check_passes(&dir);
    assert!(out.contains("evicted"), "{out}");

    // The dir records where its evicted ranges are: without that store,
    // the daemon refuses to start, naming it.
    let o = run({
        let mut c = bin();
        c.args([
            "serve",
            "--grpc.listen",
            "127.0.0.1:0",
            "--metrics.listen",
            "127.0.0.1:0",
        ])
        .args(["--jsonrpc.listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .args(common::small_engine_flags());
        c
    });
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("evicted ledgers below 30 to s3://cold/evict: set cold.store"),
        "{}",
        stderr(&o)
    );
}

/// The first ledger a writer with `--cold.keep-local-ranges 1` keeps of
/// the fixture (5-ledger base ranges): the last published range's.
const KEPT_FROM: u32 = 63_092_995;
/// The fixture's first ledger.
const FIRST: u32 = 63_092_982;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicting_writer_whose_published_store_is_down_answers_unavailable_never_empty() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let (_tmp, dir, _root, mut server) = writer_and_bucket(&versitygw);
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
        .args([
            "--segments.range-ledgers",
            "5",
            "--segments.merge-levels",
            "0",
        ])
        .args(["--network", "pubnet", "--stellar-file"])
        .arg(testdata(&format!("{FIXTURE}.xdr.zst")));
        c
    });
    assert!(o.status.success(), "ingest: {}", stderr(&o));
    let endpoint = server.url();
    let flags = s3_flags(&endpoint);
    let mut args = vec![
        "--cold.store",
        "s3://cold/down",
        "--cold.publish-interval-ms",
        "200",
        "--cold.keep-local-ranges",
        "1",
        "--lake.max-retries",
        "0",
    ];
    args.extend(flags.iter().map(String::as_str));
    let mut w = Daemon::start_with_env(&dir, &args, &S3_ENV).await;
    let evicted = dir.join("segments/EVICTED");
    // Evicted through KEPT_FROM before the stop (an eviction records its
    // boundary range by range, and a stop ends it between two).
    wait_evicted_below(&evicted, KEPT_FROM).await;
    let health = curl(&w.jsonrpc, "getHealth", json!({}))["result"].clone();
    assert_eq!(health["oldestLedger"], FIRST, "{health}");
    let (clean, _) = w.terminate();
    assert!(clean);
    // The stop may have come between the boundary's record and the
    // deletes below it, which only an eviction with the store up
    // finishes: one offline round does (nothing new to publish; it
    // deletes what is left below the boundary, or nothing).
    let o = run({
        let mut c = bin();
        c.args(["publish", "--data-dir"])
            .arg(&dir)
            .args(&args)
            .args(common::small_engine_flags())
            .envs(S3_ENV);
        c
    });
    assert!(o.status.success(), "publish: {}", stderr(&o));
    let rec: Value = serde_json::from_slice(&std::fs::read(&evicted).expect("read")).expect("json");
    assert_eq!(rec["below"], KEPT_FROM);
    assert_eq!(rec["oldest"]["seq"], FIRST, "{rec}");

    // The object store stops; the writer starts without its manifest.
    server.kill();
    let w = Daemon::start_with_env(&dir, &args, &S3_ENV).await;
    let all = oracle_hashes();
    let (old, old_seq) = all.iter().find(|(_, s)| *s < KEPT_FROM).expect("evicted");
    let (new, _) = all.iter().find(|(_, s)| *s >= KEPT_FROM).expect("kept");
    let e = get_tx(&w, &hex::decode(old).expect("hex"))
        .await
        .expect_err("evicted");
    assert_eq!(e.code(), tonic::Code::Unavailable, "{}", e.message());
    assert!(
        e.message().contains(&format!(
            "(ledger {old_seq}) left this data dir for the published store, which cannot serve \
             it now"
        )),
        "{}",
        e.message()
    );
    // Clients learn the ledgers, never the bucket or its endpoint.
    for secret in ["s3://", "cold/down", endpoint.as_str(), "127.0.0.1"] {
        assert!(!e.message().contains(secret), "{secret}: {}", e.message());
    }
    let e = get_tx(&w, &[0x5a; 32]).await.expect_err("absent");
    assert_eq!(e.code(), tonic::Code::NotFound, "{}", e.message());
    get_tx(&w, &hex::decode(new).expect("hex"))
        .await
        .expect("kept locally");
    let e = w
        .query()
        .await
        .get_ledger(pb::GetLedgerRequest {
            seq: 63_092_990,
            omit_raw: true,
        })
        .await
        .expect_err("evicted ledger");
    assert_eq!(e.code(), tonic::Code::Unavailable, "{}", e.message());

    // A stream from an evicted ledger fails; it does not skip to the
    // boundary.
    let streamed = w
        .query()
        .await
        .stream_ledgers(pb::StreamLedgersRequest {
            start: 63_092_990,
            end: 63_093_001,
            omit_raw: true,
        })
        .await;
    let mut seqs = Vec::new();
    let failed = match streamed {
        Err(e) => e,
        Ok(s) => {
            let mut s = s.into_inner();
            loop {
                match s.message().await {
                    Ok(Some(l)) => seqs.push(l.seq),
                    Ok(None) => panic!("the stream ended with {seqs:?}"),
                    Err(e) => break e,
                }
            }
        }
    };
    assert_eq!(
        failed.code(),
        tonic::Code::Unavailable,
        "{}",
        failed.message()
    );
    assert_eq!(seqs, Vec::<u32>::new());

    // Stellar RPC: an error, not a page that starts at the boundary or a
    // NOT_FOUND status.
    let r = curl(
        &w.jsonrpc,
        "getLedgers",
        json!({"startLedger": 63_092_990, "pagination": {"limit": 10}}),
    );
    assert!(r.get("result").is_none(), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("left this data dir")),
        "{r}"
    );
    let r = curl(&w.jsonrpc, "getTransaction", json!({"hash": old}));
    assert!(r.get("result").is_none(), "{r}");
    let message = r["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("(ledger {old_seq}) left this data dir")),
        "{r}"
    );
    for secret in ["s3://", "cold/down", endpoint.as_str(), "127.0.0.1"] {
        assert!(!message.contains(secret), "{secret}: {r}");
    }

    // What is local answers, with the oldest ledger's close time from
    // segments/EVICTED (before, every call failed: that ledger's record is
    // only in the stopped store).
    let h = curl(&w.jsonrpc, "getHealth", json!({}));
    assert_eq!(h["result"], health, "{h}");
    let l = curl(&w.jsonrpc, "getLatestLedger", json!({}));
    assert_eq!(l["result"]["sequence"], 63_093_001, "{l}");
    let t = curl(&w.jsonrpc, "getTransaction", json!({"hash": new}));
    assert!(
        t["result"]["status"] == "SUCCESS" || t["result"]["status"] == "FAILED",
        "{t}"
    );
    assert_eq!(t["result"]["oldestLedger"], FIRST, "{t}");
    assert_eq!(
        t["result"]["oldestLedgerCloseTime"], health["oldestLedgerCloseTime"],
        "{t}"
    );
}
