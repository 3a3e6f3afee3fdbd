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
