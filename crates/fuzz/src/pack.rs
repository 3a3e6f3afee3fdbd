//! The `pack` target: what a replica reads of the published tier. Even
//! first bytes: the rest is a pack file, read the way a replica reads it
//! (header, table pages, entries; in versions 3 and 4, ledger frames
//! opened, in version 4 with the pack's dictionary once it opens).
//! Odd: a manifest.

use ledgerstore_pack::{DictReader, Header, LedgerEntry, LedgerFrame, Manifest};

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        pack(rest);
    } else {
        manifest(rest);
    }
}

fn get(bytes: &[u8], r: std::ops::Range<u64>) -> Option<&[u8]> {
    bytes.get(usize::try_from(r.start).ok()?..usize::try_from(r.end).ok()?)
}

fn pack(bytes: &[u8]) {
    let Ok(h) = Header::parse(bytes) else {
        return;
    };
    assert!(h.first <= h.last, "a header with an empty range");
    assert!(
        h.ledger_table >= 64 && h.ledger_table <= h.body_table && h.body_table <= h.size,
        "a header whose tables are out of order: {h:?}"
    );
    if h.size != bytes.len() as u64 {
        return; // a replica checks the size against the manifest first
    }
    // Version 4: a replica opens no frame of a pack whose dictionary fails.
    let dict = match h.dict_range() {
        None => None,
        Some(r) => {
            assert!(
                r.start >= h.ledger_table && r.end == h.size,
                "a dictionary outside its section: {h:?}"
            );
            let stored = get(bytes, r).expect("a dictionary inside the pack");
            let Ok(d) = DictReader::open(&h, stored) else {
                return;
            };
            assert!(
                d.raw_len() > 0 && d.raw_len() as u64 <= ledgerstore_pack::MAX_DICT,
                "an accepted dictionary of {} bytes",
                d.raw_len()
            );
            Some(d)
        }
    };
    for seq in h.first..=h.last {
        let Ok((page, _)) = h.ledger_page_of(seq) else {
            panic!("ledger {seq} of {h:?} has no page");
        };
        let range = h.ledger_page(page).expect("a page of a ledger in range");
        let page = get(bytes, range.clone())
            .unwrap_or_else(|| panic!("ledger page {range:?} outside a {}-byte pack", h.size));
        let Ok(le) = h.ledger_entry(page, seq) else {
            continue;
        };
        let rec = h
            .data_range(&le.record)
            .expect("an accepted entry's record is in range");
        in_data(&h, &rec);
        assert!(
            u64::from(le.first_body) + u64::from(le.bodies) <= h.bodies,
            "accepted bodies past the table"
        );
        if h.frames() {
            frame(&h, &le, get(bytes, rec), dict.as_ref());
            continue;
        }
        if let Some(b) = get(bytes, rec) {
            let _ = le.record.check(b);
        }
        for index in 0..le.bodies.min(64) {
            let (page, _) = h
                .body_page_of(&le, index)
                .expect("an accepted ledger's bodies have pages");
            let range = h.body_page(page).expect("a page in the table");
            let page = get(bytes, range).expect("a body page inside the pack");
            let Ok(e) = h.body_entry(page, &le, index) else {
                continue;
            };
            let r = h.data_range(&e).expect("an accepted body is in range");
            in_data(&h, &r);
            if let Some(b) = get(bytes, r) {
                let _ = e.check(b);
            }
        }
    }
}

/// A version-3 or 4 ledger frame, opened as a replica opens it: an
/// accepted frame holds the record and exactly the ledger's bodies, each
/// inside what it decompressed to, no more than the header's largest.
fn frame(h: &Header, le: &LedgerEntry, bytes: Option<&[u8]>, dict: Option<&DictReader>) {
    assert!(
        h.body_page(0).is_err(),
        "a pack of frames with a body table page"
    );
    let Some(bytes) = bytes else {
        return;
    };
    let Ok(f) = LedgerFrame::open(h, le, bytes, dict) else {
        return;
    };
    assert!(
        f.raw_len() <= h.max_raw as usize,
        "an accepted frame past the header's largest"
    );
    assert_eq!(f.bodies().count(), le.bodies as usize, "accepted bodies");
    let parts: usize = f.record().len() + f.bodies().map(<[u8]>::len).sum::<usize>();
    assert_eq!(
        parts + 4 * (2 + le.bodies as usize),
        f.raw_len(),
        "accepted parts that do not fill the frame"
    );
    assert!(f.body(le.bodies).is_err(), "a body past the ledger's");
}

fn in_data(h: &Header, r: &std::ops::Range<u64>) {
    assert!(
        r.start >= 64 && r.start <= r.end && r.end <= h.ledger_table,
        "an accepted entry {r:?} outside the data section of {h:?}"
    );
    if h.version >= 2 {
        assert!(
            r.end - r.start <= u64::from(h.max_entry),
            "an accepted entry larger than the header's largest"
        );
    }
}

fn manifest(bytes: &[u8]) {
    let key = "manifest/00000000000000000003.json";
    let Ok(m) = Manifest::parse(key, bytes) else {
        return;
    };
    assert_eq!(
        m.version, 3,
        "a manifest parsed under another version's key"
    );
    m.validate().expect("a parsed manifest validates");
    for p in &m.packs {
        for seq in [p.first, p.last] {
            let got = m.pack_of(seq).map(|q| (q.first, q.last));
            assert_eq!(got, Some((p.first, p.last)), "pack_of({seq})");
        }
    }
    let _ = Manifest::parse(key, &m.to_bytes()).expect("a manifest re-parses");
}
