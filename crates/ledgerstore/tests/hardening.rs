//! Issue 19's regressions, through the real binary: reads never change a
//! data dir, a dir remembers the settings it was created with, every verb
//! takes `--data-dir`, and `serve` does not log libmdbx's internals.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{bin, ingest_cmd, run, stderr, stdout, synth};
use sha2::{Digest, Sha256};

/// Every file under `dir` but the lock files (`LOCK`, MDBX's `mdbx.lck`,
/// which readers update by design): its size and sha256.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u64, [u8; 32])> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            if name == "LOCK" || name == "mdbx.lck" {
                continue;
            }
            let bytes = std::fs::read(&p).expect("read");
            let rel = p.strip_prefix(dir).expect("under dir").to_path_buf();
            out.insert(rel, (bytes.len() as u64, Sha256::digest(&bytes).into()));
        }
    }
    out
}

fn first_tx_hash(seq: u32) -> String {
    hex::encode(&synth(1).ledger(seq).txs[0].hash)
}

/// Regression: `stats` with the defaults on a dir created with a 4 MiB
/// growth step grew both MDBX files to 4 GiB. Now `stats`, `get` and
/// `check` open every engine read-only and change no byte, in every
/// layout, with no engine flags.
#[test]
fn reads_change_no_byte_of_the_data_dir() {
    for layout in ["hybrid", "rocksdb", "rocksdb-tuned", "indexed"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let mut c = ingest_cmd(&dir, layout, 40, 10, 1);
        c.args(["--segments.range-ledgers", "10"]);
        let o = run(c);
        assert!(o.status.success(), "{layout}: {}", stderr(&o));
        let before = snapshot(&dir);
        assert!(!before.is_empty());

        let reads: [Vec<String>; 4] = [
            vec!["stats".into()],
            vec!["get".into(), "ledger".into(), "7".into()],
            vec!["get".into(), "tx".into(), first_tx_hash(33)],
            vec!["check".into()],
        ];
        for args in reads {
            let mut c = bin();
            c.args(&args).arg("--data-dir").arg(&dir);
            let o = run(c);
            assert!(
                o.status.success(),
                "{layout} {args:?}: {}{}",
                stdout(&o),
                stderr(&o)
            );
            let after = snapshot(&dir);
            let changed: Vec<_> = before
                .iter()
                .filter(|(p, v)| after.get(*p) != Some(v))
                .map(|(p, _)| p.display().to_string())
                .chain(
                    after
                        .keys()
                        .filter(|p| !before.contains_key(*p))
                        .map(|p| format!("{} (new)", p.display())),
                )
                .collect();
            assert!(changed.is_empty(), "{layout} {args:?} changed {changed:?}");
        }
    }
}

/// Regression: `ingest` without `--layout` on an `indexed` dir failed
/// ("created with layout indexed; it cannot be opened as hybrid"). Now
/// every setting a dir is created with is reused, and one that disagrees
/// is refused naming both values, before anything is written.
#[test]
fn a_data_dir_remembers_its_creation_settings() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let create = [
        "--mdbx.tx-index-page-size",
        "8192",
        "--segments.range-ledgers",
        "10",
    ];
    let mut c = ingest_cmd(&dir, "indexed", 20, 10, 1);
    c.args(create);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));

    // Resume with no creation flags at all: the recorded ones are used.
    let mut c = bin();
    c.args(["ingest", "--synthetic", "--no-progress", "--ledgers", "30"])
        .args([
            "--tx-per-ledger",
            "12",
            "--tx-bytes",
            "600",
            "--ledger-bytes",
            "8192",
        ])
        .arg("--data-dir")
        .arg(&dir);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("layout indexed"), "{}", stdout(&o));

    let before = snapshot(&dir);
    for (flags, want) in [
        (
            vec!["--layout", "hybrid"],
            ["created with layout indexed", "opened as hybrid"],
        ),
        (
            vec!["--segments.range-ledgers", "7"],
            ["segments.range_ledgers = 10", "opened with 7"],
        ),
        (
            vec!["--mdbx.tx-index-page-size", "16384"],
            ["page size = 8192", "16384"],
        ),
    ] {
        let mut c = bin();
        c.args(["ingest", "--synthetic", "--no-progress", "--ledgers", "40"])
            .arg("--data-dir")
            .arg(&dir)
            .args(&flags);
        let o = run(c);
        let err = stderr(&o);
        assert!(!o.status.success(), "{flags:?} was accepted");
        for w in want {
            assert!(err.contains(w), "{flags:?}: {err}");
        }
        assert_eq!(snapshot(&dir), before, "{flags:?}: a refused open wrote");
    }
    let store = common::open_store(&dir);
    assert_eq!(store.last_ledger(), Some(50), "20, then 30 more");
}

/// `serve` takes `--data-dir` (and still `--db.path`), and at its default
/// log level prints none of libmdbx's internal lines.
#[test]
fn serve_takes_data_dir_and_keeps_libmdbx_quiet() {
    for flag in ["--data-dir", "--db.path"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let mut child = bin()
            .env_remove("RUST_LOG")
            .args(["serve", "--grpc.listen", "127.0.0.1:0"])
            .args(["--metrics.listen", "127.0.0.1:0"])
            .args(["--jsonrpc.listen", "127.0.0.1:0"])
            .arg(flag)
            .arg(&dir)
            .args(common::small_engine_flags())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let mut out = child.stdout.take().expect("stdout");
        // The daemon prints its addresses once it serves.
        let started = Instant::now();
        let mut seen = String::new();
        let mut buf = [0u8; 512];
        while !seen.contains("gRPC on") && started.elapsed() < Duration::from_secs(60) {
            let n = out.read(&mut buf).expect("read stdout");
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert!(seen.contains("gRPC on"), "{flag}: {seen}");
        // The store opens after the listeners: wait until it serves.
        let addr = seen
            .split("gRPC on ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .expect("address")
            .trim_end_matches(',')
            .to_string();
        let serving = (0..300).any(|_| {
            let mut c = bin();
            c.args(["health", "--endpoint", &format!("http://{addr}")]);
            let ok = run(c).status.success();
            if !ok {
                std::thread::sleep(Duration::from_millis(100));
            }
            ok
        });
        child.kill().expect("kill");
        assert!(serving, "{flag}: never SERVING");
        let o = child.wait_with_output().expect("wait");
        let err = String::from_utf8_lossy(&o.stderr);
        let manifest = std::fs::read_to_string(dir.join("ledgerstore.json")).expect("data dir");
        assert!(
            manifest.contains("\"layout\": \"indexed\""),
            "{flag}: a new dir gets the default layout, indexed: {manifest}"
        );
        assert!(
            err.contains("INFO"),
            "{flag}: expected the daemon's own INFO lines: {err}"
        );
        assert!(
            !err.contains("libmdbx"),
            "{flag}: libmdbx noise at the default level: {err}"
        );
    }
}
