//! Named points where a test makes the process wait to be killed: set
//! `LEDGERSTORE_FAILPOINT` to the name. The process prints
//! `failpoint NAME reached` on stdout and sleeps until it is killed, so a
//! test SIGKILLs it at exactly that step. Unset (always, in production),
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
