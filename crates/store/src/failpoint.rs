//! Named points where a test aborts the process, to prove crash safety
//! with a real crash: set `LEDGERSTORE_FAILPOINT` to the point's name.
//! Unset (always, in production), a point costs one environment lookup,
//! and every point sits on a rare path (creation, a segment build).

/// The variable naming the failpoint.
pub const VAR: &str = "LEDGERSTORE_FAILPOINT";

/// Aborts the process here if `name` is the failpoint set.
pub(crate) fn abort_at(name: &str) {
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        eprintln!("failpoint {name}: aborting");
        std::process::abort();
    }
}
