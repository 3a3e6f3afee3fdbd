//! The `ledgerstore` binary end to end: ingest, resume, get, stats, errors.

mod common;

use std::path::Path;

use common::*;

#[test]
fn ingest_resume_get_and_stats_for_every_layout() {
    for layout in ["hybrid", "rocksdb", "rocksdb-tuned"] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let o = run(ingest_cmd(&dir, layout, 6, 4, 5));
        assert!(o.status.success(), "{layout}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains("batch #1 [") && text.contains("batch #2 ["),
            "{text}"
        );
        assert!(text.contains("committed through ledger 6"), "{text}");
        for store in ["ledgers", "tx_data", "tx_index"] {
            assert!(text.contains(&format!("\n  {store}")), "{layout}: {text}");
        }
        // A second run continues from the mark.
        let o = run(ingest_cmd(&dir, layout, 3, 4, 5));
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("ingesting ledgers 7..=9"),
            "{}",
            stdout(&o)
        );
        let reports = std::fs::read_to_string(dir.join("batch-reports.jsonl")).expect("jsonl");
        assert_eq!(reports.lines().count(), 3);

        let s = synth(5);
        let tx = &s.ledger(8).txs[3];
        let mut c = bin();
        c.args([
            "get",
            "tx",
            &hex::encode(&tx.hash),
            "--json",
            "--encoding",
            "hex",
        ])
        .arg("--data-dir")
        .arg(&dir);
        let o = run(c);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
        assert_eq!(v["ledger_seq"], 8);
        assert_eq!(v["index"], 3);
        assert_eq!(v["envelope"], hex::encode(&tx.envelope));
        assert_eq!(v["meta"], hex::encode(&tx.meta));

        let mut c = bin();
        c.args(["get", "ledger", "9", "--json"])
            .arg("--data-dir")
            .arg(&dir);
        let o = run(c);
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
        assert_eq!(v["tx_count"], TX_PER_LEDGER);
        assert_eq!(v["tx_hashes"][0], hex::encode(&s.ledger(9).txs[0].hash));

        let mut c = bin();
        c.args(["stats", "--json"]).arg("--data-dir").arg(&dir);
        let o = run(c);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
        assert_eq!(v["layout"], layout);
        assert_eq!(v["ledgers"], 9);
        assert_eq!(v["txs"], 9 * TX_PER_LEDGER);
        // Only a format-4 (`indexed`) dir's tables are sharded.
        for t in v["tables"].as_array().expect("tables") {
            assert!(t["engine_stats"].get("shards").is_none(), "{t}");
        }
        let mut c = bin();
        c.args(["stats"]).arg("--data-dir").arg(&dir);
        let text = stdout(&run(c));
        assert!(text.contains("[tx_data] engine"), "{text}");
        if layout == "hybrid" {
            assert!(
                text.contains("depth") && text.contains("free pages"),
                "{text}"
            );
        } else {
            assert!(text.contains("files per level"), "{text}");
            assert!(!text.contains("shards"), "{text}");
        }
    }
}

#[test]
fn missing_keys_bad_input_and_layout_mismatch_fail_clearly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    assert!(run(ingest_cmd(&dir, "hybrid", 2, 2, 1)).status.success());

    let mut c = bin();
    c.args(["get", "ledger", "99"]).arg("--data-dir").arg(&dir);
    let o = run(c);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("ledger 99 not found"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("durable mark: ledger 2"),
        "{}",
        stderr(&o)
    );

    let mut c = bin();
    c.args(["get", "tx", &"ab".repeat(32)])
        .arg("--data-dir")
        .arg(&dir);
    let o = run(c);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("transaction {} not found", "ab".repeat(32))));

    let mut c = bin();
    c.args(["get", "tx", "xyz"]).arg("--data-dir").arg(&dir);
    let o = run(c);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("HASH must be 64 hex digits"),
        "{}",
        stderr(&o)
    );

    let o = run(ingest_cmd(&dir, "rocksdb", 1, 1, 1));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("created with layout hybrid"),
        "{}",
        stderr(&o)
    );

    let mut c = bin();
    c.args(["stats"])
        .arg("--data-dir")
        .arg(tmp.path().join("nope"));
    let o = run(c);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
}

/// `--segments.block-dict` and `--segments.block-dict-kib` reach RocksDB's
/// options for a `blocks` dir's bodies (config → store → backends →
/// engine), and a bad form is refused naming both.
#[test]
fn block_dictionary_flags_reach_the_engine() {
    // Samples: no trainer, a buffer of 16 64 KiB blocks; trained: 100×.
    for (form, trainer, buffer) in [("samples", 0, 1_048_576), ("trained", 1_638_400, 1_638_400)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let mut c = ingest_cmd(&dir, "indexed", 2, 2, 5);
        c.args([
            "--segments.block-dict-kib",
            "16",
            "--segments.block-dict",
            form,
        ]);
        let o = run(c);
        assert!(o.status.success(), "{form}: {}", stderr(&o));
        let options: String = std::fs::read_dir(dir.join("rocksdb/tx_data"))
            .expect("tx_data dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
            .map(|e| std::fs::read_to_string(e.path()).expect("options"))
            .collect();
        let line = options
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("compression_opts="))
            .unwrap_or_else(|| panic!("{form}: no compression_opts in {options}"));
        for want in [
            "max_dict_bytes=16384".to_string(),
            format!("zstd_max_train_bytes={trainer}"),
            format!("max_dict_buffer_bytes={buffer}"),
        ] {
            assert!(
                line.split(['{', '}', ';']).any(|f| f == want),
                "{form}: {want} in {line}"
            );
        }
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut c = ingest_cmd(&tmp.path().join("data"), "indexed", 2, 2, 5);
    c.args(["--segments.block-dict", "sample"]);
    let o = run(c);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("segments.block_dict") && e.contains("trained") && e.contains("samples"),
        "{e}"
    );
}

/// `--segments.bulk-block-kib` and `--segments.bulk-zstd-level` reach the
/// SST files a bulk batch of bodies becomes (config → store → backends →
/// engine: 40 MB of bodies in one batch, past RocksDB's 32 MiB chunk),
/// while the table's own options, what flushes and compactions write,
/// keep `segments.block_kib` and `db.zstd_level`.
#[test]
fn bulk_block_flags_reach_the_engine() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    // 40 ledger records of ~1.1 MB (a synthetic ledger's raw bytes hold
    // its transactions): one batch past the 4 MiB that makes a format-3
    // dir's records a bulk write.
    let mut c = bulk_ingest_cmd(&dir, 40, 100, 10_000, 120_000);
    c.args(small_engine_flags())
        .args(["--segments.bulk-block-kib", "512"])
        .args(["--segments.bulk-zstd-level", "6"])
        .args(["--segments.block-dict-kib", "16"]);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let table = dir.join("rocksdb/tx_data");
    let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&table)
        .expect("tx_data dir")
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).expect("read"))
        })
        .collect();
    let holds =
        |hay: &[u8], needle: &str| hay.windows(needle.len()).any(|w| w == needle.as_bytes());
    // A dictionary trains on 16 blocks (more than 100 × 16 KiB): the
    // block size shows in the bulk files' recorded training input.
    let bulk = files
        .iter()
        .filter(|(n, f)| {
            n.ends_with(".sst")
                && holds(f, "level=6;")
                && holds(f, &format!("zstd_max_train_bytes={};", 16 * 512 * 1024))
        })
        .count();
    assert!(
        bulk >= 1,
        "no SST at the bulk level among {} files",
        files.len()
    );
    let options: String = files
        .iter()
        .filter(|(n, _)| n.starts_with("OPTIONS-"))
        .map(|(_, f)| String::from_utf8_lossy(f).into_owned())
        .collect();
    for want in [
        "block_size=65536".to_string(),
        "level=3".to_string(),
        format!("zstd_max_train_bytes={}", 100 * 16 * 1024),
    ] {
        assert!(
            options
                .split(['{', '}', ';', '\n'])
                .any(|f| f.trim() == want),
            "the table's own {want}: {options}"
        );
    }
    // The ledger records' batch too, without a dictionary.
    let records: Vec<Vec<u8>> = std::fs::read_dir(dir.join("rocksdb/ledgers"))
        .expect("ledgers dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .map(|e| std::fs::read(e.path()).expect("read"))
        .collect();
    assert!(
        records
            .iter()
            .any(|f| holds(f, "level=6;") && holds(f, "max_dict_bytes=0;")),
        "no ledgers SST at the bulk level among {}",
        records.len()
    );
    let mut c = ingest_cmd(&tmp.path().join("other"), "indexed", 2, 2, 5);
    c.args(["--segments.bulk-zstd-level", "23"]);
    let o = run(c);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("segments.bulk_zstd_level = 23: 1 to 22"),
        "{}",
        stderr(&o)
    );
}

/// The block cache capacities RocksDB logged at its last open of `table`
/// (the OPTIONS file does not record them).
fn cache_capacities(dir: &Path, table: &str) -> Vec<u64> {
    let log =
        std::fs::read_to_string(dir.join("rocksdb").join(table).join("LOG")).expect("RocksDB LOG");
    log.lines()
        .filter_map(|l| l.trim().strip_prefix("capacity : "))
        .map(|v| v.trim().parse().expect("capacity"))
        .collect()
}

#[test]
fn block_cache_flag_sizes_both_rocksdb_tables() {
    // RocksDB logs each table's cache capacity at open (the OPTIONS file
    // does not record it). The default first, then the flag.
    for (flag, want) in [(None, 256u64 << 20), (Some("3"), 3 << 20)] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let mut c = ingest_cmd(&dir, "indexed", 2, 2, 5);
        if let Some(mb) = flag {
            c.args(["--rocksdb.block-cache-mb", mb]);
        }
        let o = run(c);
        assert!(o.status.success(), "{flag:?}: {}", stderr(&o));
        for table in ["ledgers", "tx_data"] {
            let caps = cache_capacities(&dir, table);
            assert!(
                !caps.is_empty() && caps.iter().all(|&c| c == want),
                "{table} {flag:?}: capacities {caps:?}, want {want}"
            );
        }
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut c = ingest_cmd(&tmp.path().join("data"), "indexed", 2, 2, 5);
    c.args(["--rocksdb.block-cache-mb", "0"]);
    let o = run(c);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("rocksdb.block_cache_mb") && e.contains("1 to 1048576"),
        "{e}"
    );
}

/// The `max_open_files` each table's newest OPTIONS file records.
fn open_files(dir: &Path, table: &str) -> Vec<String> {
    let mut files: Vec<_> = std::fs::read_dir(dir.join("rocksdb").join(table))
        .expect("table dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
        .map(|e| e.path())
        .collect();
    files.sort();
    let newest = std::fs::read_to_string(files.last().expect("an OPTIONS file")).expect("options");
    newest
        .lines()
        .filter_map(|l| l.trim().strip_prefix("max_open_files="))
        .map(str::to_string)
        .collect()
}

/// This process's hard limit on open files ("Max open files" in
/// /proc/self/limits), which a child inherits and the binary raises its
/// soft limit to.
fn hard_open_files_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").expect("/proc/self/limits");
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("a Max open files line");
    line.split_whitespace()
        .nth(4)
        .and_then(|v| v.parse().ok())
        .unwrap_or(u64::MAX)
}

/// Lowers `c`'s soft limit on open files to `n` before it runs.
#[allow(unsafe_code)]
fn soft_limit(c: &mut std::process::Command, n: u64) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls
    // only getrlimit and setrlimit, both async-signal-safe.
    unsafe {
        c.pre_exec(move || {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            r.rlim_cur = n.min(r.rlim_max);
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Each table's OPTIONS file records the open-file budget RocksDB keeps:
/// the flag's, or 5000, at most the process's descriptor limit, which
/// the binary raises from its soft limit to its hard one at start (a
/// shell's soft 1,024 would otherwise cut the default).
#[test]
fn max_open_files_flag_reaches_both_rocksdb_tables() {
    let hard = hard_open_files_limit();
    assert!(hard >= 77, "a hard open-file limit below 77");
    let default = 5000.min(hard).to_string();
    for (flag, want) in [
        (None, default.as_str()),
        (Some("77"), "77"),
        (Some("-1"), "-1"),
    ] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("data");
        let mut c = ingest_cmd(&dir, "indexed", 2, 2, 5);
        if let Some(n) = flag {
            c.args(["--rocksdb.max-open-files", n]);
        }
        // A shell's soft limit below the default, which the binary
        // raises.
        if hard >= 5000 {
            soft_limit(&mut c, 1024);
        }
        let o = run(c);
        assert!(o.status.success(), "{flag:?}: {}", stderr(&o));
        for table in ["ledgers", "tx_data"] {
            assert_eq!(open_files(&dir, table), [want], "{table} {flag:?}");
        }
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let mut c = ingest_cmd(&dir, "indexed", 2, 2, 5);
    c.args(["--rocksdb.max-open-files", "5"]);
    let o = run(c);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("rocksdb.max_open_files = 5: -1 (every file) or 20 to 1048576"),
        "{e}"
    );
    assert!(!dir.exists(), "a refused flag created {dir:?}");
}

/// `backup --data-dir` opens the dir with the engine flags it is given,
/// and `restore` checks with its own: both used to open with the defaults.
#[test]
fn backup_and_restore_take_the_engine_flags() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("data");
    let o = run(ingest_cmd(&dir, "indexed", 2, 2, 5));
    assert!(o.status.success(), "{}", stderr(&o));
    let verb = |args: &[&str], from: &Path, to: &Path, cache_mb: &str| {
        let mut c = bin();
        c.args(args).arg(from).arg("--to").arg(to);
        run({
            c.args(["--rocksdb.block-cache-mb", cache_mb]);
            c
        })
    };
    let backup_cmd = ["backup", "--data-dir"];
    let restore_cmd = ["restore", "--from"];
    let backup = tmp.path().join("backup");
    let o = verb(&backup_cmd, &dir, &backup, "3");
    assert!(o.status.success(), "{}", stderr(&o));
    // The backup's (read-write) open wrote each table's newest LOG.
    for table in ["ledgers", "tx_data"] {
        let caps = cache_capacities(&dir, table);
        assert!(
            !caps.is_empty() && caps.iter().all(|&c| c == 3 << 20),
            "{table}: capacities {caps:?}"
        );
    }
    // A refused flag: nothing is backed up or restored.
    let restored = tmp.path().join("restored");
    for (args, from, to) in [
        (&backup_cmd, &dir, tmp.path().join("b2")),
        (&restore_cmd, &backup, restored.clone()),
    ] {
        let o = verb(args, from, &to, "0");
        assert!(!o.status.success());
        let e = stderr(&o);
        assert!(e.contains("rocksdb.block_cache_mb"), "{e}");
        assert!(
            !to.exists(),
            "{args:?} refused its flags after writing {to:?}"
        );
    }
    // The flags go with --data-dir, not with a daemon's backup.
    let mut c = bin();
    c.args(["backup", "--endpoint", "http://127.0.0.1:1", "--to"]);
    c.arg(tmp.path().join("b3"));
    let o = run({
        c.args(["--rocksdb.block-cache-mb", "3"]);
        c
    });
    assert!(!o.status.success());
    assert!(stderr(&o).contains("go with --data-dir"), "{}", stderr(&o));
    // A backup never changes the dir's settings: MDBX geometry is refused.
    let before = std::fs::read(dir.join("mdbx/tx_index/mdbx.dat")).expect("mdbx.dat");
    for flag in ["--mdbx.growth-step-mib", "--mdbx.max-size-gib"] {
        let mut c = bin();
        c.arg("backup").arg("--data-dir").arg(&dir).arg("--to");
        c.arg(tmp.path().join("b4")).args([flag, "64"]);
        let o = run(c);
        assert!(!o.status.success(), "{flag}");
        assert!(
            stderr(&o).contains("never changes the dir"),
            "{}",
            stderr(&o)
        );
    }
    // Nor from the environment: the backup is made, the geometry not kept.
    let mut c = bin();
    c.arg("backup").arg("--data-dir").arg(&dir).arg("--to");
    c.arg(tmp.path().join("b5"));
    let o = run({
        c.env("LEDGERSTORE_MDBX__GROWTH_STEP_MIB", "64");
        c
    });
    assert!(o.status.success(), "{}", stderr(&o));
    let after = std::fs::read(dir.join("mdbx/tx_index/mdbx.dat")).expect("mdbx.dat");
    assert!(before == after && !tmp.path().join("b4").exists());
    // The flags reach the check: a policy the dir was not created with
    // fails it, after a whole copy that stays.
    let other = tmp.path().join("other");
    let mut c = bin();
    c.args(["restore", "--from"])
        .arg(&backup)
        .arg("--to")
        .arg(&other);
    c.args(["--segments.range-ledgers", "7"]);
    let o = run(c);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("restored whole, and its check failed") && e.contains("range_ledgers"),
        "{e}"
    );
    assert!(other.join("ledgerstore.json").exists());
    // --no-check takes no engine flags, and reads no config.
    let mut c = bin();
    c.args(["restore", "--no-check", "--from"])
        .arg(&backup)
        .arg("--to");
    c.arg(tmp.path().join("r2"))
        .args(["--rocksdb.block-cache-mb", "3"]);
    let o = run(c);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--no-check skips it"), "{}", stderr(&o));
    let mut c = bin();
    c.args(["restore", "--no-check", "--from"])
        .arg(&backup)
        .arg("--to");
    c.arg(tmp.path().join("r2"))
        .env("LEDGERSTORE_GRPC__LISTEN", "bogus");
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    // And the good flags restore and check.
    let o = verb(&restore_cmd, &backup, &restored, "3");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("OK: every record decodes"), "{out}");
}
