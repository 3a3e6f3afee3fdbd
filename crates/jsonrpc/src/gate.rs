//! The bound on heavy calls (those that read whole ledgers:
//! `getLedgers`, `getTransactions`, `getLatestLedger`): at most
//! `jsonrpc.max_heavy_calls` run at once, at most
//! `jsonrpc.max_queued_heavy_calls` wait (first come, first served) until
//! their deadline, and any more are refused at once with a message that
//! says so. Point lookups (`getTransaction`) never pass here, so they keep
//! their latency while pages queue.
//!
//! The permit travels with the blocking task and is released when the
//! task ends, not when the caller stops waiting for it: a call abandoned
//! at its deadline keeps its slot until it has really stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use prometheus::IntGauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::budget::Call;
use crate::error::{RpcError, RpcResult};

/// See the module docs.
#[derive(Debug)]
pub(crate) struct Gate {
    permits: Arc<Semaphore>,
    running: usize,
    queued: AtomicUsize,
    max_queued: usize,
    /// `jsonrpc_heavy_calls{state="running"}` and `{state="queued"}`.
    running_gauge: IntGauge,
    queued_gauge: IntGauge,
}

/// A running call's slot: dropping it (when the work ends) frees it.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    gauge: IntGauge,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// A waiter's place in the queue: leaving it (admitted, timed out, or the
/// client gone) frees it.
struct Queued<'a>(&'a AtomicUsize, &'a IntGauge);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
        self.1.dec();
    }
}

impl Gate {
    /// `running` calls at once (at least 1), `max_queued` waiting; the
    /// gauges count both.
    pub(crate) fn new(
        running: usize,
        max_queued: usize,
        running_gauge: IntGauge,
        queued_gauge: IntGauge,
    ) -> Self {
        let running = running.max(1);
        Self {
            permits: Arc::new(Semaphore::new(running)),
            running,
            queued: AtomicUsize::new(0),
            max_queued,
            running_gauge,
            queued_gauge,
        }
    }

    fn slot(&self, permit: OwnedSemaphorePermit) -> Slot {
        self.running_gauge.inc();
        Slot {
            _permit: permit,
            gauge: self.running_gauge.clone(),
        }
    }

    /// A slot for `method`, waiting in line until the call's deadline.
    pub(crate) async fn enter(&self, method: &str, call: &Call) -> RpcResult<Slot> {
        if let Ok(p) = self.permits.clone().try_acquire_owned() {
            return Ok(self.slot(p));
        }
        let ahead = self.queued.fetch_add(1, Ordering::AcqRel);
        self.queued_gauge.inc();
        let _place = Queued(&self.queued, &self.queued_gauge);
        if ahead >= self.max_queued {
            return Err(RpcError::Busy(format!(
                "server busy: {} ledger-reading calls (getLedgers, getTransactions, getEvents, \
                 getLatestLedger) are running (jsonrpc.max_heavy_calls) and {} are waiting \
                 (jsonrpc.max_queued_heavy_calls); {method} was refused, retry later",
                self.running, self.max_queued
            )));
        }
        let deadline = tokio::time::Instant::from_std(call.deadline);
        match tokio::time::timeout_at(deadline, self.permits.clone().acquire_owned()).await {
            Ok(Ok(p)) => Ok(self.slot(p)),
            Ok(Err(closed)) => Err(RpcError::Internal(format!("{method}: {closed}"))),
            Err(_) => Err(RpcError::Busy(format!(
                "server busy: {method} waited {} ms (query.timeout_ms) for one of the {} \
                 slots of ledger-reading calls (jsonrpc.max_heavy_calls); retry later",
                call.timeout.as_millis(),
                self.running
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    #[tokio::test]
    async fn waits_in_line_then_refuses_with_a_reason() {
        let gauge = |n: &str| IntGauge::new(n, "test").expect("gauge");
        let gate = Gate::new(1, 1, gauge("running"), gauge("queued"));
        let long = Call::new(Instant::now(), Duration::from_secs(600));
        let held = gate.enter("getLedgers", &long).await.expect("a free slot");
        // One may wait: it is admitted when the slot frees.
        let waiter = gate.enter("getLedgers", &long);
        tokio::pin!(waiter);
        assert!(
            futures::poll!(waiter.as_mut()).is_pending(),
            "the second call waits"
        );
        // A third finds the line full.
        let e = gate
            .enter("getTransactions", &long)
            .await
            .expect_err("the line is full");
        assert!(
            e.to_string().contains("jsonrpc.max_queued_heavy_calls"),
            "{e}"
        );
        assert!(e.to_string().contains("getTransactions was refused"), "{e}");
        assert_eq!(gate.running_gauge.get(), 1);
        assert_eq!(gate.queued_gauge.get(), 1);
        drop(held);
        let second = waiter.await.expect("admitted once the slot is free");
        // A waiter whose deadline passes is refused, and leaves the line.
        let short = Call::new(Instant::now(), Duration::from_millis(1));
        let e = gate
            .enter("getLedgers", &short)
            .await
            .expect_err("deadline");
        assert!(e.to_string().contains("waited 1 ms"), "{e}");
        assert_eq!(gate.queued.load(Ordering::Acquire), 0);
        assert_eq!(gate.queued_gauge.get(), 0);
        drop(second);
        assert_eq!(gate.running_gauge.get(), 0);
        let _again = gate.enter("getLedgers", &long).await.expect("free again");
    }
}
