//! What merging a closed shard's bulk files would cost and save: a
//! backfill leaves one `ledgers` file and one or more `tx_data` (bodies) files a
//! batch, never merged (~1.4M files for all of pubnet, docs/benchmarks.md,
//! "Files a table keeps open"). This study takes a copy of a table of a
//! format-4 dir (`DIR/rocksdb/tx_data` or `DIR/rocksdb/ledgers`), opens
//! it with RocksDB alone, and rewrites each shard's files with a forced
//! bottommost compaction into files of up to `TARGET_MIB`, blocks of
//! `BLOCK_KIB` at zstd `LEVEL`, reporting per shard the files and bytes
//! before and after and the process's CPU seconds (user + sys, every
//! thread: compaction runs on RocksDB's own) and wall time.
//!
//! ```text
//! cargo test --workspace --no-run   # builds it (a target filter would rebuild RocksDB)
//! settle TABLE_DIR TARGET_MIB BLOCK_KIB LEVEL [SUBCOMPACTIONS]
//! ```
//!
//! It rewrites the table in place: run it on a copy (a shard's rewrite
//! needs room for a second copy of it). Automatic compactions are off, so
//! each line's CPU is that shard's rewrite alone. Tables with per-file
//! dictionaries (`segments.block_dict_kib` above 0) are refused: the
//! rewrite would drop them. A rewrite that leaves any of a shard's files
//! in place, or a background error, fails the study (rust-rocksdb's
//! compaction call returns no status). Output is tab-separated, a line a
//! shard, then the totals.

use std::time::Instant;

use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, ColumnFamilyDescriptor, CompactOptions,
    DBCompressionType, DBWithThreadMode, MultiThreaded, Options,
};

type Db = DBWithThreadMode<MultiThreaded>;

/// User + system CPU seconds of the whole process.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .unwrap_or_else(|e| fail(format!("/proc/self/stat: {e}")));
    // Fields after the command's closing parenthesis; utime and stime
    // are fields 14 and 15 of the whole line, in clock ticks (USER_HZ,
    // 100 a second on Linux whatever the kernel's own tick).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        f.get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| fail(format!("/proc/self/stat: no field {}", i + 3)))
    };
    (tick(11) + tick(12)) / 100.0
}

fn options(target_mib: u64, block_kib: usize, level: i32, subcompactions: u32) -> Options {
    let mut o = Options::default();
    o.set_disable_auto_compactions(true);
    // A shell's descriptor limit is 1,024; RocksDB's default (-1) opens
    // every file at once.
    o.set_max_open_files(500);
    o.set_level_compaction_dynamic_level_bytes(true);
    o.set_max_background_jobs(2);
    o.set_max_subcompactions(subcompactions);
    o.set_compression_type(DBCompressionType::Zstd);
    o.set_compression_options(-14, level, 0, 0);
    o.set_target_file_size_base(target_mib << 20);
    // A compaction's output is cut at target files; one job may take them
    // all (RocksDB's default is 25 × the target).
    o.set_max_compaction_bytes(u64::MAX / 4);
    let mut t = BlockBasedOptions::default();
    t.set_block_size(block_kib << 10);
    t.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
    t.set_metadata_block_size(4 << 10);
    t.set_cache_index_and_filter_blocks(true);
    o.set_block_based_table_factory(&t);
    o
}

fn fail(what: String) -> ! {
    eprintln!("settle: {what}");
    std::process::exit(1)
}

/// True when the table's latest OPTIONS file records a per-file
/// dictionary (`max_dict_bytes` above 0).
fn has_dictionaries(dir: &str) -> bool {
    let latest = std::fs::read_dir(dir)
        .unwrap_or_else(|e| fail(format!("{dir}: {e}")))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OPTIONS-"))
        .max_by_key(|n| n.trim_start_matches("OPTIONS-").parse::<u64>().unwrap_or(0));
    let Some(latest) = latest else {
        fail(format!("{dir}: no OPTIONS file (not a RocksDB table?)"))
    };
    let text = std::fs::read_to_string(format!("{dir}/{latest}"))
        .unwrap_or_else(|e| fail(format!("{dir}/{latest}: {e}")));
    text.lines()
        .filter_map(|l| l.split_once("max_dict_bytes="))
        .any(|(_, v)| v.split(';').next().is_some_and(|v| v.trim() != "0"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, target, block, level, rest @ ..] = &args[..] else {
        eprintln!("usage: settle TABLE_DIR TARGET_MIB BLOCK_KIB LEVEL [SUBCOMPACTIONS]");
        std::process::exit(2);
    };
    let num = |s: &str, what: &str, max: u64| -> u64 {
        match s.parse::<u64>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => {
                eprintln!("settle: {what} {s:?}: expected 1 to {max}");
                std::process::exit(2)
            }
        }
    };
    let target = num(target, "TARGET_MIB", 1 << 20);
    let block = usize::try_from(num(block, "BLOCK_KIB", 1 << 20)).expect("bounded");
    let level = i32::try_from(num(level, "LEVEL", 22)).expect("bounded");
    let subs = rest.first().map_or(1, |s| {
        u32::try_from(num(s, "SUBCOMPACTIONS", 64)).expect("bounded")
    });
    if has_dictionaries(dir) {
        fail(format!(
            "{dir}: the table's files have per-file dictionaries, which this study's rewrite would drop"
        ));
    }
    let o = options(target, block, level, subs);
    let names = Db::list_cf(&o, dir).unwrap_or_else(|e| fail(format!("{dir}: {e}")));
    let shards: Vec<&String> = names.iter().filter(|n| n.starts_with("shard-")).collect();
    if shards.is_empty() {
        fail(format!(
            "{dir}: no shard column families (a table of a format-4 data dir has them)"
        ));
    }
    let cfs = names
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(n, options(target, block, level, subs)));
    let db =
        Db::open_cf_descriptors(&o, dir, cfs).unwrap_or_else(|e| fail(format!("open {dir}: {e}")));
    let files = |name: &str| -> Vec<(String, u64)> {
        db.live_files()
            .unwrap_or_else(|e| fail(format!("{dir}: live files: {e}")))
            .into_iter()
            .filter(|f| f.column_family_name == name)
            .map(|f| (f.name, f.size as u64))
            .collect()
    };
    let bytes = |f: &[(String, u64)]| f.iter().map(|(_, b)| b).sum::<u64>();
    println!("shard\tfiles_before\tbytes_before\tfiles_after\tbytes_after\tcpu_s\twall_s");
    let (mut fb, mut bb, mut fa, mut ba, mut cpu, mut wall) = (0, 0, 0, 0, 0.0, 0.0);
    for name in shards {
        let cf = db.cf_handle(name).expect("listed");
        let before = files(name);
        let (c0, t0) = (cpu_s(), Instant::now());
        let mut c = CompactOptions::default();
        c.set_exclusive_manual_compaction(true);
        c.set_bottommost_level_compaction(BottommostLevelCompaction::ForceOptimized);
        db.compact_range_cf_opt(&cf, None::<&[u8]>, None::<&[u8]>, &c);
        let (dc, dt) = (cpu_s() - c0, t0.elapsed().as_secs_f64());
        let after = files(name);
        let errors = db
            .property_int_value("rocksdb.background-errors")
            .ok()
            .flatten()
            .unwrap_or(0);
        if errors > 0 || after.iter().any(|f| before.contains(f)) {
            fail(format!(
                "{name}: the rewrite failed ({errors} background errors; {} of {} files left as they were)",
                after.iter().filter(|f| before.contains(f)).count(),
                before.len()
            ));
        }
        let (n0, b0, n1, b1) = (before.len(), bytes(&before), after.len(), bytes(&after));
        println!("{name}\t{n0}\t{b0}\t{n1}\t{b1}\t{dc:.2}\t{dt:.2}");
        (fb, bb, fa, ba, cpu, wall) = (fb + n0, bb + b0, fa + n1, ba + b1, cpu + dc, wall + dt);
    }
    println!("total\t{fb}\t{bb}\t{fa}\t{ba}\t{cpu:.2}\t{wall:.2}");
}
