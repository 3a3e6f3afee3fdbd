//! Request counters: every HTTP attempt object_store makes (retries
//! included) passes through [`CountingConnector`], which counts it and
//! whether it failed in a way object_store retries (a 5xx or 429 answer,
//! a timeout, a refused or reset connection).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use object_store::ClientOptions;
use object_store::client::{
    HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpService, ReqwestConnector,
};

/// Counts of HTTP attempts, shared by every clone of a store.
#[derive(Debug, Default)]
pub struct RequestCounters {
    attempts: AtomicU64,
    failed: AtomicU64,
}

/// A snapshot of [`RequestCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// HTTP requests sent, retries included.
    pub attempts: u64,
    /// Attempts that failed with a server error (5xx, 429) or in transport
    /// (timeout, refused, reset): the ones object_store retries.
    pub failed: u64,
}

impl RequestCounters {
    /// The counts so far.
    pub fn get(&self) -> RequestCounts {
        RequestCounts {
            attempts: self.attempts.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// The reqwest connector, counting.
#[derive(Debug)]
pub(crate) struct CountingConnector {
    pub(crate) counters: Arc<RequestCounters>,
}

impl HttpConnector for CountingConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(Counting {
            inner,
            counters: Arc::clone(&self.counters),
        }))
    }
}

#[derive(Debug)]
struct Counting {
    inner: HttpClient,
    counters: Arc<RequestCounters>,
}

#[async_trait::async_trait]
impl HttpService for Counting {
    async fn call(&self, req: HttpRequest) -> Result<HttpResponse, HttpError> {
        self.counters.attempts.fetch_add(1, Ordering::Relaxed);
        let out = self.inner.execute(req).await;
        let failed = match &out {
            Ok(r) => r.status().is_server_error() || r.status().as_u16() == 429,
            Err(_) => true,
        };
        if failed {
            self.counters.failed.fetch_add(1, Ordering::Relaxed);
        }
        out
    }
}
