use rand::{Rng, SeedableRng};
use sha2::{Digest, Sha256};

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
    build_from(dir, first, per_ledger, random_hashes(seed, total as usize))
}

/// `per_ledger[i]` txs in ledger `first + i`, with these hashes in order.
fn build_from(
    dir: &Path,
    first: u32,
    per_ledger: &[u32],
    hashes: Vec<[u8; 32]>,
) -> (PathBuf, Vec<([u8; 32], TxPos)>) {
    let (b, entries) = builder(first, per_ledger, hashes);
    let last = b.last;
    let tmp = dir.join("tmp.idx");
    b.write(&tmp).expect("write");
    let path = publish(&tmp, dir, first, last).expect("publish");
    (path, entries)
}

/// A filled builder and the entries it holds.
fn builder(
    first: u32,
    per_ledger: &[u32],
    hashes: Vec<[u8; 32]>,
) -> (SegmentBuilder, Vec<([u8; 32], TxPos)>) {
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
    assert!(it.next().is_none(), "as many hashes as txs");
    let last = first + per_ledger.len() as u32 - 1;
    let mut b = SegmentBuilder::new(first, last).expect("range");
    // Push in hash order, as a scan of the hot index yields them.
    let mut shuffled = entries.clone();
    shuffled.sort_unstable_by_key(|e| e.0);
    for (h, p) in shuffled {
        b.push(h, p).expect("in range");
    }
    (b, entries)
}

/// The MPH kind and salt words in a segment file's header.
fn header_kind_and_salt(path: &Path) -> (u32, [u8; 16]) {
    let bytes = std::fs::read(path).expect("read");
    let kind = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
    (kind, bytes[48..64].try_into().expect("16 bytes"))
}

/// Every entry maps to its exact position, and random misses pass the
/// fingerprint at about the 2^-16 rate (20,000 give ~0.3).
fn assert_exact_and_rejects_misses(seg: &Segment, entries: &[([u8; 32], TxPos)]) {
    assert_eq!(seg.info().keys, entries.len() as u64);
    for (h, pos) in entries {
        assert_eq!(seg.lookup(h), Some(*pos), "{}", hex(h));
    }
    let misses = random_hashes(99, 20_000);
    let fp = misses.iter().filter(|h| seg.lookup(h).is_some()).count();
    assert!(fp <= 5, "{fp} false positives in 20,000 misses");
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
    // A flipped ordinal: the header still adds up, so open (constant work)
    // accepts the file, and the checksum names it.
    let at = bytes.len() - CHECKSUM_BYTES - 9;
    bytes[at] ^= 0x40;
    std::fs::write(&path, &bytes).expect("write");
    let seg = Segment::open(&path).expect("open checks the header only");
    let err = seg.verify().expect_err("corrupt");
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
    assert!(err.to_string().contains(&file_name(1, 3)), "{err}");
    // A changed size is caught at open.
    bytes.push(0);
    std::fs::write(&path, &bytes).expect("write");
    let err = Segment::open(&path).expect_err("size");
    assert!(err.to_string().contains("do not match"), "{err}");
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
        err.to_string().contains(&format!(
            "tx hash {} appears twice, at ledger 10 index 0 and ledger 10 index 1",
            hex(&[1; 32])
        )),
        "{err}"
    );
    assert!(SegmentBuilder::new(5, 4).is_err());
}

/// Hashes arrive unverified, so a client can send hashes that share their
/// first 16 bytes (kind 1's whole key), or 18 (the fingerprint too). They
/// build, and each maps to its exact position.
#[test]
fn hashes_sharing_16_or_18_leading_bytes_build_and_map_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut hashes = random_hashes(4, 3_000);
    for (i, h) in hashes.iter_mut().enumerate() {
        match i % 3 {
            // Groups of ten share the first 16 bytes, bytes 16..18 differ.
            0 => h[..16].copy_from_slice(&[(i / 30) as u8; 16]),
            // Groups of ten share the first 18 bytes: one fingerprint.
            1 => h[..18].copy_from_slice(&[0x80 | (i / 30) as u8; 18]),
            // A thousand share the first 18 bytes; bytes 18..32 are random.
            _ => h[..18].copy_from_slice(&[0xEE; 18]),
        }
    }
    let per_ledger = [1_000, 0, 2_000];
    let (path, entries) = build_from(dir.path(), 7, &per_ledger, hashes.clone());
    assert_eq!(header_kind_and_salt(&path).0, MPH_SALTED_NH);
    let seg = Segment::open(&path).expect("open");
    assert_exact_and_rejects_misses(&seg, &entries);
    // Pairs that differ in one bit of the last byte only.
    let pairs: Vec<[u8; 32]> = (0..500u32)
        .flat_map(|i| {
            let mut h = [0x33; 32];
            h[..4].copy_from_slice(&i.to_le_bytes());
            let mut g = h;
            g[31] ^= 1;
            [h, g]
        })
        .collect();
    let (path, entries) = build_from(dir.path(), 20, &[1_000], pairs);
    let seg = Segment::open(&path).expect("open");
    assert_exact_and_rejects_misses(&seg, &entries);
    // A miss that shares a thousand members' first 18 bytes passes the
    // fingerprint whenever its slot holds one of them (a third of slots):
    // the caller's body check rejects it. It never maps outside the range.
    let mut miss = hashes[2];
    miss[31] ^= 0xFF;
    if let Some(pos) = Segment::open(&dir.path().join(file_name(7, 9)))
        .expect("open")
        .lookup(&miss)
    {
        assert!((7..=9).contains(&pos.seq), "{pos:?}");
    }
}

/// wyhash has collisions that do not depend on its seed: a first word equal
/// to its constant P1 zeroes a product whatever the second word is. Raw
/// hashes built so (and, for kind 1's 16-byte key, a second word equal to
/// P2) defeat every MPH level; salted keys separate them.
#[test]
fn hashes_crafted_to_collide_under_wyhash_build() {
    const P1: u64 = 0xe703_7ed1_a0b4_28db;
    const P2: u64 = 0x8ebc_6af0_9c88_c6e3;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut hashes = random_hashes(5, 200);
    for (i, h) in hashes.iter_mut().enumerate().take(100) {
        let mut c = [0x77; 32];
        if i % 2 == 0 {
            // Raw 32-byte wyhash: equal but for bytes 8..16.
            c[..8].copy_from_slice(&P1.to_le_bytes());
        } else {
            // 16-byte wyhash: bytes 8..16 as it reads P2; bytes 0..8 differ.
            c[8..12].copy_from_slice(&((P2 >> 32) as u32).to_le_bytes());
            c[12..16].copy_from_slice(&(P2 as u32).to_le_bytes());
            c[..8].fill(0);
        }
        c[if i % 2 == 0 { 8 } else { 0 }] = i as u8;
        *h = c;
    }
    let (path, entries) = build_from(dir.path(), 1, &[50, 150], hashes);
    let seg = Segment::open(&path).expect("open");
    assert_exact_and_rejects_misses(&seg, &entries);
}

/// A salt that happens to mix two hashes to one key is replaced; a build
/// that runs out of salts fails with an error, never a panic.
#[test]
fn a_colliding_salt_is_replaced_and_running_out_of_salts_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad: [u64; 2] = [0x1234_5678_9abc_def0, 42];
    // Under `bad`, NH's first product is zero for both: the keys collide.
    let mut hashes = random_hashes(6, 10);
    for (i, h) in hashes.iter_mut().enumerate().take(2) {
        h[..8].copy_from_slice(&bad[0].wrapping_neg().to_le_bytes());
        h[8] = i as u8;
        h[16..].fill(9);
    }
    let scheme = KeyScheme::salted(bad);
    assert_eq!(scheme.key(&hashes[0]), scheme.key(&hashes[1]));
    let good = [7, 8];
    let mut drawn = vec![good, bad];
    let (b, entries) = builder(1, &[10], hashes.clone());
    let tmp = dir.path().join("tmp.idx");
    b.write_with(
        &tmp,
        None,
        MPH_SALTED_NH,
        &mut || drawn.pop().expect("a salt"),
        PART_KEYS,
    )
    .expect("the second salt builds");
    assert!(drawn.is_empty(), "two salts drawn");
    let (kind, salt) = header_kind_and_salt(&tmp);
    assert_eq!(kind, MPH_SALTED_NH);
    assert_eq!(salt, KeyScheme::salted(good).salt_bytes());
    let seg = Segment::open(&tmp).expect("open");
    assert_exact_and_rejects_misses(&seg, &entries);
    let (b, _) = builder(1, &[10], hashes);
    let mut draws = 0;
    let err = b
        .write_with(
            &dir.path().join("x"),
            None,
            MPH_SALTED_NH,
            &mut || {
                draws += 1;
                bad
            },
            PART_KEYS,
        )
        .expect_err("only colliding salts");
    assert_eq!(draws, MAX_SALTS);
    assert!(
        err.to_string().contains("mixed two hashes to one key"),
        "{err}"
    );
}

/// Kind 1 files (the previous release's, keyed by the first 16 bytes)
/// still open and answer exactly: one written by that release, and one
/// written here through the kind 1 path.
#[test]
fn kind_1_files_still_open_and_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Written by the previous release: ledgers 100..=102 with 40, 0 and 60
    // txs, tx `i` of ledger `s` hashed as SHA-256("legacy-s-i").
    let path = dir.path().join(file_name(100, 102));
    std::fs::write(&path, include_bytes!("../testdata/seg-kind1-legacy.idx")).expect("write");
    assert_eq!(header_kind_and_salt(&path), (MPH_PREFIX, [0; 16]));
    let seg = Segment::open(&path).expect("open");
    assert_eq!(seg.scheme, KeyScheme::Prefix);
    seg.verify()
        .expect("a version 1 file (u32 ordinals) verifies");
    let entries: Vec<([u8; 32], TxPos)> = [(100u32, 40u32), (102, 60)]
        .into_iter()
        .flat_map(|(seq, count)| {
            (0..count).map(move |index| {
                let h: [u8; 32] = Sha256::digest(format!("legacy-{seq}-{index}")).into();
                (h, TxPos { seq, index })
            })
        })
        .collect();
    assert_exact_and_rejects_misses(&seg, &entries);
    // Written here as kind 1.
    let (b, entries) = builder(1_000, &[30, 0, 17, 250], random_hashes(7, 297));
    let tmp = dir.path().join("tmp.idx");
    b.write_with(
        &tmp,
        None,
        MPH_PREFIX,
        &mut || unreachable!("kind 1 has no salt"),
        PART_KEYS,
    )
    .expect("write kind 1");
    assert_eq!(header_kind_and_salt(&tmp), (MPH_PREFIX, [0; 16]));
    let seg = Segment::open(&tmp).expect("open");
    assert_exact_and_rejects_misses(&seg, &entries);
    // The kind 1 writer still refuses a shared prefix, by name.
    let mut hashes = random_hashes(8, 2);
    hashes[1][..16].copy_from_slice(&[0xC3; 16]);
    hashes[0][..16].copy_from_slice(&[0xC3; 16]);
    let (b, _) = builder(1, &[2], hashes);
    let err = b
        .write_with(
            &dir.path().join("y"),
            None,
            MPH_PREFIX,
            &mut || [0, 0],
            PART_KEYS,
        )
        .expect_err("shared prefix");
    assert!(
        err.to_string()
            .contains(&format!("share the 128-bit prefix {}", hex(&[0xC3; 16]))),
        "{err}"
    );
}

/// Version 2 files (the previous release's: fingerprints, then packed
/// ordinals, offsets searched whole) still open, verify and answer
/// exactly; files written now are version 3 and answer the same.
#[test]
fn version_2_files_still_open_and_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Written by the previous release: ledgers 200..=203 with 33, 0, 70
    // and 1 txs, tx `i` of ledger `s` hashed as SHA-256("v2-s-i"), salt
    // words 1 and 2.
    let path = dir.path().join(file_name(200, 203));
    std::fs::write(&path, include_bytes!("../testdata/seg-v2-split.idx")).expect("write");
    let bytes = std::fs::read(&path).expect("read");
    assert_eq!(
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
        2
    );
    let seg = Segment::open(&path).expect("open");
    seg.verify().expect("a version 2 file verifies");
    let unfiltered = Segment::open(&path).expect("open");
    let entries: Vec<([u8; 32], TxPos)> = [(200u32, 33u32), (202, 70), (203, 1)]
        .into_iter()
        .flat_map(|(seq, count)| {
            (0..count).map(move |index| {
                let h: [u8; 32] = Sha256::digest(format!("v2-{seq}-{index}")).into();
                (h, TxPos { seq, index })
            })
        })
        .collect();
    assert_exact_and_rejects_misses(&seg, &entries);
    // The fingerprints on the heap answer the same.
    unfiltered.load_filter();
    assert!(unfiltered.filter_loaded());
    assert_eq!(unfiltered.filter_bytes(), 2 * 104);
    assert_exact_and_rejects_misses(&unfiltered, &entries);
    let (b, _) = builder(200, &[33, 0, 70, 1], entries.iter().map(|e| e.0).collect());
    let now = dir.path().join("now.idx");
    b.write(&now).expect("write");
    let bytes = std::fs::read(&now).expect("read");
    assert_eq!(
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
        VERSION
    );
    assert_exact_and_rejects_misses(&Segment::open(&now).expect("open"), &entries);
}

/// Version 3 finds a ledger through the offset sample and one 1,024-ledger
/// block: ranges on both sides of a block boundary, with empty ledgers
/// (equal offsets) at and around it, answer exactly.
#[test]
fn positions_resolve_across_offset_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    for ledgers in [1023usize, 1024, 1025, 2048, 3000] {
        let mut counts = vec![0u32; ledgers];
        for (i, c) in counts.iter_mut().enumerate() {
            // Mostly one tx, none around each block boundary, and the last
            // ledger of the range holds some.
            *c = match i % 1024 {
                1022 | 1023 | 0 => 0,
                _ => 1 + (i % 3) as u32,
            };
        }
        counts[ledgers - 1] = 2;
        let n: u32 = counts.iter().sum();
        let (b, entries) = builder(5_000, &counts, random_hashes(ledgers as u64, n as usize));
        let path = dir.path().join(format!("blocks-{ledgers}.idx"));
        b.write(&path).expect("write");
        let seg = Segment::open(&path).expect("open");
        seg.verify().expect("verify");
        assert_exact_and_rejects_misses(&seg, &entries);
        seg.load_filter();
        assert_exact_and_rejects_misses(&seg, &entries);
    }
}

#[test]
fn an_unknown_mph_kind_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = build(dir.path(), 1, &[3, 4], 9);
    let mut bytes = std::fs::read(&path).expect("read");
    bytes[12..16].copy_from_slice(&3u32.to_le_bytes());
    let body = bytes.len() - CHECKSUM_BYTES;
    let sum = Sha256::digest(&bytes[..body]);
    bytes[body..].copy_from_slice(&sum);
    std::fs::write(&path, &bytes).expect("write");
    let err = Segment::open(&path).expect_err("kind 3");
    assert!(err.to_string().contains("unknown MPH kind 3"), "{err}");
}

#[test]
fn ordinals_pack_at_every_width() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Key counts on both sides of powers of two: 1..=3 bits and 9..=11.
    for n in [1u32, 2, 3, 4, 5, 7, 8, 9, 255, 256, 257, 1025] {
        let per_ledger = [n / 2, 0, n - n / 2];
        let (path, entries) = build(dir.path(), 100, &per_ledger, u64::from(n));
        let seg = Segment::open(&path).expect("open");
        seg.verify().expect("verify");
        for (h, pos) in &entries {
            assert_eq!(seg.lookup(h), Some(*pos), "n {n}");
        }
        let bits = ordinal_bits(n as usize);
        assert!(
            n <= 1 << bits && (bits == 1 || n > 1 << (bits - 1)),
            "n {n} bits {bits}"
        );
    }
}

#[test]
fn a_hash_list_round_trips_and_refuses_damage_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (b, entries) = builder(20, &[2, 0, 3], random_hashes(9, 5));
    let hashes = dir.path().join(hashes::file_name(20, 22));
    b.write_with_hashes(&dir.path().join("tmp.idx"), &hashes)
        .expect("write");
    let back = hashes::read(&hashes, 20, 22).expect("read");
    assert_eq!(back, entries, "position order, every hash");
    assert_eq!(
        hashes::parse_file_name(&hashes::file_name(20, 22)),
        Some((20, 22))
    );
    let again = dir.path().join("again.bin");
    hashes::write_list(&again, 20, 22, &entries).expect("write_list");
    assert_eq!(
        std::fs::read(&again).expect("read"),
        std::fs::read(&hashes).expect("read"),
        "the same bytes from the builder and from a list"
    );
    let mut gap = entries.clone();
    gap.remove(0);
    let err = hashes::write_list(&again, 20, 22, &gap).expect_err("index 1 first");
    assert!(err.to_string().contains("out of position order"), "{err}");
    let err = hashes::read(&hashes, 20, 23).expect_err("other range");
    assert!(err.to_string().contains("expected 20..=23"), "{err}");
    let mut bytes = std::fs::read(&hashes).expect("read");
    let at = bytes.len() - 40;
    bytes[at] ^= 1;
    std::fs::write(&hashes, &bytes).expect("write");
    let err = hashes::read(&hashes, 20, 22).expect_err("flipped");
    assert!(err.to_string().contains("checksum mismatch"), "{err}");
    assert!(
        err.to_string().contains(&hashes::file_name(20, 22)),
        "{err}"
    );
    bytes.truncate(bytes.len() - 1);
    std::fs::write(&hashes, &bytes).expect("write");
    let err = hashes::read(&hashes, 20, 22).expect_err("short");
    assert!(err.to_string().contains("do not match"), "{err}");
}

/// A segment split into partitions (tiny ones here, so that the temporary
/// partition files and spools are used) answers exactly like one built
/// whole, and leaves no temporary file behind.
#[test]
fn partitioned_builds_answer_exactly_and_clean_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let per_ledger = [300, 0, 1, 299, 400];
    let (b, entries) = builder(50, &per_ledger, random_hashes(21, 1_000));
    let tmp = dir.path().join("tmp-50-54.idx");
    let info = b
        .write_with(&tmp, None, MPH_SALTED_NH, &mut fresh_salt, 64)
        .expect("write");
    let seg = Segment::open(&tmp).expect("open");
    seg.verify().expect("verify");
    assert_eq!(seg.parts(), 16, "1,000 keys in partitions of at most 64");
    assert_exact_and_rejects_misses(&seg, &entries);
    // Tiny partitions pay 16 bytes of directory each (2 bits a key here).
    assert!(
        info.mph_bits_per_key > 2.0 && info.mph_bits_per_key < 8.0,
        "{info:?}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("tmp-50-54.idx")]);
    // The streaming writer directly, ledger by ledger, with a gap.
    let path = dir.path().join("w.idx");
    let mut w = SegmentWriter::with(50, 54, 1_000, &path, KeyScheme::salted(fresh_salt()), 100)
        .expect("writer");
    for (seq, group) in entries
        .chunk_by(|a, b| a.1.seq == b.1.seq)
        .map(|g| (g[0].1.seq, g))
    {
        let hashes: Vec<[u8; 32]> = group.iter().map(|e| e.0).collect();
        w.push_ledger(seq, &hashes).expect("push");
    }
    w.finish(&path).expect("finish");
    let seg = Segment::open(&path).expect("open");
    assert_eq!(seg.parts(), 10);
    assert_exact_and_rejects_misses(&seg, &entries);
    // A cancelled build stops before its next partition and leaves no
    // partition file behind.
    let cancelled = dir.path().join("tmp-c.idx");
    let mut w = SegmentWriter::with(50, 54, 1_000, &cancelled, KeyScheme::salted([3, 4]), 100)
        .expect("writer");
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    w.cancel_on(flag);
    for (seq, group) in entries
        .chunk_by(|a, b| a.1.seq == b.1.seq)
        .map(|g| (g[0].1.seq, g))
    {
        let hashes: Vec<[u8; 32]> = group.iter().map(|e| e.0).collect();
        w.push_ledger(seq, &hashes).expect("push");
    }
    let e = w.finish(&cancelled).expect_err("cancelled");
    assert!(matches!(e, SegmentError::Cancelled), "{e}");
    assert!(
        !std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().contains(".part-")),
        "partition files removed"
    );
    // Refused: a ledger out of order, more keys than announced, fewer.
    let mut w = SegmentWriter::with(1, 3, 2, &path, KeyScheme::salted([1, 2]), 64).expect("w");
    w.push_ledger(2, &[[1; 32]]).expect("push");
    let e = w.push_ledger(1, &[[2; 32]]).expect_err("out of order");
    assert!(e.to_string().contains("out of order"), "{e}");
    let e = w.push_ledger(3, &[[2; 32], [3; 32]]).expect_err("too many");
    assert!(e.to_string().contains("more than the 2 keys"), "{e}");
    let e = w.finish(&path).expect_err("too few");
    assert!(
        e.to_string()
            .contains("2 keys announced for 1..=3, 1 pushed"),
        "{e}"
    );
}
