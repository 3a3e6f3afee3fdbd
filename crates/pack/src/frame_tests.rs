//! Packs of ledger frames (versions 3 and 4).

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
    let dict = match h.dict_range() {
        Some(r) => Some(DictReader::open(&h, piece(bytes, r)?)?),
        None => None,
    };
    let mut out = Vec::new();
    for seq in h.first..=h.last {
        let (page, _) = h.ledger_page_of(seq)?;
        let le = h.ledger_entry(piece(bytes, h.ledger_page(page)?)?, seq)?;
        let frame = piece(bytes, h.data_range(&le.record)?)?;
        let f = LedgerFrame::open(&h, &le, frame, dict.as_ref())?;
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
        None,
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
    let e = LedgerFrame::open(&h, &le, &damaged, None)
        .expect_err("crc")
        .to_string();
    assert!(e.contains("fails its CRC-32"), "{e}");

    // A frame larger than the pack's largest (a header that lies, with a
    // good CRC): refused before it is decompressed.
    let small = Header { max_raw: 10, ..h };
    let e = LedgerFrame::open(&small, &le, frame, None)
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
    let e = LedgerFrame::open(&big, &le_huge, &huge, None)
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
        let e = LedgerFrame::open(&h, &le, &f, None)
            .expect_err(want)
            .to_string();
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
    let e = LedgerFrame::open(&h, &le, &junk, None)
        .expect_err("junk")
        .to_string();
    assert!(e.contains("is not a zstd frame"), "{e}");
    // A frame read from a pack of entries.
    let v2 = Header {
        version: 2,
        max_raw: 0,
        ..h
    };
    let e = LedgerFrame::open(&v2, &le, &junk, None)
        .expect_err("v2")
        .to_string();
    assert!(
        e.contains("a ledger frame read from a version-2 pack"),
        "{e}"
    );
}

/// Ledgers that share most of their bytes, as a chain's consecutive
/// ledgers do (accounts, contracts, structure), but not with themselves:
/// each is a slice of one pseudo-random vocabulary, so a frame compresses
/// only against other ledgers' bytes.
fn shared_ledger(seq: u32) -> Ledger {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    let vocab: Vec<u8> = (0..16_384)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let at = (seq as usize * 997) % 8_192;
    let record = [&seq.to_be_bytes()[..], &vocab[at..at + 2_000]].concat();
    let bodies = (0..3)
        .map(|i| vocab[(at + 3_000 * i) % 8_192..][..1_500].to_vec())
        .collect();
    (record, bodies)
}

/// Writes a version-4 pack of `ledger`s, its dictionary sampled as the
/// publisher samples it, `budget` bytes at most.
fn write_dict(
    path: &std::path::Path,
    first: u32,
    last: u32,
    budget: usize,
    ledger: fn(u32) -> Ledger,
) -> PackInfo {
    let content = |seq: u32| {
        let (r, b) = ledger(seq);
        frame_content(&r, &b).map(Some)
    };
    let dict = FrameDict::of_ledgers::<PackError>(first, last, budget, 3, content)
        .expect("dictionary")
        .expect("sampled ledgers");
    let enc = FrameEncoder::new(3, Some(&dict));
    let mut w = PackWriter::create_frames_with_dict(path, first, last, &dict).expect("create");
    for seq in first..=last {
        let (r, b) = ledger(seq);
        w.push_frame(seq, &enc.frame(&r, &b).expect("frame"))
            .expect("push");
    }
    w.finish().expect("finish")
}

#[test]
fn a_pack_with_its_dictionary_reads_back_and_compresses_against_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let (first, last) = (3u32, 3 + 200);
    let v4 = write_dict(&dir.path().join("v4"), first, last, 64 << 10, shared_ledger);
    let bytes = fs::read(&v4.path).expect("read");
    let h = v4.header;
    assert_eq!((h.version, h.size), (4, bytes.len() as u64));
    assert!(h.frames());
    assert_eq!(Header::parse(&bytes).expect("parse"), h);
    let want: Vec<_> = (first..=last).map(shared_ledger).collect();
    assert_eq!(read_frames(&bytes).expect("read back"), want);
    // The ledger table ends where the dictionary starts; its frame and
    // CRC end the file.
    let ledgers = u64::from(last - first + 1);
    let lt = ledgers * LEDGER_ENTRY + ledgers.div_ceil(LEDGER_PAGE) * PAGE_CRC;
    let dr = h.dict_range().expect("a dictionary");
    assert_eq!((h.ledger_table + lt, dr.end), (dr.start, h.size));
    let dict = DictReader::open(&h, piece(&bytes, dr.clone()).expect("dict")).expect("open");
    assert_eq!(dict.raw_len(), 64 << 10);
    // A reader's memory is zstd's dictionary: the bytes once, and its
    // tables (tens of KiB).
    let held = dict.memory();
    assert!(
        (64 << 10..2 * (64 << 10)).contains(&held),
        "a 64 KiB dictionary held in {held} bytes"
    );
    // `memory` counts zstd's dictionary alone, so a reader must hold
    // nothing else of size: zstd's handle and the length, no buffer.
    assert_eq!(
        std::mem::size_of::<DictReader>(),
        std::mem::size_of::<zstd::dict::DecoderDictionary<'static>>()
            + std::mem::size_of::<usize>()
    );
    // The same ledgers in version 3: each frame holds its vocabulary
    // slice (random bytes), while version 4's refer to the dictionary.
    let mut w = PackWriter::create_frames(&dir.path().join("v3"), first, last).expect("v3");
    for seq in first..=last {
        let (r, b) = shared_ledger(seq);
        w.push_frame(seq, &frame_ledger(&r, &b, 3).expect("frame"))
            .expect("push");
    }
    let v3 = w.finish().expect("finish").header;
    let (frames3, frames4) = (v3.ledger_table - HEADER, h.ledger_table - HEADER);
    assert!(
        frames4 * 4 < frames3,
        "frames with the dictionary {frames4} bytes, without {frames3}"
    );
    assert!(v3.dict_range().is_none());
}

/// A version-4 frame opens only with its own pack's dictionary, and a
/// damaged or lying dictionary is refused before any frame is read.
#[test]
fn a_pack_dictionary_is_checked_and_frames_need_exactly_theirs() {
    let dir = tempfile::tempdir().expect("tmp");
    let v4 = write_dict(&dir.path().join("a"), 1, 40, 16 << 10, shared_ledger);
    let other = write_dict(&dir.path().join("b"), 41, 80, 16 << 10, shared_ledger);
    let bytes = fs::read(&v4.path).expect("read");
    let h = v4.header;
    let dr = h.dict_range().expect("dict");
    let stored = piece(&bytes, dr.clone()).expect("dict");
    let dict = DictReader::open(&h, stored).expect("dict");
    let other_bytes = fs::read(&other.path).expect("read");
    let other_dict = DictReader::open(
        &other.header,
        piece(&other_bytes, other.header.dict_range().expect("dict")).expect("dict"),
    )
    .expect("dict");
    let le = h
        .ledger_entry(
            piece(&bytes, h.ledger_page(0).expect("page")).expect("lt"),
            7,
        )
        .expect("entry");
    let frame = piece(&bytes, h.data_range(&le.record).expect("range")).expect("frame");
    let f = LedgerFrame::open(&h, &le, frame, Some(&dict)).expect("its own");
    assert_eq!(f.record(), &shared_ledger(7).0[..]);
    let e = LedgerFrame::open(&h, &le, frame, None)
        .expect_err("no dictionary")
        .to_string();
    assert!(
        e.contains("a ledger frame of a version-4 pack opened without a dictionary"),
        "{e}"
    );
    // Another pack's dictionary: zstd's checksum of the content fails
    // (without it, these bytes decompress to other bytes whose parts add
    // up).
    let e = LedgerFrame::open(&h, &le, frame, Some(&other_dict))
        .expect_err("another pack's dictionary")
        .to_string();
    assert!(e.contains("does not decompress"), "{e}");
    // A version-3 frame opened with a dictionary.
    let v3 = Header { version: 3, ..h };
    let e = LedgerFrame::open(&v3, &le, frame, Some(&dict))
        .expect_err("v3 with a dictionary")
        .to_string();
    assert!(e.contains("version-3 pack opened with a dictionary"), "{e}");
    let e = DictReader::open(&v3, stored).expect_err("v3").to_string();
    assert!(e.contains("asked of a version-3 pack"), "{e}");

    // A flipped byte: its CRC. Short: its length.
    let mut bad = stored.to_vec();
    bad[stored.len() / 2] ^= 0x20;
    let e = DictReader::open(&h, &bad).expect_err("crc").to_string();
    assert!(e.contains("the pack's dictionary: fails its CRC-32"), "{e}");
    let e = DictReader::open(&h, &stored[1..])
        .expect_err("short")
        .to_string();
    assert!(e.contains("bytes, expected"), "{e}");
    // A frame that declares more than MAX_DICT, with a good CRC.
    let mut huge = vec![0x28, 0xb5, 0x2f, 0xfd, 0xe0];
    huge.extend_from_slice(&(MAX_DICT + 1).to_le_bytes());
    huge.extend_from_slice(&crc32fast::hash(&huge).to_be_bytes());
    let lying = Header {
        size: h.body_table + huge.len() as u64,
        ..h
    };
    let e = DictReader::open(&lying, &huge)
        .expect_err("huge")
        .to_string();
    assert!(
        e.contains(&format!(
            "declares {} bytes, not 1..={MAX_DICT}",
            MAX_DICT + 1
        )),
        "{e}"
    );
    // A well-formed frame whose bytes begin as zstd's own dictionary
    // format does: zstd would parse them as one (and its binding panics
    // on the null it returns), so the reader refuses them first.
    let mut magic = [0x37u8, 0xa4, 0x30, 0xec].to_vec();
    magic.extend_from_slice(&[7u8; 1000]);
    let mut framed = zstd::bulk::compress(&magic, 3).expect("compress");
    framed.extend_from_slice(&crc32fast::hash(&framed).to_be_bytes());
    let posing = Header {
        size: h.body_table + framed.len() as u64,
        ..h
    };
    let e = DictReader::open(&posing, &framed)
        .expect_err("zstd's magic")
        .to_string();
    assert!(e.contains("begins with zstd's dictionary magic"), "{e}");
    // A header whose dictionary section could not hold a dictionary, or
    // holds more than any: refused.
    for size in [
        h.body_table + 4,
        h.body_table + 4 + crate::format::MAX_DICT_STORED + 1,
    ] {
        let enc = Header { size, ..h }.encode();
        let e = Header::parse(&enc).expect_err("dict section").to_string();
        assert!(e.contains("tables do not fill the file"), "{size}: {e}");
    }
}

/// A dictionary kept unpacked (raw and its CRC-32: what a replica keeps
/// on its disk) opens to one that reads the pack's frames, and one whose
/// bytes changed, or that is cut short, or whose raw bytes a reader must
/// refuse, is refused.
#[test]
fn a_dictionary_kept_unpacked_opens_without_its_pack_and_is_checked() {
    let dir = tempfile::tempdir().expect("tmp");
    let v4 = write_dict(&dir.path().join("a"), 1, 40, 16 << 10, shared_ledger);
    let bytes = fs::read(&v4.path).expect("read");
    let h = v4.header;
    let stored = piece(&bytes, h.dict_range().expect("dict")).expect("dict");
    let raw = DictReader::raw_of(&h, stored).expect("raw");
    assert!(raw.len() > 1000, "{} bytes raw", raw.len());
    let kept = DictReader::unpacked(&raw);
    assert_eq!(kept.len(), raw.len() + 4);
    assert_eq!(&kept[..raw.len()], &raw[..]);
    let dict = DictReader::of_unpacked(&kept).expect("unpacked");
    assert_eq!(dict.raw_len(), raw.len());
    let le = h
        .ledger_entry(
            piece(&bytes, h.ledger_page(0).expect("page")).expect("lt"),
            9,
        )
        .expect("entry");
    let frame = piece(&bytes, h.data_range(&le.record).expect("range")).expect("frame");
    let f = LedgerFrame::open(&h, &le, frame, Some(&dict)).expect("its frame");
    assert_eq!(f.record(), &shared_ledger(9).0[..]);

    for at in [0, raw.len() / 2, raw.len() + 2] {
        let mut bad = kept.clone();
        bad[at] ^= 0x04;
        let e = DictReader::of_unpacked(&bad)
            .expect_err("flipped")
            .to_string();
        assert!(
            e.contains("an unpacked dictionary: fails its CRC-32"),
            "{at}: {e}"
        );
    }
    let e = DictReader::of_unpacked(&kept[..3])
        .expect_err("short")
        .to_string();
    assert!(e.contains("3 bytes, fewer than its CRC-32's 4"), "{e}");
    // Checked, but nothing a pack could hold: none, or zstd's own format.
    let e = DictReader::of_unpacked(&DictReader::unpacked(&[]))
        .expect_err("empty")
        .to_string();
    assert!(
        e.contains(&format!("0 bytes raw, not 1..={MAX_DICT}")),
        "{e}"
    );
    let magic = [0x37, 0xa4, 0x30, 0xec, 1, 2, 3, 4];
    let e = DictReader::of_unpacked(&DictReader::unpacked(&magic))
        .expect_err("magic")
        .to_string();
    assert!(e.contains("begins with zstd's dictionary magic"), "{e}");
}

#[test]
fn dictionary_samples_spread_across_the_range_middle_first() {
    assert_eq!(dict_samples(5, 5), vec![5]);
    assert_eq!(dict_samples(1, 2), vec![2, 1]);
    let s = dict_samples(0, 9_999);
    assert_eq!(&s[..3], &[5_000, 2_500, 7_500]);
    assert_eq!(s.len(), 31);
    let mut sorted = s.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), 31, "each once");
    assert!(sorted.iter().all(|q| *q < 10_000));
    // Samples whole while they fit, the beginning of the one that does
    // not, the first (the middle's) last, where zstd looks first.
    let two = || [[1u8, 9].repeat(50), [2u8, 8].repeat(50)];
    let d = FrameDict::sampled(two(), 150, 3).expect("dict");
    assert_eq!(
        d.raw(),
        &[&[2u8, 8].repeat(25)[..], &[1u8, 9].repeat(50)].concat()[..]
    );
    // A budget smaller than the first sample takes its beginning.
    let d = FrameDict::sampled(two(), 50, 3).expect("dict");
    assert_eq!(d.raw(), &[1u8, 9].repeat(25)[..]);
    // Raw bytes zstd would take for its own dictionary format: refused.
    let magic = [0x37, 0xa4, 0x30, 0xec, 1, 2, 3, 4].to_vec();
    let e = FrameDict::sampled([magic], 150, 3).expect_err("magic");
    assert!(e.to_string().contains("zstd's dictionary magic"), "{e}");
    let e = FrameDict::sampled(Vec::<Vec<u8>>::new(), 150, 3).expect_err("empty");
    assert!(e.to_string().contains("a dictionary of no bytes"), "{e}");
    // From a pack's ledgers: read in the samples' order, a ledger not
    // stored skipped, no further than the budget holds; none stored, none.
    let mut read = Vec::new();
    let d = FrameDict::of_ledgers::<PackError>(0, 9_999, 250, 3, |seq| {
        read.push(seq);
        Ok((seq != 5_000).then(|| vec![(seq % 251) as u8; 100]))
    })
    .expect("dict")
    .expect("sampled");
    assert_eq!(read, vec![5_000, 2_500, 7_500, 1_250]);
    let want = [
        vec![(1_250 % 251) as u8; 50],
        vec![(7_500 % 251) as u8; 100],
        vec![(2_500 % 251) as u8; 100],
    ]
    .concat();
    assert_eq!(d.raw(), &want[..]);
    let none = FrameDict::of_ledgers::<PackError>(1, 9, 250, 3, |_| Ok(None)).expect("none");
    assert!(none.is_none());
}

/// A version-4 pack takes only frames compressed with its own
/// dictionary: not one without a dictionary, not one of another pack's;
/// and a version-3 pack takes none compressed with one.
#[test]
fn a_pack_writer_takes_only_frames_of_its_own_dictionary() {
    let dir = tempfile::tempdir().expect("tmp");
    let dict_of = |first: u32, last: u32| {
        let content = |seq: u32| {
            let (r, b) = shared_ledger(seq);
            frame_content(&r, &b).map(Some)
        };
        FrameDict::of_ledgers::<PackError>(first, last, 16 << 10, 3, content)
            .expect("dictionary")
            .expect("sampled ledgers")
    };
    let (mine, other) = (dict_of(1, 40), dict_of(41, 80));
    assert_ne!(mine.fingerprint(), other.fingerprint());
    let (r, b) = shared_ledger(1);
    let own = FrameEncoder::new(3, Some(&mine))
        .frame(&r, &b)
        .expect("frame");
    let others = FrameEncoder::new(3, Some(&other))
        .frame(&r, &b)
        .expect("frame");
    let plain = frame_ledger(&r, &b, 3).expect("frame");
    let mut v4 =
        PackWriter::create_frames_with_dict(&dir.path().join("a"), 1, 2, &mine).expect("create");
    for (framed, how) in [
        (&others, "with another dictionary than the pack's"),
        (&plain, "without a dictionary"),
    ] {
        let e = v4.push_frame(1, framed).expect_err(how).to_string();
        assert!(
            e.contains(&format!(
                "ledger 1's frame was compressed {how}; the pack is version 4"
            )),
            "{e}"
        );
    }
    v4.push_frame(1, &own).expect("its own dictionary's frame");
    let mut v3 = PackWriter::create_frames(&dir.path().join("b"), 1, 2).expect("create");
    let e = v3.push_frame(1, &own).expect_err("v4 frame").to_string();
    assert!(
        e.contains("ledger 1's frame was compressed with a dictionary; the pack is version 3"),
        "{e}"
    );
    v3.push_frame(1, &plain).expect("a frame without one");
}
