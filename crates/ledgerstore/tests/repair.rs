//! Lost and damaged index segments (layout `indexed`) through the real
//! binary: `ledgerstore repair` rebuilds them offline and says what it
//! rebuilt, `check` passes afterwards, and a repair that cannot succeed
//! exits non-zero naming what is missing; `ledgerstore ingest` into a dir
//! with a lost segment waits for the rebuild and succeeds on its first run.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use ledgerstore_backends::Backends;
use ledgerstore_db_api::{Access, TableId, TxPos};
use ledgerstore_store::{Ledgerstore, StoreOptions};

/// Base ranges of 10 ledgers, fan-out 2, 3 levels (top windows of 80):
/// 75 ledgers close 1..=69, served by 1..=39, 40..=59 and 60..=69, and
/// every base range keeps its hash list (its top window is still open).
const SEG_FLAGS: [&str; 6] = [
    "--segments.range-ledgers",
    "10",
    "--segments.merge-fanout",
    "2",
    "--segments.merge-levels",
    "3",
];

fn segdir(dir: &Path) -> PathBuf {
    dir.join("segments")
}

fn seg_file(dir: &Path, first: u32, last: u32) -> PathBuf {
    segdir(dir).join(format!("seg-{first:010}-{last:010}.idx"))
}

fn list_file(dir: &Path, first: u32, last: u32) -> PathBuf {
    segdir(dir).join(format!("hashes-{first:010}-{last:010}.bin"))
}

/// A data dir of `ledgers` synthetic ledgers (12 txs each).
fn built(dir: &Path, ledgers: u32, flags: &[&str]) {
    let mut c = ingest_cmd(dir, "indexed", ledgers, 10, 7);
    c.args(flags);
    let o = run(c);
    assert!(o.status.success(), "ingest: {}{}", stdout(&o), stderr(&o));
}

fn repair(dir: &Path) -> std::process::Output {
    let mut c = bin();
    c.args(["repair", "--data-dir"]).arg(dir);
    run(c)
}

fn check_fails(dir: &Path) -> String {
    let mut c = bin();
    c.args(["check", "--data-dir"]).arg(dir);
    let o = run(c);
    assert!(!o.status.success(), "check passed: {}", stdout(&o));
    stdout(&o)
}

/// Deletes keys from a table of a stopped data dir (offline, so nothing
/// else changes: no rollback, no segment work).
fn delete_keys(dir: &Path, table: TableId, keys: &[Vec<u8>]) {
    let store = Ledgerstore::open(
        dir,
        StoreOptions {
            create: false,
            offline: true,
            engine_access: Access::ReadWrite,
            ..StoreOptions::default()
        },
        &Backends::for_tests(),
    )
    .expect("open offline");
    let kv = store.table(table);
    let mut w = kv.begin_write().expect("write");
    for k in keys {
        w.delete(k).expect("delete");
    }
    w.finish().expect("finish");
    w.commit().expect("commit");
    kv.close().expect("close");
}

#[test]
fn repair_rebuilds_a_lost_segment_says_so_and_check_passes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("d");
    built(&dir, 75, &SEG_FLAGS);
    assert_check_passes(&dir);

    // A lost segment (its hash lists are there), a damaged one whose hash
    // list is lost too (rebuilt from the ledger records), and a damaged
    // hash list of a healthy segment.
    std::fs::remove_file(seg_file(&dir, 40, 59)).expect("lose a segment");
    let seg = seg_file(&dir, 60, 69);
    let mut bytes = std::fs::read(&seg).expect("read");
    let at = bytes.len() - 40;
    bytes[at] ^= 0x10;
    std::fs::write(&seg, &bytes).expect("damage a segment");
    std::fs::remove_file(list_file(&dir, 60, 69)).expect("lose its hash list");
    let list = list_file(&dir, 30, 39);
    let mut bytes = std::fs::read(&list).expect("read");
    let at = bytes.len() - 40;
    bytes[at] ^= 0x01;
    std::fs::write(&list, &bytes).expect("damage a hash list");
    let out = check_fails(&dir);
    assert!(out.contains("40..=59"), "{out}");
    assert!(out.contains("ledgerstore repair"), "{out}");

    let o = repair(&dir);
    let out = stdout(&o);
    assert!(o.status.success(), "repair: {out}{}", stderr(&o));
    assert!(
        out.contains(
            "rebuilt ledgers 40..=59: 240 keys from 2 hash list(s) and 0 range(s) of ledger records"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "rebuilt ledgers 60..=69: 120 keys from 0 hash list(s) and 1 range(s) of ledger records"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "rewrote the hash list of ledgers 30..=39 from the ledger records (120 hashes)"
        ),
        "{out}"
    );
    assert!(
        out.contains("rebuilt 2 segment(s) [40..=59, 60..=69], rewrote 1 hash list(s), 0 failed"),
        "{out}"
    );
    assert!(out.contains("OK: every record decodes"), "{out}");
    assert!(seg_file(&dir, 40, 59).exists());
    assert!(list_file(&dir, 60, 69).exists(), "its window is open");
    assert_check_passes(&dir);

    // Nothing left to do: a second run says so.
    let o = repair(&dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("nothing needed rebuilding"),
        "{}",
        stdout(&o)
    );

    // JSON for scripts.
    std::fs::remove_file(seg_file(&dir, 1, 39)).expect("lose a segment");
    let mut c = bin();
    c.args(["repair", "--json", "--data-dir"]).arg(&dir);
    let o = run(c);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["repair"]["rebuilt"][0]["first"], 1, "{v}");
    assert_eq!(v["repair"]["rebuilt"][0]["last"], 39, "{v}");
    assert_eq!(v["check"]["problem_count"], 0, "{v}");
}

#[test]
fn a_repair_that_cannot_succeed_exits_non_zero_naming_what_is_missing() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("d");
    built(&dir, 75, &SEG_FLAGS);
    // The segment, its hash list and one ledger record of its range: the
    // hashes of 60..=69 are nowhere left to rebuild from.
    std::fs::remove_file(seg_file(&dir, 60, 69)).expect("lose a segment");
    std::fs::remove_file(list_file(&dir, 60, 69)).expect("lose its list");
    delete_keys(&dir, TableId::Ledgers, &[65u32.to_be_bytes().to_vec()]);
    let o = repair(&dir);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("FAILED ledgers 60..=69"), "{out}");
    assert!(err.contains("repair failed"), "{err}");
    assert!(err.contains("hashes-0000000060-0000000069.bin"), "{err}");
    assert!(err.contains("the record of ledger 65 is missing"), "{err}");
    assert!(!seg_file(&dir, 60, 69).exists());

    // Ingest cannot check a batch for duplicates without that range: it
    // waits for the writer's own repair, which fails the same way, and
    // stops naming it, having written nothing.
    let mut c = ingest_cmd(&dir, "indexed", 5, 5, 7);
    c.args(SEG_FLAGS);
    let o = run(c);
    assert!(!o.status.success(), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("the repair of ledgers 60..=69 failed 3 times in a row"),
        "{err}"
    );
    assert!(err.contains("the record of ledger 65 is missing"), "{err}");
    assert!(err.contains("ledgerstore repair --data-dir"), "{err}");
}

#[test]
fn lost_tx_bodies_fail_the_repair_s_check_naming_them() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("d");
    built(&dir, 75, &SEG_FLAGS);
    std::fs::remove_file(seg_file(&dir, 40, 59)).expect("lose a segment");
    let pos = TxPos { seq: 42, index: 3 };
    delete_keys(&dir, TableId::TxData, &[pos.to_bytes().to_vec()]);
    let o = repair(&dir);
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}");
    // The segment comes back from its hash lists; the body does not.
    assert!(out.contains("rebuilt ledgers 40..=59"), "{out}");
    assert!(out.contains("no body at ledger 42 index 3"), "{out}");
    assert!(err.contains("check still finds"), "{err}");
    assert!(err.contains("no body at ledger 42 index 3"), "{err}");
}

/// Range of 1,000 ledgers: its rebuild from the ledger records takes far
/// longer than the first batch needs to reach the duplicate check, which
/// before the fix refused the batch ("being repaired").
#[test]
fn ingest_into_a_dir_with_a_lost_segment_succeeds_on_the_first_run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join("d");
    let flags = [
        "--segments.range-ledgers",
        "1000",
        "--segments.merge-levels",
        "0",
    ];
    let mut c = ingest_cmd(&dir, "indexed", 2000, 1000, 7);
    c.args(flags);
    let o = run(c);
    assert!(o.status.success(), "ingest: {}{}", stdout(&o), stderr(&o));
    std::fs::remove_file(seg_file(&dir, 1, 999)).expect("lose a segment");
    // No merge reads a base range that is a whole top-level window
    // (merging is off), so it kept no hash list: the rebuild reads the
    // ledger records.
    assert!(!list_file(&dir, 1, 999).exists());

    let mut c = ingest_cmd(&dir, "indexed", 10, 10, 7);
    c.args(flags);
    let o = run(c);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "ingest: {out}{err}");
    assert!(!err.contains("being repaired"), "{err}");
    assert!(out.contains("committed through ledger 2010"), "{out}");
    assert!(seg_file(&dir, 1, 999).exists());
    assert_check_passes(&dir);
}
