//! Ledger record forms on real engines: a new `blocks` dir (format 4)
//! stores its ledger records raw and RocksDB compresses the `ledgers`
//! table in blocks; a format-2 dir (blocks bodies, ledger records as zstd
//! frames, as releases before it wrote) keeps its frames across reopens
//! with this build's defaults; backups keep the form; packs get zstd
//! frames from either, and the publisher's mark identity is the value as
//! stored.

use std::path::Path;
use std::time::Duration;

use ledgerstore_backends::Backends;
use ledgerstore_db_api::{
    BodyForm, Decompress, Layout, LedgerInput, StoredLedger, TableId, TxHash, ledger_record_bytes,
};
use ledgerstore_synth::{Synth, SynthConfig};

use crate::{IndexedOptions, Ledgerstore, StoreOptions, restore};

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

fn options(ledgers: BodyForm) -> StoreOptions {
    StoreOptions {
        layout: Some(Layout::Indexed),
        indexed: IndexedOptions {
            range_ledgers: 4,
            merge_levels: 0,
            ledgers,
            ..IndexedOptions::default()
        },
        ..StoreOptions::default()
    }
}

fn open(dir: &Path, ledgers: BodyForm) -> Ledgerstore {
    Ledgerstore::open(dir, options(ledgers), &Backends::for_tests()).expect("open")
}

fn ledgers(from: u32, to: u32) -> Vec<LedgerInput> {
    let s = Synth::new(SynthConfig::small(29, 5));
    (from..=to).map(|seq| s.cut_ledger(seq)).collect()
}

fn ingest(store: &Ledgerstore, ledgers: &[LedgerInput]) {
    for batch in ledgers.chunks(3) {
        store.ingest(batch, Duration::ZERO).expect("ingest");
    }
}

/// The `ledgers` values of `ls` as the table stores them.
fn values(store: &Ledgerstore, ls: &[LedgerInput]) -> Vec<Vec<u8>> {
    ls.iter()
        .map(|l| {
            store
                .table(TableId::Ledgers)
                .get(&l.seq.to_be_bytes())
                .expect("get")
                .expect("stored")
        })
        .collect()
}

/// Every value of `ls` is in `form`: raw records (a skeleton, version 3,
/// for these cut ledgers) or zstd frames; and each decodes to its ledger.
fn assert_form(store: &Ledgerstore, ls: &[LedgerInput], form: BodyForm) {
    for (l, v) in ls.iter().zip(values(store, ls)) {
        match form {
            BodyForm::Blocks => assert_eq!(v[0], 3, "ledger {}: a raw skeleton", l.seq),
            BodyForm::Records => assert!(v.starts_with(&ZSTD_MAGIC), "ledger {}", l.seq),
        }
        let rec = StoredLedger::decompress(&v).expect("decode");
        assert_eq!((rec.seq, rec.tx_hashes.len()), (l.seq, l.txs.len()));
    }
}

/// Every transaction and every ledger of `ls` reads back exactly, the
/// ledger heads too, and `check` finds nothing.
fn assert_reads(store: &Ledgerstore, ls: &[LedgerInput]) {
    for l in ls {
        let got = store.get_ledger(l.seq).expect("read").expect("present");
        assert_eq!(got.raw, l.raw, "ledger {}", l.seq);
        let head = store.ledger_head(l.seq).expect("head").expect("present");
        assert_eq!(head.close_time, l.close_time);
        assert_eq!((head.tx_hashes, head.aliases), (got.tx_hashes, got.aliases));
        for (i, t) in l.txs.iter().enumerate() {
            let hash = TxHash::from_slice(&t.hash).expect("32");
            let rec = store.get_tx(&hash).expect("get").expect("found");
            assert_eq!((rec.ledger_seq, rec.index), (l.seq, i as u32));
        }
    }
    let first = ls.first().expect("ledgers").seq;
    let last = ls.last().expect("ledgers").seq;
    let heads = store.ledger_heads(first, last, ls.len()).expect("heads");
    assert_eq!(heads.len(), ls.len());
    let report = store.check().expect("check");
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

fn manifest(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("ledgerstore.json")).expect("manifest"))
        .expect("json")
}

/// The `ledgers` table's RocksDB OPTIONS files, concatenated.
fn rocks_options(dir: &Path) -> String {
    std::fs::read_dir(dir.join("rocksdb/ledgers"))
        .expect("ledgers dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("OPTIONS-"))
        .map(|e| std::fs::read_to_string(e.path()).expect("options"))
        .collect()
}

#[test]
fn a_new_dir_stores_raw_ledger_records_that_the_engine_compresses() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ls = ledgers(1, 9);
    {
        let store = open(tmp.path(), BodyForm::default());
        assert_eq!(store.ledger_form(), BodyForm::Blocks);
        ingest(&store, &ls);
        store.wait_for_segments().expect("segments");
        assert_form(&store, &ls, BodyForm::Blocks);
        assert_reads(&store, &ls);
        assert_eq!(store.stats().expect("stats").ledger_records, Some("blocks"));
    }
    let m = manifest(tmp.path());
    assert_eq!(
        (m["format"].as_u64(), m["ledgers"].as_str()),
        (Some(4), Some("blocks"))
    );
    let opts = rocks_options(tmp.path());
    assert!(
        opts.lines().any(|l| l.trim() == "compression=kZSTD"),
        "RocksDB compresses the ledgers table: {opts}"
    );
    // The option names the form of new dirs only.
    let store = open(tmp.path(), BodyForm::Records);
    assert_eq!(store.ledger_form(), BodyForm::Blocks);
    let more = ledgers(10, 12);
    ingest(&store, &more);
    assert_form(&store, &more, BodyForm::Blocks);
    assert_reads(&store, &[ls, more].concat());
}

#[test]
fn a_format_2_dir_keeps_zstd_ledger_records() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ls = ledgers(1, 6);
    {
        let store = open(tmp.path(), BodyForm::Records);
        assert_eq!(
            (store.body_form(), store.ledger_form()),
            (BodyForm::Blocks, BodyForm::Records)
        );
        ingest(&store, &ls);
        assert_form(&store, &ls, BodyForm::Records);
        assert_eq!(
            store.stats().expect("stats").ledger_records,
            Some("records")
        );
    }
    let m = manifest(tmp.path());
    assert_eq!(m["format"].as_u64(), Some(2));
    assert!(
        m.get("ledgers").is_none(),
        "format 2 manifests stay as earlier builds wrote them: {m}"
    );
    assert!(
        !rocks_options(tmp.path())
            .lines()
            .any(|l| l.trim() == "compression=kZSTD"),
        "the app compresses a format-2 dir's records"
    );
    // Reopened with this build's defaults: the dir keeps its form.
    let store = open(tmp.path(), BodyForm::Blocks);
    assert_eq!(store.ledger_form(), BodyForm::Records);
    let more = ledgers(7, 9);
    ingest(&store, &more);
    assert_form(&store, &more, BodyForm::Records);
    assert_reads(&store, &[ls, more.clone()].concat());
    // A raw record here reads (this build reads both), but the releases
    // that made the dir cannot: `check` names it.
    let value = &values(&store, &more[..1])[0];
    let raw = ledger_record_bytes(value).expect("frame").into_owned();
    let mut w = store.table(TableId::Ledgers).begin_write().expect("begin");
    w.put(&7u32.to_be_bytes(), &raw).expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
    assert_eq!(
        store.get_ledger(7).expect("read").expect("present").raw,
        more[0].raw
    );
    let problems = store.check().expect("check").problems;
    assert!(
        problems.len() == 1
            && problems[0].starts_with("ledgers[7]: a raw record in a dir whose ledger records")
            && problems[0].contains("format 2"),
        "{problems:?}"
    );
}

#[test]
fn backups_keep_the_ledger_form_and_packs_get_zstd_records_from_either() {
    for form in [BodyForm::Blocks, BodyForm::Records] {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ls = ledgers(1, 8);
        let store = open(&tmp.path().join("src"), form);
        ingest(&store, &ls);
        store.wait_for_segments().expect("segments");
        for l in &ls {
            let value = store
                .stored_ledger_value(l.seq)
                .expect("read")
                .expect("stored");
            let (packed, n) = store.stored_ledger(l.seq).expect("read").expect("stored");
            assert!(packed.starts_with(&ZSTD_MAGIC), "{form}: packs hold frames");
            assert_eq!(n as usize, l.txs.len());
            match form {
                BodyForm::Blocks => assert!(!value.starts_with(&ZSTD_MAGIC)),
                BodyForm::Records => assert_eq!(packed, value, "as stored"),
            }
            assert_eq!(
                ledger_record_bytes(&packed).expect("frame").as_ref(),
                ledger_record_bytes(&value).expect("value").as_ref(),
                "{form}: ledger {}",
                l.seq
            );
        }
        // Above the mark, nothing, even where the table holds a record.
        let residue = values(&store, &ls[..1]).remove(0);
        let mut w = store.table(TableId::Ledgers).begin_write().expect("begin");
        w.put(&99u32.to_be_bytes(), &residue).expect("put");
        w.finish().expect("finish");
        w.commit().expect("commit");
        assert_eq!(store.stored_ledger_value(99).expect("read"), None);
        assert!(store.stored_ledger(99).expect("read").is_none());
        let mut w = store.table(TableId::Ledgers).begin_write().expect("begin");
        w.delete(&99u32.to_be_bytes()).expect("delete");
        w.finish().expect("finish");
        w.commit().expect("commit");
        let backup = tmp.path().join("backup");
        store.backup(&backup).expect("backup");
        drop(store);
        let dest = tmp.path().join("restored");
        restore(&backup, &dest).expect("restore");
        let restored = open(&dest, BodyForm::default());
        assert_eq!(restored.ledger_form(), form, "the backup kept the form");
        assert_form(&restored, &ls, form);
        assert_reads(&restored, &ls);
    }
}

/// Whole (uncut) ledgers of ~1.2 MB of history `seed`: four a batch make
/// more than the 4 MiB from which a batch's records are a bulk write.
fn large(seed: u64, from: u32, to: u32) -> Vec<LedgerInput> {
    let s = Synth::new(SynthConfig::with_sizes(seed, 4, 600, 1_200_000));
    (from..=to).map(|seq| s.ledger(seq)).collect()
}

/// The `ledgers` table's SST files.
fn ledger_ssts(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("rocksdb/ledgers"))
        .expect("ledgers dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".sst"))
        .count()
}

/// A batch's records written in bulk (an SST file ingested at commit),
/// residue of a crashed batch in such a file rolled back at open, and the
/// batch retried over the same keys: everything reads back and checks.
#[test]
fn bulk_ledger_records_roll_back_and_are_written_again() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ls = large(31, 1, 8);
    // Records of 5..=8 as a crashed batch left them (of another history,
    // so residue that came back would show): a format-3 dir's raw values,
    // ingested as one bulk file, the mark not moved.
    let scratch = tmp.path().join("scratch");
    let residue = {
        let other = large(37, 1, 8);
        let store = open(&scratch, BodyForm::Blocks);
        for batch in other.chunks(4) {
            store.ingest(batch, Duration::ZERO).expect("ingest");
        }
        values(&store, &other[4..])
    };
    assert!(residue.iter().map(Vec::len).sum::<usize>() >= 4 << 20);
    let dir = tmp.path().join("data");
    {
        let store = open(&dir, BodyForm::Blocks);
        store.ingest(&ls[..4], Duration::ZERO).expect("ingest");
        assert_eq!(ledger_ssts(&dir), 1, "one batch, one bulk file");
        let keys: Vec<[u8; 4]> = (5u32..=8).map(u32::to_be_bytes).collect();
        let pairs: Vec<(&[u8], &[u8])> = keys
            .iter()
            .zip(&residue)
            .map(|(k, v)| (&k[..], v.as_slice()))
            .collect();
        let mut w = store.table(TableId::Ledgers).begin_write().expect("begin");
        w.put_sorted(&pairs).expect("put");
        w.finish().expect("finish");
        w.commit().expect("commit");
        assert_eq!(ledger_ssts(&dir), 2, "the residue is a bulk file too");
        assert_eq!(
            store.stored_ledger_value(5).expect("read"),
            None,
            "above the mark"
        );
    }
    let store = open(&dir, BodyForm::Blocks);
    for seq in 5..=8u32 {
        assert_eq!(
            store
                .table(TableId::Ledgers)
                .get(&seq.to_be_bytes())
                .expect("get"),
            None,
            "ledger {seq}: rolled back at open"
        );
    }
    store.ingest(&ls[4..], Duration::ZERO).expect("retry");
    for (l, v) in ls.iter().zip(values(&store, &ls)) {
        assert_eq!(v[0], 1, "ledger {}: a raw whole record", l.seq);
    }
    assert_reads(&store, &ls);
    drop(store);
    let store = open(&dir, BodyForm::Blocks);
    assert_reads(&store, &ls);
}

#[test]
fn a_record_filed_under_another_ledgers_key_is_corrupt_for_heads_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = open(tmp.path(), BodyForm::default());
    ingest(&store, &ledgers(1, 9));
    let t = store.table(TableId::Ledgers);
    let five = t.get(&5u32.to_be_bytes()).expect("get").expect("stored");
    let mut w = t.begin_write().expect("begin");
    w.put(&6u32.to_be_bytes(), &five).expect("put");
    w.finish().expect("finish");
    w.commit().expect("commit");
    let one = store.ledger_head(6).map(|_| ());
    let range = store.ledger_heads(5, 7, 10).map(|_| ());
    for r in [one, range] {
        match r {
            Err(crate::StoreError::Corrupt(m)) => {
                assert!(m.contains("ledgers[6]: its record says ledger 5"), "{m}");
            }
            other => panic!("want Corrupt naming ledgers[6], got {other:?}"),
        }
    }
}
