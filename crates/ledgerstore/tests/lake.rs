//! Data lakes through object storage, against real servers on 127.0.0.1:
//! versitygw (S3, checking signatures), fake-gcs-server (GCS) and a static
//! HTTP server with injectable faults. The lake is SEP-54, cut from the 20
//! consecutive real pubnet ledgers (5,188 txs), one ledger a file, eight
//! files a partition, with a `.config.json`; keys are computed from it, not
//! listed. Every source must ingest byte for byte what the local directory
//! does; failures name the object and keep what came before it durable.

mod common;
mod daemon_util;
mod lake_util;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use common::*;
use lake_util::*;
use sha2::{Digest, Sha256};

/// `--from` for HTTP lakes, which cannot be listed for their oldest ledger.
const FROM: [&str; 2] = ["--from", "63092982"];

/// `ingest --stellar-datalake URL` with `extra` flags and `env`.
fn ingest(dir: &Path, url: &str, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = bin();
    c.args([
        "ingest",
        "--no-progress",
        "--batch-ledgers",
        "4",
        "--data-dir",
    ])
    .arg(dir)
    .args(["--stellar-datalake", url])
    .args(extra)
    .args(small_engine_flags())
    // Never a cloud credential or metadata endpoint from the host.
    .env_remove("AWS_ACCESS_KEY_ID")
    .env_remove("AWS_SECRET_ACCESS_KEY")
    .env_remove("AWS_SESSION_TOKEN")
    .env_remove("AWS_PROFILE")
    .env_remove("GOOGLE_APPLICATION_CREDENTIALS")
    .env_remove("GOOGLE_SERVICE_ACCOUNT")
    .env_remove("GOOGLE_SERVICE_ACCOUNT_PATH")
    .envs(env.iter().copied());
    run(c)
}

fn ok(o: &Output, what: &str) -> String {
    assert!(o.status.success(), "{what}: {}\n{}", stdout(o), stderr(o));
    stdout(o)
}

fn oracle() -> serde_json::Value {
    serde_json::from_slice(
        &std::fs::read(fixture("FC3D4709--63092982-63093001.oracle.json")).expect("oracle"),
    )
    .expect("json")
}

/// Every transaction (`get tx --json`) and every ledger (`get ledger
/// --json`) of a data dir: what two ingests must agree on byte for byte.
fn contents(dir: &Path) -> String {
    let o = oracle();
    let hashes: Vec<&str> = o["txs"]
        .as_array()
        .expect("txs")
        .iter()
        .map(|t| t["hash"].as_str().expect("hash"))
        .collect();
    let mut c = bin();
    c.args(["get", "tx", "--json", "--data-dir"])
        .arg(dir)
        .args(&hashes);
    let mut all = ok(&run(c), "get tx");
    for seq in FIRST..=LAST {
        let mut c = bin();
        c.args(["get", "ledger", &seq.to_string(), "--json", "--data-dir"])
            .arg(dir);
        all.push_str(&ok(&run(c), "get ledger"));
    }
    all
}

/// The envelopes served against the independent oracle's sha256.
fn assert_matches_oracle(dir: &Path) {
    let o = oracle();
    let txs = o["txs"].as_array().expect("txs");
    let text = contents(dir);
    let lines: Vec<serde_json::Value> = text
        .lines()
        .take(txs.len())
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 5188);
    for (t, got) in txs.iter().zip(&lines) {
        assert_eq!(got["hash"], t["hash"]);
        let env = base64_decode(got["envelope"].as_str().expect("envelope"));
        assert_eq!(
            hex(&Sha256::digest(&env)),
            t["envelope_sha256"].as_str().expect("sha"),
            "tx {}",
            t["hash"]
        );
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The durable mark of a stopped data dir.
fn mark(dir: &Path) -> Option<u64> {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("MARK")).expect("MARK")).expect("json");
    m["last"].as_u64()
}

/// The local lake, ingested: the reference every remote source must match.
fn reference(tmp: &Path) -> (std::path::PathBuf, String) {
    let lake = tmp.join("lake");
    write_lake(&lake, LAST);
    let dir = tmp.join("local");
    let o = ingest(&dir, lake.to_str().expect("utf8"), &[], &[]);
    let out = ok(&o, "ingest from the local lake");
    assert!(out.contains("20 ledgers, 5188 txs"), "{out}");
    (lake, contents(&dir))
}

#[test]
fn http_lake_ingests_the_same_bytes_as_the_local_directory() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (lake, want) = reference(tmp.path());
    assert_matches_oracle(&tmp.path().join("local"));
    let server = http_server(&lake, 0, None);
    let dir = tmp.path().join("http");
    let o = ingest(
        &dir,
        &server.url(),
        &["--lake.allow-http", FROM[0], FROM[1]],
        &[],
    );
    let out = ok(&o, "ingest over HTTP");
    assert!(
        out.contains("20 files, ledgers 63092982..=63093001"),
        "{out}"
    );
    assert!(out.contains("0 failed and retried"), "{out}");
    assert_eq!(contents(&dir), want, "HTTP and local ingests differ");
    assert_check_passes(&dir);
    // A re-run of the finished backfill has nothing new to read.
    let out = ok(
        &ingest(&dir, &server.url(), &["--lake.allow-http"], &[]),
        "re-run",
    );
    assert!(out.contains("nothing new"), "{out}");
    assert!(out.contains("done: 0 ledgers"), "{out}");

    // Plain http is refused unless asked for, naming the setting.
    let o = ingest(&tmp.path().join("refused"), &server.url(), &FROM, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("lake.allow_http"), "{}", stderr(&o));
}

#[test]
fn batches_end_at_their_byte_cap_and_a_lead_smaller_than_a_file_still_passes_every_ledger() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (lake, want) = reference(tmp.path());
    let dir = tmp.path().join("capped");
    // Each of these ledgers is ~1 MB raw: 2 MiB ends a batch at its third
    // ledger or sooner (never its fourth, the count's), and a 1 MiB lead is
    // smaller than some files, which then wait for all of it.
    let o = ingest(
        &dir,
        lake.to_str().expect("utf8"),
        &["--batch-mib", "2", "--lake.decoded-ahead-mib", "1"],
        &[],
    );
    let out = ok(&o, "ingest with a 2 MiB batch cap");
    assert!(out.contains("4 ledgers or 2 MiB per batch"), "{out}");
    let sizes: Vec<u64> = out
        .lines()
        .filter(|l| l.starts_with("batch #"))
        .map(|l| {
            let n = l.split(" (").nth(1).and_then(|r| r.split(' ').next());
            n.and_then(|n| n.parse().ok())
                .expect("a batch's ledger count")
        })
        .collect();
    assert_eq!(sizes.iter().sum::<u64>(), 20, "{out}");
    assert!(sizes.iter().all(|&n| (1..=3).contains(&n)), "{sizes:?}");
    assert_eq!(contents(&dir), want, "the capped ingest stored other bytes");
    assert_check_passes(&dir);

    let o = ingest(
        &tmp.path().join("zero"),
        "/nonexistent",
        &["--batch-mib", "0"],
        &[],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("--batch-mib must be at least 1"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn http_503s_are_retried_with_backoff_then_succeed() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lake = tmp.path().join("lake");
    write_lake(&lake, LAST);
    let server = http_server(&lake, 4, None);
    let dir = tmp.path().join("d");
    let o = ingest(
        &dir,
        &server.url(),
        &["--lake.allow-http", FROM[0], FROM[1]],
        &[],
    );
    let out = ok(&o, "ingest through 503s");
    assert!(out.contains("20 ledgers, 5188 txs"), "{out}");
    assert!(out.contains(", 4 failed and retried"), "{out}");
    assert_eq!(mark(&dir), Some(u64::from(LAST)));
}

#[test]
fn a_killed_server_stops_ingest_after_bounded_retries_keeping_what_came_before() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lake = tmp.path().join("lake");
    write_lake(&lake, LAST);
    // The server dies on the 9th file; read-ahead 1 keeps the order exact.
    let server = http_server(&lake, 0, Some(8));
    let dir = tmp.path().join("d");
    let t = Instant::now();
    let o = ingest(
        &dir,
        &server.url(),
        &[
            "--lake.allow-http",
            FROM[0],
            FROM[1],
            "--lake.read-ahead",
            "1",
            "--lake.max-retries",
            "3",
            "--lake.retry-timeout-ms",
            "3000",
            "--lake.connect-timeout-ms",
            "500",
        ],
        &[],
    );
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "the retries are bounded"
    );
    let ninth = key(FIRST + 8);
    assert!(err.contains(&ninth), "names the object: {err}");
    assert!(
        err.contains("ledgers through 63092989 are durable"),
        "{err}"
    );
    assert_eq!(mark(&dir), Some(u64::from(FIRST + 7)));
    drop(server);

    // The rerun resumes after the mark and finishes.
    let server = http_server(&lake, 0, None);
    let out = ok(
        &ingest(
            &dir,
            &server.url(),
            &["--lake.allow-http", FROM[0], FROM[1]],
            &[],
        ),
        "resume",
    );
    assert!(
        out.contains("resuming at 63092990") || out.contains("12 ledgers"),
        "{out}"
    );
    assert_eq!(mark(&dir), Some(u64::from(LAST)));
}

#[test]
fn a_missing_object_mid_range_is_a_gap_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lake = tmp.path().join("lake");
    write_lake(&lake, LAST);
    let hole = FIRST + 12;
    std::fs::remove_file(lake.join(key(hole))).expect("rm");
    let server = http_server(&lake, 0, None);
    let dir = tmp.path().join("d");
    let o = ingest(
        &dir,
        &server.url(),
        &["--lake.allow-http", FROM[0], FROM[1]],
        &[],
    );
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains(&key(hole)), "{err}");
    assert!(
        err.contains(&format!("no file for ledgers {hole}..={hole}")),
        "{err}"
    );
    assert_eq!(mark(&dir), Some(u64::from(hole - 1)));
}

#[test]
fn a_truncated_or_corrupt_object_is_refused_naming_it() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lake = tmp.path().join("lake");
    write_lake(&lake, LAST);
    let (cut, bad) = (FIRST + 5, FIRST + 3);
    let p = lake.join(key(cut));
    let bytes = std::fs::read(&p).expect("read");
    std::fs::write(&p, &bytes[..bytes.len() / 2]).expect("truncate");
    let dir = tmp.path().join("d");
    let o = ingest(&dir, lake.to_str().expect("utf8"), &[], &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains(&key(cut)), "{err}");
    assert_eq!(mark(&dir), Some(u64::from(cut - 1)));

    // Flipped bytes inside the zstd frame: refused too, nothing committed
    // past the file before it.
    let p = lake.join(key(bad));
    let mut bytes = std::fs::read(&p).expect("read");
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0x5a;
    }
    std::fs::write(&p, &bytes).expect("corrupt");
    let dir = tmp.path().join("d2");
    let o = ingest(&dir, lake.to_str().expect("utf8"), &[], &[]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains(&key(bad)), "{err}");
    assert_eq!(mark(&dir), Some(u64::from(bad - 1)));
}

/// Polls `f` every 100 ms until it holds, for at most `secs`.
async fn eventually(secs: u64, what: &str, mut f: impl AsyncFnMut() -> bool) {
    let t = Instant::now();
    while !f().await {
        assert!(
            t.elapsed() < Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `ledgerstore health --service NAME` against the daemon: SERVING?
fn serving(grpc: &str, service: &str) -> bool {
    let mut c = bin();
    c.args(["health", "--endpoint", grpc, "--service", service]);
    run(c).status.success()
}

async fn durable(d: &daemon_util::Daemon) -> Option<u32> {
    let s = d.status().await;
    s.has_durable_ledger.then_some(s.durable_ledger)
}

fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_follows_a_lake_through_an_outage_and_a_restart() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lake = tmp.path().join("lake");
    write_lake(&lake, FIRST + 9);
    let port = free_port();
    let mut server = http_server_on(&lake, port, 0, None);
    let url = server.url();
    let dir = tmp.path().join("d");
    let flags = [
        "--follow.lake",
        url.as_str(),
        "--lake.allow-http",
        "--follow.from",
        "63092982",
        "--follow.poll-ms",
        "100",
        "--follow.unreachable-after-ms",
        "1000",
        "--lake.max-retries",
        "1",
        "--lake.retry-timeout-ms",
        "300",
        "--lake.connect-timeout-ms",
        "300",
    ];
    let d = daemon_util::Daemon::start(&dir, &flags).await;
    eventually(60, "caught up with the lake", async || {
        durable(&d).await == Some(FIRST + 9)
    })
    .await;

    // New files written while the daemon runs are committed as they land.
    write_lake(&lake, FIRST + 14);
    eventually(30, "the new files committed", async || {
        durable(&d).await == Some(FIRST + 14)
    })
    .await;
    // The lag gauge is set just after the commit makes the mark durable.
    eventually(30, "the lag gauge at 0", async || {
        metric(&d.metrics_text(), "ledgerstore_follow_lag_ledgers") == Some(0.0)
    })
    .await;
    let m = d.metrics_text();
    assert_eq!(
        metric(&m, "ledgerstore_follow_lake_latest_ledger"),
        Some(f64::from(FIRST + 14)),
        "{m}"
    );
    assert_eq!(metric(&m, "ledgerstore_follow_lake_reachable"), Some(1.0));
    assert!(metric(&m, "ledgerstore_follow_http_requests_total").is_some_and(|n| n > 0.0));
    assert!(serving(&d.grpc, "ledgerstore.v1.Ingest"));

    // The lake goes away: Ingest turns NOT_SERVING, queries keep serving.
    server.kill();
    eventually(30, "Ingest NOT_SERVING", async || {
        !serving(&d.grpc, "ledgerstore.v1.Ingest")
    })
    .await;
    assert!(serving(&d.grpc, ""), "the server as a whole still serves");
    assert!(serving(&d.grpc, "ledgerstore.v1.Query"));
    let o = oracle();
    let hash = o["txs"][0]["hash"].as_str().expect("hash");
    let mut c = bin();
    c.args(["tx", hash, "--endpoint", &d.grpc]);
    ok(&run(c), "a query during the outage");
    let m = d.metrics_text();
    assert_eq!(metric(&m, "ledgerstore_follow_lake_reachable"), Some(0.0));
    assert!(metric(&m, "ledgerstore_follow_errors_total").is_some_and(|n| n >= 1.0));

    // Back again: SERVING, and following goes on.
    let _server = http_server_on(&lake, port, 0, None);
    eventually(30, "Ingest SERVING again", async || {
        serving(&d.grpc, "ledgerstore.v1.Ingest")
    })
    .await;
    let mut d = d;
    let (clean, out) = d.terminate();
    assert!(clean, "{out}");

    // Files written while it is down are picked up after a restart.
    write_lake(&lake, LAST);
    let d = daemon_util::Daemon::start(&dir, &flags).await;
    eventually(60, "resumed after the restart", async || {
        durable(&d).await == Some(LAST)
    })
    .await;
    drop(d);
    assert_check_passes(&dir);
    assert_eq!(contents(&dir), {
        let local = tmp.path().join("local");
        let l = lake.to_str().expect("utf8").to_string();
        ok(&ingest(&local, &l, &[], &[]), "local ingest");
        contents(&local)
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_follows_in_batches_capped_by_bytes_behind_a_lead_smaller_than_a_file() {
    let tmp = tempfile::tempdir().expect("tmp");
    let (lake, want) = reference(tmp.path());
    let dir = tmp.path().join("d");
    // The 20 files are read in one round, only the last at the lake's tip:
    // without the byte cap they would be one batch. Each ledger is ~1 MB
    // raw, so 2 MiB ends a batch at its third ledger or sooner, and some
    // files are larger than the 1 MiB lead (they wait for all of it).
    let flags = [
        "--follow.lake",
        lake.to_str().expect("utf8"),
        "--follow.poll-ms",
        "100",
        "--ingest.bulk-batch-mib",
        "2",
        "--lake.decoded-ahead-mib",
        "1",
    ];
    let d = daemon_util::Daemon::start(&dir, &flags).await;
    eventually(120, "caught up with the lake", async || {
        durable(&d).await == Some(LAST)
    })
    .await;
    let last = d.status().await.last_batch.expect("a batch report");
    assert!((1..=3).contains(&last.ledgers), "{last:?}");
    drop(d);
    // The ledgers are 0.81 to 1.34 MB raw: batches of 2, 2, 3, 3, 3, 3, 3
    // and the last one at the tip, as `ingest --batch-mib 2` cuts them.
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("MARK")).expect("MARK")).expect("json");
    assert_eq!(m["batches"], 8, "{m}");
    assert_check_passes(&dir);
    assert_eq!(contents(&dir), want, "the daemon stored other bytes");
}

#[test]
fn ingest_follow_commits_new_files_then_stops_on_interrupt() {
    let tmp = tempfile::tempdir().expect("tmp");
    let lake = tmp.path().join("lake");
    write_lake(&lake, FIRST + 4);
    let dir = tmp.path().join("d");
    let mut c = bin();
    c.args([
        "ingest",
        "--no-progress",
        "--follow",
        "--follow.poll-ms",
        "100",
    ])
    .arg("--data-dir")
    .arg(&dir)
    .args(["--stellar-datalake", lake.to_str().expect("utf8")])
    .args(small_engine_flags())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let child = c.spawn().expect("spawn");
    let mark_is = |want: u32| {
        std::fs::read(dir.join("MARK"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|m| m["last"].as_u64())
            == Some(u64::from(want))
    };
    let wait = |want: u32| {
        let t = Instant::now();
        while !mark_is(want) {
            assert!(t.elapsed() < Duration::from_secs(60), "mark {want}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait(FIRST + 4);
    write_lake(&lake, FIRST + 11);
    wait(FIRST + 11);
    // SIGINT: what arrived is committed and the command exits cleanly.
    #[allow(unsafe_code)]
    // SAFETY: signals our own child process.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let o = child.wait_with_output().expect("wait");
    let out = stdout(&o);
    assert!(o.status.success(), "{out}\n{}", stderr(&o));
    assert!(out.contains("following data lake"), "{out}");
    assert!(out.contains("12 ledgers"), "{out}");
    assert_eq!(mark(&dir), Some(u64::from(FIRST + 11)));
}

#[test]
fn gcs_lake_ingests_the_same_bytes_as_the_local_directory() {
    let Some((_, gcs)) = go_servers() else { return };
    let tmp = tempfile::tempdir().expect("tmp");
    let (_, want) = reference(tmp.path());
    let seed = tmp.path().join("gcs");
    write_lake(&seed.join("lake").join("pubnet"), LAST);
    let server = gcs_server(&gcs, &seed);
    let dir = tmp.path().join("d");
    let o = ingest(
        &dir,
        "gs://lake/pubnet",
        &["--lake.endpoint", &server.url(), "--lake.allow-http"],
        &[],
    );
    let out = ok(&o, "ingest from GCS");
    assert!(
        out.contains("20 files, ledgers 63092982..=63093001"),
        "{out}"
    );
    assert_eq!(contents(&dir), want, "GCS and local ingests differ");
}

const S3_ENV: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", S3_KEY),
    ("AWS_SECRET_ACCESS_KEY", S3_SECRET),
];

#[test]
fn s3_lake_ingests_the_same_bytes_and_wrong_keys_are_refused_naming_the_bucket() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let (_, want) = reference(tmp.path());
    let root = tmp.path().join("s3");
    write_lake(&root.join("lake").join("v1.1/pubnet"), LAST);
    let server = s3_server(&versitygw, &root);
    let endpoint = server.url();
    let flags = ["--lake.endpoint", endpoint.as_str(), "--lake.allow-http"];
    let dir = tmp.path().join("d");
    let o = ingest(&dir, "s3://lake/v1.1/pubnet", &flags, &S3_ENV);
    let out = ok(&o, "ingest from S3");
    assert!(
        out.contains("20 files, ledgers 63092982..=63093001"),
        "{out}"
    );
    assert_eq!(contents(&dir), want, "S3 and local ingests differ");

    // Keys are computed from .config.json: with the first ledger given, the
    // whole run is the manifest, one listing (the newest ledger: the first
    // key, since the reversed hex sorts newest first) and one GET a file.
    let o = ingest(
        &tmp.path().join("d3"),
        "s3://lake/v1.1/pubnet",
        &[&flags[..], &["--from", "63092982"]].concat(),
        &S3_ENV,
    );
    let out = ok(&o, "ingest from S3 with --from");
    assert!(out.contains("22 HTTP requests, 0 failed"), "{out}");

    // A wrong secret: refused before anything is read, naming the bucket.
    let bad = [
        ("AWS_ACCESS_KEY_ID", S3_KEY),
        ("AWS_SECRET_ACCESS_KEY", "not-the-secret"),
    ];
    let d2 = tmp.path().join("d2");
    let o = ingest(&d2, "s3://lake/v1.1/pubnet", &flags, &bad);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("s3://lake/v1.1/pubnet"), "{err}");
    assert!(err.contains("403"), "{err}");
    // And no keys at all: an anonymous request, which this server refuses.
    let o = ingest(&d2, "s3://lake/v1.1/pubnet", &flags, &[]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("s3://lake/v1.1/pubnet"),
        "{}",
        stderr(&o)
    );
    let o = ingest(
        &d2,
        "s3://lake/v1.1/pubnet",
        &[&flags[..], &["--lake.credentials", "env"]].concat(),
        &[],
    );
    assert!(
        stderr(&o).contains("AWS_ACCESS_KEY_ID is not set"),
        "{}",
        stderr(&o)
    );

    // Keys from the configuration instead: the id, and the secret in a file.
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, format!("{S3_SECRET}\n")).expect("secret");
    let keys = [
        "--lake.access-key-id",
        S3_KEY,
        "--lake.secret-access-key-file",
        secret.to_str().expect("utf8"),
        "--from",
        "63093000",
    ];
    let o = ingest(
        &d2,
        "s3://lake/v1.1/pubnet",
        &[&flags[..], &keys].concat(),
        &[],
    );
    let out = ok(&o, "keys from the configuration");
    assert!(out.contains("2 ledgers"), "{out}");
}
