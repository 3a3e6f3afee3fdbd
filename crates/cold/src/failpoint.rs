//! Named points where a test makes the process wait to be killed: set
//! `LEDGERSTORE_FAILPOINT` to the name. The process prints
//! `failpoint NAME reached` on stdout and sleeps until it is killed, so a
//! test SIGKILLs it at exactly that step ([`hold_until`]: or until the
//! step is told to stop). Unset (always, in production),
//! a point costs one environment lookup per publish step.

/// The variable naming the failpoint.
pub const VAR: &str = "LEDGERSTORE_FAILPOINT";

/// Waits forever here if `name` is the failpoint set.
pub(crate) async fn point(name: &str) {
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        println!("failpoint {name} reached; waiting to be killed");
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
        }
    }
}

/// Holds a blocking step here, if `name` is the failpoint set, until
/// `stop` is set: a pack that takes as long as the test needs, so a test
/// can stop the daemon mid-pack.
pub(crate) fn hold_until(name: &str, stop: &std::sync::atomic::AtomicBool) {
    if std::env::var(VAR).is_ok_and(|v| v == name) {
        println!("failpoint {name} reached; holding until the round is stopped");
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
