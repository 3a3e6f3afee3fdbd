//! The hash lists of evicted ranges, checked whole once before a lookup
//! trusts them.
//!
//! A lookup in an evicted range confirms a segment candidate against its
//! range's hash list with a few small reads (`hashes::hash_at`) that check
//! no checksum. The body is gone from the data dir, so nothing else checks
//! the hash: a damaged byte there would turn a stored transaction into a
//! silent "not found". So the first lookup that reads a list verifies the
//! whole file against its SHA-256 (a sequential read of 32 bytes per
//! transaction), and the verdict is kept per file, keyed by its inode,
//! size and modification time, so a file written again is checked again.
//!
//! A damaged list answers [`StoreError::Segment`]: the writer's reader
//! (`cold::Tiered`) then resolves the hash in the published store's own
//! segments, as it does for a lost list. The damage is logged once per
//! file and listed by [`Ledgerstore::damaged_hash_lists`].

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ledgerstore_segment::{SegmentError, hashes};

use crate::Ledgerstore;
use crate::error::StoreResult;

/// One file's identity: a list written again is another file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i64,
}

impl FileId {
    fn of(path: &Path) -> Option<Self> {
        let m = std::fs::metadata(path).ok()?;
        Some(Self {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime().saturating_mul(1_000_000_000) + m.mtime_nsec(),
        })
    }
}

/// The verdict on one file.
#[derive(Debug, Clone)]
struct Verdict {
    id: FileId,
    range: (u32, u32),
    /// What is wrong with it (None: it matched its checksum).
    damage: Option<String>,
}

/// The verdicts, per file path.
#[derive(Debug, Default)]
pub(crate) struct ListChecks {
    verdicts: Mutex<HashMap<PathBuf, Verdict>>,
}

/// A hash list of an evicted range found damaged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedList {
    /// The range's first ledger.
    pub first: u32,
    /// Its last ledger.
    pub last: u32,
    /// What is wrong.
    pub detail: String,
}

impl ListChecks {
    /// Ok when the list at `path` (of `first..=last`) matched its checksum
    /// (verified now if this file was not yet); the damage otherwise. A
    /// file that cannot be read at all is left to the read that follows
    /// (its error is not a verdict on the bytes).
    pub(crate) fn check(&self, path: &Path, first: u32, last: u32) -> StoreResult<()> {
        let Some(id) = FileId::of(path) else {
            return Ok(());
        };
        let held = self.lock().get(path).filter(|v| v.id == id).cloned();
        let verdict = match held {
            Some(v) => v,
            None => {
                let damage = match hashes::verify(path, first, last) {
                    Ok(_) => None,
                    Err(SegmentError::Corrupt { detail, .. }) => Some(detail),
                    Err(e) => return Err(e.into()),
                };
                let v = Verdict {
                    id,
                    range: (first, last),
                    damage,
                };
                if let Some(d) = &v.damage {
                    tracing::error!(
                        path = %path.display(),
                        first,
                        last,
                        damage = %d,
                        "a hash list of an evicted range is damaged: its transactions are looked \
                         up in the published store's segments instead; restore the file from a \
                         backup (ledgerstore repair cannot rebuild it: the ledgers left the data dir)"
                    );
                }
                self.lock().insert(path.to_path_buf(), v.clone());
                v
            }
        };
        match verdict.damage {
            None => Ok(()),
            Some(detail) => Err(SegmentError::Corrupt {
                path: path.display().to_string(),
                detail,
            }
            .into()),
        }
    }

    /// The lists found damaged, by range.
    pub(crate) fn damaged(&self) -> Vec<DamagedList> {
        let mut out: Vec<DamagedList> = self
            .lock()
            .values()
            .filter_map(|v| {
                v.damage.as_ref().map(|d| DamagedList {
                    first: v.range.0,
                    last: v.range.1,
                    detail: d.clone(),
                })
            })
            .collect();
        out.sort_by_key(|d| (d.first, d.last));
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Verdict>> {
        self.verdicts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Ledgerstore {
    /// The hash lists of evicted ranges that lookups found damaged since
    /// open (each also logged once): their transactions are answered from
    /// the published store.
    pub fn damaged_hash_lists(&self) -> Vec<DamagedList> {
        self.indexed
            .as_ref()
            .map_or_else(Vec::new, |t| t.list_checks.damaged())
    }
}
