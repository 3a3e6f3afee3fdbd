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

/// Page operations since the environment was first opened by any process
/// (`mi_pgop_stat`): each page a write transaction dirties is either new or
/// a copy-on-write copy, and is written once when the transaction commits
/// (or earlier, when MDBX spills it to make room).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PageOps {
    /// Pages allocated.
    pub newly: u64,
    /// Pages copied for update.
    pub cow: u64,
    /// Dirty pages written out before commit.
    pub spill: u64,
}

impl PageOps {
    /// Pages written since `base`.
    pub fn written_since(&self, base: &PageOps) -> u64 {
        (self.newly + self.cow + self.spill).saturating_sub(base.newly + base.cow + base.spill)
    }
}

/// Reads the page-operation counters.
pub(crate) fn page_ops(db: &Database<NoWriteMap>) -> Option<PageOps> {
    let info = env_info(db)?;
    Some(PageOps {
        newly: info.mi_pgop_stat.newly,
        cow: info.mi_pgop_stat.cow,
        spill: info.mi_pgop_stat.spill,
    })
}

/// Reads `mi_recent_txnid`, `mi_latter_reader_txnid` and `mi_numreaders`.
pub(crate) fn reader_lag(db: &Database<NoWriteMap>) -> Option<ReaderLag> {
    let info = env_info(db)?;
    Some(ReaderLag {
        lag: info
            .mi_recent_txnid
            .saturating_sub(info.mi_latter_reader_txnid),
        readers: u64::from(info.mi_numreaders),
    })
}

#[allow(unsafe_code)]
fn env_info(db: &Database<NoWriteMap>) -> Option<mdbx_sys::MDBX_envinfo> {
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
    Some(info)
}
