//! Scratch files for targets whose code under test reads or writes files.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where a scratch file goes: `/dev/shm` when it exists (targets write a
/// file per input), named for this process so parallel fuzzers do not
/// collide. [`Scratch`] removes it after each input.
fn scratch_path(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    });
    dir.join(format!("ledgerstore-fuzz-{}-{name}", std::process::id()))
}

/// A scratch file, removed on drop.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    /// The scratch file `name`, holding `bytes`.
    pub(crate) fn write(name: &str, bytes: &[u8]) -> Self {
        let s = Self::named(name);
        std::fs::write(&s.0, bytes).expect("writing the input to a scratch file");
        s
    }

    /// The scratch file `name`, for the code under test to create.
    pub(crate) fn named(name: &str) -> Self {
        let path = scratch_path(name);
        let _ = std::fs::remove_file(&path);
        Self(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
