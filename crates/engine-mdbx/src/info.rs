//! Reader-lag figures that the safe wrapper does not expose.

use libmdbx::{Database, NoWriteMap};

/// How far the oldest live reader lags behind the last commit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReaderLag {
    /// Commits between the oldest reader's snapshot and the newest commit.
    pub lag: u64,
    /// Reader slots in use.
    pub readers: u64,
}

/// Reads `mi_recent_txnid`, `mi_latter_reader_txnid` and `mi_numreaders`.
#[allow(unsafe_code)]
pub(crate) fn reader_lag(db: &Database<NoWriteMap>) -> Option<ReaderLag> {
    // SAFETY: `db.ptr()` is a live environment for the duration of the
    // borrow; MDBX_envinfo is plain data that mdbx_env_info_ex fills in, and
    // we pass its exact size.
    let info = unsafe {
        let mut info: mdbx_sys::MDBX_envinfo = std::mem::zeroed();
        let rc = mdbx_sys::mdbx_env_info_ex(
            db.ptr().0,
            std::ptr::null(),
            &mut info,
            std::mem::size_of::<mdbx_sys::MDBX_envinfo>(),
        );
        if rc != 0 {
            return None;
        }
        info
    };
    Some(ReaderLag {
        lag: info
            .mi_recent_txnid
            .saturating_sub(info.mi_latter_reader_txnid),
        readers: u64::from(info.mi_numreaders),
    })
}
