//! The process's limit on open file descriptors: raised to its hard
//! limit at start, as Go's runtime does, since every RocksDB table keeps
//! up to `rocksdb.max_open_files` SST files open and RocksDB quietly
//! keeps fewer when the soft limit is lower (Debian's shells start at
//! 1,024, below the default 5,000).

/// The process's soft and hard limits on open file descriptors.
#[allow(unsafe_code)]
fn current() -> Option<libc::rlimit> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    ok.then_some(r)
}

/// The soft limit on open file descriptors, if there is one.
pub(crate) fn open_files() -> Option<u64> {
    current()
        .map(|r| r.rlim_cur)
        .filter(|&cur| cur != libc::RLIM_INFINITY)
}

/// Raises the soft limit on open file descriptors to the hard limit (an
/// operator's lower hard limit, `LimitNOFILE` or `ulimit -Hn`, still
/// holds). Failing leaves the limit as it was.
#[allow(unsafe_code)]
pub(crate) fn raise_open_files() {
    let Some(mut r) = current().filter(|r| r.rlim_cur < r.rlim_max) else {
        return;
    };
    r.rlim_cur = r.rlim_max;
    // SAFETY: setrlimit reads the struct it is given and sets the calling
    // process's limit, nothing else.
    unsafe {
        libc::setrlimit(libc::RLIMIT_NOFILE, &r);
    }
}
