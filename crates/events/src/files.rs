//! The events dir's files: names, the window geometry and the clean-up at
//! open (publishing a file durably is `durable.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ledgerstore_event_index::EventIndex;

use crate::config::MARKER;
use crate::error::{EventsError, EventsResult};

pub(crate) use crate::durable::{TMP, publish, sync_dir};

/// The name of the index file of ledgers `first..=last`.
pub(crate) fn file_name(first: u32, last: u32) -> String {
    format!("ev-{first:010}-{last:010}.idx")
}

/// The range a file name gives, or None for a name that is not one.
pub(crate) fn parse_name(name: &str) -> Option<(u32, u32)> {
    let rest = name.strip_prefix("ev-")?.strip_suffix(".idx")?;
    let (a, b) = rest.split_once('-')?;
    let num = |s: &str| -> Option<u32> {
        if s.len() != 10 || !s.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (first, last) = (num(a)?, num(b)?);
    (first <= last).then_some((first, last))
}

/// An open, published index file.
#[derive(Debug)]
pub(crate) struct IndexFile {
    pub(crate) first: u32,
    pub(crate) last: u32,
    pub(crate) path: PathBuf,
    pub(crate) bytes: u64,
    pub(crate) idx: EventIndex,
}

impl IndexFile {
    pub(crate) fn open(path: PathBuf, first: u32, last: u32) -> EventsResult<Arc<Self>> {
        let idx = EventIndex::open(&path).map_err(|e| EventsError::index(&path, e))?;
        if (idx.first_ledger(), idx.last_ledger()) != (first, last) {
            return Err(EventsError::index(
                &path,
                ledgerstore_event_index::EventIndexError::Corrupt(format!(
                    "holds ledgers {}..={}, its name says {first}..={last}",
                    idx.first_ledger(),
                    idx.last_ledger()
                )),
            ));
        }
        let bytes = std::fs::metadata(&path)
            .map_err(EventsError::io(&path, "reading the size of"))?
            .len();
        Ok(Arc::new(IndexFile {
            first,
            last,
            path,
            bytes,
            idx,
        }))
    }

    pub(crate) fn name(&self) -> String {
        file_name(self.first, self.last)
    }
}

/// The window geometry: level-k windows are `file_ledgers × fan_out^k`
/// ledgers aligned to multiples of that size, clipped below at the
/// origin (the first ledger indexed).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geometry {
    pub(crate) file_ledgers: u32,
    pub(crate) fan_out: u32,
}

impl Geometry {
    /// Ledgers of a level-`k` window, or None past `u32` (no such level).
    pub(crate) fn size(&self, k: u32) -> Option<u64> {
        let s =
            u64::from(self.file_ledgers).checked_mul(u64::from(self.fan_out).checked_pow(k)?)?;
        (s <= 1 << 32).then_some(s)
    }

    /// The level-`k` window holding `seq`, clipped below at `origin`.
    pub(crate) fn window(&self, k: u32, seq: u32, origin: u32) -> Option<(u32, u32)> {
        let size = self.size(k)?;
        let start = u64::from(seq) / size * size;
        let end = (start + size - 1).min(u64::from(u32::MAX));
        Some((u32::try_from(start).ok()?.max(origin), end as u32))
    }

    /// The level of a file: the least `k` whose window holding its first
    /// ledger holds its last one.
    pub(crate) fn level(&self, first: u32, last: u32) -> u32 {
        (0..)
            .find(|&k| self.window(k, first, first).is_none_or(|(_, e)| e >= last))
            .unwrap_or(0)
    }

    /// Whether a file's last ledger ends a level-0 window (every file
    /// does; the tail is never written).
    pub(crate) fn ends_window(&self, last: u32) -> bool {
        (u64::from(last) + 1) % u64::from(self.file_ledgers) == 0
    }
}

/// Deletes a file, ignoring one already gone.
pub(crate) fn remove(path: &Path) -> EventsResult<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(EventsError::io(path, "deleting")(e)),
    }
}

/// What the dir held at open, after clean-up.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// The index files' ranges, by first ledger, none covering another.
    pub(crate) ranges: Vec<(u32, u32)>,
    /// Index files deleted because a larger file covers them (a crash
    /// between a merge's rename and its deletes), and temporary files.
    pub(crate) removed: Vec<String>,
}

/// Lists `dir`: removes temporary files; refuses names that are neither
/// the marker nor index files; deletes index files a larger one covers;
/// refuses files that overlap without one covering the other, or whose
/// end is not a window's.
pub(crate) fn scan(dir: &Path, geo: Option<Geometry>) -> EventsResult<Listing> {
    let mut out = Listing::default();
    let mut ranges = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(EventsError::io(dir, "listing"))?;
    for entry in entries {
        let entry = entry.map_err(EventsError::io(dir, "listing"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if crate::config::reserved(&name) {
            continue;
        }
        if name.starts_with(TMP) {
            remove(&entry.path())?;
            out.removed.push(name);
            continue;
        }
        let Some(range) = parse_name(&name) else {
            return Err(EventsError::dir(
                dir,
                format!(
                    "{name:?} is not an events file (ev-<first:010>-<last:010>.idx, {MARKER}): \
                     move it out of the events dir"
                ),
            ));
        };
        if let Some(g) = geo.filter(|g| !g.ends_window(range.1)) {
            return Err(EventsError::dir(
                dir,
                format!(
                    "{name} does not end a window of {} ledgers (the dir's file_ledgers)",
                    g.file_ledgers
                ),
            ));
        }
        ranges.push(range);
    }
    // Widest first among those that start together, so a covering file
    // comes before the files it covers.
    ranges.sort_by_key(|&(f, l)| (f, std::cmp::Reverse(l)));
    let mut kept: Vec<(u32, u32)> = Vec::new();
    for (f, l) in ranges {
        match kept.last() {
            Some(&(_, kl)) if l <= kl => {
                remove(&dir.join(file_name(f, l)))?;
                out.removed.push(file_name(f, l));
            }
            Some(&(kf, kl)) if f <= kl => {
                return Err(EventsError::dir(
                    dir,
                    format!("{} and {} overlap", file_name(kf, kl), file_name(f, l)),
                ));
            }
            _ => kept.push((f, l)),
        }
    }
    if !out.removed.is_empty() {
        sync_dir(dir)?;
    }
    out.ranges = kept;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        assert_eq!(file_name(7, 1023), "ev-0000000007-0000001023.idx");
        assert_eq!(parse_name(&file_name(7, 1023)), Some((7, 1023)));
        for bad in [
            "ev-7-1023.idx",
            "ev-0000000009-0000000007.idx",
            "x.idx",
            "ev-0000000007-0000001023",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn windows_are_aligned_and_clipped_at_the_origin() {
        let g = Geometry {
            file_ledgers: 4,
            fan_out: 2,
        };
        assert_eq!(
            g.window(0, 63_092_982, 63_092_982),
            Some((63_092_982, 63_092_983))
        );
        assert_eq!(
            g.window(0, 63_092_985, 63_092_982),
            Some((63_092_984, 63_092_987))
        );
        assert_eq!(
            g.window(1, 63_092_985, 63_092_982),
            Some((63_092_984, 63_092_991))
        );
        assert_eq!(
            g.window(2, 63_092_985, 63_092_982),
            Some((63_092_982, 63_092_991))
        );
        assert_eq!(g.level(63_092_984, 63_092_987), 0);
        assert_eq!(g.level(63_092_984, 63_092_991), 1);
        assert_eq!(g.level(63_092_982, 63_092_991), 2);
        assert!(g.ends_window(63_092_991) && !g.ends_window(63_092_990));
        assert_eq!(g.window(0, u32::MAX, 0), Some((u32::MAX - 3, u32::MAX)));
    }
}
