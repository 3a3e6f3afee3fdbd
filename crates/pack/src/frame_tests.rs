//! Packs of ledger frames (version 3).

use std::fs;

use crate::format::{HEADER, LEDGER_ENTRY, LEDGER_PAGE, PAGE_CRC};
use crate::tests::{Ledger, ledger, piece};
use crate::*;

fn write_frames(path: &std::path::Path, first: u32, last: u32, level: i32) -> PackInfo {
    let mut w = PackWriter::create_frames(path, first, last).expect("create");
    for seq in first..=last {
        let (r, b) = ledger(seq);
        let framed = frame_ledger(&r, &b, level).expect("frame");
        w.push_frame(seq, &framed).expect("push");
    }
    w.finish().expect("finish")
}

/// Reads every ledger back the way a replica does: header, ledger table
/// page, frame.
fn read_frames(bytes: &[u8]) -> PackResult<Vec<Ledger>> {
    let h = Header::parse(bytes)?;
    let mut out = Vec::new();
    for seq in h.first..=h.last {
        let (page, _) = h.ledger_page_of(seq)?;
        let le = h.ledger_entry(piece(bytes, h.ledger_page(page)?)?, seq)?;
        let f = LedgerFrame::open(&h, &le, piece(bytes, h.data_range(&le.record)?)?)?;
        let bodies: Vec<Vec<u8>> = f.bodies().map(<[u8]>::to_vec).collect();
        for (i, b) in bodies.iter().enumerate() {
            assert_eq!(f.body(i as u32)?, &b[..]);
        }
        out.push((f.record().to_vec(), bodies));
    }
    Ok(out)
}

#[test]
fn a_pack_of_frames_reads_back_every_ledger_and_has_no_body_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    let (first, last) = (7u32, 7 + 300);
    let info = write_frames(&path, first, last, 3);
    let bytes = fs::read(&path).expect("read");
    let h = info.header;
    assert_eq!(
        (h.version, h.size, h.first, h.last),
        (3, bytes.len() as u64, first, last)
    );
    assert!(h.frames());
    assert_eq!(info.sha256, sha256(&bytes));
    let want: Vec<_> = (first..=last).map(ledger).collect();
    let bodies: usize = want.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(h.bodies, bodies as u64);
    // The largest frame decompressed: 4 + 4 parts + the parts.
    let raw =
        |(r, b): &Ledger| 4 + 4 * (1 + b.len()) + r.len() + b.iter().map(Vec::len).sum::<usize>();
    assert_eq!(
        h.max_raw as usize,
        want.iter().map(raw).max().expect("ledgers")
    );
    // The ledger table ends the file: no body table.
    let ledgers = u64::from(last - first + 1);
    let lt = ledgers * LEDGER_ENTRY + ledgers.div_ceil(LEDGER_PAGE) * PAGE_CRC;
    assert_eq!((h.ledger_table + lt, h.body_table), (h.size, h.size));
    assert_eq!(Header::parse(&bytes).expect("parse"), h);
    assert_eq!(read_frames(&bytes).expect("read back"), want);
    // Compressed together: less than the parts' bytes.
    assert!(h.ledger_table - HEADER < want.iter().map(raw).sum::<usize>() as u64 / 2);
    let e = h.body_page(0).expect_err("no body table").to_string();
    assert!(e.contains("has none"), "{e}");
    let le = h
        .ledger_entry(
            piece(&bytes, h.ledger_page(0).expect("page")).expect("lt"),
            first,
        )
        .expect("entry");
    let e = h
        .body_page_of(&le, 0)
        .expect_err("no body table")
        .to_string();
    assert!(e.contains("has none"), "{e}");
    // Ledger 7 has three bodies; a fourth is not there.
    let f = LedgerFrame::open(
        &h,
        &le,
        piece(&bytes, h.data_range(&le.record).expect("range")).expect("frame"),
    )
    .expect("frame");
    assert_eq!((f.bodies().count(), f.record()), (3, &ledger(first).0[..]));
    let e = f.body(3).expect_err("past the bodies").to_string();
    assert!(
        e.contains("body 3 asked of a ledger frame of 3 bodies"),
        "{e}"
    );
}

#[test]
fn a_pack_writer_refuses_the_other_form_and_a_ledger_out_of_order() {
    let dir = tempfile::tempdir().expect("tmp");
    let framed = frame_ledger(&[1; 10], &[vec![2; 5]], 3).expect("frame");
    let mut v3 = PackWriter::create_frames(&dir.path().join("a"), 1, 2).expect("create");
    let e = v3
        .push_ledger(1, &[1; 10], &[])
        .expect_err("v2 ledger")
        .to_string();
    assert!(
        e.contains("a version-2 ledger pushed into a version-3 pack"),
        "{e}"
    );
    let e = v3.push_frame(2, &framed).expect_err("order").to_string();
    assert!(e.contains("ledger 2 pushed, expected Some(1)"), "{e}");
    let lying = Framed {
        raw_len: (MAX_FRAME_RAW + 1) as u32,
        ..framed.clone()
    };
    let e = v3
        .push_frame(1, &lying)
        .expect_err("past the bound")
        .to_string();
    assert!(e.contains("exceeds the 1073741824 a reader allows"), "{e}");
    let mut v2 = PackWriter::create(&dir.path().join("b"), 1, 2).expect("create");
    let e = v2
        .push_frame(1, &framed)
        .expect_err("v3 ledger")
        .to_string();
    assert!(
        e.contains("a version-3 ledger pushed into a version-2 pack"),
        "{e}"
    );
}

/// Damage to a frame, to its ledger entry or to the header's bound is
/// found before a part is returned.
#[test]
fn damage_to_a_frame_is_found_by_its_crc_its_declared_size_and_its_parts() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("p.pack");
    let info = write_frames(&path, 1, 3, 3);
    let good = fs::read(&path).expect("read");
    let h = info.header;
    let entry = |bytes: &[u8], h: &Header, seq: u32| {
        h.ledger_entry(
            piece(bytes, h.ledger_page(0).expect("page")).expect("lt"),
            seq,
        )
        .expect("entry")
    };
    let le = entry(&good, &h, 3);
    let frame = piece(&good, h.data_range(&le.record).expect("range")).expect("frame");

    // The header's CRC covers the largest frame's size (bytes 60..64).
    let mut bad = good.clone();
    bad[63] ^= 1;
    let e = Header::parse(&bad).expect_err("crc").to_string();
    assert!(e.contains("CRC-32 mismatch"), "{e}");

    // A byte of the frame: its CRC.
    let mut damaged = frame.to_vec();
    damaged[frame.len() / 2] ^= 0x40;
    let e = LedgerFrame::open(&h, &le, &damaged)
        .expect_err("crc")
        .to_string();
    assert!(e.contains("fails its CRC-32"), "{e}");

    // A frame larger than the pack's largest (a header that lies, with a
    // good CRC): refused before it is decompressed.
    let small = Header { max_raw: 10, ..h };
    let e = LedgerFrame::open(&small, &le, frame)
        .expect_err("bound")
        .to_string();
    assert!(
        e.contains("more than the pack's largest frame (10 bytes)"),
        "{e}"
    );
    // Nor past the bound every reader keeps, whatever the header says: a
    // frame header (single segment, an 8-byte content size) declaring one
    // byte more is refused from its declaration alone.
    let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
    huge.extend_from_slice(&(MAX_FRAME_RAW + 1).to_le_bytes());
    let le_huge = LedgerEntry {
        record: Entry {
            offset: le.record.offset,
            len: huge.len() as u32,
            crc: crc32fast::hash(&huge),
        },
        ..le
    };
    let big = Header {
        max_raw: u32::MAX,
        ..h
    };
    let e = LedgerFrame::open(&big, &le_huge, &huge)
        .expect_err("past the bound")
        .to_string();
    assert!(
        e.contains(&format!("declares {}", MAX_FRAME_RAW + 1)),
        "{e}"
    );

    // Parts that do not add up, in a frame whose CRC is good: its body
    // count against the table's, a length past the end, bytes left over.
    let frame_of = |raw: &[u8]| {
        let f = zstd::bulk::compress(raw, 3).expect("compress");
        let le = LedgerEntry {
            record: Entry {
                offset: le.record.offset,
                len: f.len() as u32,
                crc: crc32fast::hash(&f),
            },
            ..le
        };
        (f, le)
    };
    let cases: [(Vec<u8>, &str); 5] = [
        (
            vec![0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 1, 7, 8],
            "2 parts, expected the record and 3 bodies",
        ),
        (
            [
                &[0, 0, 0, 4][..],
                &[0, 0, 0, 1],
                &[0, 0, 0, 1],
                &[0, 0, 0, 1],
                &[0, 0, 0, 9],
                &[1, 2, 3, 4],
            ]
            .concat(),
            "part 3 (9 bytes at 23) lies past its end",
        ),
        (
            [
                &[0, 0, 0, 4][..],
                &[0, 0, 0, 1],
                &[0, 0, 0, 1],
                &[0, 0, 0, 1],
                &[0, 0, 0, 0],
                &[1, 2, 3, 4],
            ]
            .concat(),
            "its parts end at 23 of its 24 bytes",
        ),
        (vec![0, 0], "no part count"),
        (
            vec![0, 0, 0, 4, 0, 0, 0, 1],
            "8 bytes, too few for the lengths of its 4 parts",
        ),
    ];
    for (raw, want) in cases {
        let (f, le) = frame_of(&raw);
        let e = LedgerFrame::open(&h, &le, &f).expect_err(want).to_string();
        assert!(e.contains(want), "{want}: {e}");
    }
    // Not a zstd frame at all.
    let junk = vec![0u8; 16];
    let le = LedgerEntry {
        record: Entry {
            offset: le.record.offset,
            len: 16,
            crc: crc32fast::hash(&junk),
        },
        ..le
    };
    let e = LedgerFrame::open(&h, &le, &junk)
        .expect_err("junk")
        .to_string();
    assert!(e.contains("is not a zstd frame"), "{e}");
    // A frame read from a pack of entries.
    let v2 = Header {
        version: 2,
        max_raw: 0,
        ..h
    };
    let e = LedgerFrame::open(&v2, &le, &junk)
        .expect_err("v2")
        .to_string();
    assert!(
        e.contains("a ledger frame read from a version-2 pack"),
        "{e}"
    );
}
