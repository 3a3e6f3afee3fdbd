//! What the calls of one batch share (see [`crate::batch`]): its deadline,
//! the answer bytes it may still take, its gate slot and its room among
//! unsent answers. Below both the batch middleware and the methods, which
//! read it from a call's extensions.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::budget::Call;
use crate::gate::Slot;
use crate::send::Hold;

/// Below this many bytes left, a batch's budget counts as spent: a page
/// needs room for its opening, one item and its closing fields.
pub(crate) const MIN_ROOM: usize = 4 * crate::budget::TRAILER;

/// What a call inside a batch finds in its extensions.
#[derive(Debug)]
pub(crate) struct Share {
    /// When the batch started.
    pub(crate) start: Instant,
    /// The batch's clock: the deadline every call of it ends by.
    pub call: Call,
    /// Answer bytes the batch may still take.
    pub(crate) left: AtomicUsize,
    /// The batch's gate slot, if it reads ledgers: its calls take none,
    /// and each job keeps a clone until it ends.
    pub slot: Option<Arc<Slot>>,
    /// The batch's room for its answer (`jsonrpc.max_unsent_bytes`), if it
    /// reads ledgers: each job keeps it too, so a client that leaves frees
    /// no room while a read still runs.
    pub room: Hold,
}

impl Share {
    /// Bytes the next answer may take.
    pub(crate) fn left(&self) -> usize {
        self.left.load(Ordering::Acquire)
    }

    /// Marks the budget spent: a call found no room in what was left.
    pub(crate) fn exhaust(&self) {
        self.left.store(0, Ordering::Release);
    }

    pub(crate) fn spend(&self, bytes: usize) {
        let _ = self
            .left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |l| {
                let l = l.saturating_sub(bytes);
                Some(if l < MIN_ROOM { 0 } else { l })
            });
    }
}
