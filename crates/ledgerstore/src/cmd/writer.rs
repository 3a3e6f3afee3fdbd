//! The ingest writer, shared by `ingest`'s sources (synthetic and
//! Stellar): batches committed in order with the store's report printed,
//! repairs retried, the event index fed, and the progress bar.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use ledgerstore_db_api::LedgerInput;
use ledgerstore_events::EventStore;
use ledgerstore_store::{Ledgerstore, Reader, StoreError};

/// Writes batches and prints their reports.
pub(crate) struct Writer {
    store: Arc<Ledgerstore>,
    /// The event index, built as the batches land (Stellar sources).
    events: Option<EventStore>,
    /// The dir's mark when the run began: the index is waited for at
    /// the end only if it has indexed that history by then.
    events_from: Option<u32>,
    progress: ProgressBar,
    committed: u64,
    started: Instant,
    /// Longest wait for a segment repair before a batch.
    repair_wait: Duration,
}

/// Batches retried after a wait for a segment repair (a range can break
/// again, e.g. found damaged by the scrub, while the run goes on).
const REPAIR_RETRIES: u32 = 3;

impl Writer {
    /// The writer of `store`. Layout indexed: a segment that is lost or
    /// damaged is first rebuilt (waited for up to `repair_wait`), since the
    /// duplicate check of every batch needs it.
    pub(crate) fn new(
        store: Ledgerstore,
        progress: ProgressBar,
        repair_wait: Duration,
    ) -> Result<Self> {
        crate::cmd::repair::wait_for_repairs(&store, repair_wait, &progress)?;
        Ok(Self {
            store: Arc::new(store),
            events: None,
            events_from: None,
            progress,
            committed: 0,
            started: Instant::now(),
            repair_wait,
        })
    }

    /// Builds the data dir's event index (`<data dir>/events`) as the
    /// batches land, from the bytes in hand: what the daemon would
    /// otherwise build by reading every ledger back. A failure to open
    /// it is reported and the ingest goes on without it.
    pub(crate) fn with_events(mut self, settings: ledgerstore_events::EventsConfig) -> Self {
        let dir = self.store.path().join("events");
        let reader: Arc<dyn Reader> = self.store.clone();
        match EventStore::open(&dir, reader, settings) {
            Ok(e) => {
                self.events_from = self.store.last_ledger();
                self.events = Some(e);
            }
            Err(e) => self.progress.suspend(|| {
                eprintln!("events: the index is not built with this ingest: {e}");
            }),
        }
        self
    }

    pub(crate) fn write(&mut self, ledgers: &[LedgerInput], source: Duration) -> Result<()> {
        // A batch refused because a range is being repaired wrote nothing
        // (it is validated whole first): wait for the repair and send it
        // again.
        let mut tries = 0;
        let out = loop {
            match self.store.ingest(ledgers, source) {
                Err(StoreError::Repairing { .. }) if tries < REPAIR_RETRIES => {
                    tries += 1;
                    crate::cmd::repair::wait_for_repairs(
                        &self.store,
                        self.repair_wait,
                        &self.progress,
                    )?;
                }
                other => break other?,
            }
        };
        if let Some(e) = &self.events {
            // Only what the commit wrote: leading ledgers at or below the
            // mark are acknowledged without writing (their bytes may differ).
            e.offer(&ledgers[out.skipped.min(ledgers.len())..]);
        }
        self.committed += out.committed as u64;
        self.progress.inc(ledgers.len() as u64);
        if let Some(r) = out.report {
            self.progress.suspend(|| {
                println!("{}", r.render());
                println!("committed through ledger {} (durable mark)", r.last_ledger);
            });
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<Option<u32>> {
        self.progress.finish_and_clear();
        let mark = self.store.last_ledger();
        let secs = self.started.elapsed().as_secs_f64();
        // Layout indexed: the segments of the ranges this run closed, and
        // their merges, are built before exit, so that a backfill leaves
        // the closed history in segments and not in the hot index.
        let waited = Instant::now();
        self.store.wait_for_segments()?;
        if let Some(seg) = self.store.stats()?.segments
            && (seg.builds > 0 || seg.merges > 0)
        {
            println!(
                "segments: built {} and merged {} in {:.1}s ({:.1}s waited after the last batch); {} segments, a lookup probes at most {}",
                seg.builds,
                seg.merges,
                seg.build_total_s + seg.merge_total_s,
                waited.elapsed().as_secs_f64(),
                seg.segments.len(),
                seg.probes,
            );
        }
        if let Some(events) = self.events {
            // An index still behind the history this run did not bring
            // (events newly enabled on a big dir, or its dir deleted) is
            // left to the daemon: the run does not wait for it.
            let behind = self
                .events_from
                .is_some_and(|f| events.indexed_through().is_none_or(|t| t < f));
            if behind {
                println!(
                    "events: the index is behind this dir's earlier history (through {:?}); the daemon builds the rest",
                    events.indexed_through()
                );
            } else {
                report_events(&events, mark);
            }
            // Its builder reads the store: stopped before the store closes.
            events.close();
        }
        let store = Arc::try_unwrap(self.store)
            .map_err(|_| anyhow::anyhow!("the store is still shared at close"))?;
        store.close()?;
        println!(
            "done: {} ledgers in {secs:.1}s ({:.1} ledgers/s); mark {mark:?}",
            self.committed,
            self.committed as f64 / secs.max(1e-9),
        );
        Ok(mark)
    }
}

/// Waits for the event index to reach `mark` (at most an hour: what is
/// left is built by the daemon), and prints what it holds.
fn report_events(events: &EventStore, mark: Option<u32>) {
    let Some(mark) = mark else { return };
    let t = Instant::now();
    let mut done = false;
    while t.elapsed() < Duration::from_secs(3600) {
        done = events.wait_indexed_through(mark, Duration::from_millis(500));
        // A builder that fails (a ledger it cannot read) is left to the
        // daemon, which retries and reports it.
        if done || events.stats().last_error.is_some() {
            break;
        }
    }
    let s = events.stats();
    match (done, &s.last_error) {
        (true, _) => println!(
            "events: {} events indexed through ledger {mark} in {} files ({} bytes; {:.1}s waited after the last batch); {} ledgers indexed from ingest's bytes, {} read back; ingest waited {:.1}s for the builder",
            s.events,
            s.files,
            s.bytes,
            t.elapsed().as_secs_f64(),
            s.ledgers_offered,
            s.ledgers_read_back,
            s.ingest_waited.as_secs_f64()
        ),
        (false, Some(e)) => println!(
            "events: the index stops at {:?}: {e} (the daemon retries)",
            s.indexed_through
        ),
        (false, None) => println!(
            "events: the index reaches {:?} of {mark}; the daemon builds the rest",
            s.indexed_through
        ),
    }
}

/// The progress bar of an ingest: a bar when the length is known, else a
/// spinner; `{msg}` carries the source's own figures (a lake's MB/s and
/// newest ledger).
pub(crate) fn progress(no_progress: bool, len: Option<u64>) -> ProgressBar {
    if no_progress {
        return ProgressBar::hidden();
    }
    let (bar, template) = match len {
        Some(n) => (
            ProgressBar::new(n),
            "{bar:40} {pos}/{len} ledgers {per_sec} {msg} eta {eta}",
        ),
        None => (
            ProgressBar::new_spinner(),
            "{spinner} {pos} ledgers {per_sec} {msg}",
        ),
    };
    bar.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
