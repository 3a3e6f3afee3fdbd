//! How far a source may run ahead of its writer, in bytes: decoded units
//! wait for the writer in up to `lake.decoded_ahead_mib` of their ledgers'
//! bytes ([`LedgerInput::held_len`]: a Stellar ledger's raw bytes, which
//! its transactions' parts are slices of).
//!
//! The source ([`crate::source`], [`crate::follow`]) reads `read_ahead`
//! units at a time. Without a lead past it, decoding stops while a batch
//! commits, and the writer then waits for the next batch's decoding
//! (docs/benchmarks.md, "Batches by bytes, and decoding while a batch
//! commits"). [`forward`] keeps pulling units into a queue whose room is
//! a semaphore of KiB permits: a unit takes its bytes' worth before it is
//! queued, and gives them back when the writer takes it ([`Led`]'s
//! permit). A bounded channel would count units, and a unit is one ledger
//! or 64,000.

use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use ledgerstore_db_api::LedgerInput;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::AbortHandle;

use crate::follow::FollowEvent;
use crate::source::Chunk;

/// An event and the room its unit holds in the lead until it is dropped.
pub type Led = (FollowEvent, Option<OwnedSemaphorePermit>);

/// Room for decoded ledgers waiting for the writer, as KiB permits.
pub struct Lead {
    room: Arc<Semaphore>,
    kib: u32,
}

impl Lead {
    /// A lead of `mib` MiB (at least 1 KiB).
    pub fn new(mib: u32) -> Self {
        let kib = mib.saturating_mul(1024).max(1);
        Self {
            room: Arc::new(Semaphore::new(kib as usize)),
            kib,
        }
    }

    /// Waits for room for `ev` (a unit's bytes; a unit larger than the
    /// whole lead takes all of it, so it waits alone), and takes it. What
    /// carries no ledgers takes none.
    pub async fn room_for(&self, ev: &FollowEvent) -> Option<OwnedSemaphorePermit> {
        let FollowEvent::Chunk { chunk, .. } = ev else {
            return None;
        };
        let kib = u32::try_from(held_bytes(chunk).div_ceil(1024)).unwrap_or(u32::MAX);
        Arc::clone(&self.room)
            .acquire_many_owned(kib.min(self.kib))
            .await
            .ok()
    }
}

/// The bytes a unit's ledgers hold.
fn held_bytes(chunk: &Chunk) -> u64 {
    chunk
        .ledgers
        .iter()
        .map(|l| LedgerInput::held_len(l) as u64)
        .sum()
}

/// The writer's end of [`forward`]. Dropping it aborts the forwarding
/// task, which drops the source's stream: a lake read once stops reading
/// ahead; a follower's own task ([`crate::follow`]) notices at its next
/// send, after its current round's reads or poll.
pub struct Forwarded {
    rx: mpsc::Receiver<Led>,
    task: AbortHandle,
}

impl Forwarded {
    /// The next event; `None` once the source ended or forwarding stopped.
    pub async fn recv(&mut self) -> Option<Led> {
        self.rx.recv().await
    }

    /// [`Self::recv`] from a thread outside the runtime.
    pub fn blocking_recv(&mut self) -> Option<Led> {
        self.rx.blocking_recv()
    }
}

impl Drop for Forwarded {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Passes `events` on, each unit once `lead` has room for it, on a task
/// of its own (call within a tokio runtime). It stops when the source
/// ends, when `stop` completes (what was queued before stays queued), or,
/// with `end_at_error`, after passing on the first error.
///
/// The queue's length (1,024) bounds only events that carry no ledgers (a
/// unit the range filtered out, the lake's newest): the lead bounds the
/// bytes.
pub fn forward(
    mut events: BoxStream<'static, FollowEvent>,
    lead: Lead,
    stop: Option<BoxFuture<'static, ()>>,
    end_at_error: bool,
) -> Forwarded {
    let (tx, rx) = mpsc::channel(1024);
    let task = tokio::spawn(async move {
        let mut stop = stop;
        loop {
            let next = async {
                let ev = events.next().await?;
                let room = lead.room_for(&ev).await;
                Some((ev, room))
            };
            let next = match stop.as_mut() {
                Some(s) => tokio::select! {
                    biased;
                    () = s => return,
                    next = next => next,
                },
                None => next.await,
            };
            let Some((ev, room)) = next else { return };
            let end = end_at_error && matches!(ev, FollowEvent::Error(_));
            if tx.send((ev, room)).await.is_err() || end {
                return;
            }
        }
    });
    Forwarded {
        rx,
        task: task.abort_handle(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn chunk(sizes: &[usize]) -> FollowEvent {
        FollowEvent::Chunk {
            chunk: Chunk {
                unit: "u".into(),
                ledgers: sizes
                    .iter()
                    .zip(1u32..)
                    .map(|(&n, seq)| LedgerInput::without_txs(seq, 0, vec![0u8; n].into()))
                    .collect(),
                read_bytes: 0,
                fetch: Duration::ZERO,
                decode: Duration::ZERO,
            },
            at_tip: false,
        }
    }

    #[tokio::test]
    async fn the_lead_gives_a_unit_room_for_its_bytes_and_a_larger_one_all_of_it() {
        let lead = Lead::new(1);
        let a = lead.room_for(&chunk(&[1000, 1100])).await.expect("room");
        assert_eq!(a.num_permits(), 3, "2,100 bytes take 3 KiB");
        assert_eq!(lead.room.available_permits(), 1021);
        // Larger than the whole lead: waits until everything is given
        // back, then takes all of it.
        let big = chunk(&[5 << 20]);
        let waiting = lead.room_for(&big);
        tokio::pin!(waiting);
        assert!(
            futures::poll!(&mut waiting).is_pending(),
            "waits while another unit holds room"
        );
        drop(a);
        let b = waiting.await.expect("room");
        assert_eq!(b.num_permits(), 1024);
        assert_eq!(lead.room.available_permits(), 0);
        // A unit of no ledgers (the range filtered it out) and what is not
        // a unit take no room, even with none left.
        let empty = chunk(&[]);
        let none = lead.room_for(&empty);
        tokio::pin!(none);
        match futures::poll!(&mut none) {
            std::task::Poll::Ready(Some(p)) => assert_eq!(p.num_permits(), 0),
            other => panic!("an empty unit waited for room: {other:?}"),
        }
        assert!(lead.room_for(&FollowEvent::UpToDate).await.is_none());
        drop(b);
        assert_eq!(lead.room.available_permits(), 1024);
    }

    #[tokio::test]
    async fn forwarding_holds_units_to_the_lead_and_stops_with_its_receiver() {
        // Three units of 600 KiB behind a 1 MiB lead: the first is queued,
        // the second waits for room until the writer takes the first.
        let (src, rx) = mpsc::channel(8);
        for _ in 0..3 {
            src.send(chunk(&[600 << 10])).await.expect("send");
        }
        let events = futures::stream::unfold(rx, |mut rx: mpsc::Receiver<FollowEvent>| async {
            rx.recv().await.map(|e| (e, rx))
        })
        .boxed();
        let mut f = forward(events, Lead::new(1), None, false);
        let (_, first) = f.recv().await.expect("the first unit");
        assert_eq!(first.as_ref().map(|p| p.num_permits()), Some(600));
        // The writer holds the first unit's room: the second cannot be
        // queued yet (the queue is empty until it is dropped).
        tokio::task::yield_now().await;
        assert!(f.rx.try_recv().is_err(), "a second unit got past the lead");
        drop(first);
        let (_, second) = f.recv().await.expect("the second unit");
        assert_eq!(second.as_ref().map(|p| p.num_permits()), Some(600));
        drop(second);
        assert!(f.recv().await.is_some(), "the third unit");
        // Dropping the receiver stops the task, and with it the source:
        // its sender sees the stream dropped.
        drop(f);
        tokio::time::timeout(Duration::from_secs(10), src.closed())
            .await
            .expect("the forwarding task dropped the source");
    }

    #[tokio::test]
    async fn forwarding_ends_after_the_first_error_when_asked_and_at_stop() {
        let events = futures::stream::iter([
            FollowEvent::UpToDate,
            FollowEvent::Error(crate::StellarError::Lake {
                root: "r".into(),
                detail: "d".into(),
            }),
            FollowEvent::UpToDate,
        ])
        .boxed();
        let mut f = forward(events, Lead::new(1), None, true);
        assert!(matches!(
            f.recv().await,
            Some((FollowEvent::UpToDate, None))
        ));
        assert!(matches!(
            f.recv().await,
            Some((FollowEvent::Error(_), None))
        ));
        assert!(f.recv().await.is_none(), "nothing after the error");

        // A stop that has completed ends forwarding before the next event.
        let events = futures::stream::pending().boxed();
        let mut f = forward(events, Lead::new(1), Some(Box::pin(async {})), false);
        assert!(f.recv().await.is_none());
    }
}
