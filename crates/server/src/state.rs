//! State shared by the services.

use std::sync::{Arc, OnceLock};

use ledgerstore_config::Config;
use ledgerstore_store::Ledgerstore;
use tokio::sync::{Semaphore, watch};
use tonic::Status;

use crate::metrics::Metrics;
use crate::status::unavailable;

/// What every service shares.
pub struct AppState {
    store: OnceLock<Arc<Ledgerstore>>,
    /// Effective configuration.
    pub cfg: Arc<Config>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Turns true when shutdown starts.
    pub shutdown: watch::Receiver<bool>,
    /// Permits for concurrent IngestLedgers streams.
    pub ingest_streams: Arc<Semaphore>,
}

impl AppState {
    /// New state; the store is set once it is open.
    pub fn new(cfg: Arc<Config>, metrics: Arc<Metrics>, shutdown: watch::Receiver<bool>) -> Self {
        Self {
            ingest_streams: Arc::new(Semaphore::new(cfg.ingest.max_streams)),
            store: OnceLock::new(),
            cfg,
            metrics,
            shutdown,
        }
    }

    /// Publishes the opened store.
    pub fn set_store(&self, store: Arc<Ledgerstore>) {
        let _ = self.store.set(store);
    }

    /// The store, or UNAVAILABLE while opening or shutting down.
    pub fn store(&self) -> Result<Arc<Ledgerstore>, Status> {
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

    /// True once shutdown started.
    pub fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }
}
