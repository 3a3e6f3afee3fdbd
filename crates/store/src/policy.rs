//! How an `indexed` dir's hash index is cut into ranges and merged: the
//! segment policy, recorded in the data dir's manifest when it is created
//! (`datadir`) and in `segments/SEGMENTS` (`indexed::segments`). Below both,
//! so neither imports the other for it.

use serde::{Deserialize, Serialize};

/// How ranges are built and merged. Recorded at creation and reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MergePolicy {
    /// Ledgers per base range (a window of the hot index), aligned.
    pub range_ledgers: u32,
    /// Windows of level `k` hold `range_ledgers × fanout^k` ledgers.
    pub fanout: u32,
    /// Levels above the base: the top window is
    /// `range_ledgers × fanout^levels` ledgers. 0 disables merging.
    pub levels: u32,
}

impl MergePolicy {
    /// Ledgers in a window of level `k`, in `u64` (saturating).
    fn window(&self, k: u32) -> u64 {
        u64::from(self.range_ledgers).saturating_mul(u64::from(self.fanout).saturating_pow(k))
    }

    /// Whether `first..=last` is a whole top-level window: it ends where
    /// the top window holding `first` ends, and starts where that window
    /// starts or at `store_first` (the first window of a store that began
    /// inside one, as [`MergePolicy::tiling`] cuts it). No merge reads the
    /// base ranges of such a range again.
    pub(crate) fn is_top_window(&self, first: u32, last: u32, store_first: u32) -> bool {
        let top = self.window(self.levels);
        let (f, l) = (u64::from(first), u64::from(last));
        f <= l
            && (f % top == 0 || first == store_first)
            && Some(l) == (f / top + 1).checked_mul(top).map(|end| end - 1)
    }

    /// The end of the base range that starts at `start`.
    pub(crate) fn base_end(&self, start: u32) -> Option<u32> {
        let r = u64::from(self.range_ledgers);
        u32::try_from((u64::from(start) / r + 1) * r - 1).ok()
    }

    /// The base ranges that tile `first..=last`.
    pub(crate) fn base_ranges(&self, first: u32, last: u32) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        let mut s = first;
        while s <= last {
            let e = self.base_end(s).map_or(last, |e| e.min(last));
            out.push((s, e));
            match e.checked_add(1) {
                Some(n) => s = n,
                None => break,
            }
        }
        out
    }

    /// The ranges that should serve `first..=end` once every base range
    /// in it is closed: each closed top-level window whole, then, inside
    /// the open top window, for each level from the top down, one range
    /// covering its closed windows. So a lookup probes at most
    /// `closed top windows + levels` segments. Ranges of successive
    /// tilings nest (each is a run of aligned windows that starts a window
    /// one level up), so a merge only ever replaces ranges it contains.
    pub(crate) fn tiling(&self, first: u32, end: u32) -> Vec<(u32, u32)> {
        let (end, mut s) = (u64::from(end), u64::from(first));
        let mut out = Vec::new();
        let top = self.window(self.levels);
        while s <= end {
            let w_end = (s / top + 1).saturating_mul(top) - 1;
            if w_end > end {
                break;
            }
            out.push((s, w_end));
            s = w_end + 1;
        }
        for k in (0..self.levels).rev() {
            let w = self.window(k);
            let closed = (end + 1) / w * w;
            if closed > s {
                out.push((s, closed - 1));
                s = closed;
            }
        }
        if s <= end {
            // `end` is not a base boundary (the store's last range): serve it
            // as it is.
            out.push((s, end));
        }
        out.into_iter()
            .filter_map(|(a, b)| Some((u32::try_from(a).ok()?, u32::try_from(b).ok()?)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::MergePolicy;

    #[test]
    fn a_top_window_is_whole_and_aligned_or_the_store_s_first() {
        let p = MergePolicy {
            range_ledgers: 10,
            fanout: 2,
            levels: 2,
        };
        // Windows of 40: 0..=39, 40..=79, …; a store beginning at 1.
        assert!(p.is_top_window(1, 39, 1));
        assert!(p.is_top_window(40, 79, 1));
        assert!(!p.is_top_window(1, 39, 0), "0..=39 is the window");
        assert!(!p.is_top_window(40, 59, 1), "a level-1 range");
        assert!(!p.is_top_window(60, 79, 1), "ends a window, starts mid-way");
        assert!(!p.is_top_window(40, 119, 1), "two windows");
        let base = MergePolicy { levels: 0, ..p };
        assert!(base.is_top_window(10, 19, 1) && base.is_top_window(1, 9, 1));
        assert!(
            !base.is_top_window(10, 15, 1),
            "the store's last, partial range"
        );
        let huge = MergePolicy {
            range_ledgers: u32::MAX,
            fanout: 1000,
            levels: 8,
        };
        assert!(
            !huge.is_top_window(0, u32::MAX, 0),
            "no window ends inside u32"
        );
    }
}
