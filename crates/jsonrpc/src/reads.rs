//! Where the calls that read the store on blocking threads run
//! ([`crate::StoreAccess::spawn_read`]), and the default: tokio's blocking
//! pool.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A call's blocking work, handed to [`crate::StoreAccess::spawn_read`].
pub type ReadJob = Box<dyn FnOnce() + Send + 'static>;

/// A [`ReadJob`] on its way: resolves once the job has run (`Err`: it
/// panicked, or its pool shut down first). Dropped before the job has
/// started, it keeps the job from starting (a call past its deadline, a
/// client gone); one already running finishes on its thread.
pub type ReadTicket = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// `job` on tokio's blocking pool, kept from starting if its ticket is
/// dropped first.
pub fn shared_read(job: ReadJob) -> ReadTicket {
    let job = Abandon(tokio::task::spawn_blocking(job));
    Box::pin(async move { job.await.map_err(|e| e.to_string()) })
}

/// A job on tokio's blocking pool, aborted when dropped.
struct Abandon<T>(tokio::task::JoinHandle<T>);

impl<T> Future for Abandon<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl<T> Drop for Abandon<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
