//! Durable file writes in the events dir: a temporary name, sync, rename,
//! dir sync. Below `files` and `config`, which both write this way.

use std::fs::File;
use std::path::Path;

use crate::error::{EventsError, EventsResult};

/// Prefix of files being written; removed at open.
pub(crate) const TMP: &str = "tmp-";

/// Writes `bytes` as `dir/name`: to a temporary name, synced, renamed,
/// and the dir synced.
pub(crate) fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> EventsResult<()> {
    let tmp = dir.join(format!("{TMP}{name}"));
    std::fs::write(&tmp, bytes).map_err(EventsError::io(&tmp, "writing"))?;
    File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(EventsError::io(&tmp, "syncing"))?;
    publish(dir, &tmp, name)
}

/// Renames a written and synced `tmp` to `dir/name` and syncs the dir.
pub(crate) fn publish(dir: &Path, tmp: &Path, name: &str) -> EventsResult<()> {
    let path = dir.join(name);
    std::fs::rename(tmp, &path).map_err(EventsError::io(&path, "renaming into place"))?;
    sync_dir(dir)
}

/// Syncs the dir's entries (a rename or a delete is durable after it).
pub(crate) fn sync_dir(dir: &Path) -> EventsResult<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(EventsError::io(dir, "syncing"))
}
