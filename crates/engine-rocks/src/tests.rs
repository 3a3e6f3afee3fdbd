use super::*;

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
        },
    );
    o.block_cache_bytes = 1 << 20;
    o.background_jobs = 2;
    o
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
    // A bulk write (more than one 32 MiB chunk) skips the WAL and is
    // flushed at commit.
    let ticker = store.rocks_opts.get_ticker_count(Ticker::WalFileBytes);
    let mut w = store.begin_write().expect("begin");
    for i in 100u32..(100 + 12_000) {
        w.put(&i.to_be_bytes(), &wordy(i, 3000)).expect("put");
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
    let bulk = store.rocks_opts.get_ticker_count(Ticker::WalFileBytes) - ticker;
    assert!(
        bulk < 1 << 20,
        "a bulk write skipped the WAL: {bulk} B logged"
    );
    // A small write after it is committed through the WAL alone (the
    // bulk commit's flush already ran): it must survive the abort too.
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
    // Everything committed reads back: the bulk write from the SSTs its
    // commit flushed (with the small write before it), the last small
    // write from the WAL alone.
    let store =
        RocksStore::open(dir.path(), "tx_data", &blocks(), Access::ReadWrite).expect("reopen");
    for i in [0u32, 57, 99, 100, 6_000, 12_099, 50_000] {
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
    let raw = 12_100u64 * 3004;
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
/// one (so the probe can tell).
#[test]
fn a_block_dictionary_is_trained_on_enough_blocks_with_a_bounded_buffer() {
    for dict_bytes in [2usize << 10, 0] {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = blocks();
        opts.block_compression = Some(BlockCompression {
            level: 3,
            dict_bytes,
        });
        let store =
            RocksStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite).expect("open");
        // One bulk commit (past a 32 MiB chunk): flushed at commit.
        let mut w = store.begin_write().expect("begin");
        for i in 0u32..12_000 {
            w.put(&i.to_be_bytes(), &wordy(i, 3000)).expect("put");
        }
        w.finish().expect("finish");
        w.commit().expect("commit");
        store.wait_for_background_work().expect("drain");
        let files = ssts(dir.path());
        assert!(!files.is_empty(), "the commit flushed SSTs");
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
        // The options string that bounds the buffer kept the rest:
        // statistics still count.
        assert!(
            store.rocks_opts.get_ticker_count(Ticker::FlushWriteBytes) > 0,
            "statistics survive the options string"
        );
        if dict_bytes == 0 {
            assert_eq!(with_dict, 0, "no dictionary asked, none stored");
            assert!(fields.contains(&"max_dict_bytes=0"), "{opts_line}");
            continue;
        }
        assert_eq!(
            with_dict,
            files.len(),
            "every SST of a flush holds its dictionary"
        );
        let train = dict_train_bytes(dict_bytes, 64 << 10);
        assert_eq!(train, 16 * (64 << 10), "at least 16 blocks of samples");
        for want in [
            format!("max_dict_buffer_bytes={train}"),
            format!("zstd_max_train_bytes={train}"),
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
