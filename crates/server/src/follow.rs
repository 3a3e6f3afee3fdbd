//! The daemon's lake follower (`[follow] lake`): from the mark on, the
//! lake's files are read ahead, gathered into batches of
//! `ingest.bulk_batch_ledgers` ledgers (or fewer, once their raw bytes
//! reach `ingest.bulk_batch_mib`: [`Batcher`]) while behind, and committed at once
//! whenever the lake's newest ledger is reached; then the lake is polled
//! every `follow.poll_ms`. Decoded files wait for the writer in up to
//! `lake.decoded_ahead_mib` of their raw bytes, so decoding goes on while
//! a batch commits ([`ledgerstore_stellar::lead`]).
//!
//! - A failed round (after object_store's retries) is counted and retried
//!   after the poll interval. Once the lake has failed for
//!   `follow.unreachable_after_ms` without a success, the Ingest service's
//!   health turns NOT_SERVING; it turns SERVING again at the next success.
//!   Queries are not affected.
//! - A batch the store refuses (disk full, say) is logged, and following
//!   starts again from the mark after a backoff (the poll interval,
//!   doubling up to a minute).
//! - If the follow task ends (it died), the ledgers in hand, whole and in
//!   order, are committed, and following starts again from the mark after
//!   the backoff, with nothing held over.
//! - On shutdown the batch being committed finishes, then the ledgers in
//!   hand are committed, at most one batch's worth: the rest of a file cut
//!   into several batches, and the files decoded ahead, are read again at
//!   the next start.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ledgerstore_config::Config;
use ledgerstore_db_api::{Batcher, LedgerInput};
use ledgerstore_stellar::{
    DataLake, FollowEvent, Forwarded, Lead, Network, ReadLimits, SourceOptions, StellarError,
};
use ledgerstore_store::Ledgerstore;
use prometheus::{IntCounter, IntGauge};
use tokio::sync::watch;
use tonic_health::ServingStatus;
use tonic_health::server::HealthReporter;

use crate::metrics::Metrics;

/// HTTP attempts made to the lake so far, and how many failed (and were
/// retried): read from the object store's counters by the binary.
pub type RequestCount = Arc<dyn Fn() -> (u64, u64) + Send + Sync>;

/// A lake to follow, opened by the binary (which picks the object store).
pub struct Follow {
    /// The lake.
    pub lake: Arc<DataLake>,
    /// Its request counters.
    pub requests: RequestCount,
}

struct FollowMetrics {
    latest: IntGauge,
    lag_ledgers: IntGauge,
    lag_seconds: IntGauge,
    reachable: IntGauge,
    errors: IntCounter,
    requests: IntCounter,
    failed_requests: IntCounter,
}

impl FollowMetrics {
    fn new(m: &Metrics) -> prometheus::Result<Self> {
        let r = m.registry();
        let gauge = |name: &str, help: &str| -> prometheus::Result<IntGauge> {
            let g = IntGauge::new(name, help)?;
            r.register(Box::new(g.clone()))?;
            Ok(g)
        };
        let counter = |name: &str, help: &str| -> prometheus::Result<IntCounter> {
            let c = IntCounter::new(name, help)?;
            r.register(Box::new(c.clone()))?;
            Ok(c)
        };
        Ok(Self {
            latest: gauge(
                "ledgerstore_follow_lake_latest_ledger",
                "The newest ledger the followed lake holds, as last seen.",
            )?,
            lag_ledgers: gauge(
                "ledgerstore_follow_lag_ledgers",
                "Ledgers the lake holds beyond the durable mark.",
            )?,
            lag_seconds: gauge(
                "ledgerstore_follow_lag_seconds",
                "Seconds between now and the close time of the newest committed ledger.",
            )?,
            reachable: gauge(
                "ledgerstore_follow_lake_reachable",
                "1 while the lake answers; 0 once it has failed for follow.unreachable_after_ms.",
            )?,
            errors: counter(
                "ledgerstore_follow_errors_total",
                "Follow rounds that failed (a request after its retries, or a file that does not decode).",
            )?,
            requests: counter(
                "ledgerstore_follow_http_requests_total",
                "HTTP requests sent to the lake, retries included.",
            )?,
            failed_requests: counter(
                "ledgerstore_follow_http_retried_total",
                "HTTP requests to the lake that failed with 5xx, 429 or in transport, and were retried (or given up on).",
            )?,
        })
    }
}

/// Everything the follower task needs.
pub(crate) struct Follower {
    pub follow: Follow,
    pub store: Arc<Ledgerstore>,
    pub cfg: Arc<Config>,
    pub metrics: Arc<Metrics>,
    pub health: HealthReporter,
    pub ingest_service: &'static str,
    pub stop: watch::Receiver<bool>,
    /// The event index, offered each committed batch.
    pub events: Option<Arc<ledgerstore_events::EventStore>>,
}

impl Follower {
    /// Runs until shutdown.
    pub(crate) async fn run(mut self) {
        let fm = match FollowMetrics::new(&self.metrics) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, "follow metrics could not be registered; not following");
                return;
            }
        };
        fm.reachable.set(1);
        let mut s = Session::new(fm, &self.cfg);
        let mut backoff = self.poll();
        loop {
            match self.session(&mut s).await {
                Ended::Stopped => return,
                Ended::Refused => {
                    // Nothing is held over a backoff: the next session
                    // reads from the mark.
                    s.pending.clear();
                    tokio::select! {
                        _ = tokio::time::sleep(backoff) => {}
                        _ = self.stop.wait_for(|s| *s) => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(60));
                }
            }
        }
    }

    fn poll(&self) -> Duration {
        Duration::from_millis(self.cfg.follow.poll_ms)
    }

    /// Follows from the mark until shutdown or a refused batch.
    async fn session(&mut self, s: &mut Session) -> Ended {
        let lake = Arc::clone(&self.follow.lake);
        let opts = loop {
            match self.options().await {
                Ok(o) => break o,
                Err(e) => {
                    self.failed(s, &e).await;
                    tokio::select! {
                        _ = tokio::time::sleep(self.poll()) => {}
                        _ = self.stop.wait_for(|s| *s) => return Ended::Stopped,
                    }
                }
            }
        };
        tracing::info!(lake = lake.root(), from = ?opts.from, network = %opts.network, "following the data lake");
        let events = match ledgerstore_stellar::follow(lake, opts, self.poll()) {
            Ok(e) => e,
            Err(e) => {
                self.failed(s, &e).await;
                return Ended::Refused;
            }
        };
        // Dropped with the session: that stops its forwarding and polling.
        let events = ledgerstore_stellar::forward(
            events,
            Lead::new(self.cfg.lake.decoded_ahead_mib),
            None,
            false,
        );
        self.consume(s, events).await
    }

    /// Commits what `events` (a session from the mark) yields, until
    /// shutdown, a refused batch, or the end of the follow task.
    async fn consume(&mut self, s: &mut Session, mut events: Forwarded) -> Ended {
        // Ledgers are held only within a session: one that ended with some
        // in hand committed or dropped them (they are read again).
        s.pending.clear();
        let mut stop = self.stop.clone();
        loop {
            // A unit's room in the lead is given back as it is taken: from
            // here its ledgers count against the batch's bounds.
            let ev = tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => None,
                ev = events.recv() => Some(ev.map(|(ev, _room)| ev)),
            };
            let Some(ev) = ev else {
                // Stop reading first: decoding ahead would compete with
                // the last commit. At most one batch is committed.
                drop(events);
                let ledgers = s.pending.first();
                let _ = self.commit_ledgers(s, ledgers).await;
                return Ended::Stopped;
            };
            self.count_requests(s);
            match ev {
                None => {
                    // The follow task died. What arrived is whole and in
                    // order: commit it, so the next session starts after it.
                    tracing::error!(
                        "follow: the lake follower task ended; following again from the mark after a backoff"
                    );
                    drop(events);
                    let _ = self.commit(s).await;
                    return Ended::Refused;
                }
                Some(FollowEvent::UpToDate) => {
                    self.succeeded(s).await;
                    if let Some(m) = self.store.last_ledger() {
                        s.fm.latest.set(s.fm.latest.get().max(i64::from(m)));
                    }
                    self.lag(s, None);
                }
                Some(FollowEvent::Newest(n)) => {
                    self.succeeded(s).await;
                    s.fm.latest.set(i64::from(n));
                    self.lag(s, Some(n));
                }
                Some(FollowEvent::Error(e)) => {
                    self.failed(s, &e).await;
                    // What arrived before the failure is whole and in order.
                    if !self.commit(s).await {
                        return Ended::Refused;
                    }
                }
                Some(FollowEvent::Chunk { chunk, at_tip }) => {
                    self.succeeded(s).await;
                    s.pending.push(chunk.ledgers);
                    // A stop between batches goes to the stop branch above.
                    while !*self.stop.borrow()
                        && let Some(full) = s.pending.full()
                    {
                        if !self.commit_ledgers(s, full).await {
                            return Ended::Refused;
                        }
                    }
                    if at_tip && !*self.stop.borrow() && !self.commit(s).await {
                        return Ended::Refused;
                    }
                }
            }
        }
    }

    /// The network and the first ledger: after the mark, else
    /// `follow.from`, else the lake's oldest.
    async fn options(&self) -> Result<SourceOptions, StellarError> {
        let lake = &self.follow.lake;
        let network = match lake.manifest_passphrase().await? {
            Some(p) => Network::from_passphrase(&p),
            None => Network::parse(&self.cfg.stellar.network)?,
        };
        let from = match self.store.last_ledger() {
            Some(m) => m.checked_add(1),
            None if self.cfg.follow.from > 0 => Some(self.cfg.follow.from),
            None => match lake.newest(None).await? {
                Some(n) => lake.oldest(n).await?,
                None => None,
            },
        };
        let Some(from) = from else {
            return Err(StellarError::Lake {
                root: lake.root().to_string(),
                detail: "holds no ledgers yet (set follow.from to wait for one)".into(),
            });
        };
        Ok(SourceOptions {
            network,
            from: Some(from),
            to: None,
            read_ahead: usize::from(self.cfg.lake.read_ahead),
            limits: ReadLimits::default(),
        })
    }

    /// Commits the pending ledgers; false when the store refused them.
    async fn commit(&self, s: &mut Session) -> bool {
        let ledgers = s.pending.take_all();
        self.commit_ledgers(s, ledgers).await
    }

    /// Commits `ledgers` (in order, after the mark); false when the store
    /// refused them.
    async fn commit_ledgers(&self, s: &mut Session, ledgers: Vec<LedgerInput>) -> bool {
        if ledgers.is_empty() {
            return true;
        }
        let close_time = ledgers.last().map_or(0, |l| l.close_time);
        let store = Arc::clone(&self.store);
        let events = self.events.clone();
        let t = Instant::now();
        let out = tokio::task::spawn_blocking(move || {
            store
                .ingest(&ledgers, Duration::ZERO)
                .map(|out| (out, ledgers))
        })
        .await;
        match out {
            Ok(Ok((out, ledgers))) => {
                if let Some(r) = &out.report {
                    self.metrics.batch(r, close_time);
                }
                s.last_close = Some(close_time);
                self.lag(s, None);
                tracing::debug!(mark = ?out.mark, committed = out.committed, seconds = t.elapsed().as_secs_f64(), "follow: batch committed");
                if let Some(ev) = events {
                    // The event index takes the committed ledgers' bytes,
                    // instead of reading them back.
                    // Only what the commit wrote: leading ledgers at or
                    // below the mark are acknowledged without writing.
                    let new = out.skipped.min(ledgers.len());
                    let _ = tokio::task::spawn_blocking(move || ev.offer(&ledgers[new..])).await;
                }
                true
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "follow: the store refused a batch; following again from the mark after a backoff");
                false
            }
            Err(j) => {
                tracing::error!(error = %j, "follow: the commit task failed");
                false
            }
        }
    }

    fn lag(&self, s: &Session, newest: Option<u32>) {
        let mark = self.store.last_ledger();
        let newest = newest.or_else(|| u32::try_from(s.fm.latest.get()).ok());
        if let (Some(n), Some(m)) = (newest, mark) {
            s.fm.lag_ledgers.set(i64::from(n.saturating_sub(m)));
        }
        if let Some(c) = s.last_close {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            s.fm.lag_seconds
                .set(i64::try_from(now.saturating_sub(c)).unwrap_or(i64::MAX));
        }
    }

    fn count_requests(&self, s: &mut Session) {
        let (attempts, failed) = (self.follow.requests)();
        s.fm.requests.inc_by(attempts.saturating_sub(s.seen.0));
        s.fm.failed_requests.inc_by(failed.saturating_sub(s.seen.1));
        s.seen = (attempts.max(s.seen.0), failed.max(s.seen.1));
    }

    async fn failed(&self, s: &mut Session, e: &StellarError) {
        s.fm.errors.inc();
        // A warning at the first failure and every 30 s of an outage;
        // each retry round is logged at debug.
        let now = Instant::now();
        if s.warned
            .is_none_or(|w| now.duration_since(w) >= Duration::from_secs(30))
        {
            s.warned = Some(now);
            tracing::warn!(error = %e, errors = s.fm.errors.get(), "follow: the lake round failed; trying again every follow.poll_ms");
        } else {
            tracing::debug!(error = %e, "follow: the lake round failed");
        }
        let since = *s.failing_since.get_or_insert_with(Instant::now);
        let limit = Duration::from_millis(self.cfg.follow.unreachable_after_ms);
        if s.serving && since.elapsed() >= limit {
            s.serving = false;
            s.fm.reachable.set(0);
            tracing::error!(
                lake = self.follow.lake.root(),
                failing_for_s = since.elapsed().as_secs_f64(),
                "follow: the lake is unreachable; Ingest health is NOT_SERVING (queries still serve)"
            );
            if !*self.stop.borrow() {
                self.health
                    .set_service_status(self.ingest_service, ServingStatus::NotServing)
                    .await;
            }
        }
    }

    async fn succeeded(&self, s: &mut Session) {
        s.failing_since = None;
        s.warned = None;
        if !s.serving {
            s.serving = true;
            s.fm.reachable.set(1);
            tracing::info!("follow: the lake answers again; Ingest health is SERVING");
            if !*self.stop.borrow() {
                self.health
                    .set_service_status(self.ingest_service, ServingStatus::Serving)
                    .await;
            }
        }
    }
}

struct Session {
    fm: FollowMetrics,
    failing_since: Option<Instant>,
    warned: Option<Instant>,
    serving: bool,
    last_close: Option<u64>,
    seen: (u64, u64),
    pending: Batcher,
}

impl Session {
    fn new(fm: FollowMetrics, cfg: &Config) -> Self {
        Self {
            fm,
            failing_since: None,
            warned: None,
            serving: true,
            last_close: None,
            seen: (0, 0),
            pending: Batcher::new(
                cfg.ingest.bulk_batch_ledgers as usize,
                u64::from(cfg.ingest.bulk_batch_mib) << 20,
            ),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Ended {
    Stopped,
    Refused,
}

#[cfg(test)]
#[path = "follow_tests.rs"]
mod tests;
