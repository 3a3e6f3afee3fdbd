//! The study end to end at a tiny size, on real RocksDB and MDBX in a temp
//! dir: every layout runs every batch, the numbers add up, and the CSV,
//! plot, summary and JSON are written. (Timing is not asserted: performance
//! is measured by `cargo bench`, never in tests.)

use ledgerstore_benches::LAYOUTS;
use ledgerstore_benches::study::{StudyConfig, run_study};

#[test]
fn tiny_study_runs_every_layout_and_writes_its_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = StudyConfig {
        batches: 4,
        layout_batches: Vec::new(),
        ledgers_per_batch: 5,
        tx_per_ledger: 40,
        tx_bytes: 1_000,
        ledger_bytes: 16_384,
        layouts: LAYOUTS.to_vec(),
        seed: 3,
        data_dir: tmp.path().join("data"),
        out_dir: tmp.path().join("out"),
        keep: false,
        lookups: 50,
        segment_ledgers: 5,
        merge_fanout: 2,
        merge_levels: 1,
        // 200 txs per batch: checkpoints after batches 2 and 4.
        mem_every_txs: 350,
        // Tests never drop the machine's page cache.
        drop_caches: false,
    };
    let mut lines = Vec::new();
    let out = run_study(&cfg, &mut |l| lines.push(l.to_string())).expect("study");

    assert_eq!(out.runs.len(), 4);
    for run in &out.runs {
        assert_eq!(run.rows.len(), 4, "{}", run.layout);
        for (i, row) in run.rows.iter().enumerate() {
            assert_eq!(row.batch as usize, i + 1);
            assert_eq!((row.ledgers, row.txs), (5, 200));
            let tables: Vec<&str> = row.stores.iter().map(|s| s.table).collect();
            assert_eq!(tables, ["ledgers", "tx_data", "tx_index"]);
            // tx_index holds a 32-byte key and a 4-byte value per tx (the
            // indexed layout's hot index: an 8-byte position).
            let index = &row.stores[2];
            let value = if run.layout == "indexed" { 8 } else { 4 };
            assert_eq!(index.logical_bytes, 200 * (32 + value), "{}", run.layout);
        }
        let lookups = run.lookups.as_ref().expect("lookups timed");
        assert_eq!(lookups.count, 52); // ceil(50 / 4) per batch
        assert!(lookups.hits_per_s > 0.0 && lookups.misses_per_s > 0.0);
        assert!(lookups.hit_p99_us > 0.0 && lookups.miss_p99_us > 0.0);
        assert!(lookups.hit_p50_us > 0.0 && lookups.hit_p50_us <= lookups.hit_p99_us);
        assert!(lookups.miss_p50_us > 0.0 && lookups.miss_p50_us <= lookups.miss_p99_us);
        assert!(lookups.hit_read_bytes.is_some_and(|b| b >= 0.0) && !lookups.cold);
        let open = run.open.as_ref().expect("reopened");
        assert!(open.open_s > 0.0 && !open.cold, "{open:?}");
        let sampled: Vec<u32> = run
            .rows
            .iter()
            .filter(|r| r.memory.is_some())
            .map(|r| r.batch)
            .collect();
        assert_eq!(sampled, [2, 4], "{}", run.layout);
        assert!(run.end_memory.vm_rss_bytes.is_some_and(|b| b > 0));
        assert_eq!(run.probes_max.is_some(), run.layout == "indexed");
        let tx_data = run
            .finals
            .iter()
            .find(|f| f.table == "tx_data")
            .expect("tx_data");
        assert_eq!(tx_data.keys, 800, "{}", run.layout);
        assert!(tx_data.disk_bytes > 0);
        assert!(!cfg.data_dir.join(run.layout).exists(), "data dir kept");
        if run.layout == "indexed" {
            // Ledgers 2..=21 in base ranges of 5 (2..=4, 5..=9, 10..=14,
            // 15..=19), merged in pairs: 2..=9 and 10..=19.
            let seg = run.segments.as_ref().expect("segments");
            assert_eq!((seg.count, seg.keys), (2, 18 * 40));
            assert_eq!(
                run.probes_max,
                Some(seg.count + 1),
                "segments and the hot index"
            );
            assert!(seg.bits_per_key > 0.0 && seg.build_s > 0.0);
            assert!(
                run.finals
                    .iter()
                    .any(|f| f.table == "segments" && f.disk_bytes > 0)
            );
        }
    }
    // The field setup compacts at every commit; the others never do.
    let compact = |layout: &str| -> f64 {
        let run = out.runs.iter().find(|r| r.layout == layout).expect("run");
        run.rows
            .iter()
            .flat_map(|r| &r.stores)
            .map(|s| s.compact_s)
            .sum()
    };
    assert!(compact("rocksdb") > 0.0);
    assert_eq!(compact("hybrid"), 0.0);
    assert_eq!(compact("rocksdb-tuned"), 0.0);
    assert_eq!(compact("indexed"), 0.0);

    // Three tables per layout, plus the indexed layout's segment files.
    assert_eq!(out.summary.stores.len(), 13);
    assert_eq!(out.summary.window, 2);
    for s in out.summary.stores.iter().filter(|s| s.table != "segments") {
        assert!(s.growth.is_finite() && s.growth > 0.0, "{s:?}");
        assert!(s.logical_bytes > 0);
    }
    let rocks_written = out
        .summary
        .stores
        .iter()
        .filter(|s| s.engine == "rocksdb")
        .map(|s| s.write_amp.expect("rocksdb counts its writes"))
        .fold(f64::INFINITY, f64::min);
    assert!(
        rocks_written >= 1.0,
        "every flushed byte is written: {rocks_written}"
    );

    let csv = std::fs::read_to_string(cfg.out_dir.join("study.csv")).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 4 * 4 * 3);
    let layouts_csv =
        std::fs::read_to_string(cfg.out_dir.join("study-layouts.csv")).expect("layouts csv");
    assert_eq!(layouts_csv.lines().count(), 1 + 4);
    assert!(layouts_csv.contains(",warm,"), "{layouts_csv}");
    for l in &out.summary.layouts {
        let after: Vec<&str> = l.memory.iter().map(|m| m.after.as_str()).collect();
        assert_eq!(
            after,
            ["batch 2", "batch 4", "end (drained)"],
            "{}",
            l.layout
        );
        assert!(l.generator_share > 0.0 && l.generator_share < 1.0, "{l:?}");
    }
    let md = std::fs::read_to_string(cfg.out_dir.join("summary.md")).expect("summary.md");
    assert!(md.contains("cargo bench --workspace -- study"), "{md}");
    assert!(md.contains("| rocksdb-tuned | tx_data | rocksdb |"), "{md}");
    assert!(md.contains("indexed: 2 segments, 720 keys"), "{md}");
    assert!(md.contains("| end (drained) | 800 |"), "{md}");
    assert!(md.contains("| probes (max) |"), "{md}");
    let probes = out
        .runs
        .iter()
        .find_map(|r| r.probes_max)
        .expect("indexed probes");
    let probes_cell = format!("| {probes} |");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| indexed | warm |") && l.ends_with(&probes_cell)),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cfg.out_dir.join("results.json")).expect("json"))
            .expect("valid json");
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(4));
    match &out.plot_error {
        None => {
            let png = std::fs::read(cfg.out_dir.join("study.png")).expect("png");
            assert_eq!(&png[..4], b"\x89PNG");
        }
        Some(e) => assert!(e.contains("fonts-dejavu-core"), "{e}"),
    }
    assert!(
        lines.iter().any(|l| l.starts_with("rocksdb       #4")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("Memory:")), "{lines:?}");
}
