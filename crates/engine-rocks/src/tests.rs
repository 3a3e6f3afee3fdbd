use super::*;
use ledgerstore_db_api::BlockDict;
use rocksdb::Options;

fn small(profile: RocksProfile) -> RocksOptions {
    let mut o = match profile {
        RocksProfile::FieldStudy => RocksOptions::field_study(),
        RocksProfile::Tuned => RocksOptions::tuned(true),
    };
    o.write_buffer_bytes = 1 << 20;
    o.block_cache_bytes = 1 << 20;
    o.background_jobs = 2;
    o
}

#[test]
fn both_profiles_commit_read_scan_and_reopen() {
    for profile in [RocksProfile::FieldStudy, RocksProfile::Tuned] {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let store = RocksStore::open(dir.path(), "ledgers", &small(profile), Access::ReadWrite)
                .expect("open");
            let mut w = store.begin_write().expect("begin");
            for i in 0u32..1000 {
                w.put(&i.to_be_bytes(), &[i as u8; 600]).expect("put");
            }
            w.finish().expect("finish");
            let t = w.commit().expect("commit");
            if profile == RocksProfile::Tuned {
                assert_eq!(t.compact, std::time::Duration::ZERO);
            }
        }
        let store = RocksStore::open(dir.path(), "ledgers", &small(profile), Access::ReadWrite)
            .expect("reopen");
        assert_eq!(
            store.get(&5u32.to_be_bytes()).expect("get"),
            Some(vec![5u8; 600]),
            "{profile:?}"
        );
        let got = store.scan(&998u32.to_be_bytes(), 10).expect("scan");
        assert_eq!(got.len(), 2);
        let keys: Vec<&[u8]> = vec![b"zz", &[0, 0, 0, 1]];
        let m = store.multi_get(&keys).expect("multi");
        assert_eq!(m, vec![None, Some(vec![1u8; 600])]);
        let stats = store.stats().expect("stats");
        assert!(stats.disk_bytes > 0);
        assert_eq!(stats.files_per_level.len(), 7);
    }
}

#[test]
fn field_study_commit_compacts_to_one_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = RocksStore::open(
        dir.path(),
        "tx_data",
        &small(RocksProfile::FieldStudy),
        Access::ReadWrite,
    )
    .expect("open");
    for batch in 0u32..3 {
        let mut w = store.begin_write().expect("begin");
        for i in 0u32..500 {
            let key = (batch * 1000 + i).to_be_bytes();
            w.put(&key, &[1u8; 300]).expect("put");
        }
        w.commit().expect("commit");
    }
    let stats = store.stats().expect("stats");
    assert_eq!(stats.files_per_level[0], 0, "{:?}", stats.files_per_level);
    assert!(stats.keys >= 1000);
}

#[test]
fn bytes_written_counts_flush_and_wal_then_background_work_drains() {
    for profile in [RocksProfile::FieldStudy, RocksProfile::Tuned] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = RocksStore::open(dir.path(), "tx_data", &small(profile), Access::ReadWrite)
            .expect("open");
        let before = store.stats().expect("stats").bytes_written;
        assert_eq!(before, Some(0), "{profile:?}");
        let logical = 2000u64 * (4 + 1000);
        let mut w = store.begin_write().expect("begin");
        for i in 0u32..2000 {
            w.put(&i.to_be_bytes(), &[i as u8; 1000]).expect("put");
        }
        w.finish().expect("finish");
        w.commit().expect("commit");
        store.wait_for_background_work().expect("drain");
        let written = store
            .stats()
            .expect("stats")
            .bytes_written
            .expect("rocksdb counts");
        // Field: flushed SSTs (WAL off). Tuned: WAL + whatever flushed.
        assert!(written >= logical, "{profile:?}: {written} < {logical}");
    }
}

/// Text-like values (a small vocabulary, pseudo-random order): compressible
/// as real XDR is, not trivially as a repeated byte.
fn wordy(i: u32, len: usize) -> Vec<u8> {
    const WORDS: [&[u8]; 8] = [
        b"account ",
        b"payment ",
        b"offer ",
        b"ledger ",
        b"trust ",
        b"asset ",
        b"fee ",
        b"meta ",
    ];
    let mut x = u64::from(i).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(WORDS[(x % 8) as usize]);
        out.push((x >> 8) as u8);
    }
    out.truncate(len);
    out
}

fn blocks() -> RocksOptions {
    let mut o = RocksOptions::tuned_blocks(
        64 << 10,
        BlockCompression {
            level: 3,
            dict_bytes: 16 << 10,
            dict_form: BlockDict::Trained,
        },
    );
    o.block_cache_bytes = 1 << 20;
    o.background_jobs = 2;
    o
}

/// Opens (or reopens) a `tx_data` table with [`blocks`] in `dir`.
fn open_blocks(dir: &std::path::Path) -> RocksStore {
    RocksStore::open(dir, "tx_data", &blocks(), Access::ReadWrite).expect("open")
}

/// Set by [`block_compression_stores_raw_values_compressed_and_bulk_writes_skip_the_wal`]
/// for the child it runs: the directory to write into before aborting.
const CHILD_DIR: &str = "LEDGERSTORE_ROCKS_BLOCKS_CHILD_DIR";

/// The child half of the crash check: a small write and a bulk write, each
/// committed, then an abort (no close, no flush at shutdown). Does
/// nothing unless the parent test set [`CHILD_DIR`].
#[test]
fn block_compression_child_writes_then_aborts() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let store = RocksStore::open(
        std::path::Path::new(&dir),
        "tx_data",
        &blocks(),
        Access::ReadWrite,
    )
    .expect("open");
    // What the WAL holds on disk (the ticker counts bytes before WAL
    // compression).
    let dir = std::path::PathBuf::from(&dir);
    let wal = || -> u64 {
        std::fs::read_dir(&dir)
            .expect("list")
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
            .map(|e| e.metadata().expect("stat").len())
            .sum()
    };
    // A small write goes through the WAL, compressed, and is durable at
    // commit without a flush.
    let mut w = store.begin_write().expect("begin");
    for i in 0u32..100 {
        w.put(&i.to_be_bytes(), &wordy(i, 3000)).expect("put");
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
    let logged = wal();
    assert!(logged > 0, "a small write is logged");
    assert!(logged < 100 * 3000 / 2, "the WAL is compressed: {logged} B");
    // A bulk write (more than one 32 MiB chunk) skips the WAL: put one
    // at a time, it is flushed at commit; sorted pairs become SST files
    // ingested at commit.
    let ticker = store.rocks_opts.get_ticker_count(Ticker::WalFileBytes);
    let mut w = store.begin_write().expect("begin");
    for i in 100u32..(100 + 12_000) {
        w.put(&i.to_be_bytes(), &wordy(i, 3000)).expect("put");
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 20_000..32_000, 0);
    w.finish().expect("finish");
    w.commit().expect("commit");
    let bulk = store.rocks_opts.get_ticker_count(Ticker::WalFileBytes) - ticker;
    assert!(
        bulk < 1 << 20,
        "bulk writes skipped the WAL: {bulk} B logged"
    );
    // A small write after them is committed through the WAL alone: it
    // must survive the abort too.
    let mut w = store.begin_write().expect("begin");
    w.put(&50_000u32.to_be_bytes(), &wordy(50_000, 3000))
        .expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
    // Then a small write that is never committed: gone after the abort
    // or not, it must not hide what was committed.
    let mut w = store.begin_write().expect("begin");
    w.put(&u32::MAX.to_be_bytes(), b"uncommitted").expect("put");
    w.finish().expect("finish");
    println!("child: committed, aborting");
    std::process::abort();
}

#[test]
fn block_compression_stores_raw_values_compressed_and_bulk_writes_skip_the_wal() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The writes happen in a child process that aborts after its commits:
    // no close and no flush at shutdown, as in a crash.
    // Through sh for `ulimit -c 0`: the abort leaves no core file.
    let out = std::process::Command::new("sh")
        .args(["-c", "ulimit -c 0; exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "tests::block_compression_child_writes_then_aborts",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR, dir.path())
        .output()
        .expect("run the child");
    let said =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("child: committed, aborting") && !out.status.success(),
        "the child must commit and then abort: {said}"
    );
    // Everything committed reads back: the bulk writes from the SSTs
    // their commits flushed or ingested, the small writes from the WAL.
    let store = open_blocks(dir.path());
    for i in [0u32, 57, 99, 100, 6_000, 12_099, 20_000, 31_999, 50_000] {
        assert_eq!(
            store.get(&i.to_be_bytes()).expect("get"),
            Some(wordy(i, 3000)),
            "value {i}"
        );
    }
    // The uncommitted write may or may not have survived (its WAL record
    // was written, not synced); every committed key is there.
    let tail = store.scan(&12_090u32.to_be_bytes(), 100).expect("scan");
    let committed = tail
        .iter()
        .filter(|(k, _)| k.as_slice() < 12_100u32.to_be_bytes().as_slice())
        .count();
    assert_eq!(committed, 10);
    store.wait_for_background_work().expect("drain");
    let disk = store.stats().expect("stats").disk_bytes;
    let raw = 24_100u64 * 3004;
    assert!(
        disk * 2 < raw,
        "blocks compress: {disk} B on disk for {raw} raw"
    );
}

/// The bytes of every SST file in `dir`.
fn ssts(dir: &std::path::Path) -> Vec<Vec<u8>> {
    std::fs::read_dir(dir)
        .expect("list")
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "sst"))
        .map(|e| std::fs::read(e.path()).expect("read sst"))
        .collect()
}

fn holds(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A dictionary is trained even when it is small beside the blocks
/// (RocksDB samples whole blocks, the last one cut short, and zstd refuses
/// fewer than 7 samples: 100 × 2 KiB of ~64 KiB blocks would be 4), and
/// RocksDB's buffer of blocks awaiting it is bounded to the training
/// input, not a flush's whole output. Without a dictionary no SST holds
/// one (so the probe can tell). Sampled dictionaries (no training) are
/// made from a buffer of their own (`dict_buffer_bytes`), and RocksDB is
/// told not to train.
#[test]
fn a_block_dictionary_is_trained_on_enough_blocks_with_a_bounded_buffer() {
    // Keys ascending: a bulk write's own SST files; descending: memtables
    // flushed at commit. Both must hold a dictionary, in either form.
    let (trained, samples) = (BlockDict::Trained, BlockDict::Samples);
    for (dict_bytes, ascending, dict_form) in [
        (2usize << 10, true, trained),
        (2 << 10, false, trained),
        (2 << 10, true, samples),
        (2 << 10, false, samples),
        (0, true, trained),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = blocks();
        opts.block_compression = Some(BlockCompression {
            level: 3,
            dict_bytes,
            dict_form,
        });
        let store =
            RocksStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite).expect("open");
        // One bulk commit (past a 32 MiB chunk), sorted pairs or not.
        let mut w = store.begin_write().expect("begin");
        if ascending {
            put_all(&mut w, 0..12_000, 0);
        } else {
            put_all(&mut w, (0..12_000).rev(), 0);
        }
        w.finish().expect("finish");
        w.commit().expect("commit");
        store.wait_for_background_work().expect("drain");
        let files = ssts(dir.path());
        assert!(!files.is_empty(), "the commit wrote SSTs");
        // Also shows that the options string that bounds the buffer kept
        // the rest: statistics still count.
        let flushed = store.rocks_opts.get_ticker_count(Ticker::FlushWriteBytes);
        assert_eq!(
            flushed > 0,
            !ascending,
            "flushed only when keys did not ascend (put one at a time)"
        );
        let with_dict = files
            .iter()
            .filter(|f| holds(f, b"compression_dict"))
            .count();
        // The table's own `compression_opts` line (the OPTIONS file
        // also has `bottommost_compression_opts`, all zeros).
        let options: String = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
            .map(|e| std::fs::read_to_string(e.path()).expect("options"))
            .collect();
        let opts_line = options
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("compression_opts="))
            .unwrap_or_else(|| panic!("no compression_opts in {options}"))
            .to_string();
        // Its `key=value` fields.
        let fields: Vec<&str> = opts_line["compression_opts=".len()..]
            .split(['{', '}', ';'])
            .filter(|f| !f.is_empty())
            .collect();
        if dict_bytes == 0 {
            assert_eq!(with_dict, 0, "no dictionary asked, none stored");
            assert!(fields.contains(&"max_dict_bytes=0"), "{opts_line}");
            continue;
        }
        assert_eq!(
            with_dict,
            files.len(),
            "every SST holds its dictionary (ascending: {ascending}, {dict_form})"
        );
        let train = dict_train_bytes(dict_bytes, 64 << 10);
        assert_eq!(train, 16 * (64 << 10), "at least 16 blocks of samples");
        // 0: RocksDB uses its samples as the dictionary, untrained, from a
        // buffer of 16 blocks (4 × 2 KiB is less).
        let (trainer, buffer) = match dict_form {
            BlockDict::Trained => (train, train),
            BlockDict::Samples => (0, 16 * (64 << 10)),
        };
        assert_eq!(buffer, dict_buffer_bytes(dict_bytes, 64 << 10, dict_form));
        // Each file records the options it was written with: the bulk
        // writer's and the flush's alike.
        for recorded in [
            format!("zstd_max_train_bytes={trainer}; "),
            format!("max_dict_buffer_bytes={buffer}; "),
        ] {
            assert!(
                files.iter().all(|f| holds(f, recorded.as_bytes())),
                "every SST was written with {recorded:?} ({dict_form}, ascending: {ascending})"
            );
        }
        assert_eq!(
            dict_buffer_bytes(1 << 20, 64 << 10, BlockDict::Samples),
            4 << 20,
            "a sampled 1 MiB dictionary buffers 4 MiB, not a whole file"
        );
        assert_eq!(
            dict_buffer_bytes(64 << 10, 4 << 20, BlockDict::Samples),
            16 << 20,
            "4 MiB blocks: a quarter of a file, not 16 blocks (the whole file)"
        );
        for want in [
            format!("max_dict_buffer_bytes={buffer}"),
            format!("zstd_max_train_bytes={trainer}"),
            format!("max_dict_bytes={dict_bytes}"),
            "level=3".to_string(),
            "window_bits=-14".to_string(),
        ] {
            assert!(
                fields.contains(&want.as_str()),
                "the buffer is bounded to the training input, the rest kept: {want} in {opts_line}"
            );
        }
        for i in [0u32, 5_999, 11_999] {
            assert_eq!(
                store.get(&i.to_be_bytes()).expect("get"),
                Some(wordy(i, 3000))
            );
        }
    }
}

/// The names of the files in `dir` a bulk write has not handed over yet.
fn parts(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("list")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sst.part"))
        .collect()
}

/// Puts `keys` with `wordy` values of 3,000 bytes seeded by `seed + key`,
/// in one `put_sorted`.
fn put_all(w: &mut Box<dyn KvWrite + '_>, keys: impl Iterator<Item = u32>, seed: u32) {
    let owned: Vec<([u8; 4], Vec<u8>)> = keys
        .map(|i| (i.to_be_bytes(), wordy(seed + i, 3000)))
        .collect();
    let pairs: Vec<(&[u8], &[u8])> = owned.iter().map(|(k, v)| (&k[..], v.as_slice())).collect();
    w.put_sorted(&pairs).expect("put_sorted");
}

/// Sorted pairs past a 32 MiB chunk (12,000 × 3 KB) become SST files at
/// the bottom level, compressed, counted in `bytes_written`, and nothing
/// of them is visible before commit.
#[test]
fn sorted_pairs_of_a_chunk_are_ingested_as_sst_files_at_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_blocks(dir.path());
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 0..12_000, 0);
    w.finish().expect("finish");
    assert_eq!(
        store.get(&0u32.to_be_bytes()).expect("get"),
        None,
        "not before commit"
    );
    assert_eq!(
        parts(dir.path()).len(),
        1,
        "36 MB raw: one file (cut at 64 MiB)"
    );
    w.commit().expect("commit");
    assert!(parts(dir.path()).is_empty(), "{:?}", parts(dir.path()));
    let stats = store.stats().expect("stats");
    assert_eq!(stats.files_per_level[0], 0, "{:?}", stats.files_per_level);
    assert!(stats.files_per_level[6] >= 1, "{:?}", stats.files_per_level);
    let raw = 12_000u64 * 3004;
    assert!(
        stats.disk_bytes * 2 < raw,
        "compressed: {} of {raw}",
        stats.disk_bytes
    );
    let written = stats.bytes_written.expect("counted");
    assert!(
        written * 2 < raw && written > raw / 20,
        "{written} B written for {raw} raw"
    );
    drop(store);
    let store = open_blocks(dir.path());
    for i in [0u32, 1, 5_000, 11_999] {
        assert_eq!(
            store.get(&i.to_be_bytes()).expect("get"),
            Some(wordy(i, 3000)),
            "{i}"
        );
    }
    assert_eq!(store.scan(&[], 20_000).expect("scan").len(), 12_000);
}

/// A bulk write keeps the order of its own writes: puts before sorted pairs
/// land before them, puts and deletes after them land after them, a second
/// `put_sorted` in the same write lands after the first (whose files are
/// kept), and a later bulk write over the same keys replaces an earlier.
#[test]
fn a_bulk_write_keeps_its_order_around_puts_deletes_and_older_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_blocks(dir.path());
    let mut w = store.begin_write().expect("begin");
    w.put(&3u32.to_be_bytes(), b"three first").expect("put");
    w.put(&4u32.to_be_bytes(), b"four first").expect("put");
    put_all(&mut w, 0..12_000, 0);
    // Puts and deletes after sorted pairs land after them, and sorted
    // pairs after those after them in turn.
    w.put(&5u32.to_be_bytes(), b"five again").expect("put");
    w.delete(&7u32.to_be_bytes()).expect("delete");
    w.put(&11_999u32.to_be_bytes(), b"last again").expect("put");
    put_all(&mut w, 20_000..32_000, 0);
    w.delete(&20_001u32.to_be_bytes()).expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");
    assert!(parts(dir.path()).is_empty());
    let check = |store: &RocksStore| {
        let get = |i: u32| store.get(&i.to_be_bytes()).expect("get");
        assert_eq!(get(5).as_deref(), Some(&b"five again"[..]));
        assert_eq!(get(3), Some(wordy(3, 3000)), "the pairs came after");
        assert_eq!(get(7), None);
        assert_eq!(get(11_999).as_deref(), Some(&b"last again"[..]));
        assert_eq!(get(20_001), None);
        for i in [0u32, 6, 8, 11_998, 20_000, 31_999] {
            assert_eq!(get(i), Some(wordy(i, 3000)), "{i}");
        }
    };
    check(&store);
    // A rollback's deletes (a small write: tombstones in the memtable),
    // then the same keys written again in bulk: the new values win.
    let mut w = store.begin_write().expect("begin");
    for i in 100u32..200 {
        w.delete(&i.to_be_bytes()).expect("delete");
    }
    w.commit().expect("commit");
    assert_eq!(store.get(&150u32.to_be_bytes()).expect("get"), None);
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 100..12_100, 500_000);
    w.commit().expect("commit");
    assert!(parts(dir.path()).is_empty());
    for i in [100u32, 150, 199, 12_099] {
        assert_eq!(
            store.get(&i.to_be_bytes()).expect("get"),
            Some(wordy(500_000 + i, 3000)),
            "{i}"
        );
    }
    // A second bulk write over keys already stored (ingest at an upper
    // level, newer than what it overlaps) wins, and the rest stays.
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 1_000..13_000, 1_000_000);
    // Sorted pairs again in the same write (past a chunk too, so SST
    // files), over some of the same keys: the later win, and the first
    // call's files are ingested, not dropped.
    put_all(&mut w, 12_500..24_000, 2_000_000);
    w.commit().expect("commit");
    let get = |i: u32| store.get(&i.to_be_bytes()).expect("get");
    assert_eq!(get(12_499), Some(wordy(1_012_499, 3000)));
    assert_eq!(get(12_500), Some(wordy(2_012_500, 3000)));
    assert_eq!(get(23_999), Some(wordy(2_023_999, 3000)));
    assert_eq!(get(20_001), Some(wordy(2_020_001, 3000)), "written again");
    assert_eq!(get(24_000), Some(wordy(24_000, 3000)));
    for i in [1_000u32, 5_000, 11_999, 12_499] {
        assert_eq!(get(i), Some(wordy(1_000_000 + i, 3000)), "{i}");
    }
    assert_eq!(get(999), Some(wordy(500_999, 3000)));
    assert_eq!(get(99), Some(wordy(99, 3000)));
    assert_eq!(get(7), None);
    drop(store);
    let store = open_blocks(dir.path());
    assert_eq!(
        store.get(&5_000u32.to_be_bytes()).expect("get"),
        Some(wordy(1_005_000, 3000))
    );
    assert_eq!(
        store.get(&20_001u32.to_be_bytes()).expect("get"),
        Some(wordy(2_020_001, 3000))
    );
    assert_eq!(
        store.get(&12_499u32.to_be_bytes()).expect("get"),
        Some(wordy(1_012_499, 3000))
    );
}

/// A bulk write dropped before commit leaves no file and no key; files a
/// crash left behind are removed when the table is opened read-write (and
/// left alone by a read-only open).
#[test]
fn an_abandoned_bulk_write_leaves_nothing_and_leftovers_are_removed_at_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = open_blocks(dir.path());
        let mut w = store.begin_write().expect("begin");
        put_all(&mut w, 0..12_000, 0);
        w.finish().expect("finish");
        assert!(!parts(dir.path()).is_empty(), "written, not ingested");
        drop(w);
        assert!(parts(dir.path()).is_empty(), "{:?}", parts(dir.path()));
        assert!(ssts(dir.path()).is_empty(), "nothing ingested");
        assert_eq!(store.get(&0u32.to_be_bytes()).expect("get"), None);
    }
    let leftover = dir.path().join("bulk-1-2.sst.part");
    std::fs::write(&leftover, b"half a file").expect("write");
    let other = dir.path().join("bulk-notes.txt");
    std::fs::write(&other, b"not ours").expect("write");
    drop(RocksStore::open(dir.path(), "tx_data", &blocks(), Access::ReadOnly).expect("ro"));
    assert!(leftover.exists(), "a read-only open changes nothing");
    let store = open_blocks(dir.path());
    assert!(!leftover.exists(), "removed at a read-write open");
    assert!(other.exists(), "only bulk parts are removed");
    assert_eq!(store.scan(&[], 10).expect("scan"), vec![]);
}

/// Sorted pairs are cut into files of about the given raw size, written
/// on several threads, all ingested together, their bytes counted; pairs
/// the SST writer refuses (keys out of order) fail by name, and their
/// files are removed.
#[test]
fn bulk_files_are_cut_by_raw_size_and_a_refused_write_leaves_nothing() {
    let owned: Vec<([u8; 4], Vec<u8>)> = (0u32..4_000)
        .map(|i| (i.to_be_bytes(), wordy(i, 3000)))
        .collect();
    let pairs: Vec<(&[u8], &[u8])> = owned.iter().map(|(k, v)| (&k[..], v.as_slice())).collect();
    assert!(bulk::strictly_ascending(&pairs));
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_blocks(dir.path());
    let mut files = bulk::BulkFiles::new("tx_data", dir.path());
    // 800 pairs of 3,004 bytes a file.
    files
        .write_sorted(&store.rocks_opts, &pairs, 800 * 3004, 2)
        .expect("write");
    assert_eq!(parts(dir.path()).len(), 5, "a file a 800 pairs");
    let bytes = files
        .ingest(&store.db, &store.write_cf(b"").expect("cf"))
        .expect("ingest");
    assert!(parts(dir.path()).is_empty());
    let on_disk = ssts(dir.path());
    assert_eq!(on_disk.len(), 5);
    assert_eq!(bytes, on_disk.iter().map(|f| f.len() as u64).sum::<u64>());
    for i in [0u32, 799, 800, 1_234, 3_999] {
        assert_eq!(
            store.get(&i.to_be_bytes()).expect("get"),
            Some(wordy(i, 3000))
        );
    }
    assert_eq!(store.scan(&[], 5_000).expect("scan").len(), 4_000);
    // Out of order in the fourth of five files.
    let mut bad = pairs.clone();
    bad.swap(2_500, 2_501);
    assert!(!bulk::strictly_ascending(&bad));
    let mut files = bulk::BulkFiles::new("tx_data", dir.path());
    let e = files
        .write_sorted(&store.rocks_opts, &bad, 800 * 3004, 3)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("tx_data") && e.contains("order"), "{e}");
    drop(files);
    assert!(parts(dir.path()).is_empty(), "{:?}", parts(dir.path()));
    assert_eq!(ssts(dir.path()).len(), 5);
}

/// Data blocks in the table's live SST files (RocksDB's aggregated table
/// properties).
fn data_blocks(store: &RocksStore) -> u64 {
    let props = store
        .db
        .property_value("rocksdb.aggregated-table-properties")
        .expect("property")
        .expect("aggregated table properties");
    props
        .split(';')
        .find_map(|f| f.trim().strip_prefix("# data blocks="))
        .unwrap_or_else(|| panic!("no data block count in {props}"))
        .trim()
        .parse()
        .expect("count")
}

/// 64 KiB blocks at zstd 3, no dictionary, bulk writes as `bulk` says.
fn bulk_table(bulk: Option<BulkBlocks>) -> RocksOptions {
    let mut o = RocksOptions::tuned_blocks(
        64 << 10,
        BlockCompression {
            level: 3,
            dict_bytes: 0,
            dict_form: BlockDict::Trained,
        },
    );
    o.block_cache_bytes = 1 << 20;
    o.background_jobs = 2;
    o.bulk_blocks = bulk;
    o
}

/// Bulk blocks of 1 MiB at zstd 9.
const ARCHIVE: BulkBlocks = BulkBlocks {
    block_bytes: 1 << 20,
    level: 9,
    min_bytes: None,
};

/// Opens a `tx_data` table with [`bulk_table`] and [`ARCHIVE`] bulk blocks.
fn open_archive(dir: &std::path::Path) -> RocksStore {
    RocksStore::open(
        dir,
        "tx_data",
        &bulk_table(Some(ARCHIVE)),
        Access::ReadWrite,
    )
    .expect("open")
}

/// A table with a bulk threshold of its own writes sorted pairs of that
/// size in bulk, below a chunk (ledger records: a backfill batch's are
/// ~15 MB), in its bulk blocks; smaller ones go through the memtable.
#[test]
fn a_bulk_threshold_of_its_own_makes_smaller_writes_bulk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let small = BulkBlocks {
        min_bytes: Some(2 << 20),
        ..ARCHIVE
    };
    let store = RocksStore::open(
        dir.path(),
        "tx_data",
        &bulk_table(Some(small)),
        Access::ReadWrite,
    )
    .expect("open");
    // 1,000 × 3,004 raw bytes: 3 MB, past the threshold, far below a chunk.
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 0..1_000, 0);
    w.finish().expect("finish");
    assert_eq!(parts(dir.path()).len(), 1, "one bulk file in progress");
    assert_eq!(
        store.get(&0u32.to_be_bytes()).expect("get"),
        None,
        "not before commit"
    );
    w.commit().expect("commit");
    let files = ssts(dir.path());
    assert_eq!(files.len(), 1, "one SST, ingested");
    assert!(holds(&files[0], b"level=9;"), "at the bulk level");
    assert!(
        (2..=4).contains(&data_blocks(&store)),
        "3 MB in 1 MiB blocks: {}",
        data_blocks(&store)
    );
    // Below the threshold: the memtable, so nothing new until a flush.
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 1_000..1_500, 0);
    w.finish().expect("finish");
    assert!(parts(dir.path()).is_empty(), "no bulk file");
    w.commit().expect("commit");
    assert_eq!(ssts(dir.path()).len(), 1, "in the memtable (the WAL)");
    for i in [0u32, 999, 1_000, 1_499] {
        assert_eq!(
            store.get(&i.to_be_bytes()).expect("get"),
            Some(wordy(i, 3000)),
            "key {i}"
        );
    }
}

/// A bulk write's SST files take `bulk_blocks`' block size and zstd
/// level, not the table's; everything else the table writes (a flushed
/// memtable) keeps the table's own; the values read back either way, and
/// after a reopen. Without `bulk_blocks` (or with the table's own values)
/// a bulk write makes the table's blocks.
#[test]
fn bulk_writes_take_their_own_block_size_and_level() {
    let table = bulk_table;
    let same = BulkBlocks {
        block_bytes: 64 << 10,
        level: 3,
        min_bytes: None,
    };
    // 12,000 × 3,004 raw bytes: ~550 blocks of 64 KiB, ~35 of 1 MiB.
    for (bulk, blocks, level) in [
        (None, 400..=800, 3),
        (Some(same), 400..=800, 3),
        (Some(ARCHIVE), 20..=60, 9),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let store =
            RocksStore::open(dir.path(), "tx_data", &table(bulk), Access::ReadWrite).expect("open");
        assert_eq!(store.bulk_opts.is_some(), bulk == Some(ARCHIVE), "{bulk:?}");
        let mut w = store.begin_write().expect("begin");
        put_all(&mut w, 0..12_000, 0);
        w.finish().expect("finish");
        w.commit().expect("commit");
        let n = data_blocks(&store);
        assert!(blocks.contains(&n), "{bulk:?}: {n} data blocks");
        let files = ssts(dir.path());
        assert!(
            files
                .iter()
                .all(|f| holds(f, format!("level={level};").as_bytes())),
            "{bulk:?}: every SST at zstd level {level}"
        );
        // A write below a chunk goes through the memtable; a flush of it
        // makes the table's blocks beside the bulk files.
        let mut w = store.begin_write().expect("begin");
        put_all(&mut w, 20_000..20_400, 7);
        w.finish().expect("finish");
        w.commit().expect("commit");
        store.db.flush().expect("flush");
        let flushed: Vec<Vec<u8>> = ssts(dir.path())
            .into_iter()
            .filter(|f| !files.contains(f))
            .collect();
        assert_eq!(flushed.len(), 1, "{bulk:?}: one flushed file");
        assert!(
            holds(&flushed[0], b"level=3;"),
            "{bulk:?}: a flush keeps the table's level"
        );
        assert!(
            (18..=40).contains(&(data_blocks(&store) - n)),
            "{bulk:?}: 400 × 3 KB flushed in 64 KiB blocks: {} more",
            data_blocks(&store) - n
        );
        drop(store);
        let store = RocksStore::open(dir.path(), "tx_data", &table(bulk), Access::ReadWrite)
            .expect("reopen");
        for i in [0u32, 5_000, 11_999] {
            assert_eq!(
                store.get(&i.to_be_bytes()).expect("get"),
                Some(wordy(i, 3000)),
                "{bulk:?}: {i}"
            );
        }
        assert_eq!(
            store.get(&20_399u32.to_be_bytes()).expect("get"),
            Some(wordy(7 + 20_399, 3000))
        );
    }
}

/// A memtable holding positions below a bulk write is flushed before the
/// bulk files go in, so positions put after them flush into a file of
/// their own: no flushed file spans the bulk files (compacting such a file
/// into their level would rewrite them in the table's blocks). Ingestion
/// alone flushes only a memtable whose keys overlap the files.
#[test]
fn a_memtable_is_flushed_before_bulk_files_go_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_archive(dir.path());
    for (keys, bulk) in [
        (0..100, false),
        (1_000..13_000, true),
        (20_000..20_100, false),
    ] {
        let mut w = store.begin_write().expect("begin");
        put_all(&mut w, keys, 0);
        w.finish().expect("finish");
        w.commit().expect("commit");
        assert_eq!(parts(dir.path()), Vec::<String>::new(), "{bulk}");
    }
    store.db.flush().expect("flush");
    let files = store.db.live_files().expect("live files");
    let key = |k: &Option<Vec<u8>>| {
        u32::from_be_bytes(k.as_deref().expect("key").try_into().expect("4 bytes"))
    };
    let spans: Vec<(u32, u32, i32)> = files
        .iter()
        .map(|f| (key(&f.start_key), key(&f.end_key), f.level))
        .collect();
    for flushed in [(0, 99), (20_000, 20_099)] {
        assert!(
            spans.iter().any(|(a, b, _)| (*a, *b) == flushed),
            "a file of its own for {flushed:?}: {spans:?}"
        );
    }
    assert!(
        spans
            .iter()
            .filter(|(a, b, _)| *a < 13_000 && *b >= 1_000)
            .all(|(a, b, level)| *a >= 1_000 && *b < 13_000 && *level == 6),
        "only the bulk files hold their positions: {spans:?}"
    );
    for i in [0u32, 99, 1_000, 12_999, 20_000, 20_099] {
        assert_eq!(
            store.get(&i.to_be_bytes()).expect("get"),
            Some(wordy(i, 3000)),
            "{i}"
        );
    }
}

/// The block cache's shards hold at least 16 of the largest block, bulk
/// blocks included, within RocksDB's own bounds (shards of at least 512
/// KiB, at most 64); the cache RocksDB builds has them (its LOG).
#[test]
fn block_cache_shards_hold_sixteen_of_the_largest_block() {
    for (cache, bulk, bits) in [
        (256usize << 20, None, 6),
        (256 << 20, Some(64usize << 10), 6),
        (256 << 20, Some(1 << 20), 4),
        (256 << 20, Some(4 << 20), 2),
        (8 << 20, Some(1 << 20), 0),
        (1 << 20, None, 0),
        (64 << 20, None, 6),
    ] {
        let mut o = bulk_table(bulk.map(|block_bytes| BulkBlocks {
            block_bytes,
            level: 3,
            min_bytes: None,
        }));
        o.block_cache_bytes = cache;
        assert_eq!(o.cache_shard_bits(), bits, "{cache} {bulk:?}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut o = bulk_table(Some(ARCHIVE));
    o.block_cache_bytes = 256 << 20;
    drop(RocksStore::open(dir.path(), "tx_data", &o, Access::ReadWrite).expect("open"));
    let log = std::fs::read_to_string(dir.path().join("LOG")).expect("LOG");
    assert!(
        log.lines()
            .any(|l| l.trim().starts_with("num_shard_bits : 4")),
        "{log}"
    );
}

/// With bulk blocks of their own, a bulk write does not make a file that
/// spans stored bulk files: pairs at or below the largest key stored (a
/// dictionary's key; here also the largest key itself, rewritten) go
/// through the memtable, flushed into a file of their own, and the rest go
/// in as bulk files at the bottom. The stored bulk file stays as it was.
#[test]
fn a_bulk_write_below_stored_keys_does_not_span_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_archive(dir.path());
    for p in [
        "rocksdb.num-entries-active-mem-table",
        "rocksdb.num-entries-imm-mem-tables",
    ] {
        assert!(store.int_property(p).is_some(), "{p}");
    }
    let spans = |store: &RocksStore| -> Vec<(Vec<u8>, Vec<u8>, i32, String)> {
        store
            .db
            .live_files()
            .expect("live files")
            .into_iter()
            .map(|f| {
                (
                    f.start_key.expect("start"),
                    f.end_key.expect("end"),
                    f.level,
                    f.name,
                )
            })
            .collect()
    };
    let mut w = store.begin_write().expect("begin");
    put_all(&mut w, 1_000..13_000, 0);
    w.finish().expect("finish");
    w.commit().expect("commit");
    let first = spans(&store);
    assert_eq!(first.len(), 1, "{first:?}");
    let key = |i: u32| i.to_be_bytes().to_vec();
    // A dictionary's key (below every position) beside a bulk batch, then
    // the largest key stored again beside the next one.
    let dict_key = [0u8, 0, 0, 0, b'D'];
    let low = wordy(5, 3000);
    let mut files = first;
    for (below, batch) in [
        (dict_key.to_vec(), 20_000u32..32_000),
        (key(31_999), 40_000..52_000),
    ] {
        let owned: Vec<([u8; 4], Vec<u8>)> = batch
            .clone()
            .map(|i| (i.to_be_bytes(), wordy(i, 3000)))
            .collect();
        let mut pairs: Vec<(&[u8], &[u8])> = vec![(&below[..], &low[..])];
        pairs.extend(owned.iter().map(|(k, v)| (&k[..], v.as_slice())));
        let mut w = store.begin_write().expect("begin");
        w.put_sorted(&pairs).expect("put_sorted");
        w.finish().expect("finish");
        w.commit().expect("commit");
        let after = spans(&store);
        assert_eq!(after.len(), files.len() + 2, "{after:?}");
        for f in &files {
            assert!(after.contains(f), "{f:?} stays: {after:?}");
        }
        assert!(
            after.iter().any(|(a, b, level, _)| {
                (a, b, *level) == (&key(batch.start), &key(batch.end - 1), 6)
            }),
            "the batch at the bottom: {after:?}"
        );
        assert!(
            after.iter().any(|(a, b, _, _)| (a, b) == (&below, &below)),
            "{below:?} in a flushed file of its own: {after:?}"
        );
        assert_eq!(store.get(&below).expect("get"), Some(low.clone()));
        files = after;
    }
    // Two bulk calls in one write: the second's key below the first's
    // pairs (above everything committed before) counts the first's files.
    let owned = |r: std::ops::Range<u32>| -> Vec<([u8; 4], Vec<u8>)> {
        r.map(|i| (i.to_be_bytes(), wordy(i, 3000))).collect()
    };
    let (first_call, second_call) = (owned(60_000..72_000), owned(80_000..92_000));
    let mid = key(55_000);
    let mut w = store.begin_write().expect("begin");
    let pairs: Vec<(&[u8], &[u8])> = first_call
        .iter()
        .map(|(k, v)| (&k[..], v.as_slice()))
        .collect();
    w.put_sorted(&pairs).expect("first call");
    let mut pairs: Vec<(&[u8], &[u8])> = vec![(&mid[..], &low[..])];
    pairs.extend(second_call.iter().map(|(k, v)| (&k[..], v.as_slice())));
    w.put_sorted(&pairs).expect("second call");
    w.finish().expect("finish");
    w.commit().expect("commit");
    let after = spans(&store);
    for (a, b) in [(60_000, 71_999), (80_000, 91_999)] {
        assert!(
            after
                .iter()
                .any(|(s, e, level, _)| (s, e, *level) == (&key(a), &key(b), 6)),
            "{a}..={b} at the bottom: {after:?}"
        );
    }
    assert!(
        after.iter().any(|(a, b, _, _)| (a, b) == (&mid, &mid)),
        "the key below in a flushed file of its own: {after:?}"
    );
    for i in [
        1_000u32, 12_999, 20_000, 31_998, 40_000, 51_999, 60_000, 91_999,
    ] {
        assert_eq!(
            store.get(&key(i)).expect("get"),
            Some(wordy(i, 3000)),
            "{i}"
        );
    }
}

/// [`bulk_table`] with small bulk writes, sharded by the key's first byte
/// when `shift` is 24.
fn sharded(shift: Option<u32>) -> RocksOptions {
    let mut o = bulk_table(Some(BulkBlocks {
        block_bytes: 64 << 10,
        level: 3,
        min_bytes: Some(1),
    }));
    o.shard_shift = shift;
    o
}

/// A key in shard `shard` (shift 24: its first byte), `n` after it.
fn sk(shard: u8, n: u32) -> Vec<u8> {
    let mut k = vec![shard];
    k.extend_from_slice(&n.to_be_bytes());
    k
}

fn cf_names(dir: &std::path::Path) -> Vec<String> {
    let mut n = Db::list_cf(&Options::default(), dir).expect("list");
    n.sort();
    n
}

#[test]
fn a_sharded_table_keeps_key_ranges_apart_and_reads_across_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = RocksStore::open(dir.path(), "tx_data", &sharded(Some(24)), Access::ReadWrite)
        .expect("open");
    assert_eq!(cf_names(dir.path()), ["default", "ledgerstore-shards-24"]);
    // Puts through the memtable in shards 1 and 3; a bulk write spanning
    // shards 3, 5 and 9 (one ingestion a shard); a delete in shard 7,
    // never written, makes nothing.
    let mut w = store.begin_write().expect("begin");
    for n in 0..10 {
        w.put(&sk(1, n), &wordy(n, 100)).expect("put");
        w.put(&sk(3, n), &wordy(n + 10, 100)).expect("put");
    }
    w.delete(&sk(7, 0)).expect("delete");
    w.finish().expect("finish");
    w.commit().expect("commit");
    let bulk: Vec<(Vec<u8>, Vec<u8>)> = [(3u8, 100u32..110), (5, 0..10), (9, 0..10)]
        .into_iter()
        .flat_map(|(s, r)| r.map(move |n| (sk(s, n), wordy(n + u32::from(s) * 1000, 3000))))
        .collect();
    let pairs: Vec<(&[u8], &[u8])> = bulk.iter().map(|(k, v)| (&k[..], &v[..])).collect();
    let mut w = store.begin_write().expect("begin");
    w.put_sorted(&pairs).expect("bulk");
    w.finish().expect("finish");
    w.commit().expect("commit");
    assert_eq!(
        cf_names(dir.path()),
        [
            "default",
            "ledgerstore-shards-24",
            "shard-00000001",
            "shard-00000003",
            "shard-00000005",
            "shard-00000009"
        ]
    );
    let check = |store: &RocksStore| {
        assert_eq!(store.get(&sk(1, 4)).expect("get"), Some(wordy(4, 100)));
        assert_eq!(
            store.get(&sk(3, 104)).expect("get"),
            Some(wordy(104 + 3000, 3000))
        );
        assert_eq!(
            store.get(&sk(9, 9)).expect("get"),
            Some(wordy(9 + 9000, 3000))
        );
        assert_eq!(store.get(&sk(7, 0)).expect("get"), None);
        assert_eq!(store.get(&sk(2, 0)).expect("get"), None);
        let keys = [sk(9, 1), sk(2, 0), sk(1, 0), sk(5, 11), sk(3, 2)];
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        assert_eq!(
            store.multi_get(&keys).expect("multi"),
            vec![
                Some(wordy(1 + 9000, 3000)),
                None,
                Some(wordy(0, 100)),
                None,
                Some(wordy(12, 100))
            ]
        );
        // A scan goes from shard to shard in key order, from a key in a
        // shard never written too.
        let got = store.scan(&sk(3, 108), 5).expect("scan");
        let want = [sk(3, 108), sk(3, 109), sk(5, 0), sk(5, 1), sk(5, 2)];
        assert_eq!(got.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(), want);
        let got = store.scan(&sk(6, 0), 100).expect("scan");
        assert_eq!(got.len(), 10);
        assert_eq!(got[0].0, sk(9, 0));
        assert_eq!(store.scan(&[], 1000).expect("scan all").len(), 50);
        assert_eq!(store.last_key().expect("last"), Some(sk(9, 9)));
        assert_eq!(store.stats().expect("stats").shards, Some(4));
    };
    check(&store);
    drop(store);
    // The shift is the table's: reopened asking for another, read-write
    // and read-only, it keeps its own.
    let store = RocksStore::open(dir.path(), "tx_data", &sharded(Some(20)), Access::ReadWrite)
        .expect("reopen");
    check(&store);
    // Written again: a put in shard 1 stays in shard 1.
    let mut w = store.begin_write().expect("begin");
    w.put(&sk(1, 100), b"late").expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
    let backup = dir.path().join("backup");
    store
        .begin_backup(&backup)
        .expect("backup")
        .finish()
        .expect("finish");
    drop(store);
    let ro = RocksStore::open(dir.path(), "tx_data", &sharded(Some(24)), Access::ReadOnly)
        .expect("read-only");
    assert_eq!(ro.get(&sk(1, 100)).expect("get"), Some(b"late".to_vec()));
    assert_eq!(ro.scan(&[], 1000).expect("scan all").len(), 51);
    drop(ro);
    let restored = RocksStore::open(&backup, "tx_data", &sharded(Some(24)), Access::ReadOnly)
        .expect("the backup opens");
    assert_eq!(restored.scan(&[], 1000).expect("scan all").len(), 51);
    assert_eq!(
        restored.get(&sk(9, 9)).expect("get"),
        Some(wordy(9 + 9000, 3000))
    );
}

#[test]
fn a_table_keeps_the_layout_its_dir_records() {
    let put_one = |store: &RocksStore, k: &[u8]| {
        let mut w = store.begin_write().expect("begin");
        w.put(k, b"x").expect("put");
        w.finish().expect("finish");
        w.commit().expect("commit");
    };
    // Unsharded with data (made by an earlier build): asked for shards, it
    // is refused; asked for none, it stays in `default`.
    let dir = tempfile::tempdir().expect("tempdir");
    put_one(
        &RocksStore::open(dir.path(), "ledgers", &sharded(None), Access::ReadWrite).expect("open"),
        &sk(4, 0),
    );
    let e = RocksStore::open(dir.path(), "ledgers", &sharded(Some(24)), Access::ReadWrite)
        .expect_err("data in one column family");
    assert!(
        e.to_string()
            .contains("holds its keys in one column family"),
        "{e}"
    );
    let store =
        RocksStore::open(dir.path(), "ledgers", &sharded(None), Access::ReadWrite).expect("reopen");
    put_one(&store, &sk(5, 0));
    drop(store);
    assert_eq!(cf_names(dir.path()), ["default"]);
    // Sharded: asked for none (a dir whose format says unsharded), refused.
    let dir = tempfile::tempdir().expect("tempdir");
    put_one(
        &RocksStore::open(dir.path(), "ledgers", &sharded(Some(24)), Access::ReadWrite)
            .expect("open"),
        &sk(4, 0),
    );
    let e = RocksStore::open(dir.path(), "ledgers", &sharded(None), Access::ReadOnly)
        .expect_err("shards not recorded");
    assert!(e.to_string().contains("does not record shards"), "{e}");
    // Empty in `default` alone (a creation killed before its marker): made
    // sharded when asked.
    let dir = tempfile::tempdir().expect("tempdir");
    drop(RocksStore::open(dir.path(), "ledgers", &sharded(None), Access::ReadWrite).expect("open"));
    let store = RocksStore::open(dir.path(), "ledgers", &sharded(Some(24)), Access::ReadWrite)
        .expect("empty, made sharded");
    put_one(&store, &sk(4, 0));
    drop(store);
    assert_eq!(
        cf_names(dir.path()),
        ["default", "ledgerstore-shards-24", "shard-00000004"]
    );
    // A column family this build does not know is refused by name.
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        let cfs = ["default", "events"].map(|n| ColumnFamilyDescriptor::new(n, Options::default()));
        drop(Db::open_cf_descriptors(&o, dir.path(), cfs).expect("made"));
    }
    let e = RocksStore::open(dir.path(), "ledgers", &sharded(Some(24)), Access::ReadWrite)
        .expect_err("unknown column family");
    assert!(
        e.to_string()
            .contains("\"events\" is not one this build reads"),
        "{e}"
    );
    let fresh = tempfile::tempdir().expect("tempdir");
    let e = RocksStore::open(
        fresh.path(),
        "ledgers",
        &sharded(Some(32)),
        Access::ReadWrite,
    )
    .expect_err("shift 32");
    assert!(
        e.to_string().contains("shard shift 32: expected 0 to 31"),
        "{e}"
    );
    assert!(!fresh.path().join("CURRENT").exists(), "nothing made");
}
