//! `segments/VERIFIED`: when the scrub last read each segment file whole,
//! so that a restart does not read every segment again.
//!
//! ```json
//! {"format":1,"files":{"seg-0000000001-0000099999.idx":{"bytes":N,"mtime_ns":M,"at":T}}}
//! ```
//!
//! An entry counts only while the file's size and modification time are
//! the recorded ones, so a file that was rewritten or replaced is read
//! again. Every segment is read again at least every [`SCRUB_EVERY_S`], to
//! find damage that changes neither (bit rot). The file is a cache: a
//! missing or unreadable one means "scrub everything", never an error.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use super::Slot;

/// The file's name in `segments/`.
pub(crate) const FILE: &str = "VERIFIED";

/// Longest a segment goes without being read whole again: a week.
pub(crate) const SCRUB_EVERY_S: u64 = 7 * 24 * 3600;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    format: u32,
    files: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    bytes: u64,
    mtime_ns: u64,
    /// Unix seconds of the check.
    at: u64,
}

/// Unix seconds now.
pub(crate) fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The file's size and modification time.
fn stamp(path: &Path) -> Option<(u64, u64)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some((m.len(), u64::try_from(mtime.as_nanos()).ok()?))
}

/// The recorded checks (none if the file is missing or unreadable).
pub(crate) fn load(dir: &Path) -> BTreeMap<String, Entry> {
    let path = dir.join(FILE);
    match std::fs::read(&path) {
        Ok(b) => match serde_json::from_slice::<Record>(&b) {
            Ok(r) if r.format == 1 => r.files,
            Ok(r) => {
                tracing::warn!(
                    format = r.format,
                    "segments/VERIFIED has an unknown format; every segment is scrubbed again"
                );
                BTreeMap::new()
            }
            Err(e) => {
                tracing::warn!(error = %e, "segments/VERIFIED does not parse; every segment is scrubbed again");
                BTreeMap::new()
            }
        },
        Err(_) => BTreeMap::new(),
    }
}

/// When the file `name` in `dir` was last read whole, if the record still
/// describes it (0: never, or it changed since).
pub(crate) fn verified_at(record: &BTreeMap<String, Entry>, dir: &Path, name: &str) -> u64 {
    match (record.get(name), stamp(&dir.join(name))) {
        (Some(e), Some((bytes, mtime_ns))) if (e.bytes, e.mtime_ns) == (bytes, mtime_ns) => e.at,
        _ => 0,
    }
}

/// Records the checks of `slots` (the serving ones checked since their
/// file was written). Best effort: a failure costs a scrub at the next
/// start, so it is logged, not returned.
pub(crate) fn save(dir: &Path, slots: &[Arc<Slot>]) {
    let mut files = BTreeMap::new();
    for s in slots.iter().filter(|s| s.seg.is_some()) {
        let at = s.verified_at.load(Ordering::Relaxed);
        let name = ledgerstore_segment::file_name(s.first, s.last);
        if let (true, Some((bytes, mtime_ns))) = (at > 0, stamp(&dir.join(&name))) {
            files.insert(
                name,
                Entry {
                    bytes,
                    mtime_ns,
                    at,
                },
            );
        }
    }
    let record = Record { format: 1, files };
    let written = serde_json::to_vec(&record)
        .map_err(|e| e.to_string())
        .and_then(|b| crate::datadir::write_atomic(dir, FILE, &b).map_err(|e| e.to_string()));
    if let Err(e) = written {
        tracing::warn!(error = %e, "could not record the scrub's checks; they are repeated at the next start");
    }
}
