//! Finding a repeated hash, or two hashes sharing a 128-bit prefix, among
//! a segment's keys (no MPH separates identical keys, and kind 1 keys by
//! the prefix). Sorting (first 8 bytes as an integer, index) pairs, then
//! comparing whole hashes only where those 8 bytes tie, costs integer
//! compares on 16 contiguous bytes instead of a 32-byte `memcmp` through a
//! pointer per comparison: that sort was ~3% of a backfill's CPU
//! (docs/benchmarks.md, "Ingest CPU on two cores").

/// What [`find`] found: the indices of the two hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// The same hash twice.
    Hash(usize, usize),
    /// Two hashes with the same first 16 bytes (looked for only when asked).
    Prefix(usize, usize),
}

/// The first repeat among the `n` hashes `hash(0..n)`, in hash order (the
/// smallest repeated hash; for a hash seen more than twice, its two lowest
/// indices), or, when `prefixes`, the first shared 128-bit prefix if no
/// hash repeats. Memory: 16 bytes a hash.
pub(crate) fn find<'a>(
    n: usize,
    hash: impl Fn(usize) -> &'a [u8; 32],
    prefixes: bool,
) -> Option<Repeat> {
    let n = u32::try_from(n).expect("a segment holds fewer than 2^32 keys");
    // (head, index) pairs sort in place, without reaching back into the
    // hashes (random reads) for every comparison.
    let mut order: Vec<(u64, u32)> = (0..n)
        .map(|i| {
            let h = hash(i as usize);
            (
                u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]),
                i,
            )
        })
        .collect();
    order.sort_unstable();
    let mut prefix = None;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && order[end].0 == order[start].0 {
            end += 1;
        }
        let run = &mut order[start..end];
        if run.len() > 1 {
            run.sort_unstable_by(|a, b| {
                hash(a.1 as usize)
                    .cmp(hash(b.1 as usize))
                    .then(a.1.cmp(&b.1))
            });
            for w in run.windows(2) {
                let (a, b) = (w[0].1 as usize, w[1].1 as usize);
                if hash(a) == hash(b) {
                    return Some(Repeat::Hash(a, b));
                }
                if prefixes && prefix.is_none() && hash(a)[..16] == hash(b)[..16] {
                    prefix = Some(Repeat::Prefix(a, b));
                }
            }
        }
        start = end;
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain way: every index in (hash, index) order, neighbours
    /// compared whole.
    fn plain(hashes: &[[u8; 32]], prefixes: bool) -> Option<Repeat> {
        let mut order: Vec<usize> = (0..hashes.len()).collect();
        order.sort_by_key(|&i| (hashes[i], i));
        let pairs = || order.windows(2).map(|w| (w[0], w[1]));
        if let Some((a, b)) = pairs().find(|&(a, b)| hashes[a] == hashes[b]) {
            return Some(Repeat::Hash(a, b));
        }
        pairs()
            .find(|&(a, b)| prefixes && hashes[a][..16] == hashes[b][..16])
            .map(|(a, b)| Repeat::Prefix(a, b))
    }

    #[test]
    fn finds_what_a_plain_sort_finds() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..400 {
            let n = (next() % 60) as usize;
            // Few distinct words, so heads, prefixes and hashes all tie
            // often: each of the 4 words is one of 3 values.
            let mut hashes: Vec<[u8; 32]> = (0..n)
                .map(|_| {
                    let mut h = [0u8; 32];
                    for w in 0..4 {
                        // Opposite in the word's first and last byte, so
                        // read the other way round the heads sort in
                        // reverse, and the pair reported changes.
                        let v = next() % 3;
                        h[w * 8..w * 8 + 8].copy_from_slice(&(v << 56 | (2 - v)).to_be_bytes());
                    }
                    h
                })
                .collect();
            if round % 4 == 0 {
                // Distinct hashes: a run of equal heads with no repeat.
                hashes.sort_unstable();
                hashes.dedup();
            }
            for prefixes in [false, true] {
                let got = find(hashes.len(), |i| &hashes[i], prefixes);
                assert_eq!(got, plain(&hashes, prefixes), "{hashes:?} {prefixes}");
            }
        }
    }

    #[test]
    fn none_among_distinct_random_hashes() {
        let hashes: Vec<[u8; 32]> = (0..10_000u32)
            .map(|i| {
                let mut h = [0u8; 32];
                h[..4].copy_from_slice(&i.wrapping_mul(2_654_435_761).to_be_bytes());
                h[28..].copy_from_slice(&i.to_le_bytes());
                h
            })
            .collect();
        assert_eq!(find(hashes.len(), |i| &hashes[i], true), None);
        let mut twice = hashes.clone();
        twice.push(hashes[1234]);
        assert_eq!(
            find(twice.len(), |i| &twice[i], true),
            Some(Repeat::Hash(1234, 10_000))
        );
    }
}
