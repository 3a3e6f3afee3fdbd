//! What holding version-4 pack dictionaries costs a process in memory
//! (docs/benchmarks.md, "A replica's dictionaries, held once"): `N`
//! dictionaries of `KIB` KiB, each opened from a real pack's stored
//! dictionary, held in one of two forms, and the process's RSS before and
//! after.
//!
//! ```text
//! cargo test --workspace --no-run   # builds it (a target filter would rebuild RocksDB)
//! dict_memory reader|copy N [KIB]   # KIB: 1024, the default budget
//! ```
//!
//! - `reader`: a [`DictReader`], what a replica holds: zstd's dictionary
//!   alone, which keeps the only copy of the bytes.
//! - `copy`: the form replicas held before 8cc46fe, the raw bytes
//!   beside zstd's dictionary (its own copy of them).
//!
//! Run each form in a process of its own: memory a form frees may stay
//! with the allocator. Output is one tab-separated line: the form, `N`,
//! `KIB`, the RSS grown (MiB), that a dictionary (MiB), and what
//! [`DictReader::memory`] counts for one (MiB).

use ledgerstore_pack::{DictReader, FrameDict, FrameEncoder, PackWriter};

fn rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `len` bytes from a xorshift generator (the content does not change
/// what a dictionary costs; its first byte is 0, never zstd's magic).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    if let Some(b) = out.first_mut() {
        *b = 0;
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: dict_memory reader|copy N [KIB]";
    let form = args.first().ok_or(usage)?.clone();
    let n: usize = args.get(1).ok_or(usage)?.parse()?;
    let kib: usize = args.get(2).map_or(Ok(1024), |s| s.parse())?;
    if !matches!(form.as_str(), "reader" | "copy") || n == 0 {
        return Err(usage.into());
    }

    // A one-ledger version-4 pack with a dictionary of KIB KiB.
    let tmp = tempfile::tempdir()?;
    let path = tmp.path().join("pack");
    let dict = FrameDict::sampled([noise(kib << 10)], kib << 10, 3)?;
    let frame = FrameEncoder::new(3, Some(&dict)).frame(b"record", &[b"body"])?;
    let mut w = PackWriter::create_frames_with_dict(&path, 1, 1, &dict)?;
    w.push_frame(1, &frame)?;
    let h = w.finish()?.header;
    drop(dict);
    let bytes = std::fs::read(&path)?;
    let r = h.dict_range().ok_or("a version-4 pack has a dictionary")?;
    let stored = &bytes[r.start as usize..r.end as usize];

    let before = rss_mb();
    let mut readers = Vec::with_capacity(n);
    let mut raws = Vec::new();
    for _ in 0..n {
        readers.push(DictReader::open(&h, stored)?);
        if form == "copy" {
            let frame = &stored[..stored.len() - 4];
            raws.push(zstd::bulk::decompress(frame, kib << 10)?);
        }
    }
    let grown = rss_mb() - before;
    let counted = readers.first().map_or(0, DictReader::memory) as f64 / f64::from(1 << 20);
    println!(
        "{form}\t{n}\t{kib}\t{grown:.1}\t{:.3}\t{counted:.3}",
        grown / n as f64
    );
    drop((readers, raws));
    Ok(())
}
