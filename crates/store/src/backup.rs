//! Online, consistent backups, and restoring them.
//!
//! A backup is a data dir of its own (manifest, `MARK`, one directory per
//! table) plus `BACKUP.json`, written last, which says the copy is
//! complete. It is cut at one high-water mark: while the ingest lock is
//! held (so no batch is in flight), every table fixes its snapshot, which
//! is cheap (a RocksDB checkpoint of hard links; an MDBX read transaction).
//! The lock is then released and the MDBX copies are written while ingest
//! goes on.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ledgerstore_db_api::{Layout, TableId};
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use crate::Ledgerstore;
use crate::datadir::{DataDir, Forms, table_dir};
use crate::error::{StoreError, StoreResult};
use crate::indexed::segments::Manifest;
use crate::indexed::segments::{SegmentSet, Slot};

/// Written last into a backup: its presence means the backup is complete.
pub const BACKUP_INFO: &str = "BACKUP.json";

/// What a backup holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BackupInfo {
    /// The data dir it was taken from.
    pub source: PathBuf,
    /// Its layout.
    pub layout: Layout,
    /// The mark it was cut at (None: an empty store).
    pub mark: Option<u32>,
    /// Transactions up to the mark.
    pub txs: u64,
    /// Unix seconds when the snapshot was fixed.
    pub taken_at: u64,
    /// Seconds ingest was paused while the snapshots were fixed.
    pub pause_s: f64,
    /// Seconds the whole backup took.
    pub total_s: f64,
    /// Bytes of the backup's table files.
    pub bytes: u64,
}

fn dir_err(dir: &Path, reason: impl Into<String>) -> StoreError {
    StoreError::DataDir {
        dir: dir.to_path_buf(),
        reason: reason.into(),
    }
}

/// Fails unless `dest` is absent or an empty directory.
fn ensure_empty(dest: &Path) -> StoreResult<()> {
    if dest.exists() {
        let mut entries =
            fs::read_dir(dest).map_err(StoreError::io(format!("listing {}", dest.display())))?;
        if entries.next().is_some() {
            return Err(dir_err(dest, "already exists and is not empty"));
        }
    }
    Ok(())
}

impl Ledgerstore {
    /// Writes a consistent copy of the store, cut at the current mark, into
    /// `dest` (absent or empty). Ingest pauses only while the snapshots are
    /// fixed; reads never pause. On failure `dest` is removed.
    pub fn backup(&self, dest: &Path) -> StoreResult<BackupInfo> {
        ensure_empty(dest)?;
        let result = self.backup_into(dest);
        if result.is_err() {
            let _ = fs::remove_dir_all(dest);
        }
        result
    }

    fn backup_into(&self, dest: &Path) -> StoreResult<BackupInfo> {
        let started = Instant::now();
        let policy = self.indexed.as_ref().map(|t| t.segments.policy());
        let out = DataDir::open(
            dest,
            Some(self.layout),
            true,
            policy,
            self.dir.manifest().forms(),
        )?;
        for t in TableId::ALL {
            if let Some(parent) = out.table_path(t).parent() {
                fs::create_dir_all(parent)
                    .map_err(StoreError::io(format!("creating {}", parent.display())))?;
            }
        }
        let (mark, pending, pause) = {
            // Held so that no batch is in flight while the snapshots are
            // fixed. Nothing is rolled back here: residue above the mark
            // is copied as it is, and the restored dir's first writer rolls
            // it back (a backup never changes its source).
            let _state = self
                .ingest_lock
                .lock()
                .map_err(|_| StoreError::Corrupt("ingest lock poisoned by a panic".into()))?;
            let paused = Instant::now();
            let mark = self.mark();
            // Segment drops that may be unfinished in the snapshots: see
            // `unfinished_drops`.
            let before = match &self.indexed {
                Some(t) => Some((ranges(&t.segments), t.segments.dropping_markers()?)),
                None => None,
            };
            // An eviction records its boundary before it deletes, and
            // deletes under this lock: the record read now covers every
            // ledger the snapshots lack.
            let evicted = self.evicted();
            let mut pending = Vec::new();
            for t in TableId::ALL {
                pending.push(self.table(t).begin_backup(&out.table_path(t))?);
            }
            // Segments are immutable: the list after the cut holds every
            // segment whose hot range the snapshot may lack.
            let segments = self.indexed.as_ref().map(|t| t.segments.slots());
            (mark, (pending, segments, before, evicted), paused.elapsed())
        };
        let (pending, segments, before, evicted) = pending;
        let taken_at = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut bytes = 0;
        for p in pending {
            bytes += p.finish()?;
        }
        for t in TableId::ALL {
            let dir = out.table_path(t);
            sync_dir(&dir)?;
            if let Some(parent) = dir.parent() {
                sync_dir(parent)?;
            }
        }
        if let (Some(list), Some(tier), Some((list0, markers0))) = (segments, &self.indexed, before)
        {
            bytes += copy_segments(
                &tier.segments,
                &list,
                &list0,
                &markers0,
                &dest.join("segments"),
            )?;
            // Without it, the restored dir would take the ledgers it lacks
            // for never stored, and its first writer would delete the
            // evicted ranges' hash lists (their only local copy).
            if let Some(rec) = &evicted {
                rec.write_in(&dest.join("segments"))?;
            }
        }
        out.write_mark(&mark)?;
        let info = BackupInfo {
            source: self.path().to_path_buf(),
            layout: self.layout,
            mark: mark.last,
            txs: mark.txs,
            taken_at,
            pause_s: pause.as_secs_f64(),
            total_s: started.elapsed().as_secs_f64(),
            bytes,
        };
        let json = serde_json::to_vec_pretty(&info)
            .map_err(|e| StoreError::Corrupt(format!("encoding {BACKUP_INFO}: {e}")))?;
        crate::datadir::write_atomic(dest, BACKUP_INFO, &json)?;
        Ok(info)
    }
}

/// Copies the cold tier as of `list` (the slots after the cut) into
/// `dir`: every serving segment, the hash lists of the ranges it covers,
/// the manifest, and the markers of drops the snapshots may lack. A range
/// without a serving segment (being repaired) stays listed, so the
/// restored dir's first writer rebuilds it.
fn copy_segments(
    set: &SegmentSet,
    list: &[Arc<Slot>],
    list0: &[(u32, u32)],
    markers0: &[(u32, u32)],
    dir: &Path,
) -> StoreResult<u64> {
    let mut bytes = 0;
    fs::create_dir_all(dir).map_err(StoreError::io(format!("creating {}", dir.display())))?;
    for seg in list.iter().filter_map(|s| s.seg.as_ref()) {
        let name = ledgerstore_segment::file_name(seg.first(), seg.last());
        bytes += copy_synced(&set.dir().join(&name), &dir.join(&name))?;
    }
    let end = list.last().map_or(0, |s| s.last);
    for (first, last) in set.hash_lists()?.into_iter().filter(|r| r.1 <= end) {
        let name = ledgerstore_segment::hashes::file_name(first, last);
        let src = set.dir().join(&name);
        match copy_synced(&src, &dir.join(&name)) {
            Ok(n) => bytes += n,
            // Deleted meanwhile: a merged window's list, whose hashes the
            // copied ledger records hold (a list below the eviction
            // boundary is never deleted).
            Err(_) if !src.exists() => {}
            Err(e) => return Err(e),
        }
    }
    let ranges: Vec<(u32, u32)> = list.iter().map(|s| s.range()).collect();
    for (first, last) in unfinished_drops(&ranges, list0, markers0) {
        crate::datadir::write_atomic(dir, &set.marker(first, last), b"")?;
    }
    Manifest::new(set.policy(), ranges).write(dir)?;
    sync_dir(dir)?;
    Ok(bytes)
}

fn ranges(set: &SegmentSet) -> Vec<(u32, u32)> {
    set.slots().iter().map(|s| s.range()).collect()
}

/// The segments whose hot-index drop may be unfinished in snapshots fixed
/// after `list0` and `markers0` were read and before `list` was: those with
/// a `dropping-` marker then, and those installed since (a segment is
/// installed after its marker is written). The backup gets their markers,
/// so the restored dir's first writer finishes the drop. A range merged
/// since is new too and gets a marker, which also covers a part whose own
/// drop was unfinished in the snapshots.
fn unfinished_drops(
    list: &[(u32, u32)],
    list0: &[(u32, u32)],
    markers0: &[(u32, u32)],
) -> Vec<(u32, u32)> {
    list.iter()
        .filter(|r| markers0.contains(r) || !list0.contains(r))
        .copied()
        .collect()
}

/// Reads a backup's `BACKUP.json`; fails if the backup is incomplete.
pub fn read_backup_info(backup: &Path) -> StoreResult<BackupInfo> {
    let path = backup.join(BACKUP_INFO);
    let text = fs::read_to_string(&path).map_err(|e| {
        dir_err(
            backup,
            format!("no readable {BACKUP_INFO} ({e}): not a complete ledgerstore backup"),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| dir_err(backup, format!("bad {BACKUP_INFO}: {e}")))
}

/// Copies the complete backup at `backup` into `dest` (absent or empty),
/// which then is a data dir cut at the backup's mark. Open it to use it.
pub fn restore(backup: &Path, dest: &Path) -> StoreResult<BackupInfo> {
    let info = read_backup_info(backup)?;
    ensure_empty(dest)?;
    // What a failed restore removes: the dir if this call made it, else
    // only what it copied into the empty dir it was given (its owner,
    // mode and a symlink to it stay).
    let made = !dest.exists();
    let undo = || {
        if made {
            let _ = fs::remove_dir_all(dest);
        } else if let Ok(entries) = fs::read_dir(dest) {
            for e in entries.flatten() {
                let p = e.path();
                let _ = match e.file_type() {
                    Ok(t) if t.is_dir() => fs::remove_dir_all(&p),
                    _ => fs::remove_file(&p),
                };
            }
        }
    };
    let result = copy_tree(backup, dest).and_then(|()| {
        // The copy is a data dir, not a backup: drop the marker.
        fs::remove_file(dest.join(BACKUP_INFO)).map_err(StoreError::io(format!(
            "removing {BACKUP_INFO} from the restored dir"
        )))?;
        sync_dir(dest)?;
        if let Some(parent) = dest.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        Ok(())
    });
    if result.is_err() {
        undo();
    }
    result?;
    // Validate the manifest and layout now, not at the next start; a copy
    // this build cannot open (another format, a missing table) is removed
    // again, so a refused restore leaves no half-usable dir behind.
    let validated = validate_restored(dest, info.layout);
    if validated.is_err() {
        undo();
    }
    validated?;
    Ok(info)
}

/// Opens a restored dir's manifest (format, layout) and checks that every
/// table's directory is there.
fn validate_restored(dest: &Path, layout: Layout) -> StoreResult<()> {
    // An existing dir keeps its recorded body form; the one passed is unused.
    let check = DataDir::open(dest, Some(layout), false, None, Forms::default())?;
    for t in TableId::ALL {
        let dir = dest.join(table_dir(layout, t));
        if !dir.is_dir() {
            return Err(dir_err(
                dest,
                format!("table {} missing at {}", t.name(), dir.display()),
            ));
        }
    }
    drop(check);
    Ok(())
}

/// Fsyncs a directory, so the entries created in it are durable.
fn sync_dir(dir: &Path) -> StoreResult<()> {
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(StoreError::io(format!("syncing {}", dir.display())))
}

/// Copies files and directories (not the `LOCK`), fsyncing each file and
/// each directory it fills.
fn copy_tree(from: &Path, to: &Path) -> StoreResult<()> {
    fs::create_dir_all(to).map_err(StoreError::io(format!("creating {}", to.display())))?;
    for entry in
        fs::read_dir(from).map_err(StoreError::io(format!("listing {}", from.display())))?
    {
        let entry = entry.map_err(StoreError::io(format!("listing {}", from.display())))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry
            .file_type()
            .map_err(StoreError::io(format!("inspecting {}", src.display())))?;
        if kind.is_dir() {
            copy_tree(&src, &dst)?;
        } else if entry.file_name() != "LOCK"
            && !entry.file_name().to_string_lossy().ends_with(".lck")
        {
            copy_synced(&src, &dst)?;
        }
    }
    sync_dir(to)
}

/// Copies one file and fsyncs the copy; returns its size.
fn copy_synced(src: &Path, dst: &Path) -> StoreResult<u64> {
    let n = fs::copy(src, dst).map_err(StoreError::io(format!(
        "copying {} to {}",
        src.display(),
        dst.display()
    )))?;
    fs::File::open(dst)
        .and_then(|f| f.sync_all())
        .map_err(StoreError::io(format!("syncing {}", dst.display())))?;
    Ok(n)
}
