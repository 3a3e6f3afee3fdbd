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
