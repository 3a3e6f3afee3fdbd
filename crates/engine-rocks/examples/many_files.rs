//! What a table of many bulk SST files costs RocksDB: a backfill of all of
//! pubnet leaves one `ledgers` file a batch and about two `tx_bodies`
//! files a batch, none ever merged (docs/benchmarks.md, "Files a table
//! keeps open"): ~1.4M files. For each stage `N` (ascending), this study
//! fills one table to `N` SST files (tiny files, a thousand ingested at a
//! time, which is fast), then opens it with the bodies' options (the
//! table's 64 KiB blocks, 1 MiB bulk blocks at zstd 3) through the engine,
//! timing the open, and commits `COMMITS` bulk writes of 8 small sorted
//! pairs each, as a backfill batch commits its bodies, reporting the
//! commit time, the process's RSS and a read in the oldest file.
//!
//! ```text
//! cargo test --workspace --no-run   # builds it (a target filter would rebuild RocksDB)
//! [MANY_FILES_SHIFT=18] many_files DIR COMMITS N1 N2 …
//! ```
//!
//! Each file stands for a dense backfill batch of 135 ledgers: its keys
//! begin with that batch's first sequence. `MANY_FILES_SHIFT` makes the
//! table sharded by that shift (the engine's `shard_shift`), as `indexed`
//! tables are.
//!
//! Output is tab-separated, a line a stage.

use std::path::Path;
use std::time::Instant;

use ledgerstore_db_api::{Access, BlockDict, KvStore};
use ledgerstore_engine_rocks::{BlockCompression, BulkBlocks, RocksOptions, RocksStore};

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn sst_files(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
            .count()
    })
}

fn options() -> RocksOptions {
    let mut o = RocksOptions::tuned_blocks(
        64 << 10,
        BlockCompression {
            level: 3,
            dict_bytes: 0,
            dict_form: BlockDict::Trained,
        },
    );
    o.bulk_blocks = Some(BulkBlocks {
        block_bytes: 1 << 20,
        level: 3,
        min_bytes: Some(1),
    });
    o.shard_shift = std::env::var("MANY_FILES_SHIFT")
        .ok()
        .map(|s| s.parse().expect("MANY_FILES_SHIFT: a shift"));
    o
}

/// The key of the `n`th file: a ledger sequence first, as positions and
/// ledger records are keyed, 135 ledgers a file (a dense backfill batch).
fn key(n: u64) -> [u8; 8] {
    let seq = u32::try_from(n * 135).expect("within u32 ledgers");
    let mut k = [0u8; 8];
    k[..4].copy_from_slice(&seq.to_be_bytes());
    k
}

/// Adds tiny SST files of one key each, files `from..to`, ingested a
/// thousand at a time (into the engine's column family of each key's
/// shard, when the table is sharded).
fn fill(dir: &Path, from: u64, to: u64, shift: Option<u32>) {
    let mut o = rocksdb::Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o.set_max_open_files(500);
    let names = if dir.join("CURRENT").exists() {
        rocksdb::DB::list_cf(&o, dir).expect("list")
    } else {
        let mut n = vec!["default".to_string()];
        n.extend(shift.map(|s| format!("ledgerstore-shards-{s}")));
        n
    };
    let db = rocksdb::DBWithThreadMode::<rocksdb::MultiThreaded>::open_cf(&o, dir, &names)
        .expect("open to fill");
    let stage = dir.join("fill");
    std::fs::create_dir_all(&stage).expect("stage dir");
    let mut ingest = rocksdb::IngestExternalFileOptions::default();
    ingest.set_move_files(true);
    let cf_of = |n: u64| match shift {
        Some(s) => format!(
            "shard-{:08x}",
            u32::from_be_bytes(key(n)[..4].try_into().expect("4")) >> s
        ),
        None => "default".to_string(),
    };
    let mut n = from;
    while n < to {
        let name = cf_of(n);
        let mut end = n;
        while end < to && end - n < 1000 && cf_of(end) == name {
            end += 1;
        }
        if db.cf_handle(&name).is_none() {
            db.create_cf(&name, &o).expect("create cf");
        }
        let paths: Vec<_> = (n..end)
            .map(|k| {
                let path = stage.join(format!("{k}.sst"));
                let mut w = rocksdb::SstFileWriter::create(&o);
                w.open(&path).expect("sst open");
                w.put(key(k), b"v").expect("sst put");
                w.finish().expect("sst finish");
                path
            })
            .collect();
        let cf = db.cf_handle(&name).expect("cf");
        db.ingest_external_file_cf_opts(&cf, &ingest, paths)
            .expect("ingest");
        n = end;
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 {
        eprintln!("usage: many_files DIR COMMITS N1 N2 …");
        std::process::exit(2);
    }
    let dir = Path::new(&args[1]);
    let commits: u64 = args[2].parse().expect("COMMITS");
    let value = vec![7u8; 1024];
    // Keys of the filled files, then each stage's commits above them all.
    let shift = options().shard_shift;
    let mut filled = 0u64;
    println!(
        "files\topen_ms\trss_after_open_mb\tcommit_ms_mean\tcommit_ms_max\trss_mb\toldest_read_ms"
    );
    for n in &args[3..] {
        let n: u64 = n.parse().expect("N");
        let files = sst_files(dir) as u64;
        if n > files {
            fill(dir, filled, filled + (n - files), shift);
            filled += n - files;
        }
        let t = Instant::now();
        let store = RocksStore::open(dir, "tx_data", &options(), Access::ReadWrite).expect("open");
        let open_ms = t.elapsed().as_secs_f64() * 1e3;
        let rss_open = rss_mb();
        let (mut sum, mut max) = (0.0f64, 0.0f64);
        for c in 0..commits {
            // The next files' keys, above every filled one and each other.
            let at = key(filled + 1 + c);
            let ks: Vec<[u8; 8]> = (0..8u8)
                .map(|i| {
                    let mut k = at;
                    k[7] = i;
                    k
                })
                .collect();
            let pairs: Vec<(&[u8], &[u8])> = ks.iter().map(|k| (&k[..], &value[..])).collect();
            let t = Instant::now();
            let mut w = store.begin_write().expect("write");
            w.put_sorted(&pairs).expect("put");
            w.finish().expect("finish");
            w.commit().expect("commit");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            sum += ms;
            max = max.max(ms);
        }
        let t = Instant::now();
        let got = store.get(&key(0)).expect("get");
        assert!(got.is_some(), "the oldest key is gone");
        let read_ms = t.elapsed().as_secs_f64() * 1e3;
        println!(
            "{}\t{open_ms:.1}\t{rss_open:.0}\t{:.3}\t{max:.3}\t{:.0}\t{read_ms:.3}",
            sst_files(dir),
            sum / commits.max(1) as f64,
            rss_mb()
        );
        drop(store);
        // The next stage's fill starts above these commits.
        filled += commits + 1;
    }
}
