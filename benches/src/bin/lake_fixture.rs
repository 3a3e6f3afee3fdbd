//! Writes a SEP-54 data lake of real pubnet ledgers, as large as asked, for
//! the data-lake benchmarks (`scripts/bench-lake.sh`, `bench-follow.sh`);
//! see [`ledgerstore_benches::lake_fixture`] for what it writes.
//!
//! ```text
//! lake-fixture OUT COPIES [LEDGERS_PER_BATCH] [BATCHES_PER_PARTITION] [ZSTD_LEVEL]
//! ```
//!
//! ZSTD_LEVEL defaults to 19, the public lake's level.

use std::path::PathBuf;

use ledgerstore_benches::lake_fixture::{FIRST, LAKE_LEVEL, LakeShape, Res, write_lake};

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: lake-fixture OUT COPIES [LEDGERS_PER_BATCH] \
                    [BATCHES_PER_PARTITION] [ZSTD_LEVEL]"
            .into());
    }
    let out = PathBuf::from(&args[1]);
    let shape = LakeShape {
        copies: args[2].parse()?,
        ledgers_per_batch: args.get(3).map_or(Ok(1), |s| s.parse())?,
        batches_per_partition: args.get(4).map_or(Ok(64_000), |s| s.parse())?,
        level: args.get(5).map_or(Ok(LAKE_LEVEL), |s| s.parse())?,
    };
    let (last, bytes) = write_lake(&out, shape)?;
    println!(
        "lake {}: ledgers {FIRST}..={last}, {:.1} MB",
        out.display(),
        bytes as f64 / 1e6
    );
    Ok(())
}
