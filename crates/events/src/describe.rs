//! What an events dir holds, read without changing anything and without
//! a store: for `ledgerstore stats` on a stopped data dir.

use std::path::Path;

use ledgerstore_event_index::EventIndex;
use serde::Serialize;

use crate::config::{MARKER, parse_marker};
use crate::error::{EventsError, EventsResult};
use crate::files::{TMP, parse_name};

/// An events dir's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DirSummary {
    /// The marker's geometry.
    pub file_ledgers: u32,
    /// See [`DirSummary::file_ledgers`].
    pub fan_out: u32,
    /// Index files in use (not covered by a larger one).
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Their events.
    pub events: u64,
    /// The ledger ranges they cover, contiguous runs merged: one range
    /// when the index has no hole.
    pub covered: Vec<(u32, u32)>,
    /// Temporary files, and files a merged one covers (a crash between a
    /// merge's rename and its deletes): the next open deletes them.
    pub leftovers: usize,
    /// Files that do not open, with why: the daemon deletes and rebuilds
    /// them at its next open.
    pub damaged: Vec<(String, String)>,
    /// What stops the daemon from opening the index (getEvents is then
    /// off until it is fixed): a name that is not an events file, index
    /// files without the marker, a marker that does not parse.
    pub problems: Vec<String>,
}

/// What `dir` holds, or None when it does not exist (the index was never
/// built there). A file that does not open is listed as damaged.
pub fn describe(dir: &Path) -> EventsResult<Option<DirSummary>> {
    if !dir.exists() {
        return Ok(None);
    }
    let mut out = DirSummary::default();
    match std::fs::read_to_string(dir.join(MARKER)) {
        Ok(text) => match parse_marker(dir, &text) {
            Ok((f, k)) => (out.file_ledgers, out.fan_out) = (f, k),
            Err(e) => out.problems.push(e.to_string()),
        },
        // A new index the daemon had not finished creating: it writes the
        // marker at its next open (unless index files are there, below).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => out
            .problems
            .push(EventsError::io(&dir.join(MARKER), "reading")(e).to_string()),
    }
    let mut ranges = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(EventsError::io(dir, "listing"))? {
        let entry = entry.map_err(EventsError::io(dir, "listing"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(TMP) {
            out.leftovers += 1;
        } else if let Some(r) = parse_name(&name) {
            ranges.push(r);
        } else if !crate::config::reserved(&name) {
            out.problems.push(format!(
                "{name:?} is not an events file: the daemon refuses the index (getEvents is off) until it is moved out"
            ));
        }
    }
    if out.file_ledgers == 0 && !ranges.is_empty() && out.problems.is_empty() {
        out.problems.push(format!(
            "index files but no {MARKER} marker: the daemon refuses the index (getEvents is off)"
        ));
    }
    // Widest first at each start, so a covered file follows its cover.
    ranges.sort_unstable_by_key(|&(a, b)| (a, std::cmp::Reverse(b)));
    let mut end: Option<u32> = None;
    for (first, last) in ranges {
        if end.is_some_and(|e| last <= e) {
            out.leftovers += 1;
            continue;
        }
        let name = crate::files::file_name(first, last);
        let path = dir.join(&name);
        let idx = match EventIndex::open(&path) {
            Ok(idx) => idx,
            Err(e) => {
                out.damaged.push((name, e.to_string()));
                continue;
            }
        };
        out.files += 1;
        out.bytes += std::fs::metadata(&path)
            .map_err(EventsError::io(&path, "reading"))?
            .len();
        out.events += u64::from(idx.events());
        match out.covered.last_mut() {
            Some(c) if c.1.checked_add(1) == Some(first) => c.1 = last,
            _ => out.covered.push((first, last)),
        }
        end = Some(end.map_or(last, |e| e.max(last)));
    }
    Ok(Some(out))
}
