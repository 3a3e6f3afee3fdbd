//! The `segment` target: the files of a segments directory, which the
//! store maps and trusts only after checking them. Even first bytes: the
//! rest is a segment file (`seg-*.idx`), opened, looked up in, filtered
//! and verified. Odd: a hash list (`hashes-*.bin`), read back over the
//! range its header names.

use std::sync::OnceLock;

use ledgerstore_segment::{Segment, hashes};
use sha2::{Digest, Sha256};

use crate::scratch::Scratch;

/// Hashes every lookup probes: those the seed segments index (see
/// [`probe`]), so intact and lightly damaged seeds reach the ordinal and
/// offset paths, not only the fingerprint test.
pub const PROBES: u32 = 24;

/// The `i`-th probe hash, which the seed segments of
/// [`crate::seeds`] hold: SHA-256 of `fuzz-<i>`.
pub fn probe(i: u32) -> [u8; 32] {
    Sha256::digest(format!("fuzz-{i}")).into()
}

fn probes() -> &'static [[u8; 32]] {
    static P: OnceLock<Vec<[u8; 32]>> = OnceLock::new();
    P.get_or_init(|| {
        (0..PROBES)
            .map(probe)
            .chain([[0u8; 32], [0xFF; 32]])
            .collect()
    })
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick % 2 == 0 {
        segment(rest);
    } else {
        hash_list(rest);
    }
}

fn segment(bytes: &[u8]) {
    let file = Scratch::write("seg.idx", bytes);
    let Ok(seg) = Segment::open(&file.0) else {
        return;
    };
    assert!(
        seg.first() <= seg.last(),
        "an open segment with an empty range"
    );
    let answers: Vec<_> = probes()
        .iter()
        .map(|h| {
            let got = seg.lookup(h);
            if let Some(pos) = got {
                assert!(
                    (seg.first()..=seg.last()).contains(&pos.seq),
                    "a lookup answered ledger {} outside {}..={}",
                    pos.seq,
                    seg.first(),
                    seg.last()
                );
            }
            got
        })
        .collect();
    seg.load_filter();
    for (h, before) in probes().iter().zip(&answers) {
        assert_eq!(
            seg.lookup(h),
            *before,
            "the fingerprint filter changed an answer"
        );
    }
    let _ = seg.verify();
    let _ = seg.info();
}

fn hash_list(bytes: &[u8]) {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    // Callers ask for the range the file is named for; take the one the
    // header claims (a mismatch is refused before anything else is read).
    let (Some(first), Some(last)) = (word(16), word(20)) else {
        return;
    };
    let file = Scratch::write("hashes.bin", bytes);
    let counted = hashes::count(&file.0, first, last);
    let Ok(entries) = hashes::read(&file.0, first, last) else {
        return;
    };
    assert_eq!(
        counted.ok(),
        Some(entries.len() as u64),
        "the header's count differs from the entries read"
    );
    for pair in entries.windows(2) {
        assert!(pair[0].1 < pair[1].1, "hash list out of position order");
    }
    for (_, pos) in &entries {
        assert!(
            (first..=last).contains(&pos.seq),
            "a hash list entry at ledger {} outside {first}..={last}",
            pos.seq
        );
    }
}
