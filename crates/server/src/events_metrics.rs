//! Metrics of the event index (listed in `docs/metrics.md`): how far it
//! reaches, its files, and whether its builder works or fails.

use ledgerstore_events::EventStats;
use prometheus::{Gauge, IntGauge, Registry};

fn gauge(r: &Registry, name: &str, help: &str) -> prometheus::Result<IntGauge> {
    let g = IntGauge::new(name, help)?;
    r.register(Box::new(g.clone()))?;
    Ok(g)
}

/// The event index's gauges, refreshed from [`EventStats`].
pub struct EventMetrics {
    indexed_through: IntGauge,
    first: IntGauge,
    files: IntGauge,
    bytes: IntGauge,
    events: IntGauge,
    building: IntGauge,
    failing: IntGauge,
    built: IntGauge,
    adopted: IntGauge,
    offered: IntGauge,
    read_back: IntGauge,
    ingest_waited: Gauge,
}

impl EventMetrics {
    /// Registers them in `r`.
    pub fn new(r: &Registry) -> prometheus::Result<Self> {
        Ok(Self {
            indexed_through: gauge(
                r,
                "ledgerstore_events_indexed_through",
                "Last ledger whose events getEvents finds (every ledger from the first up to it is indexed).",
            )?,
            first: gauge(
                r,
                "ledgerstore_events_first_ledger",
                "First ledger the event index covers.",
            )?,
            files: gauge(r, "ledgerstore_events_files", "Event index files.")?,
            bytes: gauge(
                r,
                "ledgerstore_events_bytes",
                "Bytes of the event index files.",
            )?,
            events: gauge(
                r,
                "ledgerstore_events_indexed",
                "Events indexed (files and the in-memory tail).",
            )?,
            building: gauge(
                r,
                "ledgerstore_events_building",
                "1 while the event index builder builds or merges files.",
            )?,
            failing: gauge(
                r,
                "ledgerstore_events_failing",
                "1 when the builder's latest round failed (its error is in the log and `stats`; it retries).",
            )?,
            built: gauge(
                r,
                "ledgerstore_events_files_built",
                "Level-0 event index files built from the stored ledgers since the daemon started.",
            )?,
            adopted: gauge(
                r,
                "ledgerstore_events_files_adopted",
                "Published event index files a replica fetched and adopted since it started.",
            )?,
            offered: gauge(
                r,
                "ledgerstore_events_ledgers_offered",
                "Ledgers indexed from the bytes ingest committed (no read back) since the daemon started.",
            )?,
            read_back: gauge(
                r,
                "ledgerstore_events_ledgers_read_back",
                "Ledgers read back from the store to be indexed since the daemon started.",
            )?,
            ingest_waited: {
                let g = Gauge::new(
                    "ledgerstore_events_ingest_waited_seconds",
                    "Seconds ingest waited for the event index builder to make room for its offers since the daemon started.",
                )?;
                r.register(Box::new(g.clone()))?;
                g
            },
        })
    }

    /// Sets them from `s`.
    pub fn refresh(&self, s: &EventStats) {
        let v = |x: u64| i64::try_from(x).unwrap_or(i64::MAX);
        self.indexed_through
            .set(s.indexed_through.map_or(0, i64::from));
        self.first.set(s.first_ledger.map_or(0, i64::from));
        self.files.set(v(s.files as u64));
        self.bytes.set(v(s.bytes));
        self.events.set(v(s.events));
        self.building.set(i64::from(s.building));
        self.failing.set(i64::from(s.last_error.is_some()));
        self.built.set(v(s.built_files));
        self.adopted.set(v(s.adopted_files));
        self.offered.set(v(s.ledgers_offered));
        self.read_back.set(v(s.ledgers_read_back));
        self.ingest_waited.set(s.ingest_waited.as_secs_f64());
    }
}
