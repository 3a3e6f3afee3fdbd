//! The writer's publisher: a background task that publishes closed ranges
//! to object storage every `cold.publish_interval_ms` (see
//! `ledgerstore_cold::publish`). A failed round is logged, counted, and
//! retried at the next interval; the previous manifest stays valid.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ledgerstore_cold::{LocalEventFile, LocalEvents, Remote, Replica};
use ledgerstore_events::{EventStore, FileInfo};
use ledgerstore_pack::EventsGeometry;
use ledgerstore_store::Ledgerstore;
use tokio::sync::watch;

use crate::cold_metrics::PublishMetrics;
use crate::metrics::Metrics;

/// How long a shutdown waits for the publisher to end once told to stop:
/// packs and evictions stop within a chunk, so mostly an upload or a
/// manifest read in flight is cut off.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Where and how often to publish.
pub struct Publish {
    /// The object store.
    pub remote: Arc<Remote>,
    /// Time between rounds.
    pub interval: Duration,
    /// Packs are written here before upload (`<data dir>/publish`).
    pub work: PathBuf,
    /// A replica of the same store: the writer serves evicted ranges
    /// through it.
    pub cold: Arc<Replica>,
    /// Published base ranges kept locally (0: all).
    pub keep_local_ranges: u32,
    /// The form new packs are written in (`[cold] pack_version`, or the
    /// store's own).
    pub form: ledgerstore_cold::PackChoice,
}

impl Publish {
    pub(crate) async fn run(
        self,
        store: Arc<Ledgerstore>,
        events: Option<Arc<EventStore>>,
        metrics: Arc<Metrics>,
        mut stop: watch::Receiver<bool>,
    ) {
        let m = match PublishMetrics::new(metrics.registry()) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!(error = %e, "publish metrics unavailable");
                None
            }
        };
        let stopping = Arc::new(AtomicBool::new(false));
        loop {
            let local = events.as_deref().map(|e| {
                let (file_ledgers, fan_out) = e.geometry();
                local_events(file_ledgers, fan_out, e.files())
            });
            let round = ledgerstore_cold::publish_as(
                Arc::clone(&store),
                &self.remote,
                &self.work,
                local,
                Arc::clone(&stopping),
                self.form,
            );
            let Some(r) = unless_stopped(round, &mut stop, &stopping).await else {
                return;
            };
            match &r {
                Ok(rep) if rep.version.is_some() => tracing::info!(
                    version = ?rep.version,
                    mark = ?rep.mark,
                    packs = rep.packs.len(),
                    pack_version = %rep.pack_form.map_or("none".into(), |f| f.version().to_string()),
                    uploaded_bytes = rep.uploaded_bytes,
                    seconds = rep.took.as_secs_f64(),
                    "published closed ranges to {}",
                    self.remote.location()
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "publishing failed; retrying next round"),
            }
            if let Some(m) = &m {
                m.round(r.as_ref().map_err(|_| ()));
            }
            if let (Ok(rep), Some(ev)) = (&r, &events)
                && !rep.damaged_events.is_empty()
            {
                // Dropped and rebuilt from the stored ledgers; the next
                // round publishes the rebuilt files.
                let (ev, damaged) = (ev.clone(), rep.damaged_events.clone());
                let _ = tokio::task::spawn_blocking(move || {
                    for (first, last) in damaged {
                        ev.recheck(first, last);
                    }
                })
                .await;
            }
            let after = async {
                if r.is_ok() && self.keep_local_ranges > 0 {
                    let evicted = ledgerstore_cold::evict_until(
                        Arc::clone(&store),
                        &self.cold,
                        self.keep_local_ranges,
                        Arc::clone(&stopping),
                    )
                    .await;
                    match evicted {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(
                            ledgers = n,
                            below = ?store.evicted().map(|e| e.below),
                            "evicted published ranges from the data dir"
                        ),
                        Err(e) => tracing::warn!(error = %e, "evicting published ranges failed"),
                    }
                } else if let Err(e) = self.cold.refresh().await {
                    // Every round, a failed one too: a store that refuses
                    // writes may still be read, and an evicting writer whose
                    // first manifest read failed answers UNAVAILABLE for its
                    // evicted ranges until one succeeds.
                    tracing::warn!(error = %e, "reading the published manifest failed");
                }
            };
            if unless_stopped(after, &mut stop, &stopping).await.is_none() {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep(self.interval) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }
}

/// Runs `work` to its end, or, once `stop` is true, sets `stopping` and
/// gives `work` [`STOP_GRACE`] more: None when stopped. Work is not
/// started when the stop came first. The publisher's blocking steps that
/// run long check `stopping` between chunks (a pack's ledgers, an
/// eviction's deletes); what can outlive the grace is an upload or a
/// manifest read (cut off: async), or a blocking step already under way
/// (a pack's final write, a file's checksum, one chunk), which holds the
/// store open until it returns and which the runtime waits for on exit.
async fn unless_stopped<T>(
    work: impl Future<Output = T>,
    stop: &mut watch::Receiver<bool>,
    stopping: &AtomicBool,
) -> Option<T> {
    if *stop.borrow() {
        stopping.store(true, Ordering::Relaxed);
        return None;
    }
    tokio::pin!(work);
    tokio::select! {
        biased;
        r = &mut work => Some(r),
        // The guard `wait_for` returns is not `Send`: drop it at once.
        () = async { drop(stop.wait_for(|s| *s).await) } => {
            stopping.store(true, Ordering::Relaxed);
            if tokio::time::timeout(STOP_GRACE, &mut work).await.is_err() {
                tracing::warn!(
                    "publishing still running {STOP_GRACE:?} after shutdown began; cut off (the \
                     previous manifest stays valid)"
                );
            }
            None
        }
    }
}

/// An event index's files (`ledgerstore_events::EventStore::files`, or
/// `local_files` of a stopped data dir) as a publish round lists them.
pub fn local_events(file_ledgers: u32, fan_out: u32, files: Vec<FileInfo>) -> LocalEvents {
    LocalEvents {
        geometry: EventsGeometry {
            file_ledgers,
            fan_out,
        },
        files: files
            .into_iter()
            .map(|f| LocalEventFile {
                first: f.first,
                last: f.last,
                events: f.events,
                path: f.path,
            })
            .collect(),
    }
}
