//! What merging a closed shard's bulk files would cost and save: a
//! backfill leaves one `ledgers` file and one or more `tx_bodies` files a
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
//! It rewrites the table in place: run it on a copy. Output is
//! tab-separated, a line a shard, then the totals.

use std::time::Instant;

use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, ColumnFamilyDescriptor, CompactOptions,
    DBCompressionType, DBWithThreadMode, MultiThreaded, Options,
};

type Db = DBWithThreadMode<MultiThreaded>;

/// User + system CPU seconds of the whole process.
fn cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime
    // are fields 14 and 15 of the whole line, in clock ticks (100 a second).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn options(target_mib: u64, block_kib: usize, level: i32, subcompactions: u32) -> Options {
    let mut o = Options::default();
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, target, block, level, rest @ ..] = &args[..] else {
        eprintln!("usage: settle TABLE_DIR TARGET_MIB BLOCK_KIB LEVEL [SUBCOMPACTIONS]");
        std::process::exit(2);
    };
    let num = |s: &str, what: &str| -> u64 {
        s.parse().unwrap_or_else(|_| {
            eprintln!("settle: {what} {s:?} is not a number");
            std::process::exit(2)
        })
    };
    let target = num(target, "TARGET_MIB");
    let block = usize::try_from(num(block, "BLOCK_KIB")).unwrap_or(usize::MAX);
    let level = i32::try_from(num(level, "LEVEL")).unwrap_or(3);
    let subs = rest
        .first()
        .map_or(1, |s| u32::try_from(num(s, "SUBCOMPACTIONS")).unwrap_or(1));
    let o = options(target, block, level, subs);
    let names = Db::list_cf(&o, dir).unwrap_or_else(|e| {
        eprintln!("settle: {dir}: {e}");
        std::process::exit(1)
    });
    let cfs = names
        .iter()
        .map(|n| ColumnFamilyDescriptor::new(n, options(target, block, level, subs)));
    let db = Db::open_cf_descriptors(&o, dir, cfs).unwrap_or_else(|e| {
        eprintln!("settle: open {dir}: {e}");
        std::process::exit(1)
    });
    let files = |name: &str| -> (u64, u64) {
        db.live_files()
            .unwrap_or_default()
            .iter()
            .filter(|f| f.column_family_name == name)
            .fold((0, 0), |(n, b), f| (n + 1, b + f.size as u64))
    };
    println!("shard\tfiles_before\tbytes_before\tfiles_after\tbytes_after\tcpu_s\twall_s");
    let (mut fb, mut bb, mut fa, mut ba, mut cpu, mut wall) = (0, 0, 0, 0, 0.0, 0.0);
    for name in names.iter().filter(|n| n.starts_with("shard-")) {
        let cf = db.cf_handle(name).expect("listed");
        let (n0, b0) = files(name);
        let (c0, t0) = (cpu_s(), Instant::now());
        let mut c = CompactOptions::default();
        c.set_exclusive_manual_compaction(true);
        c.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        db.compact_range_cf_opt(&cf, None::<&[u8]>, None::<&[u8]>, &c);
        let (dc, dt) = (cpu_s() - c0, t0.elapsed().as_secs_f64());
        let (n1, b1) = files(name);
        println!("{name}\t{n0}\t{b0}\t{n1}\t{b1}\t{dc:.2}\t{dt:.2}");
        (fb, bb, fa, ba, cpu, wall) = (fb + n0, bb + b0, fa + n1, ba + b1, cpu + dc, wall + dt);
    }
    println!("total\t{fb}\t{bb}\t{fa}\t{ba}\t{cpu:.2}\t{wall:.2}");
}
