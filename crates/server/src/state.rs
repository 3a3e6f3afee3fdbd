//! State shared by the services.

use std::sync::{Arc, OnceLock};

use ledgerstore_config::Config;
use ledgerstore_events::EventStore;
use ledgerstore_store::{Ledgerstore, Reader};
use tokio::sync::{Semaphore, watch};
use tonic::Status;

use crate::metrics::Metrics;
use crate::reads::ReadPool;
use crate::status::unavailable;

/// What every service shares.
pub struct AppState {
    store: OnceLock<Arc<Ledgerstore>>,
    /// What the query APIs read: the store, or a replica's published ranges.
    reader: OnceLock<Arc<dyn Reader>>,
    /// True on a read replica.
    replica: bool,
    /// The event index getEvents reads, or why there is none.
    events: OnceLock<Result<Arc<EventStore>, String>>,
    /// Why the event index is not open yet, when it waits for something
    /// (a replica waits for a manifest that lists event files).
    events_pending: std::sync::Mutex<Option<String>>,
    /// Effective configuration.
    pub cfg: Arc<Config>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Turns true when shutdown starts.
    pub shutdown: watch::Receiver<bool>,
    /// Permits for concurrent IngestLedgers streams.
    pub ingest_streams: Arc<Semaphore>,
    /// The threads the query APIs' blocking reads run on.
    pub reads: ReadPool,
}

impl AppState {
    /// New state, its reads on `reads`; the store is set once it is open.
    pub fn new(
        cfg: Arc<Config>,
        metrics: Arc<Metrics>,
        shutdown: watch::Receiver<bool>,
        reads: ReadPool,
    ) -> Self {
        Self {
            reads,
            ingest_streams: Arc::new(Semaphore::new(cfg.ingest.max_streams)),
            store: OnceLock::new(),
            reader: OnceLock::new(),
            replica: false,
            events: OnceLock::new(),
            events_pending: std::sync::Mutex::new(None),
            cfg,
            metrics,
            shutdown,
        }
    }

    /// State of a read replica: it has no store, and its write services
    /// refuse.
    pub fn new_replica(
        cfg: Arc<Config>,
        metrics: Arc<Metrics>,
        shutdown: watch::Receiver<bool>,
        reads: ReadPool,
    ) -> Self {
        Self {
            replica: true,
            ..Self::new(cfg, metrics, shutdown, reads)
        }
    }

    /// Publishes the opened store (it also answers the query APIs).
    pub fn set_store(&self, store: Arc<Ledgerstore>) {
        self.set_store_read_through(store.clone(), store);
    }

    /// Publishes the opened store, and what the query APIs read (the
    /// store, or the store in front of its published ranges).
    pub fn set_store_read_through(&self, store: Arc<Ledgerstore>, reader: Arc<dyn Reader>) {
        let _ = self.reader.set(reader);
        let _ = self.store.set(store);
    }

    /// Publishes what the query APIs read (a replica's).
    pub fn set_reader(&self, reader: Arc<dyn Reader>) {
        let _ = self.reader.set(reader);
    }

    /// What the query APIs read, or UNAVAILABLE while opening or shutting
    /// down.
    pub fn reader(&self) -> Result<Arc<dyn Reader>, Status> {
        if self.shutting_down() {
            return Err(unavailable(
                "ledgerstore is shutting down; retry on the restarted daemon",
            ));
        }
        self.reader
            .get()
            .cloned()
            .ok_or_else(|| unavailable("ledgerstore is still opening its stores; retry shortly"))
    }

    /// The store, or UNAVAILABLE while opening or shutting down;
    /// FAILED_PRECONDITION on a read replica, which has none.
    pub fn store(&self) -> Result<Arc<Ledgerstore>, Status> {
        if self.replica {
            // The location it follows is not named: clients are not told
            // the bucket or its endpoint.
            return Err(Status::failed_precondition(
                "this daemon is a read replica: it serves the published ranges and takes no \
                 writes; send ingest and backups to the writer",
            ));
        }
        if self.shutting_down() {
            return Err(unavailable(
                "ledgerstore is shutting down; retry on the restarted daemon",
            ));
        }
        self.store
            .get()
            .cloned()
            .ok_or_else(|| unavailable("ledgerstore is still opening its stores; retry shortly"))
    }

    /// The store even during shutdown (for the final commits).
    pub fn store_for_shutdown(&self) -> Option<Arc<Ledgerstore>> {
        self.store.get().cloned()
    }

    /// Publishes the event index, or why it could not open.
    pub fn set_events(&self, events: Result<Arc<EventStore>, String>) {
        let _ = self.events.set(events);
    }

    /// Says why the event index is not open yet (until it is set).
    pub fn set_events_pending(&self, why: Option<String>) {
        *self
            .events_pending
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = why;
    }

    /// The event index, or why getEvents cannot be answered.
    pub fn events(&self) -> Result<Arc<EventStore>, String> {
        if !self.cfg.events.enabled {
            return Err(
                "getEvents is off on this daemon: its event index is disabled \
                        (events.enabled = false)"
                    .into(),
            );
        }
        if self.shutting_down() {
            return Err("ledgerstore is shutting down; retry on the restarted daemon".into());
        }
        match self.events.get() {
            Some(Ok(e)) => Ok(e.clone()),
            Some(Err(why)) => Err(format!("getEvents: the event index failed to open: {why}")),
            None => Err(self
                .events_pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone()
                .unwrap_or_else(|| {
                    "ledgerstore is still opening its stores; retry shortly".into()
                })),
        }
    }

    /// The event index, for shutdown.
    pub fn events_for_shutdown(&self) -> Option<Arc<EventStore>> {
        self.events.get().and_then(|e| e.as_ref().ok()).cloned()
    }

    /// True once shutdown started.
    pub fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}
