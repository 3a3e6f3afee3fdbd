//! Files that travel: the listing a writer publishes beside its packs
//! ([`EventStore::files`], [`local_files`] for a stopped data dir), and a
//! replica's adoption of the published files ([`EventStore::adopt`]):
//! fetched whole into the events dir under a temporary name, checked,
//! renamed in, replacing the files they cover. [`EventStore::expect`]
//! tells the builder which ranges are on their way, so it does not index
//! them from the packs meanwhile.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ledgerstore_event_index::EventIndex;

use crate::EventStore;
use crate::config::{MARKER, parse_marker};
use crate::error::{EventsError, EventsResult};
use crate::files::{IndexFile, TMP, file_name, parse_name, publish, remove, sync_dir};

/// One index file in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// First ledger.
    pub first: u32,
    /// Last ledger.
    pub last: u32,
    /// Events it indexes.
    pub events: u64,
    /// Its bytes.
    pub bytes: u64,
    /// Where it is.
    pub path: PathBuf,
}

/// An events dir's geometry and files in use, read without changing
/// anything (for `ledgerstore publish` on a stopped data dir), or None
/// when the dir has no marker. Files a larger one covers (a crash
/// between a merge's rename and its deletes) and files that do not open
/// are left out.
pub fn local_files(dir: &Path) -> EventsResult<Option<(u32, u32, Vec<FileInfo>)>> {
    let text = match std::fs::read_to_string(dir.join(MARKER)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(EventsError::io(&dir.join(MARKER), "reading")(e)),
    };
    let (file_ledgers, fan_out) = parse_marker(dir, &text)?;
    let mut ranges = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(EventsError::io(dir, "listing"))? {
        let entry = entry.map_err(EventsError::io(dir, "listing"))?;
        if let Some(r) = parse_name(&entry.file_name().to_string_lossy()) {
            ranges.push(r);
        }
    }
    ranges.sort_unstable_by_key(|&(a, b)| (a, std::cmp::Reverse(b)));
    let mut out: Vec<FileInfo> = Vec::new();
    for (first, last) in ranges {
        if out.last().is_some_and(|f| first <= f.last) {
            continue;
        }
        let path = dir.join(file_name(first, last));
        let Ok(idx) = EventIndex::open(&path) else {
            continue;
        };
        if (idx.first_ledger(), idx.last_ledger()) != (first, last) {
            continue;
        }
        let bytes = std::fs::metadata(&path)
            .map_err(EventsError::io(&path, "reading the size of"))?
            .len();
        out.push(FileInfo {
            first,
            last,
            events: u64::from(idx.events()),
            bytes,
            path,
        });
    }
    Ok(Some((file_ledgers, fan_out, out)))
}

impl EventStore {
    /// The index files in use, oldest first (disjoint).
    pub fn files(&self) -> Vec<FileInfo> {
        self.shared
            .snapshot()
            .files
            .values()
            .map(|f| FileInfo {
                first: f.first,
                last: f.last,
                events: u64::from(f.idx.events()),
                bytes: f.bytes,
                path: f.path.clone(),
            })
            .collect()
    }

    /// The window geometry in force: `(file_ledgers, fan_out)`.
    pub fn geometry(&self) -> (u32, u32) {
        (self.shared.geo.file_ledgers, self.shared.geo.fan_out)
    }

    /// Where to fetch the file of `first..=last` before
    /// [`adopt`](Self::adopt): a temporary name in the events dir (so the
    /// adoption is a rename, and a crash leaves a file open deletes).
    pub fn fetch_path(&self, first: u32, last: u32) -> PathBuf {
        self.shared
            .dir
            .join(format!("{TMP}fetch-{}", file_name(first, last)))
    }

    /// Whether one file in use covers `first..=last`.
    pub fn covers(&self, first: u32, last: u32) -> bool {
        let snap = self.shared.snapshot();
        snap.files
            .range(..=first)
            .next_back()
            .is_some_and(|(_, f)| f.last >= last)
    }

    /// Where the builder asks, at each round, for the ranges whose files
    /// are on their way ([`adopt`](Self::adopt)): it does not index their
    /// ledgers itself. Replaces the previous source; None lets it index
    /// everything.
    pub fn expect(&self, source: Option<crate::ExpectedRanges>) {
        *self
            .shared
            .expected
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = source;
        self.shared.wake();
    }

    /// Checks the SHA-256 of the file of `first..=last`, if one is in use:
    /// a damaged one is dropped (the builder rebuilds it, woken). True if
    /// it was damaged. A publish round that finds a damaged file calls it.
    pub fn recheck(&self, first: u32, last: u32) -> bool {
        let snap = self.shared.snapshot();
        let Some(f) = snap.files.get(&first).filter(|f| f.last == last) else {
            return false;
        };
        match f.idx.verify() {
            Ok(()) => false,
            Err(e) => {
                crate::build::drop_damaged(&self.shared, f, &e);
                true
            }
        }
    }

    /// Takes the index file of `first..=last` fetched to `fetched` (see
    /// [`fetch_path`](Self::fetch_path)): checks its sections, its
    /// SHA-256 trailer, its range and that it ends a window of this
    /// index's geometry, renames it in, and swaps it in for the files it
    /// covers, which are deleted. False when a file in use already
    /// covers the range (the fetched file is deleted). Refused, deleting
    /// the fetched file, when it overlaps a file in use without covering
    /// it, or is damaged.
    pub fn adopt(&self, first: u32, last: u32, fetched: &Path) -> EventsResult<bool> {
        let shared = &self.shared;
        // Checked, and durable before its name is (and before the files
        // it replaces go), outside the work lock.
        let checked =
            check_fetched(fetched, first, last, shared.geo.ends_window(last)).and_then(|()| {
                std::fs::File::open(fetched)
                    .and_then(|f| f.sync_all())
                    .map_err(EventsError::io(fetched, "syncing"))
            });
        if let Err(e) = checked {
            remove(fetched)?;
            return Err(e);
        }
        // The builder's work lock: no file is built or merged meanwhile.
        let _work = shared.work.lock().unwrap_or_else(|p| p.into_inner());
        let snap = shared.snapshot();
        if self.covers(first, last) {
            remove(fetched)?;
            return Ok(false);
        }
        let inside: Vec<Arc<IndexFile>> = snap
            .files
            .values()
            .filter(|f| f.last >= first && f.first <= last)
            .cloned()
            .collect();
        if let Some(f) = inside.iter().find(|f| f.first < first || f.last > last) {
            remove(fetched)?;
            return Err(EventsError::dir(
                &shared.dir,
                format!(
                    "the fetched {} overlaps {} without covering it",
                    file_name(first, last),
                    f.name()
                ),
            ));
        }
        let name = file_name(first, last);
        publish(&shared.dir, fetched, &name)?;
        let file = IndexFile::open(shared.dir.join(&name), first, last)?;
        shared.update(|s| {
            for f in &inside {
                s.files.remove(&f.first);
            }
            s.files.insert(first, file);
        });
        for f in &inside {
            remove(&f.path)?;
        }
        if !inside.is_empty() {
            sync_dir(&shared.dir)?;
        }
        tracing::debug!(file = %name, replaced = inside.len(), "events: adopted a published file");
        shared.status().adopted += 1;
        shared.wake();
        Ok(true)
    }
}

/// A fetched file must open, hold `first..=last`, end a window and pass
/// its SHA-256 trailer.
fn check_fetched(path: &Path, first: u32, last: u32, ends_window: bool) -> EventsResult<()> {
    let idx = EventIndex::open(path).map_err(|e| EventsError::index(path, e))?;
    let held = (idx.first_ledger(), idx.last_ledger());
    if held != (first, last) || !ends_window {
        return Err(EventsError::index(
            path,
            ledgerstore_event_index::EventIndexError::Corrupt(format!(
                "holds ledgers {}..={}; expected {first}..={last}, ending a window of this index",
                held.0, held.1
            )),
        ));
    }
    idx.verify().map_err(|e| EventsError::index(path, e))
}
