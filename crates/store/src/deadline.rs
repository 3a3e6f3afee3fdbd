//! The deadline of the request a blocking read serves, kept for the
//! thread that runs it.
//!
//! The daemon sets it around each unary read it runs on its read threads
//! ([`with_read_deadline`]: gRPC's `query.timeout_ms`, a Stellar RPC call's
//! deadline). A [`crate::Reader`] whose reads wait on the network (a read
//! replica) stops waiting for another read's fetch once it passes
//! ([`read_deadline`]) and fails with [`crate::StoreError::DeadlinePassed`],
//! as [`crate::Reader::batch_get_txs_until`] does for batches. Its own
//! requests run to their end (what they fetch is cached for the reads
//! after them). A read with none set (StreamLedgers chunks, tools,
//! background work) waits as long as it takes.

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Puts the deadline that was set back when a read ends (a panic included).
struct Restore(Option<Instant>);

impl Drop for Restore {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(self.0));
    }
}

/// Runs `f` with `deadline` as this thread's read deadline (or the one
/// already set, if earlier), and puts back the one before after.
pub fn with_read_deadline<T>(deadline: Instant, f: impl FnOnce() -> T) -> T {
    let before = DEADLINE.with(|d| {
        let before = d.get();
        d.set(Some(before.map_or(deadline, |b| b.min(deadline))));
        before
    });
    let _restore = Restore(before);
    f()
}

/// This thread's read deadline, if the read it runs has one.
pub fn read_deadline() -> Option<Instant> {
    DEADLINE.with(Cell::get)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_deadline_holds_for_its_read_only_and_the_earlier_one_wins() {
        assert_eq!(read_deadline(), None);
        let now = Instant::now();
        let (soon, later) = (now + Duration::from_secs(1), now + Duration::from_secs(9));
        with_read_deadline(later, || {
            assert_eq!(read_deadline(), Some(later));
            with_read_deadline(soon, || assert_eq!(read_deadline(), Some(soon)));
            with_read_deadline(now + Duration::from_secs(20), || {
                assert_eq!(
                    read_deadline(),
                    Some(later),
                    "a later one does not extend it"
                );
            });
            assert_eq!(read_deadline(), Some(later));
            // Another thread has none.
            let other = std::thread::spawn(read_deadline).join().expect("thread");
            assert_eq!(other, None);
        });
        assert_eq!(read_deadline(), None);
        let panicked = std::panic::catch_unwind(|| with_read_deadline(soon, || panic!("a read")));
        assert!(panicked.is_err());
        assert_eq!(read_deadline(), None, "put back after a panic");
    }
}
