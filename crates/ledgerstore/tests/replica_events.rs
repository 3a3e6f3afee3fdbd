//! getEvents on read replicas, against a real S3 server (versitygw on
//! loopback). The writer's daemon indexes the 20 real pubnet ledgers of
//! 2026 (files of 2 ledgers merged 2 by 2) and publishes its event files
//! beside the packs; a replica fetches and adopts them (building none of
//! them from the packs) and answers getEvents, with filters and paged by
//! cursor, exactly as the writer does for every published ledger. A
//! restarted replica keeps its index. A replica started before the
//! writer published any event file says why getEvents waits, then takes
//! them from the next manifest.

mod common;
mod daemon_util;
mod lake_util;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use daemon_util::Daemon;
use serde_json::{Value, json};

use crate::common::{bin, run, stderr};
use crate::lake_util::{S3_KEY, S3_SECRET, go_servers, s3_server};

const FIXTURE: &str = "FC3D4709--63092982-63093001";
const FIRST: u32 = 63_092_982;
/// The last ledger of the fixture's closed ranges (5-ledger base ranges).
const PUBLISHED: u32 = 63_092_999;
const STORE: &str = "s3://cold/events";
const ENV: [(&str, &str); 4] = [
    ("AWS_ACCESS_KEY_ID", S3_KEY),
    ("AWS_SECRET_ACCESS_KEY", S3_SECRET),
    ("LEDGERSTORE_EVENTS__FILE_LEDGERS", "2"),
    ("LEDGERSTORE_EVENTS__FAN_OUT", "2"),
];

fn testdata(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../stellar/testdata")
        .join(name)
}

fn rpc(url: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "getEvents", "params": params});
    let o = std::process::Command::new("curl")
        .args(["-sS", "-X", "POST", "-H", "Content-Type: application/json"])
        .args(["--data-binary", &body.to_string(), url])
        .output()
        .expect("curl (installed by scripts/setup.sh)");
    serde_json::from_slice(&o.stdout).expect("json-rpc response")
}

/// Every page of `filters` from the first ledger, by cursor: the events
/// of the published ledgers, and the cursors of the pages wholly inside
/// them (a cursor's window runs to the daemon's latest ledger, which is
/// past the published mark on the writer).
fn pages(url: &str, filters: &Value, limit: u32) -> (Vec<Value>, Vec<Value>) {
    let (mut events, mut cursors) = (Vec::new(), Vec::new());
    let mut params = json!({
        "startLedger": FIRST,
        "endLedger": PUBLISHED + 1,
        "filters": filters,
        "pagination": {"limit": limit},
    });
    for _ in 0..200 {
        let r = rpc(url, params.clone());
        let page = &r["result"];
        let got = page["events"]
            .as_array()
            .unwrap_or_else(|| panic!("{url}: {r}"));
        if got.is_empty() {
            return (events, cursors);
        }
        let published = |e: &&Value| {
            e["ledger"]
                .as_u64()
                .is_some_and(|l| l <= u64::from(PUBLISHED))
        };
        if got.iter().all(|e| published(&e)) {
            cursors.push(page["cursor"].clone());
        }
        events.extend(got.iter().filter(published).cloned());
        params = json!({
            "filters": filters,
            "pagination": {"limit": limit, "cursor": page["cursor"]},
        });
    }
    panic!("{url}: more than 200 pages");
}

fn newest_manifest(root: &Path) -> Option<Value> {
    let dir = root.join("cold/events/manifest");
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let text = std::fs::read_to_string(names.last()?).ok()?;
    serde_json::from_str(&text).ok()
}

fn metric(d: &Daemon, name: &str) -> Option<i64> {
    d.metrics_text()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The same events, and the same cursors up to the published mark: the
/// replica's last page ends its window at the mark (the window-end
/// cursor), where the writer's goes on.
fn assert_same(got: &(Vec<Value>, Vec<Value>), want: &(Vec<Value>, Vec<Value>), filters: &Value) {
    let differ = got.0.iter().zip(&want.0).position(|(a, b)| a != b);
    assert!(
        got.0 == want.0,
        "{filters}: {} events against {}, first differing at {differ:?}: {:?} against {:?}",
        got.0.len(),
        want.0.len(),
        differ.map(|i| &got.0[i]),
        differ.map(|i| &want.0[i]),
    );
    let n = got.1.len().min(want.1.len());
    assert!(
        got.1[..n] == want.1[..n] && got.1.len().abs_diff(want.1.len()) <= 1,
        "{filters}: cursors {:?} against {:?}",
        got.1,
        want.1
    );
}

async fn replica(root: &Path, endpoint: &str, events_dir: &Path) -> Daemon {
    let cache = root.with_extension("cache");
    let args = [
        "--replica",
        STORE,
        "--replica.poll-ms",
        "200",
        "--replica.cache-mb",
        "64",
        "--lake.endpoint",
        endpoint,
        "--lake.allow-http",
        "--replica.cache-dir",
        &cache.display().to_string(),
        "--replica.events-dir",
        &events_dir.display().to_string(),
    ];
    // The data dir the helper passes is not used by a replica.
    let env = [ENV[0], ENV[1], ("LEDGERSTORE_METRICS__REFRESH_SECS", "1")];
    Daemon::start_with_env(&root.with_extension("unused"), &args, &env).await
}

/// Polls `done` every 100 ms for up to 120 s.
async fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_serves_get_events_from_the_published_event_files() {
    let Some((versitygw, _)) = go_servers() else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let (dir, root) = (tmp.path().join("writer"), tmp.path().join("s3"));
    let o = run({
        let mut c = bin();
        c.args(["ingest", "--no-progress", "--layout", "indexed"])
            .arg("--data-dir")
            .arg(&dir)
            .args(common::small_engine_flags())
            .args(["--segments.range-ledgers", "5", "--segments.merge-fanout"])
            .args(["2", "--segments.merge-levels", "1"])
            // The index is built as the ledgers land, in files of 2.
            .args(["--events.file-ledgers", "2", "--events.fan-out", "2"])
            .args(["--network", "pubnet", "--stellar-file"])
            .arg(testdata(&format!("{FIXTURE}.xdr.zst")));
        c
    });
    assert!(o.status.success(), "ingest: {}", stderr(&o));
    std::fs::create_dir_all(root.join("cold")).expect("bucket");
    let server = s3_server(&versitygw, &root);
    let endpoint = server.url();

    // Published without its event index first: a replica serves the rest
    // and says why getEvents waits.
    let o = run({
        let mut c = bin();
        c.args(["publish", "--data-dir"])
            .arg(&dir)
            .args(["--cold.store", STORE, "--lake.endpoint", &endpoint])
            .arg("--lake.allow-http")
            .args(common::small_engine_flags())
            .envs(ENV);
        c
    });
    assert!(o.status.success(), "publish: {}", stderr(&o));
    let events_dir = tmp.path().join("replica-events");
    let rep = replica(&tmp.path().join("r"), &endpoint, &events_dir).await;
    let r = rpc(&rep.jsonrpc, json!({"startLedger": FIRST}));
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"].as_str().is_some_and(
            |m| m.contains("lists no event index yet") && m.contains("cold.publish_events")
        ),
        "{r}"
    );

    // The writer indexes its ledgers and publishes the event files that
    // lie inside the published range.
    let writer = Daemon::start_with_env(
        &dir,
        &[
            "--cold.store",
            STORE,
            "--cold.publish-interval-ms",
            "200",
            "--cold.publish-events",
            "--lake.endpoint",
            &endpoint,
            "--lake.allow-http",
        ],
        &ENV,
    )
    .await;
    let mut manifest = Value::Null;
    wait("a manifest listing event files up to the mark", || {
        manifest = newest_manifest(&root).unwrap_or_default();
        manifest["events"]
            .as_array()
            .and_then(|e| e.last())
            .is_some_and(|e| e["last"] == PUBLISHED)
    })
    .await;
    assert_eq!(manifest["mark"], PUBLISHED, "{manifest}");
    assert_eq!(
        manifest["events_geometry"],
        json!({"file_ledgers": 2, "fan_out": 2})
    );
    let listed: Vec<String> = manifest["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            let n = |k: &str| e[k].as_u64().expect("ledger");
            format!("ev-{:010}-{:010}.idx", n("first"), n("last"))
        })
        .collect();
    assert_eq!(
        manifest["events"][0]["first"], FIRST,
        "the files start at the first published ledger"
    );

    wait("the replica's index through the published mark", || {
        metric(&rep, "ledgerstore_events_indexed_through") == Some(i64::from(PUBLISHED))
    })
    .await;
    // Published files were fetched and adopted (a manifest that listed
    // fewer files may have left a few ledgers to the packs meanwhile).
    assert!(
        metric(&rep, "ledgerstore_events_files_adopted").is_some_and(|n| n >= 1),
        "{}",
        rep.metrics_text()
    );
    let mut held: Vec<String> = std::fs::read_dir(&events_dir)
        .expect("events dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".idx"))
        .collect();
    held.sort();
    // The same ledgers; the replica merges what it adopted as the writer
    // does.
    let tiles = |names: &[String]| -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for n in names {
            let r = (
                n[3..13].parse().expect("first"),
                n[14..24].parse().expect("last"),
            );
            match out.last_mut() {
                Some(t) if t.1 + 1 == r.0 => t.1 = r.1,
                _ => out.push(r),
            }
        }
        out
    };
    assert_eq!(tiles(&held), vec![(FIRST, PUBLISHED)], "{held:?}");
    assert_eq!(tiles(&listed), vec![(FIRST, PUBLISHED)], "{listed:?}");

    // The same answers as the writer's, page by page.
    let (all, _) = pages(&writer.jsonrpc, &json!([]), 10_000);
    assert!(all.len() > 10_000, "{}", all.len());
    let contract = all
        .iter()
        .find_map(|e| e["contractId"].as_str().filter(|c| !c.is_empty()))
        .expect("a contract event");
    let topic = all
        .iter()
        .find(|e| e["type"] == "contract")
        .and_then(|e| e["topic"][0].as_str())
        .expect("a topic");
    let queries = [
        (json!([]), 997),
        (
            json!([{"type": "contract", "contractIds": [contract]}]),
            150,
        ),
        (json!([{"topics": [[topic, "**"]]}]), 400),
        (json!([{"type": "system"}, {"topics": [["*", "*"]]}]), 1_000),
    ];
    for (filters, limit) in &queries {
        let want = pages(&writer.jsonrpc, filters, *limit);
        assert!(!want.0.is_empty(), "{filters}: no event");
        let got = pages(&rep.jsonrpc, filters, *limit);
        assert_same(&got, &want, filters);
    }

    // A restarted replica keeps its index: nothing fetched or built again.
    drop(rep);
    let rep = replica(&tmp.path().join("r2"), &endpoint, &events_dir).await;
    wait("the restarted replica's index", || {
        metric(&rep, "ledgerstore_events_indexed_through") == Some(i64::from(PUBLISHED))
    })
    .await;
    assert_eq!(metric(&rep, "ledgerstore_events_files_adopted"), Some(0));
    assert_eq!(metric(&rep, "ledgerstore_events_files_built"), Some(0));
    let (filters, limit) = &queries[1];
    assert_same(
        &pages(&rep.jsonrpc, filters, *limit),
        &pages(&writer.jsonrpc, filters, *limit),
        filters,
    );
    drop(server);
}
