//! Searches over sorted tables in the file that touch few pages.

/// The first index in `lo..hi` where `pred` is false (`hi` if none),
/// `pred` being true then false over `lo..hi`: a binary search.
pub(crate) fn partition(
    mut lo: usize,
    mut hi: usize,
    mut pred: impl FnMut(usize) -> bool,
) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// As [`partition`], but galloping from `lo` (probes at `lo`, `lo + 1`,
/// `lo + 3`, `lo + 7`, …, then a binary search between the last two):
/// an answer `d` entries after `lo` costs `O(log d)` probes, all near
/// `lo`, so a cold table costs the pages between `lo` and the answer
/// rather than a binary search's pages all over the table.
pub(crate) fn gallop(mut lo: usize, hi: usize, mut pred: impl FnMut(usize) -> bool) -> usize {
    let mut step = 1usize;
    let mut end = hi;
    while lo < end {
        let probe = lo + (step - 1).min(end - lo - 1);
        if pred(probe) {
            lo = probe + 1;
            step = step.saturating_mul(2);
        } else {
            end = probe;
            break;
        }
    }
    partition(lo, end, pred)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gallop_agrees_with_a_binary_search_and_probes_near_its_start() {
        for len in 0..70usize {
            for cut in 0..=len {
                for lo in 0..=cut {
                    let (mut far, mut probes) = (0usize, 0);
                    let got = gallop(lo, len, |i| {
                        probes += 1;
                        far = far.max(i);
                        i < cut
                    });
                    assert_eq!(got, cut, "len {len} cut {cut} from {lo}");
                    assert_eq!(partition(lo, len, |i| i < cut), cut);
                    // Never beyond twice the distance, in O(log d) probes.
                    assert!(far <= lo + 2 * (cut - lo) + 1, "probed {far}");
                    let d = (cut - lo + 1) as f64;
                    assert!(probes as f64 <= 2.0 * d.log2() + 3.0, "{probes} probes");
                }
            }
        }
    }
}
