use std::fs;

use crate::format::{BODY_ENTRY, BODY_PAGE, HEADER, LEDGER_ENTRY, LEDGER_PAGE, PAGE_CRC};
use crate::manifest::{events_key, manifest_key, pack_key, parse_manifest_key};
use crate::*;

pub(crate) type Ledger = (Vec<u8>, Vec<Vec<u8>>);

pub(crate) fn ledger(seq: u32) -> Ledger {
    let record = vec![seq as u8; 100 + seq as usize];
    let bodies = (0..seq % 4)
        .map(|i| vec![(seq * 7 + i) as u8; 30 + i as usize])
        .collect();
    (record, bodies)
}

/// The ledgers of `testdata/v1-1-200.pack`, written by the version-1
/// writer (the commit that added it).
fn fixture_ledger(seq: u32) -> Ledger {
    let record = vec![seq as u8; 20 + (seq % 50) as usize];
    let bodies = (0..seq % 4)
        .map(|i| vec![(seq * 7 + i) as u8; 10 + i as usize])
        .collect();
    (record, bodies)
}

fn write(path: &std::path::Path, first: u32, last: u32, f: fn(u32) -> Ledger) -> PackInfo {
    let mut w = PackWriter::create(path, first, last).expect("create");
    for seq in first..=last {
        let (r, b) = f(seq);
        w.push_ledger(seq, &r, &b).expect("push");
    }
    w.finish().expect("finish")
}

pub(crate) fn piece(bytes: &[u8], r: std::ops::Range<u64>) -> PackResult<&[u8]> {
    bytes
        .get(r.start as usize..r.end as usize)
        .ok_or_else(|| PackError::Format(format!("{r:?} past the end")))
}

/// Reads entries back the way a replica does: header, table page, entry.
fn read_back(bytes: &[u8]) -> PackResult<Vec<Ledger>> {
    let h = Header::parse(bytes)?;
    if h.size != bytes.len() as u64 {
        return Err(PackError::Format("size".into()));
    }
    let mut out = Vec::new();
    for seq in h.first..=h.last {
        let (page, _) = h.ledger_page_of(seq)?;
        let le = h.ledger_entry(piece(bytes, h.ledger_page(page)?)?, seq)?;
        let rec = piece(bytes, h.data_range(&le.record)?)?.to_vec();
        le.record.check(&rec)?;
        let mut bodies = Vec::new();
        for index in 0..le.bodies {
            let (page, _) = h.body_page_of(&le, index)?;
            let e = h.body_entry(piece(bytes, h.body_page(page)?)?, &le, index)?;
            let b = piece(bytes, h.data_range(&e)?)?.to_vec();
            e.check(&b)?;
            bodies.push(b);
        }
        out.push((rec, bodies));
    }
    Ok(out)
}

#[test]
fn a_pack_reads_back_every_ledger_and_body_through_its_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    let (first, last) = (7u32, 7 + 300);
    let info = write(&path, first, last, ledger);
    let want: Vec<_> = (first..=last).map(ledger).collect();
    let bytes = fs::read(&path).expect("read");
    assert_eq!(info.header.version, 2);
    assert_eq!(info.header.size, bytes.len() as u64);
    assert_eq!(info.sha256, sha256(&bytes));
    let bodies: usize = want.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(info.header.bodies, bodies as u64);
    assert_eq!(info.header.max_entry, 100 + last);
    let ledgers = u64::from(last - first + 1);
    assert_eq!(
        info.header.size,
        info.header.ledger_table
            + ledgers * LEDGER_ENTRY
            + ledgers.div_ceil(LEDGER_PAGE) * PAGE_CRC
            + bodies as u64 * BODY_ENTRY
            + (bodies as u64).div_ceil(BODY_PAGE) * PAGE_CRC
    );
    assert_eq!(read_back(&bytes).expect("read back"), want);
    assert_eq!(Header::parse(&bytes).expect("header"), info.header);
}

/// Packs published before table page CRCs (format version 1) still read.
#[test]
fn a_version_1_pack_still_reads_back_exactly() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/v1-1-200.pack");
    let bytes = fs::read(&path).expect("fixture");
    let h = Header::parse(&bytes).expect("header");
    assert_eq!((h.version, h.first, h.last, h.max_entry), (1, 1, 200, 0));
    assert!(h.bodies > BODY_PAGE && h.ledgers() > LEDGER_PAGE, "{h:?}");
    let want: Vec<_> = (1..=200).map(fixture_ledger).collect();
    assert_eq!(read_back(&bytes).expect("read back"), want);
    // The same ledgers written now are a version-2 pack with other bytes.
    let dir = tempfile::tempdir().expect("tmp");
    let info = write(&dir.path().join("v2.pack"), 1, 200, fixture_ledger);
    assert_eq!(info.header.version, 2);
    assert_ne!(info.header.size, h.size);
}

/// Any one byte of a version-2 pack, damaged, fails a read or leaves its
/// answers unchanged (bytes 60..64 are reserved): never another answer,
/// never a panic.
#[test]
fn every_damaged_byte_fails_a_read_and_never_gives_another_answer() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    write(&path, 1, 140, fixture_ledger);
    let good = fs::read(&path).expect("read");
    let want = read_back(&good).expect("intact");
    let h = Header::parse(&good).expect("header");
    // Every header byte, every 3rd table byte, every 11th data byte (the
    // entry CRCs of the data were checked before version 2).
    let positions = (0..HEADER)
        .chain((HEADER..h.ledger_table).step_by(11))
        .chain((h.ledger_table..h.size).step_by(3));
    for at in positions.map(|a| a as usize) {
        let mut bad = good.clone();
        bad[at] ^= 0x5a;
        match read_back(&bad) {
            Err(_) => {}
            Ok(got) => {
                assert!((60..64).contains(&at), "byte {at}: no error");
                assert_eq!(got, want, "byte {at}");
            }
        }
    }
    // Table damage is found by the page CRC, before any entry is used.
    let mut bad = good.clone();
    bad[(h.body_table + 3) as usize] ^= 1; // body 0's offset
    let seq = (1..=140)
        .find(|s| s % 4 != 0)
        .expect("a ledger with bodies");
    let (page, _) = h.ledger_page_of(seq).expect("page");
    let le = h
        .ledger_entry(
            piece(&bad, h.ledger_page(page).expect("lt")).expect("page"),
            seq,
        )
        .expect("ledger table intact");
    let e = h
        .body_entry(
            piece(&bad, h.body_page(0).expect("bt")).expect("page"),
            &le,
            0,
        )
        .expect_err("damaged page")
        .to_string();
    assert!(e.contains("body table page 0 fails its CRC-32"), "{e}");
}

/// A version-1 pack has no page CRCs: damaged table fields are caught by
/// the header's bounds, with an error and without a panic.
#[test]
fn damaged_version_1_table_fields_are_refused_by_the_headers_bounds() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/v1-1-200.pack");
    let good = fs::read(&path).expect("fixture");
    let h = Header::parse(&good).expect("header");
    let lt = h.ledger_table as usize;
    let entry = |b: &[u8], seq: u32| {
        let (page, _) = h.ledger_page_of(seq)?;
        h.ledger_entry(piece(b, h.ledger_page(page)?)?, seq)
    };
    // Ledger 3 (entry 2): first_body, bodies, length, offset.
    let set = |at: usize, v: &[u8]| {
        let mut b = good.clone();
        b[lt + 24 * 2 + at..lt + 24 * 2 + at + v.len()].copy_from_slice(v);
        b
    };
    let e = entry(&set(16, &u32::MAX.to_be_bytes()), 3)
        .expect_err("first_body")
        .to_string();
    assert!(e.contains("lie outside the pack's 300 bodies"), "{e}");
    let e = entry(&set(20, &u32::MAX.to_be_bytes()), 3)
        .expect_err("bodies")
        .to_string();
    assert!(e.contains("ledger 3's bodies"), "{e}");
    let e = entry(&set(8, &u32::MAX.to_be_bytes()), 3)
        .expect_err("length")
        .to_string();
    assert!(e.contains("outside the data section"), "{e}");
    let e = entry(&set(0, &u64::MAX.to_be_bytes()), 3)
        .expect_err("offset")
        .to_string();
    assert!(e.contains("outside the data section"), "{e}");
    // A body ordinal past the table is refused before a page is asked for.
    let le = entry(&good, 3).expect("intact");
    let e = h
        .body_page_of(&le, le.bodies)
        .expect_err("index")
        .to_string();
    assert!(e.contains("asked of a ledger of 3 bodies"), "{e}");
    let e = h.ledger_page(99).expect_err("page").to_string();
    assert!(e.contains("ledger table page 99 asked for"), "{e}");
    let e = h.ledger_page_of(201).expect_err("seq").to_string();
    assert!(
        e.contains("ledger 201 asked of a pack of ledgers 1..=200"),
        "{e}"
    );
}

#[test]
fn damage_is_found_by_the_header_crc_and_the_entry_crcs() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    write(&path, 1, 3, ledger);
    let good = fs::read(&path).expect("read");
    let mut bad = good.clone();
    bad[13] ^= 1; // first ledger
    let e = Header::parse(&bad).expect_err("header crc").to_string();
    assert!(e.contains("CRC-32 mismatch"), "{e}");
    let e = Header::parse(b"LSPACK01").expect_err("short").to_string();
    assert!(e.contains("8 bytes, expected 64"), "{e}");
    let mut future = good.clone();
    future[11] = 5;
    let e = Header::parse(&future).expect_err("version").to_string();
    assert!(
        e.contains("version 5; this build reads 1, 2, 3 and 4"),
        "{e}"
    );
    let mut bad = good.clone();
    bad[HEADER as usize + 5] ^= 0xff; // inside ledger 1's record
    let h = Header::parse(&bad).expect("header intact");
    let le = h
        .ledger_entry(piece(&bad, h.ledger_page(0).expect("page")).expect("lt"), 1)
        .expect("entry");
    let rec = piece(&bad, h.data_range(&le.record).expect("range")).expect("record");
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
        events_geometry: None,
        events: vec![],
    }
}

fn events_ref(first: u32, last: u32) -> EventsRef {
    EventsRef {
        first,
        last,
        events: 7,
        object: object(&format!("events/{first}")),
    }
}

#[test]
fn manifests_list_event_files_that_tile_windows_inside_the_published_range() {
    let key = manifest_key(3);
    let plain = manifest();
    // No events: the bytes earlier builds wrote (no new keys).
    let text = String::from_utf8(plain.to_bytes()).expect("utf8");
    assert!(!text.contains("events"), "{text}");

    let mut m = plain.clone();
    m.events_geometry = Some(EventsGeometry {
        file_ledgers: 50,
        fan_out: 2,
    });
    m.events = vec![events_ref(2, 99), events_ref(100, 199)];
    let back = Manifest::parse(&key, &m.to_bytes()).expect("parse");
    assert_eq!(back, m);
    assert_eq!(back.events_through(), Some(199));
    assert_eq!(
        events_key(2, 99, &"0123456789abcdef".repeat(4)),
        "events/0000000002-0000000099-0123456789abcdef.idx"
    );

    let refuse = |edit: &dyn Fn(&mut Manifest), want: &str| {
        let mut bad = m.clone();
        edit(&mut bad);
        let e = Manifest::parse(&key, &bad.to_bytes())
            .expect_err(want)
            .to_string();
        assert!(e.contains(want), "{want}: {e}");
    };
    refuse(&|b| b.events_geometry = None, "without events_geometry");
    refuse(
        &|b| {
            b.events_geometry = Some(EventsGeometry {
                file_ledgers: 50,
                fan_out: 1,
            })
        },
        "expected at least 1 and 2",
    );
    refuse(
        &|b| b.events[1].first = 101,
        "events: range 101..=199 does not continue",
    );
    refuse(
        &|b| b.events[0].first = 1,
        "starts at 1, not at the first published ledger 2",
    );
    refuse(
        &|b| b.events.push(events_ref(200, 349)),
        "does not continue the ones before it",
    );
    refuse(
        &|b| b.events[1].last = 198,
        "file 100..=198 does not end a window of 50",
    );
    refuse(
        &|b| b.events = vec![events_ref(2, 98)],
        "does not end a window of 50 ledgers",
    );
    refuse(
        &|b| b.events[1].object.sha256 = "xyz".into(),
        "64-digit sha256",
    );
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
