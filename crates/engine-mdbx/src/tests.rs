use super::*;

fn open(dir: &Path) -> MdbxStore {
    let opts = MdbxOptions {
        max_size: Some(1 << 30),
        growth_step: Some(1 << 20),
        ..Default::default()
    };
    MdbxStore::open(dir, "tx_data", &opts, Access::ReadWrite).expect("open")
}

#[test]
fn commit_makes_writes_visible_and_abort_discards_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut w = store.begin_write().expect("begin");
    w.put(b"k1", b"v1").expect("put");
    w.put(b"k2", b"v2").expect("put");
    w.commit().expect("commit");
    assert_eq!(store.get(b"k1").expect("get"), Some(b"v1".to_vec()));

    let mut w = store.begin_write().expect("begin");
    w.put(b"k3", b"v3").expect("put");
    w.delete(b"k1").expect("delete");
    drop(w); // abort
    assert_eq!(store.get(b"k3").expect("get"), None);
    assert_eq!(store.get(b"k1").expect("get"), Some(b"v1".to_vec()));
    assert_eq!(
        store.multi_get(&[b"k2", b"nope", b"k1"]).expect("multi"),
        vec![Some(b"v2".to_vec()), None, Some(b"v1".to_vec())]
    );
}

#[test]
fn scan_is_ordered_and_bounded_and_survives_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = open(dir.path());
        let mut w = store.begin_write().expect("begin");
        for i in (0u32..100).rev() {
            w.put(&i.to_be_bytes(), &[i as u8; 10]).expect("put");
        }
        w.commit().expect("commit");
    }
    let store = open(dir.path());
    let got = store.scan(&40u32.to_be_bytes(), 5).expect("scan");
    let keys: Vec<u32> = got
        .iter()
        .map(|(k, _)| u32::from_be_bytes(k.as_slice().try_into().expect("4")))
        .collect();
    assert_eq!(keys, vec![40, 41, 42, 43, 44]);
    let stats = store.stats().expect("stats");
    assert_eq!(stats.keys, 100);
    assert_eq!(stats.page_size, Some(4096));
    assert!(stats.tree_depth.unwrap_or(0) >= 1);
    assert!(stats.disk_bytes > 0);
}

#[test]
fn map_full_is_reported_as_storage_full() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = MdbxOptions {
        max_size: Some(1 << 20),
        growth_step: Some(1 << 16),
        ..Default::default()
    };
    let store = MdbxStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite).expect("open");
    let mut w = store.begin_write().expect("begin");
    let value = vec![7u8; 1000];
    let mut failure = None;
    for i in 0u32..10_000 {
        if let Err(e) = w.put(&i.to_be_bytes(), &value) {
            failure = Some(e);
            break;
        }
    }
    let e = failure.expect("a 1 MiB map cannot hold 10 MB");
    assert!(e.is_storage_full(), "{e}");
}

#[test]
fn bytes_written_counts_every_dirtied_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let base = store
        .stats()
        .expect("stats")
        .bytes_written
        .expect("counted");
    let mut w = store.begin_write().expect("begin");
    for i in 0u32..2000 {
        w.put(&i.to_be_bytes(), &[i as u8; 1000]).expect("put");
    }
    w.commit().expect("commit");
    let written = store
        .stats()
        .expect("stats")
        .bytes_written
        .expect("counted")
        - base;
    // ~3 values of 1 KB fit a 4 KiB leaf: at least ~670 leaf pages + meta.
    assert!(written >= 2000 * 1004, "{written}");
    assert!(written <= 4 * 2000 * 1004, "{written}");

    // Updating one key rewrites its leaf-to-root path, not the table.
    let mut w = store.begin_write().expect("begin");
    w.put(&7u32.to_be_bytes(), b"new").expect("put");
    w.commit().expect("commit");
    let more = store
        .stats()
        .expect("stats")
        .bytes_written
        .expect("counted")
        - base
        - written;
    assert!((4096..=8 * 4096).contains(&more), "{more}");
}

#[test]
fn long_reads_give_up_at_the_bound_and_readers_are_tracked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = MdbxOptions {
        max_size: Some(1 << 30),
        growth_step: Some(1 << 20),
        max_read_txn: std::time::Duration::ZERO,
        ..Default::default()
    };
    let store = MdbxStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite).expect("open");
    let mut w = store.begin_write().expect("begin");
    for i in 0u32..300 {
        w.put(&i.to_be_bytes(), b"v").expect("put");
    }
    w.commit().expect("commit");
    let keys: Vec<[u8; 4]> = (0u32..300).map(u32::to_be_bytes).collect();
    let refs: Vec<&[u8]> = keys.iter().map(|k| &k[..]).collect();
    // With a zero bound, a multi-key read gives up at its first check.
    std::thread::sleep(std::time::Duration::from_millis(2));
    let e = store.multi_get(&refs).expect_err("over the bound");
    assert!(matches!(e, DbError::ReadTimeout { .. }), "{e}");
    assert!(e.to_string().contains("mdbx.max_read_txn_ms = 0"), "{e}");
    assert!(store.scan(&[], 300).is_err());
    // A point read holds its transaction for one key and is never cut.
    assert_eq!(store.get(&keys[7]).expect("get"), Some(b"v".to_vec()));
    let st = store.stats().expect("stats");
    assert_eq!(st.read_timeouts, Some(2));
    assert_eq!(st.oldest_read_secs, Some(0.0), "nothing is open now");
    // A backup's reader is tracked (and never timed out) while it lives.
    let backup = store.begin_backup(&dir.path().join("b")).expect("backup");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let age = store.stats().expect("stats").oldest_read_secs.expect("age");
    assert!(age >= 0.02, "oldest read {age}");
    drop(backup);
    assert_eq!(store.stats().expect("stats").oldest_read_secs, Some(0.0));
}

fn data_file(dir: &Path) -> (u64, Vec<u8>) {
    let bytes = std::fs::read(dir.join(DATA_FILE)).expect("read mdbx.dat");
    (bytes.len() as u64, bytes)
}

fn geometry(store: &MdbxStore) -> (u64, u64) {
    let g = store.db.info().expect("info").geometry();
    (g.max_size(), g.growth_step())
}

/// Regression (issue 19): an existing environment opened with the default
/// options keeps its own geometry; before, the defaults (1 GiB steps)
/// resized a small test file to 4 GiB.
#[test]
fn reopening_with_defaults_keeps_the_recorded_geometry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let created = {
        let opts = MdbxOptions {
            max_size: Some(64 << 20),
            growth_step: Some(1 << 20),
            page_size: Some(8192),
            ..Default::default()
        };
        let store = MdbxStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite).expect("open");
        let mut w = store.begin_write().expect("begin");
        w.put(b"k", b"v").expect("put");
        w.commit().expect("commit");
        geometry(&store)
    };
    let size = data_file(dir.path()).0;
    assert!(size < 8 << 20, "{size}");
    let store = MdbxStore::open(
        dir.path(),
        "tx_data",
        &MdbxOptions::default(),
        Access::ReadWrite,
    )
    .expect("reopen");
    assert_eq!(geometry(&store), created);
    assert_eq!(store.stats().expect("stats").page_size, Some(8192));
    assert_eq!(store.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
    drop(store);
    assert_eq!(data_file(dir.path()).0, size, "the file was resized");
}

#[test]
fn read_only_changes_no_byte_and_refuses_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = open(dir.path());
        let mut w = store.begin_write().expect("begin");
        for i in 0u32..500 {
            w.put(&i.to_be_bytes(), &[3u8; 300]).expect("put");
        }
        w.commit().expect("commit");
    }
    let before = data_file(dir.path());
    // Options that differ from the file's in every geometry setting: read
    // only ignores them.
    let opts = MdbxOptions {
        max_size: Some(8 << 30),
        growth_step: Some(1 << 30),
        ..Default::default()
    };
    let store = MdbxStore::open(dir.path(), "tx_data", &opts, Access::ReadOnly).expect("open ro");
    assert_eq!(store.stats().expect("stats").keys, 500);
    assert!(store.get(&7u32.to_be_bytes()).expect("get").is_some());
    assert!(store.begin_write().is_err(), "a read-only store wrote");
    drop(store);
    assert!(data_file(dir.path()) == before, "mdbx.dat changed");

    let missing = dir.path().join("never-created");
    assert!(
        MdbxStore::open(&missing, "tx_data", &opts, Access::ReadOnly).is_err(),
        "read only created an environment"
    );
    assert!(!missing.join(DATA_FILE).exists());
}

#[test]
fn a_page_size_other_than_the_recorded_one_is_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(open(dir.path()));
    let opts = MdbxOptions {
        page_size: Some(16384),
        ..Default::default()
    };
    let e = MdbxStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite)
        .expect_err("page size differs");
    let msg = e.to_string();
    assert!(
        msg.contains("page size = 4096") && msg.contains("16384") && msg.contains("tx_data"),
        "{msg}"
    );
}

#[test]
fn an_explicit_geometry_change_is_applied() {
    let dir = tempfile::tempdir().expect("tempdir");
    drop(open(dir.path()));
    let opts = MdbxOptions {
        max_size: Some(2 << 30),
        growth_step: Some(2 << 20),
        ..Default::default()
    };
    let store = MdbxStore::open(dir.path(), "tx_data", &opts, Access::ReadWrite).expect("open");
    assert_eq!(geometry(&store), (2 << 30, 2 << 20));
}

/// Regression: a SIGKILL while MDBX created its file left an empty
/// `mdbx.dat`, which the next open took for an existing environment
/// ("No data available").
#[test]
fn an_empty_data_file_left_by_a_killed_creation_is_created_anew() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join(DATA_FILE), b"").expect("empty file");
    std::fs::write(dir.path().join("mdbx.lck"), b"").expect("empty lock");
    let store = open(dir.path());
    let mut w = store.begin_write().expect("begin");
    w.put(b"k", b"v").expect("put");
    w.commit().expect("commit");
    assert_eq!(store.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
}

/// Regression: a SIGKILL while MDBX wrote its first pages left a file with
/// no valid meta page (8 KiB of a 12 KiB meta area); the read-only probe
/// of an existing environment failed with "No data available".
#[test]
fn a_file_cut_inside_its_meta_pages_is_created_anew() {
    let full = tempfile::tempdir().expect("tempdir");
    drop(open(full.path()));
    let bytes = std::fs::read(full.path().join(DATA_FILE)).expect("read");
    let cut = tempfile::tempdir().expect("tempdir");
    std::fs::write(cut.path().join(DATA_FILE), &bytes[..4096]).expect("cut");
    let store = open(cut.path());
    let mut w = store.begin_write().expect("begin");
    w.put(b"k", b"v").expect("put");
    w.commit().expect("commit");
    assert_eq!(store.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
}

/// Blocks of disk `path` takes (not its apparent size).
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).expect("stat").blocks() * 512
}

/// A new environment on the defaults takes disk for what it holds, within
/// one growth step, and grows in steps as it fills (a 1 GiB default step
/// made a new data dir of 20 ledgers take 1.1 GB).
#[test]
fn a_new_environment_grows_with_what_it_holds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MdbxStore::open(
        dir.path(),
        "tx_index",
        &MdbxOptions::default(),
        Access::ReadWrite,
    )
    .expect("open");
    let file = dir.path().join(DATA_FILE);
    let mut w = store.begin_write().expect("begin");
    for i in 0u32..5_000 {
        w.put(&i.to_be_bytes(), &[7u8; 8]).expect("put");
    }
    w.commit().expect("commit");
    let small = disk_bytes(&file);
    assert!(
        small <= DEFAULT_GROWTH_STEP + (1 << 20),
        "{small} bytes on disk for 5,000 small keys"
    );
    // ~40 MB of values: the file grows past one step, in steps.
    for chunk in 0u32..10 {
        let mut w = store.begin_write().expect("begin");
        for i in 0u32..1_000 {
            w.put(&(chunk * 1_000 + i + 10_000).to_be_bytes(), &[9u8; 4_000])
                .expect("put");
        }
        w.commit().expect("commit");
    }
    // 10,000 values of 4,000 bytes take one 4 KiB page each: 41 MB.
    let grown = disk_bytes(&file);
    let held = 10_000 * 4_096;
    assert!(grown > held, "{grown} bytes on disk for {held} bytes held");
    assert!(
        grown <= held + held / 4 + 2 * DEFAULT_GROWTH_STEP,
        "{grown} bytes on disk for {held} bytes held"
    );
}
