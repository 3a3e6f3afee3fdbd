use rand::{Rng, SeedableRng};

use super::*;

fn random_hashes(seed: u64, n: usize) -> Vec<[u8; 32]> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random()).collect()
}

/// `per_ledger[i]` txs in ledger `first + i`.
fn build(
    dir: &Path,
    first: u32,
    per_ledger: &[u32],
    seed: u64,
) -> (PathBuf, Vec<([u8; 32], TxPos)>) {
    let total: u32 = per_ledger.iter().sum();
    let hashes = random_hashes(seed, total as usize);
    let mut entries = Vec::new();
    let mut it = hashes.into_iter();
    for (i, &count) in per_ledger.iter().enumerate() {
        for index in 0..count {
            let pos = TxPos {
                seq: first + i as u32,
                index,
            };
            entries.push((it.next().expect("enough hashes"), pos));
        }
    }
    let last = first + per_ledger.len() as u32 - 1;
    let mut b = SegmentBuilder::new(first, last).expect("range");
    // Push in hash order, as a scan of the hot index yields them.
    let mut shuffled = entries.clone();
    shuffled.sort_unstable_by_key(|e| e.0);
    for (h, p) in shuffled {
        b.push(h, p).expect("in range");
    }
    let tmp = dir.join("tmp.idx");
    b.write(&tmp).expect("write");
    let path = publish(&tmp, dir, first, last).expect("publish");
    (path, entries)
}

#[test]
fn every_key_maps_to_its_position_and_misses_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Empty ledgers at the start, middle and end, as real ranges have.
    let per_ledger: Vec<u32> = (0..200)
        .map(|i| if i % 17 == 0 { 0 } else { (i * 7) % 40 })
        .collect();
    let (path, entries) = build(dir.path(), 1_000, &per_ledger, 1);
    let seg = Segment::open(&path).expect("open");
    assert_eq!(seg.info().keys, entries.len() as u64);
    for (h, pos) in &entries {
        assert_eq!(seg.lookup(h), Some(*pos));
    }
    // Misses: at 2^-16 per probe, 20,000 misses give ~0.3 false positives.
    let misses = random_hashes(99, 20_000);
    let fp = misses.iter().filter(|h| seg.lookup(h).is_some()).count();
    assert!(fp <= 5, "{fp} false positives in 20,000 misses");
    let info = seg.info();
    assert!(info.mph_bits_per_key < 4.0, "{info:?}");
    assert_eq!(
        info.file_bytes,
        std::fs::metadata(&path).expect("meta").len()
    );
    assert_eq!(
        parse_file_name(&file_name(1_000, 1_199)),
        Some((1_000, 1_199))
    );
}

#[test]
fn a_range_without_transactions_builds_and_answers_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = build(dir.path(), 5, &[0, 0, 0], 2);
    let seg = Segment::open(&path).expect("open");
    assert_eq!(seg.info().keys, 0);
    assert_eq!(seg.lookup(&[7; 32]), None);
}

#[test]
fn corruption_is_detected_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = build(dir.path(), 1, &[3, 4, 5], 3);
    let mut bytes = std::fs::read(&path).expect("read");
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&path, &bytes).expect("write");
    let err = Segment::open(&path).expect_err("corrupt");
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
    std::fs::write(&path, b"short").expect("write");
    let err = Segment::open(&path).expect_err("short");
    assert!(err.to_string().contains("not a segment file"), "{err}");
}

#[test]
fn bad_input_is_refused() {
    let mut b = SegmentBuilder::new(10, 12).expect("range");
    let err = b
        .push([1; 32], TxPos { seq: 13, index: 0 })
        .expect_err("outside");
    assert!(
        err.to_string()
            .contains("outside the segment range 10..=12"),
        "{err}"
    );
    b.push([1; 32], TxPos { seq: 10, index: 1 })
        .expect("in range");
    let dir = tempfile::tempdir().expect("tempdir");
    let err = b.write(&dir.path().join("x")).expect_err("gap in indexes");
    assert!(err.to_string().contains("not dense"), "{err}");
    let mut b = SegmentBuilder::new(10, 12).expect("range");
    b.push([1; 32], TxPos { seq: 10, index: 0 })
        .expect("in range");
    b.push([1; 32], TxPos { seq: 10, index: 1 })
        .expect("in range");
    let err = b.write(&dir.path().join("y")).expect_err("duplicate");
    assert!(
        err.to_string().contains("share the 128-bit prefix"),
        "{err}"
    );
    assert!(SegmentBuilder::new(5, 4).is_err());
}
