use std::fs;

use crate::format::{BODY_ENTRY, BODY_PAGE, HEADER, LEDGER_ENTRY, LEDGER_PAGE};
use crate::manifest::{manifest_key, pack_key, parse_manifest_key};
use crate::*;

fn ledger(seq: u32) -> (Vec<u8>, Vec<Vec<u8>>) {
    let record = vec![seq as u8; 100 + seq as usize];
    let bodies = (0..seq % 4)
        .map(|i| vec![(seq * 7 + i) as u8; 30 + i as usize])
        .collect();
    (record, bodies)
}

/// Reads entries back the way a replica does: header, table page, entry.
fn read_back(bytes: &[u8]) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    let h = Header::parse(bytes).expect("header");
    let mut out = Vec::new();
    for i in 0..h.ledgers() {
        let page = &bytes[range(h.ledger_page(i / LEDGER_PAGE))];
        let le = LedgerEntry::at(page, i % LEDGER_PAGE).expect("ledger entry");
        let rec = bytes[range(h.data_range(&le.record).expect("in data"))].to_vec();
        le.record.check(&rec).expect("ledger crc");
        let mut bodies = Vec::new();
        for o in u64::from(le.first_body)..u64::from(le.first_body + le.bodies) {
            let page = &bytes[range(h.body_page(o / BODY_PAGE))];
            let e = body_at(page, o % BODY_PAGE).expect("body entry");
            let b = bytes[range(h.data_range(&e).expect("in data"))].to_vec();
            e.check(&b).expect("body crc");
            bodies.push(b);
        }
        out.push((rec, bodies));
    }
    out
}

fn range(r: std::ops::Range<u64>) -> std::ops::Range<usize> {
    r.start as usize..r.end as usize
}

#[test]
fn a_pack_reads_back_every_ledger_and_body_through_its_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    let (first, last) = (7u32, 7 + 300);
    let mut w = PackWriter::create(&path, first, last).expect("create");
    let mut want = Vec::new();
    for seq in first..=last {
        let (r, b) = ledger(seq);
        w.push_ledger(seq, &r, &b).expect("push");
        want.push((r, b));
    }
    let info = w.finish().expect("finish");
    let bytes = fs::read(&path).expect("read");
    assert_eq!(info.header.size, bytes.len() as u64);
    assert_eq!(info.sha256, sha256(&bytes));
    let bodies: usize = want.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(info.header.bodies, bodies as u64);
    assert_eq!(
        info.header.size,
        info.header.ledger_table
            + (last - first + 1) as u64 * LEDGER_ENTRY
            + bodies as u64 * BODY_ENTRY
    );
    assert_eq!(read_back(&bytes), want);
}

#[test]
fn damage_is_found_by_the_header_crc_and_the_entry_crcs() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    let mut w = PackWriter::create(&path, 1, 3).expect("create");
    for seq in 1..=3 {
        let (r, b) = ledger(seq);
        w.push_ledger(seq, &r, &b).expect("push");
    }
    w.finish().expect("finish");
    let good = fs::read(&path).expect("read");
    let mut bad = good.clone();
    bad[13] ^= 1; // first ledger
    let e = Header::parse(&bad).expect_err("header crc").to_string();
    assert!(e.contains("CRC-32 mismatch"), "{e}");
    let e = Header::parse(b"LSPACK01").expect_err("short").to_string();
    assert!(e.contains("8 bytes, expected 64"), "{e}");
    let mut bad = good.clone();
    bad[HEADER as usize + 5] ^= 0xff; // inside ledger 1's record
    let h = Header::parse(&bad).expect("header intact");
    let page = &bad[range(h.ledger_page(0))];
    let le = LedgerEntry::at(page, 0).expect("entry");
    let rec = &bad[range(h.data_range(&le.record).expect("range"))];
    let e = le.record.check(rec).expect_err("record crc").to_string();
    assert!(e.contains("fails its CRC-32"), "{e}");
    let e = le.record.check(&rec[1..]).expect_err("short").to_string();
    assert!(e.contains("expected 101"), "{e}");
}

#[test]
fn writes_out_of_order_are_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    let mut w = PackWriter::create(&path, 10, 12).expect("create");
    let e = w
        .push_ledger(11, b"x", &[])
        .expect_err("skips 10")
        .to_string();
    assert!(e.contains("ledger 11 pushed, expected Some(10)"), "{e}");
    w.push_ledger(10, b"x", &[]).expect("10");
    let e = w.finish().expect_err("short").to_string();
    assert!(e.contains("finished before ledger 11"), "{e}");
    assert!(PackWriter::create(&path, 5, 4).is_err());
}

fn object(key: &str) -> Object {
    Object {
        key: key.into(),
        size: 10,
        sha256: "ab".repeat(32),
    }
}

fn manifest() -> Manifest {
    Manifest {
        format: 1,
        version: 3,
        created_unix_ms: 1,
        writer: "test".into(),
        range_ledgers: 100,
        first: 2,
        mark: 299,
        mark_record_sha256: "cd".repeat(32),
        packs: vec![
            PackRef {
                first: 2,
                last: 99,
                bodies: 5,
                object: object("packs/a"),
            },
            PackRef {
                first: 100,
                last: 199,
                bodies: 6,
                object: object("packs/b"),
            },
            PackRef {
                first: 200,
                last: 299,
                bodies: 7,
                object: object("packs/c"),
            },
        ],
        segments: vec![
            SegmentRef {
                first: 2,
                last: 199,
                object: object("segments/a"),
            },
            SegmentRef {
                first: 200,
                last: 299,
                object: object("segments/b"),
            },
        ],
        dicts: vec![DictRef {
            version: 1,
            object: object("dicts/1"),
        }],
    }
}

#[test]
fn manifests_round_trip_and_their_invariants_are_checked() {
    let m = manifest();
    let key = manifest_key(3);
    assert_eq!(key, "manifest/00000000000000000003.json");
    assert_eq!(parse_manifest_key(&key), Some(3));
    assert_eq!(parse_manifest_key("manifest/3.json"), None);
    assert_eq!(parse_manifest_key("other/00000000000000000003.json"), None);
    assert_eq!(Manifest::parse(&key, &m.to_bytes()).expect("parse"), m);
    assert_eq!(m.pack_of(2).map(|p| p.first), Some(2));
    assert_eq!(m.pack_of(150).map(|p| p.first), Some(100));
    assert_eq!(m.pack_of(299).map(|p| p.first), Some(200));
    assert!(m.pack_of(1).is_none() && m.pack_of(300).is_none());
    assert_eq!(m.bodies(), 18);
    assert_eq!(
        pack_key(2, 99, &"0123456789abcdef".repeat(4)),
        "packs/0000000002-0000000099-0123456789abcdef.pack"
    );

    let e = Manifest::parse(&manifest_key(4), &m.to_bytes()).expect_err("version");
    assert!(e.to_string().contains("holds version 3"), "{e}");
    let mut gap = m.clone();
    gap.packs.remove(1);
    let e = Manifest::parse(&key, &gap.to_bytes())
        .expect_err("gap")
        .to_string();
    assert!(
        e.contains("packs: range 200..=299 does not continue"),
        "{e}"
    );
    let mut short = m.clone();
    short.segments.pop();
    let e = Manifest::parse(&key, &short.to_bytes())
        .expect_err("short")
        .to_string();
    assert!(
        e.contains("segments: the ranges end before the mark 299"),
        "{e}"
    );
    let mut unhashed = m.clone();
    unhashed.dicts[0].object.sha256 = "xyz".into();
    let e = Manifest::parse(&key, &unhashed.to_bytes())
        .expect_err("sha")
        .to_string();
    assert!(e.contains("64-digit sha256"), "{e}");
    let mut future = m;
    future.format = 2;
    let e = Manifest::parse(&key, &future.to_bytes())
        .expect_err("format")
        .to_string();
    assert!(e.contains("format 2; this build reads format 1"), "{e}");
    let e = Manifest::parse(&key, b"{}").expect_err("empty").to_string();
    assert!(e.contains("not a manifest"), "{e}");
}
