//! `segments/SEGMENTS`: which ranges the cold tier serves, and the merge
//! policy the data dir was created with.
//!
//! The manifest is the truth: a segment file whose range it does not list
//! is garbage (a build or merge a crash interrupted before it was
//! recorded, or the parts a merge replaced), and a listed range whose file
//! is missing or damaged is repaired, never skipped. It is rewritten whole,
//! atomically (temp file, fsync, rename, fsync of the directory), after the
//! file of a new range is in place and before anything it replaces is
//! deleted.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{StoreError, StoreResult};
pub use crate::policy::MergePolicy;

/// The manifest's file name in `segments/`.
pub(crate) const FILE: &str = "SEGMENTS";

/// The manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) format: u32,
    pub(crate) policy: MergePolicy,
    /// Served ranges, oldest first, disjoint.
    pub(crate) ranges: Vec<(u32, u32)>,
}

impl Manifest {
    pub(crate) fn new(policy: MergePolicy, ranges: Vec<(u32, u32)>) -> Self {
        Self {
            format: 1,
            policy,
            ranges,
        }
    }

    /// Reads `dir/SEGMENTS`; `None` if it does not exist (a dir created by
    /// an earlier release, or a new one).
    pub(crate) fn read(dir: &Path) -> StoreResult<Option<Self>> {
        let path = dir.join(FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(format!("reading {}", path.display()))(e)),
        };
        let m: Self = serde_json::from_str(&text)
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
        m.validate()
            .map_err(|e| StoreError::Corrupt(format!("{}: {e}", path.display())))?;
        Ok(Some(m))
    }

    fn validate(&self) -> Result<(), String> {
        if self.format != 1 {
            return Err(format!("format {}, this build reads 1", self.format));
        }
        let p = &self.policy;
        if p.range_ledgers == 0 || (p.levels > 0 && p.fanout < 2) {
            return Err(format!(
                "policy {p:?}: range_ledgers must be >= 1 and fanout >= 2"
            ));
        }
        if let Some((a, b)) = self.ranges.iter().find(|(a, b)| a > b) {
            return Err(format!("empty range {a}..={b}"));
        }
        if let Some(w) = self.ranges.windows(2).find(|w| w[0].1 >= w[1].0) {
            return Err(format!(
                "ranges {}..={} and {}..={} overlap or are out of order",
                w[0].0, w[0].1, w[1].0, w[1].1
            ));
        }
        Ok(())
    }

    /// Writes the manifest atomically.
    pub(crate) fn write(&self, dir: &Path) -> StoreResult<()> {
        let json = serde_json::to_vec_pretty(self)
            .map_err(|e| StoreError::Corrupt(format!("encoding {FILE}: {e}")))?;
        crate::datadir::write_atomic(dir, FILE, &json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: MergePolicy = MergePolicy {
        range_ledgers: 100,
        fanout: 10,
        levels: 2,
    };

    #[test]
    fn tilings_keep_one_range_per_level_and_close_top_windows() {
        assert_eq!(P.tiling(0, 99), vec![(0, 99)]);
        assert_eq!(P.tiling(0, 499), vec![(0, 499)]);
        assert_eq!(P.tiling(0, 3_499), vec![(0, 2_999), (3_000, 3_499)]);
        assert_eq!(P.tiling(0, 9_999), vec![(0, 9_999)]);
        assert_eq!(
            P.tiling(0, 23_499),
            vec![
                (0, 9_999),
                (10_000, 19_999),
                (20_000, 22_999),
                (23_000, 23_499)
            ]
        );
        // A store that starts mid-window: its first range is clipped.
        assert_eq!(P.tiling(7, 1_199), vec![(7, 999), (1_000, 1_199)]);
        assert_eq!(P.tiling(7, 10_099), vec![(7, 9_999), (10_000, 10_099)]);
        // No merging: one range per base range.
        let flat = MergePolicy { levels: 0, ..P };
        assert_eq!(flat.tiling(0, 299), vec![(0, 99), (100, 199), (200, 299)]);
    }

    #[test]
    fn successive_tilings_nest() {
        let mut prev: Vec<(u32, u32)> = Vec::new();
        for end in (99..40_000).step_by(100) {
            let now = P.tiling(3, end);
            assert!(
                now.len() <= 2 + (end as usize + 1) / 10_000,
                "{end}: {now:?}"
            );
            for (a, b) in &prev {
                // Each old range lies inside exactly one new range.
                let inside = now.iter().filter(|(c, d)| c <= a && b <= d).count();
                assert_eq!(inside, 1, "{end}: ({a}, {b}) in {now:?}");
            }
            prev = now;
        }
    }

    #[test]
    fn a_dir_without_a_manifest_keeps_the_range_its_segments_have() {
        use super::super::legacy_policy;
        let ranges = [(3, 9), (10, 19), (20, 29)];
        assert_eq!(legacy_policy(P, &ranges).range_ledgers, 10);
        let five = MergePolicy {
            range_ledgers: 5,
            ..P
        };
        assert_eq!(
            legacy_policy(five, &ranges),
            five,
            "the configured 5 fits too"
        );
        let odd = legacy_policy(P, &[(0, 6), (7, 19)]);
        assert_eq!((odd.range_ledgers, odd.levels), (100, 0), "no merging");
    }

    #[test]
    fn base_ranges_tile_a_span() {
        assert_eq!(
            P.base_ranges(50, 320),
            vec![(50, 99), (100, 199), (200, 299), (300, 320)]
        );
    }

    #[test]
    fn a_damaged_manifest_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        Manifest::new(P, vec![(0, 99), (100, 199)])
            .write(dir.path())
            .expect("write");
        assert_eq!(
            Manifest::read(dir.path()).expect("read").map(|m| m.ranges),
            Some(vec![(0, 99), (100, 199)])
        );
        std::fs::write(
            dir.path().join(FILE),
            br#"{"format":1,"policy":{"range_ledgers":100,"fanout":10,"levels":2},"ranges":[[0,99],[50,199]]}"#,
        )
        .expect("write");
        let err = Manifest::read(dir.path()).expect_err("overlap");
        assert!(err.to_string().contains("SEGMENTS"), "{err}");
        assert!(err.to_string().contains("overlap"), "{err}");
    }
}
