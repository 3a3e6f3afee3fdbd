//! The `indexed` layout through the real daemon and the CLI: segments are
//! built in the background and swapped in, and a real crash in the middle
//! of a build, a merge or a repair (the process aborts at a failpoint)
//! loses nothing: after a restart every acknowledged transaction is served
//! byte for byte, the step completes, and `ledgerstore check` passes. The
//! bulk CLI builds and merges segments too, before it exits.

mod common;
mod daemon_util;

use std::time::{Duration, Instant};

use common::*;
use daemon_util::{Daemon, to_pb};
use ledgerstore_proto::v1 as pb;

const RANGE: &str = "10";

/// Base ranges of 10 ledgers, no merging.
fn flags() -> Vec<&'static str> {
    vec![
        "--layout",
        "indexed",
        "--segments.range-ledgers",
        RANGE,
        "--segments.merge-levels",
        "0",
    ]
}

/// Base ranges of 10 ledgers, merged in pairs (windows of 10 and 20).
fn merge_flags() -> Vec<&'static str> {
    vec![
        "--layout",
        "indexed",
        "--segments.range-ledgers",
        RANGE,
        "--segments.merge-fanout",
        "2",
        "--segments.merge-levels",
        "1",
    ]
}

/// The file names in `dir`.
fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("segments dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Only listed segments, hash lists, the manifest and the scrub's record
/// remain.
fn assert_clean(segdir: &std::path::Path) {
    let names = names(segdir);
    assert!(
        names.iter().all(|n| n.starts_with("seg-")
            || n.starts_with("hashes-")
            || n == "SEGMENTS"
            || n == "VERIFIED"),
        "{names:?}"
    );
}

fn requests(first: u32, count: usize) -> Vec<pb::IngestRequest> {
    let s = synth(11);
    (0..count)
        .map(|i| pb::IngestRequest {
            mode: pb::IngestMode::Bulk as i32,
            ledgers: s
                .batch(first + 4 * i as u32, 4)
                .into_iter()
                .map(to_pb)
                .collect(),
            ..Default::default()
        })
        .collect()
}

/// Polls GetStatus until `n` segments are in (bounded).
async fn wait_segments(d: &Daemon, n: usize) -> pb::Status {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = d.status().await;
        if st.segments.len() >= n {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "{} segments after 60 s: {st:?}",
            st.segments.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every tx of ledgers `1..=last` comes back exactly through BatchGetTransactions.
async fn assert_served(d: &Daemon, last: u32) {
    let s = synth(11);
    let ledgers = s.batch(1, last);
    let hashes: Vec<Vec<u8>> = ledgers
        .iter()
        .flat_map(|l| l.txs.iter().map(|t| t.hash.clone()))
        .collect();
    let got = d
        .query()
        .await
        .batch_get_transactions(pb::BatchGetTransactionsRequest {
            hashes: hashes.clone(),
        })
        .await
        .expect("batch get")
        .into_inner();
    let mut i = 0;
    for l in &ledgers {
        for tx in &l.txs {
            let r = &got.results[i];
            let t = r
                .record
                .as_ref()
                .unwrap_or_else(|| panic!("ledger {} tx {i} missing", l.seq));
            assert_eq!(
                (t.ledger_seq, &t.envelope[..], &t.result[..], &t.meta[..]),
                (l.seq, &tx.envelope[..], &tx.result[..], &tx.meta[..])
            );
            i += 1;
        }
    }
    assert_eq!(i, hashes.len());
}

async fn crash_at(failpoint: &str) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut d =
        Daemon::start_with_env(&dir, &flags(), &[("LEDGERSTORE_FAILPOINT", failpoint)]).await;
    // 12 ledgers: the mark passes 9, which closes the range 1..=9 and
    // starts its build, which aborts the process at the failpoint.
    let (acks, _) = d.ingest_stream(None, requests(1, 3)).await;
    assert!(
        d.wait_exit(Duration::from_secs(60)),
        "the daemon did not abort at {failpoint}"
    );
    // The abort may beat the ack of the batch that closed the range.
    let acked = acks.iter().map(|a| a.durable_ledger).max().unwrap_or(0);
    let segdir = dir.join("segments");
    let leftovers: Vec<String> = std::fs::read_dir(&segdir)
        .expect("segments dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    match failpoint {
        "segment-before-publish" => assert!(
            leftovers.iter().any(|n| n.starts_with("tmp-")),
            "{leftovers:?}"
        ),
        _ => assert!(
            leftovers.iter().any(|n| n.starts_with("dropping-")),
            "{leftovers:?}"
        ),
    }

    let mut d = Daemon::start(&dir, &flags()).await;
    let st = d.status().await;
    assert!(
        st.durable_ledger >= acked,
        "mark {} below ack {acked}",
        st.durable_ledger
    );
    // The build only starts once the mark has passed 9, durably.
    assert!(st.durable_ledger >= 9, "mark {}", st.durable_ledger);
    assert_served(&d, st.durable_ledger).await;
    let st = wait_segments(&d, 1).await;
    assert_eq!(
        (st.segments[0].first_ledger, st.segments[0].last_ledger),
        (1, 9)
    );
    assert_eq!(st.segments[0].keys, 9 * u64::from(TX_PER_LEDGER));
    // Ingest continues past the next boundary; that build runs cleanly.
    let next = st.durable_ledger + 1;
    let (acks, end) = d
        .ingest_stream(None, requests(next, (24 - next as usize) / 4 + 1))
        .await;
    assert!(end.is_none(), "{end:?}");
    let last = acks.iter().map(|a| a.durable_ledger).max().unwrap_or(0);
    let st = wait_segments(&d, 2).await;
    assert_eq!(
        (st.segments[1].first_ledger, st.segments[1].last_ledger),
        (10, 19)
    );
    assert_served(&d, last).await;
    assert_clean(&segdir);
    let (clean, _) = d.terminate();
    assert!(clean);
    assert_check_passes(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_the_swap_leaves_the_hot_index_serving() {
    crash_at("segment-before-publish").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_the_swap_finishes_the_hot_drop_at_restart() {
    crash_at("segment-after-publish").await;
}

/// A real crash in a merge (`merge-before-publish`: the merged file is
/// written, not yet renamed; `merge-after-manifest`: the manifest lists it,
/// its parts are not yet deleted) or in a repair (which rebuilds through
/// the same steps): the restart serves every ack, cleans up, and the step
/// completes.
async fn crash_in_rebuild(failpoint: &str, repair: bool) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let segdir = dir.join("segments");
    if repair {
        // Ranges 1..=9 and 10..=19 merged into 1..=19, then its file lost.
        let mut d = Daemon::start(&dir, &merge_flags()).await;
        let (_, end) = d.ingest_stream(None, requests(1, 6)).await;
        assert!(end.is_none(), "{end:?}");
        wait_segments_exact(&d, &[(1, 19)]).await;
        let (clean, _) = d.terminate();
        assert!(clean);
        std::fs::remove_file(segdir.join("seg-0000000001-0000000019.idx")).expect("delete");
        // The repair starts at open, maybe before the daemon serves.
        let mut d = Daemon::spawn_with_env(
            &dir,
            &merge_flags(),
            &[("LEDGERSTORE_FAILPOINT", failpoint)],
        );
        assert!(
            d.wait_exit(Duration::from_secs(60)),
            "the daemon did not abort at {failpoint} in the repair"
        );
    } else {
        let mut d = Daemon::start_with_env(
            &dir,
            &merge_flags(),
            &[("LEDGERSTORE_FAILPOINT", failpoint)],
        )
        .await;
        // 24 ledgers close 1..=9 and 10..=19; their merge aborts.
        let _ = d.ingest_stream(None, requests(1, 6)).await;
        assert!(
            d.wait_exit(Duration::from_secs(60)),
            "the daemon did not abort at {failpoint}"
        );
    }
    let mut d = Daemon::start(&dir, &merge_flags()).await;
    let st = d.status().await;
    assert!(st.durable_ledger >= 19, "mark {}", st.durable_ledger);
    assert_served(&d, st.durable_ledger).await;
    let st = wait_segments_exact(&d, &[(1, 19)]).await;
    assert_eq!(st.index_probes, 2, "{st:?}");
    assert!(st.repairing.is_empty(), "{st:?}");
    assert_served(&d, st.durable_ledger).await;
    assert_clean(&segdir);
    let (clean, _) = d.terminate();
    assert!(clean);
    assert_check_passes(&dir);
}

/// Polls GetStatus until the segments are exactly `want` (bounded).
async fn wait_segments_exact(d: &Daemon, want: &[(u32, u32)]) -> pb::Status {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = d.status().await;
        let got: Vec<(u32, u32)> = st
            .segments
            .iter()
            .map(|s| (s.first_ledger, s.last_ledger))
            .collect();
        if got == want && st.repairing.is_empty() {
            return st;
        }
        assert!(
            Instant::now() < deadline,
            "segments {got:?} after 60 s: {st:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_a_merge_before_its_publish_leaves_the_parts_serving() {
    crash_in_rebuild("merge-before-publish", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_a_merge_after_its_manifest_deletes_the_parts_at_restart() {
    crash_in_rebuild("merge-after-manifest", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_a_repair_is_repaired_at_restart() {
    crash_in_rebuild("merge-before-publish", true).await;
}

/// The bulk CLI builds the segments of the ranges it closes, and merges
/// them, before it exits: a backfill leaves the closed history in segments.
#[test]
fn the_bulk_cli_builds_and_merges_segments_before_it_exits() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut c = ingest_cmd(&dir, "indexed", 45, 5, 11);
    c.args([
        "--segments.range-ledgers",
        "10",
        "--segments.merge-fanout",
        "2",
    ]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("segments: built 4 and merged") && text.contains("a lookup probes at most 2"),
        "{text}"
    );
    assert!(
        names(&dir.join("segments")).contains(&"seg-0000000001-0000000039.idx".to_string()),
        "{:?}",
        names(&dir.join("segments"))
    );
    let v = stats_json(&dir);
    assert_eq!(v["segments"]["probes"], 2, "{v}");
    assert_eq!(v["segments"]["merge_fanout"], 2, "recorded: {v}");
    // A later run needs no policy flags: the recorded policy is used (a
    // flag that differs is refused: tests/hardening.rs).
    let o = run(ingest_cmd(&dir, "indexed", 10, 5, 11));
    assert!(o.status.success(), "{}", stderr(&o));
    let v = stats_json(&dir);
    assert_eq!(v["segments"]["range_ledgers"], 10, "{v}");
    assert_eq!(v["segments"]["hot_from"], 50, "{v}");
    // Both RocksDB tables of a format-4 dir are sharded by ledger range:
    // ledgers 1 to 55 are all in the first shard.
    let shards: Vec<(&str, &serde_json::Value)> = v["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .filter(|t| t["engine"] == "rocksdb")
        .map(|t| {
            (
                t["table"].as_str().expect("name"),
                &t["engine_stats"]["shards"],
            )
        })
        .collect();
    assert_eq!(shards.len(), 2, "{v}");
    assert!(shards.iter().all(|(_, n)| **n == 1), "{v}");
    assert_check_passes(&dir);
}

/// The daemon's RocksDB gauges are the dir's `stats`: a table's shards
/// and its SST files at every level, read when it opens the dir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_reports_each_table_s_shards_and_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    // One batch of ten synthetic ledgers of 4 MB: past the bulk threshold
    // of both tables, so each batch's bodies and records are SST files
    // ingested into the last level, and nothing is left in level 0 (the
    // CLI's close flushes an empty memtable). No compaction is due when
    // the daemon opens the dir, so it counts the files `stats` counted.
    // Ledgers 262,140 to 262,149 span the first two shards (2^18 ledgers
    // each): a bulk write is cut at the boundary, a file or more a shard.
    let mut c = bulk_ingest_cmd(&dir, 10, 100, 40_000, 1000);
    c.args(["--start-ledger", "262140"]).args([
        "--mdbx.max-size-gib",
        "1",
        "--mdbx.growth-step-mib",
        "4",
    ]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = stats_json(&dir);
    let d = Daemon::start(&dir, &["--events.enabled", "false"]).await;
    // `metric` reads 0 for a series the daemon lacks: every count here
    // is at least 1.
    let gauge = |name: &str, table: &str| -> u64 {
        d.metric(&format!("ledgerstore_rocksdb_{name}{{table=\"{table}\"}}")) as u64
    };
    let mut tables = 0;
    for t in v["tables"].as_array().expect("tables") {
        if t["engine"] != "rocksdb" {
            continue;
        }
        tables += 1;
        let name = t["table"].as_str().expect("name");
        let levels: Vec<u64> = t["engine_stats"]["files_per_level"]
            .as_array()
            .expect("levels")
            .iter()
            .map(|n| n.as_u64().expect("count"))
            .collect();
        // Every file below level 0: a gauge of level 0 alone would read 0.
        assert_eq!(levels[0], 0, "{name}: {v}");
        let files: u64 = levels.iter().sum();
        assert!(files >= 2, "{name}: {v}");
        assert_eq!(gauge("sst_files", name), files, "{name}");
        assert_eq!(t["engine_stats"]["shards"], 2, "{name}: {v}");
        assert_eq!(gauge("shards", name), 2, "{name}");
    }
    assert_eq!(tables, 2, "{v}");
}

/// `ledgerstore stats --json` of the stopped data dir at `dir`.
fn stats_json(dir: &std::path::Path) -> serde_json::Value {
    let mut c = bin();
    c.args(["stats", "--json", "--data-dir"]).arg(dir);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("json")
}
